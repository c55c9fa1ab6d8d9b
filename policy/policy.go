// Package policy decides what a run does when a dispatch fails, times out or the run ends with
// failures: retry with backoff, fall back to another agent, use a partial result, skip and go
// on, or fail the run. It is pure: the same policy, failure and random draw give the same
// action; the engine supplies the draw from the run's seed, so jitter is reproducible.
package policy

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/troupehq/troupe"
)

// Kind is what to do about a failed dispatch.
type Kind uint8

// Action kinds.
const (
	Skip       Kind = iota + 1 // record the failure, go on with the run
	Retry                      // dispatch the same agent again after Backoff
	Fallback                   // dispatch Agent instead
	UsePartial                 // take the partial result the agent reported before timing out
	FailRun                    // stop the run: FAILED
)

func (k Kind) String() string {
	switch k {
	case Skip:
		return "skip"
	case Retry:
		return "retry"
	case Fallback:
		return "fallback"
	case UsePartial:
		return "use_partial"
	case FailRun:
		return "fail_run"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Failure describes one dispatch that did not complete.
type Failure struct {
	Status        troupe.Status // failed, timeout or cancelled
	Recoverable   bool          // from the agent's error (seed 003's recoverable flag)
	Attempt       int           // attempt of the same agent that just failed, from 1
	Fallbacks     []string      // fallback agents for the task's primary, in order
	FallbacksUsed int           // how many of Fallbacks were already tried
	HasPartial    bool          // the agent reported a partial result
	// RetryAfter is how long the agent's service asked callers to wait before trying again
	// (an HTTP Retry-After); 0 when it did not say. A retry waits at least this long, and a
	// request to wait longer than the policy's longest backoff is not retried.
	RetryAfter time.Duration
}

// Action is the decision.
type Action struct {
	Kind    Kind
	Backoff time.Duration // for Retry
	Agent   string        // for Fallback
	Reason  string        // a sentence for the event log
}

// Decide applies p to f. rnd is a uniformly random 64-bit draw used for jitter only. The rules,
// in order (seed 000's error propagation flow, with seed 001's strategies as on_error):
//
//   - cancelled: Skip (the run is ending anyway).
//   - timeout: on_timeout fail_fast → FailRun; use_partial with a partial result → UsePartial;
//     on_error → as a recoverable failure (the rules below); otherwise Skip.
//   - failed, on_error retry or fallback, recoverable, attempts left → Retry with backoff.
//   - failed, on_error fallback, fallback enabled, an untried fallback agent → Fallback.
//   - failed, on_error continue → Skip.
//   - otherwise → FailRun.
func Decide(p *troupe.ErrorPolicy, f Failure, rnd uint64) Action {
	switch f.Status {
	case troupe.StatusCancelled:
		return Action{Kind: Skip, Reason: "dispatch cancelled"}
	case troupe.StatusTimeout:
		switch p.Timeout() {
		case troupe.TimeoutFailFast:
			return Action{Kind: FailRun, Reason: "timed out and on_timeout is fail_fast"}
		case troupe.TimeoutUsePartial:
			if f.HasPartial {
				return Action{Kind: UsePartial, Reason: "timed out; using the partial result it reported (on_timeout use_partial)"}
			}
			return Action{Kind: Skip, Reason: "timed out with no partial result; skipping (on_timeout use_partial)"}
		case troupe.TimeoutOnError:
			f.Recoverable = true // another attempt, or another agent, may well be in time
			a := decideFailure(p, f, rnd)
			a.Reason = "timed out, handled as on_error (on_timeout on_error): " + a.Reason
			return a
		}
		return Action{Kind: Skip, Reason: "timed out; skipping (on_timeout skip_agent)"}
	}
	return decideFailure(p, f, rnd)
}

// decideFailure applies on_error to a failure.
func decideFailure(p *troupe.ErrorPolicy, f Failure, rnd uint64) Action {
	onErr := p.Error()
	retryable := f.Recoverable && f.Attempt < p.Retry.Attempts()
	if retryable && f.RetryAfter > maxBackoff(p.Retry) {
		// Waiting that long would hold the run past anything its policy allows; the failure
		// stands (and falls back or continues as the policy says).
		retryable = false
	}
	if (onErr == troupe.Retry || onErr == troupe.Fallback) && retryable {
		b := Backoff(p.Retry, f.Attempt+1, rnd)
		why := ""
		if f.RetryAfter > b {
			b, why = f.RetryAfter, " as the service asked (Retry-After)"
		}
		return Action{Kind: Retry, Backoff: b, Reason: fmt.Sprintf("recoverable failure; retry %d of %d after %v%s (on_error %s)", f.Attempt+1, p.Retry.Attempts(), b, why, onErr)}
	}
	if onErr == troupe.Fallback && p.FallbackEnabled() && f.FallbacksUsed < len(f.Fallbacks) {
		fb := f.Fallbacks[f.FallbacksUsed]
		return Action{Kind: Fallback, Agent: fb, Reason: fmt.Sprintf("falling back to %s (on_error fallback)", fb)}
	}
	switch onErr {
	case troupe.Continue:
		return Action{Kind: Skip, Reason: "failure recorded; continuing (on_error continue)"}
	case troupe.Retry:
		return Action{Kind: FailRun, Reason: noRetry(p, f) + " (on_error retry)"}
	case troupe.Fallback:
		if !p.FallbackEnabled() {
			return Action{Kind: FailRun, Reason: "failed and fallback is disabled (enable_fallback false)"}
		}
		return Action{Kind: FailRun, Reason: "failed and no fallback agent is left (on_error fallback)"}
	}
	return Action{Kind: FailRun, Reason: "failed (on_error fail_fast)"}
}

// noRetry says why a failure that on_error retry did not retry stands: its attempts are spent,
// or it was not retried, and why not. An Attempt past the policy's attempts is a caller's way
// of allowing no more (the engine's, when a budget refuses the retry, and it says why).
func noRetry(p *troupe.ErrorPolicy, f Failure) string {
	n := p.Retry.Attempts()
	switch {
	case !f.Recoverable:
		return "not retried: the error is not recoverable"
	case f.Attempt > n:
		return "not retried: no retry may start"
	case n <= 1:
		return "not retried: max_attempts is 1"
	case f.Attempt >= n:
		return fmt.Sprintf("failed after %d attempts", f.Attempt)
	}
	return fmt.Sprintf("not retried: the service asked to wait %v (Retry-After), longer than the longest backoff %v", f.RetryAfter, maxBackoff(p.Retry))
}

// Backoff defaults for a zero RetryPolicy.
const (
	DefaultInitialBackoff = 100 * time.Millisecond
	DefaultMaxBackoff     = 10 * time.Second
	DefaultMultiplier     = 2.0
)

// Backoff returns the wait before attempt (from 2): Initial·Multiplier^(attempt-2), capped at
// Max, then scaled by 1 ± Jitter using rnd. Zero fields take the defaults above (as does a
// Multiplier that is no positive number). ErrorPolicy.Validate refuses a Jitter outside
// [0, 1], but a direct caller may pass one: above 1 (+Inf too) it acts as 1, and one that is
// no positive number (NaN too) as 0. The wait is never negative: one beyond what a Duration
// holds is the longest Duration.
func Backoff(r troupe.RetryPolicy, attempt int, rnd uint64) time.Duration {
	initial, maxB, mult := r.Initial, maxBackoff(r), r.Multiplier
	if initial <= 0 {
		initial = DefaultInitialBackoff
	}
	if !(mult > 0) {
		mult = DefaultMultiplier
	}
	if attempt < 2 {
		attempt = 2
	}
	w := float64(initial) * math.Pow(mult, float64(attempt-2))
	if w > float64(maxB) {
		w = float64(maxB)
	}
	// A jitter past 1 would scale by less than zero: a negative wait, or with +Inf and u one
	// half, a NaN one.
	if j := min(r.Jitter, 1); j > 0 {
		u := float64(rnd>>11) / (1 << 53) // [0, 1)
		w *= 1 + j*(2*u-1)
	}
	// float64(math.MaxInt64) is 2^63, one past it: a float64 that large converts to an
	// arbitrary Duration (on amd64, the most negative one), a retry due at once.
	if w >= math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(w)
}

// maxBackoff is the policy's longest backoff, with its default.
func maxBackoff(r troupe.RetryPolicy) time.Duration {
	if r.Max <= 0 {
		return DefaultMaxBackoff
	}
	return r.Max
}

// Verdict is the judgement of a whole run once its dispatches are done.
type Verdict struct {
	OK     bool
	Reason string
}

// Judge applies allow_partial_results and min_success_rate to a run in which succeeded of total
// planned tasks completed (a task completed through a fallback or a partial result counts).
func Judge(p *troupe.ErrorPolicy, succeeded, total int) Verdict {
	if total == 0 || succeeded == total {
		return Verdict{OK: true}
	}
	if !p.PartialAllowed() {
		return Verdict{Reason: fmt.Sprintf("%d of %d agents did not complete and allow_partial_results is false", total-succeeded, total)}
	}
	rate := float64(succeeded) / float64(total)
	if rate < p.MinSuccess() {
		r, m := apart(rate, p.MinSuccess())
		return Verdict{Reason: fmt.Sprintf("success rate %s (%d of %d) is below min_success_rate %s", r, succeeded, total, m)}
	}
	return Verdict{OK: true, Reason: fmt.Sprintf("partial results: %d of %d agents completed", succeeded, total)}
}

// apart formats a and b with two decimals, or with as many more as it takes, up to nine, to
// tell them apart: a rate of 1 in 3 under a min_success_rate of 0.334 reads 0.333 and 0.334,
// not 0.33 and 0.33.
func apart(a, b float64) (string, string) {
	for prec := 2; ; prec++ {
		x, y := strconv.FormatFloat(a, 'f', prec, 64), strconv.FormatFloat(b, 'f', prec, 64)
		if x != y || prec == 9 {
			return x, y
		}
	}
}
