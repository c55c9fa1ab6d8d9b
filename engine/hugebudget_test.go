package engine_test

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/engine"
	"github.com/troupehq/troupe/executor/local"
	"github.com/troupehq/troupe/store/memory"
	"github.com/troupehq/troupe/troupetest"
)

// TestHugeTimesAreLongNotSpent: a time budget or a timeout too long for a time.Duration (1e12
// seconds is 31,700 years) is as good as none. Converted without saturating it wrapped to a
// negative Duration, so the budget read as spent before the first dispatch and the timeout
// as passed.
func TestHugeTimesAreLongNotSpent(t *testing.T) {
	for _, tt := range []struct {
		name string
		req  troupe.Request
	}{
		{"budget", troupe.Request{Query: "q", Budget: troupe.Budget{TimeSeconds: 1e12}}},
		{"criteria budget", troupe.Request{Query: "q", Criteria: &troupe.SelectionCriteria{IntentType: "causal", TimeBudgetSeconds: troupe.Ptr(1e12)}}},
		{"timeout", troupe.Request{Query: "q", Timeouts: map[string]float64{"a": 1e12, "b": 1e300}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			eng := newEngine(t, engine.Config{Registry: agents(t, "a", troupe.AgentFunc(noop), "b", troupe.AgentFunc(noop)), Planner: chain("a", "b")})
			evs := run(t, eng, tt.req)
			o := outcome(t, evs)
			if o.Status != troupe.RunCompleted || o.Budget != "" || len(o.Skipped) > 0 || len(results(evs)) != 2 {
				t.Fatalf("status %s, budget %q, skipped %v, results of %d agents; want both agents completed", o.Status, o.Budget, o.Skipped, len(results(evs)))
			}
		})
	}
}

// TestUnusableBudgetsRefused: a time budget that is not a positive finite number of seconds,
// in the request's budget or its criteria, is refused at the start, saying which.
func TestUnusableBudgetsRefused(t *testing.T) {
	eng := newEngine(t, engine.Config{Registry: agents(t, "a", troupe.AgentFunc(noop)), Planner: chain("a")})
	for _, tt := range []struct {
		req  troupe.Request
		want string
	}{
		{troupe.Request{Query: "q", Budget: troupe.Budget{TimeSeconds: math.Inf(1)}}, `field "budget.time_seconds": want a finite number, 0 or more, got +Inf`},
		{troupe.Request{Query: "q", Budget: troupe.Budget{MaxCostDollars: math.NaN()}}, `field "budget.max_cost_dollars": want a finite number, 0 or more, got NaN`},
		{troupe.Request{Query: "q", Criteria: &troupe.SelectionCriteria{IntentType: "causal", TimeBudgetSeconds: troupe.Ptr(-5.0)}}, `field "criteria.time_budget_seconds": want a positive, finite number of seconds, got -5`},
		{troupe.Request{Query: "q", Criteria: &troupe.SelectionCriteria{IntentType: "causal", TimeBudgetSeconds: troupe.Ptr(math.NaN())}}, `field "criteria.time_budget_seconds": want a positive, finite number of seconds, got NaN`},
	} {
		_, err := eng.Start(t.Context(), tt.req)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Start(%+v) = %v; want an error saying %q", tt.req.Budget, err, tt.want)
		}
	}
}

// TestResumedRunKeepsItsBudgetSpent: a resumed run's time budget counts the time its log shows
// the run active before, not only the time since the resume. Here a and b take 40 s and 30 s of
// a 60 s budget; the log is cut once b's result is in, before the run found the budget spent.
// The resumed run, whose budget clock started again from nothing, dispatched c.
func TestResumedRunKeepsItsBudgetSpent(t *testing.T) {
	req := troupe.Request{Query: "q", RunID: "run_active", Budget: troupe.Budget{TimeSeconds: 60}}
	setup := func(t *testing.T, st troupe.Store) (engine.Config, *troupetest.Script) {
		clock := troupetest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		step := func(d time.Duration) troupe.Agent {
			return troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
				clock.Advance(d)
				return &troupe.Result{AgentResult: map[string]any{"ok": true}}, nil
			})
		}
		c := troupetest.NewScript()
		return engine.Config{Registry: agents(t, "a", step(40*time.Second), "b", step(30*time.Second), "c", c), Planner: chain("a", "b", "c"),
			Store: st, Executor: local.New(local.Config{Clock: clock.Now})}, c
	}
	cfg, c := setup(t, memory.New())
	want := run(t, newEngine(t, cfg), req)
	if out := outcome(t, want); c.Calls() != 0 || !slices.Equal(out.Skipped, []string{"c"}) || !strings.HasPrefix(out.Budget, "time budget") {
		t.Fatalf("uninterrupted run: c ran %d times, skipped %v, budget %q; want c skipped for the time budget", c.Calls(), out.Skipped, out.Budget)
	}
	cut := slices.IndexFunc(want, func(ev troupe.Event) bool { return ev.Kind == troupe.KindDispatchCompleted && ev.Agent == "b" }) + 1
	st := memory.New()
	if err := st.Append(t.Context(), want[:cut]...); err != nil {
		t.Fatal(err)
	}
	cfg, c = setup(t, st)
	r, err := newEngine(t, cfg).Resume(t.Context(), "run_active", engine.ResumeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, _ = r.Wait(t.Context())
	got, _ := st.Events(t.Context(), "run_active", 0)
	troupetest.CheckLog(t, got)
	if out := outcome(t, got); c.Calls() != 0 || !slices.Equal(out.Skipped, []string{"c"}) || !strings.Contains(out.Budget, "(1m10s elapsed)") {
		t.Errorf("resumed run: c ran %d times, skipped %v, budget %q; want c skipped, 70s of the budget elapsed", c.Calls(), out.Skipped, out.Budget)
	}
}

// TestRetryBackoffPastEverythingRefused: a retry whose backoff is the longest Duration (a
// policy whose Initial and Max are that long saturates there) would start long after the time
// budget is spent, so it is refused. Adding the backoff to the time elapsed wrapped negative,
// read as within budget, and the run waited on a retry due in 292 years.
func TestRetryBackoffPastEverythingRefused(t *testing.T) {
	clock := troupetest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	a := troupetest.NewScript(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		clock.Advance(time.Second)
		return nil, &troupe.AgentError{Code: troupe.CodeAgentError, Message: "flaky", Recoverable: true}
	})
	pol := troupe.ErrorPolicy{OnError: troupe.Retry, Retry: troupe.RetryPolicy{MaxAttempts: 3, Initial: math.MaxInt64, Max: math.MaxInt64}}
	eng := newEngine(t, engine.Config{Registry: agents(t, "a", a), Planner: chain("a"), Policy: pol, Executor: local.New(local.Config{Clock: clock.Now})})
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	r, err := eng.Start(ctx, troupe.Request{Query: "q"})
	if err != nil {
		t.Fatal(err)
	}
	st, _ := r.Wait(ctx)
	if st.Status != troupe.RunFailed || a.Calls() != 1 {
		t.Fatalf("run ended %s with a called %d times; want failed, its retry refused for the time budget", st.Status, a.Calls())
	}
}
