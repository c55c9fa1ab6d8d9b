package aggregate_test

import (
	"fmt"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/aggregate"
)

func ExampleCombine() {
	results := []*troupe.Result{
		{
			AgentName:       "causal_impact",
			Status:          troupe.StatusCompleted,
			AgentResult:     map[string]any{"region": "Midwest", "driver": "access restrictions"},
			AnalysisSummary: troupe.Ptr("NRx fell 12.5% after prior-auth denials rose"),
			Confidence:      troupe.Ptr(0.85),
		},
		{
			AgentName:   "gap_analyzer",
			Status:      troupe.StatusCompleted,
			AgentResult: map[string]any{"region": "Midwest", "driver": "competitor launch"},
			Confidence:  troupe.Ptr(0.7),
		},
		{AgentName: "explainer", Status: troupe.StatusTimeout},
	}
	agg, err := aggregate.Combine(results, aggregate.Options{Strategy: aggregate.HighestConfidence})
	if err != nil {
		panic(err)
	}
	fmt.Println("agents:", agg.AgentsExecuted)
	fmt.Println("confidence:", agg.OverallConfidence)
	fmt.Println("consistency:", agg.ConsistencyScore)
	for _, c := range agg.ConflictsDetected {
		fmt.Printf("%s → %v (%s)\n", c.Field, c.Resolved, c.Reason)
	}
	fmt.Println("synthesis:", agg.Synthesis)
	fmt.Println("warnings:", agg.Warnings)
	// Output:
	// agents: [causal_impact gap_analyzer]
	// confidence: 0.7
	// consistency: 0.5
	// driver → access restrictions (highest confidence 0.85 (causal_impact) vs 0.70 (gap_analyzer))
	// synthesis: causal_impact: NRx fell 12.5% after prior-auth denials rose.
	// warnings: [explainer: timeout]
}
