package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/config"
	"github.com/troupehq/troupe/internal/peers"
)

// children returns the processes this test process has started and not yet reaped (Linux).
func children(t *testing.T) []string {
	t.Helper()
	tasks, _ := filepath.Glob("/proc/self/task/*/children")
	if len(tasks) == 0 {
		t.Skip("no /proc/self/task/*/children to check for leaked processes")
	}
	var out []string
	for _, p := range tasks {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		out = append(out, strings.Fields(string(b))...)
	}
	return out
}

// runMCPRecord runs troupe run --output json on cfg (written to a directory of its own) with
// extra arguments, and returns the record's results; the run must succeed and leave no
// server process behind.
func runMCPRecord(t *testing.T, cfg string, args ...string) []*troupe.Result {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "troupe.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	before := len(children(t))
	code, stdout, stderr := invoke(t, append([]string{"run", "--output", "json", dir}, args...)...)
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if after := children(t); len(after) != before {
		t.Errorf("the run left processes %v behind", after)
	}
	var rec struct{ Results []*troupe.Result }
	if err := json.Unmarshal([]byte(stdout), &rec); err != nil {
		t.Fatal(err)
	}
	return rec.Results
}

// An llm agent of a file calls a tool of a real MCP server (the reference "everything" server
// over stdio) declared in mcp_servers: the model is offered the server's tools under the
// file's prefix, asks for get-sum, and the server's answer reaches it and its result.
func TestLLMAgentCallsMCPTool(t *testing.T) {
	bin := peers.Bin(t, "mcp-server-everything")
	var mu sync.Mutex
	var offered []string
	var toolAnswers []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The request as the model sees it: its tools, and the last message (the tool's answer
		// once the tool has been called).
		var req struct {
			Model    string
			Messages []map[string]any
			Tools    []struct{ Function struct{ Name string } }
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) == 0 {
			http.Error(w, fmt.Sprint("bad request: ", err), http.StatusBadRequest)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		offered = offered[:0]
		for _, tl := range req.Tools {
			offered = append(offered, tl.Function.Name)
		}
		var message map[string]any
		last := req.Messages[len(req.Messages)-1]
		if last["role"] != "tool" {
			message = map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{
				"id": "call1", "type": "function", "function": map[string]any{"name": "ev_get-sum", "arguments": `{"a": 19, "b": 23}`},
			}}}
		} else {
			// The model answers with what the tool told it.
			answer := fmt.Sprint(last["content"])
			toolAnswers = append(toolAnswers, answer)
			message = map[string]any{"role": "assistant", "content": "The tool said: " + answer}
		}
		json.NewEncoder(w).Encode(map[string]any{
			"id": "c1", "object": "chat.completion", "created": 0, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": message}},
			"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13},
		})
	}))
	defer srv.Close()
	t.Setenv("TEST_LLM_KEY", "sk-test")
	results := runMCPRecord(t, fmt.Sprintf(`version: 1
agents:
  adder:
    kind: llm
    llm:
      model: adding-model
      base_url: %s/v1/
      api_key_env: TEST_LLM_KEY
      prompt: "{{.Query}}"
      tools: ["mcp:everything"]
mcp_servers:
  everything:
    command: %s
    args: [stdio]
    include: [echo, get-sum]
    prefix: ev_
    call_timeout: 10s
    stop_timeout: 200ms
`, srv.URL, bin), "what is 19 plus 23?")
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(offered, ",") != "ev_echo,ev_get-sum" {
		t.Errorf("tools offered %v, want the server's echo and get-sum under the prefix ev_", offered)
	}
	if len(toolAnswers) != 1 || !strings.Contains(toolAnswers[0], "is 42") {
		t.Errorf("the model was given the tool answers %q, want the server's sum 42", toolAnswers)
	}
	wantText(t, results, "is 42")
}

// wantText checks that the run had one result, completed, whose text holds want.
func wantText(t *testing.T, results []*troupe.Result, want string) {
	t.Helper()
	if len(results) != 1 || results[0].Status != troupe.StatusCompleted {
		t.Fatalf("results %+v", results)
	}
	if text, _ := results[0].AgentResult["text"].(string); !strings.Contains(text, want) {
		t.Errorf("agent_result %v, want its text to hold %q", results[0].AgentResult, want)
	}
}

// An mcp agent is one tool of a server run directly: its arguments are the request's
// user_context.arguments and its result the tool's answer.
func TestMCPAgentFromFile(t *testing.T) {
	bin := peers.Bin(t, "mcp-server-everything")
	input := filepath.Join(t.TempDir(), "in.json")
	if err := os.WriteFile(input, []byte(`{"query": "add", "user_context": {"arguments": {"a": 2, "b": 40}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	results := runMCPRecord(t, fmt.Sprintf(`version: 1
agents:
  sum:
    kind: mcp
    mcp: {server: everything, tool: get-sum}
mcp_servers:
  everything: {command: %s, args: [stdio], stop_timeout: 200ms}
`, bin), "--input", input)
	wantText(t, results, "The sum of 2 and 40 is 42")
}

// A server's max_result_bytes bounds its tools' results: an echo longer than the bound fails
// the mcp agent's dispatch with INVALID_OUTPUT naming the bound, and one within it completes.
func TestMCPMaxResultBytesFromFile(t *testing.T) {
	bin := peers.Bin(t, "mcp-server-everything")
	input := filepath.Join(t.TempDir(), "in.json")
	msg := strings.Repeat("x", 300)
	if err := os.WriteFile(input, []byte(`{"query": "echo", "user_context": {"arguments": {"message": "`+msg+`"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	file := func(bound int) string {
		return writeConfig(t, fmt.Sprintf(`version: 1
agents:
  echo:
    kind: mcp
    mcp: {server: everything, tool: echo}
mcp_servers:
  everything: {command: %s, args: [stdio], stop_timeout: 200ms, max_result_bytes: %d}
`, bin, bound))
	}
	code, results, _ := runJSON(t, file(100), "--input", input)
	if code != exitFailed || len(results) != 1 || results[0].Status != troupe.StatusFailed || len(results[0].Errors) == 0 {
		t.Fatalf("max_result_bytes 100: exit %d, results %+v; want the dispatch failed", code, results)
	}
	if e := results[0].Errors[0]; e.Code != troupe.CodeInvalidOutput || !strings.Contains(e.Message, "over the bound of 100 bytes (max_result_bytes)") {
		t.Errorf("max_result_bytes 100: error %+v, want INVALID_OUTPUT over the bound of 100 bytes", e)
	}
	code, results, _ = runJSON(t, file(4096), "--input", input)
	if code != exitOK {
		t.Fatalf("max_result_bytes 4096: exit %d, results %+v", code, results)
	}
	wantText(t, results, msg)
}

// An http agent's max_response_bytes bounds the service's answer: a result longer than the
// bound fails the dispatch with INVALID_OUTPUT naming the bound, and one within it completes.
func TestHTTPMaxResponseBytesFromFile(t *testing.T) {
	text := strings.Repeat("x", 300)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var d troupe.Dispatch
		if err := json.NewDecoder(r.Body).Decode(&d); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		now := time.Now().UTC()
		json.NewEncoder(w).Encode(map[string]any{
			"dispatch_id": d.DispatchID, "session_id": d.SessionID, "query_id": d.QueryID, "agent_name": d.TargetAgent,
			"status": "completed", "agent_result": map[string]any{"text": text},
			"errors": []any{}, "warnings": []any{}, "started_at": now, "completed_at": now,
		})
	}))
	defer srv.Close()
	file := func(bound int) string {
		return writeConfig(t, fmt.Sprintf("version: 1\nagents:\n  echo:\n    kind: http\n    http: {url: %s/dispatch, max_response_bytes: %d}\n", srv.URL, bound))
	}
	code, results, _ := runJSON(t, file(100), "echo")
	if code != exitFailed || len(results) != 1 || results[0].Status != troupe.StatusFailed || len(results[0].Errors) == 0 {
		t.Fatalf("max_response_bytes 100: exit %d, results %+v; want the dispatch failed", code, results)
	}
	if e := results[0].Errors[0]; e.Code != troupe.CodeInvalidOutput || !strings.Contains(e.Message, "response over 100 bytes (max_response_bytes)") {
		t.Errorf("max_response_bytes 100: error %+v, want INVALID_OUTPUT over 100 bytes", e)
	}
	code, results, _ = runJSON(t, file(4096), "echo")
	if code != exitOK {
		t.Fatalf("max_response_bytes 4096: exit %d, results %+v", code, results)
	}
	wantText(t, results, text)
}

// Building fails, at the line of the field at fault, when a file names a tool the server does
// not have or a server that cannot start; validate reports it and leaves no process behind.
func TestMCPBuildErrors(t *testing.T) {
	bin := peers.Bin(t, "mcp-server-everything")
	tests := []struct {
		name, cfg, want string
	}{
		{"no such tool", fmt.Sprintf("version: 1\nagents:\n  s: {kind: mcp, mcp: {server: ev, tool: get-summ}}\nmcp_servers:\n  ev: {command: %s, args: [stdio], stop_timeout: 200ms}\n", bin),
			`troupe.yaml:3:42: agents.s.mcp.tool: MCP server ev has no tool "get-summ" (it offers `},
		// The names offered are the ones to write after the server's name, not the prefixed
		// ones an llm agent's model sees.
		{"no such tool, prefixed", fmt.Sprintf("version: 1\nagents:\n  s: {kind: mcp, mcp: {server: ev, tool: get-summ}}\nmcp_servers:\n  ev: {command: %s, args: [stdio], stop_timeout: 200ms, prefix: ev_}\n", bin),
			`troupe.yaml:3:42: agents.s.mcp.tool: MCP server ev has no tool "get-summ" (it offers echo, `},
		{"no such program", "version: 1\nagents:\n  s: {kind: mcp, mcp: {server: ev, tool: t}}\nmcp_servers:\n  ev: {command: ./not-there}\n",
			"troupe.yaml:5:17: mcp_servers.ev.command: MCP server ev: no program to run: "},
		{"unset variable", fmt.Sprintf("version: 1\nagents:\n  s: {kind: mcp, mcp: {server: ev, tool: echo}}\nmcp_servers:\n  ev: {command: %s, env: {TOKEN: TROUPE_TEST_UNSET_VARIABLE}}\n", bin),
			// at the variable's name: the column after the server's program, whose path varies
			fmt.Sprintf("troupe.yaml:5:%d: mcp_servers.ev.env.TOKEN: MCP server ev: the environment variable TROUPE_TEST_UNSET_VARIABLE is not set",
				len("  ev: {command: ")+len(bin)+len(", env: {TOKEN: ")+1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "troupe.yaml"), []byte(tt.cfg), 0o644); err != nil {
				t.Fatal(err)
			}
			before := len(children(t))
			code, _, stderr := invoke(t, "validate", dir)
			if code != exitUsage || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, stderr:\n%s\nwant %q", code, stderr, tt.want)
			}
			if after := children(t); len(after) != before {
				t.Errorf("validate left processes %v behind", after)
			}
		})
	}
}

// --input is strict where a mistake would otherwise pass unnoticed: a key a typo away from a
// request's field, an unknown field in a request, a request with nothing to plan. Each is a
// usage error naming the file, and nothing runs.
func TestInputStrict(t *testing.T) {
	tests := []struct {
		name  string
		input string
		args  []string // after the command: CONFIG and any query
		code  int
		says  string
	}{
		{"misspelt query", `{"qeury": "why"}`, []string{"plan", "../../examples/e2i"}, exitUsage,
			`--input in.json: unknown field "qeury" (did you mean "query"?): with no request field the file is read as a parsed query alone; to give a parsed query with this key, put it under "parsed_query"`},
		{"misspelt query, run", `{"qeury": "why"}`, []string{"run", "testdata/one.yaml"}, exitUsage, `unknown field "qeury" (did you mean "query"?)`},
		{"misspelt parsed_query", `{"parsed_qeury": {"intent": "causal"}}`, []string{"plan", "../../examples/e2i"}, exitUsage, `(did you mean "parsed_query"?)`},
		{"misspelt state in a request", `{"query": "continue quiz", "sate": {"quiz_paused": true}}`, []string{"plan", "../../examples/tutor"}, exitUsage,
			`--input in.json: unknown field "sate" (did you mean "state"?): a request's fields are `},
		{"parsed query key in a request", `{"query": "why", "intent": "causal"}`, []string{"plan", "../../examples/e2i"}, exitUsage,
			`unknown field "intent": a request's fields are `},
		{"nothing to plan", `{"state": {"quiz_paused": true}}`, []string{"run", "testdata/one.yaml"}, exitUsage,
			"--input in.json: no query and no parsed query"},
		{"blank query", `{"query": "  "}`, []string{"run", "testdata/one.yaml"}, exitUsage, "no query and no parsed query"},
		{"state with the query on the command line", `{"state": {"quiz_paused": true}}`, []string{"plan", "../../examples/tutor", "continue quiz"}, exitOK,
			"route → quiz: Resume paused quiz"},
		{"parsed query alone", `{"intent": "causal", "kpis": ["NRx"]}`, []string{"plan", "../../examples/e2i"}, exitOK, "parsed    intent=causal kpis=[NRx]"},
		{"any key under parsed_query", `{"parsed_query": {"intent": "causal", "qeury": "x"}}`, []string{"plan", "../../examples/e2i"}, exitOK, "qeury=x"},
		// Wrong JSON is said in JSON's terms, not Go's ("cannot unmarshal … into Go struct field").
		{"a field of the wrong type", `{"query": 5}`, []string{"plan", "testdata/one.yaml"}, exitUsage,
			`troupe plan: --input in.json: field "query": got a number, want a string`},
		{"a nested field of the wrong type", `{"query": "q", "budget": {"time_seconds": "1m"}}`, []string{"plan", "testdata/one.yaml"}, exitUsage,
			`troupe plan: --input in.json: field "budget.time_seconds": got a string, want a number`},
		// A nested object's unknown field is named by its path, with the object's fields.
		{"unknown nested field", `{"budget": {"max_dispatches": 1}}`, []string{"run", "testdata/one.yaml"}, exitUsage,
			`troupe run: --input in.json: unknown field "budget.max_dispatches": budget's fields are time_seconds, max_cost_dollars, max_tokens`},
		{"misspelt nested field", `{"query": "q", "policy": {"retry": {"max_attempt": 3}}}`, []string{"plan", "testdata/one.yaml"}, exitUsage,
			`--input in.json: unknown field "policy.retry.max_attempt" (did you mean "max_attempts"?): policy.retry's fields are max_attempts, initial_backoff_ns, max_backoff_ns, multiplier, jitter`},
		{"a list of the wrong type", `{"query": "q", "criteria": {"intent_type": "causal", "preferred_agents": 5}}`, []string{"plan", "testdata/one.yaml"}, exitUsage,
			`--input in.json: field "criteria.preferred_agents": got a number, want a list of strings`},
		// A parsed query's value of the wrong type, which planning refuses, is said in JSON's terms
		// and where it is in the file, not in Go's (float64, []interface {}).
		{"parsed query value of the wrong type", `{"intent": "causal", "kpis": 5}`, []string{"plan", "../../examples/e2i"}, exitUsage,
			`troupe plan: --input in.json: field "kpis": got a number, want a string or a list of strings`},
		{"parsed query value of the wrong type, run", `{"intent": "causal", "kpis": 5}`, []string{"run", "../../examples/e2i"}, exitUsage,
			`troupe run: --input in.json: field "kpis": got a number, want a string or a list of strings`},
		{"parsed query list of the wrong type", `{"query": "q", "parsed_query": {"intent": "causal", "kpis": ["NRx", 7]}}`, []string{"plan", "../../examples/e2i"}, exitUsage,
			`--input in.json: field "parsed_query.kpis": got a list whose item 2 is a number, want a string or a list of strings`},
		{"not JSON", "{\"query\": \"q\",\n \"state\": {x}}", []string{"plan", "testdata/one.yaml"}, exitUsage,
			"troupe plan: --input in.json: not JSON, at line 2, column 12: invalid character 'x' looking for beginning of object key string"},
		{"not an object", `["why"]`, []string{"plan", "testdata/one.yaml"}, exitUsage,
			`troupe plan: --input in.json: got a list, want a JSON object: a request {"query": ...} or a parsed query {"intent": ...}`},
		{"empty", "\n", []string{"plan", "testdata/one.yaml"}, exitUsage,
			`troupe plan: --input in.json: the file is empty: want a request {"query": ...} or a parsed query {"intent": ...}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := filepath.Join(t.TempDir(), "in.json")
			if err := os.WriteFile(in, []byte(tt.input), 0o600); err != nil {
				t.Fatal(err)
			}
			args := append([]string{tt.args[0], "--input", in}, tt.args[1:]...)
			code, stdout, stderr := invoke(t, args...)
			says := strings.ReplaceAll(tt.says, "--input in.json", "--input "+in) // the path as given
			if code != tt.code || !strings.Contains(stdout+stderr, says) {
				t.Fatalf("exit %d (want %d); output lacks %q:\nstdout:\n%s\nstderr:\n%s", code, tt.code, says, stdout, stderr)
			}
			if code == exitUsage && stdout != "" {
				t.Errorf("a refused input printed %q", stdout)
			}
		})
	}
}

// FuzzDecodeInput: decoding never panics, and a parsed query taken alone has no key a typo
// away from a request's field, nor any request field.
func FuzzDecodeInput(f *testing.F) {
	for _, s := range []string{`{"qeury": "why"}`, `{"query": "q", "state": {"a": 1}}`, `{"intent": "causal"}`, `[]`, `{"budget": 3}`, `null`} {
		f.Add([]byte(s))
	}
	fields := requestFields()
	f.Fuzz(func(t *testing.T, b []byte) {
		req, _, err := decodeInput(b)
		if err != nil {
			return
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(b, &obj) != nil {
			t.Fatalf("decoded %q, which is not a JSON object", b)
		}
		for k := range obj {
			if slices.Contains(fields, k) {
				return // a request
			}
		}
		for k := range req.ParsedQuery {
			if s := config.Closest(k, fields); s != "" {
				t.Errorf("parsed query key %q passed, a typo away from %q", k, s)
			}
		}
	})
}

// --state reads a value as JSON, True and False (any case) as booleans, anything else as a
// string; a coordinator's when compares the value, so quiz_paused=True resumes the quiz.
func TestStateFlag(t *testing.T) {
	for _, tt := range []struct {
		arg  string
		want any
	}{
		{"k=true", true}, {"k=True", true}, {"k=TRUE", true}, {"k=False", false}, {"k=false", false},
		{`k="True"`, "True"}, {"k=3", 3.0}, {"k=[1]", []any{1.0}}, {"k=x", "x"}, {"k=yes", "yes"}, {"k=", ""},
		{"k=a=b", "a=b"},
	} {
		t.Run(tt.arg, func(t *testing.T) {
			s := stateFlag{}
			if err := s.Set(tt.arg); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(map[string]any{"k": tt.want}, map[string]any(s)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	for _, bad := range []string{"k", "=v"} {
		if err := (stateFlag{}).Set(bad); err == nil {
			t.Errorf("Set(%q) = nil, want an error", bad)
		}
	}
	code, stdout, stderr := invoke(t, "plan", "--state", "quiz_paused=True", "../../examples/tutor", "continue quiz")
	if code != exitOK || !strings.Contains(stdout, "state     quiz_paused=true\n") || !strings.Contains(stdout, "route → quiz: Resume paused quiz") {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}

// An exec or http agent without a timeout of its own gets the budget's default_timeout, the
// deadline the engine gives its dispatches, rather than its adapter's shorter default (http's
// minute would otherwise cut off what the file allows ten for).
func TestAdapterTimeoutFromTheBudget(t *testing.T) {
	f, err := config.Parse("t.yaml", []byte("version: 1\nagents:\n  own: {kind: builtin, timeout: 5s}\n  none: {kind: builtin}\nbudget: {default_timeout: 10m}\n"))
	if err != nil {
		t.Fatal(err)
	}
	b := &config.Builder{File: f}
	if got := agentTimeout(b, f.Agents["own"]); got != 5*time.Second {
		t.Errorf("an agent's own timeout: %v", got)
	}
	if got := agentTimeout(b, f.Agents["none"]); got != 10*time.Minute {
		t.Errorf("the budget's default: %v, want 10m", got)
	}
	f.Budget = nil
	if got := agentTimeout(b, f.Agents["none"]); got != 0 {
		t.Errorf("no budget: %v, want 0 (the adapter's default)", got)
	}
}
