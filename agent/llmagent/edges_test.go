package llmagent_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/agent/llmagent"
)

// A structured answer that fails the schema on the last turn max_turns allows is invalid output:
// the dispatch fails saying so (INVALID_OUTPUT, with the validation errors), never with a
// placeholder. It failed as "no final answer after 2 turns", the answer and its errors lost.
func TestInvalidAnswerOnTheLastTurnIsInvalidOutput(t *testing.T) {
	srv := newCompletionServer(t,
		reply{toolCalls: []wireToolCall{{"c1", "add", `{"a":1,"b":2}`}}, usage: [2]int{1, 1}},
		reply{content: `{"name":"Ada","age":-3}`, usage: [2]int{1, 1}},
	)
	a := newAgent(t, llmagent.Config{BaseURL: srv.URL(), Schema: json.RawMessage(personSchema), Tools: []troupe.Tool{addTool}, MaxTurns: 2})
	_, err := a.Run(t.Context(), dispatch("who?", nil))
	ae := agentError(t, err)
	if ae.Code != troupe.CodeInvalidOutput || !strings.Contains(ae.Message, "age") {
		t.Errorf("error %s: %q; want INVALID_OUTPUT quoting the validation error", ae.Code, ae.Message)
	}
}

// A tool's error is a result the model reads, sent again every turn: over max_tool_result_bytes,
// only its start is sent, with its size. It was sent whole (10,007 bytes against a bound of 1,000).
func TestToolErrorOverMaxToolResultBytes(t *testing.T) {
	huge := funcTool{info: troupe.ToolInfo{Name: "huge"}, fn: func(json.RawMessage) (json.RawMessage, error) {
		return nil, errors.New(strings.Repeat("x", 10_000))
	}}
	srv := newCompletionServer(t,
		reply{toolCalls: []wireToolCall{{"c1", "huge", `{}`}}, usage: [2]int{1, 1}},
		reply{content: "done", usage: [2]int{1, 1}},
	)
	a := newAgent(t, llmagent.Config{BaseURL: srv.URL(), Tools: []troupe.Tool{huge}, MaxToolResultBytes: 1000})
	if _, err := a.Run(t.Context(), dispatch("go", nil)); err != nil {
		t.Fatal(err)
	}
	for _, m := range messages(srv.Requests()[1]) {
		if m["role"] == "tool" {
			if s := m["content"].(string); len(s) > 1000 {
				t.Errorf("the model was sent a tool answer of %d bytes, over max_tool_result_bytes 1000", len(s))
			}
		}
	}
}

// Negative token usage from a server is counted as 0, with a warning: counted, it gave back
// budget and shrank the run's totals, silently.
func TestNegativeUsageIsNotARefund(t *testing.T) {
	srv := newCompletionServer(t, reply{content: "hi", usage: [2]int{-1000, -1000}})
	a := newAgent(t, llmagent.Config{BaseURL: srv.URL(), Prices: map[string]llmagent.Price{"gpt-test": {PromptPerMillion: 1, CompletionPerMillion: 1}}})
	res, err := a.Run(t.Context(), dispatch("hi", nil))
	if err == nil && (*res.TokensUsed < 0 || *res.CostDollars < 0) && len(res.Warnings) == 0 {
		t.Errorf("tokens %d cost %v accepted silently", *res.TokensUsed, *res.CostDollars)
	}
}

// A stream that ends in an error event carrying usage: what was spent is counted, as for the
// same error in a whole completion. It was dropped.
func TestStreamErrorEventUsageIsCounted(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[{"index":0,"delta":{"content":"half"},"finish_reason":null}]}`+"\n\n")
		fmt.Fprint(w, `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt-test","error":{"message":"Provider returned error","code":502},"usage":{"prompt_tokens":100,"completion_tokens":50}}`+"\n\n")
	}))
	defer srv.Close()
	a := newAgent(t, llmagent.Config{BaseURL: srv.URL + "/v1", Stream: true, MaxRetries: -1})
	res, err := a.Run(t.Context(), dispatch("hi", nil))
	if err == nil {
		t.Fatal("accepted")
	}
	if res == nil || res.TokensUsed == nil || *res.TokensUsed != 150 {
		t.Errorf("err %v; tokens_used %v: want the 150 tokens the error event reported counted", err, deref(res.TokensUsed))
	}
}

// A whole completion the agent cannot read (content as a list of parts) still reported its
// usage, which is counted; it was dropped, and a retry of the dispatch spent again uncounted.
func TestUnreadableCompletionUsageIsCounted(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"x","object":"chat.completion","created":1,"model":"gpt-test","choices":[{"index":0,"message":{"role":"assistant","content":[{"type":"text","text":"hello"}]},"finish_reason":"stop"}],"usage":{"prompt_tokens":100,"completion_tokens":50}}`)
	}))
	defer srv.Close()
	a := newAgent(t, llmagent.Config{BaseURL: srv.URL + "/v1", MaxRetries: -1})
	res, err := a.Run(t.Context(), dispatch("hi", nil))
	if err == nil {
		t.Fatalf("accepted %v", res.AgentResult)
	}
	if res == nil || res.TokensUsed == nil || *res.TokensUsed != 150 {
		t.Errorf("err %v; tokens_used %v: want the 150 tokens the response reported counted", err, deref(res.TokensUsed))
	}
}

// An API key that cannot be sent as a header (a trailing newline, as a secret mounted from a
// file has) fails the dispatch at once, naming its variable, not retried in vain as a
// recoverable transport error that never said why.
func TestUnsendableKeyIsAClearError(t *testing.T) {
	srv := newCompletionServer(t, reply{content: "hi", usage: [2]int{1, 1}})
	a := newAgent(t, llmagent.Config{BaseURL: srv.URL()})
	t.Setenv("TEST_LLM_KEY", testKey+"\n")
	_, err := a.Run(t.Context(), dispatch("hi", nil))
	ae := agentError(t, err)
	if ae.Recoverable || !strings.Contains(ae.Message, "TEST_LLM_KEY") {
		t.Errorf("error %s (recoverable %v): %q; want a non-recoverable error naming TEST_LLM_KEY", ae.Code, ae.Recoverable, ae.Message)
	}
}
