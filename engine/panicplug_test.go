package engine_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/engine"
	"github.com/troupehq/troupe/store/memory"
	"github.com/troupehq/troupe/troupetest"
)

// A planner and a router are the user's code: a panic in either fails the run with code
// PANIC and the stack, on whichever goroutine advances the run, and the engine closes after.
func TestPlannerOrRouterPanicFailsTheRun(t *testing.T) {
	boom := func(at int) troupe.Router {
		var n atomic.Int32
		return troupe.RouterFunc(func(_ context.Context, in troupe.RouteInput, _ troupe.Context) (troupe.RoutingDecision, error) {
			if int(n.Add(1)) == at {
				panic("router bug")
			}
			return troupe.RoutingDecision{Target: in.Task.Agent, Reason: "planned"}, nil
		})
	}
	tests := []struct {
		name    string
		planner troupe.Planner
		router  troupe.Router
		stage   troupe.Stage
		want    string
	}{
		{"planner", troupe.PlannerFunc(func(*troupe.Request, troupe.Catalog) (*troupe.Plan, error) { panic("planner bug") }), nil,
			troupe.StagePlan, "the planner panicked: planner bug"},
		{"router in the first stage", chain("a", "b"), boom(1), troupe.StageRoute, "routing task a: the router panicked: router bug"},
		{"router in a later stage", chain("a", "b"), boom(2), troupe.StageRoute, "routing task b: the router panicked: router bug"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eng, err := engine.New(engine.Config{Registry: agents(t, "a", troupe.AgentFunc(noop), "b", troupe.AgentFunc(noop)),
				Planner: tt.planner, Router: tt.router, Seed: 7})
			if err != nil {
				t.Fatal(err)
			}
			evs, err := troupetest.Collect(eng.Run(t.Context(), troupe.Request{Query: "q"}))
			if err != nil {
				t.Fatal(err)
			}
			troupetest.CheckLog(t, evs)
			o := outcome(t, evs)
			if o.Status != troupe.RunFailed || o.Error == nil || o.Error.Code != troupe.CodePanic || !strings.Contains(o.Error.Message, tt.want) {
				t.Fatalf("outcome %+v, error %+v, want failed with PANIC %q", o, o.Error, tt.want)
			}
			if st, _ := o.Error.Details["stack"].(string); !strings.Contains(st, "panicplug_test.go") {
				t.Errorf("details %v lack the panicking frame's stack", o.Error.Details)
			}
			if ev := evs[len(evs)-1]; ev.Kind != troupe.KindRunFailed {
				t.Errorf("last event %s", ev.Kind)
			}
			if err := eng.Close(t.Context()); err != nil {
				t.Errorf("close: %v", err)
			}
		})
	}
}

// failOnKind fails the first append that holds an event of kind: the process "dies" there.
type failOnKind struct {
	troupe.Store
	kind  troupe.Kind
	fired atomic.Bool
}

var errTerminal = errors.New("disk gone at the end")

func (s *failOnKind) Append(ctx context.Context, evs ...troupe.Event) error {
	for _, ev := range evs {
		if ev.Kind == s.kind && s.fired.CompareAndSwap(false, true) {
			return errTerminal
		}
	}
	return s.Store.Append(ctx, evs...)
}

// A run whose terminal event was not recorded resumes to its end without recording its
// aggregation twice.
func TestResumeRecordsTheAggregationOnce(t *testing.T) {
	mem := memory.New()
	reg := agents(t, "a", troupe.AgentFunc(noop), "b", troupe.AgentFunc(noop))
	eng := newEngine(t, engine.Config{Registry: reg, Planner: group(2, "a", "b"), Store: &failOnKind{Store: mem, kind: troupe.KindRunCompleted}})
	if _, err := troupetest.Collect(eng.Run(t.Context(), troupe.Request{Query: "q", RunID: "run_agg"})); !errors.Is(err, errTerminal) {
		t.Fatalf("run error %v, want the store's", err)
	}
	r, err := newEngine(t, engine.Config{Registry: reg, Planner: group(2, "a", "b"), Store: mem}).Resume(t.Context(), "run_agg", engine.ResumeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	evs, err := mem.Events(t.Context(), "run_agg", 0)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(troupetest.Find(evs, troupe.KindRunAggregated, "")); n != 1 {
		t.Errorf("%d run_aggregated events, want 1", n)
	}
	if last := evs[len(evs)-1]; last.Kind != troupe.KindRunCompleted {
		t.Errorf("log ends with %s", last.Kind)
	}
}

// A planner that returns neither a plan nor an error fails the run before any plan is recorded, saying so, and
// the engine closes after; Engine.Plan reports it, and a panicking planner, as errors.
func TestPlannerWithoutPlanFailsTheRun(t *testing.T) {
	none := troupe.PlannerFunc(func(*troupe.Request, troupe.Catalog) (*troupe.Plan, error) { return nil, nil })
	eng, err := engine.New(engine.Config{Registry: agents(t, "a", troupe.AgentFunc(noop)), Planner: none})
	if err != nil {
		t.Fatal(err)
	}
	evs, err := troupetest.Collect(eng.Run(t.Context(), troupe.Request{Query: "q"}))
	if err != nil {
		t.Fatal(err)
	}
	troupetest.CheckLog(t, evs)
	const want = "the planner returned neither a plan nor an error"
	o := outcome(t, evs)
	if o.Status != troupe.RunFailed || o.Error == nil || !strings.Contains(o.Error.Message, want) {
		t.Fatalf("outcome %+v, error %+v, want failed: %q", o, o.Error, want)
	}
	if n := len(troupetest.Find(evs, troupe.KindPlanCreated, "")); n != 0 {
		t.Errorf("%d plan_created events, want none", n)
	}
	if err := eng.Close(t.Context()); err != nil {
		t.Errorf("close: %v", err)
	}
	if p, err := eng.Plan(troupe.Request{Query: "q"}); p != nil || err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Plan = %v, %v; want the error %q", p, err, want)
	}
	boom := troupe.PlannerFunc(func(*troupe.Request, troupe.Catalog) (*troupe.Plan, error) { panic("planner bug") })
	eng, err = engine.New(engine.Config{Registry: agents(t, "a", troupe.AgentFunc(noop)), Planner: boom})
	if err != nil {
		t.Fatal(err)
	}
	if p, err := eng.Plan(troupe.Request{Query: "q"}); p != nil || err == nil || !strings.Contains(err.Error(), "the planner panicked: planner bug") {
		t.Errorf("Plan with a panicking planner = %v, %v; want an error naming the panic", p, err)
	}
}

// A guardrail whose dispatch check panics fails the dispatch before the agent runs, with code
// PANIC and a message naming the guardrail, not the agent, as a panicking result check does.
func TestDispatchGuardrailPanicNamesTheGuardrail(t *testing.T) {
	var ran atomic.Bool
	reg := agents(t, "a", troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		ran.Store(true)
		return &troupe.Result{AgentResult: map[string]any{"x": 1}}, nil
	}))
	g := troupe.GuardrailFuncs{ID: "pii", Before: func(context.Context, *troupe.Dispatch) troupe.Verdict { panic("bad regexp") }}
	eng := newEngine(t, engine.Config{Registry: reg, Planner: chain("a")})
	evs, err := troupetest.Collect(eng.Run(t.Context(), troupe.Request{Query: "q", Guardrails: []troupe.Guardrail{g}}))
	if err != nil {
		t.Fatal(err)
	}
	troupetest.CheckFinishedLog(t, evs)
	if ran.Load() {
		t.Error("the agent ran although its dispatch check panicked")
	}
	rs := results(evs)["a"]
	if len(rs) != 1 || len(rs[0].Errors) == 0 {
		t.Fatalf("results of a: %+v", rs)
	}
	e := rs[0].Errors[0]
	if e.Code != troupe.CodePanic || e.Message != "guardrail pii panicked: bad regexp" {
		t.Errorf("error %s %q, want PANIC %q", e.Code, e.Message, "guardrail pii panicked: bad regexp")
	}
	if st, _ := e.Details["stack"].(string); !strings.Contains(st, "panicplug_test.go") {
		t.Errorf("details %v lack the panicking frame's stack", e.Details)
	}
}
