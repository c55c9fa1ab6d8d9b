package engine_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/engine"
	"github.com/troupehq/troupe/store/memory"
	"github.com/troupehq/troupe/troupetest"
)

// crashingStore accepts n events, then fails every append: the process "dies" mid-run. The
// batch that would cross the limit is refused whole, as a store's batches are atomic.
type crashingStore struct {
	troupe.Store
	mu sync.Mutex
	n  int
}

var errCrash = errors.New("disk gone")

func (s *crashingStore) Append(ctx context.Context, evs ...troupe.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(evs) > s.n {
		s.n = 0
		return errCrash
	}
	s.n -= len(evs)
	return s.Store.Append(ctx, evs...)
}

// A run stopped mid-way continues from its log: recorded results are taken, not dispatched
// again, the plan and decisions come out the same, and no agent runs twice.
func TestResumeFromLog(t *testing.T) {
	names := []string{"a", "b", "c", "d", "e"}
	for crashAt := 3; crashAt <= 17; crashAt++ {
		t.Run(fmt.Sprint("crash after ", crashAt, " events"), func(t *testing.T) {
			scripts := map[string]*troupetest.Script{}
			var pairs []any
			for _, n := range names {
				scripts[n] = troupetest.NewScript(troupetest.OK(map[string]any{n: true}))
				pairs = append(pairs, n, scripts[n])
			}
			reg := agents(t, pairs...)
			mem := memory.New()
			crashing := &crashingStore{Store: mem, n: crashAt}
			planner := chain(names...)
			eng := newEngine(t, engine.Config{Registry: reg, Planner: planner, Store: crashing})
			_, err := troupetest.Collect(eng.Run(t.Context(), troupe.Request{Query: "q", RunID: "run_crash"}))
			if !errors.Is(err, errCrash) {
				t.Fatalf("run error %v, want the store's", err)
			}
			before, _ := mem.Events(t.Context(), "run_crash", 0)
			if len(before) == 0 {
				// The first batch was refused: the run was never recorded, so there is nothing
				// to resume — and nothing ran.
				if _, err := newEngine(t, engine.Config{Registry: reg, Planner: planner, Store: mem}).Resume(t.Context(), "run_crash", engine.ResumeOptions{}); !errors.Is(err, troupe.ErrRunNotFound) {
					t.Errorf("resuming an unrecorded run: %v", err)
				}
				for _, n := range names {
					if scripts[n].Calls() != 0 {
						t.Errorf("%s ran although its dispatch was never recorded", n)
					}
				}
				return
			}
			recorded := map[string]bool{} // agents whose result survived the crash
			for _, ev := range before {
				if ev.Kind == troupe.KindDispatchCompleted {
					recorded[ev.Agent] = true
				}
			}

			// A new engine over the surviving log, as after a restart.
			eng2 := newEngine(t, engine.Config{Registry: reg, Planner: planner, Store: mem})
			r, err := eng2.Resume(t.Context(), "run_crash", engine.ResumeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			resumedEvents, err := troupetest.Collect(r.Events(t.Context()))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := r.Wait(t.Context()); err != nil {
				t.Fatalf("resumed run: %v", err)
			}
			all, _ := mem.Events(t.Context(), "run_crash", 0)
			troupetest.CheckLog(t, all)
			if len(resumedEvents) != len(all)-len(before) {
				t.Errorf("the resumed run yielded %d events, the log grew by %d", len(resumedEvents), len(all)-len(before))
			}
			for _, n := range names {
				// A recorded result is never dispatched again. An agent that was running when
				// the log broke has no recorded result and runs again (at least once).
				want := 1
				if !recorded[n] && scripts[n].Calls() == 2 {
					want = 2
				}
				if c := scripts[n].Calls(); c != want {
					t.Errorf("%s ran %d times (result recorded before the crash: %v)", n, c, recorded[n])
				}
				if got := len(troupetest.Find(all, troupe.KindDispatchStarted, n)); got != 1 {
					t.Errorf("%s dispatched %d times in the log", n, got)
				}
				if got := len(troupetest.Find(all, troupe.KindRouteDecided, n)); got != 1 {
					t.Errorf("%s routed %d times in the log", n, got)
				}
			}
			if got := len(troupetest.Find(all, troupe.KindPlanCreated, "")); got != 1 {
				t.Errorf("%d plan events", got)
			}
			twice := 0
			for _, n := range names {
				if scripts[n].Calls() == 2 {
					twice++
				}
			}
			if twice > 1 {
				t.Errorf("%d agents ran twice; only the one in flight at the crash may", twice)
			}
			agg := troupetest.Find(all, troupe.KindRunAggregated, "")[0].Data.(*troupe.Aggregation)
			if !cmp.Equal(agg.AgentsExecuted, names) {
				t.Errorf("aggregated %v", agg.AgentsExecuted)
			}
		})
	}
}

// A resumed run whose plan comes out different is refused, not silently mixed.
func TestResumeRefusesDivergedPlan(t *testing.T) {
	mem := memory.New()
	reg := agents(t, "a", troupetest.NewScript(), "b", troupetest.NewScript())
	eng := newEngine(t, engine.Config{Registry: reg, Planner: chain("a", "b"), Store: &crashingStore{Store: mem, n: 4}})
	_, _ = troupetest.Collect(eng.Run(t.Context(), troupe.Request{Query: "q", RunID: "run_x"}))
	eng2 := newEngine(t, engine.Config{Registry: reg, Planner: chain("b", "a"), Store: mem})
	r, err := eng2.Resume(t.Context(), "run_x", engine.ResumeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Wait(t.Context()); err == nil || !strings.Contains(err.Error(), "plan") {
		t.Errorf("Wait: %v, want a plan divergence failure", err)
	}
}

// A transition bigger than one batch (a group of 40 starting at once) broken mid-way: the
// batch that failed is not recorded, none of its dispatches starts, and the run resumes.
func TestResumeAfterBrokenLargeTransition(t *testing.T) {
	var pairs []any
	var names []string
	scripts := map[string]*troupetest.Script{}
	for i := range 40 {
		n := fmt.Sprintf("w%02d", i)
		names = append(names, n)
		scripts[n] = troupetest.NewScript()
		pairs = append(pairs, n, scripts[n])
	}
	reg := agents(t, pairs...)
	mem := memory.New()
	eng := newEngine(t, engine.Config{Registry: reg, Planner: group(40, names...), Store: &crashingStore{Store: mem, n: 40}})
	if _, err := troupetest.Collect(eng.Run(t.Context(), troupe.Request{Query: "q", RunID: "run_big"})); !errors.Is(err, errCrash) {
		t.Fatalf("run error %v, want the store's", err)
	}
	before, _ := mem.Events(t.Context(), "run_big", 0)
	troupetest.CheckLog(t, before)
	started := len(troupetest.Find(before, troupe.KindDispatchStarted, ""))
	ran := 0
	for _, s := range scripts {
		ran += s.Calls()
	}
	if ran > started {
		t.Errorf("%d agents ran but only %d dispatches were recorded", ran, started)
	}
	r, err := newEngine(t, engine.Config{Registry: reg, Planner: group(40, names...), Store: mem}).Resume(t.Context(), "run_big", engine.ResumeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	all, _ := mem.Events(t.Context(), "run_big", 0)
	troupetest.CheckLog(t, all)
	if got := len(troupetest.Find(all, troupe.KindDispatchCompleted, "")); got != 40 {
		t.Errorf("%d completed, want 40", got)
	}
}
