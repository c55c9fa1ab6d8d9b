package engine_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/engine"
	"github.com/troupehq/troupe/flow"
	"github.com/troupehq/troupe/store/memory"
	"github.com/troupehq/troupe/troupetest"
)

// jsonCopy returns a new memory store holding run id's log from st as a durable store gives a
// log back: each event encoded to JSON and decoded again.
func jsonCopy(t *testing.T, st troupe.Store, id string) *memory.Store {
	t.Helper()
	evs, err := st.Events(t.Context(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(evs)
	if err != nil {
		t.Fatal(err)
	}
	var back []troupe.Event
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	out := memory.New()
	if err := out.Append(t.Context(), back...); err != nil {
		t.Fatal(err)
	}
	return out
}

// crashAndResumeFromJSON starts run id of the planned agents in reg, lets the process die (the
// engine shuts down) at the first event crash accepts, calls unblock, and resumes the run in a
// new engine from a JSON copy of its log, as a durable store gives it back. It returns the
// resumed run's whole log, which it checks as a finished run's.
func crashAndResumeFromJSON(t *testing.T, reg *troupe.Registry, id string, crash func(troupe.Event) bool, unblock func()) []troupe.Event {
	t.Helper()
	eng1, err := engine.New(engine.Config{Registry: reg, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	r, err := eng1.Start(t.Context(), troupe.Request{Query: "q", RunID: id})
	if err != nil {
		t.Fatal(err)
	}
	for ev, err := range r.Events(t.Context()) {
		if err != nil {
			t.Fatal(err)
		}
		if crash(ev) {
			break
		}
	}
	if err := eng1.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	unblock()
	st := jsonCopy(t, eng1.Store(), r.ID())
	r2, err := newEngine(t, engine.Config{Registry: reg, Seed: 1, Store: st}).Resume(t.Context(), r.ID(), engine.ResumeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r2.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	evs, err := st.Events(t.Context(), r.ID(), 0)
	if err != nil {
		t.Fatal(err)
	}
	troupetest.CheckFinishedLog(t, evs)
	return evs
}

// A composite resumed from a log that went through JSON, as a durable store gives it back,
// takes its finished members' results from the log: they are not run (nor paid for) twice,
// and their events are not recorded again. The member dispatches the log decodes hold {} and
// [] where the ones the composite builds again hold nil, which is the same input.
func TestResumeFromJSONLogTakesFinishedMembers(t *testing.T) {
	for _, tc := range []struct {
		name  string
		group func(m1, m2 troupe.Agent) troupe.Agent
	}{
		{"sequential", func(m1, m2 troupe.Agent) troupe.Agent {
			return flow.Sequential(flow.SequentialConfig{}, flow.Named("m1", m1), flow.Named("m2", m2))
		}},
		{"parallel", func(m1, m2 troupe.Agent) troupe.Agent {
			return flow.Parallel(flow.ParallelConfig{}, flow.Named("m1", m1), flow.Named("m2", m2))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m1Calls atomic.Int32
			m1 := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
				m1Calls.Add(1)
				return &troupe.Result{AgentResult: map[string]any{"m1": 1}, Confidence: troupe.Ptr(0.9), CostDollars: troupe.Ptr(1.0)}, nil
			})
			var block atomic.Bool
			block.Store(true)
			m2 := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
				if block.Load() {
					<-ctx.Done()
					return nil, ctx.Err()
				}
				return &troupe.Result{AgentResult: map[string]any{"m2": 2}, Confidence: troupe.Ptr(0.9)}, nil
			})
			reg := agents(t, "g", tc.group(m1, m2))
			// A parsed query, upstream results and dependencies left nil: their JSON is {} and [].
			// The process dies once m1's result is recorded, with m2 running.
			evs := crashAndResumeFromJSON(t, reg, "run_json", func(ev troupe.Event) bool {
				return ev.Agent == "m1" && ev.Kind == troupe.KindDispatchCompleted
			}, func() { block.Store(false) })
			if n := m1Calls.Load(); n != 1 {
				t.Errorf("m1 ran %d times; it completed before the crash, and the resumed run should take it from the log", n)
			}
			starts, ends := 0, 0
			for _, ev := range evs {
				if ev.Agent == "m1" && ev.Kind == troupe.KindDispatchStarted {
					starts++
				}
				if res, ok := ev.Data.(*troupe.Result); ok && res.AgentName == "m1" {
					ends++
				}
			}
			if starts != 1 || ends != 1 {
				t.Errorf("m1's dispatch is started %d times and ended %d times in the log, want once each", starts, ends)
			}
		})
	}
}

// level is a named string type an agent may put in its result.
type level string

// A sequence step hands on what the step before it found, in a prompt built from its result.
// A value of a named string type or a time.Time reads as the string it encodes to, as it does
// once the log went through JSON, so a resumed run builds the same prompt, finds the next
// step's dispatch in the log and does not run that step again.
func TestResumeFromJSONLogKeepsTypedHandoffs(t *testing.T) {
	for name, v := range map[string]any{
		"named string": level("beginner"),
		"time":         time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC),
		"in output":    map[string]level{"output": "beginner"},
	} {
		t.Run(name, func(t *testing.T) {
			var c1, c2, c3 atomic.Int32
			m1 := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
				c1.Add(1)
				if m, ok := v.(map[string]level); ok {
					return &troupe.Result{AgentResult: map[string]any{"output": m["output"]}}, nil
				}
				return &troupe.Result{AgentResult: map[string]any{"level": v}}, nil
			})
			m2 := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
				c2.Add(1)
				return &troupe.Result{AgentResult: map[string]any{"m2": 2}}, nil
			})
			var block atomic.Bool
			block.Store(true)
			m3 := troupe.AgentFunc(func(ctx context.Context, _ *troupe.Dispatch) (*troupe.Result, error) {
				c3.Add(1)
				if block.Load() {
					<-ctx.Done()
					return nil, ctx.Err()
				}
				return &troupe.Result{AgentResult: map[string]any{"m3": 3}}, nil
			})
			seq := flow.Sequential(flow.SequentialConfig{}, flow.Named("m1", m1), flow.Named("m2", m2), flow.Named("m3", m3))
			reg := agents(t, "g", seq)
			crashAndResumeFromJSON(t, reg, "run_typed", func(ev troupe.Event) bool { // the process dies with m3 running
				return ev.Agent == "m3" && ev.Kind == troupe.KindDispatchStarted
			}, func() { block.Store(false) })
			if c1.Load() != 1 || c2.Load() != 1 {
				t.Errorf("m1 ran %d times and m2 %d times, want once each: both finished before the crash", c1.Load(), c2.Load())
			}
		})
	}
}
