package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/executor/local"
	"github.com/troupehq/troupe/internal/jsonvalue"
	"github.com/troupehq/troupe/internal/schema"
)

// call is one dispatch: the request, the response being built, and the executor job that runs
// it. It is also the runtime its agent reaches through Dispatch's methods.
type call struct {
	r        *Run
	t        *task
	spec     *troupe.AgentSpec
	d        *troupe.Dispatch // in a dispatchRec of its own: the log keeps it, not the call
	work     *troupe.Result   // made and written by Run on the executor goroutine only, as it finishes
	res      *troupe.Result   // the outcome: work, a timeout result, or a recorded one
	timeout  time.Duration    // the deadline is d.DispatchedAt plus this
	delay    time.Duration    // before the executor runs it (retry backoff)
	nextDone *call            // link in the run's stack of finished calls
	prev     *call            // the task's previous dispatch (a retry's or fallback's predecessor)
	children atomic.Uint64    // ordinals of nested calls made on its behalf (troupe.Emitter)
	slot     local.Slot       // the local executor's record of this job, lent to spare an allocation
	partial  map[string]any   // guarded by r.mu
	attempt  int32
	asked    int32 // guarded by r.mu

	use         *nestedUse // what nested dispatches used so far; guarded by r.mu
	expiredDone bool       // Done's argument, published with the call
	// guarded by r.mu
	// reviewing: the result is under a human's review, which runs as a job of its own, after
	// the agent's deadline no longer applies. Set when the agent's completed result asks for
	// review (drain) or, on resume, by dispatchLocked; a call handed back with it set is back
	// from its review. Never written on the agent's goroutine, which may still be running
	// after the deadline recorded the call's timeout.
	reviewing bool
	paused    bool
	expired   bool
	replayed  bool
}

// Run executes the dispatch on an executor goroutine. Its frame is the only one of troupe's
// under a running agent besides the worker's: a goroutine starts with a 2 KB stack, and an agent
// blocked in a select already needs most of it, so every byte troupe keeps here decides whether
// a blocked run holds a 2 KB stack or 4 KB. Everything heavier happens in prepare and in done,
// whose frames are not there while the agent runs.
func (c *call) Run(ctx context.Context) {
	var out *troupe.Result
	var err error
	defer c.done(ctx, c.r.e.exec.Now(), &out, &err)
	if err = c.prepare(ctx); err == nil {
		out, err = c.spec.Agent.Run(ctx, c.d)
	}
}

// done finishes a dispatch once its agent has returned or panicked; this is the one place
// troupe recovers an agent's panic. The agent has returned: its dispatch, which the log keeps,
// lets go of the call (and through it the run), so a finished run's log holds only what it
// records.
//
//go:noinline
func (c *call) done(ctx context.Context, start time.Time, out **troupe.Result, err *error) {
	if v := recover(); v != nil {
		*out, *err = nil, troupe.NewPanicError(v)
	}
	c.finish(ctx, start, *out, *err)
	c.d.Bind(nil)
}

// dispatchRec is a dispatch as the log keeps it, with the value its MaxCostDollars points at.
type dispatchRec struct {
	d        troupe.Dispatch
	costLeft float64
}

// prepare checks what must hold before the agent runs: the run not cancelled, declared state
// present (seed 003's STATE_MISSING), guardrails allowing the dispatch.
//
//go:noinline
func (c *call) prepare(ctx context.Context) error {
	// A composite the log shows running members, made again by a resumed run already ending,
	// runs all the same: cancelled, it takes its finished members' results from the log and
	// ends as they let it (a collect_all group with a completed member completes), as it did
	// when the run that made the log cancelled it mid-way. Its members start nothing new.
	if err := ctx.Err(); err != nil && !c.r.replay.ranMembers(c.d.DispatchID) {
		if qs := c.r.replay.waitingUnder(c.d.DispatchID); len(qs) > 0 {
			// A composite the log shows waiting for a human's answer it does not hold: it
			// waits still, as its members' asking again would have it, and ends as it did,
			// cancelled for want of the answer, with what its finished members used.
			return c.waitAgain(qs)
		}
		return context.Cause(ctx)
	}
	r := c.r
	if r.e.anySetup {
		if s, ok := c.spec.Agent.(troupe.Setupper); ok {
			if err := r.setupLate(ctx, c.d.TargetAgent, s); err != nil {
				return err
			}
		}
	}
	if len(c.spec.Reads) > 0 {
		r.mu.Lock()
		var missing []string
		for _, k := range c.spec.Reads {
			if _, ok := r.stageStateLocked()[k]; !ok {
				missing = append(missing, k)
			}
		}
		var silent string
		if missing != nil {
			silent = r.silentWritersLocked(missing)
		}
		r.mu.Unlock()
		if missing != nil {
			return &troupe.AgentError{Code: troupe.CodeStateMissing, Message: fmt.Sprintf("session state lacks %v, which %s reads%s", missing, c.d.TargetAgent, silent),
				FallbackAction: r.e.writersOf(missing)}
		}
	}
	if sc := r.e.schemas[c.spec]; sc != nil && sc.in != nil {
		if err := sc.in.Validate(c.d.ParsedQuery); err != nil {
			return &troupe.AgentError{Code: troupe.CodeInvalidInput, Message: fmt.Sprintf("input of %s fails its schema", c.d.TargetAgent),
				FallbackAction: "ask the user to clarify", Cause: err}
		}
	}
	for _, g := range c.guards() {
		v, err := c.checkDispatch(ctx, g)
		if err != nil {
			return err
		}
		if len(v.Warnings) > 0 || len(v.Annotations) > 0 {
			c.noteBefore(g.Name(), v)
		}
		if v.Block {
			return fmt.Errorf("%w: %s: %s", troupe.ErrBlocked, g.Name(), v.Reason)
		}
	}
	return nil
}

// checkDispatch asks guardrail g about the dispatch before it runs. A panic in the check fails
// the dispatch (code PANIC, with the panic and its stack) naming the guardrail, as one in its
// result check does: the agent did not run, and is not blamed.
//
//go:noinline
func (c *call) checkDispatch(ctx context.Context, g troupe.Guardrail) (v troupe.Verdict, err error) {
	var pe *troupe.PanicError
	if errors.As(troupe.CallSafely(func() error { v = g.CheckDispatch(ctx, c.d); return nil }), &pe) {
		return v, &troupe.AgentError{Code: troupe.CodePanic, Message: fmt.Sprintf("guardrail %s panicked: %v", g.Name(), pe.Value), Cause: pe,
			Details: troupe.ErrorInfoOf(pe).Details}
	}
	return v, nil
}

// noteBefore keeps what a guardrail said of the dispatch before it ran (warnings,
// annotations) in c.work, which holds nothing else until finish builds the result and carries
// them onto it, as checkResult carries the after-check's.
//
//go:noinline
func (c *call) noteBefore(guard string, v troupe.Verdict) {
	if c.work == nil {
		c.work = new(troupe.Result)
	}
	c.work.Warnings = append(c.work.Warnings, v.Warnings...)
	if len(v.Annotations) > 0 {
		c.work.Annotate(guard, v.Annotations)
	}
	// A copy for the run, under its lock, should the deadline pass before finish carries them:
	// the timeout result is made on another goroutine, which may not read c.work.
	r := c.r
	r.mu.Lock()
	x := r.more()
	if x.preNotes == nil {
		x.preNotes = make(map[*call]*troupe.Result)
	}
	x.preNotes[c] = &troupe.Result{Warnings: slices.Clone(c.work.Warnings), Annotations: c.work.Annotations} // Annotate replaces maps, never writes into them
	r.mu.Unlock()
}

// carryNotes puts the before-dispatch guardrails' warnings and annotations (pre) on res: the
// warnings ahead of the agent's, as they came first.
//
//go:noinline
func carryNotes(res, pre *troupe.Result) {
	if len(pre.Warnings) > 0 {
		res.Warnings = append(slices.Clip(pre.Warnings), res.Warnings...)
	}
	for _, g := range slices.Sorted(maps.Keys(pre.Annotations)) {
		res.Annotate(g, pre.Annotations[g].(map[string]any))
	}
}

// finish builds the response: engine-owned fields, validation (seed 000), and what
// guardrails said before the agent ran and over its result. A result that requires a human's
// review is sent to one by drain, under the run's lock: this goroutine may be a straggler's,
// still running after the deadline recorded the dispatch's timeout.
//
//go:noinline
func (c *call) finish(ctx context.Context, start time.Time, out *troupe.Result, err error) {
	r := c.r
	end := r.e.exec.Now()
	pre := c.work             // what guardrails noted before the agent ran, if anything
	res := new(troupe.Result) // not part of call: a run blocked in its agent holds none
	c.work = res
	if out != nil {
		*res = *out
		// The agent may return one *Result from many calls: never append into its slices.
		res.Errors, res.Warnings = slices.Clip(res.Errors), slices.Clip(res.Warnings)
	}
	if pre != nil {
		carryNotes(res, pre)
	}
	res.DispatchID, res.SessionID, res.QueryID, res.AgentName = c.d.DispatchID, c.d.SessionID, c.d.QueryID, c.d.TargetAgent
	res.StartedAt, res.CompletedAt = start, end
	res.ExecutionTimeMS = end.Sub(start).Milliseconds()
	if res.TraceID == nil {
		res.TraceID = &r.rec.traceID
	}
	if err != nil || out == nil {
		c.failed(ctx, err)
		return
	}
	if res.Status == "" {
		res.Status = troupe.StatusCompleted
	}
	if verr := res.Validate(r.e.reg); verr != nil {
		c.invalid(verr)
		return
	}
	if !jsonvalue.Finite(res.AgentResult) || res.Handoff != nil && !jsonvalue.Finite(res.Handoff) {
		c.nonFinite()
		return
	}
	if sc := r.e.schemas[c.spec]; sc != nil && sc.out != nil && res.Status == troupe.StatusCompleted {
		if verr := sc.out.Validate(res.AgentResult); verr != nil {
			c.schemaInvalid(verr)
			return
		}
	}
	if len(c.spec.Guardrails) > 0 || len(r.guards) > 0 {
		c.checkResult(ctx) // its frame is large: called only when there are guardrails
	}
}

// failed records the dispatch of an agent that returned an error, or nothing. Kept out of
// finish, as invalid is, so that finish's frame stays small: the worker runs finish on the
// stack it started with.
//
//go:noinline
func (c *call) failed(ctx context.Context, err error) {
	r := c.r
	switch {
	case errors.Is(err, troupe.ErrPaused) && c.isPaused():
	case err != nil && ctx.Err() != nil && r.ctxErr() != nil:
		c.fail(troupe.StatusCancelled, troupe.ErrorInfo{Code: troupe.CodeCancelled, Message: r.ctxCauseText()})
	case err != nil:
		info := troupe.ErrorInfoOf(err)
		if det := schema.Details(err); det != nil {
			info.Details = det
		}
		if info.Code == troupe.CodeTimeout {
			// The agent timed out by its own clock (an adapter's timeout, a 504): a timeout
			// as much as one its deadline cut short, so on_timeout applies (seed 000), with
			// what it reported through Partial, as the flow package records such a member.
			c.fail(troupe.StatusTimeout, info)
			r.mu.Lock()
			if len(c.work.AgentResult) == 0 {
				c.work.AgentResult = c.partial
			}
			r.mu.Unlock()
			if len(c.work.AgentResult) > 0 && len(c.guards()) > 0 {
				withPartialNotes(c.work, c.guardPartial(ctx, c.work.AgentResult))
			}
			return
		}
		c.fail(troupe.StatusFailed, info)
	default:
		c.fail(troupe.StatusFailed, troupe.ErrorInfo{Code: troupe.CodeInvalidOutput, Message: "agent returned neither a result nor an error"})
	}
}

// invalid records a result that fails seed 000's validation: failed, never silently
// accepted, with the agent's output kept in the result. Kept out of finish, as failed is.
//
//go:noinline
func (c *call) invalid(verr error) {
	c.fail(troupe.StatusFailed, troupe.ErrorInfo{Code: troupe.CodeInvalidOutput, Message: verr.Error()})
}

// nonFinite records as invalid a result holding a NaN or an infinity, which JSON cannot encode:
// its log could not be written by a store that encodes it, nor sent to a peer. What the agent
// said is kept, each such number as its text ("NaN", "+Inf"), and the error says where.
//
//go:noinline
func (c *call) nonFinite() {
	res := c.work
	msg := jsonvalue.EncodeOutput(c.d.TargetAgent, &res.AgentResult, &res.Handoff)
	c.fail(troupe.StatusFailed, troupe.ErrorInfo{Code: troupe.CodeInvalidOutput, Message: msg})
}

// schemaInvalid records a result whose agent_result fails the agent's output schema, as
// invalid does, with the schema's findings in the error's details.
//
//go:noinline
func (c *call) schemaInvalid(verr error) {
	c.fail(troupe.StatusFailed, troupe.ErrorInfo{Code: troupe.CodeInvalidOutput, Details: schema.Details(verr),
		Message: fmt.Sprintf("output of %s fails its schema: %v", c.d.TargetAgent, verr)})
}

// checkPartial checks the partial result a timed-out dispatch's result carries (what its
// agent reported through Partial) as finish checks a completed one: for a NaN or an infinity,
// then against the agent's output schema. One that fails is recorded as invalid, never
// silently accepted: the result, still a timeout, gets an INVALID_OUTPUT error saying why,
// which keeps on_timeout use_partial from using it (partialUsable), in this run and in one
// resumed from its log. What the agent reported stays in the result, each non-finite number as
// its text. Only a timeout with a partial result comes here, never a completed dispatch.
//
//go:noinline
func (c *call) checkPartial() {
	res := c.res
	if !jsonvalue.Finite(res.AgentResult) || res.Handoff != nil && !jsonvalue.Finite(res.Handoff) {
		msg := jsonvalue.EncodeOutput(c.d.TargetAgent, &res.AgentResult, &res.Handoff)
		res.Errors = append(slices.Clip(res.Errors), troupe.ErrorInfo{Code: troupe.CodeInvalidOutput, Message: "partial result not used: " + msg})
		return
	}
	if sc := c.r.e.schemas[c.spec]; sc != nil && sc.out != nil {
		if verr := sc.out.Validate(res.AgentResult); verr != nil {
			res.Errors = append(slices.Clip(res.Errors), troupe.ErrorInfo{Code: troupe.CodeInvalidOutput, Details: schema.Details(verr),
				Message: fmt.Sprintf("partial result not used: it fails the output schema of %s: %v", c.d.TargetAgent, verr)})
		}
	}
}

// partialUsable reports whether a timed-out dispatch's result carries a partial result that
// on_timeout use_partial may use: one its agent reported that neither checkPartial nor a
// result guardrail (guardPartial) refused.
func partialUsable(res *troupe.Result) bool {
	if len(res.AgentResult) == 0 {
		return false
	}
	for _, e := range res.Errors {
		switch e.Code {
		case troupe.CodeInvalidOutput, troupe.CodeBlocked, troupe.CodePanic:
			return false // invalid (checkPartial), or a result guardrail refused it (guardPartial)
		}
	}
	return true
}

func (c *call) guards() []troupe.Guardrail {
	if len(c.spec.Guardrails) == 0 {
		return c.r.guards
	}
	return append(c.spec.Guardrails[:len(c.spec.Guardrails):len(c.spec.Guardrails)], c.r.guards...)
}

// checkResult runs the guardrails over the result: a block fails it, warnings and annotations
// are attached.
func (c *call) checkResult(ctx context.Context) {
	res := c.work
	for _, g := range c.guards() {
		v, ok := c.checkOne(ctx, g)
		if !ok {
			return // it panicked: the result has failed
		}
		res.Warnings = append(res.Warnings, v.Warnings...)
		if len(v.Annotations) > 0 {
			res.Annotate(g.Name(), v.Annotations)
		}
		if v.Block {
			c.fail(troupe.StatusFailed, troupe.ErrorInfo{Code: troupe.CodeBlocked, Message: fmt.Sprintf("%s blocked the result: %s", g.Name(), v.Reason)})
			return
		}
	}
}

// checkOne runs one result guardrail; ok is false when it panicked, which fails the result.
func (c *call) checkOne(ctx context.Context, g troupe.Guardrail) (v troupe.Verdict, ok bool) {
	defer c.recovered(func() string { return "guardrail " + g.Name() })
	return g.CheckResult(ctx, c.d, c.work), true
}

// recovered, deferred around user code that runs after the agent has returned (a result
// guardrail, the human-input handler reviewing a result), turns a panic there into the
// dispatch's failure, with the panic and its stack, as a panicking agent's is: the process
// goes on, and so does the run.
func (c *call) recovered(who func() string) {
	if v := recover(); v != nil {
		info := troupe.ErrorInfoOf(troupe.NewPanicError(v)) // code PANIC, the panic and its stack in details
		info.Message = fmt.Sprintf("%s panicked: %v", who(), v)
		c.fail(troupe.StatusFailed, info)
	}
}

// reviewJob is a call whose result a human must review, as an executor job with no deadline:
// the agent has returned, and the time a human takes is not the agent's. It runs on the
// run's scope, so it is cancelled with the run and waited for like any dispatch.
type reviewJob call

// Run asks for the review.
func (j *reviewJob) Run(ctx context.Context) {
	c := (*call)(j)
	defer c.recovered(func() string { return "the human-input handler" })
	c.review(ctx)
}

// Done hands the reviewed call back to the run, to be recorded as any finished dispatch is
// (its reviewing flag, still set, tells drain the review is over; timedOut, that an expired
// review was cut short by the run's cancellation, not by the agent's deadline).
func (j *reviewJob) Done(expired bool) {
	c := (*call)(j)
	c.d.Bind(nil)
	c.Done(expired)
}

// review asks a human to approve a result that came back with requires_human. The question
// carries the result, so a run that pauses on it takes that result when it is resumed instead
// of running the agent again: the answer given is applied to the result the human saw.
func (c *call) review(ctx context.Context) {
	rec := *c.work // the log keeps the result as it was asked about; c.work goes on changing
	q := troupe.Question{Kind: troupe.QuestionReview, Prompt: fmt.Sprintf("%s asks for review of its result", c.d.TargetAgent),
		Data: rec.AgentResult, Result: &rec}
	if s := rec.Summary(); s != "" {
		q.Prompt += ": " + s
	}
	ans, err := c.Ask(ctx, q)
	var ae *troupe.AgentError
	switch {
	case errors.Is(err, troupe.ErrPaused) && c.isPaused():
	case errors.As(err, &ae) && ae.Code == troupe.CodePanic: // the handler panicked (Ask)
		c.fail(troupe.StatusFailed, troupe.ErrorInfoOf(err))
	case err != nil && ctx.Err() != nil && c.r.ctxErr() != nil:
		// The run ended (cancelled, or failed by another dispatch) while a human reviewed:
		// the review was cut short, as an agent's own question is, and the dispatch with it.
		c.fail(troupe.StatusCancelled, troupe.ErrorInfo{Code: troupe.CodeCancelled, Message: "review cut short: " + c.r.ctxCauseText()})
	case err != nil:
		c.fail(troupe.StatusFailed, troupe.ErrorInfo{Code: troupe.CodeHumanRequired, Message: "review: " + err.Error(), Recoverable: true})
	case !ans.Approved:
		msg := "rejected by a human"
		if ans.Text != "" {
			msg += ": " + ans.Text
		}
		c.fail(troupe.StatusFailed, troupe.ErrorInfo{Code: troupe.CodeHumanRejected, Message: msg})
	}
}

func (c *call) fail(s troupe.Status, info troupe.ErrorInfo) {
	c.work.Status = s
	c.work.Errors = append(c.work.Errors, info)
}

func (c *call) isPaused() bool {
	c.r.mu.Lock()
	defer c.r.mu.Unlock()
	return c.paused
}

// Done hands the finished call to the run. Completions are recorded by one goroutine at a time
// (flat combining): the caller pushes its call onto a lock-free stack and, if no other
// goroutine is recording, records every call on the stack in one critical section. A fan-out
// of a hundred agents finishing together thus takes the run's lock a few times, not a hundred.
func (c *call) Done(expired bool) {
	c.expiredDone = expired
	r := c.r
	for {
		head := r.doneq.Load()
		c.nextDone = head
		if r.doneq.CompareAndSwap(head, c) {
			break
		}
	}
	r.drain()
}

// timedOut makes the call's outcome a timeout result; Run may still be writing c.work on its
// goroutine, so the outcome is a separate value.
func (c *call) timedOut() {
	r := c.r
	now := r.now
	start := c.d.DispatchedAt
	c.res = &troupe.Result{
		DispatchID: c.d.DispatchID, SessionID: c.d.SessionID, QueryID: c.d.QueryID, AgentName: c.d.TargetAgent,
		Status: troupe.StatusTimeout, StartedAt: start, CompletedAt: now, ExecutionTimeMS: now.Sub(start).Milliseconds(),
		AgentResult: c.partial, TraceID: &r.rec.traceID,
		Errors: []troupe.ErrorInfo{{Code: troupe.CodeTimeout, Recoverable: true,
			Message: fmt.Sprintf("%s did not finish within its deadline (%v)", c.d.TargetAgent, c.timeout)}},
	}
	var reviewed *troupe.Result // what the result under review reported; c.work is the handler's to write
	if x := r.rare; c.reviewing && x != nil {
		reviewed = x.underReview[c]
	}
	// What it used so far was spent: a composite's finished members, an agent's result under
	// review. The run's totals and budgets count it, as they counted it while it ran.
	spentSoFar(c.res, reviewed, c.use, now)
	switch {
	case r.ctxErr() != nil && c.reviewing:
		// The agent had finished: the human-input handler is what did not return.
		c.res.Status = troupe.StatusCancelled
		c.res.Errors[0] = troupe.ErrorInfo{Code: troupe.CodeCancelled,
			Message: fmt.Sprintf("the human-input handler reviewing %s's result did not return within the cancel grace after the run ended", c.d.TargetAgent)}
	case r.ctxErr() != nil && now.Sub(start) < c.timeout:
		// Not its deadline: the run was cancelled and the agent did not stop within the
		// executor's grace. Saying "timeout" would send a reader after the wrong cause.
		c.res.Status = troupe.StatusCancelled
		c.res.Errors[0] = troupe.ErrorInfo{Code: troupe.CodeCancelled,
			Message: fmt.Sprintf("%s did not stop within the cancel grace after the run was cancelled", c.d.TargetAgent)}
	}
	if x := r.rare; x != nil && x.preNotes[c] != nil {
		carryNotes(c.res, x.preNotes[c]) // what guardrails said before it ran
	}
	if x := r.rare; x != nil && len(c.partial) > 0 {
		withPartialNotes(c.res, x.partialNotes[c]) // and of its partial result
	}
	if c.paused {
		// It asked a human and then ran out of time: its question no longer holds the run.
		r.unpauseLocked(c)
	}
}

// openNested is a dispatch nested in a planned one that the log shows started and not finished.
type openNested struct {
	d      *troupe.Dispatch
	parent string
	ctx    *troupe.Context
}

// takeOpenNestedLocked returns, and forgets, the dispatches nested in c that the log shows
// started and not finished, oldest first.
func (r *Run) takeOpenNestedLocked(c *call) []openNested {
	x := r.rare
	if x == nil {
		return nil
	}
	open := x.openNested[c]
	delete(x.openNested, c)
	return open
}

// closeNestedLocked records open, the dispatches nested in c still unfinished as c, cut off at
// its deadline or at the cancel grace, ended (c.res says how), just after c's own result:
// cancelled with it, newest first, so that every dispatch the log shows started is answered.
// Whatever they do from now on is not recorded (c is expired), as nothing its agent does is.
// After c's result, not before it: a run resumed from a log that stops between the two takes
// c's result and closes them as it ends (closeOpenLocked), where one that stopped before c's
// result would make c again and find them finished.
func (r *Run) closeNestedLocked(c *call, open []openNested) {
	if len(open) == 0 {
		return
	}
	now := r.nowLocked()
	why := c.res.Errors[0].Message
	for _, o := range slices.Backward(open) {
		d := o.d
		res := r.endedResultLocked(d, now, fmt.Sprintf("left unfinished: %s, which it ran in, ended: %s", c.d.TargetAgent, why))
		r.emitLocked(troupe.Event{Stage: troupe.StageExecute, Kind: troupe.KindDispatchFailed, Step: c.t.step, Parent: o.parent, DispatchID: d.DispatchID,
			Agent: d.TargetAgent, Status: res.Status, Context: o.ctx, Data: res})
	}
}

// spentSoFar fills res, the result the run makes for a dispatch it ends unfinished (timed out,
// cut off, or waiting for a human as the run ends), with what the dispatch reported using by
// then: w, a result it returned (one under review), when w reports usage, and its start; or
// else what its nested dispatches reported (u): a composite's finished members, an agent's
// tools. It was spent: the run's totals count it, as they count a dispatch the run cancels
// mid-way, and as the budgets counted it while the dispatch ran.
func spentSoFar(res, w *troupe.Result, u *nestedUse, now time.Time) {
	if w != nil && !w.StartedAt.IsZero() {
		res.StartedAt = w.StartedAt
		res.ExecutionTimeMS = now.Sub(w.StartedAt).Milliseconds()
	}
	switch {
	case w != nil && (w.TokensUsed != nil || w.CostDollars != nil):
		res.TokensUsed, res.CostDollars = w.TokensUsed, w.CostDollars
	case u != nil:
		if u.tokensSeen {
			res.TokensUsed = troupe.Ptr(u.tokens)
		}
		if u.costSeen {
			res.CostDollars = troupe.Ptr(u.cost)
		}
	}
}

// underReviewLocked notes what c's result, about to go under a human's review, reported: its
// start, tokens and cost (runRare.underReview).
func (r *Run) underReviewLocked(c *call) {
	x := r.more()
	if x.underReview == nil {
		x.underReview = make(map[*call]*troupe.Result)
	}
	w := c.work
	snap := &troupe.Result{StartedAt: w.StartedAt}
	if w.TokensUsed != nil {
		snap.TokensUsed = troupe.Ptr(*w.TokensUsed)
	}
	if w.CostDollars != nil {
		snap.CostDollars = troupe.Ptr(*w.CostDollars)
	}
	x.underReview[c] = snap
}

// unpauseLocked forgets the questions c asked, which no longer hold the run: c ran out of
// time, or finished without waiting for the answers.
func (r *Run) unpauseLocked(c *call) {
	c.paused = false
	r.dropQuestionsOfLocked(c)
	r.pausing = len(r.rareOr().questions) > 0
}

// RunGuardrails passes the run's guardrails (the engine's and the request's) to composites,
// which check the dispatches they run themselves with them (troupe.Guarder). r.guards is set
// before the run starts and never written after.
func (c *call) RunGuardrails() []troupe.Guardrail {
	return c.r.guards[:len(c.r.guards):len(c.r.guards)]
}

// State reads session state as the dispatch's stage began: in a parallel group, an agent that
// finished first does not change what the others read.
func (c *call) State(key string) (any, bool) {
	c.r.mu.Lock()
	defer c.r.mu.Unlock()
	v, ok := c.r.stageStateLocked()[key]
	return v, ok
}

// Progress appends an agent_progress event.
func (c *call) Progress(kind string, data any) {
	r := c.r
	r.mu.Lock()
	defer r.mu.Unlock()
	if c.expired || r.finishing {
		return
	}
	r.emitLocked(troupe.Event{Stage: troupe.StageExecute, Kind: troupe.KindAgentProgress, Step: c.t.step, DispatchID: c.d.DispatchID, Agent: c.d.TargetAgent,
		Data: &troupe.Progress{Kind: kind, Data: data}})
	r.flushLocked()
}

// Partial records a partial result for on_timeout use_partial.
//
// The result guardrails (the agent's and the run's) check each partial result as it is
// recorded, on the agent's goroutine, as they check a result: a partial one of them blocks is
// kept with a BLOCKED error, which keeps on_timeout use_partial from using it, and their
// warnings and annotations go with it (partialNotes).
func (c *call) Partial(result map[string]any) {
	r := c.r
	var notes *troupe.Result
	if len(result) > 0 && len(c.guards()) > 0 {
		r.mu.Lock()
		expired := c.expired
		r.mu.Unlock()
		if expired {
			return // a straggler: nothing it says is recorded, nor checked
		}
		notes = c.guardPartial(r.context(), result)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if c.expired {
		return
	}
	c.partial = result
	switch x := r.rare; {
	case notes != nil:
		x = r.more()
		if x.partialNotes == nil {
			x.partialNotes = make(map[*call]*troupe.Result)
		}
		x.partialNotes[c] = notes
	case x != nil && x.partialNotes != nil:
		delete(x.partialNotes, c) // an earlier partial's
	}
}

// guardPartial runs the result guardrails over m, a partial result of c's agent, and returns
// what they said (nil for nothing): their warnings and annotations, and an error saying why m
// is not to be used, if one blocked it or panicked.
func (c *call) guardPartial(ctx context.Context, m map[string]any) *troupe.Result {
	probe := &troupe.Result{DispatchID: c.d.DispatchID, SessionID: c.d.SessionID, QueryID: c.d.QueryID, AgentName: c.d.TargetAgent,
		Status: troupe.StatusTimeout, AgentResult: m}
	var notes troupe.Result
	for _, g := range c.guards() {
		v, perr := checkGuarded(ctx, g, c.d, probe)
		if perr != nil {
			info := troupe.ErrorInfoOf(perr)
			info.Message = fmt.Sprintf("partial result not used: guardrail %s panicked: %v", g.Name(), info.Message)
			notes.Errors = append(notes.Errors, info)
			break
		}
		notes.Warnings = append(notes.Warnings, v.Warnings...)
		if len(v.Annotations) > 0 {
			notes.Annotate(g.Name(), v.Annotations)
		}
		if v.Block {
			notes.Errors = append(notes.Errors, troupe.ErrorInfo{Code: troupe.CodeBlocked, Message: fmt.Sprintf("partial result not used: %s blocked it: %s", g.Name(), v.Reason)})
			break
		}
	}
	if len(notes.Warnings) == 0 && len(notes.Annotations) == 0 && len(notes.Errors) == 0 {
		return nil
	}
	return &notes
}

// checkGuarded runs g's check of res, turning a panic into a *troupe.PanicError.
func checkGuarded(ctx context.Context, g troupe.Guardrail, d *troupe.Dispatch, res *troupe.Result) (v troupe.Verdict, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = troupe.NewPanicError(p)
		}
	}()
	return g.CheckResult(ctx, d, res), nil
}

// withPartialNotes adds to res, a timeout result carrying a partial result, what the result
// guardrails said of that partial (guardPartial).
func withPartialNotes(res, notes *troupe.Result) {
	if notes == nil {
		return
	}
	carryNotes(res, notes)
	res.Errors = append(slices.Clip(res.Errors), notes.Errors...)
}

// Ask records the question, then answers it from the log (a resumed run), the run's handler,
// or — with no handler — pauses the run.
func (c *call) Ask(ctx context.Context, q troupe.Question) (troupe.Answer, error) {
	r := c.r
	r.mu.Lock()
	if c.expired {
		r.mu.Unlock()
		return troupe.Answer{}, troupe.ErrTimeout
	}
	if q.DispatchID == "" || q.DispatchID == c.d.DispatchID || q.ID == "" {
		c.asked++
		q.ID = c.d.DispatchID + "-q" + strconv.Itoa(int(c.asked))
		q.DispatchID, q.Agent = c.d.DispatchID, c.d.TargetAgent
	} // else a dispatch nested in this one asked, and named the question after itself
	if q.Agent == "" {
		q.Agent = c.d.TargetAgent
	}
	if q.Kind == "" {
		q.Kind = troupe.QuestionAsk
	}
	if a, ok := r.replay.answer(q.ID); ok {
		r.mu.Unlock()
		return a, nil
	}
	qc := q
	r.emitLocked(troupe.Event{Stage: troupe.StageExecute, Kind: troupe.KindHumanAsked, Step: c.t.step, DispatchID: q.DispatchID, Agent: q.Agent, Data: &qc})
	r.flushLocked()
	h := r.rec.req.Human
	if h == nil {
		h = r.e.human
	}
	if h == nil {
		c.paused = true
		r.pausing = true
		x := r.more()
		x.questions = append(x.questions, q)
		x.askedBy = append(x.askedBy, c)
		r.mu.Unlock()
		return troupe.Answer{}, fmt.Errorf("%w: %s", troupe.ErrPaused, q.Prompt)
	}
	r.mu.Unlock()
	var a troupe.Answer
	var pe *troupe.PanicError
	err := troupe.CallSafely(func() (err error) { a, err = h.Answer(ctx, q); return err })
	if errors.As(err, &pe) {
		// The handler panicked, not the agent that asked: the error says so (code PANIC, with
		// the panic and its stack), as a panic while it reviews a result does.
		return troupe.Answer{}, &troupe.AgentError{Code: troupe.CodePanic, Message: fmt.Sprintf("the human-input handler panicked answering %s: %v", q.ID, pe.Value),
			Cause: pe, Details: troupe.ErrorInfoOf(pe).Details}
	}
	if err != nil {
		return troupe.Answer{}, fmt.Errorf("engine: human input for %s: %w", q.ID, err)
	}
	a.QuestionID = q.ID
	r.mu.Lock()
	ac := a
	if !c.expired {
		r.emitLocked(troupe.Event{Stage: troupe.StageExecute, Kind: troupe.KindHumanAnswered, Step: c.t.step, DispatchID: q.DispatchID, Agent: q.Agent, Data: &ac})
		r.flushLocked()
	}
	r.mu.Unlock()
	return a, nil
}

// Emit appends an event of an agent nested in this dispatch (troupe.Emitter): a composite's
// members, an agent called as a tool. The nested event carries the enclosing dispatch as its
// parent and a child execution context; it is part of the log but never a result of the plan.
func (c *call) Emit(ev troupe.Event) {
	r := c.r
	if ev.Parent == "" {
		ev.Parent = c.d.DispatchID
	}
	if ev.Context == nil {
		tc := r.rec.req.Context.Child()
		ev.Context = &tc
	}
	ev.Stage, ev.Step = troupe.StageExecute, c.t.step
	r.mu.Lock()
	defer r.mu.Unlock()
	if c.expired || r.finishing {
		return
	}
	if d, ok := ev.Data.(*troupe.Dispatch); ok && ev.Kind == troupe.KindDispatchStarted {
		x := r.more()
		if x.askers == nil {
			x.askers = map[string]string{}
		}
		x.askers[d.DispatchID] = ev.Parent
		if x.openNested == nil {
			x.openNested = map[*call][]openNested{}
		}
		x.openNested[c] = append(x.openNested[c], openNested{d: d, parent: ev.Parent, ctx: ev.Context})
	}
	if res, ok := ev.Data.(*troupe.Result); ok && (ev.Kind == troupe.KindDispatchCompleted || ev.Kind == troupe.KindDispatchFailed) {
		if x := r.rare; x != nil {
			if open := x.openNested[c]; len(open) > 0 {
				x.openNested[c] = slices.DeleteFunc(open, func(o openNested) bool { return o.d.DispatchID == res.DispatchID })
			}
		}
		c.chargeNestedLocked(res, ev.Parent)
		if res.Status == troupe.StatusCompleted {
			held := r.pausing
			c.dropMootLocked(res.DispatchID)
			r.replay.completedNested(c.d.DispatchID, res.DispatchID)
			if held && !r.pausing {
				// The questions that held new dispatches back are moot: they start now,
				// not when a planned dispatch next finishes (as a run resumed from the log
				// here would start them at once).
				r.advanceStagesLocked()
			}
		}
		if res.Status != troupe.StatusCompleted {
			// Marked as a planned dispatch's: a resumed run reads the mark when the composite's
			// own result did not make it into the log. The composite keeps its result as it is.
			cancelling := r.ctxErr() != nil && r.failure == nil
			if _, marked := runCancelCause(res); cancelling || marked {
				cp := *res
				r.noteRunCancelLocked(&cp, cancelling)
				ev.Data = &cp
			}
		}
	}
	r.emitLocked(ev)
	r.flushLocked()
}

// dropMootLocked forgets the open questions asked by nested dispatch id, which completed, or
// by dispatches nested in it: a first_success group another branch of which won while one
// asked, say. Its completion makes them moot: no answer changes what it did, so they hold
// neither c nor the run, and a run resumed from the log, which takes the completed result,
// does not ask them again. c is no longer paused once none it asked through is left open.
func (c *call) dropMootLocked(id string) {
	x := c.r.rare
	if x == nil || len(x.questions) == 0 {
		return
	}
	kept, left := 0, false
	for i, q := range x.questions {
		moot := false
		if x.askedBy[i] == c {
			for a, n := q.DispatchID, 0; a != "" && n <= len(x.askers); a, n = x.askers[a], n+1 {
				if moot = a == id; moot {
					break
				}
			}
		}
		if !moot {
			x.questions[kept], x.askedBy[kept] = q, x.askedBy[i]
			kept++
			left = left || x.askedBy[i] == c
		}
	}
	if kept == len(x.questions) {
		return
	}
	clear(x.askedBy[kept:])
	x.questions, x.askedBy = x.questions[:kept], x.askedBy[:kept]
	if !left {
		c.paused = false
		if c.r.replay != nil {
			// A resumed run whose log shows c waiting for them does not wait for c either.
			c.r.replay.settled(c.d.DispatchID)
		}
	}
	c.r.pausing = len(x.questions) > 0
}

// spent is what dispatches reported using.
type spent struct {
	tokens int64
	cost   float64     // as reported, for a result made of them
	nanos  nanodollars // the same, for the budgets (see nanodollars)
}

// nestedUse is what the dispatches nested in a planned one have used so far, for the budgets
// while it runs (its own result reports the total when it finishes).
type nestedUse struct {
	spent
	// Whether any nested result reported tokens, or a cost, zero or not: the planned
	// dispatch's result made of them reports a total then, as a composite's own result does
	// (a cost of $0 reported is not a cost unknown).
	tokensSeen, costSeen bool
	// What each nested dispatch's own nested dispatches reported, by its id (a composite's
	// result sums its members', an agent's its tools'), so a result counts only what its
	// children did not already; and what each one's latest result reported. A dispatch may
	// finish more than once (paused, then made again with the answer): each attempt's result
	// counts its own use, and its parent's children are its latest result's.
	kids, latest map[string]spent
}

func (a spent) plus(b spent) spent {
	return spent{a.tokens + b.tokens, a.cost + b.cost, a.nanos + b.nanos}
}

func (a spent) minus(b spent) spent {
	return spent{a.tokens - b.tokens, a.cost - b.cost, a.nanos - b.nanos}
}

// chargeNestedLocked counts a finished nested dispatch's usage toward the run's budgets, each
// token once however deep it was spent.
func (c *call) chargeNestedLocked(res *troupe.Result, parent string) {
	var all spent
	if res.TokensUsed != nil {
		all.tokens = *res.TokensUsed
	}
	if res.CostDollars != nil {
		all.cost, all.nanos = *res.CostDollars, dollarsToNanos(*res.CostDollars)
	}
	if res.TokensUsed == nil && res.CostDollars == nil {
		return
	}
	u := c.use
	if u == nil {
		u = &nestedUse{kids: map[string]spent{}, latest: map[string]spent{}}
		c.use = u
	}
	u.tokensSeen = u.tokensSeen || res.TokensUsed != nil
	u.costSeen = u.costSeen || res.CostDollars != nil
	id := res.DispatchID
	kids := u.kids[id]
	own := spent{max(all.tokens-kids.tokens, 0), max(all.cost-kids.cost, 0), max(all.nanos-kids.nanos, 0)}
	if parent != c.d.DispatchID {
		u.kids[parent] = u.kids[parent].plus(all.minus(u.latest[id]))
	}
	u.latest[id] = all
	u.spent = u.spent.plus(own)
	x := c.r.more()
	x.liveTokens += own.tokens
	x.liveCost += own.nanos
}

// Admit says whether a dispatch nested in this one may start (troupe.Admitter): the run's
// budgets, with what nested dispatches in flight have used counted, not spent.
func (c *call) Admit() error { return c.admit(false) }

// AdmitDispatch is Admit for the nested dispatch d, which package flow asks when the runtime
// has it: a resumed run admits one its log shows started, whatever its budgets say now (the
// run that made the log found it within budget), as it makes a planned dispatch its log shows
// started (budgetForLocked). Only a run that is ending refuses it.
//
// With the run ending, it refuses d, but for one the log shows running members of its own (a
// composite), which it admits reporting resuming true (as it reports admitting one at any
// time: its own composite may have cancelled it, a first_success group taking its winner from
// the log): d runs cancelled, as the composite made again by a run already ending does
// (prepare), to take its finished members' results from the log and end as they let it, as it
// did when the run that made the log cancelled it.
//
// With the run ending, a member the log shows waiting for a human's answer it does not hold
// stays waiting: it is refused with troupe.ErrPaused, and c is paused on its questions as its
// asking them again would have paused it, so that its composite pauses as it did in the run
// that made the log and ends, as that one did, cancelled for want of the answer. Refused as
// any other member, it would fail, and its composite end as its other members let it (a
// collect_all group completing without it), which it did not do.
func (c *call) AdmitDispatch(d *troupe.Dispatch) (resuming bool, err error) {
	x := c.r.replay
	if err := c.admit(x.nestedLogged(d.DispatchID)); err != nil {
		if errors.Is(err, errEnding) && x.ranMembers(d.DispatchID) {
			return true, nil
		}
		if qs := x.waitingNested(d.DispatchID); errors.Is(err, errEnding) && len(qs) > 0 {
			return false, c.waitAgain(qs)
		}
		if errors.Is(err, errEnding) && x.nestedLogged(d.DispatchID) {
			// The log shows it started: the run that made the log cancelled it as the run
			// ended, as this run does, not refused it.
			return false, errNotAgain
		}
		if errors.Is(err, errEnding) && c.refusedBeforeEnd() {
			// The log records the budget spent before the result that ended this run: the
			// run that made it refused what it did not start until then for the budget, as
			// this run refuses a member the log does not show started. A composite made
			// again asks for it only if it asked for it before it stopped the first time
			// (flow: refusedBeforeStop), which was then before the run ended.
			return false, fmt.Errorf("%w: %s", troupe.ErrBudgetExhausted, c.budgetFromLog())
		}
		if errors.Is(err, errEnding) {
			// The run failed or was cancelled, and is yet to cancel the member's composite:
			// the member is cancelled with it, as it would be a moment later.
			return false, errCancelEnding
		}
		return false, err
	}
	if qs, res := x.endedWaiting(d); res != nil {
		// The log shows d ended waiting for answers the resumed run can neither give nor
		// ask for. Made again, it would only wait again, but a composite would run its
		// other members anew meanwhile (its timer started again), which the run that made
		// the log did not, and a group whose own context ended would pass over a member
		// that is neither taken from the log nor running. It ends again as it ended:
		// refused as waiting still, it is reported with its result from the log (flow asks
		// PausedAgain), and what it used counts, as it did then.
		c.chargeLogged(res)
		return false, c.waitAgain(qs)
	}
	return x.unfinishedComposite(d.DispatchID), nil
}

// PausedResult gives a first_success group whose winner a resumed run took from its log the
// result the log holds of a branch that had stopped to wait for a human (package flow asks):
// the win made the question moot, and the group reports that branch as the run that made the
// log did, what it used counted as it was then.
//
// The questions the log shows d waiting for, which the resumed run can neither answer nor ask
// (waitingNested), hold c as they held it then (holdOn).
func (c *call) PausedResult(d *troupe.Dispatch) (*troupe.Result, bool) {
	res, ok := c.r.replay.paused(d)
	if ok {
		c.holdOn(c.r.replay.waitingNested(d.DispatchID))
		c.chargeLogged(res)
	}
	return res, ok
}

// chargeLogged counts res, a nested result the resumed run's log holds and a composite takes,
// toward the budgets as its live result counted in the run that made the log: once (not if
// precharge counted it already), and not once c is past its deadline or the run is finishing.
func (c *call) chargeLogged(res *troupe.Result) {
	r := c.r
	r.mu.Lock()
	defer r.mu.Unlock()
	if !c.expired && !r.finishing && !r.replay.precharged[res.DispatchID] {
		c.chargeNestedLocked(res, r.replay.nestedParent[res.DispatchID])
	}
}

// holdOn pauses c on qs, questions the log shows a nested dispatch asked and waits for, whose
// paused result a composite takes from the log instead of running it to ask again: they hold
// c as they held it in the run that made the log, until it finishes. Completed, it is done
// with them (completeLocked), as it was then (a first_success group's win made them moot);
// otherwise (a guardrail blocked the group's result, say) it waits for their answers, and the
// run pauses, as it did then. Taken as moot, they let it fail at once, ahead of what the run
// that made the log did before it was answered. The chain of dispatches each was asked
// through is noted, as asking it again would note it, for dropMootLocked.
func (c *call) holdOn(qs []troupe.Question) {
	if len(qs) == 0 {
		return
	}
	r := c.r
	r.mu.Lock()
	defer r.mu.Unlock()
	if c.expired || r.finishing {
		return
	}
	c.paused, r.pausing = true, true
	x := r.more()
	if x.askers == nil {
		x.askers = map[string]string{}
	}
	for _, q := range qs {
		for id, n := q.DispatchID, 0; n <= len(r.replay.nestedParent); n++ {
			p, ok := r.replay.nestedParent[id]
			if !ok {
				break
			}
			if _, known := x.askers[id]; !known {
				x.askers[id] = p
			}
			id = p
		}
		if !slices.ContainsFunc(x.questions, func(o troupe.Question) bool { return o.ID == q.ID }) {
			x.questions = append(x.questions, q)
			x.askedBy = append(x.askedBy, c)
		}
	}
}

// PausedAgain gives a first_success group the result the log holds of the nested dispatch d,
// which had stopped to wait for a human, when the resumed run has neither the answer nor anyone
// to ask (waitingNested): the group's win cancelled d, made again, before it asked again and
// paused at once, as it paused before the win the first time (package flow asks). What d used
// is counted already, by the result its cancelled run recorded, and is not counted again.
func (c *call) PausedAgain(d *troupe.Dispatch) (*troupe.Result, bool) {
	x := c.r.replay
	qs := x.waitingNested(d.DispatchID)
	if len(qs) == 0 {
		return nil, false
	}
	res, ok := x.paused(d)
	if ok {
		c.holdOn(qs) // as asking again would have
	}
	return res, ok
}

// RecordedAt says where the resumed run's log holds the result of the nested dispatch d, or -1
// (package flow asks: of two branches of a first_success group it takes from the log completed
// at one instant, the one recorded first won). The index is read-only by then.
func (c *call) RecordedAt(d *troupe.Dispatch) int {
	if x := c.r.replay; x != nil {
		if at, ok := x.nestedResultAt[d.DispatchID]; ok {
			return at
		}
	}
	return -1
}

// RanMembers says whether the resumed run's log shows the nested dispatch d, a composite,
// unfinished when it stopped, running members of its own or with one waiting for a human
// (package flow asks, before it asks AdmitDispatch): a first_success group taking its winner
// from the log makes it again, cancelled, so that it ends as the win ended it in the run that
// made the log, with what its finished members used.
func (c *call) RanMembers(d *troupe.Dispatch) bool {
	return c.r.replay.unfinishedComposite(d.DispatchID)
}

// waitAgain pauses c on qs, questions the log shows asked through it and left unanswered, as
// Ask does when there is no one to ask, and returns the error Ask returns then.
func (c *call) waitAgain(qs []troupe.Question) error {
	r := c.r
	r.mu.Lock()
	defer r.mu.Unlock()
	if c.expired || r.finishing {
		return fmt.Errorf("%w: the run is ending", troupe.ErrBudgetExhausted)
	}
	c.paused, r.pausing = true, true
	x := r.more()
	for _, q := range qs {
		if !slices.ContainsFunc(x.questions, func(o troupe.Question) bool { return o.ID == q.ID }) {
			x.questions = append(x.questions, q)
			x.askedBy = append(x.askedBy, c)
		}
	}
	return fmt.Errorf("%w: %s", troupe.ErrPaused, qs[0].Prompt)
}

// refusedBeforeEnd says whether the resumed run's log records the budget spent before the
// result that ended the run (replayIndex.endAt).
func (c *call) refusedBeforeEnd() bool {
	r := c.r
	r.mu.Lock()
	defer r.mu.Unlock()
	x := r.replay
	return x != nil && x.budgetWhy != "" && x.endAt > x.budgetAt+1
}

// budgetFromLog is budgetFromLogLocked under the run's mu.
func (c *call) budgetFromLog() string {
	r := c.r
	r.mu.Lock()
	defer r.mu.Unlock()
	why := r.budgetFromLogLocked()
	r.flushLocked()
	return why
}

var errEnding = fmt.Errorf("%w: the run is ending", troupe.ErrBudgetExhausted)

// errNotAgain refuses, in a resumed run that is ending, a member its log shows started and not
// finished: the member is cancelled, as the run that made the log cancelled it then.
var errNotAgain error = cancelled("the run ended before running it again")

// errCancelEnding refuses a member as the run fails or is cancelled: the member is cancelled.
var errCancelEnding error = cancelled("not started: the run is ending")

// cancelled is an error that is context.Canceled (errors.Is), with a message of its own.
type cancelled string

func (e cancelled) Error() string      { return string(e) }
func (cancelled) Is(target error) bool { return target == context.Canceled }

func (c *call) admit(logged bool) error {
	r := c.r
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case c.expired:
		return fmt.Errorf("%w: %s is past its deadline", troupe.ErrBudgetExhausted, c.d.TargetAgent)
	case r.finishing:
		return fmt.Errorf("%w: the run is ending", troupe.ErrBudgetExhausted)
	case r.failure != nil || r.ctxErr() != nil:
		return errEnding
	case logged:
		return nil
	case r.replay != nil && r.replay.budgetWhy != "":
		// What the log does not show started, the run that made it never started: the
		// budget was spent by then, by usage this run may not have counted yet (another
		// composite's members, whose results it has not taken).
		return fmt.Errorf("%w: %s", troupe.ErrBudgetExhausted, r.budgetFromLogLocked())
	}
	why := r.budgetLocked()
	r.flushLocked() // the budget_exhausted warning, the first time
	if why != "" {
		return fmt.Errorf("%w: %s", troupe.ErrBudgetExhausted, why)
	}
	return nil
}

// Recorded gives a composite the result a resumed run's log holds for one of its members
// (troupe.Recorder): nil, false outside a resumed run.
//
// What the member used counts against the run's budgets as its live result's use did in the
// run that made the log: a composite taking it runs on within the same budget, and a member
// the budget refused then is refused again.
func (c *call) Recorded(d *troupe.Dispatch) (*troupe.Result, bool) {
	res, ok := c.r.replay.nested(d)
	if ok {
		c.chargeLogged(res)
	}
	return res, ok
}

// ExecutionContext is the run's execution context: a planned dispatch's.
func (c *call) ExecutionContext() troupe.Context { return c.r.rec.req.Context }

// LocalSlot lends the local executor the call's job record (local.Slotted).
func (c *call) LocalSlot() *local.Slot { return &c.slot }

// NextChild numbers the nested calls made on behalf of the dispatch.
func (c *call) NextChild() uint64 { return c.children.Add(1) - 1 }

// dropQuestionsOfLocked forgets the open questions c asked (it, or a dispatch nested in it).
func (r *Run) dropQuestionsOfLocked(c *call) {
	x := r.rare
	if x == nil {
		return
	}
	kept := 0
	for i, q := range x.questions {
		if x.askedBy[i] != c {
			x.questions[kept], x.askedBy[kept] = q, x.askedBy[i]
			kept++
		}
	}
	clear(x.askedBy[kept:])
	x.questions, x.askedBy = x.questions[:kept], x.askedBy[:kept]
}
