package engine_test

import (
	"context"
	"runtime"
	"testing"
	"time"
	"weak"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/engine"
	"github.com/troupehq/troupe/store/memory"
)

// A finished run's log keeps what it records, not the run: once the caller drops the handle,
// the Run (and with it its tasks, calls and executor scope) is garbage, though the store still
// serves every event and payload.
func TestFinishedLogDoesNotKeepRun(t *testing.T) {
	reg, names := registry(t, 3, troupe.AgentFunc(noop))
	store := memory.New()
	eng, err := engine.New(engine.Config{Registry: reg, Store: store, Planner: staticPlan(chainPlan(names))})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r, err := eng.Start(ctx, troupe.Request{Query: "retained?"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	id := r.ID()
	wr := weak.Make(r)
	r = nil
	// The worker goroutine that finished the run may still be returning (its frames point at
	// the run until it has); give it a moment before calling the run reachable.
	for i := 0; i < 200 && wr.Value() != nil; i++ {
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	if wr.Value() != nil {
		t.Fatal("the finished run is still reachable: something in its log points back at it")
	}
	evs, err := store.Events(ctx, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	var dispatches int
	for _, ev := range evs {
		if d, ok := ev.Data.(*troupe.Dispatch); ok {
			dispatches++
			if d.Query != "retained?" || d.TargetAgent != ev.Agent {
				t.Errorf("dispatch payload %s lost its contents: %+v", ev.DispatchID, d)
			}
		}
		if ev.Context == nil || ev.Context.TraceID() == "" {
			t.Errorf("event %d lost its context", ev.Seq)
		}
	}
	if dispatches != 3 || evs[len(evs)-1].Kind != troupe.KindRunCompleted {
		t.Fatalf("log has %d dispatches, ends with %s", dispatches, evs[len(evs)-1].Kind)
	}
}
