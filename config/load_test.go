package config_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/troupehq/troupe/config"
	"github.com/troupehq/troupe/examples/e2i"
)

// parseErrs parses src and returns its problems as "line:col path: problem" strings.
func parseErrs(t *testing.T, src string) []string {
	t.Helper()
	_, err := config.Parse("t.yaml", []byte(src))
	if err == nil {
		return nil
	}
	var es config.Errors
	if !errors.As(err, &es) {
		t.Fatalf("error %v (%T) is not config.Errors", err, err)
	}
	var out []string
	for _, e := range es {
		if e.File != "t.yaml" {
			t.Errorf("error %v names file %q", e, e.File)
		}
		out = append(out, e.Error())
	}
	return out
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string
	}{
		{"empty", "", []string{"t.yaml:1:1: the file is empty: a configuration needs at least version and agents"}},
		{"syntax", "version: 1\nagents: [\n", []string{"t.yaml:2:9: agents: YAML syntax: sequence end token ']' not found"}},
		{"missing version and agents", "name: x\n", []string{
			`t.yaml:1:1: missing required field "agents"`,
			`t.yaml:1:1: missing required field "version"`,
		}},
		{"wrong version", "version: 2\nagents: {a: {kind: builtin}}\n", []string{"t.yaml:1:10: version: version 2 is not a version this troupe reads: write version: 1"}},
		{"unknown top-level field", "version: 1\nagents: {a: {kind: builtin}}\nagnets: {}\n", []string{
			`t.yaml:3:1: agnets: unknown field "agnets" (did you mean "agents"?)`,
		}},
		{"unknown kind", "version: 1\nagents:\n  a:\n    kind: magic\n", []string{
			`t.yaml:4:11: agents.a.kind: value must be one of 'builtin', 'exec', 'http', 'sequential', 'parallel', 'loop', 'bundle', 'llm', 'mcp'`,
		}},
		{"no agents", "version: 1\nagents: {}\n", []string{
			`t.yaml:2:9: agents: no agents: declare at least one under agents, each with its kind`,
		}},
		{"misspelt kind", "version: 1\nagents:\n  a:\n    kind: exce\n", []string{
			`t.yaml:4:11: agents.a.kind: value must be one of 'builtin', 'exec', 'http', 'sequential', 'parallel', 'loop', 'bundle', 'llm', 'mcp' (did you mean "exec"?)`,
		}},
		{"negative duration", "version: 1\nagents:\n  a:\n    kind: builtin\n    timeout: -5s\n", []string{
			`t.yaml:5:14: agents.a.timeout: "-5s" is negative: a duration here is positive, such as 30s`,
		}},
		{"duration without its unit", "version: 1\nagents:\n  a:\n    kind: builtin\n    timeout: 10\nbudget: {time: 0, default_timeout: \"0\"}\n", []string{
			`t.yaml:5:14: agents.a.timeout: 10 is not a duration: a duration has a unit, such as 10s`,
			`t.yaml:6:16: budget.time: 0 is not a duration: a duration has a unit, such as 0s`,
			`t.yaml:6:36: budget.default_timeout: "0" is not a duration: a duration has a unit, such as 0s`,
		}},
		{"kind without its block", "version: 1\nagents:\n  a:\n    kind: exec\n", []string{
			`t.yaml:4:5: agents.a: missing required field "exec"`,
		}},
		{"bad agent name", "version: 1\nagents:\n  9lives: {kind: builtin}\n", []string{
			`t.yaml:3:3: agents.9lives: "9lives" is not a valid agent name: a letter, then letters, digits, _ and -`,
		}},
		{"duplicate key", "version: 1\nagents:\n  a: {kind: builtin}\n  a: {kind: builtin}\n", []string{
			`t.yaml:4:3: agents.a: duplicate key "a": it is first on line 3; a key is given once`,
		}},
		{"merge key", "version: 1\nx: &x {kind: builtin}\nagents:\n  a:\n    <<: *x\n", []string{
			// The merge key is reported; so are the consequences, at their own places.
			`t.yaml:2:1: x: unknown field "x"; known fields: agents, budget, coordinator, description, error_policy, examples, mcp_servers, name, parser, routing, version`,
			`t.yaml:5:5: agents.a: merge keys (<<) are not supported: write the fields out`,
		}},
		{"after cycle and self", "version: 1\nagents:\n  a: {kind: builtin, after: [b]}\n  b: {kind: builtin, after: [a, b]}\n", []string{
			`t.yaml:3:29: agents.a.after: after has a cycle, so no agent of it can run first: a → b → a`,
			`t.yaml:4:33: agents.b.after[1]: an agent cannot run after itself`,
		}},
		{"composite cycle", "version: 1\nagents:\n  s: {kind: sequential, sequential: {agents: [p]}}\n  p: {kind: parallel, parallel: {agents: [x, s]}}\n  x: {kind: builtin}\n", []string{
			`t.yaml:3:6: agents.s: sequential agent "s" contains itself: s → p → s`,
		}},
		{"bundle bounds", "version: 1\nagents:\n  j: {kind: builtin}\n  b: {kind: bundle, bundle: {agent: j, replicates: 3, min_replicates: 5}}\n", []string{
			`t.yaml:4:71: agents.b.bundle.min_replicates: min_replicates 5 is more than replicates 3`,
		}},
		{"loop until a key its agent does not write", "version: 1\nagents:\n  j: {kind: builtin}\n  l: {kind: loop, loop: {agent: j, max_iterations: 3, until: {key: done, equals: true}}}\n", []string{
			`t.yaml:4:68: agents.l.loop.until.key: j does not declare writes of "done", so the loop would never see it change; add it to j's writes`,
		}},
		{"bundle of more replicates than a bundle runs", "version: 1\nagents:\n  j: {kind: builtin}\n  b: {kind: bundle, bundle: {agent: j, replicates: 100, min_replicates: 1}}\n", []string{
			`t.yaml:4:52: agents.b.bundle.replicates: 100 is too large: want at most 32`,
			`t.yaml:4:73: agents.b.bundle.min_replicates: 1 is too small: want 2 or more`,
		}},
		{"bundle and its agent declare input schemas", "version: 1\nagents:\n  j:\n    kind: builtin\n    input_schema: {type: object}\n  inner: {kind: bundle, bundle: {agent: j, replicates: 2}}\n  b:\n    kind: bundle\n    bundle: {agent: inner, replicates: 3}\n    input_schema: {required: [intent]}\n", []string{
			`t.yaml:10:19: agents.b.input_schema: inner, the agent this bundle replicates, takes j's input_schema (line 5), which the bundle takes too, as a replicate's input is the bundle's: declare the schema on one of them`,
		}},
		{"bundle and its agent declare input schemas, directly", "version: 1\nagents:\n  j: {kind: builtin, input_schema: {type: object}}\n  b: {kind: bundle, bundle: {agent: j, replicates: 2}, input_schema: true}\n", []string{
			`t.yaml:4:70: agents.b.input_schema: j, the agent this bundle replicates, declares an input_schema (line 3), which the bundle takes too, as a replicate's input is the bundle's: declare the schema on one of them`,
		}},
		{"routing and coordinator", "version: 1\nagents: {a: {kind: builtin}}\nrouting: {intents: [{intent: x, primary: [a]}]}\ncoordinator: {default: a}\n", []string{
			`t.yaml:4:14: coordinator: routing and coordinator are exclusive: a file either plans stages of agents (routing) or routes each request to one agent (coordinator)`,
		}},
		{"fallback references", "version: 1\nagents: {a: {kind: builtin}}\nerror_policy:\n  fallback_agents: {b: [a, c]}\n", []string{
			`t.yaml:4:21: error_policy.fallback_agents.b: unknown agent "b" (not declared under agents)`,
			`t.yaml:4:28: error_policy.fallback_agents.b[1]: unknown agent "c" (not declared under agents)`,
		}},
		{"not a JSON number", "version: 1\nagents: {a: {kind: builtin}}\nbudget: {max_cost_dollars: .inf}\n", []string{
			`t.yaml:3:28: budget.max_cost_dollars: infinity and NaN are not numbers a configuration can hold`,
		}},
		{"retry backoff order", "version: 1\nagents: {a: {kind: builtin}}\nerror_policy:\n  retry: {initial_backoff: 2s, max_backoff: 1s}\n", []string{
			`t.yaml:4:28: error_policy.retry.initial_backoff: initial_backoff is longer than max_backoff`,
		}},
		{"retry backoff longer than the default max_backoff", "version: 1\nagents: {a: {kind: builtin}}\nerror_policy:\n  retry: {initial_backoff: 30s}\n", []string{
			`t.yaml:4:28: error_policy.retry.initial_backoff: initial_backoff 30s is longer than error_policy.retry.max_backoff, 10s when absent as here, which caps every wait: set max_backoff to 30s or more, or shorten initial_backoff`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, parseErrs(t, tt.src)); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

// A mis-indented line is the usual cause of a YAML syntax error, and the parser's message
// ("value is not allowed in this context") says neither where nor why: the error names the
// field on the line and says how it is indented unlike the lines before it.
func TestParseExplainsIndentation(t *testing.T) {
	const agents = "version: 1\nagents:\n  total:\n    kind: exec\n"
	const triggers = "version: 1\nagents: {a: {kind: builtin}}\ncoordinator:\n  triggers:\n    - name: one\n      patterns: [hello]\n"
	tests := []struct {
		name string
		src  string
		want []string
	}{
		{"deeper than a key whose value is given", agents + "    exec: {command: [./total.sh]}\n     timeout: 10s\n", []string{
			`t.yaml:6:6: agents.total.timeout: YAML syntax: value is not allowed in this context; check the indentation: "timeout" is indented deeper than "exec" on line 5 before it`,
		}},
		// The line goes on with the plain scalar before it, and the parser reports the scalar,
		// on the line above: the error is the key's, on its own line.
		{"deeper than a key whose plain value is given", agents + "     exec: {command: [./total.sh]}\n", []string{
			`t.yaml:5:6: agents.total.exec: YAML syntax: mapping value is not allowed in this context; check the indentation: "exec" is indented deeper than "kind" on line 4 before it, so it is read as more of the value on line 4 ("exec exec")`,
		}},
		{"deeper than a key whose plain value is given, in a block", agents + "    exec:\n      command: [./total.sh]\n      dir: x\n        env: {A: B}\n", []string{
			`t.yaml:8:9: agents.total.exec.env: YAML syntax: mapping value is not allowed in this context; check the indentation: "env" is indented deeper than "dir" on line 7 before it, so it is read as more of the value on line 7 ("x env")`,
		}},
		{"deeper than the block dedented before it", "version: 1\nagents:\n  total:\n    kind: exec\n  exec: {command: [./total.sh]}\n    timeout: 10s\n", []string{
			`t.yaml:6:5: agents.timeout: YAML syntax: value is not allowed in this context; check the indentation: "timeout" is indented deeper than "exec" on line 5 before it`,
		}},
		{"deeper in an entry of a sequence", triggers + "        target: a\n", []string{
			`t.yaml:7:9: coordinator.triggers[0].target: YAML syntax: value is not allowed in this context; check the indentation: "target" is indented deeper than "patterns" on line 6 before it`,
		}},
		{"lined up with the dash of its entry", triggers + "    target: a\n", []string{
			`t.yaml:7:5: coordinator.triggers[0].target: YAML syntax: value is not allowed in this context; check the indentation: "target" is indented less than "patterns" on line 6 before it and more than "triggers" on line 4`,
		}},
		{"between two levels", agents + "    exec:\n      command: [./total.sh]\n   timeout: 10s\n", []string{
			`t.yaml:7:4: agents.total.timeout: YAML syntax: value is not allowed in this context; check the indentation: "timeout" is indented less than "command" on line 6 before it and more than "total" on line 3`,
		}},
		{"tab", agents + "\texec: {command: [./total.sh]}\n", []string{
			"t.yaml:5:1: agents.total.exec: YAML syntax: found character '\t' that cannot start any token; indent with spaces: YAML does not allow tabs in indentation",
		}},
		{"duplicate key is not an indentation problem", agents + "    exec: {command: [./total.sh]}\n    kind: http\n", []string{
			`t.yaml:6:5: agents.total.kind: duplicate key "kind": it is first on line 4; a key is given once`,
		}},
		{"unclosed flow sequence", agents + "    exec: {command: [./total.sh}\n", []string{
			`t.yaml:5:32: agents.total.exec: YAML syntax: ',' or ']' must be specified`,
		}},
		{"agent's field dedented to the agents", agents + "    exec:\n      command: [./total.sh]\n  timeout: 10s\n", []string{
			`t.yaml:7:3: agents.timeout: got string, want object; "timeout" looks like a field of the agent "total" above it: check its indentation`,
		}},
		{"agent's field before any agent", "version: 1\nagents:\n  after: [b]\n  b: {kind: builtin}\n", []string{
			`t.yaml:3:3: agents.after: got array, want object; "after" looks like a field of an agent: check its indentation`,
		}},
		{"agent not an object, named unlike a field", "version: 1\nagents:\n  b: {kind: builtin}\n  fetch: 10s\n", []string{
			`t.yaml:4:10: agents.fetch: got string, want object`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, parseErrs(t, tt.src)); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

// One typo is one error: a misspelt required field is reported as the unknown field it is,
// with its "did you mean", not also as the field missing.
func TestParseMisspeltRequiredField(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string
	}{
		{"in a block", "version: 1\nagents:\n  fetch:\n    kind: exec\n    exec:\n      comand: [./fetch.sh]\n", []string{
			`t.yaml:6:7: agents.fetch.exec.comand: unknown field "comand" (did you mean "command"?)`,
		}},
		{"the block of a kind", "version: 1\nagents:\n  fetch:\n    kind: exec\n    exce: {command: [./fetch.sh]}\n", []string{
			`t.yaml:5:5: agents.fetch.exce: unknown field "exce" (did you mean "exec"?)`,
		}},
		{"kind", "version: 1\nagents:\n  fetch:\n    knd: exec\n    exec: {command: [./fetch.sh]}\n", []string{
			`t.yaml:4:5: agents.fetch.knd: unknown field "knd" (did you mean "kind"?)`,
		}},
		{"a near miss of another field leaves the missing one", "version: 1\nagents:\n  fetch:\n    kind: exec\n    exec: {dri: x}\n", []string{
			`t.yaml:5:11: agents.fetch.exec: missing required field "command"`,
			`t.yaml:5:12: agents.fetch.exec.dri: unknown field "dri" (did you mean "dir"?)`,
		}},
		{"an unknown field like none leaves the missing one", "version: 1\nagents:\n  fetch:\n    kind: exec\n    exec: {program: x}\n", []string{
			`t.yaml:5:11: agents.fetch.exec: missing required field "command"`,
			`t.yaml:5:12: agents.fetch.exec.program: unknown field "program"; known fields: command, dir, env`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, parseErrs(t, tt.src)); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

// A coordinator's triggers are tried in order, the first that fires winning, and each is
// known by its name in routing reasons and metadata.
func TestParseCoordinatorTriggers(t *testing.T) {
	const head = "version: 1\nagents: {a: {kind: builtin}, b: {kind: builtin}}\ncoordinator:\n  triggers:\n"
	tests := []struct {
		name string
		src  string
		want []string
	}{
		{"duplicate names", head + "    - {name: one, patterns: [hello], target: a}\n    - {name: two, patterns: [hi], target: b}\n    - {name: one, patterns: [x], when: {k: v}, target: b}\n", []string{
			`t.yaml:7:14: coordinator.triggers[2].name: trigger name "one" is taken by triggers[0] on line 5: a name says which trigger fired, in routing reasons and metadata`,
		}},
		{"catch-all before others", head + "    - name: catchall\n      target: a\n    - name: two\n      patterns: [hi]\n      target: b\n    - {target: b, when: {k: v}}\n", []string{
			`t.yaml:5:7: coordinator.triggers[0]: trigger "catchall" has no patterns and no when, so it fires on every message and the triggers after it never do: "two" (line 7), triggers[2] (line 10); give it a condition or make it the last trigger`,
			`t.yaml:10:7: coordinator.triggers[2]: missing required field "name"`,
		}},
		{"empty patterns and when are no condition", head + "    - {name: any, patterns: [], when: {}, target: a}\n    - {name: two, patterns: [hi], target: b}\n", []string{
			`t.yaml:5:7: coordinator.triggers[0]: trigger "any" has no patterns and no when, so it fires on every message and the triggers after it never do: "two" (line 6); give it a condition or make it the last trigger`,
		}},
		{"catch-all last", head + "    - {name: two, patterns: [hi], target: b}\n    - {name: rest, target: a}\n", nil},
		{"when alone is a condition", head + "    - {name: quiz, when: {mode: quiz}, target: a}\n    - {name: two, patterns: [hi], target: b}\n", nil},
		{"a misspelt pattern is not a catch-all", head + "    - {name: one, pattern: [hello], target: a}\n    - {name: two, patterns: [hi], target: b}\n", []string{
			`t.yaml:5:19: coordinator.triggers[0].pattern: unknown field "pattern" (did you mean "patterns"?)`,
		}},
		{"patterns of the wrong type are not a catch-all", head + "    - {name: one, patterns: hello, target: a}\n    - {name: two, patterns: [hi], target: b}\n", []string{
			`t.yaml:5:29: coordinator.triggers[0].patterns: got string, want array; write a list, even of one item: ["hello"]`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, parseErrs(t, tt.src)); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

// A file with many mistakes gets every one of them, each with its position, in file order.
func TestParseReportsEveryProblem(t *testing.T) {
	src, err := os.ReadFile("testdata/bad.yaml")
	if err != nil {
		t.Fatal(err)
	}
	got := parseErrs(t, string(src))
	want := []string{
		`t.yaml:6:7: agents.fetch.exec.comand: unknown field "comand" (did you mean "command"?)`,
		`t.yaml:7:14: agents.fetch.timeout: "5 seconds" is not a duration: write one as Go does, such as 30s, 1m30s or 250ms`,
		`t.yaml:11:23: agents.summarize.sequential.agents[1]: unknown agent "sumarize" (did you mean "summarize"?)`,
		`t.yaml:11:33: agents.summarize.sequential.agents[2]: unknown agent "ghost" (not declared under agents)`,
		`t.yaml:12:5: agents.summarize.http: field "http" is not allowed in an agent of kind sequential: an agent has the block of its own kind only`,
		`t.yaml:14:5: agents.loop1: loop agent "loop1" contains itself: loop1 → loop1`,
		`t.yaml:15:42: agents.loop1.loop.max_iterations: 0 is too small: want 1 or more`,
		`t.yaml:18:12: agents.a.after: after has a cycle, so no agent of it can run first: a → b → a`,
		`t.yaml:22:19: agents.b.input_schema: invalid JSON Schema: type: value must be one of 'array', 'boolean', 'integer', 'null', 'number', 'object', 'string'; type: got number, want array`,
		`t.yaml:26:24: routing.intents[0].primary[1]: unknown agent "nobody" (not declared under agents)`,
		`t.yaml:27:21: routing.exclusive_pairs[0]: a pair is two different agents, not "a" twice`,
		`t.yaml:28:19: routing.kpi_map.NRx[0]: unknown agent "fetchh" (did you mean "fetch"?)`,
		`t.yaml:30:3: coordinator: routing and coordinator are exclusive: a file either plans stages of agents (routing) or routes each request to one agent (coordinator)`,
		`t.yaml:30:12: coordinator.default: unknown agent "x" (not declared under agents)`,
		`t.yaml:31:1: errorpolicy: unknown field "errorpolicy" (did you mean "error_policy"?)`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
	_, err = config.Parse("t.yaml", src)
	if msg := err.Error(); !strings.HasPrefix(msg, "config: 15 problems\nt.yaml:6:7: ") {
		t.Errorf("Error() = %q", msg)
	}
}

// The README shows what troupe validate prints for cmd/troupe/testdata/bad.yaml: its lines
// must be the loader's, in its order, and its count the loader's.
func TestReadmeShowsTheProblemsOfBadYAML(t *testing.T) {
	const name = "cmd/troupe/testdata/bad.yaml"
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("../" + name)
	if err != nil {
		t.Fatal(err)
	}
	_, err = config.Parse(name, src)
	var es config.Errors
	if !errors.As(err, &es) {
		t.Fatalf("Parse(%s) = %v, want config.Errors", name, err)
	}
	var got []string
	for _, e := range es {
		got = append(got, e.Error())
	}
	shown, count := 0, ""
	for line := range strings.Lines(string(readme)) {
		line = strings.TrimSuffix(line, "\n")
		if n, ok := strings.CutPrefix(line, "troupe validate: "+name+": "); ok {
			count = n
			continue
		}
		if !strings.HasPrefix(line, name+":") {
			continue
		}
		i := slices.Index(got, line)
		if i < 0 {
			t.Errorf("README.md shows a problem the loader does not report, or not after the one before:\n%s\nthe loader reports:\n%s", line, strings.Join(got, "\n"))
			continue
		}
		got = got[i+1:]
		shown++
	}
	if shown == 0 {
		t.Errorf("README.md shows no problem of %s", name)
	}
	if want := fmt.Sprintf("%d problems", len(es)); count != want {
		t.Errorf("README.md says troupe validate reports %q; the loader reports %s", count, want)
	}
}

func TestLoadDirectoryAndMissing(t *testing.T) {
	f, err := config.Load("../examples/e2i")
	if err != nil {
		t.Fatal(err)
	}
	if f.Path != filepath.Join("../examples/e2i", "troupe.yaml") || f.Dir != "../examples/e2i" {
		t.Errorf("path %q dir %q", f.Path, f.Dir)
	}
	if _, err := config.Load(t.TempDir()); err == nil || !strings.Contains(err.Error(), "must hold troupe.yaml") {
		t.Errorf("a directory without troupe.yaml: %v", err)
	}
	if _, err := config.Load("nonexistent.yaml"); err == nil {
		t.Error("a missing file loaded")
	}
}

// examples/e2i/troupe.yaml is seed 000 as data: it must say exactly what the Go example says.
func TestE2IConfigMatchesTheGoExample(t *testing.T) {
	f, err := config.Load("../examples/e2i")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(e2i.Agents(), f.Order); diff != "" {
		t.Errorf("agents (-go +yaml):\n%s", diff)
	}
	if diff := cmp.Diff(e2i.Rules(), f.PlanRules()); diff != "" {
		t.Errorf("routing (-go +yaml):\n%s", diff)
	}
	reg, err := e2i.Registry()
	if err != nil {
		t.Fatal(err)
	}
	cat, err := config.Catalog(f)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range reg.Names() {
		want, _ := reg.Spec(n)
		got, _ := cat.Spec(n)
		if want.Description != got.Description || !cmp.Equal(want.Writes, got.Writes) || !cmp.Equal(want.Reads, got.Reads) {
			t.Errorf("%s: yaml declares %q writes %v reads %v; Go %q writes %v reads %v", n, got.Description, got.Writes, got.Reads, want.Description, want.Writes, want.Reads)
		}
	}
	rules := e2i.DefaultParserRules()
	p := f.Parser
	if p.DefaultIntent != rules.DefaultIntent {
		t.Errorf("default intent %q, Go %q", p.DefaultIntent, rules.DefaultIntent)
	}
	conv := func(ks config.Keywords) e2i.Keywords {
		return e2i.Keywords{Words: ks.Words, Stems: ks.Stems, Phrases: ks.Phrases}
	}
	var intents, secondary []e2i.IntentKeywords
	for _, ik := range p.Intents {
		intents = append(intents, e2i.IntentKeywords{Intent: ik.Intent, Keywords: conv(ik.Keywords)})
	}
	for _, ik := range p.SecondaryIntents {
		secondary = append(secondary, e2i.IntentKeywords{Intent: ik.Intent, Keywords: conv(ik.Keywords)})
	}
	if diff := cmp.Diff(rules.Intents, intents); diff != "" {
		t.Errorf("parser intents (-go +yaml):\n%s", diff)
	}
	if diff := cmp.Diff(rules.Secondary, secondary); diff != "" {
		t.Errorf("parser secondary intents (-go +yaml):\n%s", diff)
	}
	var prefer []e2i.AgentKeywords
	for _, ak := range p.PreferredAgents {
		prefer = append(prefer, e2i.AgentKeywords{Agent: ak.Agent, Keywords: conv(ak.Keywords)})
	}
	if diff := cmp.Diff(rules.Prefer, prefer); diff != "" {
		t.Errorf("parser preferred agents (-go +yaml):\n%s", diff)
	}
	var gaz []e2i.Gazetteer
	for _, g := range p.Gazetteers {
		eg := e2i.Gazetteer{Key: g.Key}
		for _, term := range g.Terms {
			eg.Terms = append(eg.Terms, e2i.Term{Name: term.Name, Phrases: term.Phrases})
		}
		gaz = append(gaz, eg)
	}
	if diff := cmp.Diff(rules.Gazetteers, gaz); diff != "" {
		t.Errorf("gazetteers (-go +yaml):\n%s", diff)
	}
}

// A value the schema refuses is reported once, at itself: a check comparing another field with
// it does not compare with the absent value the loader holds in its place (a quorum "more than
// replicates 0" when replicates was 1; a max_backoff or call_timeout "absent as here" when it
// was written, and refused).
func TestChecksLeaveARefusedValueOut(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, src string
		want      []string
	}{
		{"replicates too few", `version: 1
agents:
  w: {kind: builtin}
  bu: {kind: bundle, bundle: {agent: w, replicates: 1, stop: {valid: 2}}}
`, []string{"t.yaml:4:53: agents.bu.bundle.replicates: 1 is too small: want 2 or more"}},
		{"replicates too many", `version: 1
agents:
  w: {kind: builtin}
  bu: {kind: bundle, bundle: {agent: w, replicates: 40, min_replicates: 30}}
`, []string{"t.yaml:4:53: agents.bu.bundle.replicates: 40 is too large: want at most 32"}},
		{"max_backoff negative", `version: 1
agents:
  w: {kind: builtin}
error_policy:
  retry: {max_attempts: 3, initial_backoff: 30s, max_backoff: -5s}
`, []string{`t.yaml:5:63: error_policy.retry.max_backoff: "-5s" is negative: a duration here is positive, such as 30s`}},
		{"call_timeout negative", `version: 1
agents:
  s: {kind: mcp, timeout: 5m, mcp: {server: ev, tool: t}}
mcp_servers:
  ev: {command: cat, call_timeout: -1s}
`, []string{`t.yaml:5:36: mcp_servers.ev.call_timeout: "-1s" is negative: a duration here is positive, such as 30s`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tt.want, parseErrs(t, tt.src)); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}
