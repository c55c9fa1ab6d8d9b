package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/agent/llmagent"
	"github.com/troupehq/troupe/config"
)

// runJSON runs the workflow dir with args and decodes its run record.
func runJSON(t *testing.T, args ...string) (code int, results []*troupe.Result, outcome troupe.Outcome) {
	t.Helper()
	code, stdout, stderr := invoke(t, append([]string{"run", "--output", "json"}, args...)...)
	var rec struct {
		Results []*troupe.Result `json:"results"`
		Outcome troupe.Outcome   `json:"outcome"`
	}
	if err := json.Unmarshal([]byte(stdout), &rec); err != nil {
		t.Fatalf("exit %d, no run record: %v\nstdout:\n%s\nstderr:\n%s", code, err, stdout, stderr)
	}
	return code, rec.Results, rec.Outcome
}

// A coordinator's fallbacks (and error_policy.fallback_agents) are used when the agent fails,
// as the reference says, without the file also having to say on_error: fallback.
func TestFallbacksUsedWithoutOnError(t *testing.T) {
	for _, tt := range []struct{ name, section string }{
		{"coordinator.fallbacks", "coordinator:\n  default: helper\n  fallbacks: {helper: backup}\n"},
		{"error_policy.fallback_agents", "error_policy:\n  fallback_agents: {helper: [backup]}\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeConfig(t, "version: 1\n"+tt.section+`agents:
  helper:
    kind: exec
    exec: {command: [sh, -c, 'cat >/dev/null; echo boom >&2; exit 1']}
  backup:
    kind: exec
    after: [helper]
    exec: {command: [sh, -c, 'cat >/dev/null; echo "{\"agent_result\":{\"who\":\"backup\"}}"']}
`)
			code, results, outcome := runJSON(t, dir, "I am stuck")
			if code != exitOK || outcome.Fallback["helper"] != "backup" {
				t.Fatalf("exit %d, outcome %+v: want exit 0 with helper → backup", code, outcome)
			}
			var got []string
			for _, r := range results {
				got = append(got, r.AgentName+" "+string(r.Status))
			}
			if !strings.Contains(strings.Join(got, ", "), "backup completed") {
				t.Errorf("results %v: the fallback did not run", got)
			}
		})
	}
}

// An example's state is part of it: the command troupe agents prints for it asks the question
// in that state, so that it is planned as the file means it to be.
func TestAgentsExamplesKeepState(t *testing.T) {
	dir := writeConfig(t, `version: 1
coordinator:
  triggers:
    - {name: paused, when: {quiz_paused: true}, target: quiz}
  default: general
agents:
  quiz: {kind: exec, exec: {command: [cat]}}
  general: {kind: exec, exec: {command: [cat]}}
examples:
  - query: continue
    state: {quiz_paused: true}
`)
	code, stdout, stderr := invoke(t, "agents", dir)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var line string
	for l := range strings.Lines(stdout) {
		if strings.Contains(l, "troupe plan") {
			line = strings.TrimSpace(l)
		}
	}
	args := shellWords(line)
	if len(args) < 2 {
		t.Fatalf("no example command in:\n%s", stdout)
	}
	code, stdout, stderr = invoke(t, args[1:]...)
	if code != exitOK || !strings.Contains(stdout, "route → quiz") {
		t.Errorf("%s: exit %d, want the question routed to quiz, as in the example's state:\n%s%s", line, code, stdout, stderr)
	}
}

func TestStateFlagsRoundTrip(t *testing.T) {
	state := map[string]any{"n": 1.5, "b": true, "s": "True", "plain": "abc", "q": "o'neil x", "l": []any{1.0, "a b"}, "num": "12"}
	got := stateFlags(state)
	if want := `--state 'b=true' `; strings.Contains(got, want) {
		t.Errorf("needless quotes in %s", got)
	}
	// Read the flags back as the shell and --state would.
	back := stateFlag{}
	for _, w := range shellWords(got) {
		if w == "--state" {
			continue
		}
		if err := back.Set(w); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff(stateFlag(state), back); diff != "" {
		t.Errorf("%s read back differs (-want +got):\n%s", got, diff)
	}
}

// A bundle's replicates are dispatches of its sub-agent: each is bounded by the sub-agent's
// timeout (its own, else the budget's default_timeout), not evidence's two-minute default, and
// the bundle by its own. The exec sub-agent sees its bound as the dispatch's timeout_seconds.
func TestBundleReplicatesTakeTheSubAgentsTimeout(t *testing.T) {
	script := `in=$(cat); t=$(printf '%s' "$in" | grep -o '"timeout_seconds":[0-9.]*' | head -n 1 | sed 's/.*://'); printf '{"agent_result":{"score":0.5,"t":%s}}' "${t:-0}"`
	for _, tt := range []struct {
		name, yaml string
		want       float64
	}{
		{"own timeout", "    timeout: 5m\n", 300},
		{"budget default_timeout", "", 240},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeConfig(t, "version: 1\nbudget: {default_timeout: 4m}\nagents:\n  judge:\n    kind: exec\n"+tt.yaml+
				"    exec: {command: [sh, -c, "+strconv.Quote(script)+"]}\n  panel:\n    kind: bundle\n    timeout: 20m\n    bundle: {agent: judge, replicates: 2}\n")
			code, results, _ := runJSON(t, dir, "How risky is it?")
			if code != exitOK || len(results) != 1 {
				t.Fatalf("exit %d, %d results", code, len(results))
			}
			var b struct {
				Replicates []struct {
					Data struct{ T float64 } `json:"data"`
				} `json:"replicates"`
			}
			data, _ := json.Marshal(results[0].AgentResult)
			if err := json.Unmarshal(data, &b); err != nil || len(b.Replicates) == 0 {
				t.Fatalf("no replicates in %s (%v)", data, err)
			}
			for i, r := range b.Replicates {
				if r.Data.T != tt.want {
					t.Errorf("replicate %d: timeout_seconds %v, want %v\n%s", i, r.Data.T, tt.want, data)
				}
			}
		})
	}
}

// An llm agent's timeout bounds each of its calls, as it bounds the dispatch: the adapter's
// default (two minutes) would cut off a slow model the file gives longer.
func TestLLMCallTimeoutIsTheAgentsTimeout(t *testing.T) {
	for _, tt := range []struct {
		name, yaml string
		want       time.Duration
	}{
		{"own timeout", "version: 1\nagents:\n  m:\n    kind: llm\n    timeout: 10m\n    llm: {model: x, base_url: 'http://127.0.0.1:1/v1/'}\n", 10 * time.Minute},
		{"budget default_timeout", "version: 1\nbudget: {default_timeout: 7m}\nagents:\n  m:\n    kind: llm\n    llm: {model: x, base_url: 'http://127.0.0.1:1/v1/'}\n", 7 * time.Minute},
		{"none", "version: 1\nagents:\n  m:\n    kind: llm\n    llm: {model: x, base_url: 'http://127.0.0.1:1/v1/'}\n", 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := builtLLMConfig(t, tt.yaml); got.CallTimeout != tt.want {
				t.Errorf("call timeout %v, want %v", got.CallTimeout, tt.want)
			}
		})
	}
}

// builtLLMConfig builds the file yaml, whose one llm agent is m, and returns the
// llmagent.Config its agent was built from.
func builtLLMConfig(t *testing.T, yaml string) llmagent.Config {
	t.Helper()
	t.Setenv("OPENAI_API_KEY", "k")
	f, err := config.Parse(filepath.Join(t.TempDir(), "troupe.yaml"), []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	servers := newMCPServers()
	defer servers.Close()
	var got llmagent.Config
	fs := factories(servers)
	fs[config.KindLLM] = func(ctx context.Context, b *config.Builder, a *config.Agent) (troupe.Agent, error) {
		cfg, err := servers.llmConfig(ctx, b, a)
		got = cfg
		if err != nil {
			return nil, err
		}
		return llmagent.New(cfg)
	}
	if _, err := config.Build(t.Context(), f, config.Options{Factories: fs}); err != nil {
		t.Fatal(err)
	}
	return got
}

// An llm agent's byte bounds reach its llmagent.Config; left out, they are zero, the
// adapter's defaults.
func TestLLMByteBounds(t *testing.T) {
	got := builtLLMConfig(t, "version: 1\nagents:\n  m:\n    kind: llm\n    llm: {model: x, max_response_bytes: 65536, max_tool_result_bytes: 4096}\n")
	if got.MaxResponseBytes != 65536 || got.MaxToolResultBytes != 4096 {
		t.Errorf("max_response_bytes %d, max_tool_result_bytes %d, want 65536 and 4096", got.MaxResponseBytes, got.MaxToolResultBytes)
	}
	got = builtLLMConfig(t, "version: 1\nagents:\n  m: {kind: llm, llm: {model: x}}\n")
	if got.MaxResponseBytes != 0 || got.MaxToolResultBytes != 0 {
		t.Errorf("left out: max_response_bytes %d, max_tool_result_bytes %d, want 0 (the adapter's defaults)", got.MaxResponseBytes, got.MaxToolResultBytes)
	}
}

// A working directory that is not there is an error of the file, found when it is validated and
// reported at the field's own line, not a failure to start the program at the first dispatch.
func TestMissingWorkingDirectory(t *testing.T) {
	dir := writeConfig(t, "version: 1\nagents:\n  a:\n    kind: exec\n    exec: {command: [cat], dir: nowhere}\n")
	code, _, stderr := invoke(t, "validate", dir)
	want := filepath.Join(dir, "troupe.yaml") + ":5:33: agents.a.exec.dir: no such directory: " + filepath.Join(dir, "nowhere")
	if code != exitUsage || !strings.Contains(stderr, want) {
		t.Errorf("exit %d, stderr:\n%s\nwant %q", code, stderr, want)
	}
	dir = writeConfig(t, "version: 1\nagents:\n  s: {kind: mcp, mcp: {server: ev, tool: echo}}\nmcp_servers:\n  ev: {command: cat, dir: nowhere}\n")
	code, _, stderr = invoke(t, "validate", dir)
	if want := filepath.Join(dir, "troupe.yaml") + ":5:27: mcp_servers.ev.dir: MCP server ev: no such directory: "; code != exitUsage || !strings.Contains(stderr, want) {
		t.Errorf("exit %d, stderr:\n%s\nwant %q", code, stderr, want)
	}
}
