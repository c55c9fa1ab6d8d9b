package troupe_test

import (
	"errors"
	"math"
	"testing"

	"github.com/troupehq/troupe"
)

// Request.Validate reports every problem of a request at once, each at its field's JSON path,
// and takes a request an engine takes.
func TestRequestValidateNamesEveryField(t *testing.T) {
	agents := troupe.NewRegistry().MustAdd("a", troupe.AgentFunc(nil)).MustAdd("b", troupe.AgentFunc(nil))
	bad := troupe.Request{
		Query:    "q",
		Priority: "urgent",
		Timeouts: map[string]float64{"b": math.Inf(1), "a": 0},
		Policy:   &troupe.ErrorPolicy{OnError: troupe.Fallback, FallbackAgents: map[string][]string{"a": {"nobody"}}},
		Budget:   troupe.Budget{TimeSeconds: math.NaN(), MaxCostDollars: -1, MaxTokens: -2},
		Criteria: &troupe.SelectionCriteria{IntentType: "x", TimeBudgetSeconds: troupe.Ptr(0.0)},
	}
	var ves troupe.ValidationErrors
	if err := bad.Validate(agents); !errors.As(err, &ves) {
		t.Fatalf("Validate = %v, want ValidationErrors", err)
	}
	want := []string{"priority", "timeouts.a", "timeouts.b", "policy.fallback_agents.a[0]", "budget.time_seconds",
		"budget.max_cost_dollars", "budget.max_tokens", "criteria.time_budget_seconds"}
	var got []string
	for _, e := range ves {
		if e.Object != "request" {
			t.Errorf("%v: object %q, want request", e, e.Object)
		}
		got = append(got, e.Field)
	}
	if len(got) != len(want) {
		t.Fatalf("fields %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("field %d is %q, want %q (all: %q)", i, got[i], want[i], got)
		}
	}
	good := troupe.Request{Query: "q", Priority: troupe.PriorityHigh, Timeouts: map[string]float64{"a": 1.5},
		Policy: &troupe.ErrorPolicy{OnError: troupe.Fallback, FallbackAgents: map[string][]string{"a": {"b"}}},
		Budget: troupe.Budget{TimeSeconds: 10, MaxCostDollars: 0.5, MaxTokens: 100}}
	if err := good.Validate(agents); err != nil {
		t.Errorf("Validate of a good request: %v", err)
	}
	if err := (&troupe.Request{Query: "q"}).Validate(agents); err != nil {
		t.Errorf("Validate of a request with every field left zero: %v", err)
	}
}
