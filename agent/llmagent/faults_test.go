package llmagent_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/agent/llmagent"
	"github.com/troupehq/troupe/agent/mcptool"
	"github.com/troupehq/troupe/internal/peers"
)

// Servers that answer as real OpenAI-compatible ones sometimes do. Each failure is reported
// for what it is, once, without re-asking a model that never saw the question; a response
// whose body was lost keeps its status, in the message and in http_status.
func TestMisbehavingServers(t *testing.T) {
	const whole = `{"id":"x","object":"chat.completion","created":1,"model":"gpt-test","choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1}}`
	chunk := `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[{"index":0,"delta":{"content":"half"},"finish_reason":null}]}` + "\n\n"
	for _, tc := range []struct {
		name        string
		stream      bool
		handler     http.HandlerFunc
		code        string
		recoverable bool
		message     string
		status      any // details["http_status"]; nil: none
	}{
		// OpenRouter answers a provider's failure with status 200 and an error object.
		{"200 with an error object and a status code", false, answer("application/json", `{"error":{"message":"Provider returned error","code":429}}`),
			troupe.CodeAgentError, true, "the server answered 200 with an error: Provider returned error", nil},
		{"200 with an error string", false, answer("application/json", `{"error":"model is loading"}`),
			troupe.CodeAgentError, false, "the server answered 200 with an error: model is loading", nil},
		// The same error objects in a stream's event: judged as in a whole answer, by their code.
		{"a stream event with an error object and a status code", true, answer("text/event-stream", `data: {"error":{"message":"Invalid model gpt-test","code":400}}`+"\n\n"),
			troupe.CodeAgentError, false, "the server answered 200 with an error: Invalid model gpt-test", nil},
		{"a stream event with a retryable error code", true, answer("text/event-stream", chunk+`data: {"error":{"message":"Provider returned error","code":429}}`+"\n\n"),
			troupe.CodeAgentError, true, "the server answered 200 with an error: Provider returned error", nil},
		{"a stream event with an error string", true, answer("text/event-stream", `data: {"error":"model is loading"}`+"\n\n"),
			troupe.CodeAgentError, false, "the server answered 200 with an error: model is loading", nil},
		// A server that ignores "stream" answers a whole completion; a proxy answers a page.
		{"a stream answered by a whole completion", true, answer("application/json", whole),
			troupe.CodeInvalidOutput, false, `sent no stream chunks (Content-Type "application/json")`, nil},
		{"a stream answered by an HTML page", true, answer("text/html", "<html><body>Sign in to the Wi-Fi</body></html>"),
			troupe.CodeInvalidOutput, false, `sent no stream chunks (Content-Type "text/html")`, nil},
		{"a stream cut in the middle of a chunk", true, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, chunk+chunk[:40])
			w.(http.Flusher).Flush()
			if c, _, err := w.(http.Hijacker).Hijack(); err == nil {
				c.Close()
			}
		}, troupe.CodeAgentError, true, "llmagent: gpt-test: reading the stream of a 200 OK response: unexpected EOF", 200},
		{"a whole completion cut short", false, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", strconv.Itoa(len(whole)))
			fmt.Fprint(w, whole[:len(whole)/2])
			w.(http.Flusher).Flush()
			if c, _, err := w.(http.Hijacker).Hijack(); err == nil {
				c.Close()
			}
		}, troupe.CodeAgentError, true, "llmagent: gpt-test: reading the body of a 200 OK response: unexpected EOF", 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var requests atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				requests.Add(1)
				tc.handler(w, r)
			}))
			defer srv.Close()
			a := newAgent(t, llmagent.Config{BaseURL: srv.URL + "/v1", Stream: tc.stream, MaxRetries: -1})
			res, err := a.Run(t.Context(), dispatch("hi", &runtime{}))
			if err == nil {
				t.Fatalf("Run accepted %v", res.AgentResult)
			}
			ae := agentError(t, err)
			if ae.Code != tc.code || ae.Recoverable != tc.recoverable || !strings.Contains(sansEndpoint(t, ae.Message, srv.URL), tc.message) {
				t.Errorf("error %q: code %s recoverable %v; want %s, %v and %q", err, ae.Code, ae.Recoverable, tc.code, tc.recoverable, tc.message)
			}
			if got := ae.Details["http_status"]; got != tc.status {
				t.Errorf("details %v: http_status %v, want %v", ae.Details, got, tc.status)
			}
			if n := requests.Load(); n != 1 {
				t.Errorf("%d requests, want 1: the failure is the server's, not the answer's to ask again", n)
			}
		})
	}
}

func answer(contentType, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		fmt.Fprint(w, body)
	}
}

// A real MCP server's tool returns more than a tool result may hold (the filesystem server
// reading a 2 MiB file): the model is told so, in a few words, rather than sent 2 MiB — with
// every later turn — and can ask for less; the run's log records it.
func TestToolResultOverItsBoundIsNotSent(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.log")
	if err := os.WriteFile(big, []byte(strings.Repeat("a log line of some length\n", 2<<20/26)), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := mcptool.Connect(t.Context(), mcptool.Config{Command: []string{peers.Bin(t, "mcp-server-filesystem"), dir},
		Include: []string{"read_text_file"}, StopTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	args, _ := json.Marshal(map[string]any{"path": big})
	headArgs, _ := json.Marshal(map[string]any{"path": big, "head": 2})
	srv := newCompletionServer(t,
		reply{toolCalls: []wireToolCall{{"c1", "read_text_file", string(args)}}, usage: [2]int{10, 10}},
		reply{toolCalls: []wireToolCall{{"c2", "read_text_file", string(headArgs)}}, usage: [2]int{10, 10}},
		reply{content: "it is a log", usage: [2]int{10, 10}},
	)
	rt := &runtime{}
	a := newAgent(t, llmagent.Config{BaseURL: srv.URL(), Tools: c.Tools()})
	if _, err := a.Run(t.Context(), dispatch("what is in big.log?", rt)); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	var told []string
	for _, m := range messages(reqs[2]) {
		if m["role"] == "tool" {
			told = append(told, m["content"].(string))
		}
	}
	if len(told) != 2 || !strings.HasPrefix(told[0], "error: the result of read_text_file is ") || len(told[0]) > 300 ||
		!strings.Contains(told[0], fmt.Sprintf("over the %d", llmagent.DefaultMaxToolResult)) {
		t.Fatalf("the model was told %d results, the first of %d bytes starting %.120q", len(told), len(told[0]), told[0])
	}
	if !strings.Contains(told[1], "a log line of some length") || len(told[1]) > 200 {
		t.Errorf("the narrower call's result %.200q", told[1])
	}
	var recorded bool
	for _, e := range rt.Events() {
		recorded = recorded || e.Kind == "tool_result_too_large"
	}
	if !recorded {
		t.Errorf("no tool_result_too_large event among %v", rt.Events())
	}
}
