package llmagent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/agent/cassette"
	"github.com/troupehq/troupe/agent/llmagent"
	"github.com/troupehq/troupe/flow"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const testKey = "sk-test-SECRET-0123456789"

func newAgent(t *testing.T, cfg llmagent.Config) *llmagent.Agent {
	t.Helper()
	t.Setenv("TEST_LLM_KEY", testKey)
	cfg.APIKeyEnv = "TEST_LLM_KEY"
	if cfg.Model == "" {
		cfg.Model = "gpt-test"
	}
	a, err := llmagent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func agentError(t *testing.T, err error) *troupe.AgentError {
	t.Helper()
	var ae *troupe.AgentError
	if !errors.As(err, &ae) {
		t.Fatalf("error %v (%T) is not an *AgentError", err, err)
	}
	return ae
}

func messages(req seenRequest) []map[string]any {
	var out []map[string]any
	for _, m := range req.Body["messages"].([]any) {
		out = append(out, m.(map[string]any))
	}
	return out
}

func TestPlainCompletion(t *testing.T) {
	srv := newCompletionServer(t, reply{content: "Paris is the capital.", usage: [2]int{12, 5}, model: "gpt-test-2026"})
	a := newAgent(t, llmagent.Config{
		BaseURL:     srv.URL(),
		Temperature: troupe.Ptr(0.0),
		Seed:        troupe.Ptr(int64(7)),
		MaxTokens:   100,
		System:      "{{.OptimizedPrompt}} Topic: {{.State \"topic\"}}.",
		Prompt:      "Q: {{.Query}} ({{.ParsedQuery.lang}})",
		Prices:      map[string]llmagent.Price{"gpt-test-2026": {PromptPerMillion: 1e6, CompletionPerMillion: 2e6}},
	})
	rt := &runtime{state: map[string]any{"topic": "geography"}}
	d := dispatch("capital of France?", rt)
	d.ParsedQuery = map[string]any{"lang": "en"}
	d.OptimizedPrompts = map[string]string{"writer": "Be terse.", "other": "ignored"}

	res, err := a.Run(t.Context(), d)
	if err != nil {
		t.Fatal(err)
	}
	want := &troupe.Result{
		AgentResult:     map[string]any{"text": "Paris is the capital."},
		AnalysisSummary: troupe.Ptr("Paris is the capital."),
		TokensUsed:      troupe.Ptr(int64(17)),
		ModelUsed:       troupe.Ptr("gpt-test-2026"),
		CostDollars:     troupe.Ptr(12.0 + 10.0),
		Annotations:     map[string]any{"llm_usage": map[string]any{"prompt_tokens": int64(12), "completion_tokens": int64(5)}},
	}
	if diff := cmp.Diff(want, res); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	body := reqs[0].Body
	wantBody := map[string]any{
		"model": "gpt-test", "temperature": 0.0, "seed": 7.0, "max_completion_tokens": 100.0,
		"messages": []any{
			map[string]any{"role": "system", "content": "Be terse. Topic: geography."},
			map[string]any{"role": "user", "content": "Q: capital of France? (en)"},
		},
	}
	if diff := cmp.Diff(wantBody, body); diff != "" {
		t.Errorf("request body (-want +got):\n%s", diff)
	}
	if got := reqs[0].Header.Get("Authorization"); got != "Bearer "+testKey {
		t.Errorf("Authorization = %q", got)
	}
}

func TestHandoffInDefaultPrompt(t *testing.T) {
	block := "=== Context from Previous Agent ===\nTask: analysed the spec\nKey Outputs:\n- files: [\"a.go\"]\n- lang: go\n" +
		"Metadata: Agent analyzer completed at 2026-11-22T10:00:00Z with status completed\n==================================="
	upstream := []troupe.UpstreamResult{{
		Agent: "analyzer", Summary: "analysed the spec",
		Result:  map[string]any{"files": []any{"a.go"}, "lang": "go"},
		Handoff: map[string]any{"metadata": map[string]any{"timestamp": "2026-11-22T10:00:00Z"}},
	}}
	for _, tc := range []struct{ name, query, want string }{
		{"engine upstream", "write the code", block + "\n\nwrite the code"},
		{"sequence already injected it", block + "\n\nwrite the code", block + "\n\nwrite the code"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newCompletionServer(t, reply{content: "ok", usage: [2]int{1, 1}})
			a := newAgent(t, llmagent.Config{BaseURL: srv.URL()})
			d := dispatch(tc.query, nil)
			d.UpstreamResults = upstream
			if _, err := a.Run(t.Context(), d); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, messages(srv.Requests()[0])[0]["content"]); diff != "" {
				t.Errorf("user message (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStreamedCompletion(t *testing.T) {
	srv := newCompletionServer(t, reply{content: "streamed answer here", usage: [2]int{9, 4}})
	a := newAgent(t, llmagent.Config{BaseURL: srv.URL(), Stream: true,
		Prices: map[string]llmagent.Price{"gpt-test": {PromptPerMillion: 1, CompletionPerMillion: 1}}})
	rt := &runtime{}
	res, err := a.Run(t.Context(), dispatch("stream please", rt))
	if err != nil {
		t.Fatal(err)
	}
	if got := res.AgentResult["text"]; got != "streamed answer here" {
		t.Errorf("text = %q", got)
	}
	if *res.TokensUsed != 13 || *res.CostDollars != 13e-6 {
		t.Errorf("tokens %d cost %v, want 13 and 13e-6 (usage from the last chunk)", *res.TokensUsed, *res.CostDollars)
	}
	var tokens []string
	for _, e := range rt.Events() {
		if e.Kind == "token" {
			tokens = append(tokens, e.Data.(map[string]any)["text"].(string))
		}
	}
	if diff := cmp.Diff([]string{"stre", "amed", " ans", "wer ", "here"}, tokens); diff != "" {
		t.Errorf("token events (-want +got):\n%s", diff)
	}
	body := srv.Requests()[0].Body
	if body["stream"] != true || !cmp.Equal(body["stream_options"], map[string]any{"include_usage": true}) {
		t.Errorf("request stream=%v stream_options=%v", body["stream"], body["stream_options"])
	}
}

// TestAnswerCutAtTheTokenLimitIsWarned: an answer the model was stopped in (finish_reason
// "length") is passed on, but with a warning that it may be cut short, streamed or not.
func TestAnswerCutAtTheTokenLimitIsWarned(t *testing.T) {
	for _, stream := range []bool{false, true} {
		srv := newCompletionServer(t, reply{content: "The three causes are: first, the", usage: [2]int{9, 8}, finish: "length"},
			reply{content: "A whole answer.", usage: [2]int{9, 4}})
		a := newAgent(t, llmagent.Config{BaseURL: srv.URL(), Stream: stream, MaxTokens: 8})
		res, err := a.Run(t.Context(), dispatch("why?", &runtime{}))
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "token limit (finish_reason length, max_tokens 8)") {
			t.Errorf("stream %v: warnings %q, want one about the token limit", stream, res.Warnings)
		}
		if res, err := a.Run(t.Context(), dispatch("why?", &runtime{})); err != nil || len(res.Warnings) != 0 {
			t.Errorf("stream %v: a finished answer: %+v, %v; want no warning", stream, res, err)
		}
	}
}

// TestContentFilteredAnswerIsWarned: an answer the server's content filter stopped or altered
// (finish_reason "content_filter") is passed on, but with a warning that it may be incomplete
// or altered, streamed or not.
func TestContentFilteredAnswerIsWarned(t *testing.T) {
	for _, stream := range []bool{false, true} {
		srv := newCompletionServer(t, reply{content: "The recipe starts with", usage: [2]int{9, 4}, finish: "content_filter"},
			reply{content: "A whole answer.", usage: [2]int{9, 4}})
		a := newAgent(t, llmagent.Config{BaseURL: srv.URL(), Stream: stream})
		res, err := a.Run(t.Context(), dispatch("how?", &runtime{}))
		if err != nil {
			t.Fatal(err)
		}
		if res.AgentResult["text"] != "The recipe starts with" {
			t.Errorf("stream %v: result %+v, want the filtered answer passed on", stream, res)
		}
		if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "content filter (finish_reason content_filter)") {
			t.Errorf("stream %v: warnings %q, want one about the content filter", stream, res.Warnings)
		}
		if res, err := a.Run(t.Context(), dispatch("how?", &runtime{})); err != nil || len(res.Warnings) != 0 {
			t.Errorf("stream %v: a finished answer: %+v, %v; want no warning", stream, res, err)
		}
	}
}

// TestStreamWithoutFinishReasonIsWarned: a stream that ends without a finish_reason (a
// connection cut between chunks ends as cleanly as a whole answer) gives its text with a
// warning that it may be incomplete.
func TestStreamWithoutFinishReasonIsWarned(t *testing.T) {
	srv := newCompletionServer(t, reply{content: "The answer is", usage: [2]int{9, 3}, finish: "-"})
	a := newAgent(t, llmagent.Config{BaseURL: srv.URL(), Stream: true})
	res, err := a.Run(t.Context(), dispatch("why?", &runtime{}))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "ended without a finish_reason") {
		t.Errorf("warnings %q, want one saying the stream may be incomplete", res.Warnings)
	}
}

// addTool adds two numbers; failTool always fails; fatalTool fails with a fatal error.
type funcTool struct {
	info troupe.ToolInfo
	fn   func(args json.RawMessage) (json.RawMessage, error)
}

func (f funcTool) Info() troupe.ToolInfo { return f.info }
func (f funcTool) Call(_ context.Context, _ *troupe.Dispatch, args json.RawMessage) (json.RawMessage, error) {
	return f.fn(args)
}

var addTool = funcTool{
	info: troupe.ToolInfo{Name: "add", Description: "adds a and b", InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`)},
	fn: func(args json.RawMessage) (json.RawMessage, error) {
		var in struct{ A, B float64 }
		if err := json.Unmarshal(args, &in); err != nil {
			return nil, err
		}
		return json.Marshal(map[string]float64{"sum": in.A + in.B})
	},
}

var failTool = funcTool{
	info: troupe.ToolInfo{Name: "lookup"},
	fn:   func(json.RawMessage) (json.RawMessage, error) { return nil, errors.New("lookup: index offline") },
}

type cycleError struct{}

func (cycleError) Error() string { return "flow: circular dependency: a → b → a" }
func (cycleError) Fatal() bool   { return true }

var fatalTool = funcTool{
	info: troupe.ToolInfo{Name: "delegate"},
	fn:   func(json.RawMessage) (json.RawMessage, error) { return nil, fmt.Errorf("calling b: %w", cycleError{}) },
}

func TestToolCallsOverSeveralTurns(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			srv := newCompletionServer(t,
				reply{toolCalls: []wireToolCall{{"call_1", "add", `{"a":2,"b":3}`}, {"call_2", "lookup", `{}`}}, usage: [2]int{10, 3}},
				reply{toolCalls: []wireToolCall{{"call_3", "nosuch", `{}`}, {"call_4", "add", `{"a":5,"b":`}}, usage: [2]int{20, 3}},
				reply{content: "The sum is 5.", usage: [2]int{30, 4}},
			)
			a := newAgent(t, llmagent.Config{BaseURL: srv.URL(), Stream: stream, Tools: []troupe.Tool{addTool, failTool}})
			rt := &runtime{}
			res, err := a.Run(t.Context(), dispatch("what is 2+3?", rt))
			if err != nil {
				t.Fatal(err)
			}
			if res.AgentResult["text"] != "The sum is 5." || *res.TokensUsed != 70 {
				t.Errorf("result %v tokens %d, want the last answer and 70 tokens over three turns", res.AgentResult, *res.TokensUsed)
			}
			reqs := srv.Requests()
			if len(reqs) != 3 {
				t.Fatalf("%d requests, want 3", len(reqs))
			}
			tools := reqs[0].Body["tools"].([]any)
			if fn := tools[0].(map[string]any)["function"].(map[string]any); fn["name"] != "add" || fn["parameters"].(map[string]any)["required"] == nil {
				t.Errorf("first tool offered = %v", fn)
			}
			var toolMsgs []string
			for _, m := range messages(reqs[2]) {
				if m["role"] == "tool" {
					toolMsgs = append(toolMsgs, m["tool_call_id"].(string)+" "+m["content"].(string))
				}
			}
			want := []string{
				`call_1 {"sum":5}`,
				`call_2 error: lookup: index offline`,
				`call_3 error: there is no tool named "nosuch"`,
				`call_4 error: the arguments of add are not valid JSON: {"a":5,"b":`,
			}
			if diff := cmp.Diff(want, toolMsgs); diff != "" {
				t.Errorf("tool messages (-want +got):\n%s", diff)
			}
			asst := messages(reqs[1])[1]
			if asst["role"] != "assistant" || len(asst["tool_calls"].([]any)) != 2 {
				t.Errorf("assistant message replayed = %v", asst)
			}
		})
	}
}

// Parallel tool calls stay apart in a stream whose servers do not number them as OpenAI does:
// Ollama labels every call index 0, Gemini sends no index at all (both decode as 0). A new id
// is a new call.
func TestStreamedToolCallsWithoutDistinctIndexes(t *testing.T) {
	chunk := func(delta string) string {
		return `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[{"index":0,"delta":` + delta + `,"finish_reason":null}]}` + "\n\n"
	}
	for _, tc := range []struct{ name, body string }{
		{"Ollama: each call index 0", chunk(`{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"add","arguments":"{\"a\":1,"}}]}`) +
			chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"\"b\":2}"}}]}`) +
			chunk(`{"tool_calls":[{"index":0,"id":"call_b","type":"function","function":{"name":"add","arguments":"{\"a\":3,\"b\":4}"}}]}`)},
		{"Gemini: no index, both calls in one chunk", chunk(`{"tool_calls":[{"id":"call_a","type":"function","function":{"name":"add","arguments":"{\"a\":1,\"b\":2}"}},` +
			`{"id":"call_b","type":"function","function":{"name":"add","arguments":"{\"a\":3,\"b\":4}"}}]}`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var second []byte
			n := 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n++
				w.Header().Set("Content-Type", "text/event-stream")
				if n == 1 {
					fmt.Fprint(w, tc.body+"data: [DONE]\n\n")
					return
				}
				second, _ = io.ReadAll(r.Body)
				fmt.Fprint(w, chunk(`{"content":"done"}`)+"data: [DONE]\n\n")
			}))
			defer srv.Close()
			a := newAgent(t, llmagent.Config{BaseURL: srv.URL + "/v1", Stream: true, Tools: []troupe.Tool{addTool}})
			if _, err := a.Run(t.Context(), dispatch("add twice", nil)); err != nil {
				t.Fatal(err)
			}
			var body struct {
				Messages []struct {
					Role       string `json:"role"`
					Content    any    `json:"content"`
					ToolCallID string `json:"tool_call_id"`
				} `json:"messages"`
			}
			if err := json.Unmarshal(second, &body); err != nil {
				t.Fatalf("second request %s: %v", second, err)
			}
			var got []string
			for _, m := range body.Messages {
				if m.Role == "tool" {
					got = append(got, fmt.Sprintf("%s %v", m.ToolCallID, m.Content))
				}
			}
			if diff := cmp.Diff([]string{`call_a {"sum":3}`, `call_b {"sum":7}`}, got); diff != "" {
				t.Errorf("tool answers (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFatalToolErrorSurfaces(t *testing.T) {
	srv := newCompletionServer(t, reply{toolCalls: []wireToolCall{{"c1", "delegate", `{}`}}, usage: [2]int{1, 1}})
	a := newAgent(t, llmagent.Config{BaseURL: srv.URL(), Tools: []troupe.Tool{fatalTool}})
	res, err := a.Run(t.Context(), dispatch("go", nil))
	var ce cycleError
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v, want the cycle error", err)
	}
	if len(srv.Requests()) != 1 || res == nil || *res.TokensUsed != 2 {
		t.Errorf("requests %d, result %+v: the model must not see a fatal error, usage must be kept", len(srv.Requests()), res)
	}
}

func TestMaxTurns(t *testing.T) {
	loop := reply{toolCalls: []wireToolCall{{"c", "add", `{"a":1,"b":1}`}}, usage: [2]int{1, 1}}
	srv := newCompletionServer(t, loop, loop, loop, loop)
	a := newAgent(t, llmagent.Config{BaseURL: srv.URL(), Tools: []troupe.Tool{addTool}, MaxTurns: 3})
	_, err := a.Run(t.Context(), dispatch("loop", nil))
	if ae := agentError(t, err); !strings.Contains(ae.Message, "after 3 turns") {
		t.Errorf("error = %v", err)
	}
	if n := len(srv.Requests()); n != 3 {
		t.Errorf("%d requests, want 3", n)
	}
}

const personSchema = `{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer","minimum":0},"confidence":{"type":"number"}},"required":["name","age"],"additionalProperties":false}`

func TestStructuredOutputReask(t *testing.T) {
	srv := newCompletionServer(t,
		reply{content: `{"name":"Ada","age":-3}`, usage: [2]int{5, 5}},
		reply{content: "```json\n{\"name\":\"Ada\",\"age\":36,\"confidence\":0.9}\n```", usage: [2]int{5, 5}},
	)
	a := newAgent(t, llmagent.Config{BaseURL: srv.URL(), Schema: json.RawMessage(personSchema), SchemaName: "person"})
	rt := &runtime{}
	res, err := a.Run(t.Context(), dispatch("who?", rt))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"name": "Ada", "age": 36.0, "confidence": 0.9}, res.AgentResult); diff != "" {
		t.Errorf("agent_result (-want +got):\n%s", diff)
	}
	if res.Confidence == nil || *res.Confidence != 0.9 || *res.TokensUsed != 20 {
		t.Errorf("confidence %v tokens %d", res.Confidence, *res.TokensUsed)
	}
	reqs := srv.Requests()
	rf := reqs[0].Body["response_format"].(map[string]any)
	js := rf["json_schema"].(map[string]any)
	if rf["type"] != "json_schema" || js["name"] != "person" || js["strict"] != true || js["schema"].(map[string]any)["required"] == nil {
		t.Errorf("response_format = %v", rf)
	}
	msgs := messages(reqs[1])
	last := msgs[len(msgs)-1]
	if last["role"] != "user" || !strings.Contains(last["content"].(string), "/age") || msgs[len(msgs)-2]["content"] != `{"name":"Ada","age":-3}` {
		t.Errorf("re-ask messages = %v", msgs[1:])
	}
	if evs := rt.Events(); len(evs) != 1 || evs[0].Kind != "reask" {
		t.Errorf("progress events = %v", evs)
	}
}

func TestStructuredOutputFailsWhenReasksRunOut(t *testing.T) {
	bad := reply{content: `{"name":"Ada"}`, usage: [2]int{1, 1}}
	srv := newCompletionServer(t, bad, bad, bad)
	a := newAgent(t, llmagent.Config{BaseURL: srv.URL(), Schema: json.RawMessage(personSchema), MaxReasks: 1})
	res, err := a.Run(t.Context(), dispatch("who?", nil))
	ae := agentError(t, err)
	if ae.Code != troupe.CodeInvalidOutput || !strings.Contains(ae.Message, "age") || !strings.Contains(ae.Message, "after 1 re-asks") {
		t.Errorf("error = %v", err)
	}
	if res.AgentResult != nil || *res.TokensUsed != 4 {
		t.Errorf("result %v tokens %d: no placeholder, usage kept", res.AgentResult, *res.TokensUsed)
	}
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
}

func TestRetryAfter429(t *testing.T) {
	srv := newCompletionServer(t,
		reply{status: 429, header: map[string]string{"Retry-After": "1"}, body: `{"error":{"message":"rate limited","type":"rate_limit"}}`},
		reply{content: "done", usage: [2]int{1, 1}},
	)
	a := newAgent(t, llmagent.Config{BaseURL: srv.URL()})
	rt := &runtime{}
	if _, err := a.Run(t.Context(), dispatch("hi", rt)); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	want := []progress{{"http_error", map[string]any{"attempt": 1, "status": 429, "retry_after": "1"}}}
	if diff := cmp.Diff(want, rt.Events()); diff != "" {
		t.Errorf("progress events (-want +got):\n%s", diff)
	}
	if gap := reqs[1].At.Sub(reqs[0].At); gap < 900*time.Millisecond {
		t.Errorf("retried after %v, want Retry-After's 1s honoured", gap)
	}
}

func TestRetryAfterBeyondMaxDelayIsNotRetried(t *testing.T) {
	srv := newCompletionServer(t,
		reply{status: 429, header: map[string]string{"Retry-After": "3600"}, body: `{"error":{"message":"come back in an hour"}}`},
	)
	a := newAgent(t, llmagent.Config{BaseURL: srv.URL(), MaxRetryDelay: time.Second})
	_, err := a.Run(t.Context(), dispatch("hi", nil))
	ae := agentError(t, err)
	if !ae.Recoverable || !strings.Contains(ae.Message, "HTTP 429") || len(srv.Requests()) != 1 {
		t.Errorf("error %v after %d requests", err, len(srv.Requests()))
	}
}

// Error statuses are classified by status whatever shape the body has: Ollama's {"error": "…"}
// (a string), vLLM's {"object": "error", "message": …}, plain text. The error quotes the body and
// carries http_status, and Retry-After as retry_after_seconds, so the run's error policy waits
// as long as the server asked before trying again.
func TestErrorStatusesWhateverTheBodyShape(t *testing.T) {
	for _, tc := range []struct {
		name        string
		rep         reply
		stream      bool
		recoverable bool
		message     string
		details     map[string]any
	}{
		{"Ollama's string error", reply{status: 404, body: `{"error":"model \"llama9\" not found, try pulling it first"}`}, false,
			false, `HTTP 404: {"error":"model \"llama9\" not found`, map[string]any{"http_status": 404}},
		{"Ollama's string error, streamed", reply{status: 400, body: `{"error":"invalid temperature"}`}, true,
			false, `HTTP 400: {"error":"invalid temperature"}`, map[string]any{"http_status": 400}},
		{"vLLM's error object", reply{status: 400, body: `{"object":"error","message":"The model gpt-x does not exist.","type":"NotFoundError","code":400}`}, false,
			false, "HTTP 400: {\"object\":\"error\",\"message\":\"The model gpt-x does not exist.", map[string]any{"http_status": 400}},
		{"OpenAI's error object", reply{status: 403, body: `{"error":{"message":"region not supported","type":"forbidden"}}`}, false,
			false, `HTTP 403: {"message":"region not supported"`, map[string]any{"http_status": 403}},
		{"429 asking for a wait longer than MaxRetryDelay", reply{status: 429, header: map[string]string{"Retry-After": "3600"}, body: `{"error":"rate limited"}`}, false,
			true, "HTTP 429", map[string]any{"http_status": 429, "retry_after_seconds": 3600.0}},
		// A gateway's or the server's own timeout is a timeout, as httpagent reports it: the
		// run's on_timeout applies, not on_error.
		{"a gateway timeout", reply{status: 504, body: `upstream timed out`}, false,
			true, "HTTP 504: upstream timed out", map[string]any{"http_status": 504}},
		{"a request timeout", reply{status: 408, body: `{"error":"request timeout"}`}, false,
			true, "HTTP 408", map[string]any{"http_status": 408}},
		// 501 and 505 say the server cannot do this at all, as httpagent judges them: retrying
		// only burns the budget. Other 5xx are recoverable.
		{"not implemented", reply{status: 501, body: `{"error":"tools are not supported"}`}, false,
			false, "HTTP 501", map[string]any{"http_status": 501}},
		{"HTTP version not supported", reply{status: 505, body: ``}, true,
			false, "HTTP 505", map[string]any{"http_status": 505}},
		{"a bad gateway", reply{status: 502, body: `bad gateway`}, false,
			true, "HTTP 502: bad gateway", map[string]any{"http_status": 502}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newCompletionServer(t, tc.rep)
			// No retries: the SDK would retry 408 and 5xx, and the scripted server has one reply.
			a := newAgent(t, llmagent.Config{BaseURL: srv.URL(), Stream: tc.stream, MaxRetryDelay: time.Second, MaxRetries: -1})
			_, err := a.Run(t.Context(), dispatch("hi", nil))
			ae := agentError(t, err)
			code := troupe.CodeAgentError
			if s := tc.rep.status; s == 408 || s == 504 {
				code = troupe.CodeTimeout
			}
			if ae.Code != code || ae.Recoverable != tc.recoverable || !strings.Contains(ae.Message, tc.message) {
				t.Errorf("error %q: code %s recoverable %v; want %s, %v and %q", err, ae.Code, ae.Recoverable, code, tc.recoverable, tc.message)
			}
			if code == troupe.CodeTimeout && !errors.Is(err, troupe.ErrTimeout) {
				t.Errorf("error %q does not match troupe.ErrTimeout", err)
			}
			if diff := cmp.Diff(tc.details, ae.Details); diff != "" {
				t.Errorf("details (-want +got):\n%s", diff)
			}
		})
	}
}

// An error status names the endpoint that refused, for a file whose agents reach several:
// the base URL, with a password in it and the values of query parameters that look like keys
// (by name or by shape) masked, and those values scrubbed from the body the error quotes.
func TestErrorStatusNamesTheEndpoint(t *testing.T) {
	for _, tc := range []struct {
		name    string
		baseURL string // URL stands for the test server's http://HOST, HOST for its host:port/v1
		body    string
		want    string // the message
		never   []string
	}{
		{"a plain URL", "URL", `{"error":{"message":"rate limited"}}`,
			`llmagent: gpt-test at URL/: HTTP 429: {"message":"rate limited"}`, nil},
		{"a password and keys", "http://troupe:pw-8c1f2e9d@HOST/?api-version=2024-06-01&api_key=sk-abc123def&code=Zx81Kq29aLmPp7wQ3Fh2",
			`{"error":{"message":"no key sk-abc123def for troupe:pw-8c1f2e9d"}}`,
			`llmagent: gpt-test at http://troupe:xxxxx@HOST/?api-version=2024-06-01&api_key=xxxxx&code=xxxxx: HTTP 429: {"message":"no key [redacted] for troupe:[redacted]"}`,
			[]string{"pw-8c1f2e9d", "sk-abc123def", "Zx81Kq29aLmPp7wQ3Fh2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newCompletionServer(t, reply{status: 429, body: tc.body})
			r := strings.NewReplacer("URL", srv.URL(), "HOST", strings.TrimPrefix(srv.URL(), "http://"))
			want := r.Replace(tc.want)
			a := newAgent(t, llmagent.Config{BaseURL: r.Replace(tc.baseURL), MaxRetries: -1})
			_, err := a.Run(t.Context(), dispatch("hi", nil))
			ae := agentError(t, err)
			if diff := cmp.Diff(want, ae.Message); diff != "" {
				t.Errorf("message (-want +got):\n%s", diff)
			}
			for _, n := range tc.never {
				if strings.Contains(err.Error(), n) {
					t.Errorf("error %q says %q", err, n)
				}
			}
		})
	}
}

func TestServerErrorThenSuccess(t *testing.T) {
	srv := newCompletionServer(t,
		reply{status: 500, body: `{"error":{"message":"boom"}}`},
		reply{content: "recovered", usage: [2]int{2, 2}},
	)
	a := newAgent(t, llmagent.Config{BaseURL: srv.URL()})
	res, err := a.Run(t.Context(), dispatch("hi", nil))
	if err != nil {
		t.Fatal(err)
	}
	if res.AgentResult["text"] != "recovered" || len(srv.Requests()) != 2 || *res.TokensUsed != 4 {
		t.Errorf("result %v after %d requests", res.AgentResult, len(srv.Requests()))
	}
}

func TestRetriesAreBounded(t *testing.T) {
	fail := reply{status: 503, header: map[string]string{"Retry-After": "0"}, body: `{"error":{"message":"overloaded"}}`}
	srv := newCompletionServer(t, fail, fail, fail, fail, fail)
	a := newAgent(t, llmagent.Config{BaseURL: srv.URL(), MaxRetries: 2})
	_, err := a.Run(t.Context(), dispatch("hi", nil))
	if ae := agentError(t, err); !ae.Recoverable || !strings.Contains(ae.Message, "503") {
		t.Errorf("error = %v", err)
	}
	if n := len(srv.Requests()); n != 3 {
		t.Errorf("%d requests, want 1 + 2 retries", n)
	}
}

func TestCallTimeout(t *testing.T) {
	srv := newCompletionServer(t, reply{hang: true}, reply{hang: true})
	a := newAgent(t, llmagent.Config{BaseURL: srv.URL(), CallTimeout: 50 * time.Millisecond, MaxRetries: 1})
	_, err := a.Run(t.Context(), dispatch("hi", nil))
	if ae := agentError(t, err); ae.Code != troupe.CodeTimeout || !ae.Recoverable || !errors.Is(err, troupe.ErrTimeout) {
		t.Errorf("error = %v", err)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d requests: a timed-out attempt is not retried by the SDK, the error policy decides", n)
	}
}

// A timed-out call says which bound it ran into — call_timeout, which bounds each attempt, or
// the dispatch's deadline — so that the right one can be raised; both are TIMEOUT, matching
// troupe.ErrTimeout.
func TestTimeoutSaysWhichBound(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cfg      llmagent.Config
		deadline time.Duration // of the dispatch's context; 0 means none
		want     string
	}{
		{"call_timeout", llmagent.Config{CallTimeout: 50 * time.Millisecond}, 0,
			"llmagent: gpt-test: the call did not finish within call_timeout 50ms"},
		{"the dispatch's deadline", llmagent.Config{}, 50 * time.Millisecond,
			"llmagent: gpt-test: the call did not finish before the dispatch's deadline"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newCompletionServer(t, reply{hang: true})
			cfg := tc.cfg
			cfg.BaseURL, cfg.MaxRetries = srv.URL(), -1
			a := newAgent(t, cfg)
			ctx := t.Context()
			if tc.deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.deadline)
				defer cancel()
			}
			_, err := a.Run(ctx, dispatch("hi", nil))
			ae := agentError(t, err)
			if ae.Code != troupe.CodeTimeout || !ae.Recoverable || !errors.Is(err, troupe.ErrTimeout) {
				t.Errorf("error %v: code %s recoverable %v; want a recoverable TIMEOUT", err, ae.Code, ae.Recoverable)
			}
			if got := sansEndpoint(t, ae.Message, srv.URL()); got != tc.want {
				t.Errorf("message %q, want %q", got, tc.want)
			}
		})
	}
}

// CallTimeout bounds a stream until its last chunk: a server that stops sending halfway fails
// the dispatch with TIMEOUT, after the text that did arrive went out as progress. The error
// keeps the response's status.
func TestCallTimeoutMidStream(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[{"index":0,"delta":{"content":"half"},"finish_reason":null}]}`+"\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer srv.Close()
	a := newAgent(t, llmagent.Config{BaseURL: srv.URL + "/v1", Stream: true, CallTimeout: 100 * time.Millisecond})
	rt := &runtime{}
	_, err := a.Run(t.Context(), dispatch("hi", rt))
	ae := agentError(t, err)
	if ae.Code != troupe.CodeTimeout || !ae.Recoverable || !errors.Is(err, troupe.ErrTimeout) {
		t.Errorf("error = %v", err)
	}
	if want := "llmagent: gpt-test: reading the stream of a 200 OK response: the call did not finish within call_timeout 100ms"; sansEndpoint(t, ae.Message, srv.URL) != want {
		t.Errorf("message %q, want %q", ae.Message, want)
	}
	if diff := cmp.Diff(map[string]any{"http_status": 200}, ae.Details); diff != "" {
		t.Errorf("details (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]progress{{"token", map[string]any{"text": "half"}}}, rt.Events()); diff != "" {
		t.Errorf("progress (-want +got):\n%s", diff)
	}
}

func TestCostBudgetStops(t *testing.T) {
	loop := reply{toolCalls: []wireToolCall{{"c", "add", `{"a":1,"b":1}`}}, usage: [2]int{1000, 1000}}
	srv := newCompletionServer(t, loop, loop, loop)
	a := newAgent(t, llmagent.Config{BaseURL: srv.URL(), Tools: []troupe.Tool{addTool},
		Prices: map[string]llmagent.Price{"gpt-test": {PromptPerMillion: 10, CompletionPerMillion: 30}}})
	d := dispatch("spend", nil)
	d.MaxCostDollars = troupe.Ptr(0.05) // one turn costs $0.04
	res, err := a.Run(t.Context(), d)
	ae := agentError(t, err)
	if ae.Code != troupe.CodeBudget || !errors.Is(err, troupe.ErrBudgetExhausted) {
		t.Errorf("error = %v", err)
	}
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("%d requests, want 2 (stop once $0.08 ≥ $0.05)", n)
	}
	if got := *res.CostDollars; got < 0.0799 || got > 0.0801 {
		t.Errorf("cost = %v, want 0.08 counted once per call", got)
	}
}

func TestAPIKeyNeverLeaks(t *testing.T) {
	srv := newCompletionServer(t,
		reply{status: 401, header: map[string]string{"X-Echo": "$AUTH"}, body: `{"error":{"message":"Incorrect API key provided: $AUTH"}}`},
	)
	// Recorded through a cassette too: the file must not hold the echo either.
	tape, err := cassette.New(filepath.Join(t.TempDir(), "leak.json"), cassette.Config{Mode: cassette.ModeRecord})
	if err != nil {
		t.Fatal(err)
	}
	a := newAgent(t, llmagent.Config{BaseURL: srv.URL(), Stream: true, HTTPClient: tape.Client()})
	rt := &runtime{}
	res, err := a.Run(t.Context(), dispatch("hi", rt))
	if err == nil {
		t.Fatal("want an error")
	}
	if err := tape.Save(); err != nil {
		t.Fatal(err)
	}
	file, rerr := os.ReadFile(tape.Path())
	if rerr != nil {
		t.Fatal(rerr)
	}
	ae := agentError(t, err)
	if ae.Recoverable || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "[redacted]") {
		t.Errorf("error = %v", err)
	}
	everything, _ := json.Marshal([]any{err.Error(), fmt.Sprintf("%+v", err), res, rt.Events(), string(file)})
	if strings.Contains(string(everything), testKey) || strings.Contains(string(everything), "SECRET") {
		t.Errorf("API key leaked: %s", everything)
	}
}

// TestAPIKeyEchoedAtTheCutNeverLeaks: an error body is quoted up to 500 characters; a key the
// server echoes across that cut is redacted whole, not left as its first characters.
func TestAPIKeyEchoedAtTheCutNeverLeaks(t *testing.T) {
	// "Bearer " + the key, placed so that the cut falls inside the key.
	pad := strings.Repeat("x", 500-len(`{"error":"`)-len("Bearer ")-10)
	srv := newCompletionServer(t, reply{status: 400, body: `{"error":"` + pad + `$AUTH is not allowed"}`})
	a := newAgent(t, llmagent.Config{BaseURL: srv.URL()})
	_, err := a.Run(t.Context(), dispatch("hi", &runtime{}))
	if err == nil {
		t.Fatal("want an error")
	}
	if strings.Contains(err.Error(), testKey[:6]) {
		t.Errorf("the start of the API key leaked: %v", err)
	}
}

// TestAPIKeyEchoedInAnySpellingNeverLeaks: a server may quote the key as its JSON encoder,
// its URL library or its logger spells it; the error must hold none of those spellings.
func TestAPIKeyEchoedInAnySpellingNeverLeaks(t *testing.T) {
	// Each of é, /, +, ", <, & and > is written differently by some spelling.
	const key = `sk-tést/ké+y"<&>`
	jsonEscaped := `sk-tést/ké+y\"\u003c\u0026\u003e`
	asciiJSON := `sk-t\u00e9st/k\u00e9+y\"<&>`
	asciiJSONSlash := `sk-t\u00e9st\/k\u00e9+y\"<&>`
	goQuoted := strconv.Quote(key)
	spellings := []string{key, jsonEscaped, asciiJSON, asciiJSONSlash, goQuoted[1 : len(goQuoted)-1],
		url.QueryEscape(key), url.PathEscape(key)}
	for _, tc := range []struct {
		name string
		echo func(string) string
	}{
		{"JSON-escaped", func(k string) string { b, _ := json.Marshal(k); return string(b[1 : len(b)-1]) }},
		{"ASCII-only JSON", func(string) string { return asciiJSON }},
		{"ASCII-only JSON with escaped slashes", func(string) string { return asciiJSONSlash }},
		{"query-escaped", url.QueryEscape},
		{"path-escaped", url.PathEscape},
		{"Go-quoted", func(k string) string { q := strconv.Quote(k); return q[1 : len(q)-1] }},
	} {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", tc.name, stream), func(t *testing.T) {
				srv := newCompletionServer(t, reply{status: 401, echo: tc.echo,
					body: `{"error":{"message":"Incorrect API key provided: $KEY","type":"invalid_request_error"}}`})
				a := newAgent(t, llmagent.Config{BaseURL: srv.URL(), Stream: stream})
				t.Setenv("TEST_LLM_KEY", key)
				_, err := a.Run(t.Context(), dispatch("hi", &runtime{}))
				if err == nil {
					t.Fatal("want an error")
				}
				ae := agentError(t, err)
				details, _ := json.Marshal(ae.Details)
				texts := map[string]string{"Error()": err.Error(), "Message": ae.Message, "Details": string(details)}
				if ae.Cause != nil {
					texts["Cause"] = ae.Cause.Error()
				}
				if !strings.Contains(ae.Message, "[redacted]") {
					t.Errorf("Message = %q, want the echoed key [redacted]", ae.Message)
				}
				for where, text := range texts {
					for _, sp := range spellings {
						if strings.Contains(text, sp) {
							t.Errorf("%s holds the key as %q: %s", where, sp, text)
						}
					}
				}
			})
		}
	}
}

func TestNoKeySendsNoAuthorization(t *testing.T) {
	srv := newCompletionServer(t, reply{content: "ok", usage: [2]int{1, 1}})
	t.Setenv("OPENAI_API_KEY", "sk-ambient")
	t.Setenv("UNSET_KEY_VAR", "")
	a, err := llmagent.New(llmagent.Config{BaseURL: srv.URL(), Model: "m", APIKeyEnv: "UNSET_KEY_VAR"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Run(t.Context(), dispatch("hi", nil)); err != nil {
		t.Fatal(err)
	}
	if got := srv.Requests()[0].Header.Get("Authorization"); got != "" {
		t.Errorf("Authorization = %q, want none (the ambient OPENAI_API_KEY is not ours to send)", got)
	}
}

func TestConfigErrors(t *testing.T) {
	_, err := llmagent.New(llmagent.Config{
		BaseURL: "ftp://x", Temperature: troupe.Ptr(3.0), MaxTokens: -1, Prompt: "{{.Query",
		Schema: json.RawMessage(`{"type": 12}`), Tools: []troupe.Tool{addTool, addTool},
		Prices: map[string]llmagent.Price{"a": {PromptPerMillion: -1}, "b": {PromptPerMillion: math.NaN()}, "c": {CompletionPerMillion: math.Inf(1)}},
	})
	if err == nil {
		t.Fatal("want an error")
	}
	for _, want := range []string{"llmagent: config:", "base_url", "model: required", "temperature", "max_tokens", "prompt:", "schema:", `"add" offered twice`,
		"prices[a]", "prices[b]", "prices[c]"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	// Each problem names its field, for a program to report it at its place in a file.
	ce, ok := errors.AsType[*llmagent.ConfigError](err)
	if !ok {
		t.Fatalf("error %v (%T) is not a *ConfigError", err, err)
	}
	var fields []string
	for _, p := range ce.Problems {
		fields = append(fields, p.Field)
	}
	want := []string{"base_url", "model", "temperature", "max_tokens", "prices[a]", "prices[b]", "prices[c]", "prompt", "schema", "tools[1]"}
	if diff := cmp.Diff(want, fields); diff != "" {
		t.Errorf("fields (-want +got):\n%s", diff)
	}
}

func TestTemplateErrorIsInvalidInput(t *testing.T) {
	srv := newCompletionServer(t)
	a := newAgent(t, llmagent.Config{BaseURL: srv.URL(), Prompt: "{{.ParsedQuery.missing.deeper}}"})
	_, err := a.Run(t.Context(), dispatch("hi", nil))
	if ae := agentError(t, err); ae.Code != troupe.CodeInvalidInput {
		t.Errorf("error = %v", err)
	}
	if len(srv.Requests()) != 0 {
		t.Error("a request was sent")
	}
}

// Agents as tools through flow.AsTool: a delegates to b, b delegates back to a; the cycle guard's
// error surfaces through both LLM agents instead of going back to either model.
func TestAgentAsToolCycleSurfaces(t *testing.T) {
	srv := newCompletionServer(t,
		reply{toolCalls: []wireToolCall{{"c1", "delegate_to_b", `{"query":"help"}`}}, usage: [2]int{1, 1}},
		reply{toolCalls: []wireToolCall{{"c2", "delegate_to_a", `{"query":"help back"}`}}, usage: [2]int{1, 1}},
	)
	var a troupe.Agent
	lateA := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) { return a.Run(ctx, d) })
	b := newAgent(t, llmagent.Config{BaseURL: srv.URL(), Tools: []troupe.Tool{flow.AsTool("a", lateA)}})
	a = newAgent(t, llmagent.Config{BaseURL: srv.URL(), Tools: []troupe.Tool{flow.AsTool("b", b)}})
	d := dispatch("start", nil)
	d.TargetAgent = "a"
	_, err := a.Run(t.Context(), d)
	var ae *troupe.AgentError
	if !errors.As(err, &ae) || ae.Code != troupe.CodeCircularDependency {
		t.Fatalf("err = %v, want CIRCULAR_DEPENDENCY", err)
	}
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("%d requests, want 2: neither model may be asked again after the cycle", n)
	}
}

// The depth guard: a delegates to b, b to c, and c allows a call stack of 2 only; the guard's
// error ends both dispatches instead of going back to either model as a tool answer.
func TestAgentAsToolDepthSurfaces(t *testing.T) {
	srv := newCompletionServer(t,
		reply{toolCalls: []wireToolCall{{"c1", "delegate_to_b", `{"task":"plan"}`}}, usage: [2]int{1, 1}},
		reply{toolCalls: []wireToolCall{{"c2", "delegate_to_c", `{"task":"detail"}`}}, usage: [2]int{1, 1}},
	)
	c := newAgent(t, llmagent.Config{BaseURL: srv.URL()})
	b := newAgent(t, llmagent.Config{BaseURL: srv.URL(), Tools: []troupe.Tool{flow.AsTool("c", c, troupe.MaxDepth(2))}})
	a := newAgent(t, llmagent.Config{BaseURL: srv.URL(), Tools: []troupe.Tool{flow.AsTool("b", b)}})
	d := dispatch("start", nil)
	d.TargetAgent = "a"
	res, err := a.Run(t.Context(), d)
	var ae *troupe.AgentError
	if !errors.As(err, &ae) || ae.Code != troupe.CodeMaxDepthExceeded {
		t.Fatalf("err = %v, want MAX_DEPTH_EXCEEDED", err)
	}
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("%d requests, want 2: c is never asked, and neither a nor b is asked again", n)
	}
	// a's own completion (2 tokens) and b's (2 tokens, spent before b failed on the guard).
	if res == nil || *res.TokensUsed != 4 {
		t.Errorf("result %+v: a's own usage and b's must be kept", res)
	}
}

func TestTokenBoundStops(t *testing.T) {
	loop := reply{toolCalls: []wireToolCall{{"c", "add", `{"a":1,"b":1}`}}, usage: [2]int{300, 50}}
	srv := newCompletionServer(t, loop, loop, loop, loop)
	a := newAgent(t, llmagent.Config{BaseURL: srv.URL(), Tools: []troupe.Tool{addTool}, MaxTotalTokens: 1000})
	res, err := a.Run(t.Context(), dispatch("spend tokens", nil))
	if ae := agentError(t, err); ae.Code != troupe.CodeBudget || !strings.Contains(ae.Message, "1050 tokens of max_total_tokens 1000") {
		t.Errorf("error = %v", err)
	}
	if n := len(srv.Requests()); n != 3 || *res.TokensUsed != 1050 {
		t.Errorf("%d requests, %d tokens; want 3 and 1050", n, *res.TokensUsed)
	}
}

// MaxTotalTokens counts what an agent called as a tool spent: the lead's own 20 tokens are far
// from its bound of 100, the researcher's 150 pass it, so the lead is not asked again.
func TestTokenBoundCountsAgentTools(t *testing.T) {
	leadSrv := newCompletionServer(t,
		reply{toolCalls: []wireToolCall{{"c1", "delegate_to_researcher", `{"task":"dig"}`}}, usage: [2]int{15, 5}},
		reply{content: "never asked", usage: [2]int{1, 1}},
	)
	researcherSrv := newCompletionServer(t, reply{content: "a long finding", usage: [2]int{100, 50}})
	researcher := newAgent(t, llmagent.Config{BaseURL: researcherSrv.URL()})
	lead := newAgent(t, llmagent.Config{BaseURL: leadSrv.URL(), MaxTotalTokens: 100, Tools: []troupe.Tool{flow.AsTool("researcher", researcher)}})
	res, err := lead.Run(t.Context(), dispatch("research", nil))
	if ae := agentError(t, err); ae.Code != troupe.CodeBudget || !strings.Contains(ae.Message, "170 tokens of max_total_tokens 100") {
		t.Errorf("error = %v", err)
	}
	if n := len(leadSrv.Requests()); n != 1 || *res.TokensUsed != 170 {
		t.Errorf("%d requests, %d tokens; want 1 and 170", n, *res.TokensUsed)
	}
	want := map[string]any{"prompt_tokens": int64(15), "completion_tokens": int64(5), "tool_tokens": int64(150), "tool_cost_dollars": 0.0}
	if diff := cmp.Diff(want, res.Annotations["llm_usage"]); diff != "" {
		t.Errorf("llm_usage (-want +got):\n%s", diff)
	}
}

func TestEmptyTextAnswerIsAskedAgain(t *testing.T) {
	srv := newCompletionServer(t, reply{content: "  ", usage: [2]int{1, 1}}, reply{content: "now with words", usage: [2]int{1, 1}})
	a := newAgent(t, llmagent.Config{BaseURL: srv.URL()})
	res, err := a.Run(t.Context(), dispatch("say something", nil))
	if err != nil || res.AgentResult["text"] != "now with words" {
		t.Fatalf("result %v, err %v", res, err)
	}
	msgs := messages(srv.Requests()[1])
	if got := msgs[len(msgs)-1]["content"]; got != "Your answer was empty. Answer the request above." {
		t.Errorf("re-ask = %q", got)
	}
}

func TestConcurrentRuns(t *testing.T) {
	const n = 8
	replies := make([]reply, n)
	for i := range replies {
		replies[i] = reply{content: fmt.Sprintf("answer %d", i), usage: [2]int{1, 1}}
	}
	srv := newCompletionServer(t, replies...)
	a := newAgent(t, llmagent.Config{BaseURL: srv.URL(), Stream: true})
	results := make(chan any, n)
	for range n {
		go func() {
			res, err := a.Run(t.Context(), dispatch("go", &runtime{}))
			if err != nil {
				results <- err
				return
			}
			results <- res.AgentResult["text"]
		}()
	}
	seen := map[any]bool{}
	for range n {
		seen[<-results] = true
	}
	for i := range n {
		if !seen[fmt.Sprintf("answer %d", i)] {
			t.Errorf("answer %d missing; got %v", i, seen)
		}
	}
}

// A server that answers with more than MaxResponseBytes — a runaway answer, a proxy's page
// — fails the dispatch rather than filling the memory: whole, streamed or as an error.
func TestResponseOverMaxResponseBytes(t *testing.T) {
	const bound = 64 << 10
	big := strings.Repeat("all work and no play ", 4*bound/21)
	// Streamed four bytes a chunk, each chunk some 200 bytes of JSON.
	bigStream := strings.Repeat("x", bound/32)
	for _, tc := range []struct {
		name        string
		rep         reply
		stream      bool
		code        string
		recoverable bool
		message     string
	}{
		{"a whole answer", reply{content: big, usage: [2]int{1, 1}}, false, troupe.CodeInvalidOutput, false, "over 65536 bytes"},
		{"a streamed answer", reply{content: bigStream, usage: [2]int{1, 1}}, true, troupe.CodeInvalidOutput, false, "over 65536 bytes"},
		{"an error status is reported by its status", reply{status: 503, body: big}, false, troupe.CodeAgentError, true, "HTTP 503"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newCompletionServer(t, tc.rep)
			a := newAgent(t, llmagent.Config{BaseURL: srv.URL(), Stream: tc.stream, MaxResponseBytes: bound, MaxRetries: -1})
			res, err := a.Run(t.Context(), dispatch("hi", nil))
			if err == nil {
				t.Fatalf("Run accepted an answer of %d bytes over a bound of %d", len(res.AgentResult["text"].(string)), bound)
			}
			ae := agentError(t, err)
			if ae.Code != tc.code || ae.Recoverable != tc.recoverable || !strings.Contains(ae.Message, tc.message) {
				t.Errorf("error %q: code %s recoverable %v; want %s, %v and %q", err, ae.Code, ae.Recoverable, tc.code, tc.recoverable, tc.message)
			}
		})
	}
}

// sansEndpoint returns msg, an error message of an agent whose BaseURL is on server base, without
// the endpoint it names after the model ("llmagent: gpt-test at http://…/v1/: …"), and fails
// the test when it names none.
func sansEndpoint(t *testing.T, msg, base string) string {
	t.Helper()
	model, rest, ok := strings.Cut(msg, " at "+strings.TrimSuffix(base, "/v1"))
	if !ok {
		t.Errorf("message %q does not name the endpoint %s", msg, base)
		return msg
	}
	_, rest, _ = strings.Cut(rest, ": ")
	return model + ": " + rest
}

// A server that refuses a call made with no key (the variable APIKeyEnv names is unset) gets
// an error that names the variable, which the server's own message cannot; with a key set,
// the error does not say so.
func TestRefusalWithoutKeyNamesTheVariable(t *testing.T) {
	for _, set := range []bool{false, true} {
		srv := newCompletionServer(t, reply{status: 401, body: `{"error":{"message":"You didn't provide an API key."}}`})
		t.Setenv("TROUPE_TEST_LLM_KEY_UNSET", "")
		if set {
			t.Setenv("TROUPE_TEST_LLM_KEY_UNSET", "sk-test-123456789")
		}
		a, err := llmagent.New(llmagent.Config{BaseURL: srv.URL(), Model: "gpt-test", APIKeyEnv: "TROUPE_TEST_LLM_KEY_UNSET"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = a.Run(t.Context(), dispatch("hi", &runtime{}))
		const hint = "the environment variable TROUPE_TEST_LLM_KEY_UNSET is not set"
		if err == nil || strings.Contains(err.Error(), hint) == set || !strings.Contains(err.Error(), "HTTP 401") {
			t.Errorf("key set %v: error %v; want HTTP 401, naming the unset variable only when it is unset", set, err)
		}
	}
}
