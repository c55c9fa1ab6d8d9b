package troupe

import (
	"fmt"
	"maps"
	"slices"
	"time"
)

// ErrorAction is what to do when an agent fails: seed 000's on_error (fail_fast, continue,
// fallback) joined with seed 001's ErrorPropagation (which adds retry).
type ErrorAction string

// Error actions.
const (
	FailFast ErrorAction = "fail_fast" // stop the run (default)
	Continue ErrorAction = "continue"  // record the failure and go on
	Retry    ErrorAction = "retry"     // retry recoverable failures with exponential backoff, then fail
	Fallback ErrorAction = "fallback"  // retry recoverable failures, then try fallback agents, then fail
)

// TimeoutAction is seed 000's on_timeout.
type TimeoutAction string

// Timeout actions.
const (
	TimeoutSkip       TimeoutAction = "skip_agent"  // record the timeout and go on (default)
	TimeoutUsePartial TimeoutAction = "use_partial" // use the agent's partial result if it reported one, else skip
	TimeoutFailFast   TimeoutAction = "fail_fast"   // stop the run
	// TimeoutOnError handles a timeout as on_error handles a recoverable failure: retried,
	// then handed to a fallback agent, skipped or failing the run, as on_error says. It is
	// seed 003's TIMEOUT row ("Retry or route to tutor"), which seed 000's three actions
	// cannot say.
	TimeoutOnError TimeoutAction = "on_error"
)

// WarningAction is seed 000's on_warning.
type WarningAction string

// Warning actions.
const (
	WarnContinue WarningAction = "continue" // carry warnings into the run's warnings (default)
	WarnLogOnly  WarningAction = "log_only" // record them in the event log only
)

// RetryPolicy shapes retries: attempt n (from 2) waits Initial·Multiplier^(n-2), capped at Max,
// with ±Jitter·wait drawn from the run's seeded source.
type RetryPolicy struct {
	MaxAttempts int           `json:"max_attempts"` // including the first; 0 means 3
	Initial     time.Duration `json:"initial_backoff_ns"`
	Max         time.Duration `json:"max_backoff_ns"`
	Multiplier  float64       `json:"multiplier"`
	Jitter      float64       `json:"jitter"` // fraction in [0, 1]
}

// Attempts returns MaxAttempts with its default.
func (r RetryPolicy) Attempts() int {
	if r.MaxAttempts <= 0 {
		return 3
	}
	return r.MaxAttempts
}

// ErrorPolicy is the one error policy of a run: seed 000's ErrorPropagationPolicy (on_warning,
// on_error, on_timeout, fallbacks, partial results, min success rate) with seed 001's four
// strategies in OnError. Pointer fields are those whose seed default is not Go's zero value;
// use the accessor methods to read them. The zero value is seed 000's default policy.
type ErrorPolicy struct {
	OnWarning           WarningAction       `json:"on_warning,omitempty"`
	OnError             ErrorAction         `json:"on_error,omitempty"`
	OnTimeout           TimeoutAction       `json:"on_timeout,omitempty"`
	EnableFallback      *bool               `json:"enable_fallback,omitempty"` // default true
	FallbackAgents      map[string][]string `json:"fallback_agents,omitempty"`
	AllowPartialResults *bool               `json:"allow_partial_results,omitempty"` // default true
	MinSuccessRate      *float64            `json:"min_success_rate,omitempty"`      // default 0.5
	Retry               RetryPolicy         `json:"retry"`
}

// Warning returns OnWarning with its default.
func (p *ErrorPolicy) Warning() WarningAction {
	if p.OnWarning == "" {
		return WarnContinue
	}
	return p.OnWarning
}

// Error returns OnError with its default.
func (p *ErrorPolicy) Error() ErrorAction {
	if p.OnError == "" {
		return FailFast
	}
	return p.OnError
}

// Timeout returns OnTimeout with its default.
func (p *ErrorPolicy) Timeout() TimeoutAction {
	if p.OnTimeout == "" {
		return TimeoutSkip
	}
	return p.OnTimeout
}

// FallbackEnabled returns EnableFallback with its default (true).
func (p *ErrorPolicy) FallbackEnabled() bool { return p.EnableFallback == nil || *p.EnableFallback }

// PartialAllowed returns AllowPartialResults with its default (true).
func (p *ErrorPolicy) PartialAllowed() bool {
	return p.AllowPartialResults == nil || *p.AllowPartialResults
}

// MinSuccess returns MinSuccessRate with its default (0.5).
func (p *ErrorPolicy) MinSuccess() float64 {
	if p.MinSuccessRate == nil {
		return 0.5
	}
	return *p.MinSuccessRate
}

// Validate checks enumerations and bounds, that no agent is its own fallback, and the keys
// and agents of FallbackAgents against agents (unless agents is nil).
func (p *ErrorPolicy) Validate(agents AgentSet) error {
	var es ValidationErrors
	bad := func(field, problem string, err error) {
		es = append(es, &ValidationError{Object: "error_policy", Field: field, Problem: problem, Err: err})
	}
	switch p.OnWarning {
	case "", WarnContinue, WarnLogOnly:
	default:
		bad("on_warning", fmt.Sprintf("%q is not one of continue, log_only", p.OnWarning), nil)
	}
	switch p.OnError {
	case "", FailFast, Continue, Retry, Fallback:
	default:
		bad("on_error", fmt.Sprintf("%q is not one of fail_fast, continue, retry, fallback", p.OnError), nil)
	}
	switch p.OnTimeout {
	case "", TimeoutSkip, TimeoutUsePartial, TimeoutFailFast, TimeoutOnError:
	default:
		bad("on_timeout", fmt.Sprintf("%q is not one of fail_fast, skip_agent, use_partial, on_error", p.OnTimeout), nil)
	}
	if r := p.MinSuccessRate; r != nil && !(*r >= 0 && *r <= 1) {
		bad("min_success_rate", fmt.Sprintf("%v is outside [0, 1]", *r), nil)
	}
	if p.Retry.MaxAttempts < 0 {
		bad("retry.max_attempts", "cannot be negative", nil)
	}
	if p.Retry.Initial < 0 || p.Retry.Max < 0 {
		bad("retry", "backoff cannot be negative", nil)
	}
	if m := p.Retry.Multiplier; !(m >= 0) {
		bad("retry.multiplier", fmt.Sprintf("%v is not a non-negative number", m), nil)
	}
	if j := p.Retry.Jitter; !(j >= 0 && j <= 1) {
		bad("retry.jitter", fmt.Sprintf("%v is outside [0, 1]", j), nil)
	}
	for _, primary := range slices.Sorted(maps.Keys(p.FallbackAgents)) {
		if agents != nil && !agents.Has(primary) {
			// The engine looks fallbacks up by the failed agent's name: a key naming no agent
			// never applies.
			bad("fallback_agents", fmt.Sprintf("key: unknown agent %q", primary), ErrUnknownAgent)
		}
		for i, fb := range p.FallbackAgents[primary] {
			field := fmt.Sprintf("fallback_agents.%s[%d]", primary, i)
			switch {
			case fb == primary:
				// The engine never stands an agent in for itself: the entry would be ignored.
				bad(field, "an agent cannot be its own fallback", nil)
			case agents != nil && !agents.Has(fb):
				bad(field, "unknown agent "+fb, ErrUnknownAgent)
			}
		}
	}
	return es.orNil()
}
