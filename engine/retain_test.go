package engine_test

import (
	"context"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/engine"
	"github.com/troupehq/troupe/store/memory"
)

// A finished run's log keeps what it records, not the run: nothing reachable from its events
// and payloads is the engine's own bookkeeping (the Run, its tasks, its calls, which would keep
// the executor scope and everything else with them), though the store still serves every event
// and payload whole.
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
	evs, err := store.Events(ctx, r.ID(), 0)
	if err != nil {
		t.Fatal(err)
	}
	// Nothing of the engine's own types, and no pointer into the Run (an event's Context or a
	// result's trace id pointing at one of its fields would keep all of it).
	w := walker{lo: reflect.ValueOf(r).Pointer(), seen: map[uintptr]bool{}}
	w.hi = w.lo + reflect.TypeOf(r).Elem().Size()
	if path := w.find(reflect.ValueOf(evs), "events"); path != "" {
		t.Fatalf("the log reaches the engine's bookkeeping at %s", path)
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

// walker walks everything reachable from a value, unexported fields and interfaces included.
type walker struct {
	lo, hi uintptr // the Run's memory
	seen   map[uintptr]bool
}

// find returns the path to the first value of one of the engine's own types, or pointer into
// the Run, reachable from v; "" when there is none.
func (w *walker) find(v reflect.Value, path string) string {
	if !v.IsValid() {
		return ""
	}
	if t := v.Type().String(); strings.HasPrefix(t, "*engine.") || strings.HasPrefix(t, "engine.") {
		return path + " (" + t + ")"
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return ""
		}
		p := v.Pointer()
		if p >= w.lo && p < w.hi {
			return path + " (a pointer into the Run)"
		}
		if w.seen[p] {
			return ""
		}
		w.seen[p] = true
		return w.find(v.Elem(), path)
	case reflect.Interface:
		return w.find(v.Elem(), path)
	case reflect.Struct:
		for i := range v.NumField() {
			if p := w.find(v.Field(i), path+"."+v.Type().Field(i).Name); p != "" {
				return p
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			if p := w.find(v.Index(i), path+"["+strconv.Itoa(i)+"]"); p != "" {
				return p
			}
		}
	case reflect.Map:
		it := v.MapRange()
		for it.Next() {
			if p := w.find(it.Value(), path+"["+fmt.Sprint(it.Key())+"]"); p != "" {
				return p
			}
		}
	}
	return ""
}
