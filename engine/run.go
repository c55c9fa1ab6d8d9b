package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/aggregate"
	"github.com/troupehq/troupe/executor/local"
	"github.com/troupehq/troupe/internal/jsonvalue"
	"github.com/troupehq/troupe/policy"
	"github.com/troupehq/troupe/store/memory"
)

// Run is one run of a request: a handle to watch it, wait for it, read its state or cancel it.
// Its methods are safe for concurrent use.
type Run struct {
	e      *Engine
	rec    *runRecord // the request (RunID and Seed are the run's; its Context is on every event) and trace id
	pol    *troupe.ErrorPolicy
	parent context.Context        // the caller's: the run's context (runCtx) has its values and ends with it
	end    atomic.Pointer[ctxEnd] // how the run's context ended; nil while it has not
	std    *stdCtx                // made on demand; guarded by onDoneMu
	scope  troupe.Scope
	guards []troupe.Guardrail
	// log is the run's log when the store is a memory store, opened by newRun before the first
	// event, so that Events reads all of it even once the store has retired the run; nil for
	// any other store. It is not changed after newRun.
	log    *memory.Log
	replay *replayIndex
	rare   *runRare // made by more, when a run first needs one of its fields; guarded by mu

	timeBudget time.Duration
	costBudget nanodollars
	tokBudget  int64

	onDoneMu sync.Mutex
	onDone   []func() // what runCtx.OnDone registered; run once the run's context is done

	doneq atomic.Pointer[call] // finished calls not yet recorded, newest first (see draining)

	mu         sync.Mutex
	now        time.Time // the clock read once per state transition; zero outside one
	seq        int64
	pending    *[]troupe.Event // the current transition's events (a pooled batch), appended by flushLocked
	toStart    []*call         // dispatches the current transition created, started by flushLocked
	startBuf   [1]*call        // toStart's first array: a chain starts one dispatch at a time
	plan       *troupe.Plan
	stages     [][]*task
	stage      int // index of the current stage
	next       int // next task of the current stage to start
	inflight   int
	dispatches int32
	logRest    int32 // events of the plan's common shape to reserve in the store once the first are recorded
	state      map[string]any
	upstream   []troupe.UpstreamResult // completed results, in completion order (dispatches get them in plan order: stageUpstreamLocked)
	status     troupe.RunStatus
	failure    *troupe.ErrorInfo
	firstSeq   int64
	cost       nanodollars // of results and decisions so far: exact, so any order of them spends the same budget
	tokens     int64
	setup      []string
	startedAt  time.Time // also the budget clock
	updatedAt  time.Time
	agg        *troupe.Aggregation
	finishing  bool // the closing sequence has been claimed
	finished   bool // terminal or run_paused appended (or the log broke)
	routed     bool // the current stage's tasks have their routing decisions
	pausing    bool
	budgetHit  bool
	closed     bool // the closing sequence is over: done is closed (guarded by onDoneMu)
	ended      bool // onDone has run (guarded by onDoneMu)
	failStage  troupe.Stage
	err        error
	watchers   []chan struct{}
	watchBuf   [1]chan struct{} // watchers' first array: most runs have one reader
	done       chan struct{}    // made by doneChan; guarded by onDoneMu
	waitOnce   sync.Once
	// draining says a goroutine is recording finished calls (doneq). It is here, in waitOnce's
	// padding, so that the Run with its log still fits a 576-byte allocation.
	draining atomic.Bool
}

// runRare is the part of a run's state that most runs never use: open questions, fallbacks
// taken, errors and warnings, failure reason, what nested dispatches in flight have used, and
// what routing cost. A Run is kept small because a run blocked in its agents holds one.
type runRare struct {
	questions   []troupe.Question
	askedBy     []*call // the dispatch each open question came through, in step with questions
	warnings    []string
	errs        []troupe.ErrorInfo
	failReason  string
	failCause   error  // what Wait's error unwraps to: the errors behind the failure
	budgetWhy   string // which budget was spent, once one was
	liveTokens  int64  // used by dispatches nested in planned ones still running (budgets only)
	liveCost    nanodollars
	routeCost   float64 // of routing decisions (a model asked): part of cost, and of the totals
	routeTokens int64
	fallbacks   map[string]string
	preNotes    map[*call]*troupe.Result // what guardrails noted before a dispatch ran, until it completes (timedOut carries them)
	// What a result under a human's review reported (its start, tokens and cost), from when
	// the review begins until the dispatch completes: a review cut off by the run's end
	// reports it (timedOut), though the handler may still write the result.
	underReview map[*call]*troupe.Result
	// What the result guardrails said of a dispatch's latest partial result (guardPartial),
	// until it completes: a timeout result carrying that partial carries it.
	partialNotes map[*call]*troupe.Result
	// The dispatches nested in each planned one (a composite's members, an agent's tools)
	// that the log shows started and not finished, oldest first: a planned dispatch cut off
	// at its deadline, or at the cancel grace, ends them too (closeNestedLocked).
	openNested map[*call][]openNested
	lateSetup  map[string]*setupOnce // agents set up when first dispatched, not at INITIALIZE
	deps       map[*task][]depRef    // depends_on of tasks whose plan does not name agents (resolveDeps)
	tornDown   bool                  // teardown has run: an agent set up from now on is torn down at once
	// askers is the parent of each nested dispatch started, by id: the chain from a nested
	// dispatch that asks a question up to the planned one (see dropMootLocked).
	askers map[string]string
	// stageState is the session state as the current stage began, kept once an agent of a
	// stage of several wrote to it (stageSnap): the stage's other dispatches read it, not the
	// write, so what they see does not depend on who finished first.
	stageState map[string]any
	stageSnap  bool
	// stageWriters holds, for each session state key agents of the current stage of several
	// wrote, their writes in the order they finished: of two that write different values, the
	// later in the plan stands, whichever finished last, and the run warns of it as the stage
	// ends (stageWritesWarnLocked).
	stageWriters map[string][]stageWrite
	// The upstream results a stage's dispatches get are those of the stages before it, in plan
	// order, whatever order a group's agents finished in (r.upstream's). upSet says visible is
	// them for the current stage; otherwise they are r.upstream as it is when a dispatch is
	// made, as in a chain. ordered is the plan-ordered copy of r.upstream[:orderedN], made once
	// a group finished out of plan order, and seg the finished results of the current stage if
	// it is a group: where each is in r.upstream, and its task's place in the plan.
	visible  []troupe.UpstreamResult
	upSet    bool
	ordered  []troupe.UpstreamResult
	orderedN int
	seg      []upPos
}

// upPos is a group's result in r.upstream: its position there and its task's place in the plan.
type upPos struct{ index, pos int }

// setupOnce is one agent's setup made when it is first dispatched; others dispatching it wait.
type setupOnce struct {
	done chan struct{}
	err  error
}

// more returns the run's rarely used state, made on first use. The caller holds r.mu.
func (r *Run) more() *runRare {
	if r.rare == nil {
		r.rare = new(runRare)
	}
	return r.rare
}

// live is what dispatches nested in running ones have used so far. The caller holds r.mu.
func (r *Run) live() (tokens int64, cost nanodollars) {
	if x := r.rare; x != nil {
		return x.liveTokens, x.liveCost
	}
	return 0, 0
}

// warnLocked records a warning of the run.
func (r *Run) warnLocked(w ...string) {
	if len(w) > 0 {
		x := r.more()
		x.warnings = append(x.warnings, w...)
	}
}

// rareOr returns the run's rarely used state, or an empty one (not to be written) if it has none.
// stageStateLocked is the session state the current stage's dispatches and routing read: as
// the stage began. The caller holds r.mu.
func (r *Run) stageStateLocked() map[string]any {
	if x := r.rare; x != nil && x.stageSnap {
		return x.stageState
	}
	return r.state
}

func (r *Run) rareOr() *runRare {
	if r.rare != nil {
		return r.rare
	}
	return &noRare
}

var noRare runRare

// reserver is a store that can make room for a run's events ahead of their appends.
type reserver interface{ Reserve(runID string, n int) }

// runRecord is the part of a run its log refers to: the request (run_initialized's payload,
// and every event's Context) and the trace id every result points at.
type runRecord struct {
	req     troupe.Request
	traceID string
}

type task struct {
	t     *troupe.Task
	step  int // 1-based stage
	index int // place in the plan, from 0
	// What the task's events point at, in arrays of the run's that the log keeps and that
	// point at nothing of the run's bookkeeping: its routing decision, and its first dispatch
	// (retries and fallbacks have records of their own).
	decision *troupe.RoutingDecision
	first    *dispatchRec
	nextID   string // id of the task's next dispatch, derived once
	last     *call  // the task's latest dispatch; earlier ones via call.prev
	final    *troupe.Result
	fbUsed   int32
	attempt  int32 // attempt of the current agent
	serial   int32 // dispatches made for this task
	partial  bool
}

// name names the agent of task t, which was never dispatched: the plan's, or else its routing
// decision's target, or, for a task a router was to place and never did, the task itself
// ("task t2").
func (t *task) name() string {
	switch {
	case t.t.Agent != "":
		return t.t.Agent
	case t.decision != nil && t.decision.Target != "":
		return t.decision.Target
	}
	return "task " + t.t.ID
}

// fallbacksOf lists the agents that may stand in for d's target, in order: the decision's own
// fallback, then the policy's for that agent; d's target and repeats left out. It is worked out
// again when a dispatch fails rather than kept, which keeps every task smaller.
func (r *Run) fallbacksOf(d *troupe.RoutingDecision) []string {
	var fbs []string
	for _, fb := range append([]string{d.Fallback}, r.pol.FallbackAgents[d.Target]...) {
		if fb != "" && fb != d.Target && !slices.Contains(fbs, fb) {
			fbs = append(fbs, fb)
		}
	}
	return fbs
}

// newRun prepares a run: ids, context, policy, budgets. replay is nil for a new run.
func (e *Engine) newRun(ctx context.Context, req troupe.Request, replay *replayIndex) (*Run, error) {
	given, seeded := req.RunID != "", req.Seed != 0 || e.seed != 0
	seed := req.Seed
	if seed == 0 && e.seed != 0 {
		// A fixed engine seed gives a fixed sequence of run seeds, not one seed for all runs
		// (which would give every run the same id).
		seed = mix(e.seed, e.runs.Add(1))
	}
	if seed == 0 {
		seed = e.exec.Seed()
	}
	req.Seed = seed
	runID, sessionID, queryID, traceID := runIDs(seed)
	if req.RunID == "" {
		req.RunID = runID
	}
	if req.SessionID == "" {
		req.SessionID = sessionID
	}
	if req.QueryID == "" {
		req.QueryID = queryID
	}
	if req.Context.TraceID() == "" {
		tc := troupe.NewContext(traceID, req.Context.Profile())
		for k, v := range req.Context.MetadataMap() {
			tc = tc.WithMetadata(k, v)
		}
		req.Context = tc
	}
	if err := req.Validate(e.reg); err != nil {
		return nil, &troupe.OrchestrationError{Stage: troupe.StageInitialize, Message: "invalid request", Context: req.Context, Cause: err}
	}
	if req.Priority == "" {
		req.Priority = troupe.PriorityMedium
	}
	pol := &e.policy
	if req.Policy != nil {
		pol = req.Policy
	}
	// What the run's events and results point at lives apart from the Run, so a finished
	// run's log does not keep the Run (and through it its tasks, calls and executor scope).
	rec := &runRecord{req: req, traceID: req.Context.TraceID()}
	r := &Run{e: e, rec: rec, pol: pol,
		replay: replay, status: troupe.RunPlanning,
		timeBudget: e.timeBudget, costBudget: e.costBudget, tokBudget: e.tokBudget,
	}
	r.toStart, r.watchers = r.startBuf[:0], r.watchBuf[:0]
	if b := req.Budget.TimeSeconds; b > 0 && secs(b) < r.timeBudget {
		r.timeBudget = secs(b)
	}
	if c := req.Criteria; c != nil && c.TimeBudgetSeconds != nil && secs(*c.TimeBudgetSeconds) < r.timeBudget {
		r.timeBudget = secs(*c.TimeBudgetSeconds)
	}
	if b := budgetNanos(req.Budget.MaxCostDollars); b > 0 && b < r.costBudget {
		r.costBudget = b
	}
	if b := req.Budget.MaxTokens; b > 0 && b < r.tokBudget {
		r.tokBudget = b
	}
	r.guards = append(slices.Clip(req.Guardrails), e.guards...)
	r.state = maps.Clone(req.State) // nil until written: reading a nil map is fine
	r.parent = ctx
	if replay == nil && (given || seeded) {
		// The id may name a run recorded already: the caller's, or one an engine with the same
		// seed made against the same store. Started, the run's log could not be written, and
		// its events would be the old run's. (A fresh random id needs no look.)
		if evs, err := e.store.Events(ctx, req.RunID, 0); err == nil && len(evs) > 0 {
			return nil, &troupe.OrchestrationError{Stage: troupe.StageInitialize, Context: req.Context, Cause: troupe.ErrRunExists,
				Message: fmt.Sprintf("run %s is in the store already (%d events, the last %s): resume it, or give the request another run id", req.RunID, len(evs), evs[len(evs)-1].Kind)}
		}
	}
	e.mu.Lock()
	if e.shut.Load() {
		e.mu.Unlock()
		return nil, fmt.Errorf("engine: run %q: %w", r.rec.req.RunID, troupe.ErrShutdown)
	}
	if _, dup := e.live[r.rec.req.RunID]; dup {
		e.mu.Unlock()
		return nil, fmt.Errorf("engine: run %q is already live", r.rec.req.RunID)
	}
	e.live[r.rec.req.RunID] = r
	e.mu.Unlock()
	if mem, ok := e.store.(*memory.Store); ok {
		r.log = mem.Open(r.rec.req.RunID)
	}
	watch := false
	if ctx.Done() != nil {
		// The caller can cancel the run: the executor tells of it, so the engine starts nothing
		// of its own (time and concurrency go through the executor). A caller that cannot
		// (context.Background) costs no registration at all.
		if ctx.Err() != nil {
			r.end.Store(&ctxEnd{err: ctx.Err(), cause: context.Cause(ctx)})
		}
		if w, ok := e.exec.(troupe.Watcher); ok {
			stop := w.AfterFunc(ctx, func() { r.endCtx(ctx.Err(), context.Cause(ctx)) })
			r.onDoneMu.Lock() // f may be running already: endCtx reads r.std
			r.std = &stdCtx{stopParent: stop}
			r.onDoneMu.Unlock()
		} else {
			watch = true
		}
	}
	r.scope = e.exec.Scope((*runCtx)(r))
	if watch {
		r.scope.Go((*watchJob)(r), 0, time.Time{})
	}
	return r, nil
}

// watchJob is the job of a run whose executor is not a troupe.Watcher: it ends the run's
// context when the caller's ends, and ends itself when the run's context does (at the latest
// when the run finishes), so the run's scope waits for it.
type watchJob Run

func (j *watchJob) Run(ctx context.Context) {
	r := (*Run)(j)
	select {
	case <-r.parent.Done():
		r.endCtx(r.parent.Err(), context.Cause(r.parent))
	case <-ctx.Done():
	}
}

func (*watchJob) Done(bool) {}

// runCtx is the run's context: what its executor scope, router and agents' setup get, and the
// parent of every dispatch's context. It has the caller's values and deadline, and is done when
// the run is cancelled, fails fast or ends, or when the caller's context is done. It is the Run
// itself under another method set, so it costs nothing: most runs never need the Done channel
// or the context package's cancelCtx that context.WithCancelCause would allocate for every
// run. The first to ask for either (Done, context.Cause, a context derived from it) gets a
// context.WithCancelCause made then and cancelled with the run's, to which both are answered.
//
// It implements local.DoneNotifier: the local executor registers with OnDone, not with
// context.AfterFunc, which would call Done.
type runCtx Run

// ctxEnd is how the run's context ended: Err's error and context.Cause's.
type ctxEnd struct{ err, cause error }

// stdCtx is what the run's context makes on demand.
type stdCtx struct {
	ctx        context.Context // context.WithCancelCause(parent), cancelled with the run's
	cancel     context.CancelCauseFunc
	stopParent func() bool // ends the watch on a cancellable parent
}

func (c *runCtx) Deadline() (time.Time, bool) { return c.parent.Deadline() }
func (c *runCtx) Done() <-chan struct{}       { return (*Run)(c).stdContext().Done() }
func (c *runCtx) Err() error                  { return (*Run)(c).ctxErr() }

// Value has the caller's values. Asked for the context package's own key (context.Cause, and
// contexts derived from this one, ask), it answers from a context.WithCancelCause.
func (c *runCtx) Value(key any) any {
	if key == cancelCtxKey && key != nil {
		return (*Run)(c).stdContext().Value(key)
	}
	return c.parent.Value(key)
}

func (c *runCtx) String() string { return "troupe.runCtx" }

// cancelCtxKey is the key context.Cause looks a context's cancelCtx up with, learnt by asking.
// Should the context package stop looking it up so, it is nil, and context.Cause of the run's
// context gives its Err, as it does for any context not of the context package.
var cancelCtxKey = func() any {
	var p keyProbe
	context.Cause(&p)
	return p.key
}()

type keyProbe struct {
	context.Context
	key any
}

func (p *keyProbe) Value(key any) any { p.key = key; return nil }
func (p *keyProbe) Err() error        { return context.Canceled } // Cause asks Value only of a done context

// context returns the run's context.
func (r *Run) context() context.Context { return (*runCtx)(r) }

// ctxErr is the run's context's Err. The caller's context is asked too: the run learns of its
// end later, on a goroutine of the executor's, and whoever saw it first (a router waiting on a
// derived context) must not find the run's context still live.
func (r *Run) ctxErr() error {
	if e := r.end.Load(); e != nil {
		return e.err
	}
	return r.parent.Err()
}

// ctxCauseText says why the run's context ended.
func (r *Run) ctxCauseText() string {
	var cause error
	if e := r.end.Load(); e != nil {
		cause = e.cause
	} else if r.parent.Err() != nil {
		cause = context.Cause(r.parent)
	}
	if cause != nil {
		return cause.Error()
	}
	return "cancelled"
}

// stdContext returns the run's context as a context.WithCancelCause of the caller's, made on
// first use and cancelled with the run's.
func (r *Run) stdContext() context.Context {
	r.onDoneMu.Lock()
	defer r.onDoneMu.Unlock()
	if r.std == nil {
		r.std = &stdCtx{}
	}
	if r.std.ctx == nil {
		r.std.ctx, r.std.cancel = context.WithCancelCause(r.parent)
		if e := r.end.Load(); e != nil {
			r.std.cancel(e.cause)
		}
	}
	return r.std.ctx
}

// endCtx ends the run's context (the first call wins) and tells whoever watches it.
func (r *Run) endCtx(err, cause error) {
	if cause == nil {
		cause = err
	}
	r.onDoneMu.Lock()
	if r.end.Load() != nil {
		r.onDoneMu.Unlock()
		r.ctxDone() // already ended (a parent cancelled before the run started): tell once
		return
	}
	r.end.Store(&ctxEnd{err: err, cause: cause})
	var std stdCtx
	if r.std != nil {
		std = *r.std
	}
	r.onDoneMu.Unlock()
	if std.cancel != nil {
		std.cancel(cause)
	}
	if std.stopParent != nil {
		std.stopParent()
	}
	r.ctxDone()
}

// bgCtx is the run's context without its cancellation, for appends, teardown and reading the
// log: it has the run's values but no deadline and is never done. Like runCtx it is the Run
// itself, so the run allocates nothing for it.
type bgCtx Run

func (r *Run) bg() context.Context { return (*bgCtx)(r) }

func (*bgCtx) Deadline() (time.Time, bool) { return time.Time{}, false }
func (*bgCtx) Done() <-chan struct{}       { return nil }
func (*bgCtx) Err() error                  { return nil }
func (b *bgCtx) Value(key any) any {
	if key == cancelCtxKey && key != nil {
		return nil // as context.WithoutCancel's: no cancellation to find
	}
	return b.parent.Value(key)
}

// OnDone registers f to run once the run's context is done; at once if it is already.
func (c *runCtx) OnDone(f func()) {
	r := (*Run)(c)
	r.onDoneMu.Lock()
	if !r.ended {
		r.onDone = append(r.onDone, f)
		r.onDoneMu.Unlock()
		return
	}
	r.onDoneMu.Unlock()
	f()
}

// stop cancels the run's context with cause (nil: context.Canceled) and tells the scope.
func (r *Run) stop(cause error) { r.endCtx(context.Canceled, cause) }

// ctxDone runs what OnDone registered, once, after the run's context is done.
func (r *Run) ctxDone() {
	r.onDoneMu.Lock()
	if r.ended {
		r.onDoneMu.Unlock()
		return
	}
	r.ended = true
	fs := r.onDone
	r.onDone = nil
	r.onDoneMu.Unlock()
	for _, f := range fs {
		f()
	}
}

func secs(s float64) time.Duration {
	// A float64 beyond int64's range converts to an arbitrary value (on amd64, the most
	// negative Duration, which would read as a budget long spent): saturate, and round a
	// positive time under a nanosecond up to one, not down to none.
	switch ns := s * float64(time.Second); {
	case ns >= math.MaxInt64:
		return math.MaxInt64
	case ns > 0 && ns < 1:
		return 1
	default:
		return time.Duration(ns)
	}
}

// ID returns the run id.
func (r *Run) ID() string { return r.rec.req.RunID }

// Context returns the run's execution context.
func (r *Run) Context() troupe.Context { return r.rec.req.Context }

// Cancel cancels the run: in-flight dispatches are cancelled, nothing new starts, and the run
// ends CANCELLED.
func (r *Run) Cancel() { r.stop(troupe.ErrCancelled) }

// Done is closed when the run has appended its last event.
func (r *Run) Done() <-chan struct{} { return r.doneChan() }

// doneChan makes the run's done channel when someone first waits on it: a run nobody waits
// for holds none. It takes onDoneMu, not mu, which a transition holds across its store
// append: waiting for a run with a deadline (Engine.Close) must not wait for that append.
func (r *Run) doneChan() <-chan struct{} {
	r.onDoneMu.Lock()
	defer r.onDoneMu.Unlock()
	if r.done == nil {
		if r.closed {
			return closedChan
		}
		r.done = make(chan struct{})
	}
	return r.done
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// begin runs INITIALIZE (agent setup) and PLAN, then starts the first stage. It runs on the
// caller of Start or Resume.
func (r *Run) begin(answers []troupe.Answer) {
	now := r.e.exec.Now()
	r.startedAt, r.updatedAt = now, now
	p, planErr := planSafely(r.e.planner, &r.rec.req, r.e.reg)
	setupErr := r.setupAgents(p)

	if res, ok := r.e.store.(reserver); ok && r.replay == nil && p != nil && len(p.Stages) > 0 {
		// The common shape: initialize, plan, three events a task (route, start, finish),
		// aggregate, terminal. Only what the first transition records is reserved now (a run
		// blocked in its first agents holds no more); the rest once that is recorded. A first
		// transition of more than one batch (a wide group) is reserved with the rest at once:
		// its second batch would otherwise find room left and reserve nothing, and its
		// completions grow the log (a copy of all it holds) after all.
		first := 2 + 2*len(p.Stages[0].Tasks)
		rest := 4 + 3*p.NumTasks() - first
		if first > batchSize {
			first, rest = first+rest, 0
		}
		res.Reserve(r.rec.req.RunID, first)
		r.logRest = int32(rest)
	}
	r.mu.Lock()
	r.now = now
	kind := troupe.KindRunInitialized
	if r.replay != nil {
		kind = troupe.KindRunResumed
	}
	r.emitLocked(troupe.Event{Stage: troupe.StageInitialize, Kind: kind, Data: &troupe.RunStart{Request: &r.rec.req, Seed: r.rec.req.Seed, Setup: r.setup}})
	for i := range answers {
		a := answers[i]
		r.emitLocked(r.replay.answerEvent(&a))
	}
	switch {
	case setupErr != nil && r.ctxErr() != nil:
		// The run was cancelled while its agents were being set up: it ends cancelled, not
		// failed (a Setup that gives up with its context did not fail).
	case setupErr != nil:
		r.failLocked(troupe.StageInitialize, troupe.ErrorInfo{Code: troupe.CodeAgentError, Message: setupErr.Error()}, "agent setup failed", setupErr)
	case planErr != nil:
		r.failLocked(troupe.StagePlan, failInfo(planErr, troupe.CodeInvalidRequest, planErr.Error()), "planning failed", planErr)
	default:
		r.plan = p
		if c := p.Criteria; c != nil && c.TimeBudgetSeconds != nil && *c.TimeBudgetSeconds > 0 && secs(*c.TimeBudgetSeconds) < r.timeBudget {
			// Criteria the planner read from the query (parsed_query's time_budget_seconds)
			// bind as the request's own do.
			r.timeBudget = secs(*c.TimeBudgetSeconds)
		}
		if r.replay != nil {
			if err := r.replay.checkPlan(p); err != nil {
				r.failLocked(troupe.StagePlan, troupe.ErrorInfo{Code: troupe.CodeInvalidRequest, Message: err.Error()}, "resume diverged from the recorded run", err)
				break
			}
		}
		r.buildTasks(p)
		if err := r.resolveDeps(p); err != nil {
			// 000: every dispatch must pass validate_dispatch_request; a plan whose
			// dependencies name no agent would make dispatches that cannot.
			r.stages = nil
			r.failLocked(troupe.StagePlan, troupe.ErrorInfo{Code: troupe.CodeInvalidRequest, Message: err.Error()}, "invalid plan", err)
			break
		}
		r.emitLocked(troupe.Event{Stage: troupe.StagePlan, Kind: troupe.KindPlanCreated, Data: p})
		r.status = troupe.RunExecuting
		r.advanceLocked()
	}
	r.flushLocked()
	fin := r.claimFinishLocked()
	r.now = time.Time{}
	r.mu.Unlock()
	if fin {
		r.finish()
	}
}

func (r *Run) buildTasks(p *troupe.Plan) {
	n := 0
	total := p.NumTasks()
	all := make([]task, total)
	ptrs := make([]*task, total)
	decisions := make([]troupe.RoutingDecision, total)
	firsts := make([]dispatchRec, total)
	r.stages = make([][]*task, len(p.Stages))
	var ids strings.Builder
	ids.Grow(21 * total)
	var buf [32]byte
	for k := range total {
		ids.Write(troupe.AppendDispatchID(buf[:0], mix(r.rec.req.Seed, saltDispatch, uint64(k), 0)))
	}
	idText := ids.String() // every task's first dispatch id, in one allocation
	for i := range p.Stages {
		st := &p.Stages[i]
		r.stages[i] = ptrs[n : n+len(st.Tasks) : n+len(st.Tasks)]
		for j := range st.Tasks {
			t := &all[n]
			t.t, t.step, t.index = &st.Tasks[j], i+1, n
			t.decision, t.first = &decisions[n], &firsts[n]
			t.nextID = idText[21*n : 21*n+21]
			r.stages[i][j] = t
			n++
		}
	}
}

// setupAgents calls Setup on the planned agents and their fallbacks (seed 001: INITIALIZE is
// where setup happens). On error the agents already set up are torn down.
func (r *Run) setupAgents(p *troupe.Plan) error {
	if p == nil || !r.e.anySetup {
		return nil
	}
	var names []string
	seen := map[string]bool{}
	add := func(n string) {
		if n != "" && !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	for _, st := range p.Stages {
		for _, t := range st.Tasks {
			add(t.Agent)
			for _, fb := range r.pol.FallbackAgents[t.Agent] {
				add(fb)
			}
		}
	}
	for _, n := range names {
		spec, ok := r.e.reg.Spec(n)
		if !ok {
			continue
		}
		s, ok := spec.Agent.(troupe.Setupper)
		if !ok {
			continue
		}
		if err := troupe.CallSafely(func() error { return s.Setup(r.context()) }); err != nil {
			// What the teardown of those set up says is the run's warning, as on any end.
			if warns := r.teardown(); len(warns) > 0 {
				r.mu.Lock()
				r.warnLocked(warns...)
				r.mu.Unlock()
			}
			return fmt.Errorf("setup of %s: %w", n, err)
		}
		r.setup = append(r.setup, n)
	}
	return nil
}

// teardown calls Teardown on every agent set up, in reverse order, each with its own bound.
// It returns the problems as warnings.
func (r *Run) teardown() []string {
	r.mu.Lock()
	names := r.setup
	r.setup = nil
	if r.e.anySetup {
		r.more().tornDown = true
	}
	r.mu.Unlock()
	return r.teardownAgents(names)
}

// teardownAgents tears down the named agents, the last set up first. Each Teardown is a job of
// the executor with TeardownTimeout as its deadline, as a dispatch is: one still running then
// is left to the executor (local's Drain waits for it) and the run goes on, with a warning.
// The jobs' scope is not the run's, whose context may be cancelled by now.
func (r *Run) teardownAgents(names []string) []string {
	var warns []string
	var s troupe.Scope
	for i := len(names) - 1; i >= 0; i-- {
		spec, _ := r.e.reg.Spec(names[i])
		td, ok := spec.Agent.(troupe.Teardowner)
		if !ok {
			continue
		}
		if s == nil {
			s = r.e.exec.Scope(r.bg())
		}
		j := &teardownJob{td: td}
		s.Go(j, 0, r.e.exec.Now().Add(r.e.teardownTO))
		s.Wait()
		switch {
		case j.expired:
			warns = append(warns, fmt.Sprintf("teardown of %s: did not return within %v; left running", names[i], r.e.teardownTO))
		case j.err != nil:
			warns = append(warns, fmt.Sprintf("teardown of %s: %v", names[i], j.err))
		}
	}
	return warns
}

// teardownJob is one agent's Teardown run by the executor.
type teardownJob struct {
	td      troupe.Teardowner
	err     error // Teardown's; read only when the job did not expire (Run has returned then)
	expired bool
}

func (j *teardownJob) Run(ctx context.Context) {
	j.err = troupe.CallSafely(func() error { return j.td.Teardown(ctx) })
}

func (j *teardownJob) Done(expired bool) { j.expired = expired }

// setupLate sets up an agent the plan did not name, the first time it is dispatched: one a
// router chose (seed 003's coordinator plans tasks with no agent) or a routing decision's own
// fallback. The run tears it down with the others. Concurrent dispatches of the agent wait for
// the one setup; a later dispatch after a failed one tries again.
//
//go:noinline
func (r *Run) setupLate(ctx context.Context, name string, s troupe.Setupper) error {
	r.mu.Lock()
	if slices.Contains(r.setup, name) {
		r.mu.Unlock()
		return nil
	}
	x := r.more()
	if o := x.lateSetup[name]; o != nil {
		r.mu.Unlock()
		select {
		case <-o.done:
			return o.err
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	if x.tornDown {
		r.mu.Unlock()
		return fmt.Errorf("setup of %s: the run has already torn its agents down", name)
	}
	o := &setupOnce{done: make(chan struct{})}
	if x.lateSetup == nil {
		x.lateSetup = map[string]*setupOnce{}
	}
	x.lateSetup[name] = o
	r.mu.Unlock()

	err := troupe.CallSafely(func() error { return s.Setup(r.context()) })
	r.mu.Lock()
	late := x.tornDown // the run finished while it was being set up
	switch {
	case err == nil && !late:
		r.setup = append(r.setup, name)
	case err != nil:
		// Those waiting share this failure; a dispatch of the agent after it (the retry the
		// error policy makes of a recoverable one) sets it up again.
		delete(x.lateSetup, name)
	}
	r.mu.Unlock()
	if err == nil && late {
		r.teardownAgents([]string{name})
		err = errors.New("the run finished while it was being set up")
	}
	if err != nil {
		o.err = fmt.Errorf("setup of %s: %w", name, err)
	}
	close(o.done)
	return o.err
}

// planSafely asks the planner for the run's plan. A planner is the user's code: a panic in it
// fails the run (code PANIC, with the stack), not the caller of Start nor the process, and so
// does a plan it did not make (nil, with no error).
func planSafely(pl troupe.Planner, req *troupe.Request, c troupe.Catalog) (p *troupe.Plan, err error) {
	defer func() {
		if v := recover(); v != nil {
			p, err = nil, &pluginPanic{"planner", troupe.NewPanicError(v)}
		}
	}()
	p, err = pl.Plan(req, c)
	if p == nil && err == nil {
		err = errNoPlan
	}
	return p, err
}

var errNoPlan = errors.New("engine: the planner returned neither a plan nor an error")

// routeSafely asks the router for a task's decision, a panic failing the run as planSafely's
// does. It runs under the run's lock, on whichever goroutine advances the run.
func routeSafely(rt troupe.Router, ctx context.Context, in troupe.RouteInput, rc troupe.Context) (d troupe.RoutingDecision, err error) {
	defer func() {
		if v := recover(); v != nil {
			d, err = troupe.RoutingDecision{}, &pluginPanic{"router", troupe.NewPanicError(v)}
		}
	}()
	return rt.Route(ctx, in, rc)
}

// pluginPanic is a panic in the planner or the router.
type pluginPanic struct {
	who string
	*troupe.PanicError
}

func (p *pluginPanic) Error() string { return fmt.Sprintf("the %s panicked: %v", p.who, p.Value) }
func (p *pluginPanic) Unwrap() error { return p.PanicError }

// failInfo is the error a run failed by err records, with message msg: for a panic, code
// PANIC with the panic and its stack in the details; otherwise code.
func failInfo(err error, code, msg string) troupe.ErrorInfo {
	if pe := (*troupe.PanicError)(nil); errors.As(err, &pe) {
		info := troupe.ErrorInfoOf(pe)
		info.Message = msg
		return info
	}
	return troupe.ErrorInfo{Code: code, Message: msg}
}

// emitLocked adds ev to the current transition's batch (unless a resumed run already recorded
// it). The batch is appended to the store by flushLocked, which every transition calls before
// it releases the run's lock and before it starts any dispatch the transition created: every
// event is recorded before the engine acts on it, in one store call per transition.
func (r *Run) emitLocked(ev troupe.Event) {
	if r.err != nil {
		return
	}
	if r.replay != nil && r.replay.recorded(&ev) {
		return
	}
	r.seq++
	ev.RunID, ev.Seq = r.rec.req.RunID, r.seq
	if ev.Context == nil {
		ev.Context = &r.rec.req.Context // a nested event brings its own child context
	}
	if r.now.IsZero() {
		ev.Time = r.e.exec.Now()
	} else {
		ev.Time = r.now
	}
	r.updatedAt = ev.Time
	if r.pending == nil {
		r.pending = r.e.batches.Get().(*[]troupe.Event)
	} else if len(*r.pending) == cap(*r.pending) {
		r.flushLocked() // a full batch: record it (and start its dispatches) now
		if r.err != nil {
			return // the log broke: ev cannot follow what was not recorded
		}
		r.pending = r.e.batches.Get().(*[]troupe.Event)
	}
	*r.pending = append(*r.pending, ev)
}

// flushLocked appends the transition's events, then starts the dispatches it created and wakes
// the watchers. A store failure stops the run: nothing of the failed batch is recorded, none
// of its dispatches starts, and a resumed run will make them again. So does the engine's
// Shutdown, on the first transition to flush after it: the log ends with the last batch
// recorded before Shutdown, no terminal event after it, and the run can be resumed from it.
func (r *Run) flushLocked() {
	if r.err == nil && r.e.shut.Load() {
		r.shutLocked()
	}
	if r.pending != nil {
		batch := *r.pending
		switch {
		case r.err != nil:
			// The engine shut down while the transition made the batch: none of it is recorded.
			r.seq = batch[0].Seq - 1
		default:
			if r.logRest > 0 && batch[0].Seq > 1 {
				r.e.store.(reserver).Reserve(r.rec.req.RunID, int(r.logRest))
				r.logRest = 0
			}
			if err := r.e.store.Append(r.bg(), batch...); err != nil {
				r.seq = batch[0].Seq - 1
				r.err = &troupe.OrchestrationError{Stage: batch[0].Stage, Message: "cannot record event " + string(batch[0].Kind), Context: r.rec.req.Context, Cause: err}
				r.stop(r.err)
			}
		}
		clear(batch) // the store has its copy; drop the payload references
		*r.pending = batch[:0]
		r.e.batches.Put(r.pending)
		r.pending = nil
		for _, w := range r.watchers {
			select {
			case w <- struct{}{}:
			default:
			}
		}
	}
	for i, c := range r.toStart {
		switch {
		case r.err != nil:
			r.inflight-- // never started
			for next := r.replay.reviewed(c); next != nil; next = r.replay.reviewed(next) {
				r.inflight-- // nor will the reviews queued after it
			}
			r.inflight -= len(r.replay.release()) // nor what waited for them
		case r.replay.holdForReviews(c):
			// Started once the answered reviews before it are recorded (afterReviews).
		case c.reviewing:
			r.scope.Go((*reviewJob)(c), 0, time.Time{})
		default:
			r.scope.Go(c, c.delay, c.d.DispatchedAt.Add(c.timeout))
		}
		r.toStart[i] = nil
	}
	r.toStart = r.toStart[:0]
}

// unrecordedShutdown returns an error matching troupe.ErrShutdown if Shutdown stopped the run
// before any of its events was recorded, and nil otherwise.
func (r *Run) unrecordedShutdown() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seq != 0 || r.err == nil || !errors.Is(r.err, troupe.ErrShutdown) {
		return nil
	}
	return &troupe.OrchestrationError{Stage: troupe.StageInitialize, Context: r.rec.req.Context, Cause: shutBeforeRecorded{},
		Message: "run " + r.rec.req.RunID + " not started, nothing to resume (submit the request again)", Recoverable: true}
}

// shutBeforeRecorded is why a run Shutdown overtook has no log. It matches troupe.ErrShutdown,
// whose own text (the run can be resumed) would not be true of it.
type shutBeforeRecorded struct{}

func (shutBeforeRecorded) Error() string        { return "the engine shut down before the run was recorded" }
func (shutBeforeRecorded) Is(target error) bool { return target == troupe.ErrShutdown }

// shutLocked stops the run as the engine's Shutdown does: nothing more is recorded (r.err, as
// when the log breaks, but with troupe.ErrShutdown as its cause, which Wait and Events report)
// and its context ends, cancelling what is in flight.
//
//go:noinline
func (r *Run) shutLocked() {
	stage := troupe.StageExecute
	if r.pending != nil {
		stage = (*r.pending)[0].Stage
	}
	r.err = &troupe.OrchestrationError{Stage: stage, Message: "stopped without ending, as the engine shut down",
		Context: r.rec.req.Context, Cause: troupe.ErrShutdown, Recoverable: true}
	r.stop(troupe.ErrShutdown)
}

// advanceLocked moves the run as far as it can without waiting: it routes the current stage's
// tasks once, starts them up to the stage's cap, and when a stage has nothing left in flight
// or to start, goes on to the next. A dispatch answered from the log (a resumed run) is held
// and completes here, synchronously, in the order the log recorded the results: the order the
// dispatches finished in, which session state, upstream results and the execution order follow.
// Loops, not recursion, carry the run forward.
func (r *Run) advanceLocked() {
	r.advanceStagesLocked()
	for c := r.replay.take(); c != nil; c = r.replay.take() {
		if x := r.replay; x.budgetWhy != "" && !r.budgetHit && x.resultAt[c.d.DispatchID] > x.budgetAt {
			// The log records the budget spent before this result: by a composite's member
			// that found it so, say, whose composite's result this run takes rather than
			// asking again. It is spent here too, from here on, as it was.
			r.budgetFromLogLocked()
		}
		live := r.ctxErr() == nil && r.failure == nil
		cause, ok := runCancelCause(c.res)
		if !ok {
			cause, ok = r.replay.cancelledBefore(r.replay.resultAt[c.d.DispatchID])
		}
		if ok && live {
			// The run that made the log was being cancelled by its caller when it recorded
			// this result, or a composite's member before it (its process died before
			// run_cancelled): this run is cancelled here too, for the same cause, and ends
			// as that one would have.
			r.stop(errors.New(cause))
		}
		r.completeLocked(c)
		if live && (r.ctxErr() != nil || r.failure != nil) {
			r.replay.endAt = r.replay.resultAt[c.d.DispatchID] + 1 // see refusedBeforeEnd
		}
		r.advanceStagesLocked()
	}
	if x := r.replay; x != nil && x.budgetWhy != "" && !r.budgetHit && x.taken == len(x.results) {
		// Every result the log holds is applied, and it records the budget spent after them
		// (a composite's member found it so): what this run does from here on comes after.
		r.budgetFromLogLocked()
	}
	if r.replay != nil && r.ctxErr() == nil && r.failure == nil {
		// What the log holds is applied; a composite member it shows let go as the run was
		// cancelled came after all of it.
		if cause, ok := r.replay.cancelledBefore(-1); ok {
			r.stop(errors.New(cause))
		}
	}
}

// advanceStagesLocked is advanceLocked but for the results a resumed run holds.
func (r *Run) advanceStagesLocked() {
	for !r.stopping() && r.stage < len(r.stages) {
		if !r.routed {
			if x := r.rare; x != nil {
				r.stageWritesWarnLocked()
				x.stageState, x.stageSnap = nil, false // a new stage reads the state as it is now
			}
			r.stageUpstreamLocked()
			for _, t := range r.stages[r.stage] {
				if r.budgetForLocked(t, true) != "" {
					// Spent for good (time, cost, tokens and dispatches only grow): no task
					// is routed any more, so a router that asks a model is not paid for
					// decisions no dispatch will follow. The rest of the plan is skipped.
					r.stage, r.next = len(r.stages), 0
					return
				}
				if !r.routeLocked(t) {
					return
				}
			}
			r.routed = true
		}
		r.fillLocked()
		if r.inflight > 0 || r.next < len(r.stages[r.stage]) {
			return
		}
		r.stage++
		r.next, r.routed = 0, false
	}
}

// stageUpstreamLocked fixes, as a stage begins, the upstream results its dispatches get: the
// results of the stages before it, in plan order. A group's agents finish in any order, and
// r.upstream keeps that order (the execution order aggregation reports); so that what an agent
// is handed does not depend on timing, a group that finished out of plan order is put in plan
// order here, in a copy, and a group's dispatches all get the results as the group began, not
// those of the group's agents that finished before they started. A chain copies nothing.
func (r *Run) stageUpstreamLocked() {
	group := len(r.stages[r.stage]) > 1
	x := r.rare
	if x == nil {
		if !group {
			return
		}
		x = r.more()
	}
	n := len(r.upstream)
	seg := x.seg
	x.seg = x.seg[:0]
	inOrder := true
	for i := 1; i < len(seg) && inOrder; i++ {
		inOrder = seg[i-1].index < seg[i].index
	}
	if x.ordered == nil && inOrder {
		x.visible, x.upSet = r.upstream[:n:n], group
		return
	}
	if x.ordered == nil {
		x.ordered = make([]troupe.UpstreamResult, 0, max(n, r.plan.NumTasks()))
	}
	base := n - len(seg) // the group's results are the last ones
	x.ordered = append(x.ordered, r.upstream[x.orderedN:base]...)
	slices.SortFunc(seg, func(a, b upPos) int { return a.index - b.index })
	for _, p := range seg {
		x.ordered = append(x.ordered, r.upstream[p.pos])
	}
	x.orderedN = n
	x.visible, x.upSet = x.ordered[:len(x.ordered):len(x.ordered)], true
}

// stopping says no new task of the plan may start: the run is ending, or pausing for a human.
func (r *Run) stopping() bool { return r.pausing || r.ending() }

// ending says the run will not go on: it failed, was cancelled, or its log broke. A run that is
// only pausing still recovers its failures (retries and fallbacks start), as a run resumed from
// its log does, which knows nothing of a pause that was coming when it takes such a failure.
func (r *Run) ending() bool {
	return r.failure != nil || r.err != nil || r.ctxErr() != nil
}

// routeLocked makes the task's routing decision and records it. A resumed run takes the
// decision its log holds for the task instead: the router might decide otherwise now (a
// router that asks a model may not be deterministic), the recorded dispatches and results
// follow the recorded decision, and a router that is paid is not paid twice.
func (r *Run) routeLocked(t *task) bool {
	var d troupe.RoutingDecision
	var err error
	recorded, replayed := r.replay.decision(r.nextID(t))
	if replayed {
		d = *recorded
	} else {
		in := troupe.RouteInput{Task: *t.t, Query: r.rec.req.Query, ParsedQuery: r.rec.req.ParsedQuery, State: r.stageStateLocked(), Available: r.availableLocked()}
		d, err = routeSafely(r.e.router, r.context(), in, r.rec.req.Context)
		if err == nil && r.excluded(d.Target) && d.Target != t.t.Agent {
			// The request's criteria hold at run time as at planning (seed 000's
			// excluded_agents), for a router that chose despite what it was offered.
			err = fmt.Errorf("router chose %q, which the request's criteria exclude", d.Target)
		}
		if err == nil && d.Fallback != "" && r.excluded(d.Fallback) {
			d.Fallback = "" // not one to stand in: the request excludes it
		}
	}
	if err == nil && !r.e.reg.Has(d.Target) {
		if _, planned := r.e.router.(plannedRouter); planned && d.Target == t.t.Agent {
			// No router: the planner named the agent.
			err = fmt.Errorf("the plan names agent %q: %w", d.Target, troupe.ErrUnknownAgent)
		} else {
			err = fmt.Errorf("router chose %q: %w", d.Target, troupe.ErrUnknownAgent)
		}
	}
	// What deciding cost counts toward the budgets and the totals; a recorded decision's too,
	// as a recorded result's does: the resumed run's accounts are the whole run's.
	if d.TokensUsed != nil {
		r.tokens += *d.TokensUsed
		r.more().routeTokens += *d.TokensUsed
	}
	if d.CostDollars != nil {
		r.cost += dollarsToNanos(*d.CostDollars)
		r.more().routeCost += *d.CostDollars
	}
	if err != nil {
		if r.ctxErr() != nil {
			return false // the run was cancelled while routing: it ends cancelled, not failed
		}
		r.failLocked(troupe.StageRoute, failInfo(err, routeErrorCode(err), fmt.Sprintf("routing task %s: %v", t.t.ID, err)), "routing failed", err)
		return false
	}
	if !replayed && d.Fallback == d.Target {
		d.Fallback = "" // no agent stands in for itself (fallbacksOf leaves it out too)
	}
	if !replayed && d.Fallback == "" && r.pol.Error() == troupe.Fallback && r.pol.FallbackEnabled() {
		if fbs := r.fallbacksOf(&d); len(fbs) > 0 {
			d.Fallback = fbs[0]
		}
	}
	*t.decision = d
	r.emitLocked(troupe.Event{Stage: troupe.StageRoute, Kind: troupe.KindRouteDecided, Step: t.step, DispatchID: r.nextID(t), Agent: d.Target, Data: t.decision})
	return true
}

// availableLocked are the agents a router may choose from: the registry's, less those the
// request's criteria exclude.
func (r *Run) availableLocked() []string {
	c := r.criteria()
	if c == nil || len(c.ExcludedAgents) == 0 {
		return r.e.names
	}
	return slices.DeleteFunc(slices.Clone(r.e.names), r.excluded)
}

// excluded says whether the request's criteria exclude agent name.
func (r *Run) excluded(name string) bool {
	c := r.criteria()
	return c != nil && slices.Contains(c.ExcludedAgents, name)
}

// routeErrorCode is the code of a routing failure: UNKNOWN_AGENT when no available agent was
// found (or the one chosen is not registered), INVALID_INPUT when the request's parsed query
// has the wrong shape for the router, and AGENT_ERROR when the router itself failed (a model
// that classifies, unreachable).
func routeErrorCode(err error) string {
	var ve troupe.ValidationErrors
	var one *troupe.ValidationError
	switch {
	case errors.Is(err, troupe.ErrUnknownAgent):
		return troupe.CodeUnknownAgent
	case errors.As(err, &ve), errors.As(err, &one):
		return troupe.CodeInvalidInput
	}
	return troupe.CodeAgentError
}

// nextID returns the id the task's next dispatch will have: derived from the seed, the task's
// place in the plan and how many dispatches it had, so a resumed run derives the same ids.
func (r *Run) nextID(t *task) string {
	if t.nextID == "" {
		t.nextID = troupe.NewDispatchID(mix(r.rec.req.Seed, saltDispatch, uint64(t.index), uint64(t.serial)))
	}
	return t.nextID
}

// fillLocked starts pending tasks of the current stage up to the stage's cap.
func (r *Run) fillLocked() {
	tasks := r.stages[r.stage]
	limit := r.plan.Stages[r.stage].MaxConcurrency
	if limit <= 0 {
		limit = r.e.maxConc
	}
	for r.next < len(tasks) && r.inflight < limit && !r.stopping() {
		t := tasks[r.next]
		if r.replay != nil && r.replay.waits(r.nextID(t), r.inflight) {
			return // a result the log recorded before this dispatch is applied first
		}
		r.next++
		if r.budgetForLocked(t, false) != "" {
			continue // never dispatched: reported as skipped
		}
		t.attempt = 1
		r.dispatchLocked(t, t.decision.Target, t.decision.Reason, 0)
	}
}

// nowLocked is the time of the current transition, or the clock outside one.
func (r *Run) nowLocked() time.Time {
	if r.now.IsZero() {
		return r.e.exec.Now()
	}
	return r.now
}

// budgetLocked says why no new dispatch may start, recording it once.
func (r *Run) budgetLocked() string {
	now := r.nowLocked()
	elapsed := now.Sub(r.startedAt)
	liveTokens, liveCost := r.live()
	if elapsed < r.timeBudget && r.cost+liveCost < r.costBudget && r.tokens+liveTokens < r.tokBudget && int(r.dispatches) < r.e.maxDisp {
		return "" // the common case, in a small frame: this runs before every dispatch
	}
	return r.budgetSpentLocked(elapsed)
}

// budgetSpentLocked says which budget is spent, recording it once.
//
//go:noinline
func (r *Run) budgetSpentLocked(elapsed time.Duration) string {
	var why string
	liveTokens, liveCost := r.live()
	switch {
	case elapsed >= r.timeBudget:
		why = fmt.Sprintf("time budget of %v spent (%v elapsed)", r.timeBudget, elapsed.Round(time.Millisecond))
	case r.cost+liveCost >= r.costBudget:
		why = fmt.Sprintf("cost budget of $%.4f spent ($%.4f)", r.costBudget.dollars(), (r.cost + liveCost).dollars())
	case r.tokens+liveTokens >= r.tokBudget:
		why = fmt.Sprintf("token budget of %d spent (%d)", r.tokBudget, r.tokens+liveTokens)
	case int(r.dispatches) >= r.e.maxDisp:
		why = fmt.Sprintf("dispatch limit of %d reached", r.e.maxDisp)
	default:
		return ""
	}
	return r.budgetSpentAsLocked(why)
}

// nanodollars is an amount of money in billionths of a dollar. The run counts what it spends in
// them, not in float64 dollars: float addition is not associative ($0.10 + $0.15 + $0.05 is
// $0.30, $0.05 + $0.10 + $0.15 a hair over it), so the same results finishing in another order
// (a resumed run counts what its log holds first) could cross a budget in one run and not in
// the other. Whole billionths add up the same in any order.
type nanodollars int64

const nanosPerDollar nanodollars = 1e9

// maxNanos bounds an amount converted from dollars ($4.5 million), far above any budget, so
// that a run's sums stay far from overflowing: no dispatch starts once the budget is spent, so
// a sum exceeds it by at most what dispatches already running report, and it would take 2,048
// amounts at the bound to overflow.
const maxNanos nanodollars = 1 << 52

// dollarsToNanos is c, a cost reported in dollars, to the nearest billionth (a cost too small
// for a billionth counts nothing, as nothing it adds to a budget could be told apart).
func dollarsToNanos(c float64) nanodollars {
	switch n := math.Round(c * float64(nanosPerDollar)); {
	case !(n > 0): // NaN too; validation refuses negative costs before they get here
		return 0
	case n >= float64(maxNanos):
		return maxNanos
	default:
		return nanodollars(n)
	}
}

// budgetNanos is a budget of b dollars: a positive budget is at least a billionth, not 0
// (which means no budget was given).
func budgetNanos(b float64) nanodollars {
	if n := dollarsToNanos(b); n > 0 || !(b > 0) {
		return n
	}
	return 1
}

func (n nanodollars) dollars() float64 { return float64(n) / float64(nanosPerDollar) }

// budgetSpentSuffix ends the message of a budget_exhausted event, after the budget spent.
const budgetSpentSuffix = "; no new dispatches start"

// budgetSpentAsLocked records, the first time, that the budget is spent for the reason why,
// or for the reason a resumed run's log recorded: the resumed run may find another budget
// spent first, looking later than the run that made the log did. It returns the reason
// recorded then, every time: what is spent by a later refusal depends on what else finished
// first, which a resumed run, taking the log's budget as spent before it has counted all it
// holds (budgetFromLogLocked), does not know; so a refusal says what the first one said, in
// this run and in one resumed from its log.
func (r *Run) budgetSpentAsLocked(why string) string {
	if r.budgetHit {
		return r.rareOr().budgetWhy
	}
	if r.replay != nil && r.replay.budgetWhy != "" {
		why = r.replay.budgetWhy
	}
	r.budgetHit = true
	r.more().budgetWhy = why
	msg := why + budgetSpentSuffix
	r.warnLocked(msg)
	r.emitLocked(troupe.Event{Stage: troupe.StageExecute, Kind: troupe.KindBudgetExhausted, Data: &troupe.Warning{Message: msg, Code: troupe.CodeBudget}})
	return why
}

// budgetFromLogLocked is the budget a resumed run's log records as spent, recorded as this
// run's (overBudget).
//
//go:noinline
func (r *Run) budgetFromLogLocked() string { return r.budgetSpentAsLocked(r.replay.budgetWhy) }

// retryPastBudgetLocked says why a retry after backoff may not be scheduled: it would start
// when the time budget is spent, and no dispatch starts then.
func (r *Run) retryPastBudgetLocked(t *task, backoff time.Duration) string {
	elapsed := max(r.timeSpentLocked(t), 0) // a clock that went back has spent nothing
	if backoff < r.timeBudget-elapsed {     // elapsed+backoff could wrap for a backoff near the longest Duration
		return ""
	}
	return fmt.Sprintf("time budget of %v would be spent before a retry after %v could start (%v elapsed)",
		r.timeBudget, backoff, elapsed.Round(time.Millisecond))
}

// budgetForLocked says why t's next dispatch (with decision, its routing decision) may not be
// made for a budget, or "". A resumed run makes what its log holds, which the run that made the
// log found within budget; of what the log does not hold, it makes nothing once the log records
// a budget spent, and counts against the time budget the time the log shows the run active
// before the resume as well as the time since (its own clock started again).
func (r *Run) budgetForLocked(t *task, decision bool) string {
	if r.replay != nil && r.replay.logged(r.nextID(t), decision) {
		return "" // made already, within the budget of the run that made it (whatever this one's)
	}
	if why := r.budgetLocked(); why != "" || r.replay == nil {
		return why
	}
	return r.replayBudgetLocked(t)
}

//go:noinline
func (r *Run) replayBudgetLocked(t *task) string {
	x := r.replay
	if x.budgetWhy != "" {
		return r.budgetFromLogLocked()
	}
	if elapsed := r.timeSpentLocked(t); elapsed >= r.timeBudget {
		return r.budgetSpentLocked(elapsed)
	}
	return ""
}

// timeSpentLocked is how much of the time budget t's next dispatch finds spent: the time since
// the run started or was resumed and, for a dispatch a resumed run's log does not hold, the time
// the log shows the run active before the resume.
func (r *Run) timeSpentLocked(t *task) time.Duration {
	elapsed := r.nowLocked().Sub(r.startedAt)
	if x := r.replay; x != nil && !x.logged(r.nextID(t), false) {
		elapsed += x.activeBefore
	}
	return elapsed
}

// dispatchLocked creates the next dispatch of t to agent and hands it to the executor (or, when
// resuming, takes its recorded result).
func (r *Run) dispatchLocked(t *task, agent, reason string, delay time.Duration) {
	id := r.nextID(t)
	if r.replay != nil {
		if why := r.replay.diverged(id, agent); why != "" {
			r.divergedLocked(t, why)
			return
		}
		r.replay.remade(id)
	}
	spec, known := r.e.reg.Spec(agent)
	c := &call{r: r, t: t, spec: spec, attempt: t.attempt, prev: t.last}
	t.serial++
	t.nextID = ""
	r.dispatches++
	now := r.nowLocked()
	rec := t.first
	if t.serial > 1 { // counted already
		rec = new(dispatchRec) // a retry or fallback: the first dispatch's record is logged
	}
	d := &rec.d
	c.d = d
	d.DispatchID, d.SessionID, d.QueryID = id, r.rec.req.SessionID, r.rec.req.QueryID
	d.TargetAgent, d.DispatchReason, d.Priority = agent, reason, r.rec.req.Priority
	d.Query, d.ParsedQuery, d.RAGContext, d.UserContext = r.rec.req.Query, r.rec.req.ParsedQuery, r.rec.req.RAGContext, r.rec.req.UserContext
	if d.ParsedQuery == nil {
		d.ParsedQuery = emptyParsed
	}
	d.ExecutionMode = troupe.Sequential
	if len(r.stages[r.stage]) > 1 {
		d.ExecutionMode = troupe.Parallel
	}
	d.UpstreamResults = r.upstream[:len(r.upstream):len(r.upstream)]
	if x := r.rare; x != nil && x.upSet {
		d.UpstreamResults = x.visible
	}
	d.DependsOn = t.t.DependsOn
	if x := r.rare; x != nil && x.deps != nil {
		if refs, ok := x.deps[t]; ok {
			d.DependsOn = depNames(refs)
		}
	}
	d.DispatchedAt = now.Add(delay)
	d.CollectSignals = true
	d.OptimizedPrompts = r.rec.req.OptimizedPrompts[agent]
	timeout := r.e.timeout
	if known && spec.Timeout > 0 {
		timeout = spec.Timeout
	}
	if s, ok := r.rec.req.Timeouts[agent]; ok && s > 0 {
		ts := s // escapes only when there is a timeout to point at
		d.TimeoutSeconds = &ts
		timeout = secs(s)
	}
	_, liveCost := r.live() // what running composites used counts too
	if left := r.costBudget - r.cost - liveCost; left > 0 {
		rec.costLeft = left.dollars()
		d.MaxCostDollars = &rec.costLeft
	}
	c.timeout = timeout
	d.Bind(c)
	t.last = c
	r.emitLocked(troupe.Event{Stage: troupe.StageExecute, Kind: troupe.KindDispatchStarted, Step: t.step, DispatchID: id, Agent: agent, Data: d})
	if r.err != nil {
		return
	}
	if !known || d.DispatchedAt.IsZero() {
		// 000 validates a dispatch before sending it. Planning (resolveDeps, the request's
		// checks in newRun) and routing check once what they can; what is left to go wrong
		// is checked here, per dispatch: a fallback a router named that is no agent, a
		// clock that reads zero.
		r.invalidLocked(c)
		return
	}
	if rec, ok := r.replay.result(id); ok {
		c.res = rec
		c.replayed = true
		r.inflight++
		r.replay.hold(c) // completed by advanceLocked, in log order
		return
	}
	if q, ok := r.replay.review(id); ok {
		// The run paused on a human's review of this dispatch's result: the review goes on
		// with that result, which the agent is not asked to make again.
		res := *q.Result
		c.work, c.reviewing = &res, true
		r.underReviewLocked(c)
		c.asked = questionOrdinal(q.ID, id) - 1 // the review asks again under its recorded id
		// What its members used (a composite's result under review) stays counted while
		// the review waits, as it was in the run that made the log.
		r.replay.precharge(c)
		r.inflight++
		if _, answered := r.replay.answer(q.ID); answered && r.replay.queueReview(c) {
			return // started once the review before it is recorded (queueReview)
		}
		r.toStart = append(r.toStart, c)
		return
	}
	r.replay.precharge(c)
	r.inflight++
	c.delay = delay
	if len(r.toStart) == cap(r.toStart) && cap(r.toStart) < batchSize {
		// A group: room for a full batch at once (a full batch of events flushes toStart).
		r.toStart = append(make([]*call, 0, batchSize), r.toStart...)
	}
	r.toStart = append(r.toStart, c) // started by flushLocked, once its events are recorded
}

var emptyParsed = map[string]any{}

// invalidLocked records a dispatch the engine built but must not send, as it fails seed 000's
// validate_dispatch_request: failed, not recoverable, its error naming the fields at fault,
// and never handed to the agent. The error policy then applies as to any failure: a fallback
// may stand in.
//
//go:noinline
func (r *Run) invalidLocked(c *call) {
	d := c.d
	d.Bind(nil) // the log keeps the dispatch; it must not keep the call
	now := r.nowLocked()
	why := "invalid"
	if err := d.Validate(r.e.reg); err != nil {
		why = err.Error()
	}
	c.res = &troupe.Result{DispatchID: d.DispatchID, SessionID: d.SessionID, QueryID: d.QueryID, AgentName: d.TargetAgent,
		Status: troupe.StatusFailed, StartedAt: now, CompletedAt: now, TraceID: &r.rec.traceID,
		Errors: []troupe.ErrorInfo{{Code: troupe.CodeInvalidRequest,
			Message: fmt.Sprintf("dispatch %s to %s was not sent: %s", d.DispatchID, d.TargetAgent, why)}}}
	r.inflight++
	r.completeLocked(c)
}

// divergedLocked fails a resumed run whose next dispatch is not the one its log recorded under
// the same id: taking the recorded result, or recording a new one beside the recorded
// dispatch, would credit one agent with another's work.
//
//go:noinline
func (r *Run) divergedLocked(t *task, why string) {
	if t.last != nil && t.last.res != nil {
		t.final = t.last.res // the failure that led to this dispatch stands
	}
	err := fmt.Errorf("engine: resume: %s; the registry or the error policy changed", why)
	r.failLocked(troupe.StageExecute, troupe.ErrorInfo{Code: troupe.CodeInvalidRequest, Message: err.Error()}, "resume diverged from the recorded run", err)
}

// depRef is one entry of a task's depends_on: an agent's name, or the task (placed by the
// router at run time) whose routed agent it names.
type depRef struct {
	name string
	on   *task
}

// depNames is a dispatch's depends_on from its task's resolved dependencies.
func depNames(refs []depRef) []string {
	names := make([]string, len(refs))
	for i, ref := range refs {
		names[i] = ref.name
		if ref.on != nil {
			names[i] = ref.on.decision.Target
		}
	}
	return names
}

// resolveDeps makes the depends_on of every task's dispatches name agents, as seed 000 has it
// ("agent names this dispatch depends on", which validate_dispatch_request checks against the
// valid agents). A dependency on a task of the plan, by id, names the task's agent, or, with a
// router (which places tasks at run time, and may send one to another agent than the plan's),
// the agent it was routed to; one on a registered agent
// stays as it is. A dependency that names neither, or a task that does not run in an earlier
// stage, makes the plan invalid. A plan whose tasks are named after their agents (as the rule
// planner's are) needs no change and costs nothing here; others keep their names in
// runRare.deps. The caller holds r.mu and has built the tasks.
func (r *Run) resolveDeps(p *troupe.Plan) error {
	for i := range p.Stages {
		for j := range p.Stages[i].Tasks {
			tk := &p.Stages[i].Tasks[j]
			var refs []depRef // made once a name changes
			for k, dep := range tk.DependsOn {
				ref, err := r.resolveDep(p, i, dep)
				if err != nil {
					return fmt.Errorf("engine: plan: stage %d, task %q: depends_on[%d]: %w", i+1, tk.ID, k, err)
				}
				if refs == nil && (ref.on != nil || ref.name != dep) {
					refs = make([]depRef, k, len(tk.DependsOn))
					for m := range k {
						refs[m].name = tk.DependsOn[m]
					}
				}
				if refs != nil {
					refs = append(refs, ref)
				}
			}
			if refs != nil {
				x := r.more()
				if x.deps == nil {
					x.deps = make(map[*task][]depRef)
				}
				x.deps[r.stages[i][j]] = refs
			}
		}
	}
	return nil
}

// resolveDep resolves one dependency of a task of stage (from 0). Earlier stages are searched
// from the nearest: a dependency is most often on the stage just before.
func (r *Run) resolveDep(p *troupe.Plan, stage int, dep string) (depRef, error) {
	for i := stage - 1; i >= 0; i-- {
		for j := range p.Stages[i].Tasks {
			if t := &p.Stages[i].Tasks[j]; t.ID == dep {
				if _, planned := r.e.router.(plannedRouter); planned && t.Agent != "" && r.e.reg.Has(t.Agent) {
					return depRef{name: t.Agent}, nil
				}
				// The agent the router chose for it: with a router, a task the plan gave an
				// agent may be sent to another, and that one is what ran.
				return depRef{on: r.stages[i][j]}, nil
			}
		}
	}
	for i := stage; i < len(p.Stages); i++ {
		for j := range p.Stages[i].Tasks {
			if p.Stages[i].Tasks[j].ID == dep {
				return depRef{}, fmt.Errorf("task %q is in stage %d, not in an earlier one", dep, i+1)
			}
		}
	}
	if r.e.reg.Has(dep) {
		return depRef{name: dep}, nil
	}
	return depRef{}, fmt.Errorf("%q names neither a task of the plan nor a registered agent", dep)
}

// drain records finished calls until none is left or another goroutine has taken over.
func (r *Run) drain() {
	for {
		if !r.draining.CompareAndSwap(false, true) {
			return // the goroutine draining will see our call
		}
		fin := false
		for list := r.doneq.Swap(nil); list != nil; list = r.doneq.Swap(nil) {
			var fifo *call // oldest first, so events follow completion order
			for list != nil {
				next := list.nextDone
				list.nextDone = fifo
				fifo, list = list, next
			}
			r.mu.Lock()
			r.now = transitionTime(fifo, r.e.exec)
			for c := fifo; c != nil; {
				next := c.nextDone
				c.nextDone = nil
				switch {
				case c.expiredDone:
					// c.work is not read: the agent's goroutine may still be writing it.
					c.expired = true
					c.timedOut()
					open := r.takeOpenNestedLocked(c)
					r.completeLocked(c)
					r.closeNestedLocked(c, open)
				case !c.reviewing && c.work.RequiresHuman && c.work.Status == troupe.StatusCompleted:
					// A human reviews the result once the dispatch is done with, in a job of its
					// own: the agent's deadline does not run on while a human reads. Still in
					// flight (it has no outcome yet: the review may change it), it starts once
					// this transition is recorded.
					c.reviewing = true
					r.underReviewLocked(c)
					r.toStart = append(r.toStart, c)
				default:
					c.res = c.work
					r.completeLocked(c)
				}
				c = next
			}
			r.advanceLocked()
			r.flushLocked()
			fin = r.claimFinishLocked() || fin
			r.now = time.Time{}
			r.mu.Unlock()
		}
		r.draining.Store(false)
		if fin {
			r.finish()
			return
		}
		if r.doneq.Load() == nil {
			return
		}
		// A call arrived after the last swap while we still held the role: go round again.
	}
}

// transitionTime is the time of a batch of completions: the latest completion time the
// workers read as they finished, or the clock when a deadline expired a call (its worker is
// still busy and read no clock).
func transitionTime(fifo *call, exec troupe.Executor) time.Time {
	var t time.Time
	for c := fifo; c != nil; c = c.nextDone {
		if c.expiredDone {
			return exec.Now()
		}
		if c.work.CompletedAt.After(t) {
			t = c.work.CompletedAt
		}
	}
	return t
}

// completeLocked records a finished dispatch and applies the error policy (which may start a
// retry or a fallback); advancing to further tasks is the caller's advanceLocked.
func (r *Run) completeLocked(c *call) {
	r.inflight--
	t := c.t
	res := c.res
	if r.replay != nil {
		r.replay.settled(c.d.DispatchID)
		if next := r.replay.reviewed(c); next != nil {
			r.toStart = append(r.toStart, next) // once this one's result is recorded
		}
		r.toStart = append(r.toStart, r.replay.release()...) // what waited for the reviews
	}
	if x := r.rare; x != nil {
		delete(x.preNotes, c) // carried onto its result by finish or timedOut
		delete(x.underReview, c)
		delete(x.partialNotes, c)
		delete(x.openNested, c)
	}
	if c.paused {
		if res == nil || res.Status != troupe.StatusCompleted || c.reviewing {
			// No result yet (or one a human must review): a resumed run takes it up again.
			// What its members used while it ran stays counted, as spent, while it waits:
			// dropped, the budget would let new dispatches start that the run resumed from
			// the log, which counts it, refuses.
			return
		}
		// A question was asked on its behalf (by a branch of a group that another branch
		// won, say), but it completed without the answer: the question does not hold the run.
		r.unpauseLocked(c)
	}
	if u := c.use; u != nil { // its result counts from now on, its members' with it
		x := r.more()
		x.liveTokens -= u.tokens
		x.liveCost -= u.nanos
	}
	// Whether the run is letting this dispatch go as it is being cancelled: decided once, so
	// that the mark the log records and what the policy is told agree though the caller's
	// context may end in between.
	cancelling := res.Status != troupe.StatusCompleted && r.ctxErr() != nil && r.failure == nil
	if !c.replayed {
		kind := troupe.KindDispatchCompleted
		if res.Status != troupe.StatusCompleted {
			kind = troupe.KindDispatchFailed
			if res.Status == troupe.StatusTimeout && len(res.AgentResult) > 0 {
				c.checkPartial() // before the log records it; a replayed result was checked
			}
			r.noteRunCancelLocked(res, cancelling)
		}
		r.emitLocked(troupe.Event{Stage: troupe.StageExecute, Kind: kind, Step: t.step, DispatchID: res.DispatchID, Agent: res.AgentName, Status: res.Status, Data: res})
	}
	if res.CostDollars != nil {
		r.cost += dollarsToNanos(*res.CostDollars)
	}
	if res.TokensUsed != nil {
		r.tokens += *res.TokensUsed // every dispatch's result once, retried attempts included
	}
	if len(res.Warnings) > 0 && r.pol.Warning() == troupe.WarnContinue {
		for _, w := range res.Warnings {
			r.warnLocked(res.AgentName + ": " + w)
		}
	}
	if res.Status == troupe.StatusCompleted {
		r.succeedLocked(c, false)
		return
	}
	r.failedLocked(c, cancelling)
}

// runCancelledKey marks, in the details of a dispatch result's CANCELLED error, that the run
// was being cancelled by its caller (or by Engine.Close) when the result was recorded, with
// the cause. The live run lets such a dispatch go, as its run is ending; a run resumed from a
// log that stops before run_cancelled reads the mark and is cancelled at the same point, so
// it does not take the dispatch for a failure its error policy must handle.
const runCancelledKey = "run_cancelled"

// noteRunCancelLocked marks res, a result about to be recorded that did not complete, with
// runCancelledKey when cancelling (the run is being cancelled and is not failing: it lets the
// dispatch go), and removes the mark from one an agent made up. res is the engine's; its
// errors may be shared with the agent's result and are copied before a change.
//
//go:noinline
func (r *Run) noteRunCancelLocked(res *troupe.Result, cancelling bool) {
	_, marked := runCancelCause(res)
	if !cancelling && !marked {
		return
	}
	errs := make([]troupe.ErrorInfo, 0, len(res.Errors)+1)
	for _, e := range res.Errors {
		if _, ok := e.Details[runCancelledKey]; ok {
			e.Details = maps.Clone(e.Details)
			delete(e.Details, runCancelledKey)
		}
		errs = append(errs, e)
	}
	if cancelling {
		cause := r.ctxCauseText()
		i := slices.IndexFunc(errs, func(e troupe.ErrorInfo) bool { return e.Code == troupe.CodeCancelled })
		if i < 0 {
			errs = append(errs, troupe.ErrorInfo{Code: troupe.CodeCancelled, Message: cause})
			i = len(errs) - 1
		}
		d := maps.Clone(errs[i].Details)
		if d == nil {
			d = map[string]any{}
		}
		d[runCancelledKey] = cause
		errs[i].Details = d
	}
	res.Errors = errs
}

// runCancelCause returns the cause noteRunCancelLocked marked res with, if it did.
func runCancelCause(res *troupe.Result) (string, bool) {
	if res == nil || res.Status == troupe.StatusCompleted {
		return "", false
	}
	for _, e := range res.Errors {
		if v, ok := e.Details[runCancelledKey]; ok {
			s, _ := v.(string)
			return s, true
		}
	}
	return "", false
}

// failedLocked applies the error policy to a dispatch that did not complete. It is apart from
// completeLocked so that the common path, which runs on the goroutine of every finishing
// agent, keeps a small stack frame.
//
//go:noinline
func (r *Run) failedLocked(c *call, cancelling bool) {
	t, res := c.t, c.res
	if len(res.Errors) > 0 {
		x := r.more()
		x.errs = append(x.errs, res.Errors...)
	}
	f := policy.Failure{Status: res.Status, Attempt: int(c.attempt), Fallbacks: r.fallbacksOf(t.decision), FallbacksUsed: int(t.fbUsed), HasPartial: partialUsable(res)}
	for _, e := range res.Errors {
		f.Recoverable = f.Recoverable || e.Recoverable
		f.RetryAfter = max(f.RetryAfter, retryAfter(e))
	}
	switch {
	case cancelling:
		f.Status = troupe.StatusCancelled
	case f.Status == troupe.StatusCancelled && r.ctxErr() == nil:
		// The agent says it was cancelled (a remote service's task was), but the run goes
		// on: its dispatch did not complete, and the policy applies as to any failure, not
		// the skip of a run that is ending. A result a resumed run takes from its log is
		// handled the same: the run records a cancellation of its own making only once its
		// context has ended, after the failure that ended it, which the resumed run takes
		// from the log first, so its context has ended again by then. (A run cancelled by its
		// caller records nothing of that until run_cancelled: resumed from a log cut before
		// it, its cancelled dispatches are failures the policy handles.)
		f.Status = troupe.StatusFailed
	}
	rnd := mix(r.rec.req.Seed, saltJitter, uint64(t.index), uint64(t.serial))
	act := policy.Decide(r.pol, f, rnd)
	budgetStopped := false
	if (act.Kind == policy.Retry || act.Kind == policy.Fallback) && !r.ending() {
		if why := r.budgetForLocked(t, false); why != "" {
			budgetStopped = true
			// No retry or fallback may start: the failure stands as if none were left, and
			// the policy says what then (continue, or fail the run), not a silent skip.
			f.Attempt, f.FallbacksUsed = math.MaxInt, len(f.Fallbacks)
			act = policy.Decide(r.pol, f, rnd)
			act.Reason = why + "; " + act.Reason
		} else if act.Kind == policy.Retry {
			if why := r.retryPastBudgetLocked(t, act.Backoff); why != "" {
				// The retry would start once the time budget is spent: none is left that can
				// start in time, though a fallback, which starts now, still may.
				budgetStopped = true
				f.Attempt = math.MaxInt
				act = policy.Decide(r.pol, f, rnd)
				act.Reason = why + "; " + act.Reason
				r.warnLocked(fmt.Sprintf("%s: not retried: %s", res.AgentName, why))
			}
		}
	}
	if act.Kind == policy.Retry && c.replayed {
		// The log says what the run did next. Having gone on to the fallback the policy names
		// rather than retrying, it was refused the retry by a time budget, whose clock starts
		// again on resume: the resumed run does as the log says, not as a fresh budget would.
		// Any other agent there is a divergence, which dispatchLocked reports.
		if next, ok := r.replay.target(r.nextID(t)); ok && next != c.d.TargetAgent {
			nf := f
			nf.Attempt = math.MaxInt
			if alt := policy.Decide(r.pol, nf, rnd); alt.Kind == policy.Fallback && alt.Agent == next {
				act = alt
			}
		}
	}
	switch act.Kind {
	case policy.Retry:
		if r.ending() {
			break
		}
		t.attempt++
		next := r.nextID(t)
		r.emitLocked(troupe.Event{Stage: troupe.StageExecute, Kind: troupe.KindRetryScheduled, Step: t.step, DispatchID: next, Agent: res.AgentName,
			Data: &troupe.RetryScheduled{Attempt: int(t.attempt), Backoff: act.Backoff, Reason: act.Reason, NextID: next, PreviousID: res.DispatchID}})
		r.dispatchLocked(t, res.AgentName, fmt.Sprintf("retry %d of %s: %s", t.attempt, res.AgentName, firstError(res)), act.Backoff)
		return
	case policy.Fallback:
		if r.ending() {
			break
		}
		t.fbUsed++
		t.attempt = 1
		x := r.more()
		if x.fallbacks == nil {
			x.fallbacks = make(map[string]string)
		}
		x.fallbacks[t.decision.Target] = act.Agent
		d := &troupe.RoutingDecision{Target: act.Agent, Reason: fmt.Sprintf("fallback for %s, which failed: %s", res.AgentName, firstError(res)),
			Metadata: map[string]any{"primary": t.decision.Target, "fallback_index": int(t.fbUsed)}}
		r.emitLocked(troupe.Event{Stage: troupe.StageRoute, Kind: troupe.KindRouteDecided, Step: t.step, DispatchID: r.nextID(t), Agent: act.Agent, Data: d})
		r.dispatchLocked(t, act.Agent, d.Reason, 0)
		return
	case policy.UsePartial:
		r.warnLocked(fmt.Sprintf("%s: timed out; its partial result is used", res.AgentName))
		r.succeedLocked(c, true)
		return
	case policy.FailRun:
		info := troupe.ErrorInfo{Code: troupe.CodeAgentError, Message: firstError(res)}
		if len(res.Errors) > 0 {
			info = res.Errors[0]
		}
		causes := []error{info.Err()}
		if budgetStopped { // the budget is why no retry or fallback could recover it
			causes = append(causes, troupe.ErrBudgetExhausted)
		}
		info.Message = res.AgentName + ": " + info.Message
		r.failLocked(troupe.StageExecute, info, act.Reason, causes...)
	}
	t.final = res
}

func firstError(res *troupe.Result) string {
	if len(res.Errors) > 0 {
		return res.Errors[0].Message
	}
	return string(res.Status)
}

// succeedLocked records a usable result: session state writes, upstream results.
func (r *Run) succeedLocked(c *call, partial bool) {
	t, res := c.t, c.res
	t.final, t.partial = res, partial
	if len(c.spec.Writes) > 0 {
		r.writeStateLocked(c)
	}
	if r.upstream == nil && r.plan != nil {
		// Made with the first result, not the plan: a run blocked in its first agents holds none.
		r.upstream = make([]troupe.UpstreamResult, 0, r.plan.NumTasks())
	}
	if len(r.stages[r.stage]) > 1 {
		x := r.more()
		if x.seg == nil {
			x.seg = make([]upPos, 0, len(r.stages[r.stage]))
		}
		x.seg = append(x.seg, upPos{index: t.index, pos: len(r.upstream)})
	}
	r.upstream = append(r.upstream, troupe.UpstreamResult{Agent: res.AgentName, Result: res.AgentResult, DispatchID: res.DispatchID,
		Confidence: res.Confidence, Summary: res.Summary(), Handoff: res.Handoff})
}

// writeStateLocked applies the session state writes the agent declared and records them.
//
//go:noinline
func (r *Run) writeStateLocked(c *call) {
	t, res := c.t, c.res
	var delta map[string]any
	for _, k := range c.spec.Writes {
		if v, ok := res.AgentResult[k]; ok {
			if delta == nil {
				delta = make(map[string]any, len(c.spec.Writes))
			}
			delta[k] = v
		}
	}
	if delta != nil {
		switch {
		case len(r.stages[t.step-1]) > 1:
			// Others of this stage may still read the state: they keep reading it as the stage
			// began, and the write goes to a copy.
			x := r.more()
			if !x.stageSnap {
				x.stageState, x.stageSnap = r.state, true
			}
			apply := r.sameStageWritesLocked(x, t.index, res.AgentName, delta)
			next := make(map[string]any, len(r.state)+len(delta))
			maps.Copy(next, r.state)
			maps.Copy(next, apply)
			r.state = next
		case r.state == nil:
			r.state = make(map[string]any, len(delta))
			maps.Copy(r.state, delta)
		default:
			maps.Copy(r.state, delta)
		}
		r.emitLocked(troupe.Event{Stage: troupe.StageExecute, Kind: troupe.KindStateDelta, Step: t.step, DispatchID: res.DispatchID, Agent: res.AgentName, Data: &troupe.StateDelta{Set: delta}})
	}
}

// silentWritersLocked names, for a STATE_MISSING failure, the agents of the run that
// completed declaring they write one of the missing keys without writing it: the reader is
// the one that fails, but the fault is theirs. It returns "" when there are none (the writers
// have not run, or there are none).
//
//go:noinline
func (r *Run) silentWritersLocked(missing []string) string {
	var out []string
	for _, u := range r.upstream {
		spec, ok := r.e.reg.Spec(u.Agent)
		if !ok {
			continue
		}
		var lacked []string
		for _, k := range missing {
			if _, wrote := u.Result[k]; slices.Contains(spec.Writes, k) && !wrote {
				lacked = append(lacked, k)
			}
		}
		if lacked != nil {
			out = append(out, fmt.Sprintf("%s completed without %s, which it declares it writes", u.Agent, strings.Join(lacked, ", ")))
		}
	}
	if out == nil {
		return ""
	}
	return " (" + strings.Join(out, "; ") + ")"
}

// stageWrite is a session state write of an agent of a stage of several.
type stageWrite struct {
	agent string
	index int // the task's place in the plan
	value any
}

// sameStageWritesLocked notes delta, the session state writes of the agent of task index in
// the current stage of several, and returns those of them to apply: all but the keys a task
// later in the plan has written already. So, of the writes of one stage to a key, the one
// later in the plan stands, whichever finished last, as it does on resume.
func (r *Run) sameStageWritesLocked(x *runRare, index int, agent string, delta map[string]any) map[string]any {
	if x.stageWriters == nil {
		x.stageWriters = make(map[string][]stageWrite, len(delta))
	}
	apply := delta
	for k, v := range delta {
		ws := x.stageWriters[k]
		if slices.ContainsFunc(ws, func(w stageWrite) bool { return w.index > index }) {
			if len(apply) == len(delta) {
				apply = maps.Clone(delta)
			}
			delete(apply, k)
		}
		x.stageWriters[k] = append(ws, stageWrite{agent: agent, index: index, value: v})
	}
	return apply
}

// stageWritesWarnLocked warns, as a stage ends, of each key agents of it wrote different
// values to, naming them in plan order with their values and the one that stands (the last in
// the plan), and forgets the stage's writes. What it says does not depend on the order the
// agents finished in. A plan that needs another order puts the writers in stages one after
// the other, or declares after.
//
//go:noinline
func (r *Run) stageWritesWarnLocked() {
	x := r.rare
	if x == nil || len(x.stageWriters) == 0 {
		return
	}
	for _, k := range slices.Sorted(maps.Keys(x.stageWriters)) {
		ws := slices.SortedStableFunc(slices.Values(x.stageWriters[k]), func(a, b stageWrite) int { return a.index - b.index })
		if !slices.ContainsFunc(ws[1:], func(w stageWrite) bool { return !jsonvalue.Equal(ws[0].value, w.value) }) {
			continue
		}
		names, values := make([]string, len(ws)), make([]string, len(ws))
		for i, w := range ws {
			names[i], values[i] = w.agent, jsonvalue.Brief(w.value, 40)
		}
		who := strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
		r.warnLocked(fmt.Sprintf("%s, in one stage, wrote different values to session state %q (%s): %s's, the last in the plan, stands",
			who, k, strings.Join(values, ", "), names[len(names)-1]))
	}
	x.stageWriters = nil
}

// failLocked marks the run failed: nothing new starts and in-flight dispatches are cancelled.
// causes are the errors behind the failure, which Wait's error unwraps to.
func (r *Run) failLocked(stage troupe.Stage, info troupe.ErrorInfo, reason string, causes ...error) {
	if r.failure != nil {
		return
	}
	r.failure = &info
	x := r.more()
	x.failReason = reason
	if len(causes) > 0 {
		x.failCause = &runFailure{msg: info.Message, errs: causes}
	}
	r.failStage = stage
	r.stop(errFailFast)
}

var errFailFast = errors.New("engine: cancelled, as the run failed")

// claimFinishLocked reports whether the caller must run the closing sequence: the run has no
// work in flight and nothing more to start, and nobody claimed it yet.
func (r *Run) claimFinishLocked() bool {
	if r.finishing || r.inflight > 0 {
		return false
	}
	if !r.stopping() && r.stage < len(r.stages) {
		return false
	}
	r.finishing = true
	return true
}

// finish aggregates, tears agents down and appends the terminal event (or run_paused).
func (r *Run) finish() {
	r.mu.Lock()
	r.now = r.e.exec.Now()
	var out troupe.Outcome
	var stage troupe.Stage
	var kind troupe.Kind
	aggregateIt := false
	if x := r.replay; x != nil && x.budgetWhy != "" && !r.budgetHit && r.err == nil {
		// The log records the budget spent after every result this run took from it (by a
		// composite's member, or just before the process died): the run ends with it spent.
		r.budgetFromLogLocked()
	}
	switch {
	case r.err != nil:
		// The log is broken: nothing more can be recorded.
	case r.failure != nil:
		out = troupe.Outcome{Status: troupe.RunFailed, Error: r.failure}
		stage, kind = troupe.StageFailed, troupe.KindRunFailed
		aggregateIt = r.failStage == troupe.StageExecute
	case r.ctxErr() != nil:
		out = troupe.Outcome{Status: troupe.RunCancelled, Error: &troupe.ErrorInfo{Code: troupe.CodeCancelled, Message: r.ctxCauseText()}}
		stage, kind = troupe.StageCancelled, troupe.KindRunCancelled
	case r.pausing:
		out = troupe.Outcome{Status: troupe.RunPaused, Questions: slices.Clone(r.rareOr().questions)}
		stage, kind = troupe.StagePaused, troupe.KindRunPaused
	default:
		succeeded, total := r.tally()
		v := policy.Judge(r.pol, succeeded, total)
		aggregateIt = true
		if v.OK {
			out = troupe.Outcome{Status: troupe.RunCompleted}
			stage, kind = troupe.StageComplete, troupe.KindRunCompleted
			if v.Reason != "" {
				r.warnLocked(v.Reason)
			}
		} else {
			r.judgedFailedLocked(v.Reason)
			out = troupe.Outcome{Status: troupe.RunFailed, Error: r.failure}
			stage, kind = troupe.StageFailed, troupe.KindRunFailed
		}
	}
	if kind != "" && kind != troupe.KindRunPaused && r.err == nil && r.pausing {
		r.endPausedLocked()
	}
	var closed []string
	if kind != "" && kind != troupe.KindRunPaused && r.err == nil && r.replay != nil {
		closed = r.closeOpenLocked(out.Error)
	}
	if aggregateIt && r.err == nil {
		r.status = troupe.RunAggregating
		r.aggregateLocked()
	}
	r.now = time.Time{}
	r.flushLocked()
	r.mu.Unlock()

	warns := r.teardown()

	r.mu.Lock()
	if kind != "" && r.err == nil {
		r.warnLocked(warns...)
		out.Fallback = maps.Clone(r.rareOr().fallbacks)
		if out.Fallback == nil && out.Status == troupe.RunFailed {
			// 001's compliance test 4: every FAILED event's data says which fallbacks ran.
			out.Fallback = map[string]string{}
		}
		out.Failed, out.Skipped = r.unfinished()
		for _, a := range closed { // started, by the log; not skipped
			if i := slices.Index(out.Skipped, a); i >= 0 {
				out.Skipped = slices.Delete(out.Skipped, i, i+1)
			}
			if !slices.Contains(out.Failed, a) {
				out.Failed = append(out.Failed, a)
			}
		}
		out.Budget = r.rareOr().budgetWhy
		r.status = out.Status
		r.emitLocked(troupe.Event{Stage: stage, Kind: kind, Status: statusOf(out.Status), Data: &out})
	}
	r.flushLocked()
	r.finished = true
	for _, w := range r.watchers {
		select {
		case w <- struct{}{}:
		default:
		}
	}
	r.mu.Unlock()
	r.e.mu.Lock()
	delete(r.e.live, r.rec.req.RunID)
	r.e.mu.Unlock()
	r.stop(nil) // release the run's context
	r.onDoneMu.Lock()
	r.closed = true
	if r.done != nil {
		close(r.done)
	}
	r.onDoneMu.Unlock()
}

// endPausedLocked records how the dispatches waiting for a human's answer ended when the run
// ends failed or cancelled instead of pausing: cancelled, as the answer will never come. A
// terminal log answers every dispatch it started, and the outcome counts these as failed.
//
//go:noinline
func (r *Run) endPausedLocked() {
	x := r.more()
	now := r.nowLocked()
	for i, c := range x.askedBy {
		if slices.Index(x.askedBy, c) < i {
			continue // it asked more than one question
		}
		res := r.endedResultLocked(c.d, now, fmt.Sprintf("%s was waiting for a human's answer to %s when the run ended", c.d.TargetAgent, x.questions[i].ID))
		// What it reported using when it paused (a composite: what its members that finished
		// used; a result under review: what the agent used) was spent: the run's totals count
		// it, as they count a dispatch the run cancels mid-way, and as they would once a
		// resumed run took those members' results from the log. A composite a resumed run
		// made again and kept waiting without running (prepare) used what its members' logged
		// results say (precharge).
		spentSoFar(res, c.work, c.use, now)
		c.paused, c.res = false, res
		if c.t.last == c {
			c.t.final = res
		}
		x.errs = append(x.errs, res.Errors...)
		r.emitLocked(troupe.Event{Stage: troupe.StageExecute, Kind: troupe.KindDispatchFailed, Step: c.t.step, DispatchID: res.DispatchID,
			Agent: res.AgentName, Status: res.Status, Data: res})
	}
	clear(x.askedBy)
	x.questions, x.askedBy, r.pausing = x.questions[:0], x.askedBy[:0], false
}

// endedResultLocked is the result the run records for dispatch d, which it ends unfinished at
// now, saying why: cancelled, with the run's trace id, marked as the run's cancellation when the
// run's caller cancelled it (noteRunCancelLocked).
func (r *Run) endedResultLocked(d *troupe.Dispatch, now time.Time, why string) *troupe.Result {
	res := &troupe.Result{DispatchID: d.DispatchID, SessionID: d.SessionID, QueryID: d.QueryID, AgentName: d.TargetAgent,
		Status: troupe.StatusCancelled, StartedAt: d.DispatchedAt, CompletedAt: now, ExecutionTimeMS: max(now.Sub(d.DispatchedAt).Milliseconds(), 0),
		TraceID: &r.rec.traceID, Errors: []troupe.ErrorInfo{{Code: troupe.CodeCancelled, Message: why}}}
	r.noteRunCancelLocked(res, r.ctxErr() != nil && r.failure == nil)
	return res
}

// closeOpenLocked records, for a resumed run that is ending, each dispatch its log shows
// started, with no result, that it did not make again — nested members of composites first,
// then the plan's: cancelled, as the run ended before running them again, why saying why the
// run ended (nil: it was cancelled, or it completed). Each of the plan's is its task's latest
// dispatch, as one made again would be; it returns the agents of those it found no task of
// (a run that ended before it built its tasks).
//
//go:noinline
func (r *Run) closeOpenLocked(why *troupe.ErrorInfo) []string {
	x := r.replay
	reason := r.ctxCauseText()
	switch {
	case why != nil:
		reason = why.Message
	case r.ctxErr() == nil:
		reason = "it completed"
		if b := r.rareOr().budgetWhy; b != "" {
			reason = b
		}
	}
	now := r.nowLocked()
	closed := func(d *troupe.Dispatch) *troupe.Result {
		return r.endedResultLocked(d, now, "the run ended before running it again: "+reason)
	}
	for _, id := range x.nestedStarted {
		if !x.nestedOpen[id] {
			continue
		}
		d := x.nestedDispatch[id]
		res := closed(d)
		r.emitLocked(troupe.Event{Stage: troupe.StageExecute, Kind: troupe.KindDispatchFailed, Parent: x.nestedParent[id], DispatchID: id,
			Agent: d.TargetAgent, Status: res.Status, Data: res})
		delete(x.nestedOpen, id)
	}
	var agents []string
	for _, s := range x.open() {
		d := s.d
		res := closed(d)
		r.more().errs = append(r.more().errs, res.Errors...)
		r.emitLocked(troupe.Event{Stage: troupe.StageExecute, Kind: troupe.KindDispatchFailed, Step: s.step, DispatchID: d.DispatchID,
			Agent: d.TargetAgent, Status: res.Status, Data: res})
		if t := r.taskOfNextLocked(d.DispatchID); t != nil {
			// Its task's latest dispatch, ended: State and the outcome see it as any other.
			t.last = &call{r: r, t: t, d: d, res: res, prev: t.last}
			t.final = res
			continue
		}
		if !slices.Contains(agents, d.TargetAgent) {
			agents = append(agents, d.TargetAgent)
		}
	}
	return agents
}

// taskOfNextLocked is the task whose next dispatch is id, if any.
func (r *Run) taskOfNextLocked(id string) *task {
	for _, st := range r.stages {
		for _, t := range st {
			if r.nextID(t) == id {
				return t
			}
		}
	}
	return nil
}

func statusOf(s troupe.RunStatus) troupe.Status {
	switch s {
	case troupe.RunCompleted:
		return troupe.StatusCompleted
	case troupe.RunCancelled:
		return troupe.StatusCancelled
	case troupe.RunFailed:
		return troupe.StatusFailed
	}
	return ""
}

// tally counts planned tasks and those that ended with a usable result.
func (r *Run) tally() (succeeded, total int) {
	for _, st := range r.stages {
		for _, t := range st {
			total++
			if t.final != nil && (t.final.Status == troupe.StatusCompleted || t.partial) {
				succeeded++
			}
		}
	}
	return
}

// unfinished lists agents whose final result is not completed, and planned agents never
// dispatched. A task dispatched and still without a result (its agent asked the question a
// paused run waits on) is neither.
func (r *Run) unfinished() (failed, skipped []string) {
	for _, st := range r.stages {
		for _, t := range st {
			switch {
			case t.final != nil && t.final.Status != troupe.StatusCompleted && !t.partial:
				failed = append(failed, t.final.AgentName)
			case t.final == nil && t.last == nil:
				skipped = append(skipped, t.name())
			}
		}
	}
	return
}

// judgedFailedLocked records the failure of a run whose results fall short of its error
// policy (min_success_rate, allow_partial_results; reason says which). When the budget kept
// planned agents from being dispatched, the budget is why, and the failure says so: code
// BUDGET, the budget spent and the agents it skipped.
//
//go:noinline
func (r *Run) judgedFailedLocked(reason string) {
	var causes []error
	var never []string
	for _, st := range r.stages {
		for _, t := range st {
			switch {
			case t.last == nil:
				never = append(never, t.name())
			case t.final != nil && t.final.Status != troupe.StatusCompleted && !t.partial && len(t.final.Errors) > 0:
				causes = append(causes, t.final.Errors[0].Err())
			}
		}
	}
	info := troupe.ErrorInfo{Code: troupe.CodeAgentError, Message: reason}
	failReason := reason
	if x := r.rareOr(); r.budgetHit && len(never) > 0 {
		info = troupe.ErrorInfo{Code: troupe.CodeBudget,
			Message: fmt.Sprintf("%s, so %s never ran: %s", x.budgetWhy, strings.Join(never, ", "), reason)}
		failReason = "budget exhausted"
		causes = append([]error{troupe.ErrBudgetExhausted}, causes...)
	}
	r.failure, r.failStage = &info, troupe.StageAggregate
	x := r.more()
	x.failReason = failReason
	if len(causes) > 0 {
		x.failCause = &runFailure{msg: info.Message, errs: causes}
	}
}

func (r *Run) aggregateLocked() {
	r.stageWritesWarnLocked()  // the last stage's, which no next stage followed
	var buf [16]*troupe.Result // Combine does not keep the slice
	results := buf[:0]
	if len(r.upstream) > len(buf) {
		results = make([]*troupe.Result, 0, len(r.upstream))
	}
	for _, st := range r.stages {
		for _, t := range st {
			switch {
			case t.final == nil:
			case t.partial:
				// on_timeout use_partial: the log keeps the timeout; aggregation combines the
				// partial result it decided to use.
				p := *t.final
				p.Status = troupe.StatusCompleted
				p.Warnings = append(slices.Clip(p.Warnings), "partial result: the agent timed out")
				results = append(results, &p)
			default:
				results = append(results, t.final)
			}
		}
	}
	// The execution order is the completion order (upstream results are appended in it). When
	// it is the order of results, as in a chain, Combine derives the same from results.
	var order []string
	if len(r.upstream) != len(results) || !slices.EqualFunc(r.upstream, results, func(u troupe.UpstreamResult, res *troupe.Result) bool {
		return u.Agent == res.AgentName
	}) {
		order = make([]string, len(r.upstream))
		for i, u := range r.upstream {
			order[i] = u.Agent
		}
	}
	agg, err := aggregate.Combine(results, aggregate.Options{Strategy: r.e.strategy, ExecutionOrder: order,
		TotalExecutionTimeMS: r.activeLocked(r.now).Milliseconds()})
	if err != nil {
		r.warnLocked("aggregation: " + err.Error())
		return
	}
	if c := r.criteria(); c != nil && len(results) > 0 {
		lowConfidence(agg, results, c.Threshold())
	}
	x := r.rareOr()
	agg.Warnings = append(agg.Warnings, x.warnings...)
	// The run's totals are what it spent: its final results' (Combine's), the attempts a retry
	// or a fallback superseded, and its routing's.
	tokens, cost := x.routeTokens, x.routeCost
	tokSeen, costSeen := tokens > 0, cost > 0
	for _, st := range r.stages {
		for _, t := range st {
			for c := t.last; c != nil; c = c.prev {
				if res := c.res; res != nil && res != t.final {
					if res.TokensUsed != nil {
						tokens, tokSeen = tokens+*res.TokensUsed, true
					}
					if res.CostDollars != nil {
						cost, costSeen = cost+*res.CostDollars, true
					}
				}
			}
		}
	}
	if tokSeen {
		n := tokens // not tokens' own address, which would put it on the heap in every run
		if agg.TotalTokensUsed != nil {
			n += *agg.TotalTokensUsed
		}
		agg.TotalTokensUsed = &n
	}
	if costSeen {
		c := cost
		if agg.TotalCostDollars != nil {
			c += *agg.TotalCostDollars
		}
		agg.TotalCostDollars = &c
	}
	r.agg = agg
	r.emitLocked(troupe.Event{Stage: troupe.StageAggregate, Kind: troupe.KindRunAggregated, Data: agg})
}

// criteria are the run's selection criteria: the plan's (the planner's reading of the
// request), else the request's own, which a planner that records none still planned for; nil
// when neither has any.
func (r *Run) criteria() *troupe.SelectionCriteria {
	if r.plan != nil && r.plan.Criteria != nil {
		return r.plan.Criteria
	}
	return r.rec.req.Criteria
}

// lowConfidence warns when the answer's overall confidence is under the request's confidence
// threshold, seed 000's "minimum acceptable confidence": planning used it to choose agents,
// and the answer is held to it too, naming the agents below it. The answer stands, with the
// warning; a policy that needs more can fail such runs with a guardrail.
//
//go:noinline
func lowConfidence(agg *troupe.Aggregation, results []*troupe.Result, threshold float64) {
	if agg.OverallConfidence >= threshold {
		return
	}
	var low []string
	for _, res := range results {
		if c := res.Confidence; c != nil && *c < threshold {
			low = append(low, fmt.Sprintf("%s %.2f", res.AgentName, *c))
		}
	}
	msg := fmt.Sprintf("overall confidence %.2f is under the confidence threshold %.2f", agg.OverallConfidence, threshold)
	if len(low) > 0 {
		msg += ": " + strings.Join(low, ", ")
	}
	agg.Warnings = append(agg.Warnings, msg)
}

// State returns a snapshot of the run's seed-000 orchestrator state, at any point of the run.
// Its maps and slices are the caller's: changing them changes nothing of the run. The
// dispatches, results, aggregation and session-state values they hold are the run's own
// records, the very ones its events carry, and are shared read-only, as events' data are:
// modify a copy (OrchestratorState.Clone, Result.Clone), never them. Copying every record
// on every call would make Wait cost more than the run it waits for.
func (r *Run) State() troupe.OrchestratorState {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stateLocked()
}

// stateLocked is State for a caller that holds r.mu.
func (r *Run) stateLocked() troupe.OrchestratorState {
	started := r.startedAt
	if x := r.replay; x != nil && !x.firstAt.IsZero() {
		started = x.firstAt // a resumed run started when it first did
	}
	s := troupe.OrchestratorState{
		RunID: r.rec.req.RunID, SessionID: r.rec.req.SessionID, QueryID: r.rec.req.QueryID,
		CurrentStage: r.stage, StartedAt: started, UpdatedAt: r.updatedAt,
		TotalExecutionTimeMS: r.activeLocked(r.updatedAt).Milliseconds(),
		DispatchedAgents:     map[string]*troupe.Dispatch{}, CompletedAgents: map[string]*troupe.Result{}, FailedAgents: map[string]*troupe.Result{},
		Errors: slices.Clone(r.rareOr().errs), Warnings: slices.Clone(r.rareOr().warnings), Status: r.status,
		SessionState: maps.Clone(r.state), Aggregation: r.agg,
	}
	if s.Errors == nil {
		s.Errors = []troupe.ErrorInfo{}
	}
	if s.Warnings == nil {
		s.Warnings = []string{}
	}
	if r.failure != nil {
		s.Errors = append(s.Errors, *r.failure)
	}
	if r.plan != nil {
		s.ExecutionPlan = r.plan.ExecutionPlan()
	}
	for _, st := range r.stages {
		for _, t := range st {
			// The latest dispatch to each agent: a task's attempts oldest first, so that its
			// retries and fallbacks overwrite what came before them, and later tasks (later
			// stages; in one stage, later in the plan, as with state writes) overwrite earlier
			// ones, as CompletedAgents and FailedAgents hold an agent's latest result.
			noteDispatches(s.DispatchedAgents, t.last)
			switch {
			case t.final == nil:
			case t.final.Status == troupe.StatusCompleted || t.partial:
				// A timeout whose partial result on_timeout use_partial used completed its
				// task, as tally and unfinished count it: its record, the timeout the log
				// keeps, holds that result.
				s.CompletedAgents[t.final.AgentName] = t.final
				delete(s.FailedAgents, t.final.AgentName) // an earlier task's, superseded
			default:
				s.FailedAgents[t.final.AgentName] = t.final
				delete(s.CompletedAgents, t.final.AgentName)
			}
		}
	}
	// An agent that failed and that a fallback replaced failed too, though its task completed:
	// its latest failed result (of the latest task, its latest attempt), unless its latest
	// task result completed.
	var attempts []*call
	for _, st := range r.stages {
		for _, t := range st {
			attempts = attempts[:0]
			for c := t.last; c != nil; c = c.prev {
				attempts = append(attempts, c)
			}
			for _, c := range slices.Backward(attempts) { // oldest first: later ones overwrite
				res := c.res
				if res == nil || res.Status == troupe.StatusCompleted || c.paused {
					continue // a dispatch waiting for a human's answer has not failed
				}
				if _, ok := s.CompletedAgents[res.AgentName]; !ok {
					s.FailedAgents[res.AgentName] = res
				}
			}
		}
	}
	return s
}

// activeLocked is how long the run has been active by now: since it started or was resumed
// and, for a resumed run, the stretches its log shows it active before, not the time it lay
// crashed or paused for a human (what its time budget counts).
func (r *Run) activeLocked(now time.Time) time.Duration {
	d := now.Sub(r.startedAt)
	if x := r.replay; x != nil {
		d += x.activeBefore
	}
	return d
}

// noteDispatches records the dispatches of a task's chain, which ends at c, oldest first.
func noteDispatches(m map[string]*troupe.Dispatch, c *call) {
	if c == nil {
		return
	}
	noteDispatches(m, c.prev)
	m[c.d.TargetAgent] = c.d
}

// Aggregation returns the run's aggregation once it has one: the run's own record, shared
// read-only as State's are (Aggregation.Clone gives a copy to modify).
func (r *Run) Aggregation() *troupe.Aggregation {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.agg
}

// Err returns the error that stopped the run from being recorded, if any.
func (r *Run) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

var _ local.DoneNotifier = (*runCtx)(nil) // the local executor's cheap way to watch a run

// retryAfter reads the wait an agent's service asked for from an error's details
// (retry_after_seconds, as the HTTP agent records a Retry-After header).
func retryAfter(e troupe.ErrorInfo) time.Duration {
	switch v := e.Details["retry_after_seconds"].(type) {
	case float64:
		if v > 0 {
			return time.Duration(v * float64(time.Second))
		}
	case int:
		if v > 0 {
			return time.Duration(v) * time.Second
		}
	case int64:
		if v > 0 {
			return time.Duration(v) * time.Second
		}
	}
	return 0
}
