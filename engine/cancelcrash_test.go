package engine_test

import (
	"context"
	"errors"
	"testing"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/engine"
	"github.com/troupehq/troupe/flow"
	"github.com/troupehq/troupe/store/memory"
	"github.com/troupehq/troupe/troupetest"
)

// A run its caller cancelled, whose process died after its dispatches were recorded cancelled
// but before run_cancelled, ends cancelled when resumed, as it would have without the crash:
// its cancelled dispatches are not failures for the error policy to handle (fail_fast would
// fail the run), and nothing runs again.
func TestResumeAfterCallerCancelEndsCancelled(t *testing.T) {
	for _, name := range []string{"fail_fast", "continue"} {
		t.Run(name, func(t *testing.T) {
			g := newGate()
			ran := map[string]int{}
			reg := agents(t, "a", g.agent(), "b", g.agent(), "c", troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
				ran[d.TargetAgent]++
				return &troupe.Result{AgentResult: map[string]any{"ok": true}, Confidence: troupe.Ptr(1.0)}, nil
			}))
			pol := troupe.ErrorPolicy{OnError: troupe.ErrorAction(name)}
			plan := &troupe.Plan{Stages: []troupe.PlanStage{stage(2, "a", "b"), stage(1, "c")}}
			st := memory.New()
			eng := newEngine(t, engine.Config{Registry: reg, Planner: staticPlan(plan), Store: st, Policy: pol})
			ctx, cancel := context.WithCancel(t.Context())
			r, err := eng.Start(ctx, troupe.Request{Query: "q"})
			if err != nil {
				t.Fatal(err)
			}
			<-g.entered
			<-g.entered
			cancel()
			state, _ := r.Wait(t.Context())
			if state.Status != troupe.RunCancelled {
				t.Fatalf("uninterrupted run ended %s, want cancelled", state.Status)
			}
			cut := logUpTo(t, st, r.ID(), func(ev troupe.Event) bool {
				return ev.Kind == troupe.KindDispatchFailed && ev.Status == troupe.StatusCancelled
			})
			eng2 := newEngine(t, engine.Config{Registry: reg, Planner: staticPlan(plan), Store: cut, Policy: pol})
			r2, err := eng2.Resume(t.Context(), r.ID(), engine.ResumeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got, _ := r2.Wait(t.Context()) // a cancelled run's error, checked below
			if got.Status != troupe.RunCancelled {
				t.Errorf("resumed run ended %s, want cancelled as without the crash", got.Status)
			}
			if ran["c"] != 0 {
				t.Errorf("c ran %d times after the run was cancelled", ran["c"])
			}
			evs, err := cut.Events(t.Context(), r.ID(), 0)
			if err != nil {
				t.Fatal(err)
			}
			troupetest.CheckFinishedLog(t, evs)
			if n := len(troupetest.Find(evs, troupe.KindDispatchStarted, "")); n != 2 {
				t.Errorf("%d dispatches started in all, want the 2 of the first run", n)
			}
			ref, err := st.Events(t.Context(), r.ID(), 0)
			if err != nil {
				t.Fatal(err)
			}
			if o, want := outcome(t, evs), outcome(t, ref); o.Error == nil || want.Error == nil || o.Error.Code != want.Error.Code || o.Error.Message != want.Error.Message {
				t.Errorf("resumed outcome error %+v, want %+v as without the crash", o.Error, want.Error)
			}
		})
	}
}

// A run resumed with a dispatch in flight at the crash, then cancelled by its caller while the
// dispatch runs again, records that dispatch cancelled before run_cancelled: a log that ends
// never leaves a started dispatch without its result.
func TestResumedRunCancelledRecordsOpenDispatch(t *testing.T) {
	for _, early := range []bool{false, true} {
		t.Run(map[bool]string{false: "while it runs", true: "before resume"}[early], func(t *testing.T) {
			g := newGate()
			reg := agents(t, "a", g.agent(), "b", g.agent())
			plan := &troupe.Plan{Stages: []troupe.PlanStage{stage(1, "a"), stage(1, "b")}}
			st := memory.New()
			eng := newEngine(t, engine.Config{Registry: reg, Planner: staticPlan(plan), Store: st})
			r, err := eng.Start(t.Context(), troupe.Request{Query: "q"})
			if err != nil {
				t.Fatal(err)
			}
			<-g.entered
			cut := logUpTo(t, st, r.ID(), startedTo("a"))
			r.Cancel()
			r.Wait(t.Context())

			eng2 := newEngine(t, engine.Config{Registry: reg, Planner: staticPlan(plan), Store: cut})
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			if early {
				cancel()
			}
			r2, err := eng2.Resume(ctx, r.ID(), engine.ResumeOptions{})
			if early {
				// Nothing is resumed, and the log is as it was: still resumable.
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("resume with a cancelled context: %v, want context.Canceled", err)
				}
				if evs, _ := cut.Events(t.Context(), r.ID(), 0); troupetest.Last(evs).Kind != troupe.KindDispatchStarted {
					t.Fatalf("the log changed: it ends with %s", troupetest.Last(evs).Kind)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !early {
				<-g.entered
				cancel()
			}
			got, _ := r2.Wait(t.Context())
			if got.Status != troupe.RunCancelled {
				t.Errorf("resumed run ended %s, want cancelled", got.Status)
			}
			evs, err := cut.Events(t.Context(), r.ID(), 0)
			if err != nil {
				t.Fatal(err)
			}
			troupetest.CheckFinishedLog(t, evs)
			if n := len(troupetest.Find(evs, troupe.KindDispatchFailed, "a")); n != 1 {
				t.Errorf("%d dispatch_failed events for a, want 1:\n%v", n, evs)
			}
		})
	}
}

// A composite's member cancelled as its run's caller cancelled the run, the process dying
// before the composite's own result: resumed, the run ends cancelled too, not failed by the
// member's cancellation taken from the log as a failure of the composite.
func TestResumeAfterCallerCancelInComposite(t *testing.T) {
	g := newGate()
	reg := troupe.NewRegistry()
	reg.MustAdd("team", flow.Sequential(flow.SequentialConfig{}, flow.Named("m", g.agent())))
	reg.MustAdd("after", g.agent())
	plan := &troupe.Plan{Stages: []troupe.PlanStage{stage(1, "team"), stage(1, "after")}}
	st := memory.New()
	eng := newEngine(t, engine.Config{Registry: reg, Planner: staticPlan(plan), Store: st})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	r, err := eng.Start(ctx, troupe.Request{Query: "q"})
	if err != nil {
		t.Fatal(err)
	}
	<-g.entered
	cancel()
	r.Wait(t.Context())
	cut := logUpTo(t, st, r.ID(), func(ev troupe.Event) bool {
		return ev.Kind == troupe.KindDispatchFailed && ev.Parent != "" && ev.Agent == "m"
	})
	eng2 := newEngine(t, engine.Config{Registry: reg, Planner: staticPlan(plan), Store: cut})
	r2, err := eng2.Resume(t.Context(), r.ID(), engine.ResumeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := r2.Wait(t.Context())
	evs, _ := cut.Events(t.Context(), r.ID(), 0)
	if got.Status != troupe.RunCancelled {
		t.Errorf("resumed run ended %s, want cancelled as without the crash:\n%s", got.Status, dumpLog(evs))
	}
	troupetest.CheckFinishedLog(t, evs)
}
