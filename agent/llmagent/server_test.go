package llmagent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/troupehq/troupe"
)

// completionServer is a loopback server following the OpenAI Chat Completions API reference
// (POST /chat/completions; a chat.completion object, or with "stream": true server-sent
// events of chat.completion.chunk objects ending in "data: [DONE]"). Each request is answered
// by the next reply of its script; the requests are recorded.
type completionServer struct {
	t   testing.TB
	srv *httptest.Server

	mu       sync.Mutex
	replies  []reply
	requests []seenRequest
}

type seenRequest struct {
	Body   map[string]any
	Header http.Header
	At     time.Time
}

// reply answers one request: a status with headers and a raw body, or (status 0) a
// completion built from msg and usage, streamed when the request asks for it.
type reply struct {
	status int
	header map[string]string
	body   string
	hang   bool // answer only when the client gives up
	// echo, when set, replaces $KEY in body by echo(the API key the request sent), as a
	// server quoting the key in its own spelling does.
	echo func(key string) string

	content   string
	toolCalls []wireToolCall
	usage     [2]int // prompt, completion
	model     string
	finish    string // finish_reason; "" means stop, or tool_calls when there are some; "-" none (streams)
}

type wireToolCall struct{ ID, Name, Args string }

func newCompletionServer(t testing.TB, replies ...reply) *completionServer {
	s := &completionServer{t: t, replies: replies}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *completionServer) URL() string { return s.srv.URL + "/v1" }

func (s *completionServer) Requests() []seenRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]seenRequest(nil), s.requests...)
}

func (s *completionServer) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		http.Error(w, `{"error":{"message":"not found","type":"invalid_request_error"}}`, http.StatusNotFound)
		return
	}
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		http.Error(w, `{"error":{"message":"bad json"}}`, http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.requests = append(s.requests, seenRequest{Body: body, Header: r.Header.Clone(), At: time.Now()})
	if len(s.replies) == 0 {
		s.mu.Unlock()
		w.WriteHeader(http.StatusTeapot)
		fmt.Fprint(w, `{"error":{"message":"script exhausted"}}`)
		return
	}
	rep := s.replies[0]
	s.replies = s.replies[1:]
	s.mu.Unlock()

	if rep.hang {
		<-r.Context().Done()
		return
	}
	for k, v := range rep.header {
		w.Header().Set(k, strings.ReplaceAll(v, "$AUTH", r.Header.Get("Authorization")))
	}
	if rep.status != 0 {
		body := strings.ReplaceAll(rep.body, "$AUTH", r.Header.Get("Authorization"))
		if rep.echo != nil {
			body = strings.ReplaceAll(body, "$KEY", rep.echo(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")))
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rep.status)
		io.WriteString(w, body)
		return
	}
	model := rep.model
	if model == "" {
		model, _ = body["model"].(string)
	}
	if stream, _ := body["stream"].(bool); stream {
		s.stream(w, rep, model, body)
		return
	}
	msg := map[string]any{"role": "assistant", "content": nil, "refusal": nil}
	if rep.content != "" {
		msg["content"] = rep.content
	}
	finish := rep.finishReason()
	if len(rep.toolCalls) > 0 {
		var tcs []map[string]any
		for _, tc := range rep.toolCalls {
			tcs = append(tcs, map[string]any{"id": tc.ID, "type": "function", "function": map[string]any{"name": tc.Name, "arguments": tc.Args}})
		}
		msg["tool_calls"] = tcs
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-test", "object": "chat.completion", "created": 1700000000, "model": model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish, "logprobs": nil}},
		"usage":   map[string]any{"prompt_tokens": rep.usage[0], "completion_tokens": rep.usage[1], "total_tokens": rep.usage[0] + rep.usage[1]},
	})
}

func (rep reply) finishReason() string {
	switch {
	case rep.finish != "":
		return rep.finish
	case len(rep.toolCalls) > 0:
		return "tool_calls"
	}
	return "stop"
}

// stream sends the reply as chunks: the role, the content in pieces of at most 4 bytes,
// each tool call's name then its arguments in two pieces, a finish chunk, and (when
// stream_options.include_usage) a last chunk with usage and no choices.
func (s *completionServer) stream(w http.ResponseWriter, rep reply, model string, body map[string]any) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	fl := w.(http.Flusher)
	send := func(choices []any, usage any) {
		chunk := map[string]any{"id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 1700000000, "model": model, "choices": choices}
		if usage != nil {
			chunk["usage"] = usage
		}
		b, _ := json.Marshal(chunk)
		fmt.Fprintf(w, "data: %s\n\n", b)
		fl.Flush()
	}
	delta := func(d map[string]any) []any {
		return []any{map[string]any{"index": 0, "delta": d, "finish_reason": nil}}
	}
	send(delta(map[string]any{"role": "assistant", "content": ""}), nil)
	for c := rep.content; c != ""; {
		n := min(4, len(c))
		send(delta(map[string]any{"content": c[:n]}), nil)
		c = c[n:]
	}
	for i, tc := range rep.toolCalls {
		half := len(tc.Args) / 2
		send(delta(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": tc.ID, "type": "function", "function": map[string]any{"name": tc.Name, "arguments": tc.Args[:half]}}}}), nil)
		send(delta(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": tc.Args[half:]}}}}), nil)
	}
	if rep.finish != "-" { // "-": the stream ends without saying why, as a cut one does
		send([]any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": rep.finishReason()}}, nil)
	}
	if so, _ := body["stream_options"].(map[string]any); so["include_usage"] == true {
		send([]any{}, map[string]any{"prompt_tokens": rep.usage[0], "completion_tokens": rep.usage[1], "total_tokens": rep.usage[0] + rep.usage[1]})
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
	fl.Flush()
}

// runtime is a dispatch runtime recording progress events, with a fixed session state.
type runtime struct {
	state map[string]any

	mu     sync.Mutex
	events []progress
}

type progress struct {
	Kind string
	Data any
}

func (r *runtime) State(key string) (any, bool) { v, ok := r.state[key]; return v, ok }
func (r *runtime) Progress(kind string, data any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, progress{kind, data})
}
func (r *runtime) Ask(ctx context.Context, q troupe.Question) (troupe.Answer, error) {
	return troupe.Answer{}, troupe.ErrPaused
}
func (r *runtime) Partial(map[string]any) {}

func (r *runtime) Events() []progress {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]progress(nil), r.events...)
}

func dispatch(query string, rt *runtime) *troupe.Dispatch {
	d := troupe.NewDispatch()
	d.DispatchID, d.SessionID, d.QueryID = "disp_0000000000000001", "s1", "q1"
	d.TargetAgent, d.DispatchReason = "writer", "test"
	d.Query, d.ParsedQuery = query, map[string]any{}
	if rt != nil {
		d.Bind(rt)
	}
	return d
}
