package troupe

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Emitter is an optional capability of a DispatchRuntime: it records the events of agents that
// a composite agent (flow.Sequential, flow.Parallel, flow.Loop, an agent called as a tool) runs
// inside its own dispatch. The engine's runtime implements it; a runtime that does not simply
// has no nested events.
//
// Implementations must be safe for concurrent use: the branches of a parallel group emit at
// once.
type Emitter interface {
	// Emit appends a nested event to the run's log. The caller sets Kind, DispatchID, Agent,
	// Status, Data, Parent (the enclosing dispatch) and Context (a child of
	// ExecutionContext); the runtime fills in RunID, Seq, Time, Stage and Step, sets Parent to
	// its own dispatch when it is empty, and Context to a child of its own when it is nil.
	Emit(ev Event)
	// ExecutionContext is the execution context of the runtime's dispatch: the run's for a
	// planned dispatch, a child of the enclosing one's for a nested dispatch.
	ExecutionContext() Context
	// NextChild returns 0, 1, 2, … across calls: the ordinal of the next nested call made on
	// behalf of the dispatch (by a tool), from which its dispatch id is derived.
	NextChild() uint64
}

// Emit records ev as a nested event of d's run; a no-op when d's runtime records none.
func (d *Dispatch) Emit(ev Event) {
	if e, ok := d.rt.(Emitter); ok {
		e.Emit(ev)
	}
}

// Emitter returns d's runtime as an Emitter, or nil when it records no nested events.
func (d *Dispatch) Emitter() Emitter {
	e, _ := d.rt.(Emitter)
	return e
}

// Recorder is an optional capability of a DispatchRuntime in a resumed run: it knows what the
// run's log recorded for dispatches nested in the runtime's own. A composite agent asks before
// it runs a member, so a composite resumed after a crash takes its finished members' results
// instead of running them again (and paying for them twice).
//
// Recorded returns the result the log holds for a finished nested dispatch with d's id —
// completed, failed, timed out, or cancelled by its composite's policy — exactly as recorded,
// so a resumed composite reaches the outcome the run that made the log reached (a member that
// failed there is not tried again, and perhaps succeeds, here). It takes none for a dispatch
// the log shows still running when the run stopped, nor for one that stopped to wait for a
// human's answer: those run again under their ids. It returns a result only when the log also
// holds that dispatch going to the same agent with the same input — query, parsed query, RAG
// and user context, upstream results, depends_on and execution mode. A member whose input came
// out differently this time (an agent called as a tool with other arguments) runs again. A
// composite taking a result records nothing of it again: its events are in the log.
type Recorder interface {
	Recorded(d *Dispatch) (*Result, bool)
}

// Recorded asks d's runtime for the result the run's log recorded for the nested dispatch n
// (see Recorder); false when d's run is not a resumed one, or the log holds no such result.
func (d *Dispatch) Recorded(n *Dispatch) (*Result, bool) {
	if r, ok := d.rt.(Recorder); ok {
		return r.Recorded(n)
	}
	return nil, false
}

// Admitter is an optional capability of a DispatchRuntime: it says whether the run's budgets
// still let a composite start another nested dispatch. The engine counts what nested
// dispatches report using as they finish (each token once, however deep), so a composite of
// costly members stops starting them once the run's time, cost or token budget is spent,
// rather than only when the composite itself finishes.
type Admitter interface {
	// Admit returns nil while a nested dispatch may start, and otherwise an error wrapping
	// ErrBudgetExhausted that says which budget is spent.
	Admit() error
}

// Admit asks d's runtime whether a dispatch nested in d may start (see Admitter); nil when
// the runtime sets no budget.
func (d *Dispatch) Admit() error {
	if a, ok := d.rt.(Admitter); ok {
		return a.Admit()
	}
	return nil
}

// Guarder is an optional capability of a DispatchRuntime: it passes on the guardrails of the
// runtime's run (the engine's and the request's, not an agent's own), so that a composite
// agent checks the dispatches it runs itself with them too, and a run's policy holds at every
// depth rather than only for the dispatches the engine planned.
type Guarder interface {
	RunGuardrails() []Guardrail
}

// RunGuardrails returns the guardrails of d's run (see Guarder); nil when d's runtime passes
// none on.
func (d *Dispatch) RunGuardrails() []Guardrail {
	if g, ok := d.rt.(Guarder); ok {
		return g.RunGuardrails()
	}
	return nil
}

// Encloser is an optional capability of a DispatchRuntime: it names the agents whose
// dispatches enclose the runtime's dispatch, outermost first. An agent called as a tool
// refuses a call to any of them, which would run a composite inside itself, before it runs
// again; composites bound how deep they nest by them. A runtime that passes a dispatch on
// (an evidence bundle's replicates run under the bundle's dispatch) passes its chain on too,
// or a cycle through it is found only a level deeper. The engine's runtime encloses nothing:
// its dispatches are the ones the run planned.
type Encloser interface {
	Enclosing() []string
}

// Enclosing returns the agents whose dispatches enclose d, outermost first (see Encloser);
// nil when d's runtime names none.
func (d *Dispatch) Enclosing() []string {
	if e, ok := d.rt.(Encloser); ok {
		return e.Enclosing()
	}
	return nil
}

// InputSchema declares the JSON Schema of the agent's dispatch input (its parsed_query).
func InputSchema(schema json.RawMessage) Option { return func(s *AgentSpec) { s.InputSchema = schema } }

// OutputSchema declares the JSON Schema of the agent's agent_result.
func OutputSchema(schema json.RawMessage) Option {
	return func(s *AgentSpec) { s.OutputSchema = schema }
}

// MaxDepth sets how deep the call stack may be when the agent is called as a tool.
func MaxDepth(n int) Option { return func(s *AgentSpec) { s.MaxDepth = n } }

// DefaultMaxDepth is the call stack depth an agent called as a tool allows by default (seed
// 002's FR-022).
const DefaultMaxDepth = 5

// CircularDependencyError is returned when an agent called as a tool is already on the call
// stack (seed 002): A calls B calls A.
type CircularDependencyError struct {
	Cycle []string // the stack from the first occurrence of the agent, ending with the agent again
}

func (e *CircularDependencyError) Error() string {
	return "troupe: circular agent call: " + strings.Join(e.Cycle, " → ")
}

// Unwrap gives the error's seed 003 form, CIRCULAR_DEPENDENCY, not recoverable by retrying.
func (e *CircularDependencyError) Unwrap() error {
	return &AgentError{Code: CodeCircularDependency, Message: e.Error(), FallbackAction: "answer without delegating to an agent already working on the task"}
}

// MaxDepthExceededError is returned when a call to an agent as a tool would make the call stack
// deeper than the agent allows (seed 002: default 5).
type MaxDepthExceededError struct {
	Stack    []string // the stack the call would have made, outermost first
	MaxDepth int
}

func (e *MaxDepthExceededError) Error() string {
	return fmt.Sprintf("troupe: agent call depth %d exceeds the maximum of %d: %s", len(e.Stack), e.MaxDepth, strings.Join(e.Stack, " → "))
}

// Unwrap gives the error's seed 003 form, MAX_DEPTH_EXCEEDED, not recoverable by retrying.
func (e *MaxDepthExceededError) Unwrap() error {
	return &AgentError{Code: CodeMaxDepthExceeded, Message: e.Error(), FallbackAction: "do the work without delegating further"}
}

// Error codes of agent calls through tools (seed 002's FR-021 and FR-022).
const (
	CodeCircularDependency = "CIRCULAR_DEPENDENCY"
	CodeMaxDepthExceeded   = "MAX_DEPTH_EXCEEDED"
)
