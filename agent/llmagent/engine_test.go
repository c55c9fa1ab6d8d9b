package llmagent_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/agent/llmagent"
	"github.com/troupehq/troupe/engine"
	"github.com/troupehq/troupe/troupetest"
)

// An LLM agent through the real engine: the dispatch's session state and optimized prompt reach
// the prompt, tokens stream as agent_progress events, and the structured answer, its usage and
// cost land in the dispatch's result.
func TestThroughEngine(t *testing.T) {
	srv := newCompletionServer(t, reply{content: `{"summary":"photosynthesis in brief","points":["light","chlorophyll"]}`, usage: [2]int{40, 12}})
	a := newAgent(t, llmagent.Config{
		BaseURL: srv.URL(), Stream: true,
		System: "{{.OptimizedPrompt}}",
		Prompt: "Explain {{.State \"topic\"}}: {{.Query}}",
		Schema: json.RawMessage(`{"type":"object","properties":{"summary":{"type":"string"},"points":{"type":"array","items":{"type":"string"}}},"required":["summary","points"]}`),
		Prices: map[string]llmagent.Price{"gpt-test": {PromptPerMillion: 1000, CompletionPerMillion: 2000}},
	})
	reg := troupe.NewRegistry()
	reg.MustAdd("explainer", a, troupe.Reads("topic"), troupe.Writes("points"))
	eng, err := engine.New(engine.Config{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close(t.Context()) })
	evs, err := troupetest.Collect(eng.Run(t.Context(), troupe.Request{
		Query: "in two points", State: map[string]any{"topic": "photosynthesis"},
		Context:          troupe.NewContext("s1", "q1"),
		OptimizedPrompts: map[string]map[string]string{"explainer": {"explainer": "You teach biology."}},
	}))
	if err != nil {
		t.Fatal(err)
	}
	troupetest.CheckLog(t, evs)
	if last := troupetest.Last(evs); last.Kind != troupe.KindRunCompleted {
		t.Fatalf("run ended with %s: %+v", last.Kind, last.Data)
	}
	done := troupetest.Find(evs, troupe.KindDispatchCompleted, "explainer")
	if len(done) != 1 {
		t.Fatalf("%d dispatch_completed events", len(done))
	}
	res := done[0].Data.(*troupe.Result)
	if res.Summary() != "photosynthesis in brief" || *res.TokensUsed != 52 || *res.ModelUsed != "gpt-test" || *res.CostDollars != 0.064 {
		t.Errorf("result: summary %q tokens %d model %s cost %v", res.Summary(), *res.TokensUsed, *res.ModelUsed, *res.CostDollars)
	}
	var text strings.Builder
	for _, e := range troupetest.Find(evs, troupe.KindAgentProgress, "explainer") {
		if p := e.Data.(*troupe.Progress); p.Kind == "token" {
			text.WriteString(p.Data.(map[string]any)["text"].(string))
		}
	}
	if text.String() != `{"summary":"photosynthesis in brief","points":["light","chlorophyll"]}` {
		t.Errorf("streamed tokens = %q", text.String())
	}
	msgs := messages(srv.Requests()[0])
	if msgs[0]["content"] != "You teach biology." || msgs[1]["content"] != "Explain photosynthesis: in two points" {
		t.Errorf("messages = %v", msgs)
	}
}

// The run's token budget counts what LLM agents report: once the first agent's tokens_used
// spends it, the second is never dispatched and its endpoint never asked.
func TestEngineTokenBudget(t *testing.T) {
	srv := newCompletionServer(t, reply{content: "first", usage: [2]int{400, 200}}, reply{content: "second", usage: [2]int{1, 1}})
	reg := troupe.NewRegistry()
	reg.MustAdd("first", newAgent(t, llmagent.Config{BaseURL: srv.URL()}))
	reg.MustAdd("second", newAgent(t, llmagent.Config{BaseURL: srv.URL()}), troupe.After("first"))
	eng, err := engine.New(engine.Config{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close(t.Context()) })
	evs, _ := troupetest.Collect(eng.Run(t.Context(), troupe.Request{Query: "go", Context: troupe.NewContext("s", "q"), Budget: troupe.Budget{MaxTokens: 500}}))
	troupetest.CheckLog(t, evs)
	if n := len(troupetest.Find(evs, troupe.KindDispatchStarted, "second")); n != 0 || len(srv.Requests()) != 1 {
		t.Errorf("second dispatched %d times, %d requests: the token budget must stop the run", n, len(srv.Requests()))
	}
	if done := troupetest.Find(evs, troupe.KindDispatchCompleted, "first"); len(done) != 1 || *done[0].Data.(*troupe.Result).TokensUsed != 600 {
		t.Errorf("first's completion: %v", done)
	}
}
