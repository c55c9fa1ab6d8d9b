package local_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/troupehq/troupe/executor/executortest"
	"github.com/troupehq/troupe/executor/local"
)

// hookCtx is a scope context (a local.DoneNotifier) that runs a hook on the first Value call
// after it is armed. Deriving a child of a job's context (context.WithCancel and friends) asks
// the parent for its cancelCtx through Value after it has checked the parent is not done and
// before it registers with the parent's AfterFunc: the hook cancels the scope there, which
// cancels the job's context inside that window, deterministically.
type hookCtx struct {
	hook atomic.Pointer[func()]

	mu     sync.Mutex
	err    error
	done   chan struct{}
	onDone []func()
}

func newHookCtx() *hookCtx { return &hookCtx{done: make(chan struct{})} }

func (c *hookCtx) Deadline() (time.Time, bool) { return time.Time{}, false }
func (c *hookCtx) Done() <-chan struct{}       { return c.done }

func (c *hookCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *hookCtx) Value(any) any {
	if h := c.hook.Swap(nil); h != nil {
		(*h)()
	}
	return nil
}

func (c *hookCtx) OnDone(f func()) {
	c.mu.Lock()
	if c.err == nil {
		c.onDone = append(c.onDone, f)
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	f()
}

// cancel cancels the context and runs what OnDone registered, on the caller's goroutine: the
// scope has cancelled its jobs by the time cancel returns.
func (c *hookCtx) cancel() {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = context.Canceled
	close(c.done)
	fs := c.onDone
	c.onDone = nil
	c.mu.Unlock()
	for _, f := range fs {
		f()
	}
}

var _ local.DoneNotifier = (*hookCtx)(nil)

// A run cancelled while its agent derives a context from the job's context (the exec agent's
// context.WithTimeoutCause, an HTTP request's context) cancels the derived context. The job's
// context used to call the context package's after-func at once when it was already cancelled,
// which re-entered the lock the context package holds while registering it: the agent's
// goroutine hung forever, the dispatch was reported as a timeout after the grace period, and
// Drain waited for a straggler that never returned.
func TestCancelWhileDerivingContext(t *testing.T) {
	tests := []struct {
		name   string
		derive func(ctx context.Context) (done <-chan struct{}, stop func())
	}{
		{"WithCancel", func(ctx context.Context) (<-chan struct{}, func()) {
			c, cancel := context.WithCancel(ctx)
			return c.Done(), cancel
		}},
		{"WithTimeoutCause", func(ctx context.Context) (<-chan struct{}, func()) {
			c, cancel := context.WithTimeoutCause(ctx, time.Hour, errors.New("too slow"))
			return c.Done(), cancel
		}},
		{"AfterFunc", func(ctx context.Context) (<-chan struct{}, func()) {
			ran := make(chan struct{})
			stop := context.AfterFunc(ctx, func() { close(ran) })
			return ran, func() { stop() }
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := local.New(local.Config{CancelGrace: time.Hour})
			sctx := newHookCtx()
			s := e.Scope(sctx)
			var expired atomic.Bool
			var err error
			finished := make(chan struct{})
			s.Go(&executortest.JobFuncs{
				RunFunc: func(ctx context.Context) {
					cancelNow := sctx.cancel
					sctx.hook.Store(&cancelNow)
					done, stop := tt.derive(ctx)
					defer stop()
					if sctx.hook.Load() != nil {
						err = errors.New("the hook did not run: the race window was not hit")
						return
					}
					select {
					case <-done:
					case <-time.After(patience):
						err = errors.New("the derived context was never cancelled")
					}
				},
				DoneFunc: func(exp bool) { expired.Store(exp); close(finished) },
			}, 0, time.Time{})
			select {
			case <-finished:
			case <-time.After(patience):
				t.Fatalf("the job did not return within %v of its scope's cancellation: deriving a context from its cancelled context hung", patience)
			}
			s.Wait()
			if err != nil {
				t.Error(err)
			}
			if expired.Load() {
				t.Error("the job was reported expired")
			}
			drain(t, e)
		})
	}
}
