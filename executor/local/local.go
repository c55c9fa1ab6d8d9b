// Package local is troupe's in-process executor: a run's dispatches run on goroutines of this
// process, with deadlines that hold even against an agent that ignores its context.
//
// Each run gets a scope that owns its goroutines. A goroutine that finishes a job picks up the
// next one the engine hands out while it was finishing (a sequential chain runs on one
// goroutine), and a new goroutine is started only when more jobs are ready than goroutines
// free to take them. Deadlines of all runs' jobs share one timer of the executor's. When a
// deadline passes first, the job is reported expired and its goroutine becomes a straggler:
// the run goes on, and Executor.Drain waits for stragglers to return.
package local

import (
	"container/heap"
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/troupehq/troupe"
)

// Config configures an Executor. The zero value is ready to use.
type Config struct {
	// Clock returns the current time; nil means time.Now. Deadlines are kept by real timers,
	// set for the time between Clock's now and the deadline: a fake clock that jumps does not
	// fire them.
	Clock func() time.Time
	// Entropy returns seeds for runs without one; nil means math/rand/v2's runtime-seeded source.
	Entropy func() uint64
	// CancelGrace is how long a job may run on after its run is cancelled before it is reported
	// expired and left behind; 0 means one second.
	CancelGrace time.Duration
}

// Executor runs jobs on goroutines. It is safe for concurrent use.
type Executor struct {
	clock   func() time.Time
	entropy func() uint64
	grace   time.Duration

	// Stragglers: how many, and a channel closed when the count drops to 0 (made anew when it
	// rises from 0). Not a sync.WaitGroup: a Drain that gives up would leave a goroutine in its
	// Wait, and a straggler added from 0 while such a Wait is being woken is a misuse the
	// WaitGroup panics on.
	smu       sync.Mutex
	nStraggle atomic.Int64 // written under smu
	idle      chan struct{}

	// The scopes with a running job's deadline to watch, earliest first, and the one timer
	// that fires at the earliest. A timer per scope would cost every run about 130 bytes.
	tmu     sync.Mutex
	due     dueHeap
	timer   *time.Timer
	timerAt time.Time
}

// New returns an executor.
func New(cfg Config) *Executor {
	e := &Executor{clock: cfg.Clock, entropy: cfg.Entropy, grace: cfg.CancelGrace}
	if e.clock == nil {
		e.clock = time.Now
	}
	if e.entropy == nil {
		e.entropy = rand.Uint64
	}
	if e.grace <= 0 {
		e.grace = time.Second
	}
	return e
}

// Now returns the executor's clock.
func (e *Executor) Now() time.Time { return e.clock() }

// Seed returns fresh entropy.
func (e *Executor) Seed() uint64 { return e.entropy() }

// AfterFunc runs f once ctx is done, as context.AfterFunc does (the executor is a
// troupe.Watcher): f runs on a goroutine of the context package's that ends with f.
func (e *Executor) AfterFunc(ctx context.Context, f func()) (stop func() bool) {
	return context.AfterFunc(ctx, f)
}

// Stragglers returns how many abandoned jobs are still running.
func (e *Executor) Stragglers() int64 { return e.nStraggle.Load() }

// Drain waits until every straggler has returned or ctx is done.
func (e *Executor) Drain(ctx context.Context) error {
	e.smu.Lock()
	n, idle := e.nStraggle.Load(), e.idle
	e.smu.Unlock()
	if n == 0 {
		return nil
	}
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// straggle counts n more stragglers.
func (e *Executor) straggle(n int) {
	e.smu.Lock()
	if e.nStraggle.Load() == 0 {
		e.idle = make(chan struct{})
	}
	e.nStraggle.Add(int64(n))
	e.smu.Unlock()
}

// straggled counts a straggler that returned.
func (e *Executor) straggled() {
	e.smu.Lock()
	if e.nStraggle.Add(-1) == 0 {
		close(e.idle)
	}
	e.smu.Unlock()
}

const (
	stateQueued int32 = iota
	stateRunning
	stateDone
)

type job struct {
	j        troupe.Job
	ctx      jobCtx
	state    atomic.Int32
	heapIdx  int32
	deadline time.Time
}

// DoneNotifier is a context that reports its own end. Scope registers with OnDone instead of
// context.AfterFunc, which spares the context package's registration (a child context, a
// Done channel and a map of children on the watched context). OnDone must call f exactly once,
// after Err returns non-nil (at once if it already does); f does not block, so it may be called
// by whoever cancels the context, with that caller's locks held.
type DoneNotifier interface {
	context.Context
	OnDone(f func())
}

// Scope returns a new scope whose jobs are cancelled with ctx.
func (e *Executor) Scope(ctx context.Context) troupe.Scope {
	s := &scope{e: e, ctx: ctx, dueIdx: -1}
	s.spawnf = s.worker
	if n, ok := ctx.(DoneNotifier); ok {
		n.OnDone(s.cancelAll)
	} else {
		context.AfterFunc(ctx, s.cancelAll)
	}
	return s
}

type scope struct {
	e      *Executor
	ctx    context.Context
	spawnf func() // s.worker as a value, made once: go s.worker() would allocate a closure per goroutine

	mu        sync.Mutex
	queue     []*job // ready jobs are queue[head:]
	head      int
	releasing int // workers inside Done that will take a queued job before exiting
	running   deadlineHeap
	delayed   map[*job]*time.Timer // jobs waiting out their delay, and the timers that end it
	timerAt   time.Time            // when the executor will call expire; zero: it will not
	cancelled bool
	cancelRan bool      // cancelAll has run
	dueIdx    int32     // place in the executor's due heap, -1 if not there; guarded by e.tmu
	dueAt     time.Time // when the scope is due in that heap; guarded by e.tmu

	active     sync.WaitGroup
	cancelDone chan struct{} // made by a Wait that must wait for cancelAll, which closes it
}

// Slot is the executor's record of one job. A job that implements Slotted lends the executor
// its own Slot, so handing it over allocates nothing. A Slot is used by one Go only: it is part
// of the job's memory until the job's Done has been called and its Run has returned.
type Slot struct{ jb job }

// Slotted is a job that carries its own Slot (the engine's dispatches do).
type Slotted interface {
	troupe.Job
	LocalSlot() *Slot
}

func (s *scope) Go(j troupe.Job, delay time.Duration, deadline time.Time) {
	var jb *job
	if sj, ok := j.(Slotted); ok {
		jb = &sj.LocalSlot().jb
	} else {
		jb = new(job)
	}
	jb.j, jb.deadline, jb.heapIdx = j, deadline, -1
	jb.ctx.s = s
	jb.ctx.deadline = deadline
	if delay > 0 {
		s.mu.Lock()
		if !s.cancelled {
			s.active.Add(1)
			if s.delayed == nil {
				s.delayed = make(map[*job]*time.Timer)
			}
			// A deadline that falls within the delay ends the wait then: the job expires at
			// its deadline, not when the delay would have ended.
			wait, atDeadline := delay, false
			if !deadline.IsZero() {
				if d := deadline.Sub(s.e.clock()); d < delay {
					wait, atDeadline = max(d, 0), true
				}
			}
			s.delayed[jb] = time.AfterFunc(wait, func() {
				s.mu.Lock()
				_, still := s.delayed[jb]
				delete(s.delayed, jb)
				// A deadline that passed while the job waited out its delay has passed first:
				// the job expires without running, rather than starting with a live context.
				late := still && !s.cancelled && (atDeadline || !jb.deadline.IsZero() && !jb.deadline.After(s.e.clock()))
				s.mu.Unlock()
				switch {
				case late:
					expireDelayed(jb)
				case still:
					s.enqueue(jb)
				}
				s.active.Done()
			})
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
	}
	s.enqueue(jb)
}

// enqueue makes jb ready and starts a goroutine unless a finishing worker will take it.
func (s *scope) enqueue(jb *job) {
	s.mu.Lock()
	s.queue = append(s.queue, jb)
	spawn := len(s.queue)-s.head > s.releasing
	if spawn {
		s.active.Add(1)
	}
	s.mu.Unlock()
	if spawn {
		go s.spawnf()
	}
}

// worker runs ready jobs until none is left. Its own frame is kept small, since a running
// job's stack starts with it: taking the next job and finishing one happen in take and
// release, whose frames are gone while the job runs.
func (s *scope) worker() {
	for jb, first := s.take(), true; jb != nil; jb, first = s.take(), false {
		jb.j.Run(&jb.ctx)
		if first {
			growStack(0)
		}
		if !s.release(jb) {
			return
		}
	}
}

// doneStack is about the stack a job's Done needs: the engine records a whole state transition
// there (the store append, the next dispatches, aggregation at the end of a run).
const doneStack = 5 << 10

// growStack grows the calling goroutine's stack to fit doneStack more while the stack is still
// shallow. Growing it later, deep inside Done, copies and adjusts every frame on it, at 4 KB
// and again at 8 KB. A worker calls it once, after its first job's Run and before its first
// Done: not before Run, so a worker whose first job blocks keeps the smallest stack, and not
// on every Done, since zeroing the frame costs time too and the stack stays grown.
//
//go:noinline
func growStack(i int) byte {
	var frame [doneStack]byte
	frame[i] = 1 // an index the compiler cannot see keeps the frame real
	return frame[len(frame)-1-i]
}

// take removes the next ready job from the queue and marks it running; with none left it
// ends the worker's share of the scope and returns nil.
//
//go:noinline
func (s *scope) take() *job {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.head == len(s.queue) {
		s.active.Done()
		return nil
	}
	jb := s.queue[s.head]
	s.queue[s.head] = nil
	s.head++
	if s.head == len(s.queue) {
		s.queue, s.head = s.queue[:0], 0 // keep the array: the next stage reuses it
	}
	jb.state.Store(stateRunning)
	if s.cancelled {
		jb.ctx.cancel(s.ctx.Err())
		jb.deadline = earliest(jb.deadline, s.e.clock().Add(s.e.grace))
	}
	// Every running job is in the heap, those without a deadline last: cancelling the
	// scope must reach them too.
	heap.Push(&s.running, jb)
	s.armLocked()
	return jb
}

// release finishes a job whose Run returned: it calls Done, unless the job expired while
// running, in which case the worker was handed to the executor's stragglers and must end
// (release reports false).
//
//go:noinline
func (s *scope) release(jb *job) bool {
	s.mu.Lock()
	if jb.heapIdx >= 0 {
		heap.Remove(&s.running, int(jb.heapIdx))
	}
	if !jb.state.CompareAndSwap(stateRunning, stateDone) {
		// Expired while running: Done was called by the timer, and this goroutine's share
		// of the scope was handed to the executor's stragglers.
		s.mu.Unlock()
		s.e.straggled()
		return false
	}
	s.releasing++
	s.mu.Unlock()
	jb.j.Done(false)
	s.mu.Lock()
	s.releasing--
	s.mu.Unlock()
	return true
}

func earliest(a, b time.Time) time.Time {
	if a.IsZero() || b.Before(a) {
		return b
	}
	return a
}

// armLocked has the executor call expire at the earliest running deadline, unless it will by
// then already.
func (s *scope) armLocked() {
	if len(s.running) == 0 || s.running[0].deadline.IsZero() {
		return
	}
	at := s.running[0].deadline
	if !s.timerAt.IsZero() && !at.Before(s.timerAt) {
		return
	}
	s.timerAt = at
	s.e.schedule(s, at)
}

// schedule makes s due at at in the executor's heap, and points the timer at the earliest.
func (e *Executor) schedule(s *scope, at time.Time) {
	e.tmu.Lock()
	defer e.tmu.Unlock()
	s.dueAt = at
	if s.dueIdx >= 0 {
		heap.Fix(&e.due, int(s.dueIdx))
	} else {
		heap.Push(&e.due, s)
	}
	e.armLocked()
}

// unschedule takes s out of the executor's heap: it has no running deadline left to watch.
func (e *Executor) unschedule(s *scope) {
	e.tmu.Lock()
	defer e.tmu.Unlock()
	if s.dueIdx >= 0 {
		heap.Remove(&e.due, int(s.dueIdx))
		e.armLocked()
	}
}

// armLocked points the executor's timer at the earliest due scope. The caller holds e.tmu.
func (e *Executor) armLocked() {
	if len(e.due) == 0 {
		if e.timer != nil && !e.timerAt.IsZero() {
			e.timer.Stop()
			e.timerAt = time.Time{}
		}
		return
	}
	at := e.due[0].dueAt
	if !e.timerAt.IsZero() && e.timerAt.Equal(at) {
		return
	}
	e.timerAt = at
	d := at.Sub(e.clock())
	if e.timer == nil {
		e.timer = time.AfterFunc(d, e.fire)
	} else {
		e.timer.Reset(d)
	}
}

// fire runs on the timer's goroutine: every scope that is due expires its jobs past deadline.
func (e *Executor) fire() {
	now := e.clock()
	var due []*scope
	e.tmu.Lock()
	e.timerAt = time.Time{}
	for len(e.due) > 0 && !e.due[0].dueAt.After(now) {
		due = append(due, heap.Pop(&e.due).(*scope))
	}
	e.armLocked()
	e.tmu.Unlock()
	for _, s := range due {
		s.expire()
	}
}

// expire runs on the executor's timer goroutine: every job past its deadline is reported expired.
func (s *scope) expire() {
	s.mu.Lock()
	s.timerAt = time.Time{}
	now := s.e.clock()
	var expired []*job
	for len(s.running) > 0 && !s.running[0].deadline.IsZero() && !s.running[0].deadline.After(now) {
		jb := heap.Pop(&s.running).(*job)
		if jb.state.CompareAndSwap(stateRunning, stateDone) {
			expired = append(expired, jb)
		}
	}
	if len(expired) > 0 {
		// Hold the scope open while Done runs here; hand each expired worker to the executor.
		s.active.Add(1)
		s.e.straggle(len(expired))
		for range expired {
			s.active.Done()
		}
	}
	s.armLocked()
	if s.timerAt.IsZero() {
		// No deadline left to watch. The scope can be on the heap all the same: a Wait while
		// the timer was on its way here left it off, and a job given it since put it back.
		s.e.unschedule(s)
	}
	s.mu.Unlock()
	for _, jb := range expired {
		jb.ctx.cancel(context.DeadlineExceeded)
		jb.j.Done(true)
	}
	if len(expired) > 0 {
		s.active.Done()
	}
}

// cancelAll runs when the scope's context is done: running jobs are cancelled and get the
// grace period before they are left behind; delayed jobs start at once (and see the cancel).
func (s *scope) cancelAll() {
	defer s.cancelFinished()
	err := s.ctx.Err() // Canceled, or DeadlineExceeded when the scope's context ran out of time
	s.mu.Lock()
	s.cancelled = true
	limit := s.e.clock().Add(s.e.grace)
	var cancel []*job
	for _, jb := range s.running {
		cancel = append(cancel, jb)
		if jb.deadline.IsZero() || jb.deadline.After(limit) {
			jb.deadline = limit
		}
	}
	heap.Init(&s.running)
	s.armLocked() // deadlines only moved earlier: it re-arms if the earliest did
	var ready, late []*job
	now := s.e.clock()
	for jb, t := range s.delayed {
		if t.Stop() {
			// One whose deadline passed while it waited has passed first: it expires, as
			// its timer would have expired it, rather than running on the cancellation.
			if !jb.deadline.IsZero() && !jb.deadline.After(now) {
				late = append(late, jb)
			} else {
				ready = append(ready, jb)
			}
			delete(s.delayed, jb)
		}
	}
	s.mu.Unlock()
	for _, jb := range cancel {
		jb.ctx.cancel(err)
	}
	for _, jb := range late {
		expireDelayed(jb)
		s.active.Done() // the delay timer's share
	}
	for _, jb := range ready {
		s.enqueue(jb)
		s.active.Done() // the delay timer's share
	}
}

// expireDelayed reports jb, a job whose deadline passed while it waited out its delay, expired
// without running it. The delay's share of the scope, released after, holds the scope open
// meanwhile.
func expireDelayed(jb *job) {
	jb.state.Store(stateDone)
	jb.ctx.cancel(context.DeadlineExceeded)
	jb.j.Done(true)
}

// cancelFinished records that cancelAll has run and wakes a Wait waiting for it.
func (s *scope) cancelFinished() {
	s.mu.Lock()
	s.cancelRan = true
	if s.cancelDone != nil {
		close(s.cancelDone)
	}
	s.mu.Unlock()
}

// Wait waits for the scope's jobs. The scope keeps watching its context afterwards, so a job
// handed over after Wait is still cancelled with it; once the context is done, Wait also waits
// for the cancellation to have been delivered.
func (s *scope) Wait() {
	s.active.Wait()
	if s.ctx.Err() != nil {
		s.mu.Lock()
		if !s.cancelRan {
			if s.cancelDone == nil {
				s.cancelDone = make(chan struct{})
			}
			ch := s.cancelDone
			s.mu.Unlock()
			<-ch
		} else {
			s.mu.Unlock()
		}
		s.active.Wait() // cancelAll may have started delayed jobs
	}
	s.mu.Lock()
	if !s.timerAt.IsZero() && len(s.running) == 0 {
		s.timerAt = time.Time{}
		s.e.unschedule(s)
	}
	s.mu.Unlock()
}

// indexedHeap is a container/heap of elements that each keep their own place in it, so that
// heap.Fix and heap.Remove can find them; the place is -1 when an element is not in the heap.
type indexedHeap[T interface {
	before(T) bool
	place() *int32
}] []T

func (h indexedHeap[T]) Len() int           { return len(h) }
func (h indexedHeap[T]) Less(i, j int) bool { return h[i].before(h[j]) }
func (h indexedHeap[T]) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	*h[i].place() = int32(i)
	*h[j].place() = int32(j)
}
func (h *indexedHeap[T]) Push(x any) {
	v := x.(T)
	*v.place() = int32(len(*h))
	*h = append(*h, v)
}
func (h *indexedHeap[T]) Pop() any {
	old := *h
	n := len(old)
	v := old[n-1]
	var zero T
	old[n-1] = zero
	*v.place() = -1
	*h = old[:n-1]
	return v
}

// deadlineHeap orders a scope's running jobs by deadline, jobs without one last.
type deadlineHeap = indexedHeap[*job]

func (j *job) before(o *job) bool {
	a, b := j.deadline, o.deadline
	if a.IsZero() || b.IsZero() {
		return !a.IsZero() && b.IsZero()
	}
	return a.Before(b)
}
func (j *job) place() *int32 { return &j.heapIdx }

// dueHeap orders scopes by when they are due.
type dueHeap = indexedHeap[*scope]

func (s *scope) before(o *scope) bool { return s.dueAt.Before(o.dueAt) }
func (s *scope) place() *int32        { return &s.dueIdx }
