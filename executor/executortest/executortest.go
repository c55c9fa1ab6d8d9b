// Package executortest is the conformance suite of troupe.Executor: every implementation (the
// local goroutine executor now; a Temporal executor planned) runs the same tests, so the
// engine sees the same semantics on each.
//
//	func TestConformance(t *testing.T) {
//		executortest.Run(t, func(t *testing.T) troupe.Executor { return local.New(local.Config{}) })
//	}
//
// The suite asserts order and causality with channels, never wall-clock upper bounds: where
// something must happen "promptly" it is given a generous bound (Patience), and where time
// must pass (a delay, a deadline) it is measured with the executor's own clock as a lower
// bound. Jobs that ignore their context are released when the test ends; an executor with a
// Drain(context.Context) error method (as local's) is drained then, so leak checkers see no
// stragglers.
//
// Where Scope's contract is silent the suite reads it as the context and sync packages would:
// a job's context keeps context.Context's own contract (Err is DeadlineExceeded or Canceled,
// context.Cause gives the scope's cause); Wait may be called again and returns at once; and a
// scope takes jobs after Wait with unchanged semantics.
package executortest

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/troupehq/troupe"
)

// Patience bounds every wait for something that must happen promptly. It is generous: reaching
// it means the thing did not happen, not that the machine was slow.
const Patience = 10 * time.Second

// Short is the deadline or delay the suite uses when one must pass.
const Short = 30 * time.Millisecond

// Run runs the conformance suite as subtests of t. newExec must return a ready executor; it may
// be a new one each time or a shared one, and may register cleanups on the t it is given.
func Run(t *testing.T, newExec func(t *testing.T) troupe.Executor) {
	t.Helper()
	tests := []struct {
		name string
		test func(t *testing.T, e troupe.Executor)
	}{
		{"NowAndSeed", testNowAndSeed},
		{"RunThenDone", testRunThenDone},
		{"DoneOncePerJob", testDoneOncePerJob},
		{"DeadlineExpires", testDeadlineExpires},
		{"DeadlineHonoured", testDeadlineHonoured},
		{"Delay", testDelay},
		{"ScopeCancel", testScopeCancel},
		{"CancelStartsDelayed", testCancelStartsDelayed},
		{"GoAfterCancel", testGoAfterCancel},
		{"ScopesIndependent", testScopesIndependent},
		{"DoneMayCallGo", testDoneMayCallGo},
		{"WaitWaitsForDone", testWaitWaitsForDone},
		{"WaitWaitsForRun", testWaitWaitsForRun},
		{"WaitWithoutJobs", testWaitWithoutJobs},
		{"WaitAgain", testWaitAgain},
		{"GoAfterWait", testGoAfterWait},
		{"ManyJobs", testManyJobs},
		{"ContextValues", testContextValues},
		{"ContextDeadline", testContextDeadline},
		{"ContextErr", testContextErr},
		{"DerivedContexts", testDerivedContexts},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.test(t, newExec(t)) })
	}
}

// JobFuncs is a troupe.Job made of functions; nil ones do nothing. The zero value is a job
// that does nothing.
type JobFuncs struct {
	RunFunc  func(ctx context.Context)
	DoneFunc func(expired bool)
}

// Run calls RunFunc.
func (j *JobFuncs) Run(ctx context.Context) {
	if j.RunFunc != nil {
		j.RunFunc(ctx)
	}
}

// Done calls DoneFunc.
func (j *JobFuncs) Done(expired bool) {
	if j.DoneFunc != nil {
		j.DoneFunc(expired)
	}
}

// probe is a job that records what happens to it. Its Run calls body (if any) between closing
// started and returned; each Done is counted and its expired flag sent on dones.
type probe struct {
	body     func(ctx context.Context)
	started  chan struct{}
	returned chan struct{}
	dones    chan bool // buffered: a second Done is recorded, not blocked
	nDone    atomic.Int32
	ctx      context.Context // set before started is closed
	early    atomic.Bool     // Done(false) came before Run returned
}

func newProbe(body func(ctx context.Context)) *probe {
	return &probe{body: body, started: make(chan struct{}), returned: make(chan struct{}), dones: make(chan bool, 4)}
}

func (p *probe) Run(ctx context.Context) {
	p.ctx = ctx
	close(p.started)
	defer close(p.returned)
	if p.body != nil {
		p.body(ctx)
	}
}

func (p *probe) Done(expired bool) {
	p.nDone.Add(1)
	if !expired && !closed(p.returned) {
		p.early.Store(true)
	}
	select {
	case p.dones <- expired:
	default:
	}
}

// check fails t unless Done was called exactly once, after Run returned if not expired.
func (p *probe) check(t *testing.T, name string) {
	t.Helper()
	if n := p.nDone.Load(); n != 1 {
		t.Errorf("%s: Done called %d times, want once", name, n)
	}
	if p.early.Load() {
		t.Errorf("%s: Done(false) called before Run returned", name)
	}
}

func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// Recv waits for a value on c for at most Patience and fails the test if none comes; what
// names the awaited thing in the failure.
func Recv[T any](t *testing.T, c <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(Patience):
		t.Fatalf("%s: nothing after %v", what, Patience)
		panic("unreachable")
	}
}

// Wait calls s.Wait and fails the test if it has not returned after Patience.
func Wait(t *testing.T, s troupe.Scope) {
	t.Helper()
	done := make(chan struct{})
	go func() { s.Wait(); close(done) }()
	Recv(t, done, "Scope.Wait")
}

// released returns a channel that jobs ignoring their context block on. It is closed when the
// test ends (or by calling release); then, if the executor can Drain, the test waits for the
// stragglers to return.
func released(t *testing.T, e troupe.Executor) (ch <-chan struct{}, release func()) {
	c := make(chan struct{})
	release = sync.OnceFunc(func() { close(c) })
	if d, ok := e.(interface{ Drain(context.Context) error }); ok {
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), Patience)
			defer cancel()
			if err := d.Drain(ctx); err != nil {
				t.Errorf("Drain after releasing every job: %v", err)
			}
		})
	}
	t.Cleanup(release)
	return c, release
}

// drain waits for stragglers if the executor can say when they are gone.
func drain(t *testing.T, e troupe.Executor) {
	t.Helper()
	if d, ok := e.(interface{ Drain(context.Context) error }); ok {
		ctx, cancel := context.WithTimeout(t.Context(), Patience)
		defer cancel()
		if err := d.Drain(ctx); err != nil {
			t.Fatalf("Drain: %v", err)
		}
	}
}

func testNowAndSeed(t *testing.T, e troupe.Executor) {
	a := e.Now()
	b := e.Now()
	if a.IsZero() || b.Before(a) {
		t.Errorf("Now() = %v then %v: want a non-zero clock that does not go back", a, b)
	}
	seeds := map[uint64]bool{}
	for range 8 {
		seeds[e.Seed()] = true
	}
	if len(seeds) < 2 {
		t.Errorf("8 calls of Seed() gave %d distinct values: not fresh entropy", len(seeds))
	}
}

func testRunThenDone(t *testing.T, e troupe.Executor) {
	s := e.Scope(t.Context())
	var errAtStart error
	p := newProbe(func(ctx context.Context) { errAtStart = ctx.Err() })
	s.Go(p, 0, time.Time{})
	if expired := Recv(t, p.dones, "Done"); expired {
		t.Error("Done(true) for a job with no deadline")
	}
	Wait(t, s)
	if p.ctx == nil {
		t.Fatal("Run got a nil context")
	}
	if errAtStart != nil {
		t.Errorf("Run's context was done at start: %v", errAtStart)
	}
	p.check(t, "job")
}

// testDoneOncePerJob: jobs that return in time get exactly one Done(false), after Run returns,
// whatever their delay and deadline.
func testDoneOncePerJob(t *testing.T, e troupe.Executor) {
	tests := []struct {
		name     string
		delay    time.Duration
		deadline time.Duration // from now; 0: none
	}{
		{"plain", 0, 0},
		{"deadline", 0, time.Hour},
		{"delay", time.Millisecond, 0},
		{"delay and deadline", 2 * time.Millisecond, time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := e.Scope(t.Context())
			var deadline time.Time
			if tt.deadline > 0 {
				deadline = e.Now().Add(tt.deadline)
			}
			probes := make([]*probe, 50)
			for i := range probes {
				probes[i] = newProbe(func(context.Context) { runtime.Gosched() })
				s.Go(probes[i], tt.delay, deadline)
			}
			Wait(t, s)
			for i, p := range probes {
				p.check(t, fmt.Sprint("job ", i))
				if len(p.dones) > 0 && <-p.dones {
					t.Errorf("job %d: Done(true) though Run returned long before its deadline", i)
				}
			}
		})
	}
}

// testDeadlineExpires: a job that ignores its context is reported expired once its deadline
// passes, while its Run still runs; its context is done; Wait does not wait for it; and its
// late return calls Done no more.
func testDeadlineExpires(t *testing.T, e troupe.Executor) {
	tests := []struct {
		name     string
		delay    time.Duration
		deadline time.Duration // from Go
	}{
		{"future deadline", 0, Short},
		{"past deadline", 0, -time.Second},
		{"deadline after delay", Short, 2 * Short},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			block, release := released(t, e)
			s := e.Scope(t.Context())
			deadline := e.Now().Add(tt.deadline)
			p := newProbe(func(context.Context) { <-block })
			s.Go(p, tt.delay, deadline)

			expired := Recv(t, p.dones, "Done")
			now := e.Now()
			if !expired {
				t.Fatal("Done(false) for a job whose Run is still blocked")
			}
			if now.Before(deadline) {
				t.Errorf("Done(true) at %v, before the deadline %v", now, deadline)
			}
			if closed(p.returned) {
				t.Fatal("suite bug: Run returned before being released")
			}
			if closed(p.started) {
				Recv(t, p.ctx.Done(), "the expired job's context to be done")
				if p.ctx.Err() == nil {
					t.Error("expired job's context is done but Err() is nil")
				}
			}

			// Wait returns with the straggler still running.
			Wait(t, s)
			release()
			if closed(p.started) {
				Recv(t, p.returned, "the released Run to return")
			}
			drain(t, e)
			p.check(t, "expired job")
		})
	}
}

// testDeadlineHonoured: a job that watches its context sees it done at its deadline and
// returns; Done is called once.
func testDeadlineHonoured(t *testing.T, e troupe.Executor) {
	s := e.Scope(t.Context())
	deadline := e.Now().Add(Short)
	saw := make(chan time.Time, 1) // Run may outlive Wait if it was reported expired
	p := newProbe(func(ctx context.Context) {
		select {
		case <-ctx.Done():
			saw <- e.Now()
		case <-time.After(Patience):
		}
	})
	s.Go(p, 0, deadline)
	sawAt := Recv(t, saw, "the job's context to be done at its deadline")
	Recv(t, p.dones, "Done")
	Wait(t, s)
	drain(t, e)
	if sawAt.Before(deadline) {
		t.Errorf("the job's context was done at %v, before its deadline %v", sawAt, deadline)
	}
	p.check(t, "job")
}

func testDelay(t *testing.T, e troupe.Executor) {
	t.Run("postpones Run", func(t *testing.T) {
		s := e.Scope(t.Context())
		var startedAt time.Time
		p := newProbe(func(context.Context) { startedAt = e.Now() })
		before := e.Now()
		s.Go(p, Short, time.Time{})
		Recv(t, p.dones, "Done")
		Wait(t, s)
		if got := startedAt.Sub(before); got < Short {
			t.Errorf("Run started %v after Go with a delay of %v", got, Short)
		}
		p.check(t, "delayed job")
	})
	t.Run("deadline passing during the delay", func(t *testing.T) {
		s := e.Scope(t.Context())
		p := newProbe(nil)
		s.Go(p, 2*Short, e.Now().Add(Short))
		if expired := Recv(t, p.dones, "Done"); !expired {
			t.Error("Done(false) for a job whose deadline passed before its delay ended")
		}
		Wait(t, s)
		drain(t, e)
		if closed(p.started) {
			t.Error("Run started after the job's deadline had passed")
		}
		p.check(t, "delayed job past its deadline")
	})
	t.Run("long delay", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		s := e.Scope(ctx)
		late := newProbe(nil)
		s.Go(late, time.Hour, time.Time{})
		now := newProbe(nil)
		s.Go(now, 0, time.Time{})
		Recv(t, now.dones, "Done of the undelayed job")
		if closed(late.started) {
			t.Error("a job delayed by an hour ran at once")
		}
		cancel() // ends the test: the delayed job starts now
		Recv(t, late.dones, "Done of the delayed job after cancel")
		Wait(t, s)
	})
}

// testScopeCancel: cancelling the scope's context cancels the context of every running job,
// with the scope's cause, whether or not the job has a deadline; each job gets one Done.
func testScopeCancel(t *testing.T, e troupe.Executor) {
	errStop := errors.New("executortest: stop")
	tests := []struct {
		name     string
		deadline time.Duration // from now; 0: none
	}{
		{"no deadline", 0},
		{"far deadline", time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			block, release := released(t, e)
			ctx, cancel := context.WithCancelCause(t.Context())
			defer cancel(nil)
			s := e.Scope(ctx)
			var deadline time.Time
			if tt.deadline > 0 {
				deadline = e.Now().Add(tt.deadline)
			}
			const n = 5
			probes := make([]*probe, n)
			sawDone := make(chan struct{}, n)
			for i := range probes {
				probes[i] = newProbe(func(ctx context.Context) {
					select {
					case <-ctx.Done():
						sawDone <- struct{}{}
					case <-block:
					}
				})
				s.Go(probes[i], 0, deadline)
			}
			for _, p := range probes {
				Recv(t, p.started, "Run to start")
			}
			cancel(errStop)
			for i := range n {
				if _, ok := recvOrFail(t, sawDone, fmt.Sprintf("job %d of %d to see its context done after the scope's was cancelled", i+1, n)); !ok {
					release() // let the jobs go so the test can end
					break
				}
			}
			for _, p := range probes {
				Recv(t, p.dones, "Done")
			}
			Wait(t, s)
			for i, p := range probes {
				p.check(t, fmt.Sprint("job ", i))
				if !errors.Is(context.Cause(p.ctx), errStop) {
					t.Errorf("job %d: context.Cause = %v, want the scope's cause %v", i, context.Cause(p.ctx), errStop)
				}
			}
		})
	}
}

// recvOrFail is recv that reports failure with t.Error and returns ok=false instead of
// stopping the test, so the caller can release what it blocked.
func recvOrFail[T any](t *testing.T, c <-chan T, what string) (T, bool) {
	t.Helper()
	select {
	case v := <-c:
		return v, true
	case <-time.After(Patience):
		t.Errorf("%s: nothing after %v", what, Patience)
		var zero T
		return zero, false
	}
}

// testCancelStartsDelayed: jobs waiting out a delay start at once when the scope is cancelled,
// with their context already done.
func testCancelStartsDelayed(t *testing.T, e troupe.Executor) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	s := e.Scope(ctx)
	var errs [3]error
	probes := make([]*probe, len(errs))
	for i := range probes {
		probes[i] = newProbe(func(ctx context.Context) { errs[i] = ctx.Err() })
		s.Go(probes[i], time.Hour, e.Now().Add(2*time.Hour))
	}
	cancel()
	for _, p := range probes {
		Recv(t, p.dones, "Done of a delayed job after cancel")
	}
	Wait(t, s)
	for i, p := range probes {
		p.check(t, fmt.Sprint("delayed job ", i))
		if errs[i] == nil {
			t.Errorf("delayed job %d started after cancel with a live context", i)
		}
	}
}

// testGoAfterCancel: a job handed to a scope whose context is already done still runs (with
// its context done) and gets its Done, delayed or not.
func testGoAfterCancel(t *testing.T, e troupe.Executor) {
	ctx, cancel := context.WithCancel(t.Context())
	s := e.Scope(ctx)
	cancel()
	for _, delay := range []time.Duration{0, time.Hour} {
		var errAtStart error
		p := newProbe(func(ctx context.Context) { errAtStart = ctx.Err() })
		s.Go(p, delay, time.Time{})
		Recv(t, p.dones, fmt.Sprintf("Done of a job with delay %v handed to a cancelled scope", delay))
		if errAtStart == nil {
			t.Errorf("delay %v: job ran with a live context in a cancelled scope", delay)
		}
		p.check(t, fmt.Sprint("job with delay ", delay))
	}
	Wait(t, s)
}

func testScopesIndependent(t *testing.T, e troupe.Executor) {
	block, release := released(t, e)
	ctxA, cancelA := context.WithCancel(t.Context())
	defer cancelA()
	a, b := e.Scope(ctxA), e.Scope(t.Context())
	pa := newProbe(func(ctx context.Context) { <-ctx.Done() })
	pb := newProbe(func(ctx context.Context) {
		select {
		case <-ctx.Done():
		case <-block:
		}
	})
	a.Go(pa, 0, e.Now().Add(time.Hour))
	b.Go(pb, 0, e.Now().Add(time.Hour))
	Recv(t, pa.started, "job of scope A to start")
	Recv(t, pb.started, "job of scope B to start")
	cancelA()
	Recv(t, pa.dones, "Done of scope A's job")
	Wait(t, a)
	if closed(pb.ctx.Done()) {
		t.Error("cancelling scope A cancelled the job of scope B")
	}
	release()
	Recv(t, pb.dones, "Done of scope B's job")
	Wait(t, b)
}

// testDoneMayCallGo: Done may hand the scope more jobs, from Done(false) and Done(true), in
// chains and fans; Wait waits for all of them.
func testDoneMayCallGo(t *testing.T, e troupe.Executor) {
	t.Run("chain of 1000", func(t *testing.T) {
		const n = 1000
		s := e.Scope(t.Context())
		var runs, dones atomic.Int32
		var order atomic.Int32 // set to i when job i's Done begins
		bad := make(chan string, 1)
		var next func(i int) troupe.Job
		next = func(i int) troupe.Job {
			return &JobFuncs{
				RunFunc: func(context.Context) {
					runs.Add(1)
					if i > 0 && order.Load() != int32(i-1) {
						select {
						case bad <- fmt.Sprintf("job %d ran before job %d's Done", i, i-1):
						default:
						}
					}
				},
				DoneFunc: func(expired bool) {
					order.Store(int32(i))
					dones.Add(1)
					if i+1 < n {
						s.Go(next(i+1), 0, time.Time{})
					}
				},
			}
		}
		s.Go(next(0), 0, time.Time{})
		Wait(t, s)
		if r, d := runs.Load(), dones.Load(); r != n || d != n {
			t.Errorf("after Wait: %d Runs and %d Dones, want %d of each", r, d, n)
		}
		select {
		case msg := <-bad:
			t.Error(msg)
		default:
		}
	})
	t.Run("fan out of 200", func(t *testing.T) {
		const n = 200
		s := e.Scope(t.Context())
		var dones atomic.Int32
		leaf := &JobFuncs{DoneFunc: func(bool) { dones.Add(1) }}
		s.Go(&JobFuncs{DoneFunc: func(bool) {
			for range n {
				s.Go(leaf, 0, time.Time{})
			}
		}}, 0, time.Time{})
		Wait(t, s)
		if d := dones.Load(); d != n {
			t.Errorf("after Wait: %d of the %d jobs started from Done are done", d, n)
		}
	})
	t.Run("from expired Done", func(t *testing.T) {
		const n = 3
		block, _ := released(t, e)
		s := e.Scope(t.Context())
		var expiredDones atomic.Int32
		follow := newProbe(nil)
		var next func(i int) troupe.Job
		next = func(i int) troupe.Job {
			return &JobFuncs{
				RunFunc: func(context.Context) { <-block },
				DoneFunc: func(expired bool) {
					if expired {
						expiredDones.Add(1)
					}
					if i+1 < n {
						s.Go(next(i+1), 0, e.Now().Add(Short))
					} else {
						s.Go(follow, 0, time.Time{})
					}
				},
			}
		}
		s.Go(next(0), 0, e.Now().Add(Short))
		Wait(t, s)
		if got := expiredDones.Load(); got != n {
			t.Errorf("%d of %d ignoring jobs were reported expired", got, n)
		}
		follow.check(t, "job started from the last expired Done")
	})
}

// testWaitWaitsForDone: Wait does not return while a Done is still running.
func testWaitWaitsForDone(t *testing.T, e troupe.Executor) {
	s := e.Scope(t.Context())
	gate := make(chan struct{})
	inDone := make(chan struct{})
	var finished atomic.Bool
	s.Go(&JobFuncs{DoneFunc: func(bool) {
		close(inDone)
		<-gate
		finished.Store(true)
	}}, 0, time.Time{})
	Recv(t, inDone, "Done to be called")
	waited := make(chan struct{})
	go func() { s.Wait(); close(waited) }()
	select {
	case <-waited:
		t.Error("Wait returned while Done was still running")
	case <-time.After(Short):
	}
	close(gate)
	Recv(t, waited, "Wait to return")
	if !finished.Load() {
		t.Error("Wait returned before Done did")
	}
}

// testWaitWaitsForRun: Wait does not return while a Run that has not expired is running.
func testWaitWaitsForRun(t *testing.T, e troupe.Executor) {
	block, release := released(t, e)
	s := e.Scope(t.Context())
	p := newProbe(func(context.Context) { <-block })
	s.Go(p, 0, e.Now().Add(time.Hour))
	Recv(t, p.started, "Run to start")
	waited := make(chan struct{})
	go func() { s.Wait(); close(waited) }()
	select {
	case <-waited:
		t.Error("Wait returned while a Run was still running")
	case <-time.After(Short):
	}
	release()
	Recv(t, waited, "Wait to return")
	if !closed(p.returned) || p.nDone.Load() != 1 {
		t.Error("Wait returned before Run returned and Done was called")
	}
}

func testWaitWithoutJobs(t *testing.T, e troupe.Executor) {
	Wait(t, e.Scope(t.Context()))
}

// testWaitAgain: Wait's condition still holds after it returned, so a second Wait returns too.
func testWaitAgain(t *testing.T, e troupe.Executor) {
	s := e.Scope(t.Context())
	p := newProbe(nil)
	s.Go(p, 0, time.Time{})
	Wait(t, s)
	Wait(t, s)
	p.check(t, "job")
}

// testGoAfterWait: a scope takes jobs after a Wait, with the same semantics: deadlines expire,
// cancelling the scope cancels them, and Wait waits for them.
func testGoAfterWait(t *testing.T, e troupe.Executor) {
	block, _ := released(t, e)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	s := e.Scope(ctx)
	// A job with a deadline that returns at once: whatever timer served it is left idle.
	first := newProbe(nil)
	s.Go(first, 0, e.Now().Add(Short))
	Wait(t, s)
	first.check(t, "first job")

	ignoring := newProbe(func(context.Context) { <-block })
	s.Go(ignoring, 0, e.Now().Add(2*Short))
	if expired, ok := recvOrFail(t, ignoring.dones, "Done of a job that ignores its context, handed over after Wait"); ok && !expired {
		t.Error("Done(false) for a job whose Run is still blocked")
	}

	watching := newProbe(func(ctx context.Context) {
		select {
		case <-ctx.Done():
		case <-block:
		}
	})
	s.Go(watching, 0, e.Now().Add(time.Hour))
	Recv(t, watching.started, "Run to start")
	cancel()
	if _, ok := recvOrFail(t, watching.returned, "a job handed over after Wait to see the scope's cancellation"); !ok {
		return // the cleanup releases the job
	}
	Wait(t, s)
}

// testManyJobs: a thousand jobs at once, handed over by one goroutine and by many, all run and
// all get one Done.
func testManyJobs(t *testing.T, e troupe.Executor) {
	const n = 1000
	for _, callers := range []int{1, 8} {
		t.Run(fmt.Sprint(callers, " callers"), func(t *testing.T) {
			s := e.Scope(t.Context())
			var runs atomic.Int32
			dones := make([]atomic.Int32, n)
			var wg sync.WaitGroup
			for c := range callers {
				wg.Go(func() {
					for i := c; i < n; i += callers {
						s.Go(&JobFuncs{
							RunFunc:  func(context.Context) { runs.Add(1) },
							DoneFunc: func(bool) { dones[i].Add(1) },
						}, 0, e.Now().Add(time.Hour))
					}
				})
			}
			wg.Wait()
			Wait(t, s)
			if r := runs.Load(); r != n {
				t.Errorf("%d of %d jobs ran", r, n)
			}
			for i := range dones {
				if d := dones[i].Load(); d != 1 {
					t.Errorf("job %d: Done called %d times", i, d)
				}
			}
		})
	}
}

type ctxKey struct{}

// testContextValues: the job's context carries the values of the scope's context, for jobs
// started directly, after a delay and from Done.
func testContextValues(t *testing.T, e troupe.Executor) {
	ctx := context.WithValue(t.Context(), ctxKey{}, "run-42")
	s := e.Scope(ctx)
	got := make(chan any, 3)
	look := func(ctx context.Context) { got <- ctx.Value(ctxKey{}) }
	s.Go(&JobFuncs{RunFunc: look, DoneFunc: func(bool) { s.Go(&JobFuncs{RunFunc: look}, 0, time.Time{}) }}, 0, time.Time{})
	s.Go(&JobFuncs{RunFunc: look}, time.Millisecond, e.Now().Add(time.Hour))
	Wait(t, s)
	close(got)
	n := 0
	for v := range got {
		n++
		if v != "run-42" {
			t.Errorf("job context: Value(key) = %v, want %q", v, "run-42")
		}
	}
	if n != 3 {
		t.Errorf("%d jobs looked, want 3", n)
	}
}

// testContextDeadline: the job's context reports the job's deadline, or the scope's if that is
// earlier.
func testContextDeadline(t *testing.T, e troupe.Executor) {
	now := e.Now()
	tests := []struct {
		name   string
		scope  time.Time // zero: the scope's context has no deadline
		job    time.Time
		want   time.Time
		wantOK bool
	}{
		{"none", time.Time{}, time.Time{}, time.Time{}, false},
		{"job", time.Time{}, now.Add(time.Hour), now.Add(time.Hour), true},
		{"scope earlier", now.Add(time.Hour), now.Add(2 * time.Hour), now.Add(time.Hour), true},
		{"job earlier", now.Add(2 * time.Hour), now.Add(time.Hour), now.Add(time.Hour), true},
		{"scope only", now.Add(time.Hour), time.Time{}, now.Add(time.Hour), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			if !tt.scope.IsZero() {
				var cancel context.CancelFunc
				ctx, cancel = context.WithDeadline(ctx, tt.scope)
				defer cancel()
			}
			s := e.Scope(ctx)
			var got time.Time
			var ok bool
			s.Go(&JobFuncs{RunFunc: func(ctx context.Context) { got, ok = ctx.Deadline() }}, 0, tt.job)
			Wait(t, s)
			if ok != tt.wantOK || !got.Equal(tt.want) {
				t.Errorf("Deadline() = %v, %v; want %v, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

// testContextErr: a job's context keeps the context.Context contract: Err is (or wraps)
// context.DeadlineExceeded once its deadline passed and context.Canceled once the scope was
// cancelled, while context.Cause gives the scope's cause. Agents branch on these.
func testContextErr(t *testing.T, e troupe.Executor) {
	errStop := errors.New("executortest: stop")
	t.Run("deadline", func(t *testing.T) {
		s := e.Scope(t.Context())
		errs := make(chan error, 1) // Run may outlive Wait if it was reported expired
		s.Go(&JobFuncs{RunFunc: func(ctx context.Context) {
			select {
			case <-ctx.Done():
				errs <- ctx.Err()
			case <-time.After(Patience):
				errs <- nil
			}
		}}, 0, e.Now().Add(Short))
		err := Recv(t, errs, "the job's context to be done at its deadline")
		Wait(t, s)
		drain(t, e)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("after the deadline, ctx.Err() = %v, want context.DeadlineExceeded", err)
		}
	})
	t.Run("cancel", func(t *testing.T) {
		ctx, cancel := context.WithCancelCause(t.Context())
		defer cancel(nil)
		s := e.Scope(ctx)
		started := make(chan struct{})
		var err, cause error
		s.Go(&JobFuncs{RunFunc: func(ctx context.Context) {
			close(started)
			select {
			case <-ctx.Done():
				err, cause = ctx.Err(), context.Cause(ctx)
			case <-time.After(Patience):
			}
		}}, 0, e.Now().Add(time.Hour))
		Recv(t, started, "Run to start")
		cancel(errStop)
		Wait(t, s)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("after the scope was cancelled, ctx.Err() = %v, want context.Canceled", err)
		}
		if !errors.Is(cause, errStop) {
			t.Errorf("after the scope was cancelled, context.Cause(ctx) = %v, want %v", cause, errStop)
		}
	})
}

// testDerivedContexts: contexts an agent derives from its job's context (WithCancel,
// WithTimeout, AfterFunc) are cancelled with it, and deriving them starts no goroutine per
// context.
func testDerivedContexts(t *testing.T, e troupe.Executor) {
	const n = 200
	tests := []struct {
		name   string
		expire bool // the job context ends by its deadline; else by the scope's cancellation
	}{
		{"deadline", true},
		{"scope cancel", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			block, release := released(t, e)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			s := e.Scope(ctx)
			deadline := e.Now().Add(time.Hour)
			if tt.expire {
				deadline = e.Now().Add(Short)
			}
			type result struct {
				grew             int // goroutines started while deriving
				cancelled, total int
				afterFuncRan     bool
			}
			derived := make(chan struct{})
			res := make(chan result, 1)
			s.Go(&JobFuncs{RunFunc: func(ctx context.Context) {
				before := runtime.NumGoroutine()
				var children []context.Context
				var cancels []context.CancelFunc
				for i := range n {
					var c context.Context
					var cf context.CancelFunc
					if i%2 == 0 {
						c, cf = context.WithCancel(ctx)
					} else {
						c, cf = context.WithTimeout(ctx, time.Hour)
					}
					children = append(children, c)
					cancels = append(cancels, cf)
				}
				// A few cancelled early by their own hand.
				for _, cf := range cancels[:10] {
					cf()
				}
				afterFunc := make(chan struct{})
				context.AfterFunc(ctx, func() { close(afterFunc) })
				grew := runtime.NumGoroutine() - before
				close(derived)

				r := result{grew: grew, total: n}
				select {
				case <-ctx.Done():
				case <-block:
				}
				patience, stop := context.WithTimeout(context.Background(), Patience)
				defer stop()
				for _, c := range children {
					select {
					case <-c.Done():
						r.cancelled++
					case <-patience.Done():
					}
				}
				select {
				case <-afterFunc:
					r.afterFuncRan = true
				case <-patience.Done():
				}
				for _, cf := range cancels {
					cf()
				}
				res <- r
			}}, 0, deadline)
			Recv(t, derived, "the job to derive its contexts")
			if !tt.expire {
				cancel()
			}
			r, ok := recvOrFail(t, res, "the job to report")
			if !ok {
				release()
				r = Recv(t, res, "the released job to report")
			}
			Wait(t, s)
			release()
			drain(t, e)
			if r.grew > n/10 {
				t.Errorf("deriving %d contexts from a job's context started %d goroutines", n, r.grew)
			}
			if r.cancelled != r.total {
				t.Errorf("%d of %d derived contexts were done after the job's context was", r.cancelled, r.total)
			}
			if !r.afterFuncRan {
				t.Error("context.AfterFunc on the job's context did not run when it was done")
			}
		})
	}
}
