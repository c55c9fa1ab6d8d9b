package engine_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/engine"
	"github.com/troupehq/troupe/executor/local"
	"github.com/troupehq/troupe/store/memory"
	"github.com/troupehq/troupe/troupetest"
)

// An agent that says it timed out — an adapter's own timeout (httpagent's, execagent's,
// llmagent's, mcptool's AgentError with code TIMEOUT), or an error wrapping troupe.ErrTimeout —
// timed out as surely as one the engine's deadline stopped: its dispatch is recorded timeout
// and on_timeout applies (seed 000: "Timeout? → use partial results / skip agent & continue"),
// not on_error, as the flow package records such a member.
func TestAgentReportedTimeoutAppliesOnTimeout(t *testing.T) {
	timeoutErrs := map[string]error{
		"agent error TIMEOUT": &troupe.AgentError{Code: troupe.CodeTimeout, Recoverable: true, Message: "upstream did not answer within 30s"},
		"wraps ErrTimeout":    fmt.Errorf("my service: %w", troupe.ErrTimeout),
	}
	cases := []struct {
		action  troupe.TimeoutAction
		status  troupe.RunStatus
		partial bool
		after   int
	}{
		{troupe.TimeoutSkip, troupe.RunCompleted, false, 1},
		{troupe.TimeoutUsePartial, troupe.RunCompleted, true, 1},
		{troupe.TimeoutFailFast, troupe.RunFailed, false, 0},
	}
	for errName, timeoutErr := range timeoutErrs {
		for _, tc := range cases {
			t.Run(errName+"/"+string(tc.action), func(t *testing.T) {
				slow := troupe.AgentFunc(func(_ context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
					d.Partial(map[string]any{"rows_scanned": 40})
					return nil, timeoutErr
				})
				after := troupetest.NewScript()
				// on_error is fail_fast (the default): were the timeout taken for an error,
				// every case would fail the run.
				eng := newEngine(t, engine.Config{Registry: agents(t, "slow", slow, "after", after), Planner: chain("slow", "after"),
					Policy: troupe.ErrorPolicy{OnTimeout: tc.action}})
				evs := run(t, eng, troupe.Request{Query: "q"})
				r := results(evs)["slow"][0]
				if r.Status != troupe.StatusTimeout || r.Errors[0].Code != troupe.CodeTimeout {
					t.Errorf("slow's result: status %s, errors %+v; want timeout", r.Status, r.Errors)
				}
				if out := outcome(t, evs); out.Status != tc.status {
					t.Fatalf("status %s (%+v), want %s", out.Status, out.Error, tc.status)
				}
				if after.Calls() != tc.after {
					t.Errorf("next agent ran %d times, want %d", after.Calls(), tc.after)
				}
				aggs := troupetest.Find(evs, troupe.KindRunAggregated, "")
				if len(aggs) != 1 {
					t.Fatalf("%d run_aggregated events, want 1", len(aggs))
				}
				if _, used := aggs[0].Data.(*troupe.Aggregation).CombinedResults["slow"]; used != tc.partial {
					t.Errorf("partial result used in aggregation: %v, want %v", used, tc.partial)
				}
			})
		}
	}
}

// A retry whose backoff ends after the run's time budget would start a dispatch once the budget
// is spent, which the budget forbids ("no new dispatch starts"): it is not scheduled, and the
// policy goes on as when no retry is left — a fallback, which starts now, stands in; otherwise
// the run fails, the budget its cause.
func TestRetryBackoffPastTimeBudget(t *testing.T) {
	fail := troupetest.Fail(troupe.CodeAgentError, true)
	long := troupe.RetryPolicy{MaxAttempts: 3, Initial: time.Hour, Max: time.Hour}
	cases := []struct {
		name     string
		policy   troupe.ErrorPolicy
		retries  int
		status   troupe.RunStatus
		fallback int
	}{
		{"retry fails the run", troupe.ErrorPolicy{OnError: troupe.Retry, Retry: long}, 0, troupe.RunFailed, 0},
		{"fallback stands in at once", troupe.ErrorPolicy{OnError: troupe.Fallback, Retry: long, FallbackAgents: map[string][]string{"a": {"spare"}}}, 0, troupe.RunCompleted, 1},
		{"a backoff inside the budget is retried", troupe.ErrorPolicy{OnError: troupe.Retry, Retry: troupe.RetryPolicy{MaxAttempts: 3, Initial: time.Millisecond}}, 1, troupe.RunCompleted, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// The clock stands still: only a backoff can reach past the budget.
			clock := troupetest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			a, spare := troupetest.NewScript(fail, troupetest.OK(nil)), troupetest.NewScript()
			eng := newEngine(t, engine.Config{Registry: agents(t, "a", a, "spare", spare), Planner: chain("a"),
				Executor: local.New(local.Config{Clock: clock.Now}), Policy: tc.policy})
			r, err := eng.Start(t.Context(), troupe.Request{Query: "q", Budget: troupe.Budget{TimeSeconds: 60}})
			if err != nil {
				t.Fatal(err)
			}
			var evs []troupe.Event
			retries := 0
			for ev, err := range r.Events(t.Context()) {
				if err != nil {
					t.Fatal(err)
				}
				evs = append(evs, ev)
				if ev.Kind == troupe.KindRetryScheduled {
					if retries++; retries > tc.retries {
						t.Errorf("retry scheduled past the time budget: %+v", ev.Data)
						r.Cancel() // its backoff would hold the test for an hour
					}
				}
			}
			troupetest.CheckLog(t, evs)
			_, werr := r.Wait(t.Context())
			out := outcome(t, evs)
			if out.Status != tc.status {
				t.Errorf("status %s (%+v), want %s", out.Status, out.Error, tc.status)
			}
			if spare.Calls() != tc.fallback {
				t.Errorf("fallback ran %d times, want %d", spare.Calls(), tc.fallback)
			}
			if tc.status == troupe.RunFailed && (!errors.Is(werr, troupe.ErrBudgetExhausted) || !strings.Contains(werr.Error(), "time budget")) {
				t.Errorf("Wait: %v; want the time budget named as the failure's cause", werr)
			}
		})
	}
}

// An agent may answer with status cancelled (a remote service whose own task was cancelled)
// while the run goes on: the dispatch did not complete, and the error policy applies to it as
// to a failure — fail_fast stops the run, retry and fallback recover it — rather than skipping
// it as though the run were ending.
func TestAgentReportedCancelIsHandledPerPolicy(t *testing.T) {
	cancelled := func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{Status: troupe.StatusCancelled, Errors: []troupe.ErrorInfo{{Code: troupe.CodeCancelled, Message: "the service cancelled the task", Recoverable: true}}}, nil
	}
	fast := troupe.RetryPolicy{MaxAttempts: 2, Initial: time.Millisecond}
	cases := []struct {
		name   string
		policy troupe.ErrorPolicy
		status troupe.RunStatus
		calls  map[string]int
	}{
		{"fail_fast stops the run", troupe.ErrorPolicy{}, troupe.RunFailed, map[string]int{"a": 1, "b": 0}},
		{"continue goes on", troupe.ErrorPolicy{OnError: troupe.Continue}, troupe.RunCompleted, map[string]int{"a": 1, "b": 1}},
		{"retry recovers it", troupe.ErrorPolicy{OnError: troupe.Retry, Retry: fast}, troupe.RunCompleted, map[string]int{"a": 2, "b": 1}},
		{"fallback stands in", troupe.ErrorPolicy{OnError: troupe.Fallback, Retry: troupe.RetryPolicy{MaxAttempts: 1}, FallbackAgents: map[string][]string{"a": {"spare"}}},
			troupe.RunCompleted, map[string]int{"a": 1, "spare": 1, "b": 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			scripts := map[string]*troupetest.Script{"a": troupetest.NewScript(cancelled, troupetest.OK(nil)), "b": troupetest.NewScript(), "spare": troupetest.NewScript()}
			eng := newEngine(t, engine.Config{Registry: agents(t, "a", scripts["a"], "b", scripts["b"], "spare", scripts["spare"]),
				Planner: chain("a", "b"), Policy: tc.policy})
			evs := run(t, eng, troupe.Request{Query: "q"})
			if out := outcome(t, evs); out.Status != tc.status {
				t.Errorf("status %s (%+v), want %s", out.Status, out.Error, tc.status)
			}
			for name, n := range tc.calls {
				if got := scripts[name].Calls(); got != n {
					t.Errorf("%s ran %d times, want %d", name, got, n)
				}
			}
		})
	}
}

// A resumed run takes an agent-reported cancellation from its log as the run that made the log
// did: the retry that recovered it is taken up again, not skipped.
func TestResumeAfterAgentReportedCancel(t *testing.T) {
	cancelled := func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{Status: troupe.StatusCancelled, Errors: []troupe.ErrorInfo{{Code: troupe.CodeCancelled, Message: "the service cancelled the task", Recoverable: true}}}, nil
	}
	pol := troupe.ErrorPolicy{OnError: troupe.Retry, Retry: troupe.RetryPolicy{MaxAttempts: 2, Initial: time.Millisecond}}
	// After 7 events the log holds the cancelled result and the retry's dispatch; before, neither.
	for crashAt := 5; crashAt <= 9; crashAt++ {
		t.Run(fmt.Sprint("crash after ", crashAt, " events"), func(t *testing.T) {
			a, b := troupetest.NewScript(cancelled, troupetest.OK(nil)), troupetest.NewScript()
			reg := agents(t, "a", a, "b", b)
			mem := memory.New()
			eng := newEngine(t, engine.Config{Registry: reg, Planner: chain("a", "b"), Store: &crashingStore{Store: mem, n: crashAt}, Policy: pol})
			if _, err := troupetest.Collect(eng.Run(t.Context(), troupe.Request{Query: "q", RunID: "run_crash"})); !errors.Is(err, errCrash) {
				t.Fatalf("run error %v, want the store's", err)
			}
			r, err := newEngine(t, engine.Config{Registry: reg, Planner: chain("a", "b"), Store: mem, Policy: pol}).Resume(t.Context(), "run_crash", engine.ResumeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := r.Wait(t.Context()); err != nil {
				t.Fatalf("resumed run: %v", err)
			}
			all, _ := mem.Events(t.Context(), "run_crash", 0)
			troupetest.CheckLog(t, all)
			if got := len(troupetest.Find(all, troupe.KindDispatchCompleted, "a")); got != 1 {
				t.Errorf("a completed %d times in the log, want 1 (its retry)", got)
			}
			if out := outcome(t, all); out.Status != troupe.RunCompleted || len(out.Failed) != 0 {
				t.Errorf("outcome %+v, want completed with nothing failed", out)
			}
		})
	}
}

// A run resumed from its log takes the decisions the log records, budget-driven ones too. The
// time budget's clock starts again on resume, so a failure whose retry the original run refused
// because the budget would be spent first (and which a fallback replaced) would be retried if
// decided afresh, under the fallback's dispatch id: the run would end as diverged. The log
// shows the task went on to another agent, and the resumed run follows it.
func TestResumeFollowsABudgetRefusedRetry(t *testing.T) {
	pol := troupe.ErrorPolicy{OnError: troupe.Fallback, Retry: troupe.RetryPolicy{MaxAttempts: 3, Initial: 30 * time.Second, Max: 30 * time.Second},
		FallbackAgents: map[string][]string{"a": {"spare"}}}
	for crashAt := 4; crashAt <= 9; crashAt++ {
		t.Run(fmt.Sprint("crash after ", crashAt, " events"), func(t *testing.T) {
			clock := troupetest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			// a takes 45 s of a 60 s budget and fails: a retry 30 s later would start past it.
			a := troupetest.NewScript(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
				clock.Advance(45 * time.Second)
				return nil, &troupe.AgentError{Code: troupe.CodeAgentError, Message: "flaky", Recoverable: true}
			})
			spare := troupetest.NewScript()
			reg := agents(t, "a", a, "spare", spare)
			mem := memory.New()
			cfg := engine.Config{Registry: reg, Planner: chain("a"), Policy: pol, Executor: local.New(local.Config{Clock: clock.Now})}
			crashing := cfg
			crashing.Store = &crashingStore{Store: mem, n: crashAt}
			req := troupe.Request{Query: "q", RunID: "run_budget", Budget: troupe.Budget{TimeSeconds: 60}}
			if _, err := troupetest.Collect(newEngine(t, crashing).Run(t.Context(), req)); !errors.Is(err, errCrash) {
				t.Fatalf("run error %v, want the store's", err)
			}
			cfg.Store = mem
			logged, _ := mem.Events(t.Context(), "run_budget", 0)
			runs := 1 // a's failure is in the log: the resumed run takes it
			if len(troupetest.Find(logged, troupe.KindDispatchFailed, "a")) == 0 {
				runs = 2 // it is not: a runs again, and fails again
			}
			r, err := newEngine(t, cfg).Resume(t.Context(), "run_budget", engine.ResumeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := r.Wait(t.Context()); err != nil {
				t.Fatalf("resumed run: %v", err)
			}
			all, _ := mem.Events(t.Context(), "run_budget", 0)
			troupetest.CheckLog(t, all)
			if a.Calls() != runs {
				t.Errorf("a ran %d times, want %d: its retry was refused", a.Calls(), runs)
			}
			if got := len(troupetest.Find(all, troupe.KindDispatchCompleted, "spare")); got != 1 {
				t.Errorf("spare completed %d times in the log, want 1", got)
			}
		})
	}
}
