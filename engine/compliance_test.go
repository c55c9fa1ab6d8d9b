package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/engine"
	"github.com/troupehq/troupe/troupetest"
)

// Seed 001, compliance test 1: the orchestrator emits stages in order.
func TestLifecycleStages(t *testing.T) {
	eng := newEngine(t, engine.Config{Registry: agents(t, "worker", troupetest.NewScript()), Planner: chain("worker")})
	evs := run(t, eng, troupe.Request{Query: "test goal", Context: troupe.NewContext("test", "demo")})
	want := []troupe.Stage{troupe.StageInitialize, troupe.StagePlan, troupe.StageRoute, troupe.StageExecute, troupe.StageAggregate, troupe.StageComplete}
	if diff := cmp.Diff(want, troupetest.Stages(evs)); diff != "" {
		t.Errorf("stages (-want +got):\n%s", diff)
	}
	wantKinds := []troupe.Kind{troupe.KindRunInitialized, troupe.KindPlanCreated, troupe.KindRouteDecided, troupe.KindDispatchStarted,
		troupe.KindDispatchCompleted, troupe.KindRunAggregated, troupe.KindRunCompleted}
	if diff := cmp.Diff(wantKinds, troupetest.Kinds(evs)); diff != "" {
		t.Errorf("kinds (-want +got):\n%s", diff)
	}
}

// Seed 001, compliance test 2: the trace id flows through every event — and into results.
func TestTracePropagation(t *testing.T) {
	const traceID = "unique-trace-123"
	reg := agents(t, "a", troupetest.NewScript(), "b", troupetest.NewScript(), "c", troupetest.NewScript())
	eng := newEngine(t, engine.Config{Registry: reg, Planner: staticPlan(&troupe.Plan{Stages: []troupe.PlanStage{
		{Tasks: []troupe.Task{{ID: "a", Agent: "a"}}}, {Tasks: []troupe.Task{{ID: "b", Agent: "b"}, {ID: "c", Agent: "c"}}, MaxConcurrency: 2},
	}})})
	evs := run(t, eng, troupe.Request{Query: "test", Context: troupe.NewContext(traceID, "demo").WithMetadata("user", "u1")})
	for _, ev := range evs {
		if got := ev.Context.TraceID(); got != traceID {
			t.Errorf("event %d (%s): trace id %q, want %q", ev.Seq, ev.Kind, got, traceID)
		}
		if got := ev.Context.Profile(); got != "demo" {
			t.Errorf("event %d: profile %q", ev.Seq, got)
		}
		if r, ok := ev.Data.(*troupe.Result); ok && (r.TraceID == nil || *r.TraceID != traceID) {
			t.Errorf("result of %s carries trace id %v", r.AgentName, r.TraceID)
		}
	}
}

// Seed 001, compliance test 4: with the FALLBACK strategy a failing step is recovered by its
// fallback; when the run fails, the FAILED event's data has "fallback" (which fallbacks ran,
// {} when none did), as the test asserts of every FAILED event.
func TestErrorRecovery(t *testing.T) {
	pol := troupe.ErrorPolicy{OnError: troupe.Fallback, FallbackAgents: map[string][]string{"primary": {"backup"}},
		Retry: troupe.RetryPolicy{MaxAttempts: 1}}
	t.Run("fallback succeeds", func(t *testing.T) {
		primary, backup := troupetest.NewScript(troupetest.Fail(troupe.CodeAgentError, true)), troupetest.NewScript()
		eng := newEngine(t, engine.Config{Registry: agents(t, "primary", primary, "backup", backup), Planner: chain("primary"), Policy: pol})
		r, err := eng.Start(t.Context(), troupe.Request{Query: "test", Context: troupe.NewContext("err", "demo")})
		if err != nil {
			t.Fatal(err)
		}
		evs, err := troupetest.Collect(r.Events(t.Context()))
		if err != nil {
			t.Fatal(err)
		}
		out := outcome(t, evs)
		st := r.State()
		if _, ok := st.FailedAgents["primary"]; !ok || len(st.CompletedAgents) != 1 || st.CompletedAgents["backup"] == nil {
			t.Errorf("state failed %v completed %v: want primary failed and backup completed", slices.Sorted(maps.Keys(st.FailedAgents)), slices.Sorted(maps.Keys(st.CompletedAgents)))
		}
		if out.Status != troupe.RunCompleted || out.Fallback["primary"] != "backup" {
			t.Fatalf("outcome %+v, want completed with fallback primary→backup", out)
		}
		if primary.Calls() != 1 || backup.Calls() != 1 {
			t.Errorf("calls primary=%d backup=%d, want 1 and 1", primary.Calls(), backup.Calls())
		}
		routes := troupetest.Find(evs, troupe.KindRouteDecided, "backup")
		if len(routes) != 1 || routes[0].Data.(*troupe.RoutingDecision).Metadata["primary"] != "primary" {
			t.Errorf("want one ROUTE event to backup naming the primary, got %+v", routes)
		}
		if d := troupetest.Find(evs, troupe.KindRouteDecided, "primary")[0].Data.(*troupe.RoutingDecision); d.Fallback != "backup" {
			t.Errorf("the primary's decision should name its fallback, got %+v", d)
		}
	})
	t.Run("fallback fails", func(t *testing.T) {
		fail := troupetest.Fail(troupe.CodeAgentError, true)
		eng := newEngine(t, engine.Config{Registry: agents(t, "primary", troupetest.NewScript(fail), "backup", troupetest.NewScript(fail)),
			Planner: chain("primary"), Policy: pol})
		evs := run(t, eng, troupe.Request{Query: "test", Context: troupe.NewContext("err", "demo")})
		last := troupetest.Last(evs)
		if last.Stage != troupe.StageFailed {
			t.Fatalf("last stage %s, want failed", last.Stage)
		}
		if got := failedEventFallback(t, last); !cmp.Equal(got, map[string]any{"primary": "backup"}) {
			t.Errorf(`FAILED event's "fallback" is %v, want primary→backup`, got)
		}
	})
	t.Run("no fallback to take", func(t *testing.T) {
		fail := troupetest.Fail(troupe.CodeAgentError, true)
		eng := newEngine(t, engine.Config{Registry: agents(t, "lonely", troupetest.NewScript(fail)), Planner: chain("lonely"),
			Policy: troupe.ErrorPolicy{OnError: troupe.Fallback, Retry: troupe.RetryPolicy{MaxAttempts: 1}}})
		evs := run(t, eng, troupe.Request{Query: "test", Context: troupe.NewContext("err", "demo")})
		last := troupetest.Last(evs)
		if last.Stage != troupe.StageFailed {
			t.Fatalf("last stage %s, want failed", last.Stage)
		}
		if got := failedEventFallback(t, last); !cmp.Equal(got, map[string]any{}) {
			t.Errorf(`FAILED event's "fallback" is %v, want {}`, got)
		}
	})
}

// failedEventFallback returns the "fallback" member of a FAILED event's data as JSON has it,
// failing the test when the member is missing.
func failedEventFallback(t *testing.T, ev troupe.Event) any {
	t.Helper()
	data, err := json.Marshal(ev.Data)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	fb, ok := m["fallback"]
	if !ok {
		t.Errorf(`FAILED event data has no "fallback": %s`, data)
	}
	return fb
}

// Seed 000, testing requirement 2 at the engine: an agent response that fails validation is
// recorded as invalid, with the agent's output kept, never accepted.
func TestSeed000InvalidResponseRecorded(t *testing.T) {
	cases := map[string]*troupe.Result{
		"completed without agent_result": {AnalysisSummary: troupe.Ptr("done"), Warnings: []string{"thin"}},
		"confidence out of range":        {AgentResult: map[string]any{"x": 1}, Confidence: troupe.Ptr(1.5)},
		"next_agent unknown":             {AgentResult: map[string]any{"x": 1}, NextAgent: troupe.Ptr("nobody"), Handoff: map[string]any{"to": "nobody"}},
		"failed without errors":          {Status: troupe.StatusFailed, AgentResult: map[string]any{"half": true}},
	}
	for name, out := range cases {
		t.Run(name, func(t *testing.T) {
			step := func(context.Context, *troupe.Dispatch) (*troupe.Result, error) { return out, nil }
			eng := newEngine(t, engine.Config{Registry: agents(t, "a", troupetest.NewScript(step)), Planner: chain("a")})
			evs := run(t, eng, troupe.Request{Query: "q"})
			failed := troupetest.Find(evs, troupe.KindDispatchFailed, "a")
			if len(failed) != 1 {
				t.Fatalf("want the dispatch recorded as failed, kinds %v", troupetest.Kinds(evs))
			}
			r := failed[0].Data.(*troupe.Result)
			if r.Errors[len(r.Errors)-1].Code != troupe.CodeInvalidOutput {
				t.Errorf("errors %+v, want INVALID_OUTPUT", r.Errors)
			}
			// The agent's output is kept as it came, beside the engine's fields and the error.
			kept := cmpopts.IgnoreFields(troupe.Result{}, "DispatchID", "SessionID", "QueryID", "AgentName", "Status", "Errors",
				"ExecutionTimeMS", "StartedAt", "CompletedAt", "TraceID")
			if diff := cmp.Diff(out, r, kept); diff != "" {
				t.Errorf("the recorded result does not keep the agent's output (-agent +recorded):\n%s", diff)
			}
			if troupetest.Last(evs).Stage != troupe.StageFailed {
				t.Errorf("run should fail under fail_fast, ended %s", troupetest.Last(evs).Kind)
			}
		})
	}
}

// Seed 000, testing requirement 5: errors handled per policy, fallbacks triggered
// appropriately, partial results returned when allowed. (Each branch is in TestPolicyBranches.)
func TestSeed000ErrorPropagation(t *testing.T) {
	fail := troupetest.Fail(troupe.CodeAgentError, true)
	reg := func() *troupe.Registry {
		return agents(t, "a", troupetest.NewScript(), "b", troupetest.NewScript(fail), "c", troupetest.NewScript(), "fb", troupetest.NewScript())
	}
	t.Run("partial results returned when allowed", func(t *testing.T) {
		eng := newEngine(t, engine.Config{Registry: reg(), Planner: group(3, "a", "b", "c"), Policy: troupe.ErrorPolicy{OnError: troupe.Continue}})
		evs := run(t, eng, troupe.Request{Query: "q"})
		out := outcome(t, evs)
		if out.Status != troupe.RunCompleted || !cmp.Equal(out.Failed, []string{"b"}) {
			t.Fatalf("outcome %+v, want completed with b failed", out)
		}
		agg := troupetest.Find(evs, troupe.KindRunAggregated, "")[0].Data.(*troupe.Aggregation)
		if !cmp.Equal(agg.AgentsExecuted, []string{"a", "c"}) {
			t.Errorf("aggregated %v, want a and c", agg.AgentsExecuted)
		}
	})
	t.Run("partial results refused when not allowed", func(t *testing.T) {
		eng := newEngine(t, engine.Config{Registry: reg(), Planner: group(3, "a", "b", "c"),
			Policy: troupe.ErrorPolicy{OnError: troupe.Continue, AllowPartialResults: troupe.Ptr(false)}})
		evs := run(t, eng, troupe.Request{Query: "q"})
		if out := outcome(t, evs); out.Status != troupe.RunFailed {
			t.Fatalf("outcome %+v, want failed", out)
		}
	})
	t.Run("fallback triggered only for the failing agent", func(t *testing.T) {
		eng := newEngine(t, engine.Config{Registry: reg(), Planner: group(3, "a", "b", "c"),
			Policy: troupe.ErrorPolicy{OnError: troupe.Fallback, FallbackAgents: map[string][]string{"b": {"fb"}, "a": {"fb"}}, Retry: troupe.RetryPolicy{MaxAttempts: 1}}})
		evs := run(t, eng, troupe.Request{Query: "q"})
		out := outcome(t, evs)
		if out.Status != troupe.RunCompleted || !cmp.Equal(out.Fallback, map[string]string{"b": "fb"}) {
			t.Fatalf("outcome %+v, want completed with only b falling back", out)
		}
	})
}

// A failing run's error is an *OrchestrationError with the stage, the trace id and the cause.
func TestWaitReturnsOrchestrationError(t *testing.T) {
	eng := newEngine(t, engine.Config{Registry: agents(t, "a", troupetest.NewScript(troupetest.Fail("RAG_EMPTY", false))), Planner: chain("a")})
	r, err := eng.Start(t.Context(), troupe.Request{Query: "q", Context: troupe.NewContext("trace-9", "")})
	if err != nil {
		t.Fatal(err)
	}
	st, err := r.Wait(t.Context())
	var oe *troupe.OrchestrationError
	if !errors.As(err, &oe) {
		t.Fatalf("Wait error %v, want *OrchestrationError", err)
	}
	if oe.Stage != troupe.StageExecute || oe.Context.TraceID() != "trace-9" || oe.Metadata["code"] != "RAG_EMPTY" {
		t.Errorf("error %+v", oe)
	}
	if st.Status != troupe.RunFailed || len(st.FailedAgents) != 1 {
		t.Errorf("state %+v", st)
	}
}

// Wait's error unwraps to what failed the run (seed 001: the error carries its cause):
// errors.Is finds the sentinel of the failure's code and errors.As the agent's *AgentError.
func TestWaitCause(t *testing.T) {
	block := troupe.GuardrailFuncs{ID: "gate", Before: func(context.Context, *troupe.Dispatch) troupe.Verdict {
		return troupe.Verdict{Block: true, Reason: "closed"}
	}}
	stuck := troupe.AgentFunc(func(ctx context.Context, _ *troupe.Dispatch) (*troupe.Result, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	spend := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{AgentResult: map[string]any{"ok": true}, CostDollars: troupe.Ptr(1.0)}, nil
	})
	errPlanner := errors.New("no rule for this intent")
	cases := []struct {
		name string
		cfg  engine.Config
		req  troupe.Request
		is   error
		code string // of the *AgentError, when an agent's error failed the run
	}{
		{"blocked", engine.Config{Registry: agents(t, "a", troupetest.NewScript()), Planner: chain("a")},
			troupe.Request{Query: "q", Guardrails: []troupe.Guardrail{block}}, troupe.ErrBlocked, troupe.CodeBlocked},
		{"timed out", engine.Config{Registry: agents(t, "a", opt(stuck, troupe.WithTimeout(10*time.Millisecond))), Planner: chain("a"),
			Policy: troupe.ErrorPolicy{OnTimeout: troupe.TimeoutFailFast}}, troupe.Request{Query: "q"}, troupe.ErrTimeout, troupe.CodeTimeout},
		{"agent error", engine.Config{Registry: agents(t, "a", troupetest.NewScript(troupetest.Fail(troupe.CodeRAGEmpty, false))), Planner: chain("a")},
			troupe.Request{Query: "q"}, nil, troupe.CodeRAGEmpty},
		{"budget", engine.Config{Registry: agents(t, "a", spend, "b", spend, "c", spend), Planner: chain("a", "b", "c")},
			troupe.Request{Query: "q", Budget: troupe.Budget{MaxCostDollars: 1}}, troupe.ErrBudgetExhausted, ""},
		{"planning", engine.Config{Registry: agents(t, "a", spend), Planner: troupe.PlannerFunc(func(*troupe.Request, troupe.Catalog) (*troupe.Plan, error) {
			return nil, errPlanner
		})}, troupe.Request{Query: "q"}, errPlanner, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := newEngine(t, tc.cfg).Start(t.Context(), tc.req)
			if err != nil {
				t.Fatal(err)
			}
			_, err = r.Wait(t.Context())
			var oe *troupe.OrchestrationError
			if !errors.As(err, &oe) || oe.Cause == nil {
				t.Fatalf("Wait: %v, want an *OrchestrationError with a cause", err)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("Wait: %v, want it to match %v", err, tc.is)
			}
			var ae *troupe.AgentError
			if got := errors.As(err, &ae); got != (tc.code != "") || got && ae.Code != tc.code {
				t.Errorf("Wait: %v: *AgentError %+v, want code %q", err, ae, tc.code)
			}
			if strings.Count(err.Error(), oe.Cause.Error()) != 1 {
				t.Errorf("Wait: %q says its cause %q more than once", err, oe.Cause)
			}
		})
	}
}

// Seed 000: "Validate dispatch request before sending to agent". Every dispatch the engine
// records passes Dispatch.Validate against the registry, in runs with parallel groups,
// concurrency caps, retries with backoff, fallbacks (the policy's and a router's), task-id
// dependencies, routed tasks, per-agent timeouts and a cost budget.
func TestEveryDispatchValidates(t *testing.T) {
	fail := troupetest.Fail(troupe.CodeAgentError, true)
	ok := troupetest.OK(nil)
	costly := func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{AgentResult: map[string]any{"ok": true}, CostDollars: troupe.Ptr(0.01)}, nil
	}
	reg := agents(t,
		"intake", troupetest.NewScript(costly),
		"flaky", troupetest.NewScript(fail, fail, ok), // two retries, then completes
		"broken", troupetest.NewScript(fail),
		"spare", troupetest.NewScript(),
		"wide1", troupetest.NewScript(), "wide2", troupetest.NewScript(), "wide3", troupetest.NewScript(),
		"summary", troupetest.NewScript())
	p := &troupe.Plan{Stages: []troupe.PlanStage{
		{Tasks: []troupe.Task{{ID: "t-intake", Agent: "intake", Reason: "first"}}},
		{MaxConcurrency: 2, Tasks: []troupe.Task{
			{ID: "t-flaky", Agent: "flaky", Reason: "retried", DependsOn: []string{"t-intake"}},
			{ID: "t-broken", Agent: "broken", Reason: "falls back", DependsOn: []string{"intake"}},
			{ID: "t-routed", Reason: "the router picks", DependsOn: []string{"t-intake"}},
		}},
		{MaxConcurrency: 3, Tasks: []troupe.Task{
			{ID: "w1", Agent: "wide1", Reason: "fan-out", DependsOn: []string{"t-routed", "t-flaky"}},
			{ID: "w2", Agent: "wide2", Reason: "fan-out"},
			{ID: "w3", Agent: "wide3", Reason: "fan-out", DependsOn: []string{"t-broken"}},
		}},
		{Tasks: []troupe.Task{{ID: "t-summary", Agent: "summary", Reason: "last", DependsOn: []string{"w1", "w2", "w3"}}}},
	}}
	router := troupe.RouterFunc(func(_ context.Context, in troupe.RouteInput, _ troupe.Context) (troupe.RoutingDecision, error) {
		if in.Task.Agent == "" {
			return troupe.RoutingDecision{Target: "wide2", Reason: "picked", Fallback: "spare"}, nil
		}
		return troupe.RoutingDecision{Target: in.Task.Agent, Reason: "planned"}, nil
	})
	policy := troupe.ErrorPolicy{OnError: troupe.Fallback, FallbackAgents: map[string][]string{"broken": {"spare"}},
		Retry: troupe.RetryPolicy{MaxAttempts: 3, Initial: time.Millisecond}}
	eng := newEngine(t, engine.Config{Registry: reg, Planner: staticPlan(p), Router: router, Policy: policy})
	evs := run(t, eng, troupe.Request{Query: "q", Timeouts: map[string]float64{"flaky": 5}, Budget: troupe.Budget{MaxCostDollars: 5}})
	if out := outcome(t, evs); out.Status != troupe.RunCompleted {
		t.Fatalf("outcome %+v", out)
	}
	if n := len(troupetest.Find(evs, troupe.KindRetryScheduled, "")); n != 4 {
		t.Errorf("%d retries, want 4: flaky's two, and broken's two before its fallback", n)
	}
	if n := len(troupetest.Find(evs, troupe.KindDispatchStarted, "spare")); n != 1 {
		t.Errorf("%d fallback dispatches, want 1", n)
	}
	deps := map[string][]string{}
	for _, ev := range troupetest.Find(evs, troupe.KindDispatchStarted, "") {
		d := ev.Data.(*troupe.Dispatch)
		if err := d.Validate(reg); err != nil {
			t.Errorf("dispatch %s to %s: %v", d.DispatchID, d.TargetAgent, err)
		}
		deps[d.TargetAgent] = d.DependsOn
	}
	want := map[string][]string{
		"intake": nil, "flaky": {"intake"}, "broken": {"intake"}, "spare": {"intake"}, "wide2": nil,
		"wide1": {"wide2", "flaky"}, "wide3": {"broken"}, "summary": {"wide1", "wide2", "wide3"},
	}
	if diff := cmp.Diff(want, deps, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("depends_on by agent (-want +got):\n%s", diff)
	}
}

// A plan whose dependencies name no agent, or a task that does not run before, would make
// dispatches seed 000 refuses: the run fails at PLAN, saying which field, and no agent runs.
func TestInvalidPlanDependencies(t *testing.T) {
	for _, tc := range []struct {
		name string
		deps []string
		want string
	}{
		{"unknown name", []string{"t1", "ghost"}, `task "t2": depends_on[1]: "ghost" names neither a task of the plan nor a registered agent`},
		{"same stage", []string{"t3"}, `task "t2": depends_on[0]: task "t3" is in stage 2, not in an earlier one`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := troupetest.NewScript()
			p := &troupe.Plan{Stages: []troupe.PlanStage{
				{Tasks: []troupe.Task{{ID: "t1", Agent: "a"}}},
				{Tasks: []troupe.Task{{ID: "t2", Agent: "a", DependsOn: tc.deps}, {ID: "t3", Agent: "a"}}},
			}}
			evs := run(t, newEngine(t, engine.Config{Registry: agents(t, "a", a), Planner: staticPlan(p)}), troupe.Request{Query: "q"})
			last := troupetest.Last(evs)
			if out := last.Data.(*troupe.Outcome); last.Stage != troupe.StageFailed || out.Error.Code != troupe.CodeInvalidRequest || !strings.Contains(out.Error.Message, tc.want) {
				t.Errorf("ended %s %+v, want failed saying %s", last.Kind, last.Data.(*troupe.Outcome).Error, tc.want)
			}
			if a.Calls() != 0 || len(troupetest.Find(evs, troupe.KindPlanCreated, "")) != 0 {
				t.Errorf("the invalid plan was recorded or run (%d calls)", a.Calls())
			}
		})
	}
}

// A dispatch the engine cannot make valid (a router named a fallback that is no agent) is
// recorded as failed, its error naming the field, and never sent; the policy goes on from there.
func TestInvalidDispatchNotSent(t *testing.T) {
	router := troupe.RouterFunc(func(_ context.Context, in troupe.RouteInput, _ troupe.Context) (troupe.RoutingDecision, error) {
		return troupe.RoutingDecision{Target: in.Task.Agent, Reason: "planned", Fallback: "ghost"}, nil
	})
	spare := troupetest.NewScript()
	eng := newEngine(t, engine.Config{Registry: agents(t, "a", troupetest.NewScript(troupetest.Fail(troupe.CodeAgentError, false)), "spare", spare),
		Planner: chain("a"), Router: router,
		Policy: troupe.ErrorPolicy{OnError: troupe.Fallback, FallbackAgents: map[string][]string{"a": {"spare"}}}})
	evs := run(t, eng, troupe.Request{Query: "q"})
	failed := troupetest.Find(evs, troupe.KindDispatchFailed, "ghost")
	if len(failed) != 1 {
		t.Fatalf("kinds %v: want ghost's dispatch recorded as failed", troupetest.Kinds(evs))
	}
	if e := failed[0].Data.(*troupe.Result).Errors[0]; e.Code != troupe.CodeInvalidRequest || e.Recoverable ||
		!strings.Contains(e.Message, `field "target_agent": invalid target agent: ghost`) || !strings.Contains(e.Message, "not sent") {
		t.Errorf("ghost's error %+v, want INVALID_REQUEST naming target_agent", e)
	}
	if out := outcome(t, evs); out.Status != troupe.RunCompleted || spare.Calls() != 1 {
		t.Errorf("outcome %+v, spare ran %d times: want the next fallback to complete the task", out, spare.Calls())
	}
}

// Seed 000's confidence_threshold is the "minimum acceptable confidence": an answer under it
// stands, with a warning naming the agents below it.
func TestConfidenceUnderThreshold(t *testing.T) {
	sure := func(c float64) troupe.AgentFunc {
		return func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
			return &troupe.Result{AgentResult: map[string]any{"c": c}, Confidence: troupe.Ptr(c)}, nil
		}
	}
	tests := []struct {
		name      string
		threshold *float64
		want      []string
	}{
		{"default 0.7, met", nil, nil},
		{"0.85, not met", troupe.Ptr(0.85), []string{"overall confidence 0.80 is under the confidence threshold 0.85: b 0.80"}},
		{"0.95, not met by either", troupe.Ptr(0.95), []string{"overall confidence 0.80 is under the confidence threshold 0.95: a 0.90, b 0.80"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := chainPlan([]string{"a", "b"})
			p.Criteria = &troupe.SelectionCriteria{IntentType: "causal", ConfidenceThreshold: tt.threshold}
			eng := newEngine(t, engine.Config{Registry: agents(t, "a", sure(0.9), "b", sure(0.8)), Planner: staticPlan(p)})
			evs := run(t, eng, troupe.Request{Query: "q"})
			agg := troupetest.Find(evs, troupe.KindRunAggregated, "")[0].Data.(*troupe.Aggregation)
			if diff := cmp.Diff(tt.want, agg.Warnings, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
			if o := outcome(t, evs); o.Status != troupe.RunCompleted {
				t.Errorf("status %s, want completed: the answer stands", o.Status)
			}
		})
	}
}

// JSON has no NaN or infinity: a result holding one is recorded as invalid, what the agent
// said kept with each such number as its text, and the whole log still encodes.
func TestNonFiniteOutputRecordedInvalid(t *testing.T) {
	odd := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{AgentResult: map[string]any{"effect": map[string]any{"ci": []any{-0.2, math.Inf(1)}}, "n": 3}, Confidence: troupe.Ptr(0.9)}, nil
	})
	eng := newEngine(t, engine.Config{Registry: agents(t, "odd", odd, "b", troupe.AgentFunc(noop)), Planner: chain("odd", "b"),
		Policy: troupe.ErrorPolicy{OnError: troupe.Continue}})
	evs := run(t, eng, troupe.Request{Query: "q"})
	failed := troupetest.Find(evs, troupe.KindDispatchFailed, "odd")
	if len(failed) != 1 {
		t.Fatalf("%d dispatch_failed events for odd, want 1", len(failed))
	}
	res := failed[0].Data.(*troupe.Result)
	if len(res.Errors) != 1 || res.Errors[0].Code != troupe.CodeInvalidOutput ||
		!strings.Contains(res.Errors[0].Message, "agent_result.effect.ci[1] is +Inf, which JSON cannot encode") {
		t.Errorf("errors %+v", res.Errors)
	}
	if diff := cmp.Diff(map[string]any{"effect": map[string]any{"ci": []any{-0.2, "+Inf"}}, "n": 3}, res.AgentResult); diff != "" {
		t.Errorf("kept output (-want +got):\n%s", diff)
	}
	for _, ev := range evs {
		if _, err := json.Marshal(ev); err != nil {
			t.Errorf("%s does not encode: %v", ev.Kind, err)
		}
	}
}
