package llmagent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/agent/llmagent"
)

func Example() {
	// A stand-in for an OpenAI-compatible server (Ollama, vLLM, OpenAI itself…).
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "small-model",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": `{"answer":"Paris","confidence":0.95}`}}},
			"usage": map[string]any{"prompt_tokens": 30, "completion_tokens": 10, "total_tokens": 40},
		})
	}))
	defer srv.Close()

	agent, err := llmagent.New(llmagent.Config{
		BaseURL:   srv.URL + "/v1",
		APIKeyEnv: "MY_LLM_KEY", // the variable's name; the key stays in the environment
		Model:     "small-model",
		System:    "{{.OptimizedPrompt}}",
		Prompt:    "Answer in JSON: {{.Query}}",
		Schema:    json.RawMessage(`{"type":"object","properties":{"answer":{"type":"string"},"confidence":{"type":"number"}},"required":["answer"]}`),
		Prices:    map[string]llmagent.Price{"small-model": {PromptPerMillion: 0.5, CompletionPerMillion: 1.5}},
	})
	if err != nil {
		panic(err)
	}
	d := troupe.NewDispatch()
	d.TargetAgent, d.Query = "geographer", "What is the capital of France?"
	res, err := agent.Run(context.Background(), d)
	if err != nil {
		panic(err)
	}
	fmt.Println(res.AgentResult["answer"], *res.Confidence, *res.TokensUsed, *res.CostDollars)
	// Output: Paris 0.95 40 3e-05
}
