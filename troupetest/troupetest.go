// Package troupetest is troupe's public test kit: scripted agents, a fake clock, and helpers
// that collect a run's events and check the invariants every run log must keep.
package troupetest

import (
	"context"
	"fmt"
	"iter"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/troupehq/troupe"
)

// Step is one scripted response: the result and error an agent returns on one call.
type Step func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error)

// Script is an agent that answers its n-th call with Steps[n] (the last step repeats) and counts
// its calls. It is safe for concurrent use.
type Script struct {
	Steps []Step
	calls atomic.Int64
}

// Run answers the call.
func (s *Script) Run(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
	n := int(s.calls.Add(1)) - 1
	if len(s.Steps) == 0 {
		return OK(nil)(ctx, d)
	}
	return s.Steps[min(n, len(s.Steps)-1)](ctx, d)
}

// Calls returns how many times the agent ran.
func (s *Script) Calls() int { return int(s.calls.Load()) }

// NewScript returns a Script with the given steps.
func NewScript(steps ...Step) *Script { return &Script{Steps: steps} }

// OK returns a step that completes with result (or {"ok": true} when nil) and confidence 0.9.
func OK(result map[string]any) Step {
	if result == nil {
		result = map[string]any{"ok": true}
	}
	return func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{AgentResult: result, Confidence: troupe.Ptr(0.9)}, nil
	}
}

// Fail returns a step that fails with an *troupe.AgentError.
func Fail(code string, recoverable bool) Step {
	return func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		return nil, &troupe.AgentError{Code: code, Message: "scripted failure", Recoverable: recoverable}
	}
}

// Block returns a step that waits for release (or ctx) before completing; if ignoreCtx, it waits
// for release only, as an agent that ignores cancellation does.
func Block(release <-chan struct{}, ignoreCtx bool) Step {
	return func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		if ignoreCtx {
			<-release
			return OK(nil)(ctx, d)
		}
		select {
		case <-release:
			return OK(nil)(ctx, d)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Clock is a fake clock for executors: it stands still until Advance. Safe for concurrent use.
// It fixes the times a run records (timestamps, durations, budgets measured on it); it does not
// drive the local executor's timers: a job's deadline still passes in real time, so Advance
// does not expire a running job.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock reading start.
func NewClock(start time.Time) *Clock { return &Clock{now: start} }

// Now reads the clock.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// Collect ranges over a run's events and returns them with the error that ended the stream.
func Collect(seq iter.Seq2[troupe.Event, error]) ([]troupe.Event, error) {
	var evs []troupe.Event
	for ev, err := range seq {
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
	return evs, nil
}

// Stages returns the stages of events with consecutive repeats collapsed: the lifecycle as
// seed 001's compliance test states it (one EXECUTE for a dispatch's started and completed).
func Stages(evs []troupe.Event) []troupe.Stage {
	var out []troupe.Stage
	for _, ev := range evs {
		if len(out) == 0 || out[len(out)-1] != ev.Stage {
			out = append(out, ev.Stage)
		}
	}
	return out
}

// Kinds returns the kinds of events, in order.
func Kinds(evs []troupe.Event) []troupe.Kind {
	out := make([]troupe.Kind, len(evs))
	for i, ev := range evs {
		out[i] = ev.Kind
	}
	return out
}

// Find returns the events of kind k (for agent, when agent is not "").
func Find(evs []troupe.Event, k troupe.Kind, agent string) []troupe.Event {
	var out []troupe.Event
	for _, ev := range evs {
		if ev.Kind == k && (agent == "" || ev.Agent == agent) {
			out = append(out, ev)
		}
	}
	return out
}

// Last returns the last event, or the zero Event.
func Last(evs []troupe.Event) troupe.Event {
	if len(evs) == 0 {
		return troupe.Event{}
	}
	return evs[len(evs)-1]
}

// CheckLog reports every broken invariant of a complete run log (from seq 1): sequence numbers
// dense from 1, one run id, a context with the run's trace id on every event, at most one
// terminal event (known by its stage or its kind, which must agree) and nothing after it,
// INITIALIZE first, and no dispatch started again once it completed (one that failed, as a
// member paused for a human does, may be made again under its id). Every dispatch_started is answered by
// exactly one dispatch_completed or dispatch_failed for the same dispatch id, later in the log;
// only a log that has not ended (paused, or cut short) may leave dispatches unanswered. A log
// that stops without a terminal event passes — it may be read part way, or cut on purpose —:
// use CheckFinishedLog for the log of a run that has stopped.
func CheckLog(t testing.TB, evs []troupe.Event) {
	t.Helper()
	for _, p := range LogProblems(evs) {
		t.Error(p)
	}
}

// CheckFinishedLog is CheckLog for the log of a run that has stopped: as well as every
// invariant CheckLog checks, the log must end in its one terminal event (run_completed,
// run_failed or run_cancelled, at its stage) or, for a run waiting for a human, in run_paused.
// A log that simply stops — a crash, a lost write, a stream cut short — fails here, where
// CheckLog, which also serves logs read part way (a run still going, or one broken on purpose
// to test recovery), lets it pass.
func CheckFinishedLog(t testing.TB, evs []troupe.Event) {
	t.Helper()
	for _, p := range FinishedLogProblems(evs) {
		t.Error(p)
	}
}

// FinishedLogProblems is CheckFinishedLog's findings as values: LogProblems', then whether the
// log ends as a stopped run's does.
func FinishedLogProblems(evs []troupe.Event) []string {
	out := LogProblems(evs)
	if len(evs) == 0 {
		return out
	}
	last := evs[len(evs)-1]
	want, ok := endKind(last.Stage)
	switch {
	case !ok:
		out = append(out, fmt.Sprintf("log ends in event %d (%s %s), want a terminal event (complete, failed, cancelled) or paused", last.Seq, last.Stage, last.Kind))
	case last.Kind != want:
		out = append(out, fmt.Sprintf("log ends in event %d at stage %s with kind %s, want %s", last.Seq, last.Stage, last.Kind, want))
	}
	return out
}

// endKind is the kind of the last event of a stopped run's log that ends at stage s; false for
// a stage no stopped run's log ends at.
func endKind(s troupe.Stage) (troupe.Kind, bool) {
	switch s {
	case troupe.StageComplete:
		return troupe.KindRunCompleted, true
	case troupe.StageFailed:
		return troupe.KindRunFailed, true
	case troupe.StageCancelled:
		return troupe.KindRunCancelled, true
	case troupe.StagePaused:
		return troupe.KindRunPaused, true
	}
	return "", false
}

// terminalKind reports whether k is the kind of a run's terminal event.
func terminalKind(k troupe.Kind) bool {
	return k == troupe.KindRunCompleted || k == troupe.KindRunFailed || k == troupe.KindRunCancelled
}

// LogProblems is CheckLog's findings as values.
func LogProblems(evs []troupe.Event) []string {
	var out []string
	if len(evs) == 0 {
		return []string{"empty log"}
	}
	if evs[0].Stage != troupe.StageInitialize {
		out = append(out, fmt.Sprintf("first event is %s %s, want initialize", evs[0].Stage, evs[0].Kind))
	}
	var trace string
	if c := evs[0].Context; c != nil {
		trace = c.TraceID()
	}
	terminal := -1
	open := map[string]int64{}      // dispatch id → seq of its unanswered dispatch_started
	completed := map[string]int64{} // dispatch id → seq of its dispatch_completed
	var order []string              // dispatch ids in the order they started, for a stable report
	for i, ev := range evs {
		if ev.Seq != int64(i)+1 {
			out = append(out, fmt.Sprintf("event %d has seq %d", i+1, ev.Seq))
		}
		if ev.RunID != evs[0].RunID {
			out = append(out, fmt.Sprintf("event %d has run id %q, want %q", ev.Seq, ev.RunID, evs[0].RunID))
		}
		switch {
		case ev.Context == nil || ev.Context.TraceID() == "":
			out = append(out, fmt.Sprintf("event %d (%s) has no context trace id", ev.Seq, ev.Kind))
		case trace != "" && ev.Context.TraceID() != trace:
			out = append(out, fmt.Sprintf("event %d (%s) has trace id %q, want the run's %q", ev.Seq, ev.Kind, ev.Context.TraceID(), trace))
		}
		if terminal >= 0 {
			out = append(out, fmt.Sprintf("event %d (%s) follows terminal event %d", ev.Seq, ev.Kind, terminal+1))
		}
		if end := terminalKind(ev.Kind); ev.Stage.Terminal() || end {
			// Seen by its stage or by its kind, one terminal event either way: a run_failed
			// at stage execute ends the run as surely as one at stage failed, and is wrong.
			if want, _ := endKind(ev.Stage); !end || ev.Kind != want {
				out = append(out, fmt.Sprintf("event %d is %s at stage %s: a run ends in run_completed at complete, run_failed at failed or run_cancelled at cancelled", ev.Seq, ev.Kind, ev.Stage))
			}
			terminal = i
		}
		switch ev.Kind {
		case troupe.KindDispatchStarted:
			if at, ok := open[ev.DispatchID]; ok {
				out = append(out, fmt.Sprintf("event %d starts dispatch %q again, unanswered since event %d", ev.Seq, ev.DispatchID, at))
				continue
			}
			if at, ok := completed[ev.DispatchID]; ok {
				// A dispatch that failed (a member that paused for a human, say) may be made
				// again under its id; one that completed has its result, and running it again
				// would run finished work twice.
				out = append(out, fmt.Sprintf("event %d starts dispatch %q again, completed at event %d", ev.Seq, ev.DispatchID, at))
			}
			open[ev.DispatchID] = ev.Seq
			order = append(order, ev.DispatchID)
		case troupe.KindDispatchCompleted, troupe.KindDispatchFailed:
			if _, ok := open[ev.DispatchID]; !ok {
				out = append(out, fmt.Sprintf("event %d (%s) answers dispatch %q, which is not running", ev.Seq, ev.Kind, ev.DispatchID))
				continue
			}
			delete(open, ev.DispatchID)
			if ev.Kind == troupe.KindDispatchCompleted {
				completed[ev.DispatchID] = ev.Seq
			}
		}
	}
	if terminal >= 0 {
		for _, id := range order {
			if at, ok := open[id]; ok {
				out = append(out, fmt.Sprintf("dispatch %q started at event %d has no dispatch_completed or dispatch_failed", id, at))
				delete(open, id)
			}
		}
	}
	return out
}
