package llmagent_test

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/agent/llmagent"
	"github.com/troupehq/troupe/engine"
	"github.com/troupehq/troupe/flow"
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
	troupetest.CheckFinishedLog(t, evs)
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
	troupetest.CheckFinishedLog(t, evs)
	if n := len(troupetest.Find(evs, troupe.KindDispatchStarted, "second")); n != 0 || len(srv.Requests()) != 1 {
		t.Errorf("second dispatched %d times, %d requests: the token budget must stop the run", n, len(srv.Requests()))
	}
	if done := troupetest.Find(evs, troupe.KindDispatchCompleted, "first"); len(done) != 1 || *done[0].Data.(*troupe.Result).TokensUsed != 600 {
		t.Errorf("first's completion: %v", done)
	}
}

// What LLM agents spend reaches the run's totals once per completion: a writer that calls a tool
// (two completions) and a checker whose answers never pass its schema (two completions, then a
// failed dispatch that still reports them) are summed in the run's aggregation, nothing twice.
func TestEngineRunTotalsCountUsageOnce(t *testing.T) {
	price := map[string]llmagent.Price{"gpt-test": {PromptPerMillion: 1, CompletionPerMillion: 2}}
	writerSrv := newCompletionServer(t,
		reply{toolCalls: []wireToolCall{{"c1", "add", `{"a":1,"b":2}`}}, usage: [2]int{10, 3}},
		reply{content: "the sum is 3", usage: [2]int{30, 9}},
	)
	bad := reply{content: `{"name":"Ada"}`, usage: [2]int{5, 5}}
	checkerSrv := newCompletionServer(t, bad, bad)
	reg := troupe.NewRegistry()
	reg.MustAdd("writer", newAgent(t, llmagent.Config{BaseURL: writerSrv.URL(), Tools: []troupe.Tool{addTool}, Prices: price}))
	reg.MustAdd("checker", newAgent(t, llmagent.Config{BaseURL: checkerSrv.URL(), Schema: json.RawMessage(personSchema), MaxReasks: 1, Prices: price}))
	eng, err := engine.New(engine.Config{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close(t.Context()) })
	evs, _ := troupetest.Collect(eng.Run(t.Context(), troupe.Request{Query: "add and check", Context: troupe.NewContext("s", "q"),
		Policy: &troupe.ErrorPolicy{OnError: troupe.Continue}}))
	troupetest.CheckFinishedLog(t, evs)
	failed := troupetest.Find(evs, troupe.KindDispatchFailed, "checker")
	if len(failed) != 1 {
		t.Fatalf("%d failed checker dispatches, want 1", len(failed))
	}
	if res := failed[0].Data.(*troupe.Result); deref(res.TokensUsed) != int64(20) || res.CostDollars == nil || !near(*res.CostDollars, 30e-6) || len(res.AgentResult) != 0 {
		t.Errorf("failed checker: tokens %v cost %v result %v; want its 20 tokens and $0.00003 kept, no answer", deref(res.TokensUsed), deref(res.CostDollars), res.AgentResult)
	}
	agg := troupetest.Find(evs, troupe.KindRunAggregated, "")
	if len(agg) != 1 {
		t.Fatalf("%d run_aggregated events", len(agg))
	}
	a := agg[0].Data.(*troupe.Aggregation)
	// writer: 40 prompt + 12 completion tokens, $(40 + 24)e-6; checker: 10 + 10, $(10 + 20)e-6.
	if a.TotalTokensUsed == nil || *a.TotalTokensUsed != 72 || a.TotalCostDollars == nil || !near(*a.TotalCostDollars, 94e-6) {
		t.Errorf("run totals: tokens %v cost %v; want 72 and 94e-6", deref(a.TotalTokensUsed), deref(a.TotalCostDollars))
	}
}

// The run's max_cost_dollars reaches an LLM agent as the dispatch's budget: the agent stops
// between completions once it has spent it, and the run ends on its budget.
func TestEngineCostBudgetStopsTheAgent(t *testing.T) {
	loop := reply{toolCalls: []wireToolCall{{"c", "add", `{"a":1,"b":1}`}}, usage: [2]int{1000, 1000}}
	srv := newCompletionServer(t, loop, loop, loop, loop)
	reg := troupe.NewRegistry()
	reg.MustAdd("spender", newAgent(t, llmagent.Config{BaseURL: srv.URL(), Tools: []troupe.Tool{addTool},
		Prices: map[string]llmagent.Price{"gpt-test": {PromptPerMillion: 10, CompletionPerMillion: 30}}})) // $0.04 a turn
	evs, _ := runEngine(t, reg, troupe.Request{Query: "spend", Context: troupe.NewContext("s", "q"),
		Budget: troupe.Budget{MaxCostDollars: 0.05}})
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("%d completions, want 2: the second brings the spend to $0.08 ≥ $0.05", n)
	}
	res := failedOnce(t, evs, "spender")
	if len(res.Errors) != 1 || res.Errors[0].Code != troupe.CodeBudget || *res.CostDollars < 0.0799 || *res.CostDollars > 0.0801 {
		t.Errorf("failed result: errors %+v cost %v", res.Errors, *res.CostDollars)
	}
	if last := troupetest.Last(evs); last.Kind == troupe.KindRunCompleted {
		t.Errorf("run completed despite its spent budget")
	}
}

// runEngine runs req on an engine over reg and returns the run's events, checked for a
// well-formed log.
func runEngine(t *testing.T, reg *troupe.Registry, req troupe.Request) ([]troupe.Event, error) {
	t.Helper()
	eng, err := engine.New(engine.Config{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close(t.Context()) })
	evs, err := troupetest.Collect(eng.Run(t.Context(), req))
	troupetest.CheckFinishedLog(t, evs)
	return evs, err
}

// failedOnce returns the result of the agent's one failed dispatch in evs.
func failedOnce(t *testing.T, evs []troupe.Event, agent string) *troupe.Result {
	t.Helper()
	failed := troupetest.Find(evs, troupe.KindDispatchFailed, agent)
	if len(failed) != 1 {
		t.Fatalf("%d failed %s dispatches, want 1", len(failed), agent)
	}
	return failed[0].Data.(*troupe.Result)
}

func near(got, want float64) bool { return math.Abs(got-want) < 1e-12 }

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// Agents as tools through the engine: a lead LLM agent delegates to a researcher LLM agent
// (flow.AsTool), which delegates to a checker LLM agent in turn. Every completion of all three
// reaches the run's totals exactly once: the checker's through the researcher's result, the
// researcher's through the lead's, and the lead's as the run's only planned dispatch.
func TestEngineAgentToolUsageCountedOnce(t *testing.T) {
	price := map[string]llmagent.Price{"gpt-test": {PromptPerMillion: 1, CompletionPerMillion: 2}}
	leadSrv := newCompletionServer(t,
		reply{toolCalls: []wireToolCall{{"l1", "delegate_to_researcher", `{"task":"find the boiling point of water"}`}}, usage: [2]int{20, 5}},
		reply{content: "Water boils at 100 °C at sea level.", usage: [2]int{30, 8}},
	)
	researcherSrv := newCompletionServer(t,
		reply{toolCalls: []wireToolCall{{"r1", "delegate_to_checker", `{"task":"is it 100 °C?"}`}}, usage: [2]int{50, 10}},
		reply{content: "100 °C, checked", usage: [2]int{70, 20}},
	)
	checkerSrv := newCompletionServer(t, reply{content: "yes, at 1 atm", usage: [2]int{40, 15}})
	checker := newAgent(t, llmagent.Config{BaseURL: checkerSrv.URL(), Prices: price})
	researcher := newAgent(t, llmagent.Config{BaseURL: researcherSrv.URL(), Prices: price, Tools: []troupe.Tool{flow.AsTool("checker", checker)}})
	lead := newAgent(t, llmagent.Config{BaseURL: leadSrv.URL(), Prices: price, Tools: []troupe.Tool{flow.AsTool("researcher", researcher)}})
	evs, err := runEngine(t, troupe.NewRegistry().MustAdd("lead", lead), troupe.Request{Query: "boiling point?", Context: troupe.NewContext("s", "q")})
	if err != nil {
		t.Fatal(err)
	}
	if last := troupetest.Last(evs); last.Kind != troupe.KindRunCompleted {
		t.Fatalf("run ended with %s: %+v", last.Kind, last.Data)
	}
	if a, b, c := len(leadSrv.Requests()), len(researcherSrv.Requests()), len(checkerSrv.Requests()); a != 2 || b != 2 || c != 1 {
		t.Fatalf("requests: lead %d, researcher %d, checker %d; want 2, 2, 1", a, b, c)
	}

	// Tokens: checker 55; researcher 60 + 90 = 150 of its own; lead 25 + 38 = 63 of its own.
	// Cost at $1 and $2 per million prompt and completion tokens.
	const checkerCost, researcherCost, leadCost = (40 + 30) * 1e-6, (120 + 60) * 1e-6, (50 + 26) * 1e-6
	for _, tt := range []struct {
		agent  string
		tokens int64
		cost   float64
	}{
		{"checker", 55, checkerCost},
		{"researcher", 150 + 55, researcherCost + checkerCost},
		{"lead", 63 + 150 + 55, leadCost + researcherCost + checkerCost},
	} {
		done := troupetest.Find(evs, troupe.KindDispatchCompleted, tt.agent)
		if len(done) != 1 {
			t.Errorf("%s: %d dispatch_completed events, want 1", tt.agent, len(done))
			continue
		}
		res := done[0].Data.(*troupe.Result)
		if deref(res.TokensUsed) != tt.tokens || res.CostDollars == nil || !near(*res.CostDollars, tt.cost) {
			t.Errorf("%s: tokens %v cost %v; want %d and %v", tt.agent, deref(res.TokensUsed), deref(res.CostDollars), tt.tokens, tt.cost)
		}
	}
	agg := troupetest.Find(evs, troupe.KindRunAggregated, "")
	if len(agg) != 1 {
		t.Fatalf("%d run_aggregated events", len(agg))
	}
	a := agg[0].Data.(*troupe.Aggregation)
	if want := int64(63 + 150 + 55); a.TotalTokensUsed == nil || *a.TotalTokensUsed != want {
		t.Errorf("run total tokens %v, want %d: every completion of the three agents once", deref(a.TotalTokensUsed), want)
	}
	if want := leadCost + researcherCost + checkerCost; a.TotalCostDollars == nil || !near(*a.TotalCostDollars, want) {
		t.Errorf("run total cost %v, want %v", deref(a.TotalCostDollars), want)
	}
}

// The run's max_cost_dollars counts what an agent called as a tool spent: the lead's own first
// completion is cheap, but the researcher it delegates to spends past the budget, so the lead
// stops before its next completion and its failed result reports both.
func TestEngineCostBudgetCountsAgentTools(t *testing.T) {
	price := map[string]llmagent.Price{"gpt-test": {PromptPerMillion: 10, CompletionPerMillion: 30}}
	leadSrv := newCompletionServer(t,
		reply{toolCalls: []wireToolCall{{"l1", "delegate_to_researcher", `{"task":"dig"}`}}, usage: [2]int{100, 100}}, // $0.004
		reply{content: "never asked", usage: [2]int{1, 1}},
	)
	researcherSrv := newCompletionServer(t, reply{content: "an expensive finding", usage: [2]int{2000, 2000}}) // $0.08
	researcher := newAgent(t, llmagent.Config{BaseURL: researcherSrv.URL(), Prices: price})
	lead := newAgent(t, llmagent.Config{BaseURL: leadSrv.URL(), Prices: price, Tools: []troupe.Tool{flow.AsTool("researcher", researcher)}})
	evs, _ := runEngine(t, troupe.NewRegistry().MustAdd("lead", lead), troupe.Request{Query: "research", Context: troupe.NewContext("s", "q"),
		Budget: troupe.Budget{MaxCostDollars: 0.05}})
	if n := len(leadSrv.Requests()); n != 1 {
		t.Errorf("lead asked %d times, want 1: the researcher's $0.08 spends the $0.05 budget", n)
	}
	res := failedOnce(t, evs, "lead")
	if len(res.Errors) != 1 || res.Errors[0].Code != troupe.CodeBudget || deref(res.TokensUsed) != int64(4200) || !near(deref(res.CostDollars).(float64), 0.084) {
		t.Errorf("failed lead: errors %+v tokens %v cost %v; want BUDGET, 4200 tokens, $0.084", res.Errors, deref(res.TokensUsed), deref(res.CostDollars))
	}
}

// An agent called as a tool that completes asking for a human's review: the lead's result asks
// for it, so the run pauses on a review of the lead's result (no handler), instead of the
// request being dropped with the tool's answer.
func TestEngineAgentToolRequiresHumanReachesReview(t *testing.T) {
	leadSrv := newCompletionServer(t,
		reply{toolCalls: []wireToolCall{{"l1", "delegate_to_deployer", `{"task":"deploy v7"}`}}, usage: [2]int{10, 5}},
		reply{content: "deployed v7", usage: [2]int{10, 5}},
	)
	deployer := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{AgentResult: map[string]any{"deploy": "v7"}, RequiresHuman: true}, nil
	})
	lead := newAgent(t, llmagent.Config{BaseURL: leadSrv.URL(), Tools: []troupe.Tool{flow.AsTool("deployer", deployer)}})
	evs, _ := runEngine(t, troupe.NewRegistry().MustAdd("lead", lead), troupe.Request{Query: "ship it", Context: troupe.NewContext("s", "q")})
	last := troupetest.Last(evs)
	out, _ := last.Data.(*troupe.Outcome)
	if last.Kind != troupe.KindRunPaused || out == nil || len(out.Questions) != 1 || out.Questions[0].Kind != troupe.QuestionReview || out.Questions[0].Agent != "lead" {
		t.Fatalf("run ended with %s %+v; want paused on a review of lead's result", last.Kind, last.Data)
	}
	if r := out.Questions[0].Result; r == nil || r.AgentResult["text"] != "deployed v7" {
		t.Errorf("the review shows %+v; want lead's answer", r)
	}
}
