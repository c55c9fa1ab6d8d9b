package memory_test

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/store/memory"
)

// TestRejectedAppendLeavesNoTrace: an Append rejected with ErrSeqConflict makes no log, even
// when it starts a new run with Seq 1: the store does not list the run and Events does not
// know it. Each way into the store (one event, one run's batch, a batch of several runs) is
// tried. A log made by Open before the first event is the engine's and stays.
func TestRejectedAppendLeavesNoTrace(t *testing.T) {
	type ev struct {
		run string // "old" has 2 events; "new" and "new2" do not exist
		seq int64
	}
	tests := []struct {
		name  string
		batch []ev
	}{
		{"one event, not 1", []ev{{"new", 2}}},
		{"one run, gap", []ev{{"new", 1}, {"new", 3}}},
		{"one run, repeat", []ev{{"new", 1}, {"new", 1}}},
		{"one run, gap at the end", []ev{{"new", 1}, {"new", 2}, {"new", 2}}},
		{"one run, backwards", []ev{{"new", 1}, {"new", 0}}},
		{"runs, new run with a gap", []ev{{"new", 1}, {"old", 3}, {"new", 3}}},
		{"runs, bad existing run", []ev{{"new", 1}, {"new", 2}, {"old", 4}}},
		{"runs, bad existing run first", []ev{{"old", 2}, {"new", 1}}},
		{"runs, two new runs, one bad", []ev{{"new", 1}, {"new2", 2}}},
		{"runs, two new runs, one with a gap", []ev{{"new2", 1}, {"new", 1}, {"new2", 3}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := memory.New()
			start(t, s, "old")
			end(t, s, "old", troupe.StageExecute)
			var batch []troupe.Event
			for _, e := range tt.batch {
				batch = append(batch, event(e.run, e.seq, troupe.StageExecute))
			}
			if err := s.Append(t.Context(), batch...); !errors.Is(err, troupe.ErrSeqConflict) {
				t.Fatalf("Append = %v, want ErrSeqConflict", err)
			}
			if got := s.Runs(); !slices.Equal(got, []string{"old"}) {
				t.Errorf("Runs() = %v after a rejected Append, want [old]", got)
			}
			for _, run := range []string{"new", "new2"} {
				if evs, err := s.Events(t.Context(), run, 0); !errors.Is(err, troupe.ErrRunNotFound) {
					t.Errorf("Events(%q) = %d events, %v; want ErrRunNotFound", run, len(evs), err)
				}
			}
			if evs, err := s.Events(t.Context(), "old", 0); err != nil || len(evs) != 2 {
				t.Errorf("Events(old) = %d events, %v; want 2", len(evs), err)
			}
			// The run can still start as it should.
			start(t, s, "new")
			if k := known(t, s, "new"); len(k) != 1 {
				t.Errorf("new run not kept after its first event")
			}
		})
	}

	t.Run("opened log stays", func(t *testing.T) {
		for _, batch := range [][]troupe.Event{
			{event("run", 1, troupe.StageInitialize), event("run", 3, troupe.StageExecute)},
			{event("run", 1, troupe.StageInitialize), event("other", 2, troupe.StageExecute)},
			{event("run", 2, troupe.StageInitialize)},
		} {
			s := memory.New()
			l := s.Open("run")
			s.Reserve("run", 4)
			if err := s.Append(t.Context(), batch...); !errors.Is(err, troupe.ErrSeqConflict) {
				t.Fatalf("Append = %v, want ErrSeqConflict", err)
			}
			if got := s.Runs(); !slices.Equal(got, []string{"run"}) {
				t.Errorf("Runs() = %v, want the opened run only", got)
			}
			if evs, err := s.Events(t.Context(), "run", 0); err != nil || len(evs) != 0 {
				t.Errorf("Events(run) = %d events, %v; want none, no error", len(evs), err)
			}
			start(t, s, "run")
			if s.Open("run") != l || l.EventsInto("run", 0, make([]troupe.Event, 2)) != 1 {
				t.Error("the opened log is not the run's log after a rejected Append")
			}
		}
	})
}

// TestConcurrentFirstAppends: writers race to start the same runs, alone and in batches of
// several runs; for each run exactly one first event wins, and every run the store lists holds
// its first event.
func TestConcurrentFirstAppends(t *testing.T) {
	for round := range 50 {
		s := memory.New()
		runs := []string{"a", "b", "c"}
		var mu sync.Mutex
		won := map[string]int{}
		var wg sync.WaitGroup
		for w := range 6 {
			wg.Go(func() {
				var batch []troupe.Event
				switch w % 3 {
				case 0:
					batch = []troupe.Event{event(runs[w%len(runs)], 1, troupe.StageInitialize)}
				case 1:
					batch = []troupe.Event{event("a", 1, troupe.StageInitialize), event("b", 1, troupe.StageInitialize)}
				case 2:
					batch = []troupe.Event{event("c", 1, troupe.StageInitialize), event("b", 1, troupe.StageInitialize), event("c", 2, troupe.StageExecute)}
				}
				err := s.Append(t.Context(), batch...)
				switch {
				case err == nil:
					mu.Lock()
					for _, ev := range batch {
						if ev.Seq == 1 {
							won[ev.RunID]++
						}
					}
					mu.Unlock()
				case !errors.Is(err, troupe.ErrSeqConflict):
					t.Error(err)
				}
			})
		}
		wg.Wait()
		for _, run := range s.Runs() {
			evs, err := s.Events(t.Context(), run, 0)
			if err != nil || len(evs) == 0 || won[run] != 1 {
				t.Fatalf("round %d: run %s: %d events, %v; %d first events accepted", round, run, len(evs), err, won[run])
			}
		}
		if n := len(s.Runs()); n != len(won) {
			t.Fatalf("round %d: store lists %v, accepted first events of %v", round, s.Runs(), fmt.Sprint(won))
		}
	}
}
