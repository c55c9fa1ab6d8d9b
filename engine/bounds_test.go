package engine_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/engine"
	"github.com/troupehq/troupe/executor/local"
	"github.com/troupehq/troupe/store/memory"
	"github.com/troupehq/troupe/troupetest"
)

// stuckTeardown is set up, runs, and tears down only once released, whatever its context says.
type stuckTeardown struct {
	troupe.Agent
	release chan struct{}
}

func (stuckTeardown) Setup(context.Context) error      { return nil }
func (a stuckTeardown) Teardown(context.Context) error { <-a.release; return nil }

// TeardownTimeout bounds a Teardown that ignores its context, as a dispatch's timeout bounds an
// agent that does: the run ends with a warning naming the agent, and the executor keeps the
// straggler until it returns.
func TestTeardownIgnoringItsContextIsBounded(t *testing.T) {
	a := stuckTeardown{Agent: troupetest.NewScript(), release: make(chan struct{})}
	exec := local.New(local.Config{})
	eng := newEngine(t, engine.Config{Registry: agents(t, "a", a), Executor: exec, TeardownTimeout: 20 * time.Millisecond})
	r, err := eng.Start(t.Context(), troupe.Request{Query: "q"})
	if err != nil {
		t.Fatal(err)
	}
	defer close(a.release) // before newEngine's Close drains the straggler
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	st, err := r.Wait(ctx)
	if err != nil {
		t.Fatalf("Wait: %v (status %s): the teardown held the run", err, st.Status)
	}
	if !slices.ContainsFunc(st.Warnings, func(w string) bool { return strings.HasPrefix(w, "teardown of a: ") }) {
		t.Errorf("warnings %q name no teardown of a", st.Warnings)
	}
	if n := exec.Stragglers(); n != 1 {
		t.Errorf("%d stragglers, want the teardown", n)
	}
}

// blockingStore blocks the append of a run's terminal event until released.
type blockingStore struct {
	troupe.Store
	blocked, release chan struct{}
}

func (s *blockingStore) Append(ctx context.Context, evs ...troupe.Event) error {
	if slices.ContainsFunc(evs, func(ev troupe.Event) bool { return ev.Kind == troupe.KindRunCompleted }) {
		close(s.blocked)
		<-s.release
	}
	return s.Store.Append(ctx, evs...)
}

// Close gives up when its context ends first, here with a run blocked in its store.
func TestCloseReturnsWhenItsContextEnds(t *testing.T) {
	st := &blockingStore{Store: memory.New(), blocked: make(chan struct{}), release: make(chan struct{})}
	eng := newEngine(t, engine.Config{Registry: agents(t, "a", troupetest.NewScript()), Store: st})
	r, err := eng.Start(t.Context(), troupe.Request{Query: "q"})
	if err != nil {
		t.Fatal(err)
	}
	<-st.blocked
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	closed := make(chan error, 1)
	go func() { closed <- eng.Close(ctx) }()
	select {
	case err := <-closed:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Close: %v, want its context's deadline", err)
		}
	case <-time.After(10 * time.Second):
		t.Error("Close did not return when its context ended")
		defer func() { <-closed }() // it does once the store lets the run end
	}
	close(st.release)
	if _, err := r.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// Wait gives up when its context ends first, also with a run stuck holding its lock in a store
// append, and returns the run's ids.
func TestWaitReturnsWhenItsContextEnds(t *testing.T) {
	st := &blockingStore{Store: memory.New(), blocked: make(chan struct{}), release: make(chan struct{})}
	eng := newEngine(t, engine.Config{Registry: agents(t, "a", troupetest.NewScript()), Store: st})
	r, err := eng.Start(t.Context(), troupe.Request{Query: "q", RunID: "run_stuck"})
	if err != nil {
		t.Fatal(err)
	}
	<-st.blocked
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	waited := make(chan error, 1)
	var state troupe.OrchestratorState
	go func() {
		var err error
		state, err = r.Wait(ctx)
		waited <- err
	}()
	select {
	case err := <-waited:
		if !errors.Is(err, context.DeadlineExceeded) || state.RunID != "run_stuck" {
			t.Errorf("Wait: %v, run %q; want its context's deadline and the run's id", err, state.RunID)
		}
	case <-time.After(10 * time.Second):
		t.Error("Wait did not return when its context ended")
		defer func() { <-waited }()
	}
	close(st.release)
	if _, err := r.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// hiddenExec is an executor that is not a troupe.Watcher (nor has local's Drain).
type hiddenExec struct{ troupe.Executor }

// With an executor that cannot tell of the caller's context's end, a job of the run's waits
// for it: cancelling the caller's context still cancels the run, and a run that ends first
// ends the job (goleak checks).
func TestCallerCancelWithoutWatcher(t *testing.T) {
	if _, ok := any(hiddenExec{}).(troupe.Watcher); ok {
		t.Fatal("hiddenExec is a Watcher")
	}
	a := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		if d.Query == "wait" {
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return &troupe.Result{AgentResult: map[string]any{"ok": true}}, nil
	})
	exec := local.New(local.Config{})
	eng := newEngine(t, engine.Config{Registry: agents(t, "a", a), Executor: hiddenExec{exec}})

	ctx, cancel := context.WithCancel(t.Context())
	r, err := eng.Start(ctx, troupe.Request{Query: "wait"})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if st, err := r.Wait(t.Context()); !errors.Is(err, troupe.ErrCancelled) || st.Status != troupe.RunCancelled {
		t.Errorf("after the caller's cancel: status %s, err %v", st.Status, err)
	}

	ctx2, cancel2 := context.WithCancel(t.Context())
	defer cancel2()
	r, err = eng.Start(ctx2, troupe.Request{Query: "quick"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Wait(t.Context()); err != nil {
		t.Errorf("a run its caller did not cancel: %v", err)
	}
	if err := exec.Drain(t.Context()); err != nil {
		t.Fatal(err)
	}
}
