package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

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
// fallback; when the fallback fails too, the FAILED event's data says which fallback ran.
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
		data, _ := json.Marshal(last.Data)
		var m map[string]any
		_ = json.Unmarshal(data, &m)
		if _, ok := m["fallback"]; !ok {
			t.Errorf(`FAILED event data has no "fallback": %s`, data)
		}
	})
}

// Seed 000, testing requirement 2 at the engine: an agent response that fails validation is
// recorded as invalid, with the agent's output kept, never accepted.
func TestSeed000InvalidResponseRecorded(t *testing.T) {
	cases := map[string]troupetest.Step{
		"completed without agent_result": func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
			return &troupe.Result{AnalysisSummary: troupe.Ptr("done")}, nil
		},
		"confidence out of range": func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
			return &troupe.Result{AgentResult: map[string]any{"x": 1}, Confidence: troupe.Ptr(1.5)}, nil
		},
		"next_agent unknown": func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
			return &troupe.Result{AgentResult: map[string]any{"x": 1}, NextAgent: troupe.Ptr("nobody")}, nil
		},
		"failed without errors": func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
			return &troupe.Result{Status: troupe.StatusFailed}, nil
		},
	}
	for name, step := range cases {
		t.Run(name, func(t *testing.T) {
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
