package flow

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/internal/stray"
)

// abandonGrace is how long a member with a timeout (WithTimeout) has to return once its context
// ends — its deadline passes or its composite is cancelled — before the composite stops
// waiting for it. A member that honours its context returns well within it, and its own result
// (with what it spent) is recorded; one that ignores its context holds its composite at most
// this long past its deadline. It is package evidence's grace for its replicates, so a member
// is held to the same bound there and here, and a quarter of the local executor's cancel grace,
// so a composite that abandons a member still has time to finish inside a planned dispatch's
// deadline.
const abandonGrace = stray.Grace

// errAbandoned is what an abandoned member's runtime answers once its composite has gone on
// without it.
var errAbandoned = fmt.Errorf("flow: the member was abandoned past its timeout and reaches nothing: %w", troupe.ErrTimeout)

// A timed member's goroutine is running, has returned (its outcome is on its way to the
// composite) or was abandoned (the composite went on; the straggler tracker counts it).
const (
	running int32 = iota
	returned
	abandoned
)

// outcome is what a timed member's Run returned, and whether its context had ended by then.
type outcome struct {
	out  *troupe.Result
	err  error
	late bool
}

// ownDeadline is the cause of a timed member's context when its own timeout ended it, not its
// composite's context: which came first decides whether the member timed out or was cancelled,
// though the other may follow before it returns. Each invocation has its own, compared by
// identity: the contexts of members nested in the member inherit it as their cause, and their
// own timeouts did not pass. It reads as context.DeadlineExceeded does, and matches it. (Not
// of size zero: Go may give every new zero-size value one address.)
type ownDeadline struct{ _ byte }

func (*ownDeadline) Error() string { return context.DeadlineExceeded.Error() }
func (*ownDeadline) Unwrap() error { return context.DeadlineExceeded }

// invokeTimed runs member m, which has a timeout, on a goroutine of its own, and waits for it
// until its context has ended and abandonGrace has passed. A member that has not returned by
// then is abandoned: its runtime rt is cut off from the run (so nothing it does later reaches
// the composite or the run), its goroutine is left to f.strays, which the composite's
// Teardown waits for, and invokeTimed returns a TIMEOUT error with gone true. What the member
// returns later is dropped.
//
// Its timeout holds as a planned agent's deadline does: a member whose timeout passed before
// it returned timed out, whatever it returned then (a result is kept for what it reports
// using, under the TIMEOUT error), and so even when its composite's context ended after its
// timeout, before it returned or was abandoned: timedOut says so, for the result's status.
func (f *frame) invokeTimed(ctx context.Context, m *member, d *troupe.Dispatch, rt *nested) (out *troupe.Result, gone, timedOut bool, err error) {
	own := new(ownDeadline)
	actx, cancel := context.WithTimeoutCause(ctx, m.spec.Timeout, own)
	defer cancel()
	var state atomic.Int32
	ret := make(chan outcome, 1) // the goroutine's last act; buffered, so it never blocks
	strays := f.strays
	go func() {
		out, err := invoke(actx, m.spec.Agent, d)
		late := actx.Err() != nil
		if !state.CompareAndSwap(running, returned) {
			strays.Done() // abandoned: what it says now comes too late
			return
		}
		ret <- outcome{out, err, late}
	}()
	var o outcome
	select {
	case o = <-ret:
	case <-actx.Done():
		grace := time.NewTimer(abandonGrace)
		select {
		case o = <-ret:
			grace.Stop()
		case <-grace.C:
			// Counted before it is marked, so that the goroutine, seeing the mark, never
			// counts itself out before it was counted in.
			strays.Add()
			if state.CompareAndSwap(running, abandoned) {
				rt.cut.close()
				rt.endRunning(fmt.Sprintf("%s was abandoned past its timeout, and this with it", m.spec.Name))
				timedOut := context.Cause(actx) == error(own)
				cause := context.Cause(actx)
				if timedOut {
					cause = context.DeadlineExceeded
				}
				return nil, true, timedOut, &troupe.AgentError{Code: troupe.CodeTimeout, Recoverable: true,
					Message: fmt.Sprintf("%s did not finish within %v and was abandoned, still running %v after its context ended", m.spec.Name, m.spec.Timeout, abandonGrace),
					Details: map[string]any{"abandoned": true}, Cause: cause}
			}
			strays.Done()
			o = <-ret // it returned as the grace ran out
		}
	}
	switch timedOut := context.Cause(actx) == error(own); {
	case timedOut && o.err != nil:
		return o.out, false, true, &troupe.AgentError{Code: troupe.CodeTimeout, Recoverable: true,
			Message: fmt.Sprintf("%s did not finish within %v", m.spec.Name, m.spec.Timeout), Cause: o.err}
	case timedOut && o.late:
		// A result, returned after its timeout: too late, as a planned agent's would be.
		return o.out, false, true, &troupe.AgentError{Code: troupe.CodeTimeout, Recoverable: true,
			Message: fmt.Sprintf("%s did not finish within %v", m.spec.Name, m.spec.Timeout), Cause: context.DeadlineExceeded}
	}
	return o.out, false, false, o.err
}

// cutoff stops a member its composite abandoned from reaching the run through its runtime:
// once closed, the runtime reads no state, records no event and asks nobody. Calls that reach
// the enclosing runtime hold the read lock, so close waits for those in flight: nothing the
// member says reaches the run after the composite records it as abandoned. A nil *cutoff (a
// member without a timeout, never abandoned) is always open.
type cutoff struct {
	mu     sync.RWMutex
	closed bool
}

// enter reports whether the runtime may still reach the run; when it may, the caller calls
// leave once it is done.
func (c *cutoff) enter() bool {
	if c == nil {
		return true
	}
	c.mu.RLock()
	if c.closed {
		c.mu.RUnlock()
		return false
	}
	return true
}

func (c *cutoff) leave() {
	if c != nil {
		c.mu.RUnlock()
	}
}

func (c *cutoff) close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
}

// waitStrays waits until no member abandoned by composite what is left running, or until ctx
// ends.
func waitStrays(ctx context.Context, strays *stray.Tracker, what string) error {
	if n, err := strays.Wait(ctx); err != nil {
		return fmt.Errorf("flow: %s: %d abandoned members still running past their timeout: %w", what, n, err)
	}
	return nil
}
