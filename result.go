package troupe

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"time"
)

// Status of a dispatch response (seed 000: completed | failed | timeout | cancelled).
type Status string

// Statuses.
const (
	StatusCompleted Status = "completed"
	StatusFailed    Status = "failed"
	StatusTimeout   Status = "timeout"
	StatusCancelled Status = "cancelled"
)

// TrainingSignal is one DSPy training example an agent collected while it ran (seed 000's
// Sender agents return them; the hub collects them).
type TrainingSignal struct {
	Signature string         `json:"signature"`
	Input     map[string]any `json:"input,omitempty"`
	Output    map[string]any `json:"output,omitempty"`
	Quality   *float64       `json:"quality,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

// UnmarshalJSON decodes a training signal matching member names exactly, as seed 000's model
// does: a member that names a field only ignoring case ("Quality") is ignored.
func (s *TrainingSignal) UnmarshalJSON(b []byte) error {
	type plain TrainingSignal
	return unmarshalExact(b, (*plain)(s))
}

// Result is seed 000's AgentDispatchResponse, field for field, with its DSPy signal fields;
// JSON names are exactly seed 000's. Two troupe extensions follow them: cost_dollars (what the
// dispatch cost, for max_cost_dollars budgets) and annotations (what guardrails attached).
//
// An agent returns a *Result with what it knows — agent_result, analysis_summary, confidence,
// warnings, handoff, next_agent, requires_human, usage — and the engine fills in the
// identification, status and timing fields. The engine copies what an agent returns, so an
// agent may return the same *Result value from many calls.
type Result struct {
	// identification
	DispatchID string `json:"dispatch_id"`
	SessionID  string `json:"session_id"`
	QueryID    string `json:"query_id"`
	AgentName  string `json:"agent_name"`

	// status
	Status Status `json:"status"`

	// results (if completed)
	AgentResult     map[string]any `json:"agent_result,omitempty"`
	AnalysisSummary *string        `json:"analysis_summary,omitempty"`
	Confidence      *float64       `json:"confidence,omitempty"`

	// errors (if failed)
	Errors   []ErrorInfo `json:"errors"`
	Warnings []string    `json:"warnings"`

	// routing
	NextAgent     *string `json:"next_agent,omitempty"`
	RequiresHuman bool    `json:"requires_human"`

	// handoff
	Handoff map[string]any `json:"handoff,omitempty"`

	// metadata
	ExecutionTimeMS int64     `json:"execution_time_ms"`
	TokensUsed      *int64    `json:"tokens_used,omitempty"`
	ModelUsed       *string   `json:"model_used,omitempty"`
	StartedAt       time.Time `json:"started_at"`
	CompletedAt     time.Time `json:"completed_at"`

	// observability
	SpanID  *string `json:"span_id,omitempty"`
	TraceID *string `json:"trace_id,omitempty"`

	// DSPy signals (senders provide)
	TrainingSignals []TrainingSignal `json:"training_signals"`
	SignalQuality   *float64         `json:"signal_quality,omitempty"`

	// troupe extensions
	CostDollars *float64       `json:"cost_dollars,omitempty"`
	Annotations map[string]any `json:"annotations,omitempty"`
}

// MarshalJSON encodes r with nil lists as []: seed 000's model declares errors, warnings and
// training_signals as lists, and pydantic rejects null for them.
func (r Result) MarshalJSON() ([]byte, error) {
	type plain Result
	if r.Errors == nil {
		r.Errors = []ErrorInfo{}
	}
	if r.Warnings == nil {
		r.Warnings = []string{}
	}
	if r.TrainingSignals == nil {
		r.TrainingSignals = []TrainingSignal{}
	}
	return json.Marshal(plain(r))
}

// Ptr returns a pointer to v; handy for Result's and Dispatch's optional fields.
func Ptr[T any](v T) *T { return &v }

// Summary returns the analysis summary or "".
func (r *Result) Summary() string {
	if r == nil || r.AnalysisSummary == nil {
		return ""
	}
	return *r.AnalysisSummary
}

// Succeeded reports whether the result is completed.
func (r *Result) Succeeded() bool { return r != nil && r.Status == StatusCompleted }

// Validate checks r as seed 000's validate_dispatch_response does — completed requires
// agent_result, failed requires errors, execution time not negative, timestamps in order,
// next_agent known — plus its pydantic model's required fields, enumerations and bounds.
//
// Seed 000 requires dispatch_id, session_id, query_id and agent_name to be present, not
// non-empty: its model types them as plain str and its validator never looks at them, so an
// empty one is valid. DecodeResult reports them when absent.
//
// Two checks are troupe's, not the seed's, whose model leaves tokens_used unbounded and has no
// cost_dollars: tokens_used and cost_dollars must not be negative, and a cost must be finite.
// Both are added to the run's spend and checked against its budgets, where a negative one would
// give back budget an agent spent.
func (r *Result) Validate(agents AgentSet) error {
	if r.plainlyValid(agents) {
		return nil
	}
	return r.validate(agents)
}

// plainlyValid reports whether r passes every rule of Validate. It is Validate's fast path,
// with a small stack frame: the engine validates every response on the goroutine that ran the
// agent, and validate's frame alone would make most of those goroutines grow their stacks.
func (r *Result) plainlyValid(agents AgentSet) bool {
	switch {
	case r.Status == StatusCompleted && len(r.AgentResult) == 0,
		r.Status == StatusFailed && len(r.Errors) == 0,
		r.Status != StatusCompleted && r.Status != StatusFailed && r.Status != StatusTimeout && r.Status != StatusCancelled:
		return false
	case r.Confidence != nil && !(*r.Confidence >= 0 && *r.Confidence <= 1),
		r.SignalQuality != nil && !(*r.SignalQuality >= 0 && *r.SignalQuality <= 1),
		r.ExecutionTimeMS < 0,
		r.StartedAt.IsZero(), r.CompletedAt.IsZero(), r.CompletedAt.Before(r.StartedAt),
		r.NextAgent != nil && *r.NextAgent != "" && agents != nil && !agents.Has(*r.NextAgent),
		r.TokensUsed != nil && *r.TokensUsed < 0,
		r.CostDollars != nil && !(*r.CostDollars >= 0 && *r.CostDollars <= math.MaxFloat64):
		return false
	}
	return true
}

// validate reports every rule r breaks.
func (r *Result) validate(agents AgentSet) error {
	var es ValidationErrors
	bad := func(field, problem string, sentinel error) {
		es = append(es, &ValidationError{Object: "result", Field: field, Problem: problem, Err: sentinel})
	}
	switch r.Status {
	case StatusCompleted:
		if len(r.AgentResult) == 0 {
			bad("agent_result", "completed status requires agent_result", ErrInvalidResult)
		}
	case StatusFailed:
		if len(r.Errors) == 0 {
			bad("errors", "failed status requires errors", ErrInvalidResult)
		}
	case StatusTimeout, StatusCancelled:
	case "":
		bad("status", "required", ErrInvalidResult)
	default:
		bad("status", fmt.Sprintf("%q is not one of completed, failed, timeout, cancelled", r.Status), ErrInvalidResult)
	}
	if r.Confidence != nil && !(*r.Confidence >= 0 && *r.Confidence <= 1) {
		bad("confidence", fmt.Sprintf("%v is outside [0, 1]", *r.Confidence), ErrInvalidResult)
	}
	if r.SignalQuality != nil && !(*r.SignalQuality >= 0 && *r.SignalQuality <= 1) {
		bad("signal_quality", fmt.Sprintf("%v is outside [0, 1]", *r.SignalQuality), ErrInvalidResult)
	}
	if r.ExecutionTimeMS < 0 {
		bad("execution_time_ms", "execution time cannot be negative", ErrInvalidResult)
	}
	switch {
	case r.StartedAt.IsZero():
		bad("started_at", "required", ErrInvalidResult)
	case r.CompletedAt.IsZero():
		bad("completed_at", "required", ErrInvalidResult)
	case r.CompletedAt.Before(r.StartedAt):
		bad("completed_at", "completion time before start time", ErrInvalidResult)
	}
	if r.NextAgent != nil && *r.NextAgent != "" && agents != nil && !agents.Has(*r.NextAgent) {
		bad("next_agent", "invalid next_agent: "+*r.NextAgent, ErrUnknownAgent)
	}
	if r.TokensUsed != nil && *r.TokensUsed < 0 {
		bad("tokens_used", "cannot be negative", ErrInvalidResult)
	}
	// A cost is added to the run's spend and checked against its budget: a NaN would make
	// every budget check pass, an infinity would spend every budget at once, and neither
	// can be encoded (aggregate.Combine refuses both).
	if c := r.CostDollars; c != nil && *c < 0 {
		bad("cost_dollars", "cannot be negative", ErrInvalidResult)
	} else if c != nil && !(*c <= math.MaxFloat64) {
		bad("cost_dollars", fmt.Sprintf("%v is not a finite number", *c), ErrInvalidResult)
	}
	return es.orNil()
}

// resultNotNull are the members seed 000's model gives a default but not Optional (see
// dispatchNotNull).
var resultNotNull = []string{"errors", "warnings", "requires_human", "training_signals"}

// resultLists are the lists of seed 000's response model (see nullItems).
var resultLists = []string{"errors", "warnings", "training_signals"}

var resultRequired = []string{"dispatch_id", "session_id", "query_id", "agent_name", "status", "execution_time_ms", "started_at", "completed_at"}

// DecodeResult decodes a JSON dispatch response and validates it against agents: missing
// required fields, wrongly typed fields and every rule of Validate are reported together. Member
// names match exactly, as in seed 000's pydantic model: one that names a field only ignoring
// case ("Confidence") is an extra member, ignored, where encoding/json would decode it into
// the field.
func DecodeResult(data []byte, agents AgentSet) (*Result, error) {
	raw, present, err := decodeKeys("result", data)
	if err != nil {
		return nil, err
	}
	if dropFolded(raw, reflect.TypeFor[Result]()) {
		if data, err = json.Marshal(raw); err != nil {
			return nil, err
		}
	}
	var es ValidationErrors
	for _, k := range resultRequired {
		if !present[k] {
			es = append(es, &ValidationError{Object: "result", Field: k, Problem: "required", Err: ErrInvalidResult})
		}
	}
	es = append(es, nullMembers("result", raw, present, resultNotNull, ErrInvalidResult)...)
	es = append(es, nullItems("result", raw, resultLists, ErrInvalidResult)...)
	r := &Result{}
	if err := json.Unmarshal(data, r); err != nil {
		r = &Result{}
		es = append(es, decodeMembers("result", raw, r)...)
	}
	if err := r.Validate(agents); err != nil {
		for _, e := range err.(ValidationErrors) {
			if !containsField(es, e.Field) {
				es = append(es, e)
			}
		}
	}
	if len(es) > 0 {
		return r, es
	}
	return r, nil
}

// Clone returns a deep copy of r, or nil for nil: modifying the copy (its maps, lists and
// optional fields) changes nothing of r. Values in agent_result, handoff and the other maps
// are copied as far as they are JSON-shaped (maps, lists); a value of another type is shared.
func (r *Result) Clone() *Result {
	if r == nil {
		return nil
	}
	c := *r
	c.AgentResult = cloneMap(r.AgentResult)
	c.AnalysisSummary = clonePtr(r.AnalysisSummary)
	c.Confidence = clonePtr(r.Confidence)
	c.Errors = cloneErrors(r.Errors)
	c.Warnings = slices.Clone(r.Warnings)
	c.NextAgent = clonePtr(r.NextAgent)
	c.Handoff = cloneMap(r.Handoff)
	c.TokensUsed = clonePtr(r.TokensUsed)
	c.ModelUsed = clonePtr(r.ModelUsed)
	c.SpanID = clonePtr(r.SpanID)
	c.TraceID = clonePtr(r.TraceID)
	if r.TrainingSignals != nil {
		c.TrainingSignals = make([]TrainingSignal, len(r.TrainingSignals))
		for i, s := range r.TrainingSignals {
			s.Input, s.Output, s.Metadata = cloneMap(s.Input), cloneMap(s.Output), cloneMap(s.Metadata)
			s.Quality = clonePtr(s.Quality)
			c.TrainingSignals[i] = s
		}
	}
	c.SignalQuality = clonePtr(r.SignalQuality)
	c.CostDollars = clonePtr(r.CostDollars)
	c.Annotations = cloneMap(r.Annotations)
	return &c
}

// Annotate attaches notes to r's annotations under name (a guardrail's, say), merged with
// what was attached under name before, later keys winning. It never writes into a map r may
// share with the agent that returned it (an agent may return one Result from many calls) or
// with whoever made notes: r.Annotations, and the map under name when there was one, are
// replaced by copies.
func (r *Result) Annotate(name string, notes map[string]any) {
	all := make(map[string]any, len(r.Annotations)+1)
	maps.Copy(all, r.Annotations)
	if prev, ok := all[name].(map[string]any); ok {
		merged := maps.Clone(prev)
		maps.Copy(merged, notes)
		notes = merged
	}
	all[name] = notes
	r.Annotations = all
}
