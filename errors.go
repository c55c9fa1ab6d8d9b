package troupe

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"runtime"
	"strings"
)

// Sentinel errors for conditions callers branch on; match them with errors.Is.
var (
	// ErrUnknownAgent: a dispatch, dependency, fallback or next_agent names no registered agent.
	ErrUnknownAgent = errors.New("troupe: unknown agent")
	// ErrInvalidDispatch: a dispatch request failed seed 000's validate_dispatch_request.
	ErrInvalidDispatch = errors.New("troupe: invalid dispatch")
	// ErrInvalidResult: a dispatch response failed seed 000's validate_dispatch_response.
	ErrInvalidResult = errors.New("troupe: invalid result")
	// ErrTimeout: a dispatch ran past its deadline.
	ErrTimeout = errors.New("troupe: dispatch timed out")
	// ErrCancelled: the run was cancelled by its caller.
	ErrCancelled = errors.New("troupe: run cancelled")
	// ErrPaused: the run stopped to wait for a human and can be resumed.
	ErrPaused = errors.New("troupe: run paused for human input")
	// ErrBudgetExhausted: the time or cost budget was spent; no new dispatches start.
	ErrBudgetExhausted = errors.New("troupe: budget exhausted")
	// ErrBlocked: a guardrail blocked a dispatch or its result.
	ErrBlocked = errors.New("troupe: blocked by guardrail")
	// ErrRunNotFound: a store has no run with that id.
	ErrRunNotFound = errors.New("troupe: run not found")
	// ErrRunFinished: a run that already reached a terminal stage cannot be resumed.
	ErrRunFinished = errors.New("troupe: run already finished")
	// ErrRunExists: a new run was given the id of a run its store holds already.
	ErrRunExists = errors.New("troupe: a run with this id is recorded already")
	// ErrSeqConflict: an append's sequence number is not the next one of the run's log.
	ErrSeqConflict = errors.New("troupe: event sequence conflict")
	// ErrShutdown: the engine shut down (engine.Engine.Shutdown) and stopped the run without
	// ending it; the run can be resumed from its log.
	ErrShutdown = errors.New("troupe: the engine shut down; the run can be resumed from its log")
)

// ValidationError says which object and field failed validation and why.
type ValidationError struct {
	Object  string // "dispatch", "result", "context", "criteria", ...
	Field   string // JSON field name, e.g. "target_agent"
	Problem string // e.g. "required", `unknown agent "x"`
	Err     error  // sentinel the error matches, if any
}

func (e *ValidationError) Error() string {
	if e.Field == "" { // the object as a whole: malformed JSON, say
		return fmt.Sprintf("troupe: %s: %s", e.Object, e.Problem)
	}
	return fmt.Sprintf("troupe: %s: field %q: %s", e.Object, e.Field, e.Problem)
}

// Unwrap returns the sentinel the problem belongs to (e.g. ErrUnknownAgent).
func (e *ValidationError) Unwrap() error { return e.Err }

// ValidationErrors is every problem found in one object, in field order.
type ValidationErrors []*ValidationError

func (es ValidationErrors) Error() string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = e.Error()
	}
	return strings.Join(parts, "; ")
}

// Unwrap exposes each problem to errors.Is and errors.As.
func (es ValidationErrors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

func (es ValidationErrors) orNil() error {
	if len(es) == 0 {
		return nil
	}
	return es
}

// OrchestrationError is seed 001's structured error: where in the lifecycle it happened, the
// context at failure time (and so the trace id), the cause and whether retry or fallback can
// recover from it. It works with errors.Is / errors.As through Unwrap.
type OrchestrationError struct {
	Stage       Stage
	Message     string
	Context     Context
	Cause       error
	Recoverable bool
	Metadata    map[string]any
}

func (e *OrchestrationError) Error() string {
	var b strings.Builder
	b.WriteString("troupe: ")
	b.WriteString(e.Stage.String())
	b.WriteString(": ")
	b.WriteString(e.Message)
	if e.Cause != nil && (e.Message == "" || !strings.Contains(e.Message, e.Cause.Error())) {
		b.WriteString(": ")
		b.WriteString(e.Cause.Error())
	}
	if id := e.Context.TraceID(); id != "" {
		b.WriteString(" (trace ")
		b.WriteString(id)
		b.WriteString(")")
	}
	return b.String()
}

// Unwrap returns the cause.
func (e *OrchestrationError) Unwrap() error { return e.Cause }

// Error codes of seed 003's shared agent error contract, plus troupe's own.
const (
	CodeInvalidInput   = "INVALID_INPUT"   // missing or malformed input field
	CodeRAGEmpty       = "RAG_EMPTY"       // no content found for the topic
	CodeTimeout        = "TIMEOUT"         // the agent took too long
	CodeStateMissing   = "STATE_MISSING"   // a declared read is not in session state
	CodeInvalidOutput  = "INVALID_OUTPUT"  // the agent's response failed validation
	CodePanic          = "PANIC"           // the agent panicked
	CodeAgentError     = "AGENT_ERROR"     // the agent returned a plain error
	CodeBlocked        = "BLOCKED"         // a guardrail blocked the dispatch or its result
	CodeCancelled      = "CANCELLED"       // the run was cancelled
	CodeHumanRejected  = "HUMAN_REJECTED"  // a human rejected a result that required review
	CodeBudget         = "BUDGET"          // the run's budget was spent
	CodeUnknownAgent   = "UNKNOWN_AGENT"   // no such agent in the registry
	CodeHumanRequired  = "HUMAN_REQUIRED"  // input from a human is needed and none can be had now
	CodeInvalidRequest = "INVALID_REQUEST" // the dispatch request failed validation
)

// AgentError is seed 003's error contract, returned by an agent to say what went wrong, whether
// retrying can help and what the coordinator should do instead.
type AgentError struct {
	Code           string
	Message        string
	Recoverable    bool
	FallbackAction string
	Cause          error
	Details        map[string]any // carried into ErrorInfo.Details, e.g. an HTTP status and Retry-After
}

func (e *AgentError) Error() string {
	s := "troupe: agent error " + e.Code + ": " + e.Message
	if e.Cause != nil {
		s += ": " + e.Cause.Error()
	}
	return s
}

// Unwrap returns the cause.
func (e *AgentError) Unwrap() error { return e.Cause }

// PanicError is what a panicking agent turns into: the panic value and the goroutine's stack.
type PanicError struct {
	Value any
	Stack string
}

func (e *PanicError) Error() string { return fmt.Sprintf("troupe: agent panicked: %v", e.Value) }

// NewPanicError wraps v, a value recovered from a panic, with the stack of the goroutine that
// calls it, cut at 16 KB so that a deep stack does not swell the result that carries it. Call
// it in the deferred function that recovered: the stack is then the panicking goroutine's,
// from the panic down.
func NewPanicError(v any) *PanicError {
	buf := make([]byte, 16<<10)
	return &PanicError{Value: v, Stack: string(buf[:runtime.Stack(buf, false)])}
}

// CallSafely calls f, user code such as an agent's Setup or a guardrail, and returns what it
// returns, or, when it panics, a *PanicError with the panic and its stack: the process goes
// on, and the caller reports the failure as it would an error.
func CallSafely(f func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = NewPanicError(v)
		}
	}()
	return f()
}

// ErrorInfo is one entry of a result's errors list (seed 000's errors: List[Dict]), shaped as
// seed 003's error contract so every agent reports failures the same way.
//
// Seed 000 lets an error be any dict, so decoding loses nothing: a member no field maps, or
// whose value its field cannot hold, is kept in Extra and encoded back as it came. A dict
// without "message" takes its "error" member, if a string, as the message.
type ErrorInfo struct {
	Code           string         `json:"code"`
	Message        string         `json:"message"`
	Recoverable    bool           `json:"recoverable"`
	FallbackAction string         `json:"fallback_action,omitempty"`
	Details        map[string]any `json:"details,omitempty"`
	// Extra holds the members of a decoded dict that the fields above did not take, by key;
	// MarshalJSON writes them as members of the dict beside the fields.
	Extra map[string]any `json:"-"`
}

// MarshalJSON encodes e's fields and, beside them, its Extra members. A field left zero gives
// way to an Extra member of the same key, so a member decoding could not map (a numeric
// "code") encodes as it came.
func (e ErrorInfo) MarshalJSON() ([]byte, error) {
	type plain ErrorInfo
	if len(e.Extra) == 0 {
		return json.Marshal(plain(e))
	}
	m := make(map[string]any, len(e.Extra)+5)
	maps.Copy(m, e.Extra)
	for _, f := range [...]struct {
		key             string
		v               any
		zero, omitEmpty bool
	}{
		{"code", e.Code, e.Code == "", false},
		{"message", e.Message, e.Message == "", false},
		{"recoverable", e.Recoverable, !e.Recoverable, false},
		{"fallback_action", e.FallbackAction, e.FallbackAction == "", true},
		{"details", e.Details, len(e.Details) == 0, true},
	} {
		if _, kept := m[f.key]; f.zero && (kept || f.omitEmpty) {
			continue
		}
		m[f.key] = f.v
	}
	return json.Marshal(m)
}

// UnmarshalJSON decodes an error dict: each member into its field when it has one that can
// hold the value, every other member into Extra. Keys match exactly, not case-insensitively as
// encoding/json's do, so a key survives a round trip as it came.
func (e *ErrorInfo) UnmarshalJSON(b []byte) error {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(b, &members); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			te.Type = reflect.TypeFor[ErrorInfo]()
		}
		return err
	}
	if members == nil {
		return nil // null leaves e as it is, as it would a struct without this method
	}
	*e = ErrorInfo{}
	for k, v := range members {
		var into any
		switch k {
		case "code":
			into = &e.Code
		case "message":
			into = &e.Message
		case "recoverable":
			into = &e.Recoverable
		case "fallback_action":
			into = &e.FallbackAction
		case "details":
			into = &e.Details
		}
		// A null member is kept too: decoding it into a field would turn it into "" or false.
		if into != nil && string(v) != "null" && json.Unmarshal(v, into) == nil {
			continue
		}
		var x any
		if err := json.Unmarshal(v, &x); err != nil {
			return err
		}
		if e.Extra == nil {
			e.Extra = make(map[string]any, len(members))
		}
		e.Extra[k] = x
	}
	if _, ok := members["message"]; !ok {
		if s, ok := e.Extra["error"].(string); ok {
			e.Message = s
		}
	}
	return nil
}

// Err turns e back into an error, as ErrorInfoOf's inverse: an *AgentError with e's code,
// message, recoverability and details, whose cause is the sentinel of the code (ErrTimeout for
// TIMEOUT, ErrBlocked for BLOCKED, …), so errors.Is and errors.As work on what a result
// recorded. ErrorInfoOf of it gives e back as it was (the message does not repeat the sentinel, which the
// code names). A result keeps its errors as ErrorInfo, which is all a run read back from its
// log has of them.
func (e ErrorInfo) Err() error {
	return &AgentError{Code: e.Code, Message: e.Message, Recoverable: e.Recoverable,
		FallbackAction: e.FallbackAction, Details: e.Details, Cause: codeSentinel(e.Code)}
}

// codeSentinel is the sentinel error of an error code, or nil for codes without one.
func codeSentinel(code string) error {
	switch code {
	case CodeTimeout:
		return ErrTimeout
	case CodeBlocked:
		return ErrBlocked
	case CodeCancelled:
		return ErrCancelled
	case CodeBudget:
		return ErrBudgetExhausted
	case CodeUnknownAgent:
		return ErrUnknownAgent
	case CodeInvalidOutput:
		return ErrInvalidResult
	case CodeInvalidRequest:
		return ErrInvalidDispatch
	}
	return nil
}

// ErrorInfoOf converts any error into an ErrorInfo: an *AgentError keeps its fields, a
// *PanicError carries its stack in details, anything else becomes AGENT_ERROR, recoverable.
func ErrorInfoOf(err error) ErrorInfo {
	var ae *AgentError
	if errors.As(err, &ae) {
		// The code has a field of its own: the message does not repeat it (nor the prefix
		// that says it is an agent error), wherever in the chain the AgentError is.
		msg := strings.Replace(err.Error(), "troupe: agent error "+ae.Code+": ", "", 1)
		if s := codeSentinel(ae.Code); s != nil && ae.Cause == s {
			// Nor the code's sentinel as the cause: "…: troupe: invalid result" after an
			// INVALID_OUTPUT message says it twice.
			msg = strings.Replace(msg, ae.Message+": "+s.Error(), ae.Message, 1)
		}
		if pe, ok := ae.Cause.(*PanicError); ok && ae.Code == CodePanic {
			// Nor a panic its message tells already ("guardrail pii panicked: v"), which would
			// add that an agent panicked: the details hold the panic and its stack.
			msg = strings.Replace(msg, ae.Message+": "+pe.Error(), ae.Message, 1)
		}
		return ErrorInfo{Code: ae.Code, Message: msg, Recoverable: ae.Recoverable, FallbackAction: ae.FallbackAction, Details: ae.Details}
	}
	var pe *PanicError
	if errors.As(err, &pe) {
		return ErrorInfo{Code: CodePanic, Message: pe.Error(), Details: map[string]any{"panic": fmt.Sprint(pe.Value), "stack": pe.Stack}}
	}
	var ve *ValidationError
	var ves ValidationErrors
	if errors.As(err, &ves) || errors.As(err, &ve) {
		return ErrorInfo{Code: CodeInvalidOutput, Message: err.Error()}
	}
	switch {
	case errors.Is(err, ErrTimeout):
		return ErrorInfo{Code: CodeTimeout, Message: err.Error(), Recoverable: true}
	case errors.Is(err, ErrBlocked):
		return ErrorInfo{Code: CodeBlocked, Message: err.Error()}
	case errors.Is(err, ErrCancelled):
		return ErrorInfo{Code: CodeCancelled, Message: err.Error()}
	}
	return ErrorInfo{Code: CodeAgentError, Message: err.Error(), Recoverable: true}
}
