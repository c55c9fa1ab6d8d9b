package plan_test

import (
	"context"
	"fmt"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/examples/e2i"
	"github.com/troupehq/troupe/plan"
)

func seed000Registry() *troupe.Registry {
	reg := troupe.NewRegistry()
	for _, name := range e2i.Agents() {
		reg.MustAdd(name, troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
			return nil, nil
		}))
	}
	return reg
}

// Seed 000's sequential example: a causal question about a KPI.
func ExampleRules_Plan() {
	rules := e2i.Rules()
	p, err := rules.Plan(&troupe.Request{
		Query: "What caused the drop in NRx for Kisqali in Midwest?",
		ParsedQuery: map[string]any{
			"intent":      "causal",
			"brands":      []any{"Kisqali"},
			"kpis":        []any{"NRx"},
			"regions":     []any{"Midwest"},
			"time_period": "recent",
		},
	}, seed000Registry())
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(p.ExecutionPlan())
	fmt.Print(p)
	// Output:
	// [[causal_impact] [gap_analyzer] [explainer]]
	// stage 1:
	//   causal_impact            priority 1.00  primary agent for intent causal; KPI NRx routes to it
	// stage 2:
	//   gap_analyzer             priority 0.85  optional agent for intent causal (moderate query); KPI NRx routes to it  after causal_impact
	// stage 3:
	//   explainer                priority 0.80  optional agent for intent causal (moderate query); synthesizes the results of 2 other selected agents  after causal_impact, gap_analyzer
	// not selected:
	//   heterogeneous_optimizer  priority 0.60  optional agent for intent causal (moderate query); skipped: below the confidence threshold 0.7
}

// Seed 000's parallel example: a trend question with a secondary, exploratory intent.
func ExampleRules_Plan_parallel() {
	p, err := e2i.Rules().Plan(&troupe.Request{
		Query: "Show me market trends and opportunities for Kisqali",
		ParsedQuery: map[string]any{
			"intent":            "trend",
			"secondary_intents": []any{"exploratory"},
			"brands":            []any{"Kisqali"},
		},
	}, seed000Registry())
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(p.ExecutionPlan())
	// Output:
	// [[drift_monitor gap_analyzer] [explainer]]
}

// Seed 000's get_execution_order docstring example.
func ExampleRules_ExecutionOrderFor() {
	order, err := e2i.Rules().ExecutionOrderFor("causal",
		[]string{"causal_impact", "gap_analyzer", "heterogeneous_optimizer", "explainer"}, seed000Registry())
	fmt.Println(order, err)
	// Output:
	// [[causal_impact] [gap_analyzer heterogeneous_optimizer] [explainer]] <nil>
}

// Two agents that write the same session state key never run in parallel.
func ExampleRules_CanExecuteParallel() {
	reg := troupe.NewRegistry()
	noop := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) { return nil, nil })
	reg.MustAdd("drift_monitor", noop, troupe.Writes("health"))
	reg.MustAdd("health_score", noop, troupe.Writes("health"))
	reg.MustAdd("gap_analyzer", noop)
	rules := e2i.Rules()
	fmt.Println(rules.CanExecuteParallel([]string{"drift_monitor", "gap_analyzer"}, reg))
	fmt.Println(rules.CanExecuteParallel([]string{"drift_monitor", "health_score"}, reg))
	// Output:
	// true
	// false
}

func ExampleCriteriaFromParsed() {
	c, err := plan.CriteriaFromParsed(map[string]any{
		"intent":               "comparative",
		"brands":               []any{"Kisqali", "Fabhalta"},
		"complexity":           "complex",
		"excluded_agents":      []any{"explainer"},
		"confidence_threshold": 0.8,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c.IntentType, c.Entities, c.ComplexityLevel(), c.ExcludedAgents, c.Threshold())

	_, err = plan.CriteriaFromParsed(map[string]any{"intent": "causal", "requires_ml": "yes"})
	fmt.Println(err)
	// Output:
	// comparative map[brands:[Kisqali Fabhalta]] complex [explainer] 0.8
	// plan: parsed query: troupe: parsed_query: field "requires_ml": want a boolean, got a string
}
