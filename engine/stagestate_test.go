package engine_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/engine"
	"github.com/troupehq/troupe/troupetest"
)

// TestParallelGroupReadsTheStateItBeganWith: the agents of one stage read session state as the
// stage began, whoever finished first; the next stage reads every write. With a cap of one,
// "late" is dispatched only after "early" has written "k", and still does not see it.
func TestParallelGroupReadsTheStateItBeganWith(t *testing.T) {
	seen := map[string]any{}
	reader := func(name string) troupe.Agent {
		return troupe.AgentFunc(func(_ context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
			v, ok := d.State("k")
			if !ok {
				v = "(absent)"
			}
			seen[name] = v // agents run one at a time here: the cap is 1, then a stage of one
			return &troupe.Result{AgentResult: map[string]any{"saw": v}}, nil
		})
	}
	early := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{AgentResult: map[string]any{"k": "written"}}, nil
	})
	reg := troupe.NewRegistry()
	reg.MustAdd("early", early, troupe.Writes("k"))
	reg.MustAdd("late", reader("late"))
	reg.MustAdd("next", reader("next"))
	plan := &troupe.Plan{Stages: []troupe.PlanStage{
		{MaxConcurrency: 1, Tasks: []troupe.Task{{ID: "early", Agent: "early"}, {ID: "late", Agent: "late"}}},
		{MaxConcurrency: 1, Tasks: []troupe.Task{{ID: "next", Agent: "next", DependsOn: []string{"early"}}}},
	}}
	eng, err := engine.New(engine.Config{Registry: reg, Planner: troupe.PlannerFunc(func(*troupe.Request, troupe.Catalog) (*troupe.Plan, error) { return plan, nil })})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close(t.Context())
	if _, err := troupetest.Collect(eng.Run(t.Context(), troupe.Request{Query: "q", State: map[string]any{"k": "given"}})); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"late": "given", "next": "written"}, seen); diff != "" {
		t.Errorf("what each read of k (-want +got):\n%s", diff)
	}
}
