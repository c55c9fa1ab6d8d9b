package troupe_test

import (
	"math"
	"testing"

	"github.com/troupehq/troupe"
)

// Seed 000's AgentSelectionCriteria: an intent, complexity one of its literals, a confidence
// threshold in [0, 1]; and a time budget a clock can reach, which JSON can hold.
func TestSelectionCriteriaValidate(t *testing.T) {
	tests := []struct {
		name string
		c    troupe.SelectionCriteria
		want []string
	}{
		{"intent only", troupe.SelectionCriteria{IntentType: "causal"}, nil},
		{"everything in bounds", troupe.SelectionCriteria{IntentType: "causal", Complexity: "complex",
			ConfidenceThreshold: troupe.Ptr(0.0), TimeBudgetSeconds: troupe.Ptr(0.5)}, nil},
		{"no intent", troupe.SelectionCriteria{}, []string{"intent_type"}},
		{"unknown complexity", troupe.SelectionCriteria{IntentType: "causal", Complexity: "hard"}, []string{"complexity"}},
		{"threshold above 1", troupe.SelectionCriteria{IntentType: "causal", ConfidenceThreshold: troupe.Ptr(1.5)}, []string{"confidence_threshold"}},
		{"threshold NaN", troupe.SelectionCriteria{IntentType: "causal", ConfidenceThreshold: troupe.Ptr(math.NaN())}, []string{"confidence_threshold"}},
		{"budget zero", troupe.SelectionCriteria{IntentType: "causal", TimeBudgetSeconds: troupe.Ptr(0.0)}, []string{"time_budget_seconds"}},
		{"budget NaN", troupe.SelectionCriteria{IntentType: "causal", TimeBudgetSeconds: troupe.Ptr(math.NaN())}, []string{"time_budget_seconds"}},
		// JSON cannot carry an infinity, so a request holding one could not be recorded.
		{"budget infinite", troupe.SelectionCriteria{IntentType: "causal", TimeBudgetSeconds: troupe.Ptr(math.Inf(1))}, []string{"time_budget_seconds"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkProblems(t, tt.c.Validate(), tt.want, nil) })
	}
}
