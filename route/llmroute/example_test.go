package llmroute_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/agent/llmagent"
	"github.com/troupehq/troupe/route"
	"github.com/troupehq/troupe/route/llmroute"
)

func Example() {
	// A stand-in for the model: it says every message it is shown is about a trend.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"id": "c", "object": "chat.completion", "created": 0, "model": "small-model",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": `{"intent":"trend"}`}}},
		})
	}))
	defer srv.Close()

	rules := &route.Rules{
		Triggers: []route.Trigger{{Name: "deploy", Patterns: []string{"deploy"}, Target: "model_deployer"}},
		Intents:  map[string][]string{"trend": {"drift_monitor"}, "causal": {"causal_impact"}},
		Default:  "explainer",
	}
	router, err := llmroute.New(llmroute.Config{
		Rules: rules,
		LLM:   llmagent.Config{BaseURL: srv.URL + "/v1", Model: "small-model", APIKeyEnv: "ROUTER_KEY"},
	})
	if err != nil {
		panic(err)
	}
	avail := []string{"model_deployer", "drift_monitor", "causal_impact", "explainer"}
	for _, q := range []string{"deploy the new model", "how did weekly signups move since March?"} {
		dec, err := router.Route(context.Background(), troupe.RouteInput{Query: q, Available: avail}, troupe.Context{})
		if err != nil {
			panic(err)
		}
		fmt.Println(dec.Target, dec.Metadata["source"], dec.Metadata["llm_intent"])
	}
	// Output:
	// model_deployer trigger <nil>
	// drift_monitor intent trend
}
