package local_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/executor/executortest"
	"github.com/troupehq/troupe/executor/local"
	"github.com/troupehq/troupe/troupetest"
)

// delayedJob hands s a job delayed by delay with deadline: ran says whether its Run was called,
// and dones receives each Done's argument.
func delayedJob(s troupe.Scope, delay time.Duration, deadline time.Time) (ran *atomic.Bool, dones chan bool) {
	ran, dones = new(atomic.Bool), make(chan bool, 2)
	s.Go(&executortest.JobFuncs{
		RunFunc:  func(context.Context) { ran.Store(true) },
		DoneFunc: func(x bool) { dones <- x },
	}, delay, deadline)
	return ran, dones
}

// A job whose deadline passes while it waits out its delay has passed first and expires without
// running (troupe.Scope.Go), at its deadline: delayed an hour with a deadline 50 ms away, it was
// reported only when the hour ended. (The engine never sets such a deadline: a retry's includes
// its delay.)
func TestDeadlineWithinADelayExpiresTheJobThen(t *testing.T) {
	e := local.New(local.Config{CancelGrace: grace})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	s := e.Scope(ctx)
	ran, dones := delayedJob(s, time.Hour, e.Now().Add(50*time.Millisecond))
	select {
	case x := <-dones:
		if !x {
			t.Errorf("Done(false), want Done(true)")
		}
	case <-time.After(2 * time.Second):
		t.Errorf("no Done 2s after a deadline 50ms away (the job waits out its one-hour delay)")
	}
	cancel()
	executortest.Wait(t, s)
	if ran.Load() {
		t.Errorf("Run was called for a job whose deadline passed during its delay")
	}
}

// Cancelling a scope whose delayed job's deadline has passed (by the executor's clock, before its
// timer fired) expires that job rather than starting it: it was run, and reported Done(false)
// as an ordinary finish.
func TestCancelDoesNotStartADelayedJobPastItsDeadline(t *testing.T) {
	clock := troupetest.NewClock(time.Unix(1000, 0))
	e := local.New(local.Config{CancelGrace: grace, Clock: clock.Now})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	s := e.Scope(ctx)
	ran, dones := delayedJob(s, 2*time.Hour, clock.Now().Add(time.Hour))
	clock.Advance(90 * time.Minute) // the deadline has passed; the real timer, set for an hour, has not fired
	cancel()
	x := executortest.Recv(t, dones, "Done")
	executortest.Wait(t, s)
	if ran.Load() || !x {
		t.Errorf("Run called: %v, Done(%v); want a job whose deadline passed during its delay expired without running", ran.Load(), x)
	}
}
