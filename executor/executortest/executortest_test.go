package executortest_test

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/executor/executortest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// refExec is the suite's reference executor: the plainest implementation of the contract, a
// goroutine per job and the standard library's contexts. The suite must pass against it: that
// is what shows the suite asks for the contract and not for the local executor's habits.
type refExec struct {
	stragglers sync.WaitGroup
}

func (e *refExec) Now() time.Time { return time.Now() }
func (e *refExec) Seed() uint64   { return rand.Uint64() }

func (e *refExec) Scope(ctx context.Context) troupe.Scope { return &refScope{e: e, ctx: ctx} }

func (e *refExec) Drain(ctx context.Context) error {
	done := make(chan struct{})
	go func() { e.stragglers.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

type refScope struct {
	e   *refExec
	ctx context.Context
	wg  sync.WaitGroup // one per job until its Done has returned
}

func (s *refScope) Go(j troupe.Job, delay time.Duration, deadline time.Time) {
	s.wg.Add(1)
	go func() {
		if delay > 0 {
			t := time.NewTimer(delay)
			select {
			case <-t.C:
				if !deadline.IsZero() && !time.Now().Before(deadline) {
					j.Done(true) // its deadline passed while it waited: it expires unrun
					s.wg.Done()
					return
				}
			case <-s.ctx.Done():
				t.Stop()
			}
		}
		s.run(j, deadline)
	}()
}

func (s *refScope) run(j troupe.Job, deadline time.Time) {
	ctx, cancel := context.WithCancel(s.ctx)
	if !deadline.IsZero() {
		ctx, cancel = context.WithDeadline(s.ctx, deadline)
	}
	defer cancel()
	var finished atomic.Bool
	handedOver := make(chan struct{}) // closed once an expired job is counted as a straggler
	var timer *time.Timer
	if !deadline.IsZero() {
		timer = time.AfterFunc(time.Until(deadline), func() {
			if finished.CompareAndSwap(false, true) {
				s.e.stragglers.Add(1)
				close(handedOver)
				j.Done(true)
				s.wg.Done()
			}
		})
	}
	j.Run(ctx)
	if timer != nil {
		timer.Stop()
	}
	if finished.CompareAndSwap(false, true) {
		j.Done(false)
		s.wg.Done()
		return
	}
	<-handedOver
	s.e.stragglers.Done()
}

func (s *refScope) Wait() { s.wg.Wait() }

func TestReferenceExecutor(t *testing.T) {
	executortest.Run(t, func(t *testing.T) troupe.Executor { return &refExec{} })
}
