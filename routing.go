package troupe

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
)

// RoutingDecision is seed 001's explicit routing decision: the target, a human-readable reason,
// extra context and the fallback target if the primary fails. Deterministic routers return the
// same decision, byte for byte in JSON, for the same inputs.
//
// TokensUsed and CostDollars are what making the decision cost, for a router that asks a
// model; the engine counts them toward the run's token and cost budgets and its totals, as it
// counts a result's. Rule routers leave them nil.
type RoutingDecision struct {
	Target      string         `json:"target"`
	Reason      string         `json:"reason"`
	Metadata    map[string]any `json:"metadata,omitempty"`
	Fallback    string         `json:"fallback,omitempty"`
	TokensUsed  *int64         `json:"tokens_used,omitempty"`
	CostDollars *float64       `json:"cost_dollars,omitempty"`
}

// RouteInput is what a router decides on: the task (possibly naming an agent already), the
// run's message and session state, and the agents available.
type RouteInput struct {
	Task        Task
	Query       string
	ParsedQuery map[string]any
	State       map[string]any
	Available   []string
}

// Router makes routing decisions (seed 001's make_routing_decision). Implementations must be
// deterministic and safe for concurrent use. ctx is the run's: a router that does I/O (asks a
// model) must return when it is done, so cancelling a run is not held up by its routing.
type Router interface {
	Route(ctx context.Context, in RouteInput, c Context) (RoutingDecision, error)
}

// RouterFunc adapts a function to Router.
type RouterFunc func(ctx context.Context, in RouteInput, c Context) (RoutingDecision, error)

// Route calls f.
func (f RouterFunc) Route(ctx context.Context, in RouteInput, c Context) (RoutingDecision, error) {
	return f(ctx, in, c)
}

// SelectionCriteria is seed 000's AgentSelectionCriteria. ConfidenceThreshold is a pointer so
// that absent means seed 000's default 0.7; use Threshold to read it. SecondaryIntents is a
// troupe extension: further intents whose primary agents join the selection.
type SelectionCriteria struct {
	IntentType              string              `json:"intent_type"`
	Entities                map[string][]string `json:"entities,omitempty"`
	Complexity              string              `json:"complexity,omitempty"` // simple | moderate | complex; "" means moderate
	RequiresML              bool                `json:"requires_ml"`
	RequiresCausalInference bool                `json:"requires_causal_inference"`
	RequiresExperimentation bool                `json:"requires_experimentation"`
	EnableDiscovery         bool                `json:"enable_discovery"`
	DiscoveryConfig         map[string]any      `json:"discovery_config,omitempty"`
	TimeBudgetSeconds       *float64            `json:"time_budget_seconds,omitempty"`
	ConfidenceThreshold     *float64            `json:"confidence_threshold,omitempty"`
	PreferredAgents         []string            `json:"preferred_agents,omitempty"`
	ExcludedAgents          []string            `json:"excluded_agents,omitempty"`
	SecondaryIntents        []string            `json:"secondary_intents,omitempty"`
}

// DefaultConfidenceThreshold is seed 000's default minimum acceptable confidence.
const DefaultConfidenceThreshold = 0.7

// Threshold returns the confidence threshold, 0.7 when unset.
func (c *SelectionCriteria) Threshold() float64 {
	if c.ConfidenceThreshold == nil {
		return DefaultConfidenceThreshold
	}
	return *c.ConfidenceThreshold
}

// ComplexityLevel returns the complexity, "moderate" when unset.
func (c *SelectionCriteria) ComplexityLevel() string {
	if c.Complexity == "" {
		return "moderate"
	}
	return c.Complexity
}

// Validate checks the criteria's enumerations and bounds: an intent, a known complexity, a
// confidence threshold in [0, 1], and a time budget that is positive and finite (a budget a
// clock can reach, and one JSON can hold).
func (c *SelectionCriteria) Validate() error {
	var es ValidationErrors
	bad := func(field, problem string) {
		es = append(es, &ValidationError{Object: "criteria", Field: field, Problem: problem})
	}
	if c.IntentType == "" {
		bad("intent_type", "required")
	}
	switch c.Complexity {
	case "", "simple", "moderate", "complex":
	default:
		bad("complexity", fmt.Sprintf("%q is not one of simple, moderate, complex", c.Complexity))
	}
	if t := c.ConfidenceThreshold; t != nil && !(*t >= 0 && *t <= 1) {
		bad("confidence_threshold", fmt.Sprintf("%v is outside [0, 1]", *t))
	}
	if t := c.TimeBudgetSeconds; t != nil && !(*t > 0) {
		bad("time_budget_seconds", "must be positive")
	} else if t != nil && math.IsInf(*t, 1) {
		bad("time_budget_seconds", "must be finite")
	}
	return es.orNil()
}

// Plan is an inspectable execution plan: ordered stages, each a group of tasks that may run
// together, plus the selection that produced it. It is computed before anything runs and can
// be printed (String) or encoded (JSON).
type Plan struct {
	Stages   []PlanStage        `json:"stages"`
	Selected []Selection        `json:"selected,omitempty"` // by priority, highest first
	Skipped  []Selection        `json:"skipped,omitempty"`  // considered but not selected, with why
	Criteria *SelectionCriteria `json:"criteria,omitempty"`
}

// PlanStage is a group of tasks that may run concurrently, at most MaxConcurrency at once:
// seed 000's ParallelExecutionGroup. GroupID names the group, and SharedResources lists what
// two or more of its tasks use at once. In JSON it also has the group's "agents", as seed 000
// spells it (see MarshalJSON). The planner (package plan) names its stages "group_1",
// "group_2", ... and lists as shared the session state keys two or more of a stage's agents
// declare they read (no agent of a stage writes a key another of it reads or writes). Both
// are descriptive: the engine runs a stage the same without them.
type PlanStage struct {
	GroupID         string   `json:"group_id,omitempty"`
	Tasks           []Task   `json:"tasks"`
	SharedResources []string `json:"shared_resources,omitempty"`
	MaxConcurrency  int      `json:"max_concurrency"`
}

// MarshalJSON encodes s with, beside its tasks, seed 000's "agents": the tasks' agents in
// order, a task routed at run time as "?" and its ID (as Plan.ExecutionPlan writes it).
func (s PlanStage) MarshalJSON() ([]byte, error) {
	type plain PlanStage
	agents := make([]string, len(s.Tasks))
	for i, t := range s.Tasks {
		agents[i] = t.Agent
		if t.Agent == "" {
			agents[i] = "?" + t.ID
		}
	}
	return json.Marshal(struct {
		GroupID string   `json:"group_id,omitempty"`
		Agents  []string `json:"agents"`
		plain
	}{s.GroupID, agents, plain(s)})
}

// UnmarshalJSON decodes what MarshalJSON writes, and a seed 000 ParallelExecutionGroup too:
// without "tasks", each of its "agents" becomes a task of that ID and agent. With tasks,
// "agents" is ignored: it is derived from them.
func (s *PlanStage) UnmarshalJSON(b []byte) error {
	type plain PlanStage
	var w struct {
		plain
		Agents []string `json:"agents"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*s = PlanStage(w.plain)
	if s.Tasks == nil {
		for _, a := range w.Agents {
			s.Tasks = append(s.Tasks, Task{ID: a, Agent: a})
		}
	}
	return nil
}

// Task is one planned unit of work. Agent names the agent, or is empty when the router is to
// choose one at ROUTE time. DependsOn names what the task waits for: tasks of earlier stages,
// by ID, or registered agents. Dispatches carry them as seed 000's depends_on, agent names: a
// task's ID becomes the task's agent (the routed one, for a task routed at run time).
type Task struct {
	ID        string   `json:"id"`
	Agent     string   `json:"agent,omitempty"`
	Reason    string   `json:"reason"`
	Priority  float64  `json:"priority"`
	DependsOn []string `json:"depends_on,omitempty"`
}

// Selection is one agent the selector considered, with its priority score in [0, 1] and the
// reasons behind it.
type Selection struct {
	Agent   string   `json:"agent"`
	Score   float64  `json:"score"`
	Reasons []string `json:"reasons"`
}

// ExecutionPlan returns the plan as seed 000's execution_plan: List[List[agent]].
func (p *Plan) ExecutionPlan() [][]string {
	out := make([][]string, len(p.Stages))
	for i, s := range p.Stages {
		out[i] = make([]string, len(s.Tasks))
		for j, t := range s.Tasks {
			out[i][j] = t.Agent
			if t.Agent == "" {
				out[i][j] = "?" + t.ID
			}
		}
	}
	return out
}

// NumTasks counts the plan's tasks.
func (p *Plan) NumTasks() int {
	n := 0
	for _, s := range p.Stages {
		n += len(s.Tasks)
	}
	return n
}

// String renders the plan for people: one line a stage, then the selection.
func (p *Plan) String() string {
	var b strings.Builder
	for i, s := range p.Stages {
		fmt.Fprintf(&b, "stage %d", i+1)
		if len(s.Tasks) > 1 {
			fmt.Fprintf(&b, " (parallel, max %d", s.MaxConcurrency)
			if len(s.SharedResources) > 0 {
				fmt.Fprintf(&b, "; sharing %s", strings.Join(s.SharedResources, ", "))
			}
			b.WriteString(")")
		}
		b.WriteString(":\n")
		for _, t := range s.Tasks {
			name := t.Agent
			if name == "" {
				name = "(routed at run time)"
			}
			fmt.Fprintf(&b, "  %-24s priority %.2f  %s", name, t.Priority, t.Reason)
			if len(t.DependsOn) > 0 {
				fmt.Fprintf(&b, "  after %s", strings.Join(t.DependsOn, ", "))
			}
			b.WriteString("\n")
		}
	}
	if len(p.Skipped) > 0 {
		b.WriteString("not selected:\n")
		for _, s := range p.Skipped {
			fmt.Fprintf(&b, "  %-24s priority %.2f  %s\n", s.Agent, s.Score, strings.Join(s.Reasons, "; "))
		}
	}
	return b.String()
}

// MarshalJSON keeps an empty plan's stages as [] rather than null.
func (p Plan) MarshalJSON() ([]byte, error) {
	type plain Plan
	if p.Stages == nil {
		p.Stages = []PlanStage{}
	}
	return json.Marshal(plain(p))
}

// Planner turns a request into a plan (seed 000's AgentSelector). Implementations are pure and
// deterministic — the same request and catalog give the same plan — and safe for concurrent use.
type Planner interface {
	Plan(req *Request, agents Catalog) (*Plan, error)
}

// PlannerFunc adapts a function to Planner.
type PlannerFunc func(req *Request, agents Catalog) (*Plan, error)

// Plan calls f.
func (f PlannerFunc) Plan(req *Request, agents Catalog) (*Plan, error) { return f(req, agents) }
