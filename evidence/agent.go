package evidence

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/bundle"
	"github.com/troupehq/troupe/internal/stray"
)

// Event kinds the bundle emits through Dispatch.Progress (seed 004). Every payload is a
// map[string]any with "source" set to the bundle's name — seed 004's metadata.source; a
// troupe event has no metadata member, and its agent is the bundle's too — redacted before it
// is emitted.
const (
	EventReplicateStarted  = "replicate_started"  // replicate, seed
	EventReplicateDone     = "replicate_done"     // replicate, seed, status, valid, usage, errors
	EventReplicateProgress = "replicate_progress" // replicate, kind, data: a sub-agent's own progress
	EventPartialSummary    = "partial_summary"    // after the first two: distance, confidence, early_stop; reason when both failed
	EventBundleReady       = "bundle_ready"       // k, confidence, early_stop, truncated, bytes
	EventWarning           = "warning"            // message (validation errors, truncation, budget, lint findings)
	EventCancelled         = "cancelled"          // replicate, reason: a straggler cancelled
	EventTimeout           = "timeout"            // replicate, timeout_seconds
)

// Where a sub-agent finds its replicate's seed: Dispatch.UserContext["seed"] (an int64) and
// ["replicate"] (its id, "r1"…), and ReplicateFrom(ctx).
const (
	SeedKey      = "seed"
	ReplicateKey = "replicate"
	// BundleDispatchKey holds the bundle's own dispatch id: each replicate's dispatch has an
	// id of its own, derived from it (see replicaID).
	BundleDispatchKey = "bundle_dispatch_id"
)

// Replicate identifies the replicate a sub-agent is running as.
type Replicate struct {
	ID    string // r1, r2, …
	Index int    // 0-based
	Seed  int64
}

type replicateKey struct{}

// ReplicateFrom returns the replicate a sub-agent's context belongs to.
func ReplicateFrom(ctx context.Context) (Replicate, bool) {
	r, ok := ctx.Value(replicateKey{}).(Replicate)
	return r, ok
}

// Agent runs a sub-agent as K isolated replicates and returns their Evidence Bundle. Build it
// with New or Bundle (the zero value is not usable); it is immutable and safe for concurrent
// use, provided the sub-agent is.
type Agent struct {
	sub troupe.Agent
	s   *settings
	// stragglers are replicates left running past their deadline (a sub-agent that ignores
	// its context): Teardown waits for them.
	stragglers stray.Tracker
}

// New validates cfg and returns the bundle agent over sub.
func New(sub troupe.Agent, cfg Config) (*Agent, error) {
	if sub == nil {
		return nil, errors.New("evidence: sub-agent is nil")
	}
	s, err := cfg.settle()
	if err != nil {
		return nil, err
	}
	return &Agent{sub: sub, s: s}, nil
}

// Bundle returns the bundle agent over sub: replicate-and-decide, validation, statistics,
// budgets, events and lints as cfg says. An invalid cfg gives an agent whose every dispatch
// fails with the configuration error (use New to see the error at once).
func Bundle(sub troupe.Agent, cfg Config) troupe.Agent {
	a, err := New(sub, cfg)
	if err != nil {
		return troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
			return nil, &troupe.AgentError{Code: troupe.CodeAgentError, Message: "invalid bundle configuration", Cause: err}
		})
	}
	return a
}

// Setup sets the sub-agent up when it needs it.
func (a *Agent) Setup(ctx context.Context) error {
	if s, ok := a.sub.(troupe.Setupper); ok {
		return s.Setup(ctx)
	}
	return nil
}

// Teardown waits for replicates left running past their deadline (see Config's Replicate
// timeout), or until ctx ends, then tears the sub-agent down when it needs it. The engine calls
// it when a run ends; a program that runs the agent itself calls it before it exits.
func (a *Agent) Teardown(ctx context.Context) error {
	var waited error
	if n, err := a.stragglers.Wait(ctx); err != nil {
		waited = fmt.Errorf("evidence: %d replicates still running past their deadline: %w", n, err)
	}
	if t, ok := a.sub.(troupe.Teardowner); ok {
		return errors.Join(waited, t.Teardown(ctx)) // torn down whatever the stragglers do
	}
	return waited
}

// abandonGrace is how long a replicate past its deadline (or cancelled) has to return before
// it is recorded as it would be had it returned, and left running: a sub-agent that honours
// its context returns within it, and its own result (with what it spent) is recorded.
const abandonGrace = stray.Grace

var (
	errStraggler = errors.New("evidence: straggler cancelled")
	errBudget    = errors.New("evidence: bundle budget spent")
	errReplTime  = errors.New("evidence: replicate timed out")
)

// outcome is what a replicate's goroutine reports.
type outcome struct {
	i   int
	res *troupe.Result
	err error
}

// run is one dispatch of the bundle agent; only the goroutine of Run touches it, except the
// channels and what mu guards.
type run struct {
	a       *Agent
	s       *settings
	d       *troupe.Dispatch
	name    string
	ctx     context.Context
	results chan outcome
	lints   chan finding
	cancels []context.CancelCauseFunc
	causes  []error // why we cancelled replicate i, if we did
	in      []bundle.Input
	fails   []troupe.ErrorInfo // why replicate i did not complete, as its sub-agent or the bundle says; zero when it did
	ran     []bool
	done    []bool
	pending int
	lintWG  sync.WaitGroup
	lintCtx context.Context

	// A replicate whose context ends is given abandonGrace to return; one that does not is
	// recorded as if it had returned and left running (abandoned). rctxs are the replicates'
	// contexts, exits closed when their goroutines return; expired and abandon carry indexes
	// (each buffered for every replicate: no send ever blocks).
	rctxs     []context.Context
	exits     []chan struct{}
	expired   chan int
	abandon   chan int
	abandoned []bool
	timers    []func() bool // stops of each replicate's context watch and grace timer

	// mu guards ended, set as Run returns: an abandoned replicate's runtime then no longer
	// reaches the bundle's dispatch, which belongs to the engine again.
	mu    sync.RWMutex
	ended bool

	stopAfter <-chan time.Time
	timeUp    bool
	budget    time.Duration

	models []string // model_used of each replicate's result
	// asked[i] says replicate i completed with requires_human: the bundle's result asks for a
	// human's review when a valid replicate it answers with did.
	asked    []bool
	tokens   int64
	cost     float64
	costCap  float64
	warnings []string
}

// Run replicates the sub-agent and returns the bundle as the result's agent_result.
func (a *Agent) Run(ctx context.Context, d *troupe.Dispatch) (res *troupe.Result, err error) {
	s := a.s
	name := s.Name
	if name == "" {
		name = d.TargetAgent
	}
	if name == "" {
		name = "bundle"
	}
	budget := s.Budget.Timeout
	if dt := d.Timeout(); dt > 0 {
		// Keep a tenth of the dispatch's own timeout (at most a second) to build the bundle
		// before the dispatch's deadline, and no less than a replicate that ignores its
		// context is given before it is abandoned (twice abandonGrace), up to half of it.
		reserve := min(max(min(dt/10, time.Second), 2*abandonGrace), dt/2)
		if lim := dt - reserve; lim < budget {
			budget = lim
		}
	}
	bctx, cancel := context.WithTimeoutCause(ctx, budget, errBudget)
	defer cancel()
	lintCtx, cancelLints := context.WithCancel(bctx)
	r := &run{a: a, s: s, d: d, name: name, ctx: bctx, lintCtx: lintCtx,
		results: make(chan outcome, s.K),
		lints:   make(chan finding, s.K*len(s.Lints)),
		cancels: make([]context.CancelCauseFunc, s.K), causes: make([]error, s.K),
		in: make([]bundle.Input, s.K), fails: make([]troupe.ErrorInfo, s.K), ran: make([]bool, s.K), done: make([]bool, s.K), models: make([]string, s.K), asked: make([]bool, s.K),
		rctxs: make([]context.Context, s.K), exits: make([]chan struct{}, s.K), abandoned: make([]bool, s.K),
		expired: make(chan int, s.K), abandon: make(chan int, s.K),
		costCap: s.Budget.CostDollars, budget: budget}
	if d.MaxCostDollars != nil && *d.MaxCostDollars < r.costCap {
		r.costCap = *d.MaxCostDollars
	}
	defer func() {
		// Structured: every replicate and lint goroutine has returned before Run does, but an
		// abandoned replicate, which Teardown waits for.
		for i := range r.cancels {
			if r.cancels[i] != nil {
				r.cancels[i](context.Canceled)
			}
		}
		for _, stop := range r.timers {
			stop()
		}
		for i, exit := range r.exits {
			if exit != nil && !r.abandoned[i] {
				<-exit
			}
		}
		r.mu.Lock()
		r.ended = true
		r.mu.Unlock()
		// The bundle is ready: lints still running are cancelled, not waited for to finish
		// their work. What they report on the way out still arrives, after bundle_ready.
		cancelLints()
		r.lintWG.Wait()
		r.drainLints()
		if res != nil {
			res.Warnings = r.warnings
		}
	}()

	if s.Stop.After > 0 {
		t := time.NewTimer(s.Stop.After)
		defer t.Stop()
		r.stopAfter = t.C
	}

	// Replicate-and-decide: two first, then the rest unless they agree within epsilon, or both
	// failed on the input itself (bothFailed).
	r.launch(0)
	r.launch(1)
	r.collect(2)
	earlyStop := false
	if ctx.Err() == nil {
		// Decided on the distance as the bundle reports it (six decimals), so that a distance
		// shown equal to epsilon stops, whatever the last bits of the floating-point difference;
		// and shown as the bundle shows it: a replicate without data is at distance 1.
		partial := bundle.Summarize(r.in[:2], bundle.Options{Schema: s.schema})
		dist := partial.PairwiseDistance[0][1]
		both := r.in[0].Valid() && r.in[1].Valid()
		earlyStop = both && dist <= s.Epsilon
		ps := map[string]any{"replicates": []string{"r1", "r2"}, "distance": dist,
			"confidence": partial.Confidence, "epsilon": s.Epsilon, "early_stop": earlyStop}
		failed, futile, why := r.bothFailed()
		if failed {
			// Failed, they neither agree nor disagree, whatever their distance: the event says what
			// happened instead.
			ps["reason"] = why
		}
		r.emit(EventPartialSummary, ps)
		if !earlyStop {
			r.recordPartial()
		}
		if futile && s.K > 2 {
			// The result says why it holds fewer replicates than k; partial_summary has
			// said so as it happened, so no warning event repeats it.
			r.warnings = append(r.warnings, s.red.String(why))
		}
		if !earlyStop && !futile && r.bctxLive() {
			for i := 2; i < s.K; i++ {
				if err := d.Admit(); err != nil { // the run's own budgets, beyond the bundle's
					r.warn(fmt.Sprintf("%v: not starting replicates r%d to r%d", err, i+1, s.K))
					break
				}
				if why := r.stopReason(); why != "" {
					r.warn(fmt.Sprintf("%s: not starting replicates r%d to r%d", why, i+1, s.K))
					break
				}
				r.launch(i)
			}
			r.collect(0)
		}
	}
	if err := ctx.Err(); err != nil {
		// The run was cancelled or the dispatch timed out: there is nobody to hand a bundle to,
		// but what the replicates used is reported beside the error.
		return r.spent(), context.Cause(ctx)
	}
	return r.finish(earlyStop)
}

// bothFailed says whether the first two replicates both failed — neither completed, so neither
// has an answer whose distance from the other means anything — and, when they did, why
// (partial_summary's reason) and whether the rest are futile.
//
// They are futile when both failed with the same error code and neither failure is
// recoverable (seed 003's contract: a retry cannot help), as INVALID_INPUT is: every
// replicate gets a copy of the same dispatch, differing only in its seed, so the rest would
// fail on the same input the same way, spending their share of the budget and the run's time
// to say so again. The bundle then runs no more, and, having no output, fails with that code
// (see finish). A recoverable failure (a timeout, a transient error, a sub-agent's plain
// error), or two failures that differ, may not repeat with another seed, so the rest still
// run, as when the two disagree: they may yet produce evidence.
func (r *run) bothFailed() (failed, futile bool, why string) {
	a, b := r.in[0], r.in[1]
	if a.Status == "completed" || b.Status == "completed" {
		return false, false, ""
	}
	fa, fb := r.failure(0), r.failure(1)
	what := fa
	if fa != fb {
		what = a.ID + " " + fa + "; " + b.ID + " " + fb
	}
	ea, eb := r.fails[0], r.fails[1]
	futile = ea.Code != "" && ea.Code == eb.Code && !ea.Recoverable && !eb.Recoverable
	var next string
	switch {
	case r.s.K <= 2:
		next = fmt.Sprintf("k = %d, none left to run", r.s.K)
	case futile:
		next = fmt.Sprintf("not running the rest: %s is not recoverable, and every replicate gets the same input", ea.Code)
	case !r.bctxLive():
		next = fmt.Sprintf("not running the rest: %v", context.Cause(r.ctx))
	case ea.Code != eb.Code:
		next = "running the rest: they failed differently, so another seed may succeed"
	default:
		next = fmt.Sprintf("running the rest: %s is recoverable, so another seed may succeed", ea.Code)
	}
	return true, futile, fmt.Sprintf("the first two replicates both failed (%s): %s", what, next)
}

// failure describes why replicate i did not complete: its code and message.
func (r *run) failure(i int) string { return r.fails[i].Code + ": " + r.fails[i].Message }

// recordPartial hands the run the bundle of the first two replicates, so that a dispatch
// that times out under on_timeout=use_partial still yields evidence.
func (r *run) recordPartial() {
	_, out, err := bundle.Build(r.meta(false), r.in[:2], r.s.bundleOptions())
	if err != nil {
		return
	}
	var m map[string]any
	if json.Unmarshal(out, &m) == nil {
		r.d.Partial(m)
	}
}

func (r *run) meta(earlyStop bool) bundle.Meta {
	s := r.s
	task := s.Task
	if task == "" {
		task = r.name
	}
	return bundle.Meta{Task: task, KMax: s.K, Model: r.model(), SchemaVersion: s.SchemaVersion, Epsilon: s.Epsilon, EarlyStop: earlyStop}
}

// model is meta.model: Config.Model, or else the models the replicates report using
// (model_used), distinct, in replicate order, joined by ", " — so that a bundle records for
// replay what produced it even when the configuration does not say.
func (r *run) model() string {
	if r.s.Model != "" {
		return r.s.Model
	}
	var seen []string
	for i, m := range r.models {
		if m != "" && r.ran[i] && !slices.Contains(seen, m) {
			seen = append(seen, m)
		}
	}
	return strings.Join(seen, ", ")
}

func (r *run) bctxLive() bool { return r.ctx.Err() == nil }

// launch starts replicate i on its own deep copy of the dispatch.
func (r *run) launch(i int) {
	s := r.s
	id, seed := "r"+strconv.Itoa(i+1), s.seeds[i]
	r.in[i] = bundle.Input{ID: id, Seed: seed}
	r.ran[i] = true
	if err := r.ctx.Err(); err != nil {
		r.in[i].Status, r.in[i].Errors = "timeout", []string{"bundle budget spent before the replicate started"}
		r.fails[i] = troupe.ErrorInfo{Code: troupe.CodeTimeout, Message: r.in[i].Errors[0], Recoverable: true}
		r.done[i] = true
		return
	}
	sub, err := r.replicaDispatch(i, id, seed)
	if err != nil {
		// Every replicate's copy of the dispatch fails the same way: not recoverable.
		r.in[i].Status, r.in[i].Errors = "failed", []string{err.Error()}
		r.fails[i] = troupe.ErrorInfo{Code: troupe.CodeAgentError, Message: r.in[i].Errors[0]}
		r.done[i] = true
		return
	}
	rctx, cancel := context.WithCancelCause(r.ctx)
	rctx, cancelT := context.WithTimeoutCause(rctx, s.Replicate.Timeout, errReplTime)
	rctx = context.WithValue(rctx, replicateKey{}, Replicate{ID: id, Index: i, Seed: seed})
	r.cancels[i] = cancel
	r.rctxs[i], r.exits[i] = rctx, make(chan struct{})
	unwatch := context.AfterFunc(rctx, func() { r.expired <- i })
	r.timers = append(r.timers, unwatch)
	r.pending++
	r.emit(EventReplicateStarted, map[string]any{"replicate": id, "seed": seed})
	go func() {
		defer r.exit(i)
		defer cancelT()
		res, err := callAgent(rctx, r.a.sub, sub)
		if err == nil && rctx.Err() != nil {
			err = context.Cause(rctx)
		} else if err != nil && rctx.Err() != nil {
			err = fmt.Errorf("%w (%w)", context.Cause(rctx), err)
		}
		// It returned: its context ending now (cancelT, below) is no news.
		unwatch()
		r.results <- outcome{i: i, res: res, err: err} // buffered for every replicate: never blocks
	}()
}

// exit is the last thing replicate i's goroutine does: it says it has returned, and, when it
// was abandoned, that the agent has one straggler fewer. Under mu, so that abandonIfRunning
// sees either a replicate still running or one that has returned, never one in between.
func (r *run) exit(i int) {
	r.mu.Lock()
	abandoned := r.abandoned[i]
	close(r.exits[i])
	r.mu.Unlock()
	if abandoned {
		r.a.stragglers.Done()
	}
}

// abandonIfRunning marks replicate i abandoned, a straggler the agent's Teardown waits for,
// unless its goroutine has returned (its outcome is then on its way, and is taken as usual).
func (r *run) abandonIfRunning(i int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	select {
	case <-r.exits[i]:
		return false
	default:
	}
	r.abandoned[i] = true
	r.a.stragglers.Add()
	return true
}

// callAgent runs the sub-agent, turning a panic into an error: the replicate fails, the
// bundle goes on.
func callAgent(ctx context.Context, a troupe.Agent, d *troupe.Dispatch) (res *troupe.Result, err error) {
	defer func() {
		if v := recover(); v != nil {
			res, err = nil, troupe.NewPanicError(v)
		}
	}()
	return a.Run(ctx, d)
}

// replicaDispatch deep-copies the dispatch — no map or slice is shared between replicates —
// and marks it with the replicate's id and seed.
func (r *run) replicaDispatch(i int, id string, seed int64) (*troupe.Dispatch, error) {
	b, err := json.Marshal(r.d)
	if err != nil {
		return nil, fmt.Errorf("evidence: copy dispatch for %s: %w", id, err)
	}
	sub := new(troupe.Dispatch)
	if err := json.Unmarshal(b, sub); err != nil {
		return nil, fmt.Errorf("evidence: copy dispatch for %s: %w", id, err)
	}
	if sub.UserContext == nil {
		sub.UserContext = map[string]any{}
	}
	sub.UserContext[SeedKey] = seed
	sub.UserContext[ReplicateKey] = id
	sub.UserContext[BundleDispatchKey] = r.d.DispatchID
	// A dispatch id of its own: a sub-agent (or the service behind it) that caches or
	// deduplicates by dispatch id must not hand one replicate's answer to another.
	sub.DispatchID = replicaID(r.d.DispatchID, i)
	secs := r.s.Replicate.Timeout.Seconds()
	if rem := r.d.Timeout(); rem > 0 && rem.Seconds() < secs {
		secs = rem.Seconds()
	}
	sub.TimeoutSeconds = &secs
	share := r.costCap / float64(r.s.K)
	sub.MaxCostDollars = &share
	sub.Bind(&replicaRuntime{r: r, id: id})
	return sub, nil
}

// replicaID derives replicate i's dispatch id from the bundle's, deterministically: an FNV-1a
// hash of the bundle's id and the replicate's index, mixed by a SplitMix64 step.
func replicaID(parent string, i int) string {
	h := uint64(14695981039346656037)
	for j := 0; j < len(parent); j++ {
		h = (h ^ uint64(parent[j])) * 1099511628211
	}
	z := h + uint64(i+1)*0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return troupe.NewDispatchID(z ^ (z >> 31))
}

// collect receives outcomes until none is pending (or until min replicates have finished, when
// min > 0), cancelling stragglers when a stop rule or budget says so.
func (r *run) collect(min int) {
	finished := func() int {
		n := 0
		for i := range r.done {
			if r.ran[i] && r.done[i] {
				n++
			}
		}
		return n
	}
	for r.pending > 0 && (min == 0 || finished() < min) {
		select {
		case o := <-r.results:
			if r.abandoned[o.i] {
				continue // recorded when it was abandoned; what it says now comes too late
			}
			r.pending--
			r.record(o)
			r.cancelStragglers()
		case i := <-r.expired:
			if !r.done[i] {
				t := time.AfterFunc(abandonGrace, func() { r.abandon <- i })
				r.timers = append(r.timers, t.Stop)
			}
		case i := <-r.abandon:
			if !r.done[i] && r.abandonIfRunning(i) {
				// Its deadline or cancellation held: it is recorded as a replicate that
				// returned when told to would be, and left running.
				r.pending--
				r.record(outcome{i: i, err: context.Cause(r.rctxs[i])})
				r.warn(fmt.Sprintf("replicate %s did not return within %v of its context ending (%v); it was left running", r.in[i].ID, abandonGrace, context.Cause(r.rctxs[i])))
				r.cancelStragglers()
			}
		case f := <-r.lints:
			r.lintFinding(f)
		case <-r.stopAfter:
			r.stopAfter, r.timeUp = nil, true
			r.cancelStragglers()
		}
	}
}

// stopReason says why replicates still to finish are no longer needed: the budget is spent, or
// a stop rule holds over the valid replicates finished so far; "" when they are needed.
func (r *run) stopReason() string {
	if why := r.overBudget(); why != "" {
		return why
	}
	valid := make([]bundle.Input, 0, len(r.in))
	for i := range r.in {
		if r.done[i] && r.in[i].Valid() {
			valid = append(valid, r.in[i])
		}
	}
	if len(valid) < 2 {
		return ""
	}
	if r.timeUp {
		return fmt.Sprintf("stop time %v reached with %d valid replicates", r.s.Stop.After, len(valid))
	}
	if q := r.s.Stop.Valid; q > 0 && len(valid) >= q {
		return fmt.Sprintf("%d valid replicates reached the quorum of %d", len(valid), q)
	}
	if r.s.Stop.Confidence > 0 {
		if c := bundle.Confidence(bundle.Matrix(valid, r.s.schema), valid); c >= r.s.Stop.Confidence {
			return fmt.Sprintf("confidence %.4g of %d valid replicates reached the stop threshold %v", c, len(valid), r.s.Stop.Confidence)
		}
	}
	return ""
}

// cancelStragglers cancels the replicates still running when they are no longer needed.
func (r *run) cancelStragglers() {
	if r.pending == 0 {
		return
	}
	reason := r.stopReason()
	if reason == "" {
		return
	}
	for i := range r.in {
		if r.ran[i] && !r.done[i] && r.causes[i] == nil {
			r.causes[i] = fmt.Errorf("%w: %s", errStraggler, reason)
			r.cancels[i](r.causes[i])
			r.emit(EventCancelled, map[string]any{"replicate": r.in[i].ID, "reason": reason})
		}
	}
}

func (r *run) overBudget() string {
	switch {
	case r.tokens >= r.s.Budget.Tokens:
		return fmt.Sprintf("token budget spent (%d of %d)", r.tokens, r.s.Budget.Tokens)
	case r.cost >= r.costCap:
		return fmt.Sprintf("cost budget spent ($%.4f of $%.4f)", r.cost, r.costCap)
	}
	return ""
}

// record turns a replicate's outcome into its bundle input and reports it.
func (r *run) record(o outcome) {
	in := &r.in[o.i]
	r.done[o.i] = true
	var badUsage string
	if o.res != nil {
		if o.res.ModelUsed != nil {
			r.models[o.i] = *o.res.ModelUsed
		}
		if o.res.TokensUsed != nil && *o.res.TokensUsed > 0 {
			in.Usage.Tokens = *o.res.TokensUsed
		}
		if c := o.res.CostDollars; c != nil && (math.IsNaN(*c) || math.IsInf(*c, 0)) {
			// Summed, it would end every budget check (NaN) or every bundle (JSON has no
			// such number): the replicate is invalid, its cost unknown.
			badUsage = fmt.Sprintf("reported cost_dollars %v, which is not a number of dollars", *c)
		} else if c != nil && *c > 0 {
			in.Usage.CostDollars = *c
		}
		r.tokens += in.Usage.Tokens
		r.cost += in.Usage.CostDollars
	}
	redactErr := func(s string) string {
		if r.s.KeepRaw {
			return s
		}
		return r.s.red.String(s)
	}
	// fails[o.i] keeps the failure's code and recoverability, which the bundle's own
	// decisions read (bothFailed, finish); what the bundle did to the replicate (cancelled it,
	// timed it out) says nothing against the input, and is recoverable.
	fail := &r.fails[o.i]
	switch {
	case r.causes[o.i] != nil:
		in.Status, in.Errors = "cancelled", []string{r.causes[o.i].Error()}
		*fail = troupe.ErrorInfo{Code: troupe.CodeCancelled, Message: in.Errors[0], Recoverable: true}
	case o.err != nil && errors.Is(o.err, errReplTime):
		in.Status, in.Errors = "timeout", []string{fmt.Sprintf("timed out after %v", r.s.Replicate.Timeout)}
		*fail = troupe.ErrorInfo{Code: troupe.CodeTimeout, Message: in.Errors[0], Recoverable: true}
		r.emit(EventTimeout, map[string]any{"replicate": in.ID, "timeout_seconds": r.s.Replicate.Timeout.Seconds()})
	case o.err != nil && errors.Is(o.err, errBudget):
		in.Status, in.Errors = "timeout", []string{fmt.Sprintf("bundle budget of %v spent", r.budget)}
		*fail = troupe.ErrorInfo{Code: troupe.CodeTimeout, Message: in.Errors[0], Recoverable: true}
		r.emit(EventTimeout, map[string]any{"replicate": in.ID, "timeout_seconds": r.budget.Seconds(), "budget": true})
	case o.err != nil:
		in.Status, in.Errors = "failed", []string{redactErr(o.err.Error())}
		info := troupe.ErrorInfoOf(o.err)
		*fail = troupe.ErrorInfo{Code: info.Code, Message: redactErr(info.Message), Recoverable: info.Recoverable}
	case o.res == nil:
		in.Status, in.Errors = "failed", []string{"sub-agent returned neither a result nor an error"}
		*fail = troupe.ErrorInfo{Code: troupe.CodeAgentError, Message: in.Errors[0], Recoverable: true}
	case o.res.Status != "" && o.res.Status != troupe.StatusCompleted:
		in.Status = string(o.res.Status)
		for _, e := range o.res.Errors {
			in.Errors = append(in.Errors, redactErr(e.Code+": "+e.Message))
		}
		if len(in.Errors) == 0 {
			in.Errors = []string{"sub-agent ended " + string(o.res.Status)}
		}
		*fail = troupe.ErrorInfo{Code: troupe.CodeAgentError, Message: in.Errors[0], Recoverable: true}
		if len(o.res.Errors) > 0 {
			e := o.res.Errors[0]
			*fail = troupe.ErrorInfo{Code: e.Code, Message: redactErr(e.Message), Recoverable: e.Recoverable}
		}
		// What it handed back anyway is evidence too: an invalid replicate's data, shown in the
		// bundle and its disagreements (seed 004), never in consensus.
		if len(o.res.AgentResult) > 0 {
			if data, err := copyJSON(o.res.AgentResult); err == nil {
				in.Data = data
			}
		}
	default:
		in.Status = "completed"
		r.accept(in, o.res)
		r.asked[o.i] = o.res.RequiresHuman
	}
	if badUsage != "" {
		in.Errors = append(in.Errors, badUsage)
	}
	if len(in.Errors) > maxErrors {
		in.Errors = append(in.Errors[:maxErrors:maxErrors], fmt.Sprintf("and %d more errors", len(in.Errors)-maxErrors))
	}
	valid := in.Valid()
	r.emit(EventReplicateDone, map[string]any{"replicate": in.ID, "seed": in.Seed, "status": in.Status, "valid": valid,
		"usage": map[string]any{"tokens": in.Usage.Tokens, "cost_dollars": in.Usage.CostDollars}, "errors": in.Errors})
	if !valid && in.Data != nil {
		r.warn(fmt.Sprintf("replicate %s is invalid: %v", in.ID, in.Errors))
	}
	if in.Data != nil {
		r.startLints(in.ID, in.Data)
	}
}

const maxErrors = 20

// accept takes a completed replicate's agent_result as its data: a JSON copy (nothing shared
// with the sub-agent), validated against the schema and the token ceiling.
func (r *run) accept(in *bundle.Input, res *troupe.Result) {
	if len(res.AgentResult) == 0 {
		in.Errors = []string{"completed without agent_result"}
		return
	}
	data, err := copyJSON(res.AgentResult)
	if err != nil {
		in.Errors = []string{"agent_result is not JSON: " + err.Error()}
		return
	}
	in.Data = data
	in.Errors = append(in.Errors, r.s.schema.Validate(in.Data)...)
	if in.Usage.Tokens > r.s.Replicate.Tokens {
		in.Errors = append(in.Errors, fmt.Sprintf("used %d tokens, over the replicate ceiling of %d", in.Usage.Tokens, r.s.Replicate.Tokens))
	}
}

// copyJSON copies an agent_result through its JSON encoding: nothing is shared with the
// sub-agent, and numbers are float64 as in any decoded replicate.
func copyJSON(m map[string]any) (any, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, err
	}
	return v, nil
}

// finish builds the bundle and the result.
func (r *run) finish(earlyStop bool) (*troupe.Result, error) {
	s := r.s
	var in []bundle.Input
	for i := range r.in {
		if r.ran[i] {
			in = append(in, r.in[i])
		}
	}
	anyData := false
	for i := range in {
		anyData = anyData || in[i].Data != nil
	}
	if !anyData {
		// Each failure once, with the replicates that failed so ("r1, r2: …"): every replicate
		// gets the same input, and most often fails the same way.
		msg := "no replicate produced output"
		var texts []string
		who := map[string][]string{}
		for i := range in {
			text := strings.Join(in[i].Errors, "; ")
			if text == "" {
				text = cmp.Or(in[i].Status, "completed with no output")
			}
			if _, seen := who[text]; !seen {
				texts = append(texts, text)
			}
			who[text] = append(who[text], in[i].ID)
		}
		for _, text := range texts {
			msg += "; " + strings.Join(who[text], ", ") + ": " + text
		}
		// Replicates that all failed on one error that is not recoverable failed on the input
		// (bothFailed): the bundle's own error says so, so that nobody retries it either.
		code, recoverable := troupe.CodeAgentError, true
		if c := r.fails[0].Code; c != "" && r.ran[0] && !r.fails[0].Recoverable {
			code, recoverable = c, false
			for i := range r.in {
				if r.ran[i] && (r.fails[i].Code != c || r.fails[i].Recoverable) {
					code, recoverable = troupe.CodeAgentError, true
				}
			}
		}
		return r.spent(), &troupe.AgentError{Code: code, Message: r.s.red.String(msg), Recoverable: recoverable}
	}
	b, out, err := bundle.Build(r.meta(earlyStop), in, s.bundleOptions())
	if err != nil {
		return r.spent(), &troupe.AgentError{Code: troupe.CodeAgentError, Message: "evidence bundle could not be built", Cause: err}
	}
	if b.Summary.Truncated {
		r.warn(fmt.Sprintf("bundle truncated to its caps: omitted %s", omittedText(b.Summary.Omitted)))
	}
	var agentResult map[string]any
	if err := json.Unmarshal(out, &agentResult); err != nil {
		return nil, fmt.Errorf("evidence: decode bundle: %w", err)
	}
	conf := b.Summary.Confidence
	r.emit(EventBundleReady, map[string]any{"k": b.Meta.K, "confidence": conf, "early_stop": earlyStop,
		"truncated": b.Summary.Truncated, "bytes": len(out)})
	r.drainLints()
	summary := s.red.String(summaryText(b)) // it names fields: redacted even under KeepRaw, as warnings are
	tokens, cost := b.Meta.Usage.Tokens, b.Meta.Usage.CostDollars
	res := &troupe.Result{Status: troupe.StatusCompleted, AgentResult: agentResult, Confidence: &conf,
		AnalysisSummary: &summary, Warnings: r.warnings, TokensUsed: &tokens, CostDollars: &cost}
	if m := b.Meta.Model; m != "" {
		res.ModelUsed = &m
	}
	for i := range r.in {
		// A valid replicate is evidence the bundle answers with, as a collect_all group's
		// completed branch is: its request for a human's review is the bundle's, so it reaches
		// the run's review. An invalid one's data is shown but vouches for nothing.
		if r.ran[i] && r.asked[i] && r.in[i].Valid() {
			res.RequiresHuman = true
		}
	}
	return res, nil
}

// spent is what a bundle that produced none returns beside its error: what its replicates used
// (the only place it is counted, as in a bundle's result) and its warnings.
func (r *run) spent() *troupe.Result {
	tokens, cost := r.tokens, r.cost
	return &troupe.Result{TokensUsed: &tokens, CostDollars: &cost, Warnings: r.warnings}
}

func omittedText(o *bundle.Omitted) string {
	if o == nil {
		return "nothing"
	}
	return fmt.Sprintf("%d consensus fields, %d disagreements, %d distributions, %d replicates' data",
		o.Consensus, o.Disagreements, o.Distributions, o.ReplicateData)
}

// emit sends a progress event tagged with the bundle's name, redacted.
func (r *run) emit(kind string, data map[string]any) {
	data["source"] = r.name
	r.d.Progress(kind, r.s.red.Value(data))
}

func (r *run) warn(msg string) {
	msg = r.s.red.String(msg)
	r.warnings = append(r.warnings, msg)
	r.emit(EventWarning, map[string]any{"message": msg})
}

// replicaRuntime is what a replicate's dispatch is bound to: it reads session state and asks
// humans through the bundle's dispatch, forwards progress tagged with the replicate, and keeps
// partial results to itself (the bundle is the only result).
type replicaRuntime struct {
	r  *run
	id string
}

// A replicate abandoned past its deadline may still call its runtime after the bundle's Run
// returned: it then reads no state, reports no progress and asks nobody (errBundleEnded).
func (rt *replicaRuntime) State(key string) (any, bool) {
	rt.r.mu.RLock()
	defer rt.r.mu.RUnlock()
	if rt.r.ended {
		return nil, false
	}
	return rt.r.d.State(key)
}

// Admit passes the run's budgets on (troupe.Admitter), so that a composite replicated by the
// bundle stops starting members once the run's budget is spent. Nested events (Emitter) are
// not passed on: the bundle reports its replicates' usage in its own result, once.
func (rt *replicaRuntime) Admit() error {
	rt.r.mu.RLock()
	defer rt.r.mu.RUnlock()
	if rt.r.ended {
		return errBundleEnded
	}
	return rt.r.d.Admit()
}

// RunGuardrails passes the run's guardrails on (troupe.Guarder), so that a composite
// replicated by the bundle checks its members with them.
func (rt *replicaRuntime) RunGuardrails() []troupe.Guardrail {
	rt.r.mu.RLock()
	defer rt.r.mu.RUnlock()
	if rt.r.ended {
		return nil
	}
	return rt.r.d.RunGuardrails()
}

func (rt *replicaRuntime) Progress(kind string, data any) {
	rt.r.mu.RLock()
	defer rt.r.mu.RUnlock()
	if rt.r.ended {
		return
	}
	rt.r.d.Progress(EventReplicateProgress, rt.r.s.red.Value(map[string]any{
		"source": rt.r.name, "replicate": rt.id, "kind": kind, "data": jsonish(data)}))
}

var errBundleEnded = errors.New("evidence: the bundle has finished; a replicate left running past its deadline asks nobody")

// Ask asks through the bundle's dispatch; the question leaves the process (a human_asked event,
// a person's screen), so its prompt and data are redacted first.
func (rt *replicaRuntime) Ask(ctx context.Context, q troupe.Question) (troupe.Answer, error) {
	q.Prompt = rt.r.s.red.String(q.Prompt)
	if q.Data != nil {
		q.Data = rt.r.s.red.Value(jsonish(q.Data))
	}
	rt.r.mu.RLock()
	outer := rt.r.d.Runtime()
	if rt.r.ended {
		outer = nil
	}
	rt.r.mu.RUnlock()
	if outer == nil {
		return troupe.Answer{}, errBundleEnded
	}
	return outer.Ask(ctx, q) // not under mu: a person may take long to answer
}

func (rt *replicaRuntime) Partial(map[string]any) {}

// Enclosing passes on the agents enclosing the bundle's dispatch (troupe.Encloser): a
// replicate runs as the bundle's agent, so a replicate calling, as a tool, a composite that
// encloses the bundle is refused at once, not after that composite ran again inside itself.
//
// An abandoned replicate asking after the bundle's Run returned gets nothing: the dispatch is
// the engine's again, which rebinds it.
func (rt *replicaRuntime) Enclosing() []string {
	rt.r.mu.RLock()
	defer rt.r.mu.RUnlock()
	if rt.r.ended {
		return nil
	}
	return rt.r.d.Enclosing()
}

// jsonish turns an arbitrary progress payload into JSON values the redactor can walk.
func jsonish(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	var out any
	if json.Unmarshal(b, &out) != nil {
		return string(b)
	}
	return out
}
