package engine_test

// Runs whose planned agents are composites (package flow): what the run gives them and takes
// from them at every depth.

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/engine"
	"github.com/troupehq/troupe/flow"
	"github.com/troupehq/troupe/troupetest"
)

// TestRunGuardrailsHoldInsideComposites: a request's guardrails check the members a planned
// composite runs itself, as they check planned dispatches: nesting an agent in a composite does
// not take it out of the run's policy.
func TestRunGuardrailsHoldInsideComposites(t *testing.T) {
	var shellRan atomic.Bool
	lint := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{AgentResult: map[string]any{"lint": "ok"}}, nil
	})
	shell := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		shellRan.Store(true)
		return &troupe.Result{AgentResult: map[string]any{"ran": "rm -rf /"}}, nil
	})
	policy := troupe.GuardrailFuncs{ID: "no_shell",
		Before: func(_ context.Context, d *troupe.Dispatch) troupe.Verdict {
			return troupe.Verdict{Block: d.TargetAgent == "shell", Reason: "shell agents are not allowed"}
		},
		After: func(context.Context, *troupe.Dispatch, *troupe.Result) troupe.Verdict {
			return troupe.Verdict{Annotations: map[string]any{"checked": true}}
		}}
	reg := troupe.NewRegistry()
	reg.MustAdd("team", flow.Sequential(flow.SequentialConfig{OnError: flow.ContinueOnError}, flow.Named("lint", lint), flow.Named("shell", shell)))
	eng := planOne(t, reg, "team")
	evs, err := troupetest.Collect(eng.Run(t.Context(), troupe.Request{Query: "q", Guardrails: []troupe.Guardrail{policy}}))
	if err != nil {
		t.Fatal(err)
	}
	if shellRan.Load() {
		t.Error("the run's guardrail did not stop the nested shell agent")
	}
	var blocked, annotated bool
	for _, ev := range evs {
		res, ok := ev.Data.(*troupe.Result)
		if !ok || ev.Parent == "" {
			continue
		}
		switch ev.Agent {
		case "shell":
			blocked = ev.Kind == troupe.KindDispatchFailed && len(res.Errors) > 0 && res.Errors[0].Code == troupe.CodeBlocked
		case "lint":
			annotated = res.Annotations["no_shell"] != nil
		}
	}
	if !blocked || !annotated {
		t.Errorf("nested shell blocked %v, nested lint annotated %v; want both", blocked, annotated)
	}
}

// TestFirstSuccessLoserQuestionDoesNotPauseTheRun: in a run with no human to answer, a losing
// branch of a FirstSuccess group asks a question; the group completes with its winner, and
// the question no longer holds the run, which completes rather than pausing.
func TestFirstSuccessLoserQuestionDoesNotPauseTheRun(t *testing.T) {
	asked := make(chan struct{})
	asker := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		defer close(asked)
		_, err := d.Ask(ctx, troupe.Question{Prompt: "which one?"})
		return nil, err
	})
	winner := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		<-asked
		return &troupe.Result{AgentResult: map[string]any{"answer": 42}}, nil
	})
	reg := troupe.NewRegistry()
	reg.MustAdd("group", flow.Parallel(flow.ParallelConfig{Strategy: flow.FirstSuccess}, flow.Named("asker", asker), flow.Named("winner", winner)))
	eng := planOne(t, reg, "group")
	r, err := eng.Start(t.Context(), troupe.Request{Query: "q"})
	if err != nil {
		t.Fatal(err)
	}
	st, err := r.Wait(t.Context())
	if err != nil || st.Status != troupe.RunCompleted || st.CompletedAgents["group"] == nil {
		t.Errorf("Wait = status %s, %v; want completed with the group's result", st.Status, err)
	}
}

// planOne returns an engine over reg whose every run plans one task, agent, closed when the
// test ends.
func planOne(t *testing.T, reg *troupe.Registry, agent string) *engine.Engine {
	t.Helper()
	eng, err := engine.New(engine.Config{Registry: reg, Planner: troupe.PlannerFunc(func(*troupe.Request, troupe.Catalog) (*troupe.Plan, error) {
		return &troupe.Plan{Stages: []troupe.PlanStage{{MaxConcurrency: 1, Tasks: []troupe.Task{{ID: agent, Agent: agent}}}}}, nil
	})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close(context.Background()) })
	return eng
}
