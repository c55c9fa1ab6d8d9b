package local

import (
	"sync"
	"time"
)

// jobCtx is the context a job's Run receives. It is cancelled by its scope (deadline, run
// cancellation) rather than by a timer of its own, which keeps a dispatch to one allocation.
// It implements the AfterFunc method the context package looks for, so contexts derived from it
// need no watcher goroutine.
type jobCtx struct {
	s        *scope // its parent context is s.ctx
	deadline time.Time

	mu     sync.Mutex
	done   chan struct{}
	err    error // context.Canceled or context.DeadlineExceeded, as the context package's
	afters map[*afterFunc]struct{}
}

type afterFunc struct{ f func() }

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func (c *jobCtx) Deadline() (time.Time, bool) {
	pd, ok := c.s.ctx.Deadline()
	if c.deadline.IsZero() {
		return pd, ok
	}
	if ok && pd.Before(c.deadline) {
		return pd, true
	}
	return c.deadline, true
}

func (c *jobCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		if c.err != nil {
			return closedChan
		}
		c.done = make(chan struct{})
	}
	return c.done
}

func (c *jobCtx) Err() error {
	c.mu.Lock()
	err := c.err
	c.mu.Unlock()
	if err != nil {
		return err
	}
	// The scope's context may be cancelled before the scope has cancelled its jobs. Err may
	// say so only once Done is closed (context.Context's contract), so it cancels this one
	// first; the first cancel wins, so the error read back may be an earlier one's.
	if err = c.s.ctx.Err(); err != nil {
		c.cancel(err)
		c.mu.Lock()
		err = c.err
		c.mu.Unlock()
	}
	return err
}

func (c *jobCtx) Value(key any) any { return c.s.ctx.Value(key) }

// cancel sets err (the first cancel wins), closes Done and runs registered after-funcs.
func (c *jobCtx) cancel(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	if c.done != nil {
		close(c.done)
	}
	afters := c.afters
	c.afters = nil
	c.mu.Unlock()
	for a := range afters {
		a.f()
	}
}

// AfterFunc is used by context.WithCancel and friends on a child of c: f cancels the child.
// When c is already cancelled, f runs on a goroutine of its own, as context.AfterFunc's does:
// the context package calls AfterFunc holding the child's lock, which f takes (c cancelled
// between the package's check of Done and this call would otherwise hang the caller for good).
func (c *jobCtx) AfterFunc(f func()) (stop func() bool) {
	a := &afterFunc{f: f}
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		go f()
		return func() bool { return false }
	}
	if c.afters == nil {
		c.afters = make(map[*afterFunc]struct{})
	}
	c.afters[a] = struct{}{}
	c.mu.Unlock()
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		if _, ok := c.afters[a]; ok {
			delete(c.afters, a)
			return true
		}
		return false
	}
}

func (c *jobCtx) String() string { return "troupe.jobCtx" }
