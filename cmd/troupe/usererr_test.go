package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// What building finds wrong with a file is said in the file's words, at the field at fault:
// not exec's "exec: \"x\": stat x: no such file or directory", nor the HTTP adapter's
// "Config.BearerTokenEnv" at the agent.
func TestBuildErrorsInTheFilesWords(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "plain.sh"), []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TROUPE_TEST_SET", "x")
	cfg := `version: 1
agents:
  missing: {kind: exec, exec: {command: [./missing.sh]}}
  unlisted: {kind: exec, exec: {command: [troupe-no-such-program]}}
  plain: {kind: exec, exec: {command: [./plain.sh]}}
  token: {kind: http, http: {url: "http://127.0.0.1:1/", bearer_token_env: TROUPE_TEST_UNSET_TOKEN}}
  header: {kind: http, http: {url: "http://127.0.0.1:1/", headers_from_env: {X-Set: TROUPE_TEST_SET, X-Key: TROUPE_TEST_UNSET_KEY}}}
  both: {kind: http, http: {url: "http://127.0.0.1:1/", bearer_token_env: TROUPE_TEST_UNSET_TOKEN, headers_from_env: {X-Key: TROUPE_TEST_UNSET_KEY}}}
  nodir: {kind: exec, exec: {command: [troupe-no-such-program], dir: nowhere}}
  tool: {kind: mcp, mcp: {server: srv, tool: t}}
mcp_servers:
  srv: {command: ./not-there, dir: nowhere, env: {TOKEN: TROUPE_TEST_UNSET_TOKEN}}
`
	path := filepath.Join(dir, "troupe.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := invoke(t, "validate", dir)
	want := []string{
		path + `:3:41: agents.missing.exec.command: no program to run: ` + filepath.Join(dir, "missing.sh") + ` does not exist (a program with a slash is relative to the file's directory)`,
		path + `:4:42: agents.unlisted.exec.command: no program to run: troupe-no-such-program is not in PATH`,
		path + `:5:39: agents.plain.exec.command: no program to run: ` + filepath.Join(dir, "plain.sh") + ` is not executable (chmod +x it, or run it through its interpreter: [sh, ./plain.sh])`,
		path + `:6:76: agents.token.http.bearer_token_env: the environment variable TROUPE_TEST_UNSET_TOKEN is not set`,
		path + `:7:109: agents.header.http.headers_from_env.X-Key: the environment variable TROUPE_TEST_UNSET_KEY is not set`,
		// Every problem of an agent, not its first only.
		path + `:8:75: agents.both.http.bearer_token_env: the environment variable TROUPE_TEST_UNSET_TOKEN is not set`,
		path + `:8:126: agents.both.http.headers_from_env.X-Key: the environment variable TROUPE_TEST_UNSET_KEY is not set`,
		path + `:9:39: agents.nodir.exec.command: no program to run: troupe-no-such-program is not in PATH`,
		path + `:9:70: agents.nodir.exec.dir: no such directory: ` + filepath.Join(dir, "nowhere"),
		path + `:12:18: mcp_servers.srv.command: MCP server srv: no program to run: ` + filepath.Join(dir, "not-there") + ` does not exist (a program with a slash is relative to the file's directory)`,
		path + `:12:36: mcp_servers.srv.dir: MCP server srv: no such directory: ` + filepath.Join(dir, "nowhere"),
		path + `:12:58: mcp_servers.srv.env.TOKEN: MCP server srv: the environment variable TROUPE_TEST_UNSET_TOKEN is not set`,
		"troupe validate: " + path + ": its agents cannot be built",
	}
	if code != exitUsage || stdout != "" || stderr != strings.Join(want, "\n")+"\n" {
		t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant:\n%s", code, stdout, stderr, strings.Join(want, "\n"))
	}
}

// A mistyped flag gets the flag it was likely meant for, the flag another command uses for the
// same thing included; the hint about -- is given only where a query could begin with '-'.
func TestUnknownFlags(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--json", "testdata/one.yaml", "q"}, "troupe run: unknown flag --json (did you mean --output json?)\n"},
		{[]string{"run", "--ouput", "json", "testdata/one.yaml", "q"}, "troupe run: unknown flag --ouput (did you mean --output?)\n"},
		{[]string{"plan", "--output", "dot", "testdata/one.yaml", "q"}, "troupe plan: unknown flag --output (did you mean --format?)\n"},
		{[]string{"plan", "-fromat=dot", "testdata/one.yaml", "q"}, "troupe plan: unknown flag -fromat (did you mean --format?)\n"},
		{[]string{"validate", "--verbose", "testdata/one.yaml"}, "troupe validate: unknown flag --verbose\n"},
		{[]string{"agents", "--json", "testdata/one.yaml"}, "troupe agents: unknown flag --json\n"},
		{[]string{"demo", "--x"}, `troupe demo: unknown flag --x; a query word beginning with '-' goes after --, as in: troupe demo -- "--x"` + "\n"},
		{[]string{"run", "--state", "quiz_paused", "testdata/one.yaml", "q"}, `troupe run: flag --state "quiz_paused": want key=value, got "quiz_paused"` + "\n"},
		{[]string{"chat", "--questions=many", "../../examples/tutor"}, `troupe chat: flag --questions "many": want a whole number` + "\n"},
		{[]string{"run", "testdata/one.yaml", "q", "--seed"}, "troupe run: flag --seed needs a value\n"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, stdout, stderr := invoke(t, tt.args...)
			want := tt.want + "Run 'troupe " + tt.args[0] + " --help' for usage.\n"
			if code != exitUsage || stdout != "" || stderr != want {
				t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant:\n%s", code, stdout, stderr, want)
			}
		})
	}
}

// A flag written before CONFIG without its value takes CONFIG as its value: the complaint is
// about that value, naming the flag and what it took, not a missing query.
func TestFlagTakesConfig(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--output", "../../examples/quickstart", "4 8"}, `troupe run: --output "../../examples/quickstart": want text or json` + "\n"},
		{[]string{"run", "--output", "../../examples/quickstart", "4", "8"}, `troupe run: --output "../../examples/quickstart": want text or json` + "\n"},
		{[]string{"plan", "--format", "../../examples/e2i", "Why did NRx drop?"}, `troupe plan: --format "../../examples/e2i": want text, mermaid or dot` + "\n"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, stdout, stderr := invoke(t, tt.args...)
			if code != exitUsage || stdout != "" || stderr != tt.want {
				t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant:\n%s", code, stdout, stderr, tt.want)
			}
		})
	}
}

// troupe agents says what each agent is: its model for an llm agent, its server and tool for an
// mcp agent, as it gives an exec agent's command.
func TestAgentsShowsWhatEachIs(t *testing.T) {
	dir := writeConfig(t, "version: 1\nagents:\n  m: {kind: llm, llm: {model: qwen2.5:7b}}\n  t: {kind: mcp, mcp: {server: fs, tool: read_file}}\nmcp_servers:\n  fs: {url: \"http://127.0.0.1:1/mcp\"}\n")
	code, stdout, stderr := invoke(t, "agents", dir)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"\nm      llm qwen2.5:7b", "\nt      mcp fs/read_file"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
}

// A parallel agent of a file runs under the strategy it names (seed 002's AggregationStrategy):
// majority_vote takes the answer most of its agents give, under the key vote names;
// first_success the first agent to complete.
func TestParallelStrategies(t *testing.T) {
	lib, err := os.ReadFile("testdata/workflow/lib.sh")
	if err != nil {
		t.Fatal(err)
	}
	// say.sh ANSWER SECONDS: answers {"verdict": ANSWER} after SECONDS.
	script := "#!/bin/sh\nset -eu\n" + string(lib) + "sleep \"$2\"\nrespond \"{\\\"verdict\\\":\\\"$1\\\"}\" \"$1\" 1\n"
	for _, tt := range []struct {
		name, strategy string
		slow           string         // how long the agents answering "go" take
		want           map[string]any // of the group's agent_result
	}{
		{"majority_vote", "strategy: majority_vote, vote: verdict", "0", map[string]any{"answer": "go"}},
		// The slow agents are cancelled once the first has answered, not waited for.
		{"first_success", "strategy: first_success", "60", map[string]any{"verdict": "stop"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeConfig(t, "version: 1\nagents:\n"+
				"  a: {kind: exec, exec: {command: [./say.sh, go, \""+tt.slow+"\"]}}\n"+
				"  b: {kind: exec, exec: {command: [./say.sh, go, \""+tt.slow+"\"]}}\n"+
				"  c: {kind: exec, exec: {command: [./say.sh, stop, \"0\"]}}\n"+
				"  panel: {kind: parallel, parallel: {agents: [a, b, c], "+tt.strategy+"}}\n")
			if err := os.WriteFile(filepath.Join(dir, "say.sh"), []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			if _, out, _ := invoke(t, "agents", dir); !strings.Contains(out, strings.ReplaceAll(tt.name, "_", " ")) {
				t.Errorf("troupe agents does not give the strategy, %s:\n%s", tt.name, out)
			}
			code, results, _ := runJSON(t, dir, "Go or stop?")
			if code != exitOK || len(results) != 1 {
				t.Fatalf("exit %d, %d results", code, len(results))
			}
			for k, v := range tt.want {
				if got := results[0].AgentResult[k]; got != v {
					t.Errorf("agent_result[%q] = %v, want %v (%v)", k, got, v, results[0].AgentResult)
				}
			}
		})
	}
}
