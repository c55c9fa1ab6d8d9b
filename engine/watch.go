package engine

import (
	"context"
	"iter"
	"maps"
	"slices"
	"strings"

	"github.com/troupehq/troupe"
)

// Events returns the run's events from the log as they are appended, ending with the terminal
// event or run_paused. For a resumed run it starts at the first event of the resumption. If ctx
// ends first, its error is yielded; the run itself goes on. However slow the reader, and however
// long after the run ended Events is called, it reads the whole log: with a memory store, which
// forgets a finished run once MaxFinishedRuns later runs have finished, the Run holds its log.
func (r *Run) Events(ctx context.Context) iter.Seq2[troupe.Event, error] {
	return func(yield func(troupe.Event, error) bool) {
		w := make(chan struct{}, 1)
		r.mu.Lock()
		r.watchers = append(r.watchers, w)
		after := r.firstSeq
		r.mu.Unlock()
		done := r.doneChan()
		// The memory store copies events into a buffer of the reader's (its log does not hold
		// them as Events); reading the log the run opened keeps the buffer on this stack, and
		// reads the whole run even once the store has retired it (a slow or late reader).
		var buf [8]troupe.Event
		defer func() {
			r.mu.Lock()
			if i := slices.Index(r.watchers, w); i >= 0 {
				r.watchers = slices.Delete(r.watchers, i, i+1)
			}
			r.mu.Unlock()
		}()
		for {
			// What the run has numbered, whether it has finished, and why it failed, read
			// before its log: events the log holds under the run's id past the last the run
			// numbered are another run's (one that took the id while this one could not write
			// its first event), never this run's to show.
			r.mu.Lock()
			fin, limit, rerr := r.finished, r.seq, r.err
			r.mu.Unlock()
			if after < limit {
				var evs []troupe.Event
				var err error
				if r.log != nil {
					evs = buf[:r.log.EventsInto(r.rec.req.RunID, after, buf[:])]
				} else {
					evs, err = r.e.store.Events(r.bg(), r.rec.req.RunID, after)
				}
				if err != nil {
					r.mu.Lock()
					if r.err != nil {
						err = r.err // the log could not be written: say why, not that it is missing
					}
					r.mu.Unlock()
					yield(troupe.Event{}, err)
					return
				}
				for _, ev := range evs {
					if ev.Seq > limit {
						break
					}
					after = ev.Seq
					if !yield(ev, nil) {
						return
					}
					if ev.Stage.Terminal() || ev.Kind == troupe.KindRunPaused {
						return
					}
				}
				if r.log != nil && len(evs) == len(buf) && after < limit {
					continue // the buffer was full: read on
				}
			}
			if fin {
				// Every event it recorded was read above.
				if rerr != nil {
					yield(troupe.Event{}, rerr)
				}
				return
			}
			select {
			case <-w:
			case <-done:
			case <-ctx.Done():
				yield(troupe.Event{}, context.Cause(ctx))
				return
			}
		}
	}
}

// wait blocks until the run has finished and every goroutine it started has returned (or was
// left behind past its deadline).
func (r *Run) wait() {
	<-r.doneChan()
	r.waitOnce.Do(r.scope.Wait)
}

// Wait blocks until the run ends (or pauses) and its goroutines are done, then returns its
// final state. The error is nil for a completed run; otherwise an *troupe.OrchestrationError
// whose cause is troupe.ErrCancelled, troupe.ErrPaused or the failure: errors.Is finds the
// sentinel of the failure's code (troupe.ErrTimeout, troupe.ErrBlocked,
// troupe.ErrBudgetExhausted when the budget is why, ...) and errors.As the *troupe.AgentError
// of the agent whose error failed the run. If ctx ends first, Wait returns ctx's error and
// the run goes on; the state is then the run's as far as it can be read without waiting.
// A run whose log could not be written returns the *troupe.OrchestrationError that says why;
// one stopped by Engine.Shutdown, an error matching troupe.ErrShutdown (resume it from its log).
func (r *Run) Wait(ctx context.Context) (troupe.OrchestratorState, error) {
	select {
	case <-r.doneChan():
	case <-ctx.Done():
		// The run may be stuck where it holds its lock (a store append that does not return):
		// Wait still returns, with the state if it can be read at once, else only the run's ids.
		if r.mu.TryLock() {
			defer r.mu.Unlock()
			return r.stateLocked(), context.Cause(ctx)
		}
		return troupe.OrchestratorState{RunID: r.rec.req.RunID, SessionID: r.rec.req.SessionID, QueryID: r.rec.req.QueryID}, context.Cause(ctx)
	}
	r.wait()
	st := r.State()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return st, r.err
	}
	oe := &troupe.OrchestrationError{Context: r.rec.req.Context}
	switch st.Status {
	case troupe.RunCompleted:
		return st, nil
	case troupe.RunPaused:
		oe.Stage, oe.Message, oe.Cause, oe.Recoverable = troupe.StagePaused, "waiting for a human", troupe.ErrPaused, true
	case troupe.RunCancelled:
		oe.Stage, oe.Message, oe.Cause = troupe.StageCancelled, r.ctxCauseText(), troupe.ErrCancelled
	default:
		x := r.rareOr()
		oe.Stage, oe.Message = r.failStage, x.failReason
		if r.failure != nil {
			oe.Message = joinReason(x.failReason, r.failure.Message)
			oe.Recoverable = r.failure.Recoverable
			oe.Metadata = map[string]any{"code": r.failure.Code}
		}
		if x.failCause != nil {
			oe.Cause = x.failCause
		}
		if len(x.fallbacks) > 0 {
			if oe.Metadata == nil {
				oe.Metadata = map[string]any{}
			}
			oe.Metadata["fallback"] = maps.Clone(x.fallbacks)
		}
	}
	return st, oe
}

func joinReason(a, b string) string {
	switch {
	case a == "" || strings.HasPrefix(b, a):
		return b // b says it already: a run the policy failed has its reason as its message
	case b == "":
		return a
	}
	return a + ": " + b
}
