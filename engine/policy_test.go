package engine_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/engine"
	"github.com/troupehq/troupe/troupetest"
)

// Every branch of the error policy, end to end through the engine.
func TestPolicyBranches(t *testing.T) {
	fail := troupetest.Fail(troupe.CodeAgentError, true)
	fatal := troupetest.Fail(troupe.CodeInvalidInput, false)
	ok := troupetest.OK(nil)
	fast := troupe.RetryPolicy{MaxAttempts: 3, Initial: time.Millisecond, Max: 2 * time.Millisecond, Jitter: 0.5}
	type want struct {
		status   troupe.RunStatus
		calls    map[string]int
		failed   []string
		fallback map[string]string
		retries  int
	}
	cases := []struct {
		name    string
		policy  troupe.ErrorPolicy
		maxDisp int
		steps   map[string][]troupetest.Step
		plan    troupe.Planner
		want    want
	}{
		{
			name:  "fail_fast stops the run at the first failure",
			steps: map[string][]troupetest.Step{"a": {fail}, "b": {ok}},
			plan:  chain("a", "b"),
			want:  want{status: troupe.RunFailed, calls: map[string]int{"a": 1, "b": 0}, failed: []string{"a"}},
		},
		{
			name:   "continue records the failure and runs the rest",
			policy: troupe.ErrorPolicy{OnError: troupe.Continue},
			steps:  map[string][]troupetest.Step{"a": {fail}, "b": {ok}},
			plan:   chain("a", "b"),
			want:   want{status: troupe.RunCompleted, calls: map[string]int{"a": 1, "b": 1}, failed: []string{"a"}},
		},
		{
			name:   "continue below min_success_rate fails the run",
			policy: troupe.ErrorPolicy{OnError: troupe.Continue, MinSuccessRate: troupe.Ptr(0.75)},
			steps:  map[string][]troupetest.Step{"a": {fail}, "b": {ok}},
			plan:   chain("a", "b"),
			want:   want{status: troupe.RunFailed, calls: map[string]int{"a": 1, "b": 1}, failed: []string{"a"}},
		},
		{
			name:   "retry recovers a recoverable failure",
			policy: troupe.ErrorPolicy{OnError: troupe.Retry, Retry: fast},
			steps:  map[string][]troupetest.Step{"a": {fail, fail, ok}},
			plan:   chain("a"),
			want:   want{status: troupe.RunCompleted, calls: map[string]int{"a": 3}, retries: 2},
		},
		{
			name:   "retry gives up after max attempts",
			policy: troupe.ErrorPolicy{OnError: troupe.Retry, Retry: fast},
			steps:  map[string][]troupetest.Step{"a": {fail}},
			plan:   chain("a"),
			want:   want{status: troupe.RunFailed, calls: map[string]int{"a": 3}, retries: 2, failed: []string{"a"}},
		},
		{
			name:   "retry does not retry what is not recoverable",
			policy: troupe.ErrorPolicy{OnError: troupe.Retry, Retry: fast},
			steps:  map[string][]troupetest.Step{"a": {fatal}},
			plan:   chain("a"),
			want:   want{status: troupe.RunFailed, calls: map[string]int{"a": 1}, failed: []string{"a"}},
		},
		{
			name:   "fallback retries, then falls back in order",
			policy: troupe.ErrorPolicy{OnError: troupe.Fallback, Retry: troupe.RetryPolicy{MaxAttempts: 2, Initial: time.Millisecond}, FallbackAgents: map[string][]string{"a": {"f1", "f2"}}},
			steps:  map[string][]troupetest.Step{"a": {fail}, "f1": {fatal}, "f2": {ok}},
			plan:   chain("a"),
			want:   want{status: troupe.RunCompleted, calls: map[string]int{"a": 2, "f1": 1, "f2": 1}, retries: 1, fallback: map[string]string{"a": "f2"}},
		},
		{
			name:   "fallback disabled fails",
			policy: troupe.ErrorPolicy{OnError: troupe.Fallback, EnableFallback: troupe.Ptr(false), Retry: troupe.RetryPolicy{MaxAttempts: 1}, FallbackAgents: map[string][]string{"a": {"f1"}}},
			steps:  map[string][]troupetest.Step{"a": {fail}, "f1": {ok}},
			plan:   chain("a"),
			want:   want{status: troupe.RunFailed, calls: map[string]int{"a": 1, "f1": 0}, failed: []string{"a"}},
		},
		{
			name:    "retry that the dispatch limit stops fails the run, as retries run out do",
			policy:  troupe.ErrorPolicy{OnError: troupe.Retry, Retry: fast},
			maxDisp: 2,
			steps:   map[string][]troupetest.Step{"b": {ok}, "a": {fail}},
			plan:    chain("b", "a"),
			want:    want{status: troupe.RunFailed, calls: map[string]int{"b": 1, "a": 1}, failed: []string{"a"}},
		},
		{
			name:    "fallback that the dispatch limit stops fails the run",
			policy:  troupe.ErrorPolicy{OnError: troupe.Fallback, Retry: troupe.RetryPolicy{MaxAttempts: 1}, FallbackAgents: map[string][]string{"a": {"f1"}}},
			maxDisp: 2,
			steps:   map[string][]troupetest.Step{"b": {ok}, "a": {fail}, "f1": {ok}},
			plan:    chain("b", "a"),
			want:    want{status: troupe.RunFailed, calls: map[string]int{"b": 1, "a": 1, "f1": 0}, failed: []string{"a"}},
		},
		{
			name:    "continue goes on past a failure whatever the budget",
			policy:  troupe.ErrorPolicy{OnError: troupe.Continue},
			maxDisp: 2,
			steps:   map[string][]troupetest.Step{"a": {fail}, "b": {ok}},
			plan:    chain("a", "b"),
			want:    want{status: troupe.RunCompleted, calls: map[string]int{"a": 1, "b": 1}, failed: []string{"a"}},
		},
		{
			name:   "fail_fast does not use configured fallbacks",
			policy: troupe.ErrorPolicy{FallbackAgents: map[string][]string{"a": {"f1"}}},
			steps:  map[string][]troupetest.Step{"a": {fail}, "f1": {ok}},
			plan:   chain("a"),
			want:   want{status: troupe.RunFailed, calls: map[string]int{"a": 1, "f1": 0}, failed: []string{"a"}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var pairs []any
			scripts := map[string]*troupetest.Script{}
			for _, name := range []string{"a", "b", "f1", "f2"} {
				s := troupetest.NewScript(tc.steps[name]...)
				scripts[name] = s
				pairs = append(pairs, name, s)
			}
			eng := newEngine(t, engine.Config{Registry: agents(t, pairs...), Planner: tc.plan, Policy: tc.policy, MaxDispatches: tc.maxDisp})
			evs := run(t, eng, troupe.Request{Query: "q"})
			out := outcome(t, evs)
			if out.Status != tc.want.status {
				t.Errorf("status %s, want %s (%+v)", out.Status, tc.want.status, out.Error)
			}
			for name, n := range tc.want.calls {
				if got := scripts[name].Calls(); got != n {
					t.Errorf("%s ran %d times, want %d", name, got, n)
				}
			}
			if !cmp.Equal(out.Failed, tc.want.failed) {
				t.Errorf("failed %v, want %v", out.Failed, tc.want.failed)
			}
			if len(tc.want.fallback) > 0 && !cmp.Equal(out.Fallback, tc.want.fallback) {
				t.Errorf("fallback %v, want %v", out.Fallback, tc.want.fallback)
			}
			if got := len(troupetest.Find(evs, troupe.KindRetryScheduled, "")); got != tc.want.retries {
				t.Errorf("%d retry_scheduled events, want %d", got, tc.want.retries)
			}
		})
	}
}

// A run the policy fails after its agents ran (min_success_rate, allow_partial_results) gives
// Wait an error that says why once, not its reason twice over.
func TestPolicyFailureReasonSaidOnce(t *testing.T) {
	fail := troupetest.Fail("X", false)
	for _, tc := range []struct {
		name   string
		policy troupe.ErrorPolicy
		want   string
	}{
		{"min_success_rate", troupe.ErrorPolicy{OnError: troupe.Continue, MinSuccessRate: troupe.Ptr(0.334)},
			"success rate 0.333 (1 of 3) is below min_success_rate 0.334"},
		{"allow_partial_results", troupe.ErrorPolicy{OnError: troupe.Continue, AllowPartialResults: troupe.Ptr(false)},
			"2 of 3 agents did not complete and allow_partial_results is false"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := agents(t, "a", troupetest.NewScript(), "b", troupetest.NewScript(fail), "c", troupetest.NewScript(fail))
			eng := newEngine(t, engine.Config{Registry: reg, Planner: group(3, "a", "b", "c"), Policy: tc.policy})
			r, err := eng.Start(t.Context(), troupe.Request{Query: "q"})
			if err != nil {
				t.Fatal(err)
			}
			_, err = r.Wait(t.Context())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Wait: %v, want it to say %q", err, tc.want)
			}
			if n := strings.Count(err.Error(), tc.want); n != 1 {
				t.Errorf("Wait's error says its reason %d times: %v", n, err)
			}
		})
	}
}

// Retry backoff and jitter come from the run's seed: the same seed gives the same waits.
func TestRetryJitterIsSeeded(t *testing.T) {
	backoffs := func(seed uint64) []time.Duration {
		fail := troupetest.Fail(troupe.CodeAgentError, true)
		eng := newEngine(t, engine.Config{Registry: agents(t, "a", troupetest.NewScript(fail)), Planner: chain("a"),
			Policy: troupe.ErrorPolicy{OnError: troupe.Retry, Retry: troupe.RetryPolicy{MaxAttempts: 4, Initial: time.Millisecond, Multiplier: 2, Jitter: 0.5}}})
		evs := run(t, eng, troupe.Request{Query: "q", Seed: seed})
		var out []time.Duration
		for _, ev := range troupetest.Find(evs, troupe.KindRetryScheduled, "") {
			out = append(out, ev.Data.(*troupe.RetryScheduled).Backoff)
		}
		return out
	}
	a, b, c := backoffs(1), backoffs(1), backoffs(2)
	if len(a) != 3 || !cmp.Equal(a, b) {
		t.Fatalf("same seed gave %v and %v", a, b)
	}
	if cmp.Equal(a, c) {
		t.Errorf("different seeds gave the same jitter %v", a)
	}
	for i, d := range a {
		base := time.Millisecond << i
		if d < base/2 || d > base*3/2 {
			t.Errorf("backoff %d = %v, want within ±50%% of %v", i+2, d, base)
		}
	}
}

// on_timeout on_error, seed 003's TIMEOUT ("Retry or route to tutor"): a timed-out dispatch is
// retried, then handed to its fallback agent, as on_error fallback does with a failure.
func TestTimeoutHandledAsError(t *testing.T) {
	var attempts atomic.Int64
	slow := troupe.AgentFunc(func(ctx context.Context, _ *troupe.Dispatch) (*troupe.Result, error) {
		attempts.Add(1)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	tutor := troupetest.NewScript()
	eng := newEngine(t, engine.Config{Registry: agents(t, "quiz", opt(slow, troupe.WithTimeout(20*time.Millisecond)), "tutor", tutor),
		Planner: chain("quiz"), Policy: troupe.ErrorPolicy{OnTimeout: troupe.TimeoutOnError, OnError: troupe.Fallback,
			Retry: troupe.RetryPolicy{MaxAttempts: 2, Initial: time.Millisecond}, FallbackAgents: map[string][]string{"quiz": {"tutor"}}}})
	evs := run(t, eng, troupe.Request{Query: "quiz me"})
	out := outcome(t, evs)
	if out.Status != troupe.RunCompleted || !cmp.Equal(out.Fallback, map[string]string{"quiz": "tutor"}) {
		t.Errorf("outcome %s, fallback %v; want completed through the tutor (%+v)", out.Status, out.Fallback, out.Error)
	}
	if n := attempts.Load(); n != 2 {
		t.Errorf("quiz ran %d times, want 2 (max_attempts)", n)
	}
	if tutor.Calls() != 1 {
		t.Errorf("the tutor ran %d times, want once", tutor.Calls())
	}
	timeouts := 0
	for _, r := range results(evs)["quiz"] {
		if r.Status == troupe.StatusTimeout {
			timeouts++
		}
	}
	if timeouts != 2 {
		t.Errorf("%d quiz timeouts recorded, want 2", timeouts)
	}
	if rs := troupetest.Find(evs, troupe.KindRetryScheduled, "quiz"); len(rs) != 1 || !strings.Contains(rs[0].Data.(*troupe.RetryScheduled).Reason, "timed out, handled as on_error") {
		t.Errorf("retry_scheduled events %v, want one saying the timeout was handled as on_error", rs)
	}
}

// on_timeout: skip_agent goes on, use_partial takes what the agent reported, fail_fast stops.
// The timeout holds although the agent ignores its context.
func TestTimeoutPolicies(t *testing.T) {
	cases := []struct {
		action  troupe.TimeoutAction
		status  troupe.RunStatus
		partial bool
	}{
		{troupe.TimeoutSkip, troupe.RunCompleted, false},
		{troupe.TimeoutUsePartial, troupe.RunCompleted, true},
		{troupe.TimeoutFailFast, troupe.RunFailed, false},
	}
	for _, tc := range cases {
		t.Run(string(tc.action), func(t *testing.T) {
			release := make(chan struct{})
			stuck := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
				d.Partial(map[string]any{"rows_scanned": 40})
				<-release // ignores ctx
				return &troupe.Result{AgentResult: map[string]any{"late": true}}, nil
			})
			after := troupetest.NewScript()
			eng := newEngine(t, engine.Config{Registry: agents(t, "slow", opt(stuck, troupe.WithTimeout(20*time.Millisecond)), "after", after),
				Planner: chain("slow", "after"), Policy: troupe.ErrorPolicy{OnTimeout: tc.action}})
			evs := run(t, eng, troupe.Request{Query: "q"})
			// The run is over while the agent is still stuck: the deadline held.
			close(release)
			if out := outcome(t, evs); out.Status != tc.status {
				t.Fatalf("status %s, want %s", out.Status, tc.status)
			}
			r := results(evs)["slow"][0]
			if r.Status != troupe.StatusTimeout || r.Errors[0].Code != troupe.CodeTimeout {
				t.Errorf("slow's result %+v, want timeout", r)
			}
			if r.AgentResult["rows_scanned"] != 40 {
				t.Errorf("the timeout result should keep the partial result the agent reported, got %v", r.AgentResult)
			}
			// Every case aggregates: a run that fails while executing aggregates what it has.
			aggs := troupetest.Find(evs, troupe.KindRunAggregated, "")
			if len(aggs) != 1 {
				t.Fatalf("%d run_aggregated events, want 1", len(aggs))
			}
			_, used := aggs[0].Data.(*troupe.Aggregation).CombinedResults["slow"]
			if used != tc.partial {
				t.Errorf("partial result used in aggregation: %v, want %v", used, tc.partial)
			}
			wantAfter := 1
			if tc.status == troupe.RunFailed {
				wantAfter = 0
			}
			if after.Calls() != wantAfter {
				t.Errorf("next agent ran %d times, want %d", after.Calls(), wantAfter)
			}
		})
	}
}

// A dispatch's own timeout_seconds overrides the agent's default.
func TestDispatchTimeoutOverridesAgentDefault(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	a := troupetest.NewScript(troupetest.Block(release, false))
	eng := newEngine(t, engine.Config{Registry: agents(t, "a", opt(a, troupe.WithTimeout(time.Hour))), Planner: chain("a")})
	evs := run(t, eng, troupe.Request{Query: "q", Timeouts: map[string]float64{"a": 0.02}})
	d := troupetest.Find(evs, troupe.KindDispatchStarted, "a")[0].Data.(*troupe.Dispatch)
	if d.TimeoutSeconds == nil || *d.TimeoutSeconds != 0.02 {
		t.Errorf("timeout_seconds %v", d.TimeoutSeconds)
	}
	if r := results(evs)["a"][0]; r.Status != troupe.StatusTimeout {
		t.Errorf("status %s, want timeout", r.Status)
	}
}

// on_warning: continue surfaces agent warnings in the run; log_only leaves them in the log.
func TestWarningPolicies(t *testing.T) {
	warn := func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{AgentResult: map[string]any{"x": 1}, Warnings: []string{"sample is small"}}, nil
	}
	for _, action := range []troupe.WarningAction{troupe.WarnContinue, troupe.WarnLogOnly} {
		t.Run(string(action), func(t *testing.T) {
			eng := newEngine(t, engine.Config{Registry: agents(t, "a", troupetest.NewScript(warn)), Planner: chain("a"), Policy: troupe.ErrorPolicy{OnWarning: action}})
			r, err := eng.Start(t.Context(), troupe.Request{Query: "q"})
			if err != nil {
				t.Fatal(err)
			}
			st, err := r.Wait(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			surfaced := cmp.Equal(st.Warnings, []string{"a: sample is small"})
			if surfaced != (action == troupe.WarnContinue) {
				t.Errorf("run warnings %v under %s", st.Warnings, action)
			}
			if got := st.CompletedAgents["a"].Warnings; !cmp.Equal(got, []string{"sample is small"}) {
				t.Errorf("the result keeps its warnings in the log either way, got %v", got)
			}
		})
	}
}

// A plan naming an agent the registry does not hold fails the run at routing, matching
// troupe.ErrUnknownAgent; with no router configured the error blames the plan, which named
// it, not a router's choice.
func TestPlanNamingAnUnknownAgent(t *testing.T) {
	eng := newEngine(t, engine.Config{Registry: agents(t, "a", troupetest.NewScript()), Planner: chain("zzz")})
	r, err := eng.Start(t.Context(), troupe.Request{Query: "q"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Wait(t.Context())
	if !errors.Is(err, troupe.ErrUnknownAgent) || !strings.Contains(err.Error(), `the plan names agent "zzz"`) {
		t.Errorf("Wait: %v, want an unknown-agent error naming the plan's agent", err)
	}
	if strings.Contains(err.Error(), "router chose") {
		t.Errorf("Wait: %v blames a router the engine does not have", err)
	}
}
