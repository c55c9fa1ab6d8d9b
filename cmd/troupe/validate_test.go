package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/troupehq/troupe/flow"
)

// An llm agent's api_key_env that is not set (or empty) here is a warning of validate, at the
// field's value, and the exit code stays 0: the variable may be set where the workflow runs.
// A set one, or none named (the default, which a local server does without), is not.
func TestValidateWarnsOfUnsetAPIKeyEnv(t *testing.T) {
	const yaml = "version: 1\nagents:\n  m:\n    kind: llm\n    llm:\n      model: x\n      api_key_env: TROUPE_TEST_KEY\n  d: {kind: llm, llm: {model: x}}\n"
	const warning = ":7:20: warning: agents.m.llm.api_key_env: the environment variable TROUPE_TEST_KEY "
	for _, tt := range []struct {
		name   string
		value  *string
		wanted string // the end of the warning; "" for none
	}{
		{"unset", nil, "is not set here: the model will be called with no API key, which only a server that needs none accepts\n"},
		{"empty", new(""), "is empty here: the model will be called with no API key, which only a server that needs none accepts\n"},
		{"set", new("k"), ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("OPENAI_API_KEY", "") // d's default: never warned of
			if tt.value == nil {
				unsetenv(t, "TROUPE_TEST_KEY")
			} else {
				t.Setenv("TROUPE_TEST_KEY", *tt.value)
			}
			dir := writeConfig(t, yaml)
			code, stdout, stderr := invoke(t, "validate", dir)
			if code != exitOK || !strings.Contains(stdout, ": ok — 2 agents") {
				t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
			}
			want := ""
			if tt.wanted != "" {
				want = filepath.Join(dir, "troupe.yaml") + warning + tt.wanted
			}
			if stderr != want {
				t.Errorf("stderr:\n%q\nwant:\n%q", stderr, want)
			}
		})
	}
}

// troupe run warns of an unset (or empty) api_key_env as validate does, on stderr, before the
// model is first called, and runs all the same: the model here is a server that needs no key.
func TestRunWarnsOfUnsetAPIKeyEnv(t *testing.T) {
	var (
		mu     sync.Mutex  // guards stderr and before
		stderr *syncBuffer // the run's
		before []string    // stderr when each request reached the model
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		before = append(before, stderr.String())
		mu.Unlock()
		json.NewEncoder(w).Encode(map[string]any{
			"id": "c1", "object": "chat.completion", "created": 0, "model": "x",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": "hello"}}},
			"usage":   map[string]any{"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
		})
	}))
	defer srv.Close()
	yaml := fmt.Sprintf("version: 1\nagents:\n  m:\n    kind: llm\n    llm:\n      model: x\n      api_key_env: TROUPE_TEST_KEY\n      base_url: %s/v1/\n", srv.URL)
	const warning = ":7:20: warning: agents.m.llm.api_key_env: the environment variable TROUPE_TEST_KEY is not set here: the model will be called with no API key, which only a server that needs none accepts\n"
	for _, tt := range []struct {
		name  string
		value *string
		warns bool
	}{
		{"unset", nil, true},
		{"set", new("k"), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.value == nil {
				unsetenv(t, "TROUPE_TEST_KEY")
			} else {
				t.Setenv("TROUPE_TEST_KEY", *tt.value)
			}
			errOut := &syncBuffer{}
			mu.Lock()
			stderr, before = errOut, nil
			mu.Unlock()
			dir := writeConfig(t, yaml)
			var stdout bytes.Buffer
			code := run(t.Context(), []string{"run", dir, "hi"}, &stdout, errOut)
			if code != exitOK {
				t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout.String(), errOut.String())
			}
			want := ""
			if tt.warns {
				want = filepath.Join(dir, "troupe.yaml") + warning
			}
			if got := errOut.String(); got != want {
				t.Errorf("stderr:\n%q\nwant:\n%q", got, want)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(before) == 0 || before[0] != want {
				t.Errorf("stderr when the model was called: %q, want %q", before, want)
			}
		})
	}
}

// unsetenv unsets key for the test; t.Setenv, called first, restores it after.
func unsetenv(t *testing.T, key string) {
	t.Helper()
	t.Setenv(key, "")
	if err := os.Unsetenv(key); err != nil {
		t.Fatal(err)
	}
}

// writeFast writes the workflow yaml, with fast.sh beside it: an exec agent that answers at
// once.
func writeFast(t *testing.T, yaml string) string {
	t.Helper()
	dir := writeConfig(t, yaml)
	const script = "#!/bin/sh\ncat >/dev/null\necho '{\"agent_result\":{\"x\":1},\"analysis_summary\":\"ok\",\"confidence\":0.9}'\n"
	if err := os.WriteFile(filepath.Join(dir, "fast.sh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// A composite listing an agent twice, which flow refuses at every run, is refused by validate,
// run and plan alike, which load the file the same way, at the entry that lists it again.
func TestValidateRefusesAMemberListedTwice(t *testing.T) {
	const fast = "version: 1\nagents:\n  a: {kind: exec, exec: {command: [./fast.sh]}}\n"
	for _, tt := range []struct {
		name, yaml, problem string
	}{
		{"parallel", fast + "  p: {kind: parallel, parallel: {agents: [a, a]}}\n", `:4:46: agents.p.parallel.agents[1]: "a" is listed twice`},
		{"sequential", fast + "  s: {kind: sequential, sequential: {agents: [a, a]}}\n", `:4:50: agents.s.sequential.agents[1]: "a" is listed twice`},
		{"llm tools", fast + "  m: {kind: llm, llm: {model: x, tools: [a, a]}}\n", `:4:45: agents.m.llm.tools[1]: "a" is listed twice`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeFast(t, tt.yaml)
			for _, args := range [][]string{{"validate", dir}, {"run", dir, "hi"}, {"plan", dir, "hi"}} {
				code, stdout, stderr := invoke(t, args...)
				want := filepath.Join(dir, "troupe.yaml") + tt.problem + "\ntroupe " + args[0] + ": " + dir + ": 1 problem\n"
				if code != exitUsage || stdout != "" || stderr != want {
					t.Errorf("troupe %s: exit %d, stdout %q, stderr:\n%q\nwant exit %d, stderr:\n%q", args[0], code, stdout, stderr, exitUsage, want)
				}
			}
		})
	}
}

// Composites nesting deeper than flow.MaxNesting, whose innermost agent every run would fail
// with MAX_DEPTH_EXCEEDED, are refused; as deep as that runs.
func TestValidateNestingWithinFlowsBound(t *testing.T) {
	chain := func(n int) string { // n agents: c1 holds c2 … holds a
		var b strings.Builder
		b.WriteString("version: 1\nagents:\n  a: {kind: exec, exec: {command: [./fast.sh]}}\n")
		for i := 1; i < n; i++ {
			next := fmt.Sprintf("c%d", i+1)
			if i == n-1 {
				next = "a"
			}
			fmt.Fprintf(&b, "  c%d: {kind: sequential, sequential: {agents: [%s]}}\n", i, next)
		}
		return b.String()
	}
	dir := writeFast(t, chain(flow.MaxNesting))
	if code, stdout, stderr := invoke(t, "run", dir, "hi"); code != exitOK {
		t.Errorf("a chain of flow.MaxNesting agents: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	dir = writeFast(t, chain(flow.MaxNesting+1))
	code, _, stderr := invoke(t, "validate", dir)
	want := filepath.Join(dir, "troupe.yaml") + fmt.Sprintf(":4:7: agents.c1: its members nest %d agents deep (c1 → … → a), and dispatches nest at most %d deep: every run of c1 would fail at a with MAX_DEPTH_EXCEEDED; nest fewer composites\n", flow.MaxNesting+1, flow.MaxNesting) +
		"troupe validate: " + dir + ": 1 problem\n"
	if code != exitUsage || stderr != want {
		t.Errorf("exit %d, stderr:\n%q\nwant exit %d, stderr:\n%q", code, stderr, exitUsage, want)
	}
}

// validate plans each of the file's examples as troupe plan would, in its state, and fails
// (exit 2) on one that cannot be planned, at its query. It warns, without failing, of what
// leaves plain-text queries unplannable but a file usable with parsed ones (--input): routing,
// or a coordinator routing by intent and KPI alone, with no parser; parser intents with no
// routing rule.
func TestValidatePlansPlainQueries(t *testing.T) {
	const fast = "version: 1\nagents:\n  a: {kind: exec, exec: {command: [./fast.sh]}}\n"
	const routing = "routing:\n  intents: [{intent: causal, primary: [a]}]\n"
	const noParser = ":4:1: warning: routing: routing plans a request by the intent of its parsed query, and with no parser a plain-text query has none, so none can be planned: add a parser, or pass parsed queries with --input\n"
	for _, tt := range []struct {
		name, yaml string
		code       int
		stderr     []string // each line after the file's path; "" for one that names no file
	}{
		{"routing without a parser", fast + routing, exitOK, []string{noParser}},
		{"routing without a parser, with an example", fast + routing + "examples:\n  - query: why did it drop\n", exitUsage, []string{
			noParser,
			`:7:12: examples[0].query: troupe plan cannot plan this example: plan: invalid criteria: troupe: criteria: field "intent_type": required` + "\n",
			"troupe validate: DIR/troupe.yaml: 1 example of 1 cannot be planned\n",
		}},
		{"a default intent without a rule", fast + routing + "parser: {default_intent: x}\n", exitOK, []string{
			`:6:26: warning: parser.default_intent: a query none of parser.intents fires on gets intent "x", which no routing rule plans (routing.intents has rules for causal): add a rule for "x" under routing.intents, or make default_intent one of theirs` + "\n",
		}},
		{"parser intents without a rule", fast + routing + "parser:\n  default_intent: causal\n  intents: [{intent: causal, words: [why]}, {intent: trend, words: [trend]}]\n  secondary_intents: [{intent: what_if, words: [if]}]\n", exitOK, []string{
			`:8:54: warning: parser.intents[1].intent: a query this rule fires on gets intent "trend", which no routing rule plans (routing.intents has rules for causal): add a rule for "trend" under routing.intents` + "\n",
			`:9:32: warning: parser.secondary_intents[0].intent: a query this rule fires on gets secondary intent "what_if", which no routing rule plans (routing.intents has rules for causal): add a rule for "what_if" under routing.intents` + "\n",
		}},
		{"examples the parser and rules plan", fast + routing + "parser:\n  default_intent: causal\nexamples:\n  - query: why did it drop\n  - {query: and now?, state: {k: v}}\n", exitOK, nil},
		{"a coordinator of intents without a parser", fast + "coordinator: {intents: {causal: [a]}}\n", exitOK, []string{
			`:4:1: warning: coordinator: the coordinator has no triggers and no default, so it routes a request only by the intent or KPIs of its parsed query, and with no parser a plain-text query has neither: add a parser, a default or triggers, or pass parsed queries with --input` + "\n",
		}},
		{"routing of no intents", fast + "routing:\n  intents: []\n", exitUsage, []string{
			`:5:12: routing.intents: routing has no intent rules, so no request can be planned: the planner selects agents by the rule of the request's intent; add a rule such as {intent: general, primary: [AGENT]}, or remove routing to run every top-level agent` + "\n",
			"troupe validate: DIR: 1 problem\n",
		}},
		{"a coordinator of nothing", fast + "coordinator: {}\n", exitUsage, []string{
			`:4:14: coordinator: the coordinator has no triggers, intents, kpi_map or default, so it routes no request to any agent: give it a default agent, or triggers` + "\n",
			"troupe validate: DIR: 1 problem\n",
		}},
		{"examples routed in their state", fast + "coordinator:\n  triggers: [{name: quiz, when: {mode: quiz}, target: a}]\nexamples:\n  - {query: go on, state: {mode: quiz}}\n  - query: go on\n", exitUsage, []string{
			`:8:12: examples[1].query: troupe plan cannot plan this example: route: no rule matched and there is no default agent (available: a): troupe: unknown agent` + "\n",
			"troupe validate: DIR/troupe.yaml: 1 example of 2 cannot be planned\n",
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeFast(t, tt.yaml)
			code, stdout, stderr := invoke(t, "validate", dir)
			path := filepath.Join(dir, "troupe.yaml")
			var want strings.Builder
			for _, l := range tt.stderr {
				if strings.HasPrefix(l, ":") {
					l = path + l
				}
				l = strings.ReplaceAll(l, "DIR/troupe.yaml", path)
				want.WriteString(strings.ReplaceAll(l, "DIR:", dir+":"))
			}
			if code != tt.code || stderr != want.String() {
				t.Errorf("exit %d, stderr:\n%q\nwant exit %d, stderr:\n%q", code, stderr, tt.code, want.String())
			}
			if ok := strings.Contains(stdout, ": ok — "); ok != (tt.code == exitOK) {
				t.Errorf("stdout %q", stdout)
			}
		})
	}
}

// An llm agent's templates that do not parse are each a problem of validate, at the system and
// prompt lines that hold them, not one problem of the agent.
func TestValidateLLMTemplatesAtTheirFields(t *testing.T) {
	t.Setenv("TROUPE_TEST_KEY", "k")
	const yaml = `version: 1
agents:
  s:
    kind: llm
    llm:
      model: m
      api_key_env: TROUPE_TEST_KEY
      system: "Hello {{.Nope"
      prompt: "{{ .Query | nosuchfunc }}"
`
	dir := writeConfig(t, yaml)
	path := filepath.Join(dir, "troupe.yaml")
	code, stdout, stderr := invoke(t, "validate", dir)
	want := path + ":8:15: agents.s.llm.system: template: system:1: unclosed action\n" +
		path + `:9:15: agents.s.llm.prompt: template: prompt:1: function "nosuchfunc" not defined` + "\n" +
		"troupe validate: " + path + ": its agents cannot be built\n"
	if code != exitUsage || stdout != "" || stderr != want {
		t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant:\n%s", code, stdout, stderr, want)
	}
}

// An MCP server no agent uses is never started, so nothing checks its program or env: validate
// warns of it, at its name, and the exit code stays 0, as nothing would fail; a server an mcp
// agent or an llm agent's tools use is not warned of.
func TestValidateWarnsOfAnUnusedMCPServer(t *testing.T) {
	unsetenv(t, "TROUPE_TEST_UNSET_TOKEN")
	t.Setenv("TROUPE_TEST_KEY", "k")
	const yaml = `version: 1
agents:
  w: {kind: exec, exec: {command: [cat]}}
  m: {kind: llm, llm: {model: x, api_key_env: TROUPE_TEST_KEY, tools: ["mcp:used/echo"]}}
  e: {kind: mcp, mcp: {server: also, tool: echo}}
mcp_servers:
  used: {command: troupe-no-such-mcp-server}
  also: {command: troupe-no-such-mcp-server}
  spare: {command: troupe-no-such-mcp-server, env: {TOKEN: TROUPE_TEST_UNSET_TOKEN}}
`
	dir := writeConfig(t, yaml)
	// Only the warning is checked here: the used servers' program is not there, so the build
	// fails; a file whose every agent builds is checked below.
	_, _, stderr := invoke(t, "validate", dir)
	warning := filepath.Join(dir, "troupe.yaml") + ":9:3: warning: mcp_servers.spare: no agent uses this server (no mcp agent has server: spare, no llm agent's tools name mcp:spare), so it is never started, nor its command or env checked\n"
	if !strings.HasPrefix(stderr, warning) || strings.Count(stderr, "no agent uses") != 1 {
		t.Errorf("stderr:\n%s\nwant it to begin:\n%s", stderr, warning)
	}

	dir = writeConfig(t, "version: 1\nagents:\n  w: {kind: exec, exec: {command: [cat]}}\nmcp_servers:\n  spare: {command: troupe-no-such-mcp-server, env: {TOKEN: TROUPE_TEST_UNSET_TOKEN}}\n")
	code, stdout, stderr := invoke(t, "validate", dir)
	warning = filepath.Join(dir, "troupe.yaml") + ":5:3: warning: mcp_servers.spare: no agent uses this server (no mcp agent has server: spare, no llm agent's tools name mcp:spare), so it is never started, nor its command or env checked\n"
	if code != exitOK || !strings.Contains(stdout, ": ok — 1 agent") || stderr != warning {
		t.Errorf("exit %d, stdout %q, stderr:\n%q\nwant:\n%q", code, stdout, stderr, warning)
	}
}
