package engine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/engine"
	"github.com/troupehq/troupe/executor/local"
	"github.com/troupehq/troupe/troupetest"
)

// A run that on_error retry fails says why its agent's failure stands: its retries were spent,
// or none was made, and then why not. "Failed after retries" of a dispatch never retried sends
// a reader looking for retries that did not happen.
func TestRetryFailureReasonSaysWhy(t *testing.T) {
	fast := troupe.RetryPolicy{MaxAttempts: 2, Initial: time.Millisecond, Max: time.Second}
	waitLong := func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		return nil, &troupe.AgentError{Code: troupe.CodeAgentError, Message: "rate limited", Recoverable: true,
			Details: map[string]any{"retry_after_seconds": 60.0}}
	}
	cases := []struct {
		name    string
		steps   []troupetest.Step
		retry   troupe.RetryPolicy
		budget  troupe.Budget
		calls   int
		want    string
		wantNot string
	}{
		{"retries spent", []troupetest.Step{troupetest.Fail(troupe.CodeAgentError, true), troupetest.Fail(troupe.CodeAgentError, true)}, fast, troupe.Budget{}, 2,
			"failed after 2 attempts", "not retried"},
		{"not recoverable", []troupetest.Step{troupetest.Fail(troupe.CodeAgentError, false)}, fast, troupe.Budget{}, 1,
			"not retried: the error is not recoverable", "after"},
		{"Retry-After past the longest backoff", []troupetest.Step{waitLong}, fast, troupe.Budget{}, 1,
			"not retried: the service asked to wait 1m0s (Retry-After)", "after retries"},
		{"time budget refuses the retry", []troupetest.Step{troupetest.Fail(troupe.CodeAgentError, true)},
			troupe.RetryPolicy{MaxAttempts: 3, Initial: time.Hour, Max: time.Hour}, troupe.Budget{TimeSeconds: 60}, 1,
			"time budget of 1m0s would be spent before a retry after 1h0m0s could start (0s elapsed); not retried: no retry may start", "after retries"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clock := troupetest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			a := troupetest.NewScript(tc.steps...)
			eng := newEngine(t, engine.Config{Registry: agents(t, "a", a), Planner: chain("a"),
				Executor: local.New(local.Config{Clock: clock.Now}), Policy: troupe.ErrorPolicy{OnError: troupe.Retry, Retry: tc.retry}})
			r, err := eng.Start(t.Context(), troupe.Request{Query: "q", Budget: tc.budget})
			if err != nil {
				t.Fatal(err)
			}
			st, werr := r.Wait(t.Context())
			if st.Status != troupe.RunFailed || werr == nil {
				t.Fatalf("run %s (%v), want failed", st.Status, werr)
			}
			if a.Calls() != tc.calls {
				t.Errorf("agent ran %d times, want %d", a.Calls(), tc.calls)
			}
			if msg := werr.Error(); !strings.Contains(msg, tc.want) || strings.Contains(msg, tc.wantNot) {
				t.Errorf("Wait: %q; want it to say %q, not %q", msg, tc.want, tc.wantNot)
			}
		})
	}
}
