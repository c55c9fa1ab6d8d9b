package engine_test

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
	eng, err := engine.New(engine.Config{Registry: reg, Planner: troupe.PlannerFunc(func(*troupe.Request, troupe.Catalog) (*troupe.Plan, error) {
		return &troupe.Plan{Stages: []troupe.PlanStage{{MaxConcurrency: 1, Tasks: []troupe.Task{{ID: "team", Agent: "team"}}}}}, nil
	})})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close(t.Context())
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
