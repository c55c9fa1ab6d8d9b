package troupe

import "time"

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
// warnings and status. Engines hand out copies; modifying one changes nothing.
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
