package engine_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/engine"
	"github.com/troupehq/troupe/examples/e2i"
	"github.com/troupehq/troupe/troupetest"
)

// A plan with no stages completes: there is nothing to fail.
func TestEmptyPlan(t *testing.T) {
	eng := newEngine(t, engine.Config{Registry: agents(t, "a", troupetest.NewScript()), Planner: staticPlan(&troupe.Plan{})})
	evs := run(t, eng, troupe.Request{Query: "q"})
	if last := troupetest.Last(evs); last.Kind != troupe.KindRunCompleted {
		t.Fatalf("ended %s", last.Kind)
	}
}

// A request the planner cannot plan fails at PLAN with the planner's reason, after INITIALIZE.
func TestPlanFailure(t *testing.T) {
	reg, err := e2i.Registry()
	if err != nil {
		t.Fatal(err)
	}
	eng := newEngine(t, engine.Config{Registry: reg, Planner: e2i.Rules()})
	evs := run(t, eng, troupe.Request{Query: "q", ParsedQuery: map[string]any{"intent": "astrology"}})
	last := troupetest.Last(evs)
	if last.Stage != troupe.StageFailed || !strings.Contains(last.Data.(*troupe.Outcome).Error.Message, "astrology") {
		t.Fatalf("last event %s %+v", last.Kind, last.Data)
	}
	if got := troupetest.Stages(evs); len(got) != 2 || got[0] != troupe.StageInitialize {
		t.Errorf("stages %v, want initialize then failed", got)
	}
}

// Many runs at once on one engine and one store: every log is whole and every run completes.
func TestConcurrentRuns(t *testing.T) {
	var pairs []any
	var names []string
	for i := range 5 {
		n := fmt.Sprint("w", i)
		names = append(names, n)
		pairs = append(pairs, n, troupetest.NewScript())
	}
	eng := newEngine(t, engine.Config{Registry: agents(t, pairs...), Planner: group(3, names...)})
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			evs, err := troupetest.Collect(eng.Run(t.Context(), troupe.Request{Query: "q"}))
			if err != nil {
				t.Error(err)
				return
			}
			for _, p := range troupetest.LogProblems(evs) {
				t.Error(p)
			}
			if last := troupetest.Last(evs); last.Kind != troupe.KindRunCompleted {
				t.Errorf("run %s ended %s", last.RunID, last.Kind)
			}
		})
	}
	wg.Wait()
}
