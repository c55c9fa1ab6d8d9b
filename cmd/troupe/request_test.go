package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/config"
	"github.com/troupehq/troupe/engine"
)

// A request --input gives that the engine would refuse at the start of a run is a usage error
// in run and plan alike, naming the file as given and the field; nothing runs. The engine
// refuses each of them too, so the command's check and the engine's agree.
func TestInputRequestRefused(t *testing.T) {
	tests := []struct {
		name, input, says string
	}{
		{"negative budget", `{"query": "1 2", "budget": {"max_cost_dollars": -1}}`, "budget.max_cost_dollars: want a finite number, 0 or more, got -1"},
		{"negative tokens", `{"query": "1 2", "budget": {"max_tokens": -5}}`, "budget.max_tokens: want a finite number, 0 or more, got -5"},
		{"unknown priority", `{"query": "1 2", "priority": "urgent"}`, `priority: "urgent" is not one of low, medium, high, critical`},
		{"unknown on_error", `{"query": "1 2", "policy": {"on_error": "explode"}}`, `policy.on_error: "explode" is not one of fail_fast, continue, retry, fallback`},
		{"unknown fallback", `{"query": "1 2", "policy": {"fallback_agents": {"total": ["nobody"]}}}`, "policy.fallback_agents.total[0]: unknown agent nobody"},
		{"zero timeout", `{"query": "1 2", "timeouts": {"total": 0}}`, "timeouts.total: want a positive, finite number of seconds, got 0"},
		{"negative criteria budget", `{"query": "1 2", "criteria": {"intent_type": "x", "time_budget_seconds": -1}}`, "criteria.time_budget_seconds: want a positive, finite number of seconds, got -1"},
		{"every problem", `{"query": "1 2", "priority": "urgent", "budget": {"time_seconds": -1}}`, `priority: "urgent" is not one of low, medium, high, critical; budget.time_seconds: want`},
	}
	f, err := config.Load("../../examples/quickstart")
	if err != nil {
		t.Fatal(err)
	}
	cat, err := config.Catalog(f)
	if err != nil {
		t.Fatal(err)
	}
	eng, err := engine.New(engineConfig(f, cat))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := filepath.Join(t.TempDir(), "bad.json")
			if err := os.WriteFile(in, []byte(tt.input), 0o600); err != nil {
				t.Fatal(err)
			}
			for _, args := range [][]string{
				{"run", "--input", in, "../../examples/quickstart"},
				{"run", "--output", "json", "--input", in, "../../examples/quickstart"},
				{"plan", "--input", in, "../../examples/quickstart"},
			} {
				code, stdout, stderr := invoke(t, args...)
				want := fmt.Sprintf("troupe %s: --input %s: %s", args[0], in, tt.says)
				if code != exitUsage || !strings.Contains(stderr, want) || stdout != "" {
					t.Errorf("%v: exit %d (want %d), stderr lacks %q\nstdout:\n%s\nstderr:\n%s", args, code, exitUsage, want, stdout, stderr)
				}
			}
			req, _, err := decodeInput([]byte(tt.input))
			if err != nil {
				t.Fatal(err)
			}
			for _, err := range eng.Run(t.Context(), req) {
				var oe *troupe.OrchestrationError
				if !errors.As(err, &oe) || oe.Stage != troupe.StageInitialize {
					t.Errorf("the engine did not refuse the request at its start: %v", err)
				}
				break
			}
		})
	}
	// And what the engine takes, the check takes.
	req, _, err := decodeInput([]byte(`{"query": "1 2", "priority": "high", "budget": {"max_cost_dollars": 1}, "timeouts": {"total": 2}, "policy": {"on_error": "fallback", "fallback_agents": {"total": ["extremes"]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := checkRequest(req, fileAgents{f}); err != nil {
		t.Errorf("a valid request refused: %v", err)
	}
}

// A run's stream that ends in an error still ends the run record, failed, with what had been
// recorded (its run_id) and the error; and the error goes to stderr.
func TestRunRecordEndsOnAStreamError(t *testing.T) {
	f, err := config.Load("../../examples/quickstart")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		events iter.Seq2[troupe.Event, error]
		says   string
	}{
		{"an error", func(yield func(troupe.Event, error) bool) {
			if yield(troupe.Event{RunID: "run_x", Seq: 1, Kind: troupe.KindRunInitialized}, nil) {
				yield(troupe.Event{}, errors.New("store: disk full"))
			}
		}, "store: disk full"},
		{"no terminal event", func(yield func(troupe.Event, error) bool) {
			yield(troupe.Event{RunID: "run_x", Seq: 1, Kind: troupe.KindRunInitialized}, nil)
		}, "the run ended without a terminal event"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := show(t.Context(), tt.events, newRecorder(&out, f, troupe.Request{Query: "1 2"}), &errOut)
			if code != exitFailed || !strings.Contains(errOut.String(), tt.says) {
				t.Errorf("exit %d, stderr %q", code, errOut.String())
			}
			var rec runRecord
			if err := json.Unmarshal(out.Bytes(), &rec); err != nil {
				t.Fatalf("no run record: %v\n%s", err, out.String())
			}
			if rec.RunID != "run_x" || rec.Status != troupe.RunFailed || rec.ExitCode != exitFailed || len(rec.Events) != 1 ||
				rec.Outcome == nil || rec.Outcome.Error == nil || !strings.Contains(rec.Outcome.Error.Message, tt.says) {
				t.Errorf("record: run_id %q, status %q, exit %d, %d events, outcome %+v", rec.RunID, rec.Status, rec.ExitCode, len(rec.Events), rec.Outcome)
			}
		})
	}
}

// The status line shows why a run failed whole: on one line when it fits, wrapped when nothing
// above shows it (a routing failure, a success rate), and cut only when the failed agent's own
// line shows it whole.
func TestStatusShowsTheWholeReason(t *testing.T) {
	const agent = `{kind: exec, exec: {command: [sh, -c, "cat >/dev/null; echo '{\"agent_result\": {\"x\": 1}, \"confidence\": 0.9}'"]}}`
	unrouted := writeConfig(t, "version: 1\nagents:\n  alpha: "+agent+"\n  beta: "+agent+"\ncoordinator:\n  triggers:\n    - {name: greet, patterns: [hello there], target: alpha}\n")
	// Three in a chain, and a budget of one dispatch: b and c never run.
	starved := writeConfig(t, "version: 1\nagents:\n  a: "+agent+"\n  b:\n    kind: exec\n    exec: {command: [cat]}\n    after: [a]\n"+
		"  c:\n    kind: exec\n    exec: {command: [cat]}\n    after: [b]\nbudget: {max_dispatches: 1}\n")
	for _, tt := range []struct {
		name, dir, tail string
	}{
		{"routing", unrouted, "(available: alpha, beta)"},
		{"success rate", starved, "below min_success_rate 0.50 (exit 1)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := invoke(t, "run", tt.dir, "something else")
			if code != exitFailed {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			_, status, _ := strings.Cut(stdout, "\nstatus  ")
			if !strings.Contains(oneLine(status), tt.tail) || strings.Contains(status, "…") {
				t.Errorf("the status does not show the whole reason, ending %q:\n%s", tt.tail, status)
			}
			for _, l := range strings.Split("status  "+status, "\n") {
				if utf8.RuneCountInString(l) > answerWidth {
					t.Errorf("status line of %d characters: %q", utf8.RuneCountInString(l), l)
				}
			}
		})
	}

	long := strings.Repeat("a reason of many words ", 10)
	for _, tt := range []struct {
		name  string
		shown []string
		msg   string
		want  string
	}{
		{"short", nil, "no rule matched", "\nstatus  failed: no rule matched (exit 1)\n"},
		{"long, shown nowhere", nil, long, "\nstatus  " + wrap("failed: "+long+" (exit 1)", "        ", answerWidth)[8:]},
		{"long, shown on the agent's line", []string{long}, "broken: " + long, "\nstatus  " + cut("failed: broken: "+oneLine(long), answerWidth-8) + " (exit 1)\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			(&textWriter{w: &b, shown: tt.shown}).end(&troupe.Outcome{Status: troupe.RunFailed, Error: &troupe.ErrorInfo{Message: tt.msg}}, exitFailed)
			if b.String() != tt.want {
				t.Errorf("got\n%q\nwant\n%q", b.String(), tt.want)
			}
		})
	}
}

// A query, a state value or an --input file that is not UTF-8 is refused, saying at which byte,
// rather than reaching the agents with U+FFFD in its place.
func TestNotUTF8Refused(t *testing.T) {
	in := filepath.Join(t.TempDir(), "latin1.json")
	if err := os.WriteFile(in, []byte("{\"query\": \"caf\xe9 1 2\"}"), 0o600); err != nil {
		t.Fatal(err)
	}
	query := "caf\xe9 1 2"
	for _, tt := range []struct {
		args []string
		says string
	}{
		{[]string{"run", "../../examples/quickstart", query}, `troupe run: the query is not UTF-8 text: byte 4 (0xe9, after "caf") is not UTF-8`},
		{[]string{"plan", "../../examples/quickstart", query}, `troupe plan: the query is not UTF-8 text: byte 4 (0xe9, after "caf") is not UTF-8`},
		{[]string{"demo", query}, `troupe demo: the question is not UTF-8 text: byte 4 (0xe9, after "caf") is not UTF-8`},
		{[]string{"demo", "\xff"}, "byte 1 (0xff, at its start) is not UTF-8"},
		{[]string{"run", "--input", in, "../../examples/quickstart"}, "--input " + in + ": not UTF-8, at line 1, column 15: byte 0xe9 is not UTF-8"},
		{[]string{"plan", "--input", in, "../../examples/quickstart"}, "--input " + in + ": not UTF-8, at line 1, column 15: byte 0xe9 is not UTF-8"},
		{[]string{"plan", "--state", "k=caf\xe9", "../../examples/quickstart", "1 2"}, `not UTF-8 text: byte 6 (0xe9, after "k=caf") is not UTF-8`},
	} {
		t.Run(strings.Join(tt.args[:1], " "), func(t *testing.T) {
			code, stdout, stderr := invoke(t, tt.args...)
			if code != exitUsage || !strings.Contains(stderr, tt.says) || stdout != "" {
				t.Errorf("%q: exit %d (want %d), stderr lacks %q\nstdout:\n%s\nstderr:\n%s", tt.args, code, exitUsage, tt.says, stdout, stderr)
			}
		})
	}
}

// Agents whose names make the same identifier (a-b and a_b) are different nodes of the graph,
// and the ids do not depend on the order the names come in.
func TestPlanGraphNodesDistinct(t *testing.T) {
	const agent = `{kind: exec, exec: {command: [cat]}}`
	// a_b and a_b_2 keep the ids their names make; a-b, whose id a_b has, takes the next free.
	dir := writeConfig(t, "version: 1\nagents:\n  a-b: "+agent+"\n  a_b:\n    kind: exec\n    exec: {command: [cat]}\n    after: [a-b]\n"+
		"  a_b_2:\n    kind: exec\n    exec: {command: [cat]}\n    after: [a_b]\n")
	for _, format := range []string{"dot", "mermaid"} {
		code, stdout, stderr := invoke(t, "plan", "--format", format, dir, "q")
		if code != exitOK {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		arrow := map[string]string{"dot": " -> ", "mermaid": " --> "}[format]
		for _, edge := range [][2]string{{"query", "a_a_b_3"}, {"a_a_b_3", "a_a_b"}, {"a_a_b", "a_a_b_2"}} {
			if !regexp.MustCompile(`(?m)^  ` + edge[0] + arrow + edge[1] + `\b`).MatchString(stdout) {
				t.Errorf("%s lacks edge %s → %s:\n%s", format, edge[0], edge[1], stdout)
			}
		}
	}
	names := []string{"x-y", "x_y", "x.y", "x_y_2", "x y", "é", "ü", "a", "x_y_3"}
	ids := nodeIDs(names)
	seen := map[string]string{}
	for _, n := range names {
		id := ids[n]
		if other, dup := seen[id]; dup {
			t.Errorf("%q and %q share id %q", n, other, id)
		}
		seen[id] = n
	}
	reversed := slices.Clone(names)
	slices.Reverse(reversed)
	if again := nodeIDs(append(reversed, names...)); !maps.Equal(again, ids) {
		t.Errorf("ids depend on the names' order: %v, then %v", ids, again)
	}
	if ids["x_y"] != "a_x_y" || ids["x_y_2"] != "a_x_y_2" {
		t.Errorf("a name of kept characters lost its own id: %v", ids)
	}
}

// The plan shows a state value as --state takes it, a string that reads as another JSON value
// quoted; and a near miss's hint is flags the shell passes on as they are meant, so that
// running the hint meets the rule.
func TestPlanStateStringOrValue(t *testing.T) {
	const agent = `{kind: exec, exec: {command: [cat]}}`
	dir := writeConfig(t, "version: 1\nagents:\n  alpha: "+agent+"\n  beta: "+agent+"\ncoordinator:\n  default: beta\n  triggers:\n"+
		"    - {name: strmode, patterns: [go], when: {mode: \"1\"}, target: alpha}\n")
	for _, tt := range []struct{ flag, shows, route string }{
		{`mode="1"`, `state     mode="1"` + "\n", "route → alpha"},
		{"mode=1", "state     mode=1\n", "route → beta"},
		{"mode=x", "state     mode=x\n", "route → beta"},
		{`mode="true"`, `state     mode="true"` + "\n", "route → beta"},
	} {
		code, stdout, stderr := invoke(t, "plan", "--state", tt.flag, dir, "go")
		if code != exitOK || !strings.Contains(stdout, tt.shows) || !strings.Contains(stdout, tt.route) {
			t.Errorf("--state %s: exit %d, output lacks %q or %q:\n%s%s", tt.flag, code, tt.shows, tt.route, stdout, stderr)
		}
	}
	_, stdout, _ := invoke(t, "plan", "--state", "mode=1", dir, "go")
	_, hint, ok := strings.Cut(stdout, "; try ")
	hint, _, _ = strings.Cut(hint, "\n")
	if !ok || hint != `--state 'mode="1"'` {
		t.Fatalf("near miss hint %q, want --state 'mode=\"1\"':\n%s", hint, stdout)
	}
	code, stdout, stderr := invoke(t, append(append([]string{"plan"}, shellWords(hint)...), dir, "go")...)
	if code != exitOK || !strings.Contains(stdout, "route → alpha") {
		t.Errorf("the hint %s does not meet the rule: exit %d\n%s%s", hint, code, stdout, stderr)
	}
}
