package llmagent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/agent/httpagent"
	"github.com/troupehq/troupe/agent/llmagent"
	"github.com/troupehq/troupe/engine"
	"github.com/troupehq/troupe/flow"
)

// A team's workflow: an LLM agent that may delegate to a service written in another language
// (here an HTTP agent counting words), run by the engine. The model's tool call reaches the
// service as a nested dispatch; the model's tokens and cost land in the run's result.
func Example_workflow() {
	// The service: it speaks troupe's protocol (Dispatch JSON in, Result JSON out).
	service := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		d, err := troupe.DecodeDispatch(body, nil, time.Now())
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		now := time.Now().UTC()
		json.NewEncoder(w).Encode(&troupe.Result{DispatchID: d.DispatchID, SessionID: d.SessionID, QueryID: d.QueryID,
			AgentName: d.TargetAgent, Status: troupe.StatusCompleted, StartedAt: now, CompletedAt: now,
			AgentResult: map[string]any{"words": len(strings.Fields(d.Query))}})
	}))
	defer service.Close()

	// A stand-in for the model: it first calls the tool, then answers with what the tool said.
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Messages []map[string]any }
		json.NewDecoder(r.Body).Decode(&req)
		last := req.Messages[len(req.Messages)-1]
		msg := map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"id": "call_1", "type": "function",
			"function": map[string]any{"name": "delegate_to_wordcount", "arguments": `{"task":"the quick brown fox"}`}}}}
		if last["role"] == "tool" {
			msg = map[string]any{"role": "assistant", "content": "The service counted " + last["content"].(string)}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": "c", "object": "chat.completion", "created": 0, "model": "small-model",
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": "stop"}},
			"usage":   map[string]any{"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60}})
	}))
	defer model.Close()

	wordcount, err := httpagent.New(httpagent.Config{URL: service.URL})
	if err != nil {
		panic(err)
	}
	assistant, err := llmagent.New(llmagent.Config{
		BaseURL: model.URL + "/v1", Model: "small-model", APIKeyEnv: "TEAM_LLM_KEY",
		Tools:  []troupe.Tool{flow.AsTool("wordcount", wordcount, troupe.Describe("counts the words of a task"))},
		Prices: map[string]llmagent.Price{"small-model": {PromptPerMillion: 1, CompletionPerMillion: 2}},
	})
	if err != nil {
		panic(err)
	}
	reg := troupe.NewRegistry()
	reg.MustAdd("assistant", assistant)
	eng, err := engine.New(engine.Config{Registry: reg})
	if err != nil {
		panic(err)
	}
	defer eng.Close(context.Background())

	for ev, err := range eng.Run(context.Background(), troupe.Request{Query: "how many words in 'the quick brown fox'?"}) {
		if err != nil {
			panic(err)
		}
		if ev.Kind == troupe.KindDispatchCompleted && ev.Agent == "assistant" {
			res := ev.Data.(*troupe.Result)
			fmt.Println(res.AgentResult["text"])
			fmt.Println(*res.TokensUsed, "tokens,", *res.CostDollars, "dollars")
		}
		if ev.Kind == troupe.KindRunCompleted {
			fmt.Println("run completed")
		}
	}
	// Output:
	// The service counted {"words":4}
	// 120 tokens, 0.00014 dollars
	// run completed
}
