package engine_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/engine"
	"github.com/troupehq/troupe/route"
	"github.com/troupehq/troupe/troupetest"
)

// A router that fails for a reason of its own (a model that is down, a parsed query of the
// wrong shape) has not found "no such agent in the registry": the run's error was recorded
// with code UNKNOWN_AGENT, which errors.go reserves for that, whatever the router's error.
func TestRouterFailureIsNotAnUnknownAgent(t *testing.T) {
	down := troupe.RouterFunc(func(context.Context, troupe.RouteInput, troupe.Context) (troupe.RoutingDecision, error) {
		return troupe.RoutingDecision{}, errors.New("classifier endpoint returned 503")
	})
	eng := newEngine(t, engine.Config{Registry: agents(t, "a", troupetest.NewScript()), Planner: chain("a"), Router: down})
	evs := run(t, eng, troupe.Request{Query: "q"})
	o := outcome(t, evs)
	if o.Status != troupe.RunFailed || o.Error == nil {
		t.Fatalf("outcome %+v, want failed", o)
	}
	if o.Error.Code == troupe.CodeUnknownAgent || errors.Is(o.Error.Err(), troupe.ErrUnknownAgent) {
		t.Errorf("router failure recorded as %s (%q): no agent was unknown", o.Error.Code, o.Error.Message)
	}

	// route.Rules: "a parsed query of the wrong shape is not such an error" (ErrUnknownAgent).
	rules := &route.Rules{Intents: map[string][]string{"causal": {"a"}}}
	p := &troupe.Plan{Stages: []troupe.PlanStage{{Tasks: []troupe.Task{{ID: "t1", Reason: "routed at run time"}}}}}
	eng = newEngine(t, engine.Config{Registry: agents(t, "a", troupetest.NewScript()), Planner: staticPlan(p), Router: rules})
	evs = run(t, eng, troupe.Request{Query: "q", ParsedQuery: map[string]any{"intent": 1}})
	if o := outcome(t, evs); o.Error == nil || o.Error.Code == troupe.CodeUnknownAgent {
		t.Errorf("a parsed query of the wrong shape recorded as %+v", o.Error)
	}
}

// OrchestratorState maps each agent to its latest dispatch and response. An agent planned in two
// tasks that fails in both, a fallback completing each, has as its failed response the second
// task's, the one whose dispatch DispatchedAgents holds; it held the first.
func TestFailedAgentsHoldTheLatestFailure(t *testing.T) {
	p := &troupe.Plan{Stages: []troupe.PlanStage{
		{Tasks: []troupe.Task{{ID: "first", Agent: "a"}}},
		{Tasks: []troupe.Task{{ID: "second", Agent: "a", DependsOn: []string{"first"}}}},
	}}
	fail := troupetest.Fail(troupe.CodeAgentError, false)
	eng := newEngine(t, engine.Config{Registry: agents(t, "a", troupetest.NewScript(fail, fail), "spare", troupetest.NewScript()),
		Planner: staticPlan(p),
		Policy:  troupe.ErrorPolicy{OnError: troupe.Fallback, FallbackAgents: map[string][]string{"a": {"spare"}}}})
	r, err := eng.Start(t.Context(), troupe.Request{Query: "q"})
	if err != nil {
		t.Fatal(err)
	}
	st, err := r.Wait(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	log, err := eng.Store().Events(t.Context(), r.ID(), 0)
	if err != nil {
		t.Fatal(err)
	}
	failed := troupetest.Find(log, troupe.KindDispatchFailed, "a")
	if len(failed) != 2 {
		t.Fatalf("%d failures of a, want 2", len(failed))
	}
	latest := failed[1].DispatchID
	if d := st.DispatchedAgents["a"]; d == nil || d.DispatchID != latest {
		t.Errorf("DispatchedAgents[a] = %v, want the latest dispatch %s", d, latest)
	}
	if res := st.FailedAgents["a"]; res == nil || res.DispatchID != latest {
		got := "none"
		if res != nil {
			got = res.DispatchID
		}
		t.Errorf("FailedAgents[a] is dispatch %s, want the latest failure %s (the first is %s)", got, latest, failed[0].DispatchID)
	}
}

// A decision's fallback is the "fallback target if primary fails" (seed 001). One naming the
// target itself names none the engine will use; under on_error fallback the recorded decision
// names the agent the engine falls back to, as for a decision that names none. It kept the
// target.
func TestSelfFallbackRecordedAsTheFallbackUsed(t *testing.T) {
	self := troupe.RouterFunc(func(_ context.Context, in troupe.RouteInput, _ troupe.Context) (troupe.RoutingDecision, error) {
		return troupe.RoutingDecision{Target: in.Task.Agent, Reason: "planned", Fallback: in.Task.Agent}, nil
	})
	spare := troupetest.NewScript()
	eng := newEngine(t, engine.Config{Registry: agents(t, "a", troupetest.NewScript(troupetest.Fail(troupe.CodeAgentError, false)), "spare", spare),
		Planner: chain("a"), Router: self,
		Policy: troupe.ErrorPolicy{OnError: troupe.Fallback, FallbackAgents: map[string][]string{"a": {"spare"}}}})
	evs := run(t, eng, troupe.Request{Query: "q"})
	if spare.Calls() != 1 {
		t.Fatalf("spare ran %d times, want once as a's fallback", spare.Calls())
	}
	d := troupetest.Find(evs, troupe.KindRouteDecided, "a")[0].Data.(*troupe.RoutingDecision)
	if d.Fallback != "spare" {
		t.Errorf("a's recorded decision names fallback %q; the engine fell back to spare", d.Fallback)
	}
}

// depends_on are the "agent names this dispatch depends on" (seed 000). When a router sends a
// planned task to another agent, a later task depending on it depends on the agent that did the
// work, the one in its upstream_results; it named the planned agent, which never ran.
func TestDependsOnNamesTheRoutedAgent(t *testing.T) {
	p := &troupe.Plan{Stages: []troupe.PlanStage{
		{Tasks: []troupe.Task{{ID: "t1", Agent: "a"}}},
		{Tasks: []troupe.Task{{ID: "t2", Agent: "c", DependsOn: []string{"t1"}}}},
	}}
	swap := troupe.RouterFunc(func(_ context.Context, in troupe.RouteInput, _ troupe.Context) (troupe.RoutingDecision, error) {
		if in.Task.Agent == "a" {
			return troupe.RoutingDecision{Target: "b", Reason: "a is out of service; b does its work"}, nil
		}
		return troupe.RoutingDecision{Target: in.Task.Agent, Reason: "planned"}, nil
	})
	a := troupetest.NewScript()
	eng := newEngine(t, engine.Config{Registry: agents(t, "a", a, "b", troupetest.NewScript(), "c", troupetest.NewScript()),
		Planner: staticPlan(p), Router: swap})
	evs := run(t, eng, troupe.Request{Query: "q"})
	if a.Calls() != 0 {
		t.Fatalf("a ran %d times", a.Calls())
	}
	d := troupetest.Find(evs, troupe.KindDispatchStarted, "c")[0].Data.(*troupe.Dispatch)
	var up []string
	for _, u := range d.UpstreamResults {
		up = append(up, u.Agent)
	}
	if len(d.DependsOn) != 1 || d.DependsOn[0] != "b" {
		t.Errorf("c's depends_on %v (upstream results from %v), want [b]: a never ran", d.DependsOn, up)
	}
}

// The request's excluded agents (seed 000: "agents to exclude") hold whichever planner plans
// and whichever router routes: a router choosing at run time is not offered one the request
// excludes, and one it chose anyway is refused. It was offered and run.
func TestRouterNotOfferedExcludedAgents(t *testing.T) {
	var offered []string
	pick := troupe.RouterFunc(func(_ context.Context, in troupe.RouteInput, _ troupe.Context) (troupe.RoutingDecision, error) {
		offered = in.Available
		return troupe.RoutingDecision{Target: in.Available[0], Reason: "first available"}, nil
	})
	p := &troupe.Plan{Stages: []troupe.PlanStage{{Tasks: []troupe.Task{{ID: "t1"}}}}}
	banned := troupetest.NewScript()
	eng := newEngine(t, engine.Config{Registry: agents(t, "banned", banned, "ok", troupetest.NewScript()), Planner: staticPlan(p), Router: pick})
	run(t, eng, troupe.Request{Query: "q", Criteria: &troupe.SelectionCriteria{IntentType: "x", ExcludedAgents: []string{"banned"}}})
	if banned.Calls() != 0 || slices.Contains(offered, "banned") {
		t.Errorf("excluded agent ran %d times; the router was offered %v", banned.Calls(), offered)
	}
	// A router that chooses it anyway is refused, saying why.
	stubborn := troupe.RouterFunc(func(context.Context, troupe.RouteInput, troupe.Context) (troupe.RoutingDecision, error) {
		return troupe.RoutingDecision{Target: "banned", Reason: "always"}, nil
	})
	eng = newEngine(t, engine.Config{Registry: agents(t, "banned", banned, "ok", troupetest.NewScript()), Planner: staticPlan(p), Router: stubborn})
	evs := run(t, eng, troupe.Request{Query: "q", Criteria: &troupe.SelectionCriteria{IntentType: "x", ExcludedAgents: []string{"banned"}}})
	if o := outcome(t, evs); banned.Calls() != 0 || o.Error == nil || !strings.Contains(o.Error.Message, "exclude") {
		t.Errorf("a router's choice of an excluded agent: it ran %d times, outcome %+v", banned.Calls(), o.Error)
	}
}

// A request that brings its criteria in its parsed query (excluded_agents, as
// plan.CriteriaFromParsed reads it) has them hold under the default planner too, as the
// Request's doc says the planner derives them; the default planner ignored them.
func TestDefaultPlannerHoldsCriteriaOfTheParsedQuery(t *testing.T) {
	b := troupetest.NewScript()
	eng := newEngine(t, engine.Config{Registry: agents(t, "a", troupetest.NewScript(), "b", b)})
	evs := run(t, eng, troupe.Request{Query: "q", ParsedQuery: map[string]any{"intent": "causal", "excluded_agents": []any{"b"}}})
	if b.Calls() != 0 {
		p := troupetest.Find(evs, troupe.KindPlanCreated, "")[0].Data.(*troupe.Plan)
		t.Errorf("excluded agent b ran %d times; plan %v, criteria %+v", b.Calls(), p.ExecutionPlan(), p.Criteria)
	}
}
