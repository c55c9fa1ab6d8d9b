package engine_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/engine"
	"github.com/troupehq/troupe/store/memory"
	"github.com/troupehq/troupe/troupetest"
)

// A run's handle reads the run's whole log however late it is read, and a reader ranging over
// Engine.Run however slowly, though the memory store (keeping one finished run here) has
// forgotten the run: retirement bounds what the store keeps, not what the run's reader sees.
func TestRetiredRunStillReadable(t *testing.T) {
	reg, names := registry(t, 2, troupe.AgentFunc(noop))
	planners := []struct {
		name    string
		planner troupe.Planner
		last    troupe.Kind
	}{
		{"completed", staticPlan(chainPlan(names)), troupe.KindRunCompleted},
		// Its first append carries its terminal event, which retires it at once.
		{"failed planning", troupe.PlannerFunc(func(*troupe.Request, troupe.Catalog) (*troupe.Plan, error) {
			return nil, errors.New("no plan")
		}), troupe.KindRunFailed},
	}
	for _, p := range planners {
		setup := func(t *testing.T) (eng *engine.Engine, retire func(runID string)) {
			store := memory.New(memory.Config{MaxFinishedRuns: 1})
			eng = newEngine(t, engine.Config{Registry: reg, Store: store, Planner: p.planner})
			// retire finishes another run, which drops runID's from the store.
			retire = func(runID string) {
				t.Helper()
				r, err := eng.Start(t.Context(), troupe.Request{Query: "another"})
				if err != nil {
					t.Fatal(err)
				}
				r.Wait(t.Context())
				if _, err := store.Events(t.Context(), runID, 0); !errors.Is(err, troupe.ErrRunNotFound) {
					t.Fatalf("store.Events of the retired run: %v, want ErrRunNotFound", err)
				}
			}
			return eng, retire
		}

		t.Run(p.name+"/late handle", func(t *testing.T) {
			eng, retire := setup(t)
			r, err := eng.Start(t.Context(), troupe.Request{Query: "q"})
			if err != nil {
				t.Fatal(err)
			}
			r.Wait(t.Context())
			want, err := troupetest.Collect(r.Events(t.Context()))
			if err != nil {
				t.Fatal(err)
			}
			retire(r.ID())
			got, err := troupetest.Collect(r.Events(t.Context()))
			if err != nil {
				t.Fatalf("Events after the store retired the run: %v", err)
			}
			troupetest.CheckLog(t, got)
			if diff := cmp.Diff(troupetest.Kinds(want), troupetest.Kinds(got)); diff != "" {
				t.Errorf("log read after retirement (-before +after):\n%s", diff)
			}
			if got[len(got)-1].Kind != p.last {
				t.Errorf("log ends with %s, want %s", got[len(got)-1].Kind, p.last)
			}
		})

		t.Run(p.name+"/slow reader", func(t *testing.T) {
			eng, retire := setup(t)
			var got []troupe.Event
			for ev, err := range eng.Run(t.Context(), troupe.Request{Query: "q"}) {
				if err != nil {
					t.Fatalf("after %d events: %v", len(got), err)
				}
				if len(got) == 0 {
					// The run ends while its reader dwells on its first event, and is retired.
					if r, live := eng.Lookup(ev.RunID); live {
						r.Wait(context.Background())
					}
					retire(ev.RunID)
				}
				got = append(got, ev)
			}
			troupetest.CheckLog(t, got)
			if got[len(got)-1].Kind != p.last {
				t.Errorf("log ends with %s, want %s", got[len(got)-1].Kind, p.last)
			}
		})
	}
}
