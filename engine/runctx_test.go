package engine_test

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/engine"
)

// The run's context behaves as a context.WithCancelCause of the caller's would: an agent, and
// a context its router derives, see the run's cancellation with its cause, and the caller's
// values.
func TestRunContextCause(t *testing.T) {
	type key struct{}
	type seen struct {
		err, cause error
		value      any
	}
	routed := make(chan seen, 1)
	entered := make(chan struct{})
	router := troupe.RouterFunc(func(ctx context.Context, in troupe.RouteInput, _ troupe.Context) (troupe.RoutingDecision, error) {
		// A context derived from the run's, as a model client would make; it is done when
		// the run is cancelled, whoever asks first.
		dctx, stop := context.WithTimeout(ctx, time.Hour)
		go func() {
			defer stop()
			<-dctx.Done()
			routed <- seen{dctx.Err(), context.Cause(dctx), dctx.Value(key{})}
		}()
		return troupe.RoutingDecision{Target: in.Task.Agent, Reason: "static"}, nil
	})
	agentSaw := make(chan seen, 1)
	blocker := troupe.AgentFunc(func(ctx context.Context, _ *troupe.Dispatch) (*troupe.Result, error) {
		close(entered)
		<-ctx.Done()
		agentSaw <- seen{ctx.Err(), context.Cause(ctx), ctx.Value(key{})}
		return nil, ctx.Err()
	})
	eng := newEngine(t, engine.Config{Registry: agents(t, "a", blocker), Planner: chain("a"), Router: router})
	ctx := context.WithValue(t.Context(), key{}, "caller's")
	r, err := eng.Start(ctx, troupe.Request{Query: "q"})
	if err != nil {
		t.Fatal(err)
	}
	<-entered
	r.Cancel()
	if _, err := r.Wait(context.Background()); !errors.Is(err, troupe.ErrCancelled) {
		t.Fatalf("Wait: %v, want cancelled", err)
	}
	for who, ch := range map[string]chan seen{"agent": agentSaw, "router's derived context": routed} {
		s := <-ch
		if s.err != context.Canceled || !errors.Is(s.cause, troupe.ErrCancelled) || s.value != "caller's" {
			t.Errorf("%s saw Err %v, Cause %v, value %v; want context.Canceled, troupe.ErrCancelled, the caller's value", who, s.err, s.cause, s.value)
		}
	}
}

// A run started on a context that is already cancelled ends cancelled with the caller's cause,
// without running its agent.
func TestRunContextParentAlreadyCancelled(t *testing.T) {
	a := troupe.AgentFunc(func(ctx context.Context, _ *troupe.Dispatch) (*troupe.Result, error) {
		t.Error("agent ran in a run whose caller had already cancelled")
		return noopResult, nil
	})
	eng := newEngine(t, engine.Config{Registry: agents(t, "a", a), Planner: chain("a")})
	why := errors.New("caller gave up")
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(why)
	r, err := eng.Start(ctx, troupe.Request{Query: "q"})
	if err != nil {
		t.Fatal(err)
	}
	st, err := r.Wait(context.Background())
	var oe *troupe.OrchestrationError
	if st.Status != troupe.RunCancelled || !errors.As(err, &oe) || oe.Message != why.Error() {
		t.Fatalf("run ended %s (%v), want cancelled saying %q", st.Status, err, why)
	}
}

// A finished run is not kept by the caller's context, however long that lives: the run stops
// watching it when it ends.
func TestFinishedRunNotKeptByCallerContext(t *testing.T) {
	eng := newEngine(t, engine.Config{Registry: agents(t, "a", troupe.AgentFunc(noop)), Planner: chain("a")})
	ctx, cancel := context.WithCancel(context.Background()) // outlives the run
	defer cancel()
	collected := make(chan struct{})
	func() {
		r, err := eng.Start(ctx, troupe.Request{Query: "q"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		runtime.AddCleanup(r, func(ch chan struct{}) { close(ch) }, collected)
	}()
	for deadline := time.Now().Add(10 * time.Second); ; {
		runtime.GC()
		select {
		case <-collected:
			return
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("a finished run is still reachable while its caller's context lives")
		}
	}
}
