package llmagent_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/agent/llmagent"
	"github.com/troupehq/troupe/internal/peers"
)

// mockLLMConfig scripts @dwmkerr/mock-llm (a third-party OpenAI-compatible server): the first
// request gets a tool call, the second an answer quoting the tool message it received, every
// later one an echo of the last message with usage.
const mockLLMConfig = `
streaming:
  chunkSize: 6
  chunkIntervalMs: 1
rules:
  - path: "/v1/chat/completions"
    method: "POST"
    match: "@"
    response:
      status: 200
      content: |
        {"id": "chatcmpl-{{timestamp}}", "object": "chat.completion", "created": 1700000000,
         "model": "{{jmes request body.model}}",
         "choices": [{"index": 0, "message": {"role": "assistant", "content": "echo: {{jmes request body.messages[-1].content}}"}, "finish_reason": "stop"}],
         "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}}
  - path: "/v1/chat/completions"
    sequence: 0
    response:
      status: 200
      content: |
        {"id": "chatcmpl-1", "object": "chat.completion", "created": 1700000000, "model": "mock-model",
         "choices": [{"index": 0, "message": {"role": "assistant", "content": null,
           "tool_calls": [{"id": "call_mock_1", "type": "function", "function": {"name": "add", "arguments": "{\"a\": 2, \"b\": 3}"}}]},
           "finish_reason": "tool_calls"}],
         "usage": {"prompt_tokens": 20, "completion_tokens": 10, "total_tokens": 30}}
  - path: "/v1/chat/completions"
    sequence: 1
    response:
      status: 200
      content: |
        {"id": "chatcmpl-2", "object": "chat.completion", "created": 1700000000, "model": "mock-model",
         "choices": [{"index": 0, "message": {"role": "assistant",
           "content": "{{jmes request body.messages[-1].role}} {{jmes request body.messages[-1].tool_call_id}} after {{jmes request body.messages[-2].tool_calls[0].function.name}}"},
           "finish_reason": "stop"}],
         "usage": {"prompt_tokens": 40, "completion_tokens": 5, "total_tokens": 45}}
`

// startMockLLM runs mock-llm with mockLLMConfig on a free loopback port and returns its base URL
// once it says it is listening.
func startMockLLM(t *testing.T) string {
	t.Helper()
	cfgPath := filepath.Join(t.TempDir(), "mock-llm.yaml")
	if err := os.WriteFile(cfgPath, []byte(mockLLMConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := peers.Start(t, "mock-llm", []string{"--config", cfgPath}, func(line string) bool {
		return strings.Contains(line, "server running on")
	})
	return "http://" + addr + "/v1"
}

func TestAgainstMockLLM(t *testing.T) {
	url := startMockLLM(t)

	// Tool calling over two turns: mock-llm's second answer quotes the tool message it got.
	a := newAgent(t, llmagent.Config{BaseURL: url, Model: "mock-model", Tools: []troupe.Tool{addTool},
		Prices: map[string]llmagent.Price{"mock-model": {PromptPerMillion: 1e6, CompletionPerMillion: 1e6}}})
	res, err := a.Run(t.Context(), dispatch("what is 2+3?", nil))
	if err != nil {
		t.Fatal(err)
	}
	if got := res.AgentResult["text"]; got != "tool call_mock_1 after add" {
		t.Errorf("answer = %q, want mock-llm to have seen the tool message for call_mock_1", got)
	}
	if *res.TokensUsed != 75 || *res.CostDollars != 75 || *res.ModelUsed != "mock-model" {
		t.Errorf("tokens %d cost %v model %s, want 75, 75, mock-model", *res.TokensUsed, *res.CostDollars, *res.ModelUsed)
	}

	// Streaming: mock-llm splits the echo into chunks of 6 characters.
	s := newAgent(t, llmagent.Config{BaseURL: url, Model: "mock-model", Stream: true})
	rt := &runtime{}
	res, err = s.Run(t.Context(), dispatch("hello from a stream", rt))
	if err != nil {
		t.Fatal(err)
	}
	if got := res.AgentResult["text"]; got != "echo: hello from a stream" {
		t.Errorf("streamed answer = %q", got)
	}
	// mock-llm's streams carry no usage chunk: the result says so instead of claiming 0 tokens silently.
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "no token usage") || *res.TokensUsed != 0 {
		t.Errorf("warnings %q tokens %d", res.Warnings, *res.TokensUsed)
	}
	var pieces []string
	for _, e := range rt.Events() {
		if e.Kind == "token" {
			pieces = append(pieces, e.Data.(map[string]any)["text"].(string))
		}
	}
	if len(pieces) < 4 || strings.Join(pieces, "") != "echo: hello from a stream" {
		t.Errorf("token events = %q", pieces)
	}
}
