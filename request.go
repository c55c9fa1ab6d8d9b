package troupe

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
