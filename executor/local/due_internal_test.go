package local

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

type funcJob struct {
	run  func(context.Context)
	done func(bool)
}

func (j *funcJob) Run(ctx context.Context) {
	if j.run != nil {
		j.run(ctx)
	}
}

func (j *funcJob) Done(expired bool) {
	if j.done != nil {
		j.done(expired)
	}
}

func recv[T any](t *testing.T, c <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: nothing after 10s", what)
		panic("unreachable")
	}
}

// inExpire reports whether the caller was called from scope.expire.
func inExpire() bool {
	pc := make([]uintptr, 16)
	frames := runtime.CallersFrames(pc[:runtime.Callers(2, pc)])
	for {
		f, more := frames.Next()
		if strings.HasSuffix(f.Function, ".(*scope).expire") {
			return true
		}
		if !more {
			return false
		}
	}
}

// TestWaitedScopeLeftOffTheTimer: a scope the timer has taken off its heap to expire, but has
// not reached yet, is waited for, handed a job with a far deadline that returns at once, and
// waited for again. Once the timer has been through it, the executor must keep nothing of the
// scope: it was kept on the heap until that far deadline, with no job to expire.
func TestWaitedScopeLeftOffTheTimer(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var now atomic.Int64 // nanoseconds after t0 on the executor's clock
	var hold atomic.Bool // the next clock reading in expire waits for unhold
	entered, unhold := make(chan struct{}, 2), make(chan struct{})
	e := New(Config{Clock: func() time.Time {
		if inExpire() {
			// Called in expire with the scope's lock held: say so, and hold there once.
			if hold.CompareAndSwap(true, false) {
				entered <- struct{}{}
				<-unhold
			} else {
				select {
				case entered <- struct{}{}:
				default:
				}
			}
		}
		return t0.Add(time.Duration(now.Load()))
	}})

	// s1 has a job that ignores its context, due first; s2 a job that returned, due second.
	block := make(chan struct{})
	defer close(block)
	s1 := e.Scope(t.Context()).(*scope)
	expired := make(chan bool, 1)
	s1.Go(&funcJob{run: func(context.Context) { <-block }, done: func(x bool) { expired <- x }}, 0, t0.Add(time.Millisecond))
	s2 := e.Scope(t.Context()).(*scope)
	done2 := make(chan bool, 1)
	s2.Go(&funcJob{done: func(x bool) { done2 <- x }}, 0, t0.Add(2*time.Millisecond))
	recv(t, done2, "Done of s2's first job")

	// Both are due: the timer takes them off its heap and holds in expire of s1.
	hold.Store(true)
	now.Store(int64(3 * time.Millisecond))
	recv(t, entered, "the timer to expire s1")

	// s2 is waited for, given a job with a far deadline that returns, and waited for again.
	s2.Wait()
	var wg sync.WaitGroup
	wg.Add(1)
	s2.Go(&funcJob{done: func(bool) { wg.Done() }}, 0, t0.Add(time.Hour))
	wg.Wait()

	close(unhold)
	if !recv(t, expired, "Done of s1's job") {
		t.Fatal("Done(false) for a job still blocked")
	}
	recv(t, entered, "the timer to reach s2")
	s2.Wait() // after the timer is through s2: it held s2's lock while in expire
	s1.Wait()

	e.tmu.Lock()
	defer e.tmu.Unlock()
	for _, s := range e.due {
		switch s {
		case s1:
			t.Error("s1 is still on the executor's heap after Wait")
		case s2:
			t.Errorf("s2 is still on the executor's heap after Wait, due at %v with no job running", s.dueAt.Sub(t0))
		}
	}
}
