package llmroute_test

import (
	"strings"
	"testing"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/engine"
	"github.com/troupehq/troupe/route"
	"github.com/troupehq/troupe/troupetest"
)

// runRouted runs query through an engine whose planner and router are rt, every available agent
// a script that succeeds; it returns the checked log and the scripts.
func runRouted(t *testing.T, rt troupe.Router, query string) ([]troupe.Event, map[string]*troupetest.Script) {
	t.Helper()
	reg := troupe.NewRegistry()
	agents := map[string]*troupetest.Script{}
	for _, name := range available {
		agents[name] = troupetest.NewScript(troupetest.OK(nil))
		reg.MustAdd(name, agents[name])
	}
	eng, err := engine.New(engine.Config{Registry: reg, Planner: route.Planner(rt), Router: rt})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close(t.Context()) })
	evs, err := troupetest.Collect(eng.Run(t.Context(), troupe.Request{Query: query, Context: troupe.NewContext("s", "q")}))
	if err != nil {
		t.Fatal(err)
	}
	troupetest.CheckFinishedLog(t, evs)
	return evs, agents
}

// In the engine, as seed 003's message-routing coordinator runs: the planner leaves the agent
// to the router, the rules do not place the message, the model's intent does.
func TestThroughEngine(t *testing.T) {
	rt, cl := newRouter(t, map[string]string{"why did NRx fall after the price change?": `{"intent":"causal"}`}, rules())
	evs, agents := runRouted(t, rt, "why did NRx fall after the price change?")
	routed := troupetest.Find(evs, troupe.KindRouteDecided, "")
	if len(routed) != 1 {
		t.Fatalf("%d route_decided events", len(routed))
	}
	if agents["causal_impact"].Calls() != 1 || agents["explainer"].Calls() != 0 || cl.requests() != 1 {
		t.Errorf("causal_impact ran %d times, explainer %d, model asked %d times; route event %+v",
			agents["causal_impact"].Calls(), agents["explainer"].Calls(), cl.requests(), routed[0].Data)
	}
}

// When the classifier fails in a run, the rules' default runs and the run's log records why: the
// route_decided event carries the fallback reason.
func TestFallbackRecordedInTheRun(t *testing.T) {
	rt, cl := newRouter(t, map[string]string{"anything new?": "HTTP 503"}, rules())
	evs, agents := runRouted(t, rt, "anything new?")
	routed := troupetest.Find(evs, troupe.KindRouteDecided, "")
	if len(routed) != 1 {
		t.Fatalf("%d route_decided events", len(routed))
	}
	dec := routed[0].Data.(*troupe.RoutingDecision)
	if fb, _ := dec.Metadata["llm_fallback"].(string); dec.Target != "explainer" || !strings.Contains(fb, "HTTP 503") || !strings.Contains(dec.Reason, "LLM classification failed") {
		t.Errorf("route_decided %+v: want the default with the classifier's failure as the reason", dec)
	}
	if agents["explainer"].Calls() != 1 || cl.requests() != 1 {
		t.Errorf("explainer ran %d times, model asked %d times", agents["explainer"].Calls(), cl.requests())
	}
}
