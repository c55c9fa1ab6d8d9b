package memory_test

import (
	"context"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/store/memory"
)

// A Log from Open reads its whole run after the store has retired it, which the store itself
// has forgotten: retirement bounds the store, not the holder of a log.
func TestOpenOutlivesRetirement(t *testing.T) {
	var want []troupe.Event
	for seq := int64(1); seq <= 20; seq++ {
		want = append(want, event("run", seq, troupe.StageExecute))
	}
	want = append(want, event("run", 21, troupe.StageComplete))

	tests := []struct {
		name   string
		append func(t *testing.T, s *memory.Store) // appends want, one way or another
	}{
		{"one by one", func(t *testing.T, s *memory.Store) {
			for _, ev := range want {
				if err := s.Append(t.Context(), ev); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{"one batch", func(t *testing.T, s *memory.Store) {
			if err := s.Append(t.Context(), want...); err != nil {
				t.Fatal(err)
			}
		}},
		{"batches of several runs", func(t *testing.T, s *memory.Store) {
			for i, ev := range want {
				if err := s.Append(t.Context(), ev, event("other", int64(i)+1, troupe.StageExecute)); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{"reserved", func(t *testing.T, s *memory.Store) {
			s.Reserve("run", 4)
			if err := s.Append(t.Context(), want...); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := memory.New(memory.Config{MaxFinishedRuns: 1})
			l := s.Open("run")
			if got := l.EventsInto("run", 0, make([]troupe.Event, 4)); got != 0 {
				t.Fatalf("a log opened before its first event has %d", got)
			}
			if s.Open("run") != l {
				t.Fatal("Open twice gave two logs")
			}
			tt.append(t, s)

			// A reader reading in steps, half before the run is retired and half after.
			var got []troupe.Event
			buf := make([]troupe.Event, 4)
			read := func(until int) {
				for len(got) < until {
					n := l.EventsInto("run", int64(len(got)), buf)
					if n == 0 {
						break
					}
					got = append(got, buf[:n]...)
				}
			}
			read(len(want) / 2)
			start(t, s, "next")
			end(t, s, "next", troupe.StageComplete)
			if k := known(t, s, "run", "next"); !slices.Equal(k, []string{"next"}) {
				t.Fatalf("store knows %v, want only [next]: run is not retired, the test tests nothing", k)
			}
			if slices.Contains(s.Runs(), "run") {
				t.Error("Runs lists the retired run")
			}
			read(len(want) + 1)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("log read across retirement (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("zero Log", func(t *testing.T) {
		var l memory.Log
		if n := l.EventsInto("run", 0, make([]troupe.Event, 1)); n != 0 {
			t.Errorf("the zero Log has %d events", n)
		}
	})
}

// A log opened then reserved is allocated as a log only reserved is: the engine opens every
// run's log when it makes the run, then reserves what its plan needs.
func TestOpenThenReserve(t *testing.T) {
	const n = 64
	ctx := context.Background()
	allocs := func(open bool) float64 {
		s := memory.New()
		ids := []string{"warm-up", "measured"}
		i := 0
		return testing.AllocsPerRun(1, func() {
			run := ids[i]
			i++
			if open {
				s.Open(run)
			}
			s.Reserve(run, n)
			for seq := int64(1); seq <= n; seq++ {
				if err := s.Append(ctx, troupe.Event{RunID: run, Seq: seq, Stage: troupe.StageExecute, Kind: troupe.KindWarning}); err != nil {
					panic(err)
				}
			}
		})
	}
	if opened, reserved := allocs(true), allocs(false); opened != reserved {
		t.Errorf("open, reserve and append %d events: %v allocations; reserve and append: %v", n, opened, reserved)
	}
}
