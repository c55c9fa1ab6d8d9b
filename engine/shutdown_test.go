package engine_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/engine"
	"github.com/troupehq/troupe/store/memory"
	"github.com/troupehq/troupe/troupetest"
)

// stallOnce blocks its first call until its context ends (saying so on started, and keeping
// the context's cause), and completes every later one. It counts its setups and teardowns.
type stallOnce struct {
	calls, setups, teardowns atomic.Int64
	started                  chan struct{}
	cause                    atomic.Pointer[error]
}

func (a *stallOnce) Run(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
	if a.calls.Add(1) > 1 {
		return &troupe.Result{AgentResult: map[string]any{"b": true}}, nil
	}
	close(a.started)
	<-ctx.Done()
	cause := context.Cause(ctx)
	a.cause.Store(&cause)
	return nil, ctx.Err()
}

func (a *stallOnce) Setup(context.Context) error    { a.setups.Add(1); return nil }
func (a *stallOnce) Teardown(context.Context) error { a.teardowns.Add(1); return nil }

func waitCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// Shutdown stops a run without ending it: the log keeps no terminal event and no result of the
// dispatch in flight, Wait and Events say the engine shut down, and a new engine over the same
// store resumes the run: what completed is not run again, the dispatch in flight runs again.
func TestShutdownLeavesRunResumable(t *testing.T) {
	a, c := troupetest.NewScript(troupetest.OK(map[string]any{"a": true})), troupetest.NewScript(troupetest.OK(map[string]any{"c": true}))
	b := &stallOnce{started: make(chan struct{})}
	reg := agents(t, "a", a, "b", b, "c", c)
	mem := memory.New()
	eng := newEngine(t, engine.Config{Registry: reg, Planner: chain("a", "b", "c"), Store: mem})
	r, err := eng.Start(t.Context(), troupe.Request{Query: "q", RunID: "run_shut"})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-b.started:
	case <-time.After(10 * time.Second):
		t.Fatal("b never started")
	}
	if err := eng.Shutdown(waitCtx(t)); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}

	st, err := r.Wait(waitCtx(t))
	if !errors.Is(err, troupe.ErrShutdown) || errors.Is(err, troupe.ErrCancelled) {
		t.Errorf("Wait: %v; want troupe.ErrShutdown, not troupe.ErrCancelled", err)
	}
	if st.Status != troupe.RunExecuting {
		t.Errorf("status %s after Shutdown", st.Status)
	}
	if _, err := troupetest.Collect(r.Events(waitCtx(t))); !errors.Is(err, troupe.ErrShutdown) {
		t.Errorf("Events: %v; want troupe.ErrShutdown", err)
	}
	if p := b.cause.Load(); p == nil || !errors.Is(*p, troupe.ErrShutdown) {
		t.Errorf("b's context ended with cause %v; want troupe.ErrShutdown", p)
	}
	if n := b.teardowns.Load(); n != 1 {
		t.Errorf("b torn down %d times, want once", n)
	}

	evs, err := mem.Events(t.Context(), "run_shut", 0)
	if err != nil {
		t.Fatal(err)
	}
	troupetest.CheckLog(t, evs)
	for _, ev := range evs {
		if ev.Stage.Terminal() || ev.Kind == troupe.KindRunPaused {
			t.Errorf("log has %s at %d after Shutdown", ev.Kind, ev.Seq)
		}
		if ev.Agent == "b" && ev.Kind != troupe.KindRouteDecided && ev.Kind != troupe.KindDispatchStarted {
			t.Errorf("log has %s of b, in flight at Shutdown", ev.Kind)
		}
	}
	if n := len(troupetest.Find(evs, troupe.KindDispatchStarted, "b")); n != 1 {
		t.Fatalf("b's dispatch recorded %d times before Shutdown, want once", n)
	}

	if _, err := eng.Start(t.Context(), troupe.Request{Query: "q"}); !errors.Is(err, troupe.ErrShutdown) {
		t.Errorf("Start after Shutdown: %v", err)
	}
	if _, err := eng.Resume(t.Context(), "run_shut", engine.ResumeOptions{}); !errors.Is(err, troupe.ErrShutdown) {
		t.Errorf("Resume after Shutdown: %v", err)
	}

	// The next process.
	eng2 := newEngine(t, engine.Config{Registry: reg, Planner: chain("a", "b", "c"), Store: mem})
	r2, err := eng2.Resume(t.Context(), "run_shut", engine.ResumeOptions{})
	if err != nil {
		t.Fatalf("Resume: %v", err)
	}
	if st, err := r2.Wait(waitCtx(t)); err != nil || st.Status != troupe.RunCompleted {
		t.Fatalf("resumed run: %v, status %s", err, st.Status)
	}
	if a.Calls() != 1 || b.calls.Load() != 2 || c.Calls() != 1 {
		t.Errorf("calls a %d, b %d, c %d; want 1, 2, 1", a.Calls(), b.calls.Load(), c.Calls())
	}
	all, _ := mem.Events(t.Context(), "run_shut", 0)
	troupetest.CheckFinishedLog(t, all)
	if n := len(troupetest.Find(all, troupe.KindDispatchStarted, "b")); n != 1 {
		t.Errorf("b's dispatch recorded %d times, want once (it runs again under its id)", n)
	}
	if n := len(troupetest.Find(all, troupe.KindDispatchCompleted, "b")); n != 1 {
		t.Errorf("b completed %d times in the log, want once", n)
	}
}

// Shutdown with nothing live returns at once; the engine starts nothing after it.
func TestShutdownIdle(t *testing.T) {
	eng := newEngine(t, engine.Config{Registry: agents(t, "a", troupetest.NewScript()), Planner: chain("a")})
	run(t, eng, troupe.Request{Query: "q"})
	if err := eng.Shutdown(waitCtx(t)); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if _, err := eng.Start(t.Context(), troupe.Request{Query: "q"}); !errors.Is(err, troupe.ErrShutdown) {
		t.Errorf("Start after Shutdown: %v", err)
	}
	if _, err := troupetest.Collect(eng.Run(t.Context(), troupe.Request{Query: "q"})); !errors.Is(err, troupe.ErrShutdown) {
		t.Errorf("Run after Shutdown: %v", err)
	}
	if err := eng.Shutdown(waitCtx(t)); err != nil {
		t.Errorf("second Shutdown: %v", err)
	}
}

// A run paused for a human is not live: Shutdown leaves its log as it is, and it resumes with
// the answer on another engine.
func TestShutdownLeavesPausedRun(t *testing.T) {
	var calls atomic.Int64
	mem := memory.New()
	reg := agents(t, "tutor", asker(&calls))
	eng := newEngine(t, engine.Config{Registry: reg, Planner: chain("tutor"), Store: mem})
	r, err := eng.Start(t.Context(), troupe.Request{Query: "teach me"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Wait(waitCtx(t)); !errors.Is(err, troupe.ErrPaused) {
		t.Fatalf("Wait: %v; want paused", err)
	}
	before, _ := mem.Events(t.Context(), r.ID(), 0)
	if err := eng.Shutdown(waitCtx(t)); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	after, _ := mem.Events(t.Context(), r.ID(), 0)
	if len(after) != len(before) || troupetest.Last(after).Kind != troupe.KindRunPaused {
		t.Fatalf("log of %d events became %d, ending %s", len(before), len(after), troupetest.Last(after).Kind)
	}
	if _, err := r.Wait(waitCtx(t)); !errors.Is(err, troupe.ErrPaused) {
		t.Errorf("Wait after Shutdown: %v; still paused", err)
	}
	q := troupetest.Last(after).Data.(*troupe.Outcome).Questions[0]
	eng2 := newEngine(t, engine.Config{Registry: reg, Planner: chain("tutor"), Store: mem})
	r2, err := eng2.Resume(t.Context(), r.ID(), engine.ResumeOptions{Answers: []troupe.Answer{{QuestionID: q.ID, Text: "decimals"}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r2.Wait(waitCtx(t)); err != nil {
		t.Errorf("resumed run: %v", err)
	}
}

// Shutdown at any moment of many runs leaves every log either finished or valid and
// resumable to completion, each agent's recorded result never run again.
func TestShutdownAnyMoment(t *testing.T) {
	for trial := range 8 {
		t.Run(fmt.Sprint("trial ", trial), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(trial), 7))
			// The agents' goroutines share the sleeps, drawn up front.
			sleeps := make([]time.Duration, 64)
			for i := range sleeps {
				sleeps[i] = time.Duration(rng.Int64N(int64(time.Millisecond)))
			}
			var n atomic.Int64
			sleepy := func() troupe.Agent {
				return troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
					select {
					case <-time.After(sleeps[int(n.Add(1))%len(sleeps)]):
					case <-ctx.Done():
						return nil, ctx.Err()
					}
					return &troupe.Result{AgentResult: map[string]any{d.TargetAgent: true}}, nil
				})
			}
			reg := agents(t, "a", sleepy(), "b", sleepy(), "c", sleepy(), "d", sleepy())
			mem := memory.New()
			eng := newEngine(t, engine.Config{Registry: reg, Planner: chain("a", "b", "c", "d"), Store: mem})
			var runs []*engine.Run
			for i := range 10 {
				r, err := eng.Start(t.Context(), troupe.Request{Query: "q", RunID: fmt.Sprint("run_", i)})
				if err != nil {
					t.Fatal(err)
				}
				runs = append(runs, r)
			}
			time.Sleep(time.Duration(trial) * 700 * time.Microsecond) // from at once to after most have finished
			if err := eng.Shutdown(waitCtx(t)); err != nil {
				t.Fatalf("Shutdown: %v", err)
			}
			eng2 := newEngine(t, engine.Config{Registry: reg, Planner: chain("a", "b", "c", "d"), Store: mem})
			stopped := 0
			defer func() { t.Logf("%d of %d runs shut down", stopped, len(runs)) }()
			for _, r := range runs {
				_, err := r.Wait(waitCtx(t))
				evs, _ := mem.Events(t.Context(), r.ID(), 0)
				troupetest.CheckLog(t, evs)
				switch {
				case err == nil:
					troupetest.CheckFinishedLog(t, evs)
					continue
				case !errors.Is(err, troupe.ErrShutdown):
					t.Fatalf("%s: %v", r.ID(), err)
				}
				stopped++
				last := troupetest.Last(evs)
				if last.Stage.Terminal() {
					t.Fatalf("%s: shut down with %s recorded", r.ID(), last.Kind)
				}
				r2, err := eng2.Resume(t.Context(), r.ID(), engine.ResumeOptions{})
				if err != nil {
					t.Fatalf("%s: Resume: %v", r.ID(), err)
				}
				if _, err := r2.Wait(waitCtx(t)); err != nil {
					t.Fatalf("%s: resumed: %v", r.ID(), err)
				}
				all, _ := mem.Events(t.Context(), r.ID(), 0)
				troupetest.CheckFinishedLog(t, all)
				for _, agent := range []string{"a", "b", "c", "d"} {
					if k := len(troupetest.Find(all, troupe.KindDispatchStarted, agent)); k != 1 {
						t.Errorf("%s: %s dispatched %d times in the log", r.ID(), agent, k)
					}
				}
			}
		})
	}
}

// setupUntilDone is an agent whose Setup returns only once its context ends (saying on entered
// that it has begun), as a Setup that dials a slow server does.
type setupUntilDone struct{ entered chan struct{} }

func (a *setupUntilDone) Run(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
	return &troupe.Result{AgentResult: map[string]any{"ran": true}}, nil
}

func (a *setupUntilDone) Setup(ctx context.Context) error {
	close(a.entered)
	<-ctx.Done()
	return context.Cause(ctx)
}

// A Start that Shutdown overtakes while its agents are being set up, before anything of the
// run is recorded, fails with troupe.ErrShutdown and no run: there is no log to resume, and
// the error says to submit the request again rather than that the run can be resumed.
func TestStartOvertakenByShutdownReturnsNoRun(t *testing.T) {
	a := &setupUntilDone{entered: make(chan struct{})}
	reg := agents(t, "a", a)
	mem := memory.New()
	eng := newEngine(t, engine.Config{Registry: reg, Planner: chain("a"), Store: mem})
	type started struct {
		r   *engine.Run
		err error
	}
	done := make(chan started, 1)
	go func() {
		r, err := eng.Start(t.Context(), troupe.Request{Query: "q", RunID: "run_overtaken"})
		done <- started{r, err}
	}()
	<-a.entered
	if err := eng.Shutdown(waitCtx(t)); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	got := <-done
	if got.r != nil || !errors.Is(got.err, troupe.ErrShutdown) {
		t.Fatalf("Start returned a run (%t) and %v; want no run and troupe.ErrShutdown", got.r != nil, got.err)
	}
	if msg := got.err.Error(); !strings.Contains(msg, "nothing to resume") || strings.Contains(msg, "can be resumed") {
		t.Errorf("Start's error %q; want it to say there is nothing to resume", msg)
	}
	if evs, _ := mem.Events(t.Context(), "run_overtaken", 0); len(evs) != 0 {
		t.Errorf("the store holds %d events of a run Start says was not started", len(evs))
	}
	if _, err := eng.Resume(t.Context(), "run_overtaken", engine.ResumeOptions{}); !errors.Is(err, troupe.ErrShutdown) {
		t.Errorf("Resume after Shutdown: %v", err)
	}
}
