package engine_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/engine"
)

// upstreamRecorder is a registry of agents that sleep for the given time, then return; each
// records the agents of the upstream results it was handed.
func upstreamRecorder(t *testing.T, sleeps map[string]time.Duration) (*troupe.Registry, func() map[string][]string) {
	var mu sync.Mutex
	seen := map[string][]string{}
	reg := troupe.NewRegistry()
	for name, d := range sleeps {
		reg.MustAdd(name, troupe.AgentFunc(func(ctx context.Context, disp *troupe.Dispatch) (*troupe.Result, error) {
			got := []string{}
			for _, u := range disp.UpstreamResults {
				got = append(got, u.Agent)
			}
			mu.Lock()
			seen[name] = got
			mu.Unlock()
			time.Sleep(d)
			return &troupe.Result{AgentResult: map[string]any{name: true}}, nil
		}))
	}
	return reg, func() map[string][]string {
		mu.Lock()
		defer mu.Unlock()
		return seen
	}
}

// TestUpstreamResultsInPlanOrder: a group's agents finish in reverse plan order; the stages
// after it are handed the group's results in plan order, while the aggregation's execution
// order says how they finished. The same run twice hands every agent the same thing.
func TestUpstreamResultsInPlanOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg, seen := upstreamRecorder(t, map[string]time.Duration{
			"a": 3 * time.Millisecond, "b": 2 * time.Millisecond, "c": time.Millisecond, "d": 0, "e": 0})
		plan := &troupe.Plan{Stages: []troupe.PlanStage{stage(3, "a", "b", "c"), stage(1, "d"), stage(1, "e")}}
		r, err := newEngine(t, engineConfig(reg, plan)).Start(t.Context(), troupe.Request{Query: "q"})
		if err != nil {
			t.Fatal(err)
		}
		st, err := r.Wait(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(map[string][]string{"a": {}, "b": {}, "c": {}, "d": {"a", "b", "c"}, "e": {"a", "b", "c", "d"}}, seen()); diff != "" {
			t.Errorf("upstream results handed to each agent (-want +got):\n%s", diff)
		}
		if got, want := st.Aggregation.ExecutionOrder, []string{"c", "b", "a", "d", "e"}; !cmp.Equal(got, want) {
			t.Errorf("execution order %v, want the order they finished, %v", got, want)
		}
	})
}

// TestGroupDispatchesGetTheUpstreamTheGroupBeganWith: under a cap of one, "late" starts only
// after "early" has finished, and is still handed only what came before the group: a group's
// agents are not upstream of one another.
func TestGroupDispatchesGetTheUpstreamTheGroupBeganWith(t *testing.T) {
	reg, seen := upstreamRecorder(t, map[string]time.Duration{"first": 0, "early": 0, "late": 0, "next": 0})
	plan := &troupe.Plan{Stages: []troupe.PlanStage{stage(1, "first"), stage(1, "early", "late"), stage(1, "next")}}
	r, err := newEngine(t, engineConfig(reg, plan)).Start(t.Context(), troupe.Request{Query: "q"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string][]string{"first": {}, "early": {"first"}, "late": {"first"}, "next": {"first", "early", "late"}}, seen()); diff != "" {
		t.Errorf("upstream results handed to each agent (-want +got):\n%s", diff)
	}
}

func engineConfig(reg *troupe.Registry, plan *troupe.Plan) engine.Config {
	return engine.Config{Registry: reg, Planner: staticPlan(plan)}
}
