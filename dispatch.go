package troupe

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"time"

	"github.com/troupehq/troupe/internal/jsonvalue"
)

// Priority of a dispatch (seed 000: low | medium | high | critical; default medium).
type Priority string

// Priorities.
const (
	PriorityLow      Priority = "low"
	PriorityMedium   Priority = "medium"
	PriorityHigh     Priority = "high"
	PriorityCritical Priority = "critical"
)

// ExecutionMode says how a dispatch fits in its plan (seed 000: sequential | parallel).
type ExecutionMode string

// Execution modes.
const (
	Sequential ExecutionMode = "sequential"
	Parallel   ExecutionMode = "parallel"
)

// UpstreamResult is one entry of a dispatch's upstream_results: what an agent that ran before
// produced (seed 000's example: {"agent": "causal_impact", "result": {...}}).
//
// Seed 000 types an entry as a free dict, so a peer may send keys beyond these fields: Extra
// keeps them, and they are written back out beside the fields, so decoding loses nothing.
type UpstreamResult struct {
	Agent      string         `json:"agent"`
	Result     map[string]any `json:"result"`
	DispatchID string         `json:"dispatch_id,omitempty"`
	Confidence *float64       `json:"confidence,omitempty"`
	Summary    string         `json:"analysis_summary,omitempty"`
	Handoff    map[string]any `json:"handoff,omitempty"`
	Extra      map[string]any `json:"-"`
}

// upstreamFields is UpstreamResult without its methods, for encoding/json.
type upstreamFields UpstreamResult

// upstreamKeys are UpstreamResult's JSON keys.
var upstreamKeys = [...]string{"agent", "result", "dispatch_id", "confidence", "analysis_summary", "handoff"}

// MarshalJSON writes u's fields and, beside them, its Extra keys. A key that is a field's name
// is the field's, even when the field is left out as empty: Extra's value under it is not
// written (it could be one the field cannot hold, which UnmarshalJSON would then refuse).
func (u UpstreamResult) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(upstreamFields(u))
	if err != nil || len(u.Extra) == 0 {
		return b, err
	}
	all := make(map[string]any, len(u.Extra)+6)
	for k, v := range u.Extra {
		all[k] = v
	}
	for _, k := range upstreamKeys {
		delete(all, k)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return nil, err
	}
	for k, v := range fields {
		all[k] = v
	}
	return json.Marshal(all)
}

// UnmarshalJSON reads u's fields and keeps every other key in Extra. Keys match exactly: one
// that names a field only ignoring case ("Agent") is kept in Extra, not decoded into the field.
func (u *UpstreamResult) UnmarshalJSON(b []byte) error {
	var f upstreamFields
	if err := unmarshalExact(b, &f); err != nil {
		return err
	}
	var all map[string]any
	if err := json.Unmarshal(b, &all); err != nil {
		return err
	}
	for _, k := range upstreamKeys {
		delete(all, k)
	}
	if len(all) > 0 {
		f.Extra = all
	}
	*u = UpstreamResult(f)
	return nil
}

// Dispatch is seed 000's AgentDispatchRequest, field for field, with its DSPy hub context. JSON
// names are exactly seed 000's. An agent receives a *Dispatch and must not modify it.
//
// Beyond the wire fields, a Dispatch handed to an agent by the engine gives access to the run:
// State reads session state, Progress emits events, Ask asks a human, Partial records a
// partial result. On a Dispatch built by hand those are inert.
type Dispatch struct {
	// identification
	DispatchID string `json:"dispatch_id"`
	SessionID  string `json:"session_id"`
	QueryID    string `json:"query_id"`

	// routing
	TargetAgent    string   `json:"target_agent"`
	DispatchReason string   `json:"dispatch_reason"`
	Priority       Priority `json:"priority"`

	// input data
	Query       string         `json:"query"`
	ParsedQuery map[string]any `json:"parsed_query"`
	RAGContext  map[string]any `json:"rag_context,omitempty"`

	// execution context
	ExecutionMode ExecutionMode `json:"execution_mode"`
	// UpstreamResults are the results of the stages before the dispatch's, in plan order
	// (troupe's engine: whatever order a group's agents finished in, and not those of the
	// dispatch's own group, which are not upstream of it).
	UpstreamResults []UpstreamResult `json:"upstream_results"`
	DependsOn       []string         `json:"depends_on"`

	// constraints
	TimeoutSeconds *float64 `json:"timeout_seconds,omitempty"`
	MaxCostDollars *float64 `json:"max_cost_dollars,omitempty"`

	// metadata
	DispatchedAt time.Time      `json:"dispatched_at"`
	UserContext  map[string]any `json:"user_context,omitempty"`

	// DSPy context (the hub provides)
	OptimizedPrompts map[string]string `json:"optimized_prompts,omitempty"`
	CollectSignals   bool              `json:"collect_signals"`
	SignalSignature  *string           `json:"signal_signature,omitempty"`

	rt DispatchRuntime
}

// DispatchRuntime is what an engine binds to a dispatch it hands to an agent. Executors and
// engines implement it; agents use it only through Dispatch's methods.
type DispatchRuntime interface {
	State(key string) (any, bool)
	Progress(kind string, data any)
	Ask(ctx context.Context, q Question) (Answer, error)
	Partial(result map[string]any)
}

// Bind attaches rt to d; an engine calls it on the dispatch it is about to hand to an agent.
func (d *Dispatch) Bind(rt DispatchRuntime) { d.rt = rt }

// Runtime returns what Bind attached, or nil.
func (d *Dispatch) Runtime() DispatchRuntime { return d.rt }

// State returns the session state value under key as the agent's dispatch saw it.
func (d *Dispatch) State(key string) (any, bool) {
	if d.rt == nil {
		return nil, false
	}
	return d.rt.State(key)
}

// Progress emits an agent_progress event with data into the run's event stream (seed 004's
// replicate_done and partial_summary are progress events). It is a no-op outside a run.
func (d *Dispatch) Progress(kind string, data any) {
	if d.rt != nil {
		d.rt.Progress(kind, data)
	}
}

// Ask puts a question to the run's human-input handler and waits for the answer. Without a
// handler the run pauses: Ask returns ErrPaused, which the agent should return as its error.
func (d *Dispatch) Ask(ctx context.Context, q Question) (Answer, error) {
	if d.rt == nil {
		return Answer{}, fmt.Errorf("%w: dispatch is not attached to a run", ErrPaused)
	}
	return d.rt.Ask(ctx, q)
}

// Partial records a partial result; with on_timeout=use_partial it becomes the result of a
// dispatch that times out. The engine's result guardrails check it as it is recorded, as they
// check a result: one they block is kept in the timeout's result, refused, and not used.
func (d *Dispatch) Partial(result map[string]any) {
	if d.rt != nil {
		d.rt.Partial(result)
	}
}

// Timeout returns the dispatch's own timeout, or 0 when it has none (or one Validate refuses:
// not positive). A valid timeout is never 0 nor negative: one shorter than a nanosecond is a
// nanosecond, and one longer than a Duration holds (about 292 years) is the longest Duration.
func (d *Dispatch) Timeout() time.Duration {
	t := d.TimeoutSeconds
	if t == nil || !(*t > 0) {
		return 0
	}
	// A float64 beyond int64's range converts to an arbitrary value (on amd64, the most
	// negative Duration): saturate first.
	switch ns := *t * float64(time.Second); {
	case ns >= math.MaxInt64:
		return math.MaxInt64
	case ns < 1:
		return 1
	default:
		return time.Duration(ns)
	}
}

// MarshalJSON encodes d with nil lists as [] and a nil parsed_query as {}: seed 000's model
// declares upstream_results and depends_on as lists and parsed_query as a required dict, and
// pydantic rejects null for each. An unset priority or execution_mode goes out as the seed's
// default (medium, sequential), not as "", which the seed's literals reject. It has a pointer
// receiver and reads only d's exported fields: while an agent runs, the engine may bind and
// unbind d's runtime, and an event watcher may be encoding d at that moment. (A Dispatch is
// encoded through a pointer, as events carry it; a Dispatch value that is not addressable
// encodes without the defaults.)
func (d *Dispatch) MarshalJSON() ([]byte, error) {
	type plain Dispatch
	w := struct {
		*plain
		Priority        Priority         `json:"priority"`
		ExecutionMode   ExecutionMode    `json:"execution_mode"`
		ParsedQuery     map[string]any   `json:"parsed_query"`
		UpstreamResults []UpstreamResult `json:"upstream_results"`
		DependsOn       []string         `json:"depends_on"`
	}{(*plain)(d), d.Priority, d.ExecutionMode, d.ParsedQuery, d.UpstreamResults, d.DependsOn}
	if w.Priority == "" {
		w.Priority = PriorityMedium
	}
	if w.ExecutionMode == "" {
		w.ExecutionMode = Sequential
	}
	if w.ParsedQuery == nil {
		w.ParsedQuery = map[string]any{}
	}
	if w.UpstreamResults == nil {
		w.UpstreamResults = []UpstreamResult{}
	}
	if w.DependsOn == nil {
		w.DependsOn = []string{}
	}
	return json.Marshal(w)
}

// Clone returns a deep copy of d's wire fields, or nil for nil; the copy is bound to no run.
// Like MarshalJSON it reads only d's exported fields, so it may copy a dispatch whose agent is
// running.
func (d *Dispatch) Clone() *Dispatch {
	if d == nil {
		return nil
	}
	c := &Dispatch{
		DispatchID: d.DispatchID, SessionID: d.SessionID, QueryID: d.QueryID,
		TargetAgent: d.TargetAgent, DispatchReason: d.DispatchReason, Priority: d.Priority,
		Query: d.Query, ParsedQuery: cloneMap(d.ParsedQuery), RAGContext: cloneMap(d.RAGContext),
		ExecutionMode: d.ExecutionMode, DependsOn: slices.Clone(d.DependsOn),
		TimeoutSeconds: clonePtr(d.TimeoutSeconds), MaxCostDollars: clonePtr(d.MaxCostDollars),
		DispatchedAt: d.DispatchedAt, UserContext: cloneMap(d.UserContext),
		OptimizedPrompts: maps.Clone(d.OptimizedPrompts), CollectSignals: d.CollectSignals,
		SignalSignature: clonePtr(d.SignalSignature),
	}
	if d.UpstreamResults != nil {
		c.UpstreamResults = make([]UpstreamResult, len(d.UpstreamResults))
		for i, u := range d.UpstreamResults {
			u.Result, u.Handoff, u.Confidence, u.Extra = cloneMap(u.Result), cloneMap(u.Handoff), clonePtr(u.Confidence), cloneMap(u.Extra)
			c.UpstreamResults[i] = u
		}
	}
	return c
}

// applyDefaults sets seed 000's defaults: priority medium, sequential, collect_signals true.
func (d *Dispatch) applyDefaults() {
	d.Priority = PriorityMedium
	d.ExecutionMode = Sequential
	d.CollectSignals = true
}

// NewDispatch returns a dispatch with seed 000's defaults set.
func NewDispatch() *Dispatch {
	d := &Dispatch{}
	d.applyDefaults()
	return d
}

// AgentSet answers whether an agent name is known; *Registry implements it.
type AgentSet interface {
	Has(name string) bool
}

// IsDispatchID reports whether s matches ^disp_[a-z0-9]{16}$.
func IsDispatchID(s string) bool {
	if len(s) != 21 || s[:5] != "disp_" {
		return false
	}
	for i := 5; i < len(s); i++ {
		c := s[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// NewDispatchID formats x as a dispatch id matching ^disp_[a-z0-9]{16}$. The engine derives x
// from the run's seed and the dispatch's place in the plan, so replaying a run reproduces ids.
func NewDispatchID(x uint64) string {
	var b [21]byte
	return string(AppendDispatchID(b[:0], x))
}

// AppendDispatchID appends the dispatch id NewDispatchID(x) would return to b, so an engine can
// lay out many ids in one allocation.
func AppendDispatchID(b []byte, x uint64) []byte {
	const digits = "0123456789abcdefghijklmnopqrstuvwxyz"
	b = append(b, "disp_0000000000000000"...)
	for i := len(b) - 1; i >= len(b)-16; i-- {
		b[i] = digits[x%36]
		x /= 36
	}
	return b
}

// Validate checks d as seed 000's validate_dispatch_request does, against agents instead of a
// hard-coded list, plus the required fields and enumerations of its pydantic model. It returns
// every problem found, as ValidationErrors.
//
// Seed 000 requires session_id, query_id, dispatch_reason and query to be present, not
// non-empty: its model types them as plain str and its validator never looks at them, so an
// empty one is valid. DecodeDispatch reports them when absent.
func (d *Dispatch) Validate(agents AgentSet) error {
	var es ValidationErrors
	bad := func(field, problem string, sentinel error) {
		es = append(es, &ValidationError{Object: "dispatch", Field: field, Problem: problem, Err: sentinel})
	}
	switch {
	case d.DispatchID == "":
		bad("dispatch_id", "required", ErrInvalidDispatch)
	case !IsDispatchID(d.DispatchID):
		bad("dispatch_id", fmt.Sprintf("%q does not match ^disp_[a-z0-9]{16}$", d.DispatchID), ErrInvalidDispatch)
	}
	switch {
	// 000: "" is in no VALID_AGENTS, so it fails even without agents to check against.
	case d.TargetAgent == "":
		bad("target_agent", "required", ErrInvalidDispatch)
	case agents != nil && !agents.Has(d.TargetAgent):
		bad("target_agent", fmt.Sprintf("invalid target agent: %s", d.TargetAgent), ErrUnknownAgent)
	}
	if d.ParsedQuery == nil {
		bad("parsed_query", "required", ErrInvalidDispatch)
	}
	switch d.Priority {
	case PriorityLow, PriorityMedium, PriorityHigh, PriorityCritical:
	default:
		bad("priority", fmt.Sprintf("%q is not one of low, medium, high, critical", d.Priority), ErrInvalidDispatch)
	}
	switch d.ExecutionMode {
	case Sequential, Parallel:
	default:
		bad("execution_mode", fmt.Sprintf("%q is not one of sequential, parallel", d.ExecutionMode), ErrInvalidDispatch)
	}
	for i, dep := range d.DependsOn {
		// As for target_agent, "" is in no VALID_AGENTS: it fails without agents too.
		if dep == "" || agents != nil && !agents.Has(dep) {
			bad(fmt.Sprintf("depends_on[%d]", i), fmt.Sprintf("invalid dependency: %q", dep), ErrUnknownAgent)
		}
	}
	// JSON holds no infinity, but a Dispatch built in Go may: a timeout or a cost limit must
	// be one a clock or a budget can reach, as seed 000's must be a number.
	if t := d.TimeoutSeconds; t != nil && !(*t > 0) {
		bad("timeout_seconds", "timeout must be positive", ErrInvalidDispatch)
	} else if t != nil && math.IsInf(*t, 1) {
		bad("timeout_seconds", "timeout must be finite", ErrInvalidDispatch)
	}
	if c := d.MaxCostDollars; c != nil && !(*c > 0) {
		bad("max_cost_dollars", "cost limit must be positive", ErrInvalidDispatch)
	} else if c != nil && math.IsInf(*c, 1) {
		bad("max_cost_dollars", "cost limit must be finite", ErrInvalidDispatch)
	}
	if d.DispatchedAt.IsZero() {
		bad("dispatched_at", "required", ErrInvalidDispatch)
	}
	return es.orNil()
}

var dispatchRequired = []string{"dispatch_id", "session_id", "query_id", "target_agent", "dispatch_reason", "query", "parsed_query"}

// DecodeDispatch decodes a JSON dispatch request, applies seed 000's defaults (priority,
// execution_mode, collect_signals, dispatched_at = now), and validates it against agents. A
// missing required field, a wrongly typed field and every rule of Validate are reported. Member
// names match exactly, as in seed 000's pydantic model: one that names a field only ignoring
// case ("Target_Agent") is an extra member, ignored, where encoding/json would decode it into
// the field.
func DecodeDispatch(data []byte, agents AgentSet, now time.Time) (*Dispatch, error) {
	raw, present, err := decodeKeys("dispatch", data)
	if err != nil {
		return nil, err
	}
	if dropFolded(raw, reflect.TypeFor[Dispatch]()) {
		if data, err = json.Marshal(raw); err != nil {
			return nil, err
		}
	}
	var es ValidationErrors
	for _, k := range dispatchRequired {
		if !present[k] {
			es = append(es, &ValidationError{Object: "dispatch", Field: k, Problem: "required", Err: ErrInvalidDispatch})
		}
	}
	es = append(es, nullMembers("dispatch", raw, present, dispatchNotNull, ErrInvalidDispatch)...)
	es = append(es, nullItems("dispatch", raw, dispatchLists, ErrInvalidDispatch)...)
	d := NewDispatch()
	if err := json.Unmarshal(data, d); err != nil {
		d = NewDispatch()
		es = append(es, decodeMembers("dispatch", raw, d)...)
	}
	if _, ok := present["dispatched_at"]; !ok {
		d.DispatchedAt = now
	}
	if err := d.Validate(agents); err != nil {
		for _, e := range err.(ValidationErrors) {
			if !containsField(es, e.Field) {
				es = append(es, e)
			}
		}
	}
	if len(es) > 0 {
		return d, es
	}
	return d, nil
}

// dispatchNotNull are the members seed 000's model gives a default but not Optional: pydantic
// rejects null for them, where encoding/json would quietly keep the default.
var dispatchNotNull = []string{"priority", "execution_mode", "upstream_results", "depends_on", "dispatched_at", "collect_signals"}

// nullMembers reports each of keys given as null: absent, a member takes its default; null is
// a value its type does not hold.
func nullMembers(object string, raw map[string]json.RawMessage, present map[string]bool, keys []string, sentinel error) ValidationErrors {
	var es ValidationErrors
	for _, k := range keys {
		if _, given := raw[k]; given && !present[k] {
			es = append(es, &ValidationError{Object: object, Field: k, Problem: "must not be null (leave it out for its default)", Err: sentinel})
		}
	}
	return es
}

// dispatchLists are the lists of seed 000's dispatch model (see nullItems).
var dispatchLists = []string{"upstream_results", "depends_on"}

// nullItems reports each null item of the lists under keys: seed 000's lists hold dicts and
// strs, and pydantic refuses None for an item of either, where encoding/json would decode a
// zero value (an errors list of [null] would satisfy "failed status requires errors").
func nullItems(object string, raw map[string]json.RawMessage, keys []string, sentinel error) ValidationErrors {
	var es ValidationErrors
	for _, k := range keys {
		if !bytes.Contains(raw[k], []byte("null")) {
			continue // no item can be null: the common case costs one scan of the member
		}
		var items []json.RawMessage
		if json.Unmarshal(raw[k], &items) != nil {
			continue // not a list: decoding reports it
		}
		for i, it := range items {
			if bytes.Equal(bytes.TrimSpace(it), []byte("null")) {
				es = append(es, &ValidationError{Object: object, Field: fmt.Sprintf("%s[%d]", k, i), Problem: "an item cannot be null", Err: sentinel})
			}
		}
	}
	return es
}

func containsField(es ValidationErrors, f string) bool {
	for _, e := range es {
		if e.Field == f {
			return true
		}
	}
	return false
}

// decodeKeys returns the top-level members of a JSON object and which keys are present: a key
// is present when its value is not null (pydantic rejects None for a required field).
func decodeKeys(object string, data []byte) (map[string]json.RawMessage, map[string]bool, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, nil, strictField(object, err)
	}
	if raw == nil {
		return nil, nil, &ValidationError{Object: object, Field: "", Problem: "expected a JSON object, got null"}
	}
	present := make(map[string]bool, len(raw))
	for k, v := range raw {
		present[k] = !bytes.Equal(bytes.TrimSpace(v), []byte("null"))
	}
	return raw, present, nil
}

// decodeMembers decodes the members of an object into v one at a time, so that a bad member
// neither hides the others' problems nor keeps them from being decoded, and names every bad
// member — also those whose type decodes itself (time.Time), whose errors encoding/json does
// not attribute to a field.
func decodeMembers(object string, raw map[string]json.RawMessage, v any) ValidationErrors {
	var es ValidationErrors
	for _, k := range slices.Sorted(maps.Keys(raw)) {
		one, err := json.Marshal(map[string]json.RawMessage{k: raw[k]})
		if err == nil {
			err = json.Unmarshal(one, v)
		}
		if err == nil {
			continue
		}
		if t, ok := pythonTime(raw[k]); ok {
			if one, e := json.Marshal(map[string]json.RawMessage{k: t}); e == nil && json.Unmarshal(one, v) == nil {
				continue
			}
		}
		ve := strictField(object, err).(*ValidationError)
		if ve.Field == "" {
			ve.Field, ve.Problem = k, "invalid value: "+err.Error()
		}
		es = append(es, ve)
	}
	return es
}

// pythonTime returns a JSON string that is a timestamp as Python writes one — without an
// offset, as seed 000's datetime.utcnow makes for dispatched_at and pydantic reads, or with a
// space for the T, as str of a datetime gives — in RFC 3339, which encoding/json reads: a
// time without an offset is UTC, as utcnow's is. ok is false for anything else.
func pythonTime(raw json.RawMessage) (json.RawMessage, bool) {
	var s string
	if json.Unmarshal(raw, &s) != nil || len(s) < len("2006-01-02T15:04:05") {
		return nil, false
	}
	b := []byte(s)
	if b[10] == ' ' {
		b[10] = 'T'
	}
	if _, err := time.Parse(time.RFC3339Nano, string(b)); err != nil {
		b = append(b, 'Z')
		if _, err := time.Parse(time.RFC3339Nano, string(b)); err != nil {
			return nil, false
		}
	}
	out, err := json.Marshal(string(b))
	return out, err == nil
}

// strictField turns encoding/json errors into ValidationErrors that name the field.
func strictField(object string, err error) error {
	if err == nil {
		return nil
	}
	var te *json.UnmarshalTypeError
	if ok := asTypeError(err, &te); ok {
		return &ValidationError{Object: object, Field: te.Field, Problem: fmt.Sprintf("expected %s, got JSON %s", jsonvalue.KindWanted(te.Type), te.Value), Err: err}
	}
	return &ValidationError{Object: object, Field: "", Problem: "malformed JSON: " + err.Error(), Err: err}
}

func asTypeError(err error, target **json.UnmarshalTypeError) bool {
	te, ok := err.(*json.UnmarshalTypeError)
	if ok {
		*target = te
	}
	return ok
}
