package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/troupehq/troupe"
)

const e2iQuery = "What caused the drop in NRx for Kisqali in Midwest?"

func TestRunE2IPlain(t *testing.T) {
	code, stdout, stderr := invoke(t, "run", "../../examples/e2i", e2iQuery)
	if code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	for _, want := range []string{
		"troupe run: e2i, 17 agents",
		"parsed  intent=causal brands=[Kisqali] kpis=[NRx] regions=[Midwest]",
		"plan    3 stages: [causal_impact] → [gap_analyzer] → [explainer]",
		"▸ stage 1/3  causal_impact started", "✓ causal_impact completed in ",
		"▸ stage 3/3  explainer started",
		"\nanswer\n  Kisqali NRx in the Midwest fell 12.",
		"confidence   0.80, the lowest of causal_impact 0.80",
		"conflicts    none", "status  completed (exit 0)",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, "\x1b[") {
		t.Errorf("plain output has terminal escapes:\n%q", stdout)
	}
}

// syncBuffer is a buffer the live view's spinner and the test may touch at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// On a terminal the view is redrawn in place: cursor-up and clear escapes, a line a stage,
// each agent with its mark, duration and outcome, then the answer below it.
func TestRunE2ITerminal(t *testing.T) {
	var out, errOut syncBuffer
	code := runWorkflow(t.Context(), []string{"../../examples/e2i", e2iQuery}, &out, &errOut, true)
	if code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut.String())
	}
	s := out.String()
	if !strings.Contains(s, "\x1b[J") || !regexp.MustCompile(`\x1b\[\d+A`).MatchString(s) {
		t.Errorf("no redraw escapes in %q", s)
	}
	// The last drawing of the view, after the last clear.
	last := s[strings.LastIndex(s, "\x1b[J")+len("\x1b[J"):]
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^stage 1/3\n  ✓ causal_impact +completed +\d+(µs|ms)  confidence 0\.80  "Kisqali NRx in the Midwest fell`),
		regexp.MustCompile(`(?m)^stage 2/3\n  ✓ gap_analyzer +completed`),
		regexp.MustCompile(`(?m)^stage 3/3\n  ✓ explainer +completed`),
		regexp.MustCompile(`\nanswer\n  Kisqali NRx`),
		regexp.MustCompile(`status  completed \(exit 0\)\n$`),
	} {
		if !want.MatchString(last) {
			t.Errorf("final view does not match %s:\n%s", want, last)
		}
	}
}

// The live view of a running agent has a spinner and its time so far; a bundle's replicates
// appear under it as they finish.
func TestProgressView(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var out bytes.Buffer
	f := loadTestConfig(t, "testdata/workflow")
	p := newProgress(&out, f, troupe.Request{Query: "q"}, true, func() time.Time { return now })
	p.close() // no spinner goroutine: the test turns it
	p.event(troupe.Event{Kind: troupe.KindPlanCreated, Data: &troupe.Plan{Stages: []troupe.PlanStage{
		{Tasks: []troupe.Task{{ID: "words", Agent: "words"}, {ID: "letters", Agent: "letters"}}},
		{Tasks: []troupe.Task{{ID: "report", Agent: "report"}}},
	}}})
	p.event(troupe.Event{Kind: troupe.KindDispatchStarted, DispatchID: "d1", Agent: "words", Step: 1, Time: now, Data: &troupe.Dispatch{}})
	p.event(troupe.Event{Kind: troupe.KindAgentProgress, DispatchID: "d1", Agent: "words", Data: &troupe.Progress{Kind: "replicate_done", Data: map[string]any{"replicate": 2, "seed": 23, "status": "completed", "valid": true}}})
	now = now.Add(1500 * time.Millisecond)
	p.frame = 3
	got := strings.Join(p.view(), "\n")
	want := "stage 1/2\n" +
		"  ⠸ words       running 1500ms\n" +
		"      · replicate 2 (seed 23) completed\n" +
		"  · letters     waiting\n" +
		"stage 2/2\n" +
		"  · report      waiting"
	if got != want {
		t.Errorf("view:\n%s\nwant:\n%s", got, want)
	}
	c := 0.5
	p.event(troupe.Event{Kind: troupe.KindDispatchCompleted, DispatchID: "d1", Agent: "words", Step: 1, Time: now, Data: &troupe.Result{AgentName: "words", Status: troupe.StatusCompleted, Confidence: &c}})
	if got := p.view()[1]; got != "  ✓ words       completed  1500ms  confidence 0.50" {
		t.Errorf("finished row %q", got)
	}
}

func TestRunJSONRecord(t *testing.T) {
	code, stdout, stderr := invoke(t, "run", "--output", "json", "--seed", "5", "../../examples/e2i", e2iQuery)
	if code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	var rec struct {
		Version  int            `json:"version"`
		Config   map[string]any `json:"config"`
		Request  troupe.Request `json:"request"`
		RunID    string         `json:"run_id"`
		Status   string         `json:"status"`
		ExitCode int            `json:"exit_code"`
		Outcome  troupe.Outcome `json:"outcome"`
		Plan     troupe.Plan    `json:"plan"`
		Results  []troupe.Result
		Agg      troupe.Aggregation `json:"aggregation"`
		Events   []troupe.Event     `json:"events"`
	}
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rec); err != nil {
		t.Fatalf("not a run record: %v\n%s", err, stdout)
	}
	if rec.Version != 1 || rec.Status != "completed" || rec.ExitCode != 0 || rec.Config["name"] != "e2i" || rec.Request.Query != e2iQuery || rec.Request.Seed != 5 {
		t.Errorf("record header: version %d status %s exit %d config %v request %+v", rec.Version, rec.Status, rec.ExitCode, rec.Config, rec.Request)
	}
	if got := len(rec.Results); got != 3 {
		t.Errorf("%d results, want 3", got)
	}
	if !strings.HasPrefix(rec.Agg.Synthesis, "Kisqali NRx in the Midwest fell 12.") || len(rec.Plan.Stages) != 3 {
		t.Errorf("aggregation %q, plan %v", rec.Agg.Synthesis, rec.Plan.ExecutionPlan())
	}
	for i, ev := range rec.Events {
		if ev.Seq != int64(i+1) || ev.RunID != rec.RunID {
			t.Fatalf("event %d: seq %d run %s", i, ev.Seq, ev.RunID)
		}
	}
	if last := rec.Events[len(rec.Events)-1]; last.Kind != troupe.KindRunCompleted {
		t.Errorf("last event %s", last.Kind)
	}
}

// The exit codes: 0 completed, 1 failed, 2 usage or configuration error, 3 paused for a
// human, 130 cancelled (TestRunCancelled).
func TestRunExitCodes(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout []string
		stderr []string
	}{
		{"completed", []string{"run", "../../examples/e2i", e2iQuery}, exitOK, []string{"status  completed (exit 0)"}, nil},
		{"failed", []string{"run", "testdata/fail.yaml", "anything"}, exitFailed,
			[]string{"✗ broken failed in", "AGENT_ERROR", "no data for this question", "status  failed"}, nil},
		{"no arguments", []string{"run"}, exitUsage, nil, []string{"want CONFIG and a query"}},
		{"no query", []string{"run", "../../examples/e2i"}, exitUsage, nil, []string{"want a query after CONFIG"}},
		{"empty query", []string{"run", "../../examples/e2i", " ", ""}, exitUsage, nil, []string{"troupe run: the query is empty"}},
		{"empty plan query", []string{"plan", "../../examples/e2i", ""}, exitUsage, nil, []string{"troupe plan: the query is empty"}},
		{"bad output", []string{"run", "--output", "yaml", "../../examples/e2i", "q"}, exitUsage, nil, []string{`--output "yaml": want text or json`}},
		{"missing config", []string{"run", "testdata/nope.yaml", "q"}, exitUsage, nil, []string{"no such file"}},
		{"config errors", []string{"run", "testdata/bad.yaml", "q"}, exitUsage, nil, []string{`testdata/bad.yaml:6:7: agents.fetch.exec.comand: unknown field "comand" (did you mean "command"?)`, "15 problems"}},
		{"bad input", []string{"run", "--input", "testdata/fail.yaml", "../../examples/e2i"}, exitUsage, nil, []string{"troupe run: --input testdata/fail.yaml: not JSON, at line 1, column 1: invalid character"}},
		{"paused", []string{"run", "--input", "testdata/request.json", "../../examples/tutor"}, exitPaused,
			[]string{"route   → diagnostic: New topic start", "? diagnostic asks: Quick check on",
				"waiting for a human: 1 open question, and troupe run takes no answers, so the run stops here\n  diagnostic (",
				"to answer, hold the conversation instead: troupe chat ../../examples/tutor\n", "status  paused (exit 3)"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := invoke(t, tt.args...)
			if code != tt.code {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, stdout, stderr)
			}
			for _, w := range tt.stdout {
				if !strings.Contains(stdout, w) {
					t.Errorf("stdout lacks %q:\n%s", w, stdout)
				}
			}
			for _, w := range tt.stderr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
		})
	}
}

// cancelOn is a writer that cancels a context once what was written contains a marker: a
// Ctrl-C pressed while the run is in a given state.
type cancelOn struct {
	syncBuffer
	marker string
	cancel context.CancelFunc
}

func (c *cancelOn) Write(p []byte) (int, error) {
	n, err := c.syncBuffer.Write(p)
	if strings.Contains(c.String(), c.marker) {
		c.cancel()
	}
	return n, err
}

// Ctrl-C (the context's cancellation) mid-run stops the blocking agent's process, ends the
// run cancelled with exit 130 and shows what had finished.
func TestRunCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	out := &cancelOn{marker: "sleeper started", cancel: cancel}
	var errOut syncBuffer
	start := time.Now()
	code := run(ctx, []string{"run", "testdata/cancel.yaml", "count these words"}, out, &errOut)
	if code != exitCancelled {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitCancelled, out.String(), errOut.String())
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("cancelling took %v: the sleeping agent was not stopped", d)
	}
	s := out.String()
	for _, want := range []string{"✓ words completed", "finished     words completed", "unfinished   sleeper", "(exit 130)"} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
}

// The three-agent workflow of shell scripts runs end to end: words and letters in parallel,
// then report, whose figure is computed from theirs.
func TestExecWorkflow(t *testing.T) {
	const q = "How long are the words of this question?"
	code, stdout, stderr := invoke(t, "run", "--output", "json", "testdata/workflow", q)
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	var rec struct {
		Plan    troupe.Plan      `json:"plan"`
		Results []*troupe.Result `json:"results"`
	}
	if err := json.Unmarshal([]byte(stdout), &rec); err != nil {
		t.Fatal(err)
	}
	if got := rec.Plan.ExecutionPlan(); len(got) != 2 || len(got[0]) != 2 || got[1][0] != "report" {
		t.Errorf("plan %v, want [[words letters] [report]]", got)
	}
	words := len(strings.Fields(q))
	letters := 0
	for _, r := range q {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			letters++
		}
	}
	byAgent := map[string]map[string]any{}
	for _, r := range rec.Results {
		if r.Status != troupe.StatusCompleted {
			t.Errorf("%s: %s %v", r.AgentName, r.Status, r.Errors)
		}
		byAgent[r.AgentName] = r.AgentResult
	}
	if byAgent["words"]["words"] != float64(words) || byAgent["letters"]["letters"] != float64(letters) {
		t.Errorf("counts %v %v, want %d words, %d letters", byAgent["words"], byAgent["letters"], words, letters)
	}
	want := float64(int(float64(letters)/float64(words)*100+0.5)) / 100
	if got := byAgent["report"]["mean_word_length"]; got != want {
		t.Errorf("mean word length %v, want %v", got, want)
	}
}

func TestValidateAndAgents(t *testing.T) {
	code, stdout, stderr := invoke(t, "validate", "../../examples/e2i")
	if code != exitOK || stdout != "../../examples/e2i/troupe.yaml: ok — 17 agents, planned by 8 intent rules\n" {
		t.Errorf("validate e2i: exit %d\n%s%s", code, stdout, stderr)
	}
	code, stdout, _ = invoke(t, "validate", "testdata/workflow")
	if code != exitOK || !strings.Contains(stdout, "ok — 3 agents, every agent") {
		t.Errorf("validate workflow: exit %d\n%s", code, stdout)
	}
	code, stdout, _ = invoke(t, "agents", "../../examples/tutor")
	for _, want := range []string{"tutor: 7 agents", "quiz ", "reads current_topic; writes quiz_questions", "mastery_loop    loop learning_cycle ×5"} {
		if code != exitOK || !strings.Contains(stdout, want) {
			t.Errorf("agents: exit %d, lacks %q:\n%s", code, want, stdout)
		}
	}
}

// A file with many mistakes gets all of them, each with its line and column, and exit 2.
func TestValidateReportsEveryProblem(t *testing.T) {
	code, stdout, stderr := invoke(t, "validate", "testdata/bad.yaml")
	if code != exitUsage || stdout != "" {
		t.Fatalf("exit %d, stdout %q", code, stdout)
	}
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if len(lines) != 16 || lines[15] != "troupe validate: testdata/bad.yaml: 15 problems" {
		t.Fatalf("%d lines:\n%s", len(lines), stderr)
	}
	pos := regexp.MustCompile(`^testdata/bad\.yaml:\d+:\d+: [A-Za-z_.\[\]0-9]+: .+`)
	for _, l := range lines[:15] {
		if !pos.MatchString(l) {
			t.Errorf("problem without file:line:column: field: %q", l)
		}
	}
	for _, want := range []string{
		`testdata/bad.yaml:11:23: agents.summarize.sequential.agents[1]: unknown agent "sumarize" (did you mean "summarize"?)`,
		`testdata/bad.yaml:31:1: errorpolicy: unknown field "errorpolicy" (did you mean "error_policy"?)`,
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q", want)
		}
	}
}

// Every command's help is the same whichever way it is asked for, and ends with the exit
// codes of that command: those of plan, validate and agents say nothing of runs.
func TestCommandHelp(t *testing.T) {
	exits := map[string]string{
		"demo": "130 it was cancelled", "run": "3 it paused waiting for a human", "chat": "0 the conversation ended",
		"plan": "1 the request could not be planned", "validate": "0 the file is valid", "agents": "0 the agents were listed",
		"help": "2 there is no such command", "version": "0 the version was shown",
	}
	for _, c := range commands() {
		t.Run(c.name, func(t *testing.T) {
			want, ok := exits[c.name]
			if !ok {
				t.Fatalf("no exit codes to check for %s", c.name)
			}
			_, first, _ := invoke(t, "help", c.name)
			for _, args := range [][]string{{c.name, "--help"}, {c.name, "-h"}, {"help", c.name}} {
				code, stdout, stderr := invoke(t, args...)
				if code != exitOK || stderr != "" || !strings.HasPrefix(stdout, "Usage: troupe "+c.name) ||
					!strings.Contains(stdout, "\nExamples:\n  troupe "+c.name) || !strings.Contains(stdout, "\nExit codes: ") || !strings.Contains(stdout, want) {
					t.Errorf("%v: exit %d, stderr %q, help lacks %q:\n%s", args, code, stderr, want, stdout)
				}
				if diff := cmp.Diff(first, stdout); diff != "" {
					t.Errorf("%v differs from troupe help %s (-help +%v):\n%s", args, c.name, args, diff)
				}
			}
			switch c.name {
			case "plan", "validate", "agents", "help", "version":
				_, stdout, _ := invoke(t, "help", c.name)
				if _, foot, _ := strings.Cut(stdout, "\nExit codes: "); strings.Contains(foot, "run") {
					t.Errorf("the exit codes of %s, which runs nothing, speak of runs: %s", c.name, foot)
				}
			}
		})
	}
}

// docs/run-record.md documents every field of the record.
func TestRunRecordDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/run-record.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), fmt.Sprintf("# The run record (version %d)", recordVersion)) {
		t.Errorf("docs/run-record.md does not describe version %d", recordVersion)
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[runRecord](), reflect.TypeFor[recordConfig]()} {
		for f := range typ.Fields() {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if !strings.Contains(string(doc), "`"+name+"`") {
				t.Errorf("docs/run-record.md does not document %s", name)
			}
		}
	}
}

// Composites from the file run as the flow and evidence packages build them: the bundle's
// replicates show as they finish (and it stops early, its sub-agent ignoring seeds), the loop
// stops once its state condition holds, members run nested inside their composite, and only
// top-level agents are planned.
func TestCompositeWorkflow(t *testing.T) {
	code, stdout, stderr := invoke(t, "run", "testdata/composite.yaml", "count these words please")
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{
		"plan    1 stage: [jury, until_counted]",
		"  · jury replicate r1 (seed 11) completed",
		"  · jury replicate r2 (seed 23) completed",
		"  · jury first two replicates agree within ε = 0.2 (distance 0.000, confidence 1.00): stopping early",
		"  · jury bundle ready: 2 replicates, confidence 1.00, stopped early",
		"  ▸ count_both started\n",
		"    ✓ words completed",
		"✓ until_counted completed",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	if n := strings.Count(stdout, "▸ count_both started"); n != 1 {
		t.Errorf("the loop ran %d cycles; its condition (words = 4) holds after the first", n)
	}
	if strings.Contains(stdout, "replicate r3") {
		t.Errorf("the bundle did not stop early:\n%s", stdout)
	}
}

// What only building finds — a builtin this program does not have, a program that is not
// there — is reported by validate with its place, and is a configuration error (exit 2).
func TestValidateBuildErrors(t *testing.T) {
	code, _, stderr := invoke(t, "validate", "testdata/unbuildable.yaml")
	if code != exitUsage {
		t.Errorf("exit %d, want %d", code, exitUsage)
	}
	for _, want := range []string{
		`testdata/unbuildable.yaml:4:3: agents.oracle: no builtin agent "oracle"; this program has scope_definer,`,
		`testdata/unbuildable.yaml:8:21: agents.helper.exec.command: no program to run: `,
		"missing.sh does not exist (a program with a slash is relative to the file's directory)",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

// An llm agent declared in a file runs against an OpenAI-compatible endpoint — here a test
// server that answers, as the agent's output_schema asks, with the number of words of the
// question it was sent — and the key is read from the variable the file names.
func TestLLMAgentFromFile(t *testing.T) {
	var mu sync.Mutex
	var auth []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model    string `json:"model"`
			Messages []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"messages"`
			ResponseFormat map[string]any `json:"response_format"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || r.URL.Path != "/v1/chat/completions" || req.ResponseFormat["type"] != "json_schema" {
			http.Error(w, fmt.Sprintf("bad request %s: %v %v", r.URL.Path, err, req.ResponseFormat), http.StatusBadRequest)
			return
		}
		mu.Lock()
		auth = append(auth, r.Header.Get("Authorization"))
		mu.Unlock()
		last := req.Messages[len(req.Messages)-1].Content
		answer, _ := json.Marshal(map[string]any{"words": len(strings.Fields(last))})
		json.NewEncoder(w).Encode(map[string]any{
			"id": "c1", "object": "chat.completion", "created": 0, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": string(answer)}}},
			"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13},
		})
	}))
	defer srv.Close()
	t.Setenv("TEST_LLM_KEY", "sk-test")
	dir := t.TempDir()
	cfg := fmt.Sprintf(`version: 1
agents:
  counter:
    kind: llm
    llm:
      model: counting-model
      base_url: %s/v1/
      api_key_env: TEST_LLM_KEY
      system: Count the words of the question.
      prompt: "{{.Query}}"
    output_schema:
      type: object
      required: [words]
      properties: {words: {type: integer}}
`, srv.URL)
	if err := os.WriteFile(dir+"/troupe.yaml", []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := invoke(t, "run", "--output", "json", dir, "one two three four five")
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	var rec struct{ Results []*troupe.Result }
	if err := json.Unmarshal([]byte(stdout), &rec); err != nil {
		t.Fatal(err)
	}
	if len(rec.Results) != 1 || rec.Results[0].AgentResult["words"] != float64(5) || rec.Results[0].TokensUsed == nil || *rec.Results[0].TokensUsed != 13 {
		t.Errorf("results %+v", rec.Results)
	}
	if strings.Contains(stdout, "sk-test") || len(auth) != 1 || auth[0] != "Bearer sk-test" {
		t.Errorf("authorization %v (the key must be sent, and never recorded)", auth)
	}
}

// An http agent declared in a file is POSTed each dispatch; the file's error policy retries
// the service's first answer, a 503, and the second attempt's result is the run's.
func TestHTTPAgentFromFileWithRetry(t *testing.T) {
	var mu sync.Mutex
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var d troupe.Dispatch
		if err := json.NewDecoder(r.Body).Decode(&d); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if got := r.Header.Get("Authorization"); got != "Bearer tok-1" {
			http.Error(w, "token "+got, http.StatusUnauthorized)
			return
		}
		mu.Lock()
		calls++
		n := calls
		mu.Unlock()
		if n == 1 {
			http.Error(w, "warming up", http.StatusServiceUnavailable)
			return
		}
		now := time.Now().UTC()
		json.NewEncoder(w).Encode(map[string]any{
			"dispatch_id": d.DispatchID, "session_id": d.SessionID, "query_id": d.QueryID, "agent_name": d.TargetAgent,
			"status": "completed", "agent_result": map[string]any{"shout": strings.ToUpper(d.Query)},
			"analysis_summary": strings.ToUpper(d.Query), "errors": []any{}, "warnings": []any{},
			"execution_time_ms": 1, "started_at": now, "completed_at": now,
		})
	}))
	defer srv.Close()
	t.Setenv("TEST_HTTP_TOKEN", "tok-1")
	dir := t.TempDir()
	cfg := fmt.Sprintf(`version: 1
agents:
  shout:
    kind: http
    http: {url: %s/dispatch, bearer_token_env: TEST_HTTP_TOKEN}
error_policy:
  on_error: retry
  retry: {max_attempts: 3, initial_backoff: 5ms, max_backoff: 10ms}
`, srv.URL)
	if err := os.WriteFile(dir+"/troupe.yaml", []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := invoke(t, "run", dir, "hello there")
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"✗ shout failed in", "503", "↻ shout: attempt 2 in", `✓ shout completed in`, `"HELLO THERE"`} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if calls != 2 {
		t.Errorf("%d calls, want 2", calls)
	}
}

// Every example the help of run, plan, validate and agents gives runs as written (from the
// repository's root) and succeeds.
func TestHelpExamplesRun(t *testing.T) {
	for _, c := range commands() {
		switch c.name {
		case "run", "plan", "validate", "agents":
		default:
			continue
		}
		for _, ex := range c.examples {
			t.Run(ex[0], func(t *testing.T) {
				args := shellWords(ex[0])
				if i := slices.Index(args, ">"); i >= 0 {
					args = args[:i] // the redirection is the shell's
				}
				for i := 2; i < len(args); i++ { // after "troupe" and the command
					if _, err := os.Stat(filepath.Join("../..", args[i])); err == nil && args[i] != "" {
						args[i] = filepath.Join("../..", args[i])
					}
				}
				code, stdout, stderr := invoke(t, args[1:]...)
				if code != exitOK || stdout == "" {
					t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
				}
			})
		}
	}
}

// shellWords splits a command line as a POSIX shell would for the quoting troupe prints:
// double- and single-quoted words are kept whole, a backslash outside quotes escapes the next
// character.
func shellWords(s string) []string {
	var out []string
	var cur strings.Builder
	var quote rune // the open quote, or 0
	in, escaped := false, false
	for _, r := range s {
		switch {
		case escaped:
			cur.WriteRune(r)
			escaped = false
		case quote != 0 && r == quote:
			quote = 0
		case quote == 0 && (r == '"' || r == '\''):
			quote, in = r, true
		case quote == 0 && r == '\\':
			escaped, in = true, true
		case quote == 0 && r == ' ':
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if in {
		out = append(out, cur.String())
	}
	return out
}

// A coordinator's task is drawn as "(routed)" until the router decides; then that row is the
// chosen agent's, with no placeholder left behind.
func TestRunTerminalRoutedRow(t *testing.T) {
	var out, errOut syncBuffer
	code := runWorkflow(t.Context(), []string{"../../examples/tutor", "show my progress"}, &out, &errOut, true)
	if code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut.String())
	}
	s := out.String()
	last := s[strings.LastIndex(s, "\x1b[J")+len("\x1b[J"):]
	if !regexp.MustCompile(`(?m)^stage 1/1\n  ✓ pathplanner +completed`).MatchString(last) || strings.Contains(last, "(routed)") {
		t.Errorf("final view:\n%s", last)
	}
	if !strings.Contains(last, "route   → pathplanner: Progress inquiry") {
		t.Errorf("the routing decision is not shown:\n%s", last)
	}
}

// Seed 004's feasibility file runs with the example's Go agents as builtins: the bundle's
// replicates appear as they finish, then the orchestrator decides from them. The orchestrator
// cites the bundle without repeating its fields, so the run shows no conflict between the two,
// whether the judges agree (the CRM rollout) or split (the warehouse, where the split is
// reported by the bundle and the orchestrator, not as a conflict of the run).
func TestRunFeasibility(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"warehouse", []string{"--input", "../../examples/feasibility/testdata/warehouse.json", "../../examples/feasibility"}, []string{
			"  · feasibility_bundle first two replicates differ by more than ε = 0.2 (distance 0.216, confidence 0.78): running the rest",
			"  · feasibility_bundle replicate r3 (seed 47) completed",
			"  · feasibility_bundle bundle ready: 3 replicates, confidence 0.78\n",
			// The answer is the orchestrator's decision (seed 004's final report), citing the
			// disagreements the bundle measured.
			"answer Is the warehouse expansion feasible within 1,500k and 56 weeks?: no go unless rescoped.",
			"They also differ on binding_constraint (deadline / deadline / budget)",
			"The judges disagree on the verdict — r1 (seed 11) feasible, r2 (seed 23) infeasible, r3 (seed 47) infeasible",
		}},
		{"crm", []string{"../../examples/feasibility", "Is crm-rollout feasible?"}, []string{
			"  · feasibility_bundle first two replicates agree within ε = 0.2 (distance 0.043, confidence 0.96): stopping early",
			"  · feasibility_bundle bundle ready: 2 replicates, confidence 0.96, stopped early",
			"answer Can we roll out the new CRM within 40 weeks and 400k?: go.",
			"All 2 valid judges find it feasible",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := invoke(t, append([]string{"run"}, tc.args...)...)
			if code != exitOK {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			for _, want := range append([]string{
				"plan    2 stages: [feasibility_bundle] → [orchestrator]",
				"  · feasibility_bundle replicate r1 (seed 11) completed",
				"  · feasibility_bundle bundle ready: ",
				"✓ orchestrator completed",
				"conflicts    none (consistency 1.00)",
				"status  completed (exit 0)",
			}, tc.want...) {
				// The answer is wrapped to the width: compare with runs of spaces and
				// line breaks read as one space.
				if !strings.Contains(strings.Join(strings.Fields(stdout), " "), strings.Join(strings.Fields(want), " ")) {
					t.Errorf("output lacks %q:\n%s", want, stdout)
				}
			}
		})
	}
}

// A bundle's progress reads as what happened: whether the first two agreed, and why the rest
// ran, with its numbers rounded — whether the payload was built in-process or decoded from JSON.
func TestBundleProgressLines(t *testing.T) {
	tests := []struct {
		kind string
		data map[string]any
		want string
	}{
		{"partial_summary", map[string]any{"distance": 0.04346, "confidence": 0.95654, "epsilon": 0.2, "early_stop": true},
			"first two replicates agree within ε = 0.2 (distance 0.043, confidence 0.96): stopping early"},
		{"partial_summary", map[string]any{"distance": json.Number("0.215562"), "confidence": json.Number("0.784438"), "epsilon": json.Number("0.2"), "early_stop": false},
			"first two replicates differ by more than ε = 0.2 (distance 0.216, confidence 0.78): running the rest"},
		{"partial_summary", map[string]any{"distance": 0.0, "confidence": 0.5, "epsilon": 0.2, "early_stop": false},
			"first two replicates are within ε = 0.2 (distance 0.000, confidence 0.50) but not both valid: running the rest"},
		{"partial_summary", map[string]any{"distance": 1.0, "confidence": 0.0, "epsilon": 0.2, "early_stop": false,
			"reason": "the first two replicates both failed (INVALID_INPUT: no proposal): not running the rest"},
			"the first two replicates both failed (INVALID_INPUT: no proposal): not running the rest"},
		{"bundle_ready", map[string]any{"k": 3, "confidence": 0.775252, "early_stop": false}, "bundle ready: 3 replicates, confidence 0.78"},
		{"bundle_ready", map[string]any{"k": 1.0, "confidence": 1.0, "early_stop": true}, "bundle ready: 1 replicate, confidence 1.00, stopped early"},
		{"bundle_ready", map[string]any{"k": 2}, "bundle ready: 2 replicates, confidence ?"},
	}
	for _, tt := range tests {
		if got := progressLine(&troupe.Progress{Kind: tt.kind, Data: tt.data}); got != tt.want {
			t.Errorf("%s %v:\n got %q\nwant %q", tt.kind, tt.data, got, tt.want)
		}
	}
}

// A long failure is shown whole once, on the failed agent's line; the warnings and the status
// give it a line each, and no message repeats the error code or the agent-error prefix.
func TestRunLongFailureShownOnce(t *testing.T) {
	code, stdout, stderr := invoke(t, "run", "testdata/fail-long.yaml", "anything")
	if code != exitFailed {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitFailed, stdout, stderr)
	}
	const tail = "so try again after that"
	if n := strings.Count(stdout, tail); n != 2 { // the agent's stderr line, and its ✗ line
		t.Errorf("the whole message appears %d times, want 2 (its stderr and its failure line):\n%s", n, stdout)
	}
	if strings.Contains(stdout, "troupe: agent error") {
		t.Errorf("output repeats the agent-error prefix:\n%s", stdout)
	}
	var status string
	for _, l := range strings.Split(stdout, "\n") {
		if strings.HasPrefix(l, "✗ broken failed") && !strings.Contains(l, "AGENT_ERROR execagent: sh -c echo") {
			t.Errorf("failure line does not name the code and the command briefly: %q", l)
		}
		if strings.HasPrefix(l, "status  ") {
			status = l
		}
		if utf8.RuneCountInString(l) > 120 && !strings.HasPrefix(l, "✗") && !strings.HasPrefix(l, "  · ") {
			t.Errorf("line of %d characters outside the failure line: %q", utf8.RuneCountInString(l), l)
		}
	}
	if !strings.HasPrefix(status, "status  failed: broken: execagent:") || !strings.HasSuffix(status, "… (exit 1)") {
		t.Errorf("status line = %q, want the failure on one cut line", status)
	}
}

// A bundle's min_replicates is a quorum: once that many replicates have finished valid, no
// further one starts. Its sub-agent here is a shell script whose score depends on its seed,
// so the first two disagree: without a quorum all five run, with min_replicates: 2 two do.
func TestBundleQuorumFromFile(t *testing.T) {
	dir := t.TempDir()
	script := `in=$(cat); case "$in" in *'"seed":11'*) s=0.1;; *'"seed":23'*) s=0.9;; *) s=0.5;; esac; printf '{"agent_result":{"score":%s}}' "$s"`
	for _, tt := range []struct {
		quorum string
		want   int
	}{{"", 5}, {", min_replicates: 2", 2}} {
		file := filepath.Join(dir, "bundle.yaml")
		src := "version: 1\nagents:\n  judge:\n    kind: exec\n    exec: {command: [sh, -c, " + strconv.Quote(script) + "]}\n" +
			"  panel:\n    kind: bundle\n    bundle: {agent: judge, replicates: 5" + tt.quorum + "}\n"
		if err := os.WriteFile(file, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
		code, stdout, stderr := invoke(t, "run", "--output", "json", file, "How risky is it?")
		if code != exitOK {
			t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		var rec struct {
			Results []*troupe.Result `json:"results"`
		}
		if err := json.Unmarshal([]byte(stdout), &rec); err != nil {
			t.Fatal(err)
		}
		var b struct {
			Replicates []struct{ Status string } `json:"replicates"`
		}
		data, _ := json.Marshal(rec.Results[0].AgentResult)
		if err := json.Unmarshal(data, &b); err != nil {
			t.Fatal(err)
		}
		if len(b.Replicates) != tt.want {
			t.Errorf("bundle {replicates: 5%s}: %d replicates ran, want %d", tt.quorum, len(b.Replicates), tt.want)
		}
	}
}

// Piped, each step is one line: a failed agent's stderr of several lines, which its error
// quotes, is folded onto its ✗ line, as the status line folds it.
func TestRunFailureOnOneLine(t *testing.T) {
	dir := writeConfig(t, "version: 1\nagents:\n  fails:\n    kind: exec\n"+
		`    exec: {command: [sh, -c, "cat >/dev/null; echo line1 >&2; echo boom-last >&2; exit 3"]}`+"\n")
	code, stdout, stderr := invoke(t, "run", dir, "q")
	if code != exitFailed {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitFailed, stdout, stderr)
	}
	var failure string
	for _, l := range strings.Split(stdout, "\n") {
		if strings.HasPrefix(l, "✗ fails failed in ") {
			failure = l
		}
		if l == "boom-last" {
			t.Errorf("the failure's stderr spills onto a line of its own:\n%s", stdout)
		}
	}
	if !strings.HasSuffix(failure, "stderr: line1 boom-last") {
		t.Errorf("failure line = %q, want it to end in the stderr folded: stderr: line1 boom-last", failure)
	}
}

func TestPrintable(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain text, 日本語 ✓", "plain text, 日本語 ✓"},
		{"clear \x1b[2Jhere", `clear \x1b[2Jhere`},
		{"\x1b[31mRED\x1b[0m", `\x1b[31mRED\x1b[0m`},
		{"one\ntwo\r\nthree\tfour", "one two  three four"},
		{"bell\a del\x7f nul\x00", `bell\x07 del\x7f nul\x00`},
		{"c1 \u009b2J next\u0085line", `c1 \u009b2J next\u0085line`},
		{"not utf-8 \x9b2J", "not utf-8 \ufffd2J"},
	}
	for _, tt := range tests {
		if got := printable(tt.in); got != tt.want {
			t.Errorf("printable(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// Text an agent supplies — its stderr, its summary, its error, the answer made of them —
// reaches the terminal with its control characters shown, not acted on: an agent cannot clear
// the screen, colour troupe's lines or move the cursor under the live view. The run record
// keeps the text exact.
func TestAgentTextCannotDriveTheTerminal(t *testing.T) {
	const summary = "line one\nline two \u001b[31mRED\u001b[0m"
	dir := writeConfig(t, "version: 1\nagents:\n"+
		"  esc:\n    kind: exec\n"+
		`    exec: {command: [sh, -c, "cat >/dev/null; printf 'prog \\033[2Jclear\\r\\n' >&2; cat out.json"]}`+"\n"+
		"  broken:\n    kind: exec\n    after: [esc]\n"+
		`    exec: {command: [sh, -c, "cat >/dev/null; printf 'gone\\033[H\\007' >&2; exit 1"]}`+"\n")
	out, _ := json.Marshal(map[string]any{"agent_result": map[string]any{"x": 1}, "confidence": 1, "analysis_summary": summary})
	if err := os.WriteFile(filepath.Join(dir, "out.json"), out, 0o600); err != nil {
		t.Fatal(err)
	}
	// Control characters other than the line breaks of the layout, once the live view's own
	// cursor-up and clear escapes are taken out.
	controls := regexp.MustCompile(`[\x00-\x09\x0b-\x1f\x7f\x{80}-\x{9f}]`)
	own := regexp.MustCompile(`\x1b\[\d*[AJ]`)
	for _, term := range []bool{false, true} {
		var stdout, stderr syncBuffer
		runWorkflow(t.Context(), []string{dir, "q"}, &stdout, &stderr, term)
		s := own.ReplaceAllString(stdout.String(), "")
		if c := controls.FindString(s); c != "" {
			t.Errorf("terminal %v: output holds the control character %q:\n%s", term, c, s)
		}
		for _, want := range []string{`prog \x1b[2Jclear`, `"line one line two \x1b[31mRED\x1b[0m"`, `gone\x1b[H\x07`, "\nanswer\n  esc: line one line two \\x1b[31mRED\\x1b[0m"} {
			if !strings.Contains(s, want) {
				t.Errorf("terminal %v: output lacks %s:\n%s", term, want, s)
			}
		}
	}

	_, results, _ := runJSON(t, dir, "q")
	var got []string
	for _, r := range results {
		got = append(got, r.Summary())
	}
	if !slices.Contains(got, summary) {
		t.Errorf("run record's summaries = %q, want %q among them, exact", got, summary)
	}
}

// cut counts the columns a terminal gives the text: two for a CJK character, none for a
// combining mark.
func TestCutCountsColumns(t *testing.T) {
	tests := []struct {
		s    string
		n    int
		want string
	}{
		{"ascii only text", 8, "ascii o…"},
		{"ascii only text", 15, "ascii only text"},
		{"日本語のテキスト", 7, "日本語…"},
		{"日本語のテキスト", 8, "日本語…"},
		{"日本語", 6, "日本語"},
		{"abc日本", 5, "abc…"},
		{"ＡＢＣ", 5, "ＡＢ…"}, // fullwidth forms
		{"cafe\u0301 au lait", 7, "cafe\u0301 a…"},
	}
	for _, tt := range tests {
		if got := cut(tt.s, tt.n); got != tt.want {
			t.Errorf("cut(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
	}
}

// The live view cuts its lines to the terminal's columns: an agent's progress line in
// Chinese, two columns a character, is cut at half the characters an ASCII one would be, so
// that it does not wrap and break the redraw.
func TestProgressViewCutsWideText(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var out bytes.Buffer
	f := loadTestConfig(t, "testdata/workflow")
	p := newProgress(&out, f, troupe.Request{Query: "q"}, true, func() time.Time { return now })
	p.close()
	p.width = 30
	p.event(troupe.Event{Kind: troupe.KindPlanCreated, Data: &troupe.Plan{Stages: []troupe.PlanStage{{Tasks: []troupe.Task{{ID: "words", Agent: "words"}}}}}})
	p.event(troupe.Event{Kind: troupe.KindDispatchStarted, DispatchID: "d1", Agent: "words", Step: 1, Time: now, Data: &troupe.Dispatch{}})
	p.event(troupe.Event{Kind: troupe.KindAgentProgress, DispatchID: "d1", Agent: "words", Data: &troupe.Progress{Kind: "stderr", Data: "进度：正在读取第一季度的销售数据，请稍候"}})
	p.event(troupe.Event{Kind: troupe.KindAgentProgress, DispatchID: "d1", Agent: "words", Data: &troupe.Progress{Kind: "stderr", Data: "progress: reading the first quarter's sales"}})
	view := p.view()
	want := []string{
		"      · 进度：正在读取第一季…", // 8 columns, 10 characters of 2, the ellipsis: 29
		"      · progress: reading the…",
	}
	if got := view[len(view)-2:]; !slices.Equal(got, want) {
		t.Errorf("progress lines:\n%q\nwant:\n%q", got, want)
	}
}

// What troupe prints on stderr may quote a server or a subprocess: an MCP server that fails as
// it starts has its stderr quoted in the error. Its control characters are shown, not acted
// on, in troupe validate's and troupe run's errors, and the error's own line breaks stay.
func TestStderrErrorsCannotDriveTheTerminal(t *testing.T) {
	dir := writeConfig(t, "version: 1\nagents:\n  t: {kind: mcp, mcp: {server: bad, tool: echo}}\nmcp_servers:\n"+
		`  bad: {command: sh, args: [-c, "printf 'no \\033[2Jway\\n' >&2; exit 3"]}`+"\n")
	controls := regexp.MustCompile(`[\x00-\x09\x0b-\x1f\x7f\x{80}-\x{9f}]`)
	for _, cmd := range [][]string{{"validate", dir}, {"run", dir, "q"}} {
		code, _, stderr := invoke(t, cmd...)
		if code == exitOK || !strings.Contains(stderr, `no \x1b[2Jway`) {
			t.Errorf("troupe %s: exit %d, stderr %q; want a failure quoting the server's stderr with its escape shown as \\x1b", cmd[0], code, stderr)
		}
		if c := controls.FindString(stderr); c != "" {
			t.Errorf("troupe %s: stderr holds the control character %q: %q", cmd[0], c, stderr)
		}
	}
}

func TestPrintableText(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain text, 日本語 ✓", "plain text, 日本語 ✓"},
		{"file.yaml:3:4: one\n\tfile.yaml:5:6: two", "file.yaml:3:4: one\n\tfile.yaml:5:6: two"},
		{"clear \x1b[2Jhere\r\n", `clear \x1b[2Jhere` + " \n"},
		{"c1 \u009b2J, not utf-8 \x9b", `c1 \u009b2J, not utf-8 ` + "\ufffd"},
	}
	for _, tt := range tests {
		if got := printableText(tt.in); got != tt.want {
			t.Errorf("printableText(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
