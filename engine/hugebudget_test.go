package engine_test

import (
	"math"
	"strings"
	"testing"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/engine"
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
		{troupe.Request{Query: "q", Budget: troupe.Budget{TimeSeconds: math.Inf(1)}}, "budget must be finite"},
		{troupe.Request{Query: "q", Budget: troupe.Budget{MaxCostDollars: math.NaN()}}, "budget must be finite"},
		{troupe.Request{Query: "q", Criteria: &troupe.SelectionCriteria{IntentType: "causal", TimeBudgetSeconds: troupe.Ptr(-5.0)}}, "time_budget_seconds -5"},
		{troupe.Request{Query: "q", Criteria: &troupe.SelectionCriteria{IntentType: "causal", TimeBudgetSeconds: troupe.Ptr(math.NaN())}}, "time_budget_seconds NaN"},
	} {
		_, err := eng.Start(t.Context(), tt.req)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Start(%+v) = %v; want an error saying %q", tt.req.Budget, err, tt.want)
		}
	}
}
