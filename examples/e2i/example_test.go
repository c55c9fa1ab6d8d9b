package e2i_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/engine"
	"github.com/troupehq/troupe/examples/e2i"
)

func ExampleParseQuery() {
	for _, q := range []string{
		"What caused the drop in NRx for Kisqali in Midwest?",
		"Show me market trends and opportunities for Kisqali",
	} {
		b, _ := json.Marshal(e2i.ParseQuery(q))
		fmt.Println(string(b))
	}
	// Output:
	// {"brands":["Kisqali"],"intent":"causal","kpis":["NRx"],"regions":["Midwest"],"time_period":"recent"}
	// {"brands":["Kisqali"],"intent":"trend","secondary_intents":["exploratory"],"time_period":"recent"}
}

// Seed 000's example question, run end to end: the plan, each agent's summary, and the answer
// the explainer composed from their numbers.
func Example() {
	reg, err := e2i.Registry()
	if err != nil {
		fmt.Println(err)
		return
	}
	eng, err := engine.New(engine.Config{Registry: reg, Planner: e2i.Rules()})
	if err != nil {
		fmt.Println(err)
		return
	}
	q := "What caused the drop in NRx for Kisqali in Midwest?"
	for ev, err := range eng.Run(context.Background(), troupe.Request{Query: q, ParsedQuery: e2i.ParseQuery(q)}) {
		if err != nil {
			fmt.Println(err)
			return
		}
		switch d := ev.Data.(type) {
		case *troupe.Plan:
			fmt.Println("plan:", d.ExecutionPlan())
		case *troupe.Result:
			fmt.Printf("%s (%.2f): %s\n", d.AgentName, *d.Confidence, d.Summary())
		case *troupe.Aggregation:
			fmt.Printf("answer (%.2f): %s\n", d.OverallConfidence, d.Synthesis)
		case *troupe.Outcome:
			fmt.Println(d.Status)
		}
	}
	// Output:
	// plan: [[causal_impact] [gap_analyzer] [explainer]]
	// causal_impact (0.80): Kisqali NRx in the Midwest fell 12.4% from week 18 against the Northeast, South and West (95% CI -14.1% to -10.7%, t = -14.7, beyond 3 of 3 placebos): 174 NRx a week lost, 1,565 in all
	// gap_analyzer (0.90): Over the last 8 weeks the Midwest wrote 49.4 Kisqali NRx a week per 100 prescribers against 55.0 in the West, its best peer: 10.2% behind, an opportunity of 140 NRx a week, 1,121 over the period; the estimated drop of 174 NRx a week is 124.1% of that gap
	// explainer (0.80): Explained 2 upstream results from 16 of their numbers
	// answer (0.80): Kisqali NRx in the Midwest fell 12.4% from week 18 against the Northeast, South and West (95% CI 10.7% to 14.1%; difference-in-differences, t = -14.7): 174 NRx a week lost, 1,565 over the 9 weeks since. Over the last 8 weeks the Midwest wrote 49.4 NRx a week per 100 prescribers against 55.0 in the West, its best peer: 10.2% behind, an opportunity of 1,121 NRx (140 a week). The estimated effect, 174 a week, is 124.1% of that gap: without it the Midwest would be level with or ahead of the West.
	// completed
}
