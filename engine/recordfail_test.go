package engine_test

import (
	"context"
	"testing"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/engine"
	"github.com/troupehq/troupe/store/memory"
	"github.com/troupehq/troupe/troupetest"
)

// blockSetup is an agent whose Setup waits for release.
type blockSetup struct {
	troupe.Agent
	entered, release chan struct{}
}

func (a blockSetup) Setup(context.Context) error {
	close(a.entered)
	<-a.release
	return nil
}

// A run whose first event cannot be recorded, because another engine over the same store took
// its run id while its agents were being set up (past newRun's ErrRunExists check), ends its
// stream with that error, as Engine.Run says, and shows nothing it did not record. It yielded
// the other run's events, ending run_completed, as its own, and no error.
func TestEventsShowOnlyWhatTheRunRecorded(t *testing.T) {
	st := memory.New()
	a := blockSetup{Agent: troupetest.NewScript(), entered: make(chan struct{}), release: make(chan struct{})}
	eng1 := newEngine(t, engine.Config{Registry: agents(t, "a", a), Planner: chain("a"), Store: st})
	eng2 := newEngine(t, engine.Config{Registry: agents(t, "a", troupetest.NewScript()), Planner: chain("a"), Store: st})
	type streamed struct {
		evs []troupe.Event
		err error
	}
	ch := make(chan streamed, 1)
	go func() {
		var s streamed
		for ev, err := range eng1.Run(t.Context(), troupe.Request{Query: "mine", RunID: "run_same"}) {
			if err != nil {
				s.err = err
				break
			}
			s.evs = append(s.evs, ev)
		}
		ch <- s
	}()
	<-a.entered // eng1's run passed the ErrRunExists check and is setting up its agent
	run(t, eng2, troupe.Request{Query: "theirs", RunID: "run_same"})
	close(a.release)
	s := <-ch
	for _, ev := range s.evs {
		if rs, ok := ev.Data.(*troupe.RunStart); ok && rs.Request.Query != "mine" {
			t.Errorf("the run's stream yielded another run's %s (query %q)", ev.Kind, rs.Request.Query)
		}
	}
	if s.err == nil {
		t.Errorf("the stream yielded %d events, the last %s, and no error, for a run whose log could not be written", len(s.evs), troupetest.Last(s.evs).Kind)
	}
}
