package troupe

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// Agent does the work of one dispatch. Run returns what the agent knows (agent_result,
// summary, confidence, …); the engine fills in identification, status and timing. A returned
// error fails the dispatch: return an *AgentError to say whether retrying can help.
//
// Run must honour ctx; the engine enforces timeouts even when it does not, but the goroutine
// of an agent that ignores its context lives on until Run returns.
type Agent interface {
	Run(ctx context.Context, d *Dispatch) (*Result, error)
}

// AgentFunc adapts a function to Agent, as http.HandlerFunc does for handlers.
type AgentFunc func(ctx context.Context, d *Dispatch) (*Result, error)

// Run calls f.
func (f AgentFunc) Run(ctx context.Context, d *Dispatch) (*Result, error) { return f(ctx, d) }

// Setupper is implemented by agents that acquire resources (connections, processes) before a
// run: the engine calls Setup during INITIALIZE (seed 001's lifecycle).
type Setupper interface {
	Setup(ctx context.Context) error
}

// Teardowner is implemented by agents that release resources after a run: the engine calls
// Teardown on every terminal path of a run whose INITIALIZE set the agent up.
type Teardowner interface {
	Teardown(ctx context.Context) error
}

// AgentSpec is an agent with what the engine needs to know about it.
type AgentSpec struct {
	Name        string
	Agent       Agent
	Description string
	Reads       []string      // session state keys the agent reads; absent ones fail it with STATE_MISSING
	Writes      []string      // session state keys the agent writes, taken from its agent_result
	DependsOn   []string      // agents that must run before this one when both are planned
	Timeout     time.Duration // default per-dispatch timeout; 0 means the engine's default
	Guardrails  []Guardrail   // checks around every dispatch of this agent

	// InputSchema and OutputSchema are JSON Schemas (any draft; $schema picks it, 2020-12 by
	// default) of the dispatch input (parsed_query) and of agent_result. The engine compiles
	// them when it is built and checks every dispatch against them: bad input fails it with
	// INVALID_INPUT before the agent runs, bad output fails it with INVALID_OUTPUT. Nil means
	// unchecked.
	InputSchema  json.RawMessage
	OutputSchema json.RawMessage
	// MaxDepth bounds the call stack when the agent is called as a tool (flow.AsTool); 0 means 5.
	MaxDepth int
}

// Option configures an AgentSpec at registration.
type Option func(*AgentSpec)

// Reads declares session state keys the agent reads.
func Reads(keys ...string) Option { return func(s *AgentSpec) { s.Reads = append(s.Reads, keys...) } }

// Writes declares session state keys the agent writes: after it completes, the values under
// these keys of its agent_result are written to session state. Of two agents of one stage
// that write different values to a key, the one later in the plan stands, with a warning.
func Writes(keys ...string) Option {
	return func(s *AgentSpec) { s.Writes = append(s.Writes, keys...) }
}

// After declares agents this one depends on when they are in the same plan.
func After(agents ...string) Option {
	return func(s *AgentSpec) { s.DependsOn = append(s.DependsOn, agents...) }
}

// WithTimeout sets the agent's default per-dispatch timeout.
func WithTimeout(d time.Duration) Option { return func(s *AgentSpec) { s.Timeout = d } }

// Describe sets a one-line description shown by tools.
func Describe(text string) Option { return func(s *AgentSpec) { s.Description = text } }

// Guard attaches guardrails to every dispatch of the agent.
func Guard(g ...Guardrail) Option {
	return func(s *AgentSpec) { s.Guardrails = append(s.Guardrails, g...) }
}

// Catalog is what planners and routers may know of the registered agents.
type Catalog interface {
	AgentSet
	Spec(name string) (*AgentSpec, bool)
	Names() []string // in registration order
}

// Registry holds a set of named agents. Build it, then hand it to an engine: Add is not safe
// for concurrent use with anything else; every other method is safe once adding is done.
// The zero value is not usable; call NewRegistry.
type Registry struct {
	specs map[string]*AgentSpec
	order []string
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{specs: make(map[string]*AgentSpec)} }

// Add registers agent a under name. Names must be unique and non-empty.
func (r *Registry) Add(name string, a Agent, opts ...Option) error {
	if name == "" {
		return fmt.Errorf("troupe: registry: agent name is empty")
	}
	if a == nil {
		return fmt.Errorf("troupe: registry: agent %q is nil", name)
	}
	if _, dup := r.specs[name]; dup {
		return fmt.Errorf("troupe: registry: agent %q registered twice", name)
	}
	s := &AgentSpec{Name: name, Agent: a}
	for _, o := range opts {
		o(s)
	}
	if s.Timeout < 0 {
		return fmt.Errorf("troupe: registry: agent %q: negative timeout %v", name, s.Timeout)
	}
	r.specs[name] = s
	r.order = append(r.order, name)
	return nil
}

// MustAdd is Add that panics on error, for registries built in program setup.
func (r *Registry) MustAdd(name string, a Agent, opts ...Option) *Registry {
	if err := r.Add(name, a, opts...); err != nil {
		panic(err)
	}
	return r
}

// Has reports whether name is registered.
func (r *Registry) Has(name string) bool { _, ok := r.specs[name]; return ok }

// Spec returns the registration of name.
func (r *Registry) Spec(name string) (*AgentSpec, bool) { s, ok := r.specs[name]; return s, ok }

// Names returns the agent names in registration order.
func (r *Registry) Names() []string { return slices.Clone(r.order) }

// Len returns the number of agents.
func (r *Registry) Len() int { return len(r.order) }
