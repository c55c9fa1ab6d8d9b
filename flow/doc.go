// Package flow builds composite agents: Sequential runs agents in order and hands each one's
// Handoff to the next (seed 002's executeSequential), Parallel runs them at once and combines
// their results (CollectAll, FirstSuccess, MajorityVote; seed 002's executeParallel), Loop
// repeats one until a condition holds or a bound is reached (seed 003's MasteryLoop), and AsTool
// wraps an agent as a tool another agent can call (seed 002's createAgentTool).
//
// A composite is a plain troupe.Agent, so composites nest freely — a loop of a sequence
// containing a parallel group — and register with an engine like any agent:
//
//	ideas := flow.Parallel(flow.ParallelConfig{}, flow.Named("cautious", a), flow.Named("bold", b))
//	cycle := flow.Sequential(flow.SequentialConfig{}, flow.Named("ideas", ideas),
//		flow.Named("judge", judge, troupe.Writes("best")))
//	loop := flow.Loop(flow.LoopConfig{Until: func(it flow.Iteration) bool {
//		best, _ := it.State("best")
//		return best.(float64) >= 0.9
//	}}, flow.Named("cycle", cycle, troupe.Writes("best")))
//	reg := troupe.NewRegistry().MustAdd("mastery", loop, troupe.Writes("best"))
//
// Each composite has Run, its troupe.Agent face, which folds what it did into one result, and
// Execute, for Go callers, which returns every member's result in an outcome
// (SequenceOutcome, ParallelOutcome, LoopOutcome).
// A composite runs
// its members itself, not through the engine's plan: each member gets a dispatch of its own,
// bound to a nested runtime built from the composite's dispatch. When that dispatch belongs to
// a run (its runtime is a troupe.Emitter, as the engine's is), every member's dispatch_started,
// agent_progress, state_delta and dispatch_completed/dispatch_failed events go to the run's log
// with Parent set to the enclosing dispatch and a child execution context whose parent is the
// caller's (seed 001's nested orchestrations). Nested dispatch ids derive from the parent's id
// and the member's position, so a replayed run makes the same ids. Called directly in Go, with
// troupe.NewDispatch(), composites work the same and record nothing.
//
// Members are declared with Named, which takes the registration options of troupe.Registry:
// a member's Reads must be in session state (else it fails with STATE_MISSING), its Writes are
// taken from its agent_result once it completes, and its InputSchema and OutputSchema are
// checked (INVALID_INPUT, INVALID_OUTPUT), exactly as the engine treats a planned dispatch.
// Session state inside a composite is the enclosing dispatch's state plus the composite's own
// writes; what of it reaches the run's state is what the composite declares as its own Writes.
//
// Failures follow seed 003's error contract: the error of a composite whose members failed,
// conflicted or tied unwraps to a *troupe.AgentError (code, message, recoverable, fallback
// action). A member's failure comes as
// a *StepError that also unwraps to the member's own error, so errors.As finds a typed error —
// a *troupe.CircularDependencyError or *troupe.MaxDepthExceededError from an agent tool, a
// *ConflictError or *TieError from a parallel group — through any nesting. Configuration
// problems (no agents, duplicate names, a bad schema) are reported by the first run, as errors
// starting "flow: ".
//
// A composite's confidence follows seed 000's conservative rule, by which the run combines its
// agents' (aggregate.CombineConfidence): a sequence reports the minimum over its completed
// steps, a parallel group the minimum over the branches its answer rests on (every completed
// one under CollectAll, the winner under FirstSuccess, the winning answer's voters under
// MajorityVote), each over the members that report a confidence, and nil when none does. A
// loop reports its last completed cycle's, since that cycle's output replaced the earlier
// ones'. A member that did not complete never counts. So a composite never lifts the run's
// overall_confidence above what its members vouch for.
//
// Usage is counted once. A composite's result carries the tokens_used and cost_dollars of all
// its members' results. An agent tool returns only its agent's answer, so what that agent
// spends reaches its caller through the context instead: the caller opens a Usage with
// WithUsage, calls its tools with the context that returns, and adds the Usage to its own
// result (Usage.AddTo; package llmagent does this for every tool call, and counts it against
// the dispatch's budget before its next completion). An agent called through a tool runs with
// a Usage its tool opens for it: what the tools it calls spend, when it opens none of its own,
// is added to its result, as one that opens its own adds it — so its result, recorded as a
// nested dispatch's, counts what its own nested dispatches spent, as a composite's counts its
// members', and its tool adds it to the caller's. Either way each token reaches the top-level
// result exactly once, however deeply tools nest, and the run's budgets count each once while
// the dispatch runs. Tools called with no Usage in their context count nowhere.
//
// A composite is a troupe.Setupper and troupe.Teardowner: Setup sets up the members that need
// it, in order, and Teardown tears them down, the last first, so an engine that sets the
// composite up for a run sets up every member inside it, through any nesting.
//
// Cancelling the context a composite runs with — the run's, when the engine runs it — cancels
// every member, and a composite returns once its members have returned, but for one that
// overstays its WithTimeout. A member's timeout holds even against an agent that ignores its
// context: a member with one runs on a goroutine of its own, with the timeout as its context's
// deadline (a member without one runs on the composite's goroutine, at no extra cost). When
// that context ends — the deadline passes, or the composite is cancelled — and the member has
// not returned 250 ms later, the composite stops waiting for it. A member that returns after
// its own timeout passed, within those 250 ms, timed out all the same, whatever it returned (a
// result is kept for what it reports using, under the TIMEOUT error), as the engine records a
// planned agent past its deadline. An abandoned member's result is recorded as
// timed out (status timeout, code TIMEOUT, a message saying it did not finish within its
// timeout and was abandoned, details {"abandoned": true}; cancelled instead when the
// composite was cancelled first), with its dispatch_failed event, and the composite goes on as
// it does after any timed-out member. The abandoned member is left running: what it returns
// later is dropped, and its runtime reaches nothing any more — it reads no session state,
// records no event, asks nobody and starts no nested member. Its goroutine still has an
// owner: the composite's Teardown, which the engine calls when the run ends, waits for the
// composite's abandoned members (until Teardown's context ends) before it tears the members
// down; an agent tool's Teardown waits for its abandoned calls. A member without a timeout
// that ignores its context still holds its composite; the deadline that holds against it is
// the enclosing planned dispatch's, which the engine keeps whatever the agent does.
//
// A member's question (Dispatch.Ask) goes to the enclosing runtime, and so to the run's
// human-input handler. A member's requires_human reaches the human through its composite's
// result: the engine reviews the results of the dispatches it planned, and a composite's
// result asks for review when a completed member result it answers with does (a
// first_success group's winner, a collect_all group's completed branches, a majority vote's
// voters for the winning answer, a sequence's completed steps, a loop's completed cycles). An
// agent called as a tool (AsTool) whose completed result asks for review passes the request to
// its caller's result through the Usage of the call's context (Usage.AddTo).
package flow
