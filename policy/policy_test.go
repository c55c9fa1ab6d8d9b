package policy_test

import (
	"math"
	"testing"
	"time"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/policy"
)

func TestDecide(t *testing.T) {
	no, yes := troupe.Ptr(false), troupe.Ptr(true)
	fbs := []string{"f1", "f2"}
	cases := []struct {
		name  string
		p     troupe.ErrorPolicy
		f     policy.Failure
		want  policy.Kind
		agent string
	}{
		{"cancelled is skipped whatever the policy", troupe.ErrorPolicy{OnError: troupe.FailFast}, policy.Failure{Status: troupe.StatusCancelled}, policy.Skip, ""},
		{"timeout, default skip_agent", troupe.ErrorPolicy{}, policy.Failure{Status: troupe.StatusTimeout}, policy.Skip, ""},
		{"timeout, fail_fast", troupe.ErrorPolicy{OnTimeout: troupe.TimeoutFailFast}, policy.Failure{Status: troupe.StatusTimeout}, policy.FailRun, ""},
		{"timeout, use_partial with a partial", troupe.ErrorPolicy{OnTimeout: troupe.TimeoutUsePartial}, policy.Failure{Status: troupe.StatusTimeout, HasPartial: true}, policy.UsePartial, ""},
		{"timeout, use_partial without one", troupe.ErrorPolicy{OnTimeout: troupe.TimeoutUsePartial}, policy.Failure{Status: troupe.StatusTimeout}, policy.Skip, ""},
		{"timeouts are not retried", troupe.ErrorPolicy{OnError: troupe.Retry}, policy.Failure{Status: troupe.StatusTimeout, Recoverable: true, Attempt: 1}, policy.Skip, ""},
		// on_timeout on_error: seed 003's TIMEOUT, "Retry or route to tutor".
		{"timeout, on_error retry", troupe.ErrorPolicy{OnTimeout: troupe.TimeoutOnError, OnError: troupe.Retry}, policy.Failure{Status: troupe.StatusTimeout, Attempt: 1}, policy.Retry, ""},
		{"timeout, on_error fallback after retries", troupe.ErrorPolicy{OnTimeout: troupe.TimeoutOnError, OnError: troupe.Fallback}, policy.Failure{Status: troupe.StatusTimeout, Attempt: 3, Fallbacks: []string{"tutor"}}, policy.Fallback, "tutor"},
		{"timeout, on_error continue", troupe.ErrorPolicy{OnTimeout: troupe.TimeoutOnError, OnError: troupe.Continue}, policy.Failure{Status: troupe.StatusTimeout, Attempt: 1}, policy.Skip, ""},
		{"timeout, on_error fail_fast", troupe.ErrorPolicy{OnTimeout: troupe.TimeoutOnError}, policy.Failure{Status: troupe.StatusTimeout, Attempt: 1, Fallbacks: fbs}, policy.FailRun, ""},
		{"failed, default fail_fast", troupe.ErrorPolicy{}, policy.Failure{Status: troupe.StatusFailed, Recoverable: true, Attempt: 1, Fallbacks: fbs}, policy.FailRun, ""},
		{"failed, continue", troupe.ErrorPolicy{OnError: troupe.Continue}, policy.Failure{Status: troupe.StatusFailed, Attempt: 1}, policy.Skip, ""},
		{"retry, recoverable, attempts left", troupe.ErrorPolicy{OnError: troupe.Retry}, policy.Failure{Status: troupe.StatusFailed, Recoverable: true, Attempt: 2}, policy.Retry, ""},
		{"retry, attempts spent (default 3)", troupe.ErrorPolicy{OnError: troupe.Retry}, policy.Failure{Status: troupe.StatusFailed, Recoverable: true, Attempt: 3}, policy.FailRun, ""},
		{"retry, not recoverable", troupe.ErrorPolicy{OnError: troupe.Retry}, policy.Failure{Status: troupe.StatusFailed, Attempt: 1}, policy.FailRun, ""},
		{"fallback retries first", troupe.ErrorPolicy{OnError: troupe.Fallback}, policy.Failure{Status: troupe.StatusFailed, Recoverable: true, Attempt: 1, Fallbacks: fbs}, policy.Retry, ""},
		{"fallback after retries", troupe.ErrorPolicy{OnError: troupe.Fallback, Retry: troupe.RetryPolicy{MaxAttempts: 1}}, policy.Failure{Status: troupe.StatusFailed, Recoverable: true, Attempt: 1, Fallbacks: fbs}, policy.Fallback, "f1"},
		{"fallback for what is not recoverable", troupe.ErrorPolicy{OnError: troupe.Fallback}, policy.Failure{Status: troupe.StatusFailed, Attempt: 1, Fallbacks: fbs, FallbacksUsed: 1}, policy.Fallback, "f2"},
		{"fallbacks spent", troupe.ErrorPolicy{OnError: troupe.Fallback}, policy.Failure{Status: troupe.StatusFailed, Attempt: 1, Fallbacks: fbs, FallbacksUsed: 2}, policy.FailRun, ""},
		{"fallback disabled", troupe.ErrorPolicy{OnError: troupe.Fallback, EnableFallback: no}, policy.Failure{Status: troupe.StatusFailed, Attempt: 1, Fallbacks: fbs}, policy.FailRun, ""},
		{"fallback enabled explicitly", troupe.ErrorPolicy{OnError: troupe.Fallback, EnableFallback: yes}, policy.Failure{Status: troupe.StatusFailed, Attempt: 1, Fallbacks: fbs}, policy.Fallback, "f1"},
		{"fallback with none configured", troupe.ErrorPolicy{OnError: troupe.Fallback}, policy.Failure{Status: troupe.StatusFailed, Attempt: 1}, policy.FailRun, ""},
		{"retry after the service's Retry-After", troupe.ErrorPolicy{OnError: troupe.Retry}, policy.Failure{Status: troupe.StatusFailed, Recoverable: true, Attempt: 1, RetryAfter: 3 * time.Second}, policy.Retry, ""},
		{"Retry-After beyond the longest backoff", troupe.ErrorPolicy{OnError: troupe.Retry, Retry: troupe.RetryPolicy{Max: 2 * time.Second}}, policy.Failure{Status: troupe.StatusFailed, Recoverable: true, Attempt: 1, RetryAfter: 3 * time.Second}, policy.FailRun, ""},
		{"Retry-After too long: fall back instead", troupe.ErrorPolicy{OnError: troupe.Fallback}, policy.Failure{Status: troupe.StatusFailed, Recoverable: true, Attempt: 1, Fallbacks: fbs, RetryAfter: time.Minute}, policy.Fallback, "f1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := policy.Decide(&tc.p, tc.f, 42)
			if a.Kind != tc.want || a.Agent != tc.agent {
				t.Errorf("Decide = %v %q (%s), want %v %q", a.Kind, a.Agent, a.Reason, tc.want, tc.agent)
			}
			if a.Reason == "" {
				t.Error("no reason given")
			}
			if a.Kind == policy.Retry && (a.Backoff <= 0 || a.Backoff < tc.f.RetryAfter) {
				t.Errorf("retry after %v; want a positive backoff, at least the Retry-After %v", a.Backoff, tc.f.RetryAfter)
			}
		})
	}
}

// A failure on_error retry does not retry is said to be what it is: retries spent, or not
// retried, and why not.
func TestDecideRetryReasons(t *testing.T) {
	p := troupe.ErrorPolicy{OnError: troupe.Retry, Retry: troupe.RetryPolicy{MaxAttempts: 3, Max: 2 * time.Second}}
	once := troupe.ErrorPolicy{OnError: troupe.Retry, Retry: troupe.RetryPolicy{MaxAttempts: 1}}
	cases := []struct {
		name string
		p    troupe.ErrorPolicy
		f    policy.Failure
		want string
	}{
		{"attempts spent", p, policy.Failure{Status: troupe.StatusFailed, Recoverable: true, Attempt: 3}, "failed after 3 attempts (on_error retry)"},
		{"not recoverable", p, policy.Failure{Status: troupe.StatusFailed, Attempt: 1}, "not retried: the error is not recoverable (on_error retry)"},
		{"not recoverable, on a retry", p, policy.Failure{Status: troupe.StatusFailed, Attempt: 2}, "not retried: the error is not recoverable (on_error retry)"},
		{"one attempt allowed", once, policy.Failure{Status: troupe.StatusFailed, Recoverable: true, Attempt: 1}, "not retried: max_attempts is 1 (on_error retry)"},
		{"Retry-After too long", p, policy.Failure{Status: troupe.StatusFailed, Recoverable: true, Attempt: 1, RetryAfter: 3 * time.Second},
			"not retried: the service asked to wait 3s (Retry-After), longer than the longest backoff 2s (on_error retry)"},
		{"no retry may start", p, policy.Failure{Status: troupe.StatusFailed, Recoverable: true, Attempt: math.MaxInt}, "not retried: no retry may start (on_error retry)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := policy.Decide(&tc.p, tc.f, 42)
			if a.Kind != policy.FailRun || a.Reason != tc.want {
				t.Errorf("Decide = %v %q, want %v %q", a.Kind, a.Reason, policy.FailRun, tc.want)
			}
		})
	}
}

func TestBackoff(t *testing.T) {
	r := troupe.RetryPolicy{Initial: 10 * time.Millisecond, Max: 50 * time.Millisecond, Multiplier: 3}
	for attempt, want := range map[int]time.Duration{1: 10 * time.Millisecond, 2: 10 * time.Millisecond, 3: 30 * time.Millisecond, 4: 50 * time.Millisecond, 9: 50 * time.Millisecond} {
		if got := policy.Backoff(r, attempt, 0); got != want {
			t.Errorf("Backoff(attempt %d) = %v, want %v", attempt, got, want)
		}
	}
	if got := policy.Backoff(troupe.RetryPolicy{}, 2, 0); got != policy.DefaultInitialBackoff {
		t.Errorf("zero policy backoff %v, want the default %v", got, policy.DefaultInitialBackoff)
	}
	r.Jitter = 0.5
	lo, hi := policy.Backoff(r, 3, 0), policy.Backoff(r, 3, ^uint64(0))
	if lo != 15*time.Millisecond || hi < 44*time.Millisecond || hi > 45*time.Millisecond {
		t.Errorf("jitter bounds %v and %v, want 15ms and just under 45ms", lo, hi)
	}
	if policy.Backoff(r, 3, 12345) != policy.Backoff(r, 3, 12345) {
		t.Error("the same draw gives a different backoff")
	}
	// A wait at or beyond the longest Duration is the longest Duration, never one that wraps
	// around to a negative wait (a retry due at once).
	longest := time.Duration(math.MaxInt64)
	for _, tc := range []struct {
		name string
		r    troupe.RetryPolicy
		rnd  uint64
	}{
		{"initial and max at the longest", troupe.RetryPolicy{Initial: longest, Max: longest}, 0},
		{"jitter above a long max", troupe.RetryPolicy{Initial: longest / 3 * 2, Max: longest / 3 * 2, Jitter: 1}, ^uint64(0)},
	} {
		for _, attempt := range []int{2, 3, 60} {
			if got := policy.Backoff(tc.r, attempt, tc.rnd); got < tc.r.Max {
				t.Errorf("%s: Backoff(attempt %d) = %v, want at least Max %v", tc.name, attempt, got, tc.r.Max)
			}
		}
	}
	// A multiplier that is no number takes the default, as zero does.
	nan := troupe.RetryPolicy{Initial: 10 * time.Millisecond, Multiplier: math.NaN()}
	if got, want := policy.Backoff(nan, 3, 0), 20*time.Millisecond; got != want {
		t.Errorf("NaN multiplier: Backoff(attempt 3) = %v, want %v (the default multiplier)", got, want)
	}
}

// The reason shows the rate and the threshold with the digits it takes to tell them apart.
func TestJudgeReasonTellsRateAndThresholdApart(t *testing.T) {
	for _, tc := range []struct {
		min              float64
		succeeded, total int
		want             string
	}{
		{0.5, 1, 3, "success rate 0.33 (1 of 3) is below min_success_rate 0.50"},
		{0.334, 1, 3, "success rate 0.333 (1 of 3) is below min_success_rate 0.334"},
		{0.3333334, 1, 3, "success rate 0.3333333 (1 of 3) is below min_success_rate 0.3333334"},
	} {
		p := troupe.ErrorPolicy{MinSuccessRate: troupe.Ptr(tc.min)}
		if v := policy.Judge(&p, tc.succeeded, tc.total); v.OK || v.Reason != tc.want {
			t.Errorf("Judge(%d of %d, min %v) = %+v, want the reason %q", tc.succeeded, tc.total, tc.min, v, tc.want)
		}
	}
}

// A jitter outside [0, 1] reaches Backoff only from a direct caller (ErrorPolicy.Validate
// refuses it), and still gives a wait in [0, 2·wait]: above 1 (+Inf too) it is 1, and one that
// is no positive number (NaN too) is none.
func TestBackoffJitterOutsideItsRange(t *testing.T) {
	const half = uint64(1) << 63 // u = 0.5 exactly: no jitter whatever its size
	tests := []struct {
		name   string
		jitter float64
		rnd    uint64
		want   time.Duration
	}{
		{"1.5, lowest draw", 1.5, 0, 0},
		{"1 at its lowest draw", 1, 0, 0},
		{"+Inf, lowest draw", math.Inf(1), 0, 0},
		{"+Inf, middle draw", math.Inf(1), half, time.Second},
		{"NaN", math.NaN(), 0, time.Second},
		{"negative", -0.5, 0, time.Second},
		{"-Inf", math.Inf(-1), 0, time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := troupe.RetryPolicy{Initial: time.Second, Jitter: tt.jitter}
			if got := policy.Backoff(r, 2, tt.rnd); got != tt.want {
				t.Errorf("Backoff(attempt 2, rnd %#x) = %v, want %v", tt.rnd, got, tt.want)
			}
			for _, rnd := range []uint64{0, 1, 1 << 62, half, ^uint64(0)} {
				if got := policy.Backoff(r, 2, rnd); got < 0 || got > 2*time.Second {
					t.Errorf("Backoff(attempt 2, rnd %#x) = %v, want a wait in [0s, 2s]", rnd, got)
				}
			}
		})
	}
}

func TestJudge(t *testing.T) {
	strict := troupe.ErrorPolicy{AllowPartialResults: troupe.Ptr(false)}
	high := troupe.ErrorPolicy{MinSuccessRate: troupe.Ptr(0.9)}
	cases := []struct {
		name             string
		p                troupe.ErrorPolicy
		succeeded, total int
		ok               bool
	}{
		{"all completed", troupe.ErrorPolicy{}, 3, 3, true},
		{"nothing planned", troupe.ErrorPolicy{}, 0, 0, true},
		{"partial, at the default rate", troupe.ErrorPolicy{}, 1, 2, true},
		{"partial, below the default rate", troupe.ErrorPolicy{}, 1, 3, false},
		{"partial not allowed", strict, 2, 3, false},
		{"below a high rate", high, 8, 10, false},
		{"at a high rate", high, 9, 10, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := policy.Judge(&tc.p, tc.succeeded, tc.total)
			if v.OK != tc.ok {
				t.Errorf("Judge(%d of %d) = %+v, want ok=%v", tc.succeeded, tc.total, v, tc.ok)
			}
			if !v.OK && v.Reason == "" {
				t.Error("a failing verdict without a reason")
			}
		})
	}
}

// A timeout on_timeout on_error hands on says so, and what on_error made of it.
func TestDecideTimeoutAsErrorSaysSo(t *testing.T) {
	p := troupe.ErrorPolicy{OnTimeout: troupe.TimeoutOnError, OnError: troupe.Fallback, Retry: troupe.RetryPolicy{MaxAttempts: 1}}
	a := policy.Decide(&p, policy.Failure{Status: troupe.StatusTimeout, Attempt: 1, Fallbacks: []string{"tutor"}}, 0)
	if want := "timed out, handled as on_error (on_timeout on_error): falling back to tutor (on_error fallback)"; a.Reason != want {
		t.Errorf("reason %q, want %q", a.Reason, want)
	}
}
