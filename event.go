package troupe

import (
	"encoding/json"
	"fmt"
	"time"
)

// Stage is a lifecycle stage of seed 001: INITIALIZE → PLAN → ROUTE → EXECUTE → AGGREGATE →
// COMPLETE | FAILED | CANCELLED. PAUSED is troupe's suspension point: the run waits for a
// human and can be resumed; it is not terminal.
type Stage uint8

// Lifecycle stages, in order.
const (
	StageInitialize Stage = iota + 1
	StagePlan
	StageRoute
	StageExecute
	StageAggregate
	StageComplete
	StageFailed
	StageCancelled
	StagePaused
)

var stageNames = [...]string{"", "initialize", "plan", "route", "execute", "aggregate", "complete", "failed", "cancelled", "paused"}

func (s Stage) String() string {
	if int(s) < len(stageNames) && s > 0 {
		return stageNames[s]
	}
	return fmt.Sprintf("stage(%d)", uint8(s))
}

// Terminal reports whether s is COMPLETE, FAILED or CANCELLED: no event follows it.
func (s Stage) Terminal() bool { return s == StageComplete || s == StageFailed || s == StageCancelled }

// MarshalText encodes the stage's lower-case name.
func (s Stage) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText decodes a stage name.
func (s *Stage) UnmarshalText(b []byte) error {
	for i, n := range stageNames {
		if i > 0 && n == string(b) {
			*s = Stage(i)
			return nil
		}
	}
	// What String gives an out-of-range stage reads back, so any event that was written can be read.
	var n uint8
	if _, err := fmt.Sscanf(string(b), "stage(%d)", &n); err == nil && Stage(n).String() == string(b) {
		*s = Stage(n)
		return nil
	}
	return fmt.Errorf("troupe: unknown stage %q", b)
}

// Kind says what happened; each kind has one payload type in Event.Data.
type Kind string

// Event kinds and their payloads.
const (
	KindRunInitialized    Kind = "run_initialized"    // *RunStart
	KindRunResumed        Kind = "run_resumed"        // *RunStart
	KindPlanCreated       Kind = "plan_created"       // *Plan
	KindRouteDecided      Kind = "route_decided"      // *RoutingDecision
	KindDispatchStarted   Kind = "dispatch_started"   // *Dispatch
	KindDispatchCompleted Kind = "dispatch_completed" // *Result
	KindDispatchFailed    Kind = "dispatch_failed"    // *Result (failed, timeout or cancelled)
	KindRetryScheduled    Kind = "retry_scheduled"    // *RetryScheduled
	KindAgentProgress     Kind = "agent_progress"     // *Progress
	KindStateDelta        Kind = "state_delta"        // *StateDelta
	KindHumanAsked        Kind = "human_asked"        // *Question
	KindHumanAnswered     Kind = "human_answered"     // *Answer
	KindWarning           Kind = "warning"            // *Warning
	KindBudgetExhausted   Kind = "budget_exhausted"   // *Warning
	KindRunAggregated     Kind = "run_aggregated"     // *Aggregation
	KindRunCompleted      Kind = "run_completed"      // *Outcome
	KindRunFailed         Kind = "run_failed"         // *Outcome
	KindRunCancelled      Kind = "run_cancelled"      // *Outcome
	KindRunPaused         Kind = "run_paused"         // *Outcome
)

// Event is one entry of a run's log. Seq is dense from 1. Context is the run's (or, in a
// nested orchestration, the child's) execution context. Data holds the kind's payload; a
// payload is never modified after its event is appended.
type Event struct {
	RunID      string    `json:"run_id"`
	Seq        int64     `json:"seq"`
	Time       time.Time `json:"time"`
	Stage      Stage     `json:"stage"`
	Kind       Kind      `json:"kind"`
	Step       int       `json:"step,omitempty"` // 1-based plan stage, where there is one
	DispatchID string    `json:"dispatch_id,omitempty"`
	Parent     string    `json:"parent_dispatch_id,omitempty"` // the enclosing dispatch of a nested event (see Emitter)
	Agent      string    `json:"agent,omitempty"`
	Status     Status    `json:"status,omitempty"`
	Context    *Context  `json:"context"`
	Data       any       `json:"data,omitempty"`
}

// newPayload returns a pointer to the payload type of kind k, or nil for an unknown kind.
func newPayload(k Kind) any {
	switch k {
	case KindRunInitialized, KindRunResumed:
		return new(RunStart)
	case KindPlanCreated:
		return new(Plan)
	case KindRouteDecided:
		return new(RoutingDecision)
	case KindDispatchStarted:
		return new(Dispatch)
	case KindDispatchCompleted, KindDispatchFailed:
		return new(Result)
	case KindRetryScheduled:
		return new(RetryScheduled)
	case KindAgentProgress:
		return new(Progress)
	case KindStateDelta:
		return new(StateDelta)
	case KindHumanAsked:
		return new(Question)
	case KindHumanAnswered:
		return new(Answer)
	case KindWarning, KindBudgetExhausted:
		return new(Warning)
	case KindRunAggregated:
		return new(Aggregation)
	case KindRunCompleted, KindRunFailed, KindRunCancelled, KindRunPaused:
		return new(Outcome)
	}
	return nil
}

// UnmarshalJSON decodes an event and its payload into the kind's payload type; the payload of
// an unknown kind is kept as json.RawMessage, so nothing is lost.
func (e *Event) UnmarshalJSON(b []byte) error {
	type plain Event
	var raw struct {
		plain
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*e = Event(raw.plain)
	e.Data = nil
	if len(raw.Data) == 0 || string(raw.Data) == "null" {
		return nil
	}
	p := newPayload(e.Kind)
	if p == nil {
		e.Data = raw.Data
		return nil
	}
	if err := json.Unmarshal(raw.Data, p); err != nil {
		return fmt.Errorf("troupe: event %d (%s): data: %w", e.Seq, e.Kind, err)
	}
	e.Data = p
	return nil
}

// RunStart is the payload of run_initialized and run_resumed: the request as the engine will
// run it (ids and seed filled in), so the run can be rebuilt from its log.
type RunStart struct {
	Request *Request `json:"request"`
	Seed    uint64   `json:"seed"`
	Setup   []string `json:"setup,omitempty"` // agents whose Setup ran
}

// RetryScheduled is the payload of retry_scheduled.
type RetryScheduled struct {
	Attempt    int           `json:"attempt"` // the attempt about to start, from 2
	Backoff    time.Duration `json:"backoff_ns"`
	Reason     string        `json:"reason"`
	NextID     string        `json:"next_dispatch_id"`
	PreviousID string        `json:"previous_dispatch_id"`
}

// Progress is the payload of agent_progress: what an agent emitted through Dispatch.Progress.
type Progress struct {
	Kind string `json:"kind"`
	Data any    `json:"data,omitempty"`
}

// StateDelta is the payload of state_delta: the session state keys an agent wrote.
type StateDelta struct {
	Set map[string]any `json:"set"`
}

// Warning is the payload of warning and budget_exhausted.
type Warning struct {
	Message string `json:"message"`
	Code    string `json:"code,omitempty"`
}

// Outcome is the payload of the terminal events and of run_paused.
type Outcome struct {
	Status    RunStatus         `json:"status"`
	Error     *ErrorInfo        `json:"error,omitempty"`
	Fallback  map[string]string `json:"fallback,omitempty"`  // primary agent → fallback agent used
	Questions []Question        `json:"questions,omitempty"` // what a paused run waits for
	Failed    []string          `json:"failed,omitempty"`    // agents whose final result is not completed
	Skipped   []string          `json:"skipped,omitempty"`   // planned agents never dispatched ("task t2" for a task a router never placed)
	Budget    string            `json:"budget,omitempty"`    // the budget spent, when it kept dispatches from starting
}

// MarshalJSON encodes o. A failed run's outcome always has its fallback member, {} when no
// fallback ran: seed 001's compliance test 4 looks for "fallback" in every FAILED event's data.
func (o Outcome) MarshalJSON() ([]byte, error) {
	type plain Outcome
	if o.Status != RunFailed || len(o.Fallback) > 0 {
		return json.Marshal(plain(o))
	}
	return json.Marshal(struct {
		plain
		Fallback map[string]string `json:"fallback"`
	}{plain(o), map[string]string{}})
}
