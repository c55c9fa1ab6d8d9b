package troupe

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
)

// Request is one query for an engine to run: the query and its parsed form (seed 000's query and
// parsed_query), optional explicit selection criteria, ids, context, policy, budget, initial
// session state, and the run's human-input handler and guardrails.
//
// Zero fields get defaults: ids and the trace id are generated from the run's seed, Criteria is
// derived from ParsedQuery by the planner, Policy is the engine's.
type Request struct {
	RunID       string             `json:"run_id,omitempty"`
	SessionID   string             `json:"session_id,omitempty"`
	QueryID     string             `json:"query_id,omitempty"`
	Query       string             `json:"query"`
	ParsedQuery map[string]any     `json:"parsed_query,omitempty"`
	Criteria    *SelectionCriteria `json:"criteria,omitempty"`
	RAGContext  map[string]any     `json:"rag_context,omitempty"`
	UserContext map[string]any     `json:"user_context,omitempty"`
	Context     Context            `json:"context"`
	Policy      *ErrorPolicy       `json:"policy,omitempty"`
	Budget      Budget             `json:"budget"`
	State       map[string]any     `json:"state,omitempty"`
	Priority    Priority           `json:"priority,omitempty"`
	Seed        uint64             `json:"seed,omitempty"`

	// Timeouts sets timeout_seconds of the dispatches to an agent, overriding its default.
	Timeouts map[string]float64 `json:"timeouts,omitempty"`

	// OptimizedPrompts are the hub's prompts per agent (seed 000's DSPy context).
	OptimizedPrompts map[string]map[string]string `json:"optimized_prompts,omitempty"`

	Human      HumanHandler `json:"-"`
	Guardrails []Guardrail  `json:"-"`
}

// Budget bounds a run: once TimeSeconds have passed, MaxCostDollars have been spent or
// MaxTokens used (the sum of the results' tokens_used), no new dispatch starts and the run says
// so. Zero fields take the engine's bounds (never unlimited).
type Budget struct {
	TimeSeconds    float64 `json:"time_seconds,omitempty"`
	MaxCostDollars float64 `json:"max_cost_dollars,omitempty"`
	MaxTokens      int64   `json:"max_tokens,omitempty"`
}

// Validate checks what an engine checks of r before a run starts, and returns every problem
// at once, as ValidationErrors naming each field by its JSON path (priority, timeouts.AGENT,
// policy.on_error, budget.max_cost_dollars, criteria.time_budget_seconds): an unknown priority,
// a timeout that is not a positive, finite number of seconds, an error policy
// ErrorPolicy.Validate refuses (its fallbacks checked against agents), a budget that is
// negative or not finite, criteria whose time budget is not a positive, finite number of
// seconds. A caller that builds requests from its users' input (a CLI, a server) calls it to
// refuse a bad one before anything runs.
func (r *Request) Validate(agents AgentSet) error {
	var es ValidationErrors
	bad := func(field, problem string) {
		es = append(es, &ValidationError{Object: "request", Field: field, Problem: problem})
	}
	switch r.Priority {
	case "", PriorityLow, PriorityMedium, PriorityHigh, PriorityCritical:
	default:
		// Every dispatch carries it: seed 000's validate_dispatch_request would refuse them all.
		bad("priority", fmt.Sprintf("%q is not one of low, medium, high, critical", r.Priority))
	}
	for _, agent := range slices.Sorted(maps.Keys(r.Timeouts)) {
		if s := r.Timeouts[agent]; !(s > 0) || math.IsInf(s, 0) {
			bad("timeouts."+agent, fmt.Sprintf("want a positive, finite number of seconds, got %v", s))
		}
	}
	if r.Policy != nil {
		var pes ValidationErrors
		var pe *ValidationError
		switch err := r.Policy.Validate(agents); {
		case err == nil:
		case errors.As(err, &pes):
			for _, e := range pes {
				bad("policy."+e.Field, e.Problem)
			}
		case errors.As(err, &pe):
			bad("policy."+pe.Field, pe.Problem)
		default:
			bad("policy", err.Error())
		}
	}
	for _, f := range [...]struct {
		name string
		v    float64
	}{
		{"time_seconds", r.Budget.TimeSeconds},
		{"max_cost_dollars", r.Budget.MaxCostDollars},
		{"max_tokens", float64(r.Budget.MaxTokens)},
	} {
		if !(f.v >= 0) || math.IsInf(f.v, 0) {
			bad("budget."+f.name, fmt.Sprintf("want a finite number, 0 or more, got %v", f.v))
		}
	}
	if c := r.Criteria; c != nil && c.TimeBudgetSeconds != nil {
		if t := *c.TimeBudgetSeconds; !(t > 0) || math.IsInf(t, 0) {
			bad("criteria.time_budget_seconds", fmt.Sprintf("want a positive, finite number of seconds, got %v", t))
		}
	}
	return es.orNil()
}
