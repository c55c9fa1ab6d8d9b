package llmagent_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/troupehq/troupe/agent/llmagent"
)

// benchCompletion is a fixed chat.completion answer, served without parsing the request, so
// the server's share of a call is the same in both benchmarks below.
var benchCompletion = []byte(`{"id":"chatcmpl-b","object":"chat.completion","created":1700000000,"model":"gpt-test",` +
	`"choices":[{"index":0,"message":{"role":"assistant","content":"The capital of France is Paris.","refusal":null},"finish_reason":"stop","logprobs":null}],` +
	`"usage":{"prompt_tokens":20,"completion_tokens":8,"total_tokens":28}}`)

func benchServer(b *testing.B) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write(benchCompletion)
	}))
	b.Cleanup(srv.Close)
	return srv
}

// BenchmarkLLMAgent is one Run of an LLM agent (template, request, SDK, response, result)
// around a loopback completion server. Subtract BenchmarkLLMAgentFloor, the same exchange with
// plain net/http, for the agent's overhead.
func BenchmarkLLMAgent(b *testing.B) {
	srv := benchServer(b)
	b.Setenv("BENCH_KEY", "sk-bench")
	a, err := llmagent.New(llmagent.Config{BaseURL: srv.URL + "/v1", Model: "gpt-test", APIKeyEnv: "BENCH_KEY",
		System: "You are terse.", Prompt: "Q: {{.Query}}", Temperature: new(float64),
		Prices: map[string]llmagent.Price{"gpt-test": {PromptPerMillion: 1, CompletionPerMillion: 2}}})
	if err != nil {
		b.Fatal(err)
	}
	d := dispatch("What is the capital of France?", nil)
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		res, err := a.Run(ctx, d)
		if err != nil || res.AgentResult["text"] == nil {
			b.Fatal(res, err)
		}
	}
}

// BenchmarkLLMAgentFloor sends the request the agent sends and decodes the answer, with
// net/http and encoding/json only.
func BenchmarkLLMAgentFloor(b *testing.B) {
	srv := benchServer(b)
	body, _ := json.Marshal(map[string]any{"model": "gpt-test", "temperature": 0, "max_completion_tokens": 4096,
		"messages": []any{map[string]any{"role": "system", "content": "You are terse."}, map[string]any{"role": "user", "content": "Q: What is the capital of France?"}}})
	client := &http.Client{}
	b.ReportAllocs()
	for b.Loop() {
		req, _ := http.NewRequestWithContext(b.Context(), http.MethodPost, srv.URL+"/v1/chat/completions", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer sk-bench")
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		var out map[string]any
		err = json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 {
			b.Fatal(err, resp.StatusCode)
		}
	}
}
