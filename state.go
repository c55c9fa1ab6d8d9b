package troupe

import (
	"slices"
	"time"

	"github.com/troupehq/troupe/internal/jsonvalue"
)

// RunStatus is seed 000's OrchestratorState.status, with troupe's cancelled and paused.
type RunStatus string

// Run statuses.
const (
	RunPlanning    RunStatus = "planning"
	RunExecuting   RunStatus = "executing"
	RunAggregating RunStatus = "aggregating"
	RunCompleted   RunStatus = "completed"
	RunFailed      RunStatus = "failed"
	RunCancelled   RunStatus = "cancelled"
	RunPaused      RunStatus = "paused"
)

// OrchestratorState is seed 000's orchestrator state of one run: its plan, where it is, what was
// dispatched, completed and failed (agent name → latest dispatch or response), timing, errors,
// warnings and status. Engines hand out snapshots: their maps and slices are fresh, while the
// dispatches, results, aggregation and session-state values in them are the run's records,
// shared read-only. Clone makes a deep copy to modify.
//
// StartedAt is when the run first started, also when it was resumed since; its
// total_execution_time_ms, and its aggregation's, count the time it was active, from each
// start or resume to the last event before the next, not the time it lay crashed or paused for
// a human.
type OrchestratorState struct {
	RunID                string               `json:"run_id"`
	SessionID            string               `json:"session_id"`
	QueryID              string               `json:"query_id"`
	ExecutionPlan        [][]string           `json:"execution_plan"`
	CurrentStage         int                  `json:"current_stage"`
	DispatchedAgents     map[string]*Dispatch `json:"dispatched_agents"`
	CompletedAgents      map[string]*Result   `json:"completed_agents"`
	FailedAgents         map[string]*Result   `json:"failed_agents"`
	StartedAt            time.Time            `json:"started_at"`
	UpdatedAt            time.Time            `json:"updated_at"`
	TotalExecutionTimeMS int64                `json:"total_execution_time_ms"`
	Errors               []ErrorInfo          `json:"errors"`
	Warnings             []string             `json:"warnings"`
	Status               RunStatus            `json:"status"`
	SessionState         map[string]any       `json:"session_state,omitempty"`
	Aggregation          *Aggregation         `json:"aggregation,omitempty"`
}

// Aggregation is seed 000's AgentResultAggregation, plus the resolution of its conflicts.
type Aggregation struct {
	AgentsExecuted       []string       `json:"agents_executed"`
	ExecutionOrder       []string       `json:"execution_order"`
	CombinedResults      map[string]any `json:"combined_results"`
	OverallConfidence    float64        `json:"overall_confidence"`
	Synthesis            string         `json:"synthesis"`
	KeyInsights          []string       `json:"key_insights"`
	ConflictsDetected    []Conflict     `json:"conflicts_detected"`
	ConsistencyScore     float64        `json:"consistency_score"`
	TotalExecutionTimeMS int64          `json:"total_execution_time_ms"`
	TotalTokensUsed      *int64         `json:"total_tokens_used,omitempty"`
	TotalCostDollars     *float64       `json:"total_cost_dollars,omitempty"`
	ResolutionStrategy   string         `json:"resolution_strategy,omitempty"`
	Resolved             map[string]any `json:"resolved,omitempty"` // field path → chosen value
	Warnings             []string       `json:"warnings,omitempty"`
}

// Conflict is one field on which agents disagree: the same path in two or more agents' results
// with different values.
type Conflict struct {
	Field    string          `json:"field"`
	Values   []ConflictValue `json:"values"`
	Resolved any             `json:"resolved_value,omitempty"`
	Winner   string          `json:"resolved_by,omitempty"` // agent whose value was chosen
	Reason   string          `json:"resolution_reason,omitempty"`
}

// ConflictValue is one agent's value in a conflict.
type ConflictValue struct {
	Agent      string   `json:"agent"`
	Value      any      `json:"value"`
	Confidence *float64 `json:"confidence,omitempty"`
}

// Clone returns a deep copy of s: its maps, slices, dispatches, results and aggregation are
// copies, so modifying the copy changes nothing of s. Values an agent put in a result or in
// session state are copied as cloneValue copies them.
func (s OrchestratorState) Clone() OrchestratorState {
	c := s
	if s.ExecutionPlan != nil {
		c.ExecutionPlan = make([][]string, len(s.ExecutionPlan))
		for i, st := range s.ExecutionPlan {
			c.ExecutionPlan[i] = slices.Clone(st)
		}
	}
	c.DispatchedAgents = cloneMapOf(s.DispatchedAgents, (*Dispatch).Clone)
	c.CompletedAgents = cloneMapOf(s.CompletedAgents, (*Result).Clone)
	c.FailedAgents = cloneMapOf(s.FailedAgents, (*Result).Clone)
	c.Errors = cloneErrors(s.Errors)
	c.Warnings = slices.Clone(s.Warnings)
	c.SessionState = cloneMap(s.SessionState)
	c.Aggregation = s.Aggregation.Clone()
	return c
}

// Clone returns a deep copy of a, or nil for nil.
func (a *Aggregation) Clone() *Aggregation {
	if a == nil {
		return nil
	}
	c := *a
	c.AgentsExecuted = slices.Clone(a.AgentsExecuted)
	c.ExecutionOrder = slices.Clone(a.ExecutionOrder)
	c.CombinedResults = cloneMap(a.CombinedResults)
	c.KeyInsights = slices.Clone(a.KeyInsights)
	if a.ConflictsDetected != nil {
		c.ConflictsDetected = make([]Conflict, len(a.ConflictsDetected))
		for i, cf := range a.ConflictsDetected {
			cf.Resolved = cloneValue(cf.Resolved)
			vs := make([]ConflictValue, len(cf.Values))
			for j, v := range cf.Values {
				v.Value, v.Confidence = cloneValue(v.Value), clonePtr(v.Confidence)
				vs[j] = v
			}
			if cf.Values == nil {
				vs = nil
			}
			cf.Values = vs
			c.ConflictsDetected[i] = cf
		}
	}
	c.TotalTokensUsed = clonePtr(a.TotalTokensUsed)
	c.TotalCostDollars = clonePtr(a.TotalCostDollars)
	c.Resolved = cloneMap(a.Resolved)
	c.Warnings = slices.Clone(a.Warnings)
	return &c
}

// cloneValue and cloneMap deep-copy JSON-shaped values: what agents put in agent_result,
// handoff and session state.
func cloneValue(v any) any                     { return jsonvalue.Clone(v) }
func cloneMap(m map[string]any) map[string]any { return jsonvalue.CloneMap(m) }

// cloneMapOf copies m, each value with clone; nil stays nil.
func cloneMapOf[V any](m map[string]V, clone func(V) V) map[string]V {
	if m == nil {
		return nil
	}
	c := make(map[string]V, len(m))
	for k, v := range m {
		c[k] = clone(v)
	}
	return c
}

// clonePtr returns a pointer to a copy of *p, or nil for nil.
func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// cloneErrors deep-copies an errors list; nil stays nil.
func cloneErrors(es []ErrorInfo) []ErrorInfo {
	if es == nil {
		return nil
	}
	c := make([]ErrorInfo, len(es))
	for i, e := range es {
		e.Details, e.Extra = cloneMap(e.Details), cloneMap(e.Extra)
		c[i] = e
	}
	return c
}
