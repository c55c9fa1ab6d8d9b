package local_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/executor/executortest"
	"github.com/troupehq/troupe/executor/local"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// grace is short so the suite's cancelled jobs that ignore their context are let go quickly,
// and long enough that a job that returns as soon as it is cancelled is never reported expired.
const grace = 200 * time.Millisecond

func TestConformance(t *testing.T) {
	executortest.Run(t, func(t *testing.T) troupe.Executor { return local.New(local.Config{CancelGrace: grace}) })
}

func TestConformanceSharedExecutor(t *testing.T) {
	// One executor for every test, as a server has: scopes must not see each other.
	e := local.New(local.Config{CancelGrace: grace})
	executortest.Run(t, func(t *testing.T) troupe.Executor { return e })
}

const patience = executortest.Patience

func drain(t *testing.T, e *local.Executor) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), patience)
	defer cancel()
	if err := e.Drain(ctx); err != nil {
		t.Fatalf("Drain: %v", err)
	}
}

// released returns a channel blocked jobs wait on, closed by release or when the test ends
// (before the test drains e).
func released(t *testing.T, e *local.Executor) (<-chan struct{}, func()) {
	c := make(chan struct{})
	release := sync.OnceFunc(func() { close(c) })
	t.Cleanup(func() {
		release()
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		defer cancel()
		if err := e.Drain(ctx); err != nil {
			t.Errorf("Drain at cleanup: %v", err)
		}
	})
	return c, release
}

// TestChainReusesWorker: a job handed over from Done runs on the goroutine that finished the
// previous one, so a sequential chain of a thousand jobs uses one worker, not a thousand.
func TestChainReusesWorker(t *testing.T) {
	for _, deadline := range []time.Duration{0, time.Hour} {
		t.Run(fmt.Sprint("deadline=", deadline), func(t *testing.T) {
			e := local.New(local.Config{})
			s := e.Scope(t.Context())
			const n = 1000
			var runs atomic.Int64
			var mu sync.Mutex
			ran := map[string]bool{} // the goroutines the chain's jobs ran on
			var next func(i int) troupe.Job
			next = func(i int) troupe.Job {
				return &executortest.JobFuncs{
					RunFunc: func(context.Context) {
						runs.Add(1)
						id := goroutineID()
						mu.Lock()
						ran[id] = true
						mu.Unlock()
					},
					DoneFunc: func(bool) {
						if i+1 < n {
							var d time.Time
							if deadline > 0 {
								d = e.Now().Add(deadline)
							}
							s.Go(next(i+1), 0, d)
						}
					},
				}
			}
			s.Go(next(0), 0, time.Time{})
			executortest.Wait(t, s)
			if runs.Load() != n {
				t.Fatalf("%d of %d jobs ran", runs.Load(), n)
			}
			// One worker should run the whole chain; allow for a handful of hand-offs.
			if len(ran) > 3 {
				t.Errorf("a chain of %d jobs ran on %d goroutines", n, len(ran))
			}
		})
	}
}

// goroutineID returns the calling goroutine's id from its stack header ("goroutine 42 [").
// Tests only: it identifies which goroutines ran a test's jobs, whatever else the process runs.
func goroutineID() string {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	return string(b[:bytes.IndexByte(b, ' ')])
}

// TestStragglers: expired jobs still running are counted by Stragglers, across scopes, until
// they return; Drain waits for them or gives up with its context's cause.
func TestStragglers(t *testing.T) {
	e := local.New(local.Config{})
	block, release := released(t, e)
	if n := e.Stragglers(); n != 0 {
		t.Fatalf("new executor: Stragglers() = %d", n)
	}
	if err := e.Drain(t.Context()); err != nil {
		t.Fatalf("Drain with no stragglers = %v", err)
	}
	const perScope = 3
	scopes := []troupe.Scope{e.Scope(t.Context()), e.Scope(t.Context())}
	expired := make(chan bool, 2*perScope)
	returned := make(chan struct{}, 2*perScope)
	for _, s := range scopes {
		for range perScope {
			s.Go(&executortest.JobFuncs{
				RunFunc:  func(context.Context) { <-block; returned <- struct{}{} },
				DoneFunc: func(x bool) { expired <- x },
			}, 0, e.Now().Add(20*time.Millisecond))
		}
	}
	for range 2 * perScope {
		if !executortest.Recv(t, expired, "Done") {
			t.Fatal("Done(false) for a job still blocked")
		}
	}
	for _, s := range scopes {
		executortest.Wait(t, s)
	}
	if n := e.Stragglers(); n != 2*perScope {
		t.Errorf("Stragglers() = %d, want %d", n, 2*perScope)
	}

	errGiveUp := errors.New("give up")
	ctx, cancel := context.WithCancelCause(t.Context())
	cancel(errGiveUp)
	if err := e.Drain(ctx); !errors.Is(err, errGiveUp) {
		t.Errorf("Drain with a cancelled context and stragglers = %v, want %v", err, errGiveUp)
	}

	release()
	for range 2 * perScope {
		executortest.Recv(t, returned, "a released straggler to return")
	}
	drain(t, e)
	if n := e.Stragglers(); n != 0 {
		t.Errorf("after Drain: Stragglers() = %d", n)
	}
}

// TestCancelGrace: after its scope is cancelled a job has CancelGrace to return; one that
// ignores its context is then reported expired and left behind as a straggler.
func TestCancelGrace(t *testing.T) {
	tests := []struct {
		name        string
		grace       time.Duration
		deadline    time.Duration // from Go; 0: none
		honour      bool          // the job returns when its context is done
		wantExpired bool
	}{
		{"ignoring, no deadline", 100 * time.Millisecond, 0, false, true},
		{"ignoring, far deadline", 100 * time.Millisecond, time.Hour, false, true},
		{"ignoring, deadline before grace ends", time.Hour, 150 * time.Millisecond, false, true},
		{"honouring", 5 * time.Second, time.Hour, true, false},
		{"honouring, no deadline", 5 * time.Second, 0, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := local.New(local.Config{CancelGrace: tt.grace})
			block, release := released(t, e)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			s := e.Scope(ctx)
			var deadline time.Time
			if tt.deadline > 0 {
				deadline = e.Now().Add(tt.deadline)
			}
			started := make(chan context.Context, 1)
			dones := make(chan bool, 2)
			s.Go(&executortest.JobFuncs{
				RunFunc: func(ctx context.Context) {
					started <- ctx
					if tt.honour {
						select {
						case <-ctx.Done():
						case <-block:
						}
					} else {
						<-block
					}
				},
				DoneFunc: func(x bool) { dones <- x },
			}, 0, deadline)
			jobCtx := executortest.Recv(t, started, "Run to start")
			cancelledAt := e.Now()
			cancel()

			var expired bool
			select {
			case expired = <-dones:
			case <-time.After(patience):
				t.Errorf("no Done %v after the scope was cancelled (grace %v)", patience, tt.grace)
				release()
				<-dones
				return
			}
			now := e.Now()
			if expired != tt.wantExpired {
				t.Fatalf("Done(%v), want Done(%v)", expired, tt.wantExpired)
			}
			if expired {
				limit := cancelledAt.Add(tt.grace)
				if !deadline.IsZero() && deadline.Before(limit) {
					limit = deadline
				}
				if now.Before(limit) {
					t.Errorf("reported expired %v after cancel; not before %v", now.Sub(cancelledAt), limit.Sub(cancelledAt))
				}
				executortest.Recv(t, jobCtx.Done(), "the abandoned job's context to be done")
				if n := e.Stragglers(); n != 1 {
					t.Errorf("Stragglers() = %d, want 1", n)
				}
			}
			executortest.Wait(t, s)
			release()
			drain(t, e)
			if n := e.Stragglers(); n != 0 {
				t.Errorf("after Drain: Stragglers() = %d", n)
			}
		})
	}
}

// TestConfig: the clock and entropy come through the Config's seams; zero values work.
func TestConfig(t *testing.T) {
	fixed := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var n uint64
	e := local.New(local.Config{Clock: func() time.Time { return fixed }, Entropy: func() uint64 { n++; return n }})
	if got := e.Now(); !got.Equal(fixed) {
		t.Errorf("Now() = %v, want the configured clock's %v", got, fixed)
	}
	if a, b := e.Seed(), e.Seed(); a != 1 || b != 2 {
		t.Errorf("Seed() = %d, %d; want the configured entropy's 1, 2", a, b)
	}

	z := local.New(local.Config{})
	before := time.Now()
	if got := z.Now(); got.Before(before) || got.Sub(before) > time.Hour {
		t.Errorf("zero Config: Now() = %v, want about %v", got, before)
	}
}

// chain is a job that hands itself to its scope again from Done until left runs out.
type chain struct {
	s        troupe.Scope
	left     int
	deadline time.Duration
	now      func() time.Time
}

func (c *chain) Run(context.Context) {}

func (c *chain) Done(bool) {
	c.left--
	if c.left > 0 {
		c.s.Go(c, 0, c.at())
	}
}

func (c *chain) at() time.Time {
	if c.deadline == 0 {
		return time.Time{}
	}
	return c.now().Add(c.deadline)
}

// BenchmarkChainJobs: a sequential chain of 1,000 jobs, each handed over from the previous
// one's Done, as a sequential plan runs.
func BenchmarkChainJobs(b *testing.B) {
	for _, deadline := range []time.Duration{0, time.Hour} {
		b.Run(fmt.Sprint("deadline=", deadline), func(b *testing.B) {
			e := local.New(local.Config{})
			b.ReportAllocs()
			for b.Loop() {
				s := e.Scope(b.Context())
				c := &chain{s: s, left: 1000, deadline: deadline, now: e.Now}
				s.Go(c, 0, c.at())
				s.Wait()
			}
		})
	}
}

type nop struct{ done atomic.Int64 }

func (j *nop) Run(context.Context) {}
func (j *nop) Done(bool)           { j.done.Add(1) }

// BenchmarkFanOutJobs: 1,000 jobs handed over at once, as a wide parallel stage is.
func BenchmarkFanOutJobs(b *testing.B) {
	for _, deadline := range []time.Duration{0, time.Hour} {
		b.Run(fmt.Sprint("deadline=", deadline), func(b *testing.B) {
			e := local.New(local.Config{})
			j := &nop{}
			b.ReportAllocs()
			for b.Loop() {
				s := e.Scope(b.Context())
				var d time.Time
				if deadline > 0 {
					d = e.Now().Add(deadline)
				}
				for range 1000 {
					s.Go(j, 0, d)
				}
				s.Wait()
			}
		})
	}
}

// slotted is a job that lends the executor its record.
type slotted struct {
	executortest.JobFuncs
	slot  local.Slot
	lent  atomic.Int32
	ended chan bool
}

func (j *slotted) LocalSlot() *local.Slot { j.lent.Add(1); return &j.slot }

// TestSlottedJob: a job that carries its own Slot runs, gets its deadline and is done like any
// other, with the record it lent.
func TestSlottedJob(t *testing.T) {
	e := local.New(local.Config{})
	s := e.Scope(t.Context())
	deadline := time.Now().Add(time.Hour)
	j := &slotted{ended: make(chan bool, 1)}
	var got time.Time
	j.RunFunc = func(ctx context.Context) { got, _ = ctx.Deadline() }
	j.DoneFunc = func(expired bool) { j.ended <- expired }
	s.Go(j, 0, deadline)
	if expired := executortest.Recv(t, j.ended, "Done"); expired {
		t.Fatal("job reported expired")
	}
	s.Wait()
	if !got.Equal(deadline) {
		t.Errorf("Run saw deadline %v, want %v", got, deadline)
	}
	if n := j.lent.Load(); n != 1 {
		t.Errorf("LocalSlot called %d times, want 1", n)
	}
}

// notifier is a context that reports its own end (local.DoneNotifier).
type notifier struct {
	context.Context
	cancel context.CancelFunc
	mu     sync.Mutex
	fs     []func()
	calls  atomic.Int32
}

func (n *notifier) OnDone(f func()) {
	n.calls.Add(1)
	n.mu.Lock()
	defer n.mu.Unlock()
	n.fs = append(n.fs, f)
}

func (n *notifier) end() {
	n.cancel()
	n.mu.Lock()
	fs := n.fs
	n.mu.Unlock()
	for _, f := range fs {
		f()
	}
}

// TestDoneNotifier: a scope over a DoneNotifier registers with OnDone, and a job running when
// the notifier reports its end is cancelled.
func TestDoneNotifier(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	n := &notifier{Context: ctx, cancel: cancel}
	e := local.New(local.Config{})
	s := e.Scope(n)
	if c := n.calls.Load(); c != 1 {
		t.Fatalf("OnDone called %d times, want 1", c)
	}
	started, sawCancel := make(chan struct{}), make(chan error, 1)
	j := &executortest.JobFuncs{RunFunc: func(ctx context.Context) {
		close(started)
		<-ctx.Done()
		sawCancel <- ctx.Err()
	}}
	s.Go(j, 0, time.Time{})
	executortest.Recv(t, started, "job start")
	n.end()
	if err := executortest.Recv(t, sawCancel, "job cancel"); !errors.Is(err, context.Canceled) {
		t.Errorf("job's ctx.Err() = %v, want context.Canceled", err)
	}
	s.Wait()
}

// trackedCtx is a context the test can watch being collected: a scope keeps its context, so
// while anything keeps the scope, the context stays too.
type trackedCtx struct {
	context.Context
	_ [64]byte // not a tiny object, which the allocator could batch with others
}

// TestWaitedScopeIsNotKept: once Wait has returned, the executor keeps nothing of the scope,
// however the run ended, even though its jobs had deadlines an hour away that all runs share
// one timer for.
func TestWaitedScopeIsNotKept(t *testing.T) {
	e := local.New(local.Config{CancelGrace: grace})
	for _, end := range []string{"finished", "cancelled after its jobs", "cancelled while running"} {
		t.Run(end, func(t *testing.T) {
			collected := make(chan struct{})
			func() {
				parent, cancel := context.WithCancel(t.Context())
				defer cancel()
				ctx := &trackedCtx{Context: parent}
				runtime.AddCleanup(ctx, func(ch chan struct{}) { close(ch) }, collected)
				s := e.Scope(ctx)
				var done sync.WaitGroup
				done.Add(3)
				for range 3 {
					s.Go(&executortest.JobFuncs{RunFunc: func(ctx context.Context) {
						if end == "cancelled while running" {
							<-ctx.Done()
						}
					}, DoneFunc: func(bool) { done.Done() }}, 0, e.Now().Add(time.Hour))
				}
				switch end {
				case "cancelled after its jobs":
					done.Wait()
					cancel()
				case "cancelled while running":
					cancel()
				}
				executortest.Wait(t, s)
			}()
			for deadline := time.Now().Add(10 * time.Second); ; {
				runtime.GC()
				select {
				case <-collected:
					return
				case <-time.After(10 * time.Millisecond):
				}
				if time.Now().After(deadline) {
					t.Fatal("the scope's context is still kept after Wait: the executor holds on to the scope")
				}
			}
		})
	}
}
