package troupe_test

import (
	"context"
	"fmt"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/engine"
)

// Three function agents, a query, and its events as they happen. Without a planner the engine
// plans every registered agent; their declared state keys order them.
func Example() {
	reg := troupe.NewRegistry()
	reg.MustAdd("causal_impact", troupe.AgentFunc(estimate), troupe.Writes("effect"))
	reg.MustAdd("gap_analyzer", troupe.AgentFunc(findGap), troupe.Reads("effect"), troupe.Writes("gap"))
	reg.MustAdd("explainer", troupe.AgentFunc(explain), troupe.Reads("effect", "gap"))

	eng, _ := engine.New(engine.Config{Registry: reg, Seed: 1})
	for ev, err := range eng.Run(context.Background(), troupe.Request{Query: "What caused the drop in NRx?"}) {
		if err != nil {
			fmt.Println(err)
			return
		}
		if ev.Kind == troupe.KindDispatchCompleted || ev.Stage.Terminal() {
			fmt.Println(ev.Stage, ev.Agent, ev.Status)
		}
	}
	// Output:
	// execute causal_impact completed
	// execute gap_analyzer completed
	// execute explainer completed
	// complete  completed
}

func estimate(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
	return &troupe.Result{AgentResult: map[string]any{"effect": -0.12}, Confidence: troupe.Ptr(0.8)}, nil
}

func findGap(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
	effect, _ := d.State("effect")
	return &troupe.Result{AgentResult: map[string]any{"gap": effect.(float64) * -1000}, Confidence: troupe.Ptr(0.7)}, nil
}

func explain(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
	effect, _ := d.State("effect")
	gap, _ := d.State("gap")
	text := fmt.Sprintf("NRx moved %.0f%%, a gap of %.0f prescriptions.", effect.(float64)*100, gap.(float64))
	return &troupe.Result{AgentResult: map[string]any{"explanation": text}, AnalysisSummary: &text, Confidence: troupe.Ptr(0.9)}, nil
}
