package local_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/troupehq/troupe/executor/executortest"
	"github.com/troupehq/troupe/executor/local"
)

// TestDrainGivingUpLeavesNothing: a Drain whose context ends before the stragglers return
// leaves nothing behind (a server polling Drain with a timeout while an agent never returns
// must not gain a goroutine per call), and stragglers can come and go afterwards while
// those Drains are long over.
func TestDrainGivingUpLeavesNothing(t *testing.T) {
	e := local.New(local.Config{})
	block, release := released(t, e)
	straggle := func(block <-chan struct{}) {
		t.Helper()
		s := e.Scope(t.Context())
		expired := make(chan bool, 1)
		s.Go(&executortest.JobFuncs{
			RunFunc:  func(context.Context) { <-block },
			DoneFunc: func(x bool) { expired <- x },
		}, 0, e.Now().Add(-time.Second))
		if !executortest.Recv(t, expired, "Done of a job past its deadline") {
			t.Fatal("Done(false) for a job still blocked")
		}
		executortest.Wait(t, s)
	}
	straggle(block)
	before := goleak.IgnoreCurrent() // the straggler, blocked in its Run

	errGiveUp := errors.New("give up")
	ctx, cancel := context.WithCancelCause(t.Context())
	cancel(errGiveUp)
	for range 10 {
		if err := e.Drain(ctx); !errors.Is(err, errGiveUp) {
			t.Fatalf("Drain with a done context and a straggler = %v, want %v", err, errGiveUp)
		}
	}
	if err := goleak.Find(before); err != nil {
		t.Errorf("Drains that gave up left goroutines behind: %v", err)
	}

	// The straggler returns; a new one comes after, and is drained.
	release()
	drain(t, e)
	block2 := make(chan struct{})
	straggle(block2)
	close(block2)
	drain(t, e)
	if n := e.Stragglers(); n != 0 {
		t.Errorf("after Drain: Stragglers() = %d", n)
	}
}
