// Package engine runs troupe requests: it plans, routes, dispatches through an executor,
// applies the error policy, aggregates, and records every step as an event in a store before
// acting on it.
//
// A run is a state machine advanced by whoever finishes a piece of work — the goroutine of a
// completing agent, a deadline timer, a cancellation — so a run waiting on its agents holds no
// goroutine of its own. Watching a run is reading its log: Run returns an iterator that reads
// the events the state machine appends, and breaking out of it cancels the run and waits for
// every goroutine the run started.
package engine

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/aggregate"
	"github.com/troupehq/troupe/executor/local"
	"github.com/troupehq/troupe/internal/schema"
	"github.com/troupehq/troupe/store/memory"
)

// Config configures an Engine. Every zero value is safe and bounded: nothing is unlimited.
type Config struct {
	// Registry holds the agents. Required; it must not change once the engine is built.
	Registry *troupe.Registry
	// Planner turns requests into plans; nil plans every registered agent, in stages derived
	// from their declared dependencies and state keys.
	Planner troupe.Planner
	// Router decides each task's target at ROUTE time; nil takes the planned agent.
	Router troupe.Router
	// Store records run logs; nil is an in-memory store.
	Store troupe.Store
	// Executor runs dispatches and supplies time and entropy; nil is the local goroutine executor.
	Executor troupe.Executor
	// Policy is the default error policy; a request's Policy replaces it.
	Policy troupe.ErrorPolicy
	// DefaultTimeout applies to dispatches of agents with no timeout of their own; 0 means 5 minutes.
	DefaultTimeout time.Duration
	// TimeBudget bounds a run's time for starting dispatches; 0 means 1 hour. Requests may lower it.
	TimeBudget time.Duration
	// MaxCostDollars bounds a run's spend; 0 means $10. Requests may lower it. The run
	// counts costs in whole billionths of a dollar, so results that add up to the budget
	// spend it in whatever order they finish; a cost or budget above $4.5 million counts as
	// that much.
	MaxCostDollars float64
	// MaxTokens bounds the tokens a run's results report using (tokens_used, each result
	// counted once); 0 means 10,000,000. Requests may lower it.
	MaxTokens int64
	// MaxDispatches bounds dispatches per run, retries and fallbacks included; 0 means 1,000.
	MaxDispatches int
	// MaxConcurrency caps a group's concurrent dispatches when its plan stage sets no cap; 0 means 10.
	MaxConcurrency int
	// Guardrails run around every dispatch of every run, after the agent's own, and around
	// the members composites run (troupe.Guarder).
	Guardrails []troupe.Guardrail
	// Human answers questions when a request brings no handler of its own; nil pauses such runs.
	Human troupe.HumanHandler
	// Resolution is the conflict resolution strategy of aggregation; "" is highest_confidence.
	Resolution aggregate.Strategy
	// TeardownTimeout bounds each agent's Teardown, even one that ignores its context: the run
	// goes on with a warning and the executor keeps the Teardown until it returns; 0 means 10
	// seconds.
	TeardownTimeout time.Duration
	// Seed, when non-zero, makes the seeds of runs that bring none a fixed sequence (tests use it
	// for reproducible ids); zero draws each run's seed from the executor.
	Seed uint64
}

// Engine runs requests. It is safe for concurrent use; build one and share it.
type Engine struct {
	reg        *troupe.Registry
	names      []string
	planner    troupe.Planner
	router     troupe.Router
	store      troupe.Store
	exec       troupe.Executor
	policy     troupe.ErrorPolicy
	timeout    time.Duration
	timeBudget time.Duration
	costBudget nanodollars
	tokBudget  int64
	maxDisp    int
	maxConc    int
	guards     []troupe.Guardrail
	human      troupe.HumanHandler
	strategy   aggregate.Strategy
	teardownTO time.Duration
	seed       uint64
	anySetup   bool                                // some agent implements troupe.Setupper
	schemas    map[*troupe.AgentSpec]*agentSchemas // agents that declare schemas, compiled; nil if none
	runs       atomic.Uint64                       // runs started, for deriving run seeds from seed
	batches    sync.Pool                           // *[]troupe.Event of capacity batchSize: transitions' event batches

	mu   sync.Mutex
	live map[string]*Run
	shut atomic.Bool // Shutdown was called: runs record nothing more, and none starts (set under mu)
}

// New validates cfg and returns an engine.
func New(cfg Config) (*Engine, error) {
	if cfg.Registry == nil || cfg.Registry.Len() == 0 {
		return nil, errors.New("engine: config: Registry is required and must hold at least one agent")
	}
	if err := cfg.Policy.Validate(cfg.Registry); err != nil {
		return nil, fmt.Errorf("engine: config: policy: %w", err)
	}
	switch {
	case cfg.DefaultTimeout < 0, cfg.TimeBudget < 0, cfg.TeardownTimeout < 0:
		return nil, errors.New("engine: config: durations cannot be negative")
	case cfg.MaxCostDollars < 0, cfg.MaxDispatches < 0, cfg.MaxConcurrency < 0, cfg.MaxTokens < 0:
		return nil, errors.New("engine: config: limits cannot be negative")
	}
	if err := cfg.Resolution.Validate(); err != nil {
		return nil, fmt.Errorf("engine: config: Resolution: %w", err)
	}
	e := &Engine{
		reg: cfg.Registry, names: cfg.Registry.Names(), planner: cfg.Planner, router: cfg.Router,
		store: cfg.Store, exec: cfg.Executor, policy: cfg.Policy,
		timeout: orDuration(cfg.DefaultTimeout, 5*time.Minute), timeBudget: orDuration(cfg.TimeBudget, time.Hour),
		costBudget: budgetNanos(cfg.MaxCostDollars), tokBudget: cfg.MaxTokens, maxDisp: cfg.MaxDispatches, maxConc: cfg.MaxConcurrency,
		guards: cfg.Guardrails, human: cfg.Human, strategy: cfg.Resolution,
		teardownTO: orDuration(cfg.TeardownTimeout, 10*time.Second), seed: cfg.Seed,
		live: make(map[string]*Run),
	}
	e.batches.New = func() any { b := make([]troupe.Event, 0, batchSize); return &b }
	for _, n := range e.names {
		spec, _ := e.reg.Spec(n)
		if _, ok := spec.Agent.(troupe.Setupper); ok {
			e.anySetup = true
		}
		sc, err := compileSchemas(spec)
		if err != nil {
			return nil, fmt.Errorf("engine: config: %w", err)
		}
		if sc != nil {
			if e.schemas == nil {
				e.schemas = make(map[*troupe.AgentSpec]*agentSchemas)
			}
			e.schemas[spec] = sc
		}
	}
	if e.tokBudget == 0 {
		e.tokBudget = 10_000_000
	}
	if e.costBudget == 0 {
		e.costBudget = 10 * nanosPerDollar
	}
	if e.maxDisp == 0 {
		e.maxDisp = 1000
	}
	if e.maxConc == 0 {
		e.maxConc = 10
	}
	if e.planner == nil {
		e.planner = defaultPlanner{}
	}
	if e.router == nil {
		e.router = plannedRouter{}
	}
	if e.store == nil {
		e.store = memory.New()
	}
	if e.exec == nil {
		e.exec = local.New(local.Config{})
	}
	return e, nil
}

func orDuration(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// Store returns the engine's store.
func (e *Engine) Store() troupe.Store { return e.store }

// Registry returns the engine's registry.
func (e *Engine) Registry() *troupe.Registry { return e.reg }

// Plan returns the plan the engine would run for req, without running anything. A planner
// that panics, or returns neither a plan nor an error, gives an error, as it fails a run.
func (e *Engine) Plan(req troupe.Request) (*troupe.Plan, error) {
	return planSafely(e.planner, &req, e.reg)
}

// Run starts req and returns its events as they are appended to the log. The stream ends after
// the terminal event (or run_paused); an error is yielded once, last, when the run could not
// be recorded or could not start. Cancelling ctx cancels the run; breaking out of the loop
// cancels it too, and in both cases the iterator returns only once every goroutine the run
// started has returned (or been left behind as a straggler past its deadline).
func (e *Engine) Run(ctx context.Context, req troupe.Request) iter.Seq2[troupe.Event, error] {
	return func(yield func(troupe.Event, error) bool) {
		r, err := e.Start(ctx, req)
		if err != nil {
			yield(troupe.Event{}, err)
			return
		}
		// The watcher outlives ctx on purpose: a cancelled run still ends with run_cancelled.
		for ev, err := range r.Events(r.bg()) {
			if !yield(ev, err) {
				r.Cancel()
				r.wait()
				return
			}
		}
		r.wait()
	}
}

// Start starts req and returns at once with a handle; the run goes on without the caller, its
// events go to the store, and Run.Events, Run.Wait and Run.State observe it. Agent Setup runs
// before Start returns. The run is cancelled with ctx. After Shutdown, Start fails with
// troupe.ErrShutdown; so does a Start that Shutdown overtook before the run's first event was
// recorded (while its agents were being set up, say): there is no log to resume, and the
// caller, told so, can submit the request again elsewhere. Start then returns once what the
// run set up is torn down.
func (e *Engine) Start(ctx context.Context, req troupe.Request) (*Run, error) {
	r, err := e.newRun(ctx, req, nil)
	if err != nil {
		return nil, err
	}
	r.begin(nil)
	if err := r.unrecordedShutdown(); err != nil {
		r.wait()
		return nil, err
	}
	return r, nil
}

// Lookup returns the live (not yet finished) run with id.
func (e *Engine) Lookup(id string) (*Run, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r, ok := e.live[id]
	return r, ok
}

// Close cancels every live run, waits for them, then waits for stragglers (agents and
// teardowns that ignored cancellation past their deadline). Each run ends CANCELLED, with
// run_cancelled in its log, and so can no longer be resumed; Shutdown instead stops the runs
// without ending them, for another process to resume. The engine can still start runs after
// Close. If ctx ends first (a run blocked in a store append that never returns, a straggler
// that never does), Close returns ctx's cause and what it was waiting for goes on.
func (e *Engine) Close(ctx context.Context) error {
	e.mu.Lock()
	runs := e.liveLocked()
	e.mu.Unlock()
	for _, r := range runs {
		r.Cancel()
	}
	return e.await(ctx, runs)
}

// Shutdown stops this engine's work without ending its runs, so that another engine (the next
// process, over the same durable store) can resume them from their logs: what a crash leaves,
// but orderly. Every live run stops recording at once — no terminal event, no result of a
// dispatch still in flight (a resumed run dispatches it again, under its id) — its in-flight
// dispatches are cancelled with troupe.ErrShutdown as their context's cause, nothing new
// starts, agents set up are torn down (the teardown is not recorded), and the run ends: its
// Wait and Events report an error matching troupe.ErrShutdown, not troupe.ErrCancelled. A run
// paused for a human is not live and its log is left as it is. After Shutdown, Start and Resume
// on this engine fail with troupe.ErrShutdown. (A batch of events a run was already appending
// when Shutdown came is recorded; a Start that Shutdown overtook before the run's first event
// was recorded returns troupe.ErrShutdown and no run.)
//
// Close, by contrast, cancels the runs: each records run_cancelled and can no longer be
// resumed. Shutdown then waits for the runs and their stragglers as Close does; if ctx ends
// first, it returns ctx's cause and what it was waiting for goes on (recording nothing more).
func (e *Engine) Shutdown(ctx context.Context) error {
	e.mu.Lock()
	e.shut.Store(true) // under mu: a run newRun registers after this sees it and does not start
	runs := e.liveLocked()
	e.mu.Unlock()
	for _, r := range runs {
		// The flag is set first: whatever sees the run's context end and records next finds it.
		r.stop(troupe.ErrShutdown)
	}
	return e.await(ctx, runs)
}

// liveLocked returns the live runs. The caller holds e.mu.
func (e *Engine) liveLocked() []*Run {
	runs := make([]*Run, 0, len(e.live))
	for _, r := range e.live {
		runs = append(runs, r)
	}
	return runs
}

// await waits for runs to end, then for stragglers, as far as ctx lets it.
func (e *Engine) await(ctx context.Context, runs []*Run) error {
	for _, r := range runs {
		// Once a run is done, what is left of its scope returns at once (or is a straggler).
		select {
		case <-r.doneChan():
		case <-ctx.Done():
			return context.Cause(ctx)
		}
		r.wait()
	}
	if d, ok := e.exec.(interface{ Drain(context.Context) error }); ok {
		return d.Drain(ctx)
	}
	return nil
}

// batchSize bounds the events one store append carries; a transition that emits more (a group
// of hundreds starting at once) appends them in several batches.
const batchSize = 32

// plannedRouter routes a task to its planned agent.
type plannedRouter struct{}

func (plannedRouter) Route(_ context.Context, in troupe.RouteInput, _ troupe.Context) (troupe.RoutingDecision, error) {
	if in.Task.Agent == "" {
		return troupe.RoutingDecision{}, fmt.Errorf("engine: task %q names no agent and the engine has no Router", in.Task.ID)
	}
	reason := in.Task.Reason
	if reason == "" {
		reason = "planned"
	}
	return troupe.RoutingDecision{Target: in.Task.Agent, Reason: reason}, nil
}

// agentSchemas are an agent's compiled input and output schemas (seed 003's typed contracts).
type agentSchemas struct {
	in, out *schema.Schema
}

func compileSchemas(spec *troupe.AgentSpec) (*agentSchemas, error) {
	if spec.InputSchema == nil && spec.OutputSchema == nil {
		return nil, nil
	}
	in, out, err := schema.CompileAgent(spec.Name, spec.InputSchema, spec.OutputSchema)
	if err != nil {
		return nil, err
	}
	return &agentSchemas{in: in, out: out}, nil
}

// writersOf is a STATE_MISSING error's fallback action: run the agents that declare writes of
// the missing keys first (seed 003: "run diagnostic first").
func (e *Engine) writersOf(keys []string) string {
	var writers []string
	for _, n := range e.names {
		spec, _ := e.reg.Spec(n)
		for _, k := range keys {
			if slices.Contains(spec.Writes, k) && !slices.Contains(writers, n) {
				writers = append(writers, n)
			}
		}
	}
	if len(writers) == 0 {
		return "run the agent that writes it first"
	}
	return "run " + strings.Join(writers, ", ") + " first"
}
