package engine_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/engine"
	"github.com/troupehq/troupe/executor/local"
	"github.com/troupehq/troupe/troupetest"
)

// hooked is an agent's view of its dispatch context that runs hook on the first Value call.
// Deriving a child context (context.WithTimeoutCause, as the exec agent does first) asks the
// parent for its cancelCtx through Value after it has checked the parent is not done and
// before it registers with the parent's AfterFunc: hook cancels the run in that window.
type hooked struct {
	context.Context
	af   interface{ AfterFunc(func()) func() bool }
	once sync.Once
	hook func()
}

func (h *hooked) Value(key any) any {
	h.once.Do(h.hook)
	return h.Context.Value(key)
}

func (h *hooked) AfterFunc(f func()) func() bool { return h.af.AfterFunc(f) }

// A run cancelled just as its agent derives a context from the dispatch's ends the dispatch
// CANCELLED and leaves no straggler. It used to hang the agent's goroutine inside the context
// package for good: the dispatch was recorded as a timeout once the cancel grace ran out, and
// Close waited on a straggler that never returned (seen in troupe run's Ctrl-C test).
func TestCancelWhileAgentDerivesContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	agent := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		af, ok := ctx.(interface{ AfterFunc(func()) func() bool })
		if !ok {
			return nil, errors.New("the dispatch context has no AfterFunc method")
		}
		h := &hooked{Context: ctx, af: af, hook: func() {
			cancel()     // Ctrl-C
			<-ctx.Done() // the run's scope has cancelled this dispatch
		}}
		dctx, stop := context.WithTimeoutCause(h, time.Hour, troupe.ErrTimeout)
		defer stop()
		<-dctx.Done()
		return nil, context.Cause(dctx)
	})
	exec := local.New(local.Config{CancelGrace: time.Second})
	eng := newEngine(t, engine.Config{Registry: agents(t, "sleeper", agent), Executor: exec})
	evs, err := troupetest.Collect(eng.Run(ctx, troupe.Request{Query: "q"}))
	if err != nil {
		t.Fatal(err)
	}
	troupetest.CheckLog(t, evs)
	if o := outcome(t, evs); o.Status != troupe.RunCancelled {
		t.Errorf("run %s, want cancelled", o.Status)
	}
	got := results(evs)["sleeper"]
	if len(got) != 1 || got[0].Status != troupe.StatusCancelled {
		for _, r := range got {
			t.Errorf("sleeper: %s %v", r.Status, r.Errors)
		}
		t.Fatalf("sleeper: %d results, want one cancelled", len(got))
	}
	cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer ccancel()
	if err := eng.Close(cctx); err != nil {
		t.Errorf("Close: %v (%d stragglers)", err, exec.Stragglers())
	}
}

// An agent that ignores its context outlives the cancel grace of a cancelled run: its dispatch
// is recorded as CANCELLED, for what happened, not as a timeout of its (far) deadline.
func TestStragglerOfACancelledRunIsCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	started, release := make(chan struct{}), make(chan struct{})
	agent := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		close(started)
		<-release // deaf to ctx
		return &troupe.Result{}, nil
	})
	exec := local.New(local.Config{CancelGrace: 20 * time.Millisecond})
	eng := newEngine(t, engine.Config{Registry: agents(t, "deaf", agent), Executor: exec})
	go func() { <-started; cancel() }()
	evs, err := troupetest.Collect(eng.Run(ctx, troupe.Request{Query: "q"}))
	close(release)
	if err != nil {
		t.Fatal(err)
	}
	troupetest.CheckLog(t, evs)
	got := results(evs)["deaf"]
	if len(got) != 1 || got[0].Status != troupe.StatusCancelled || got[0].Errors[0].Code != troupe.CodeCancelled {
		for _, r := range got {
			t.Errorf("deaf: %s %v", r.Status, r.Errors)
		}
		t.Fatalf("deaf: %d results, want one cancelled", len(got))
	}
	cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer ccancel()
	if err := eng.Close(cctx); err != nil {
		t.Errorf("Close: %v", err)
	}
}

// An agent that finishes its work after its deadline (it notices the cancellation late, and
// returns a result anyway) is a straggler: the run has recorded its timeout and gone on while
// the agent's goroutine builds a result nobody reads. That goroutine must share nothing
// unguarded with the run; under -race this caught it writing the call's review flag as the
// deadline's goroutine read it.
func TestStragglerSharesNothingWithTheRun(t *testing.T) {
	late := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		<-ctx.Done() // the deadline: the executor cancels, then records the timeout
		return &troupe.Result{AgentResult: map[string]any{"late": true}, RequiresHuman: true}, nil
	})
	for range 20 {
		eng, err := engine.New(engine.Config{Registry: agents(t, "late", opt(late, troupe.WithTimeout(time.Millisecond))), Planner: chain("late")})
		if err != nil {
			t.Fatal(err)
		}
		evs := run(t, eng, troupe.Request{Query: "q"})
		if r := results(evs)["late"]; len(r) != 1 || r[0].Status != troupe.StatusTimeout {
			t.Fatalf("results %+v, want one timeout", r)
		}
		if err := eng.Close(t.Context()); err != nil { // waits for the straggler to return
			t.Fatal(err)
		}
	}
}
