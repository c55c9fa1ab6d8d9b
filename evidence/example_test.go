package evidence_test

import (
	"context"
	"fmt"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/evidence"
)

func ExampleBundle() {
	// A judge whose threshold varies with its sampling seed, as an LLM's would.
	judge := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		seed := d.UserContext[evidence.SeedKey].(int64)
		threshold := map[int64]float64{11: 0.6, 23: 0.8, 47: 0.7}[seed]
		tokens := int64(120)
		return &troupe.Result{Status: troupe.StatusCompleted, TokensUsed: &tokens,
			AgentResult: map[string]any{"feasible": "yes", "threshold": threshold}}, nil
	})
	feas := evidence.Bundle(judge, evidence.Config{
		Name:    "feas_bundle",
		Epsilon: 0.05, // r1 and r2 are 0.1 apart: not close enough to stop at two
		Schema:  []byte(`{"type":"object","required":["feasible","threshold"],"properties":{"threshold":{"minimum":0,"maximum":1}}}`),
	})

	d := troupe.NewDispatch()
	d.TargetAgent, d.Query = "feas_bundle", "Can we ship by Friday?"
	res, err := feas.Run(context.Background(), d)
	if err != nil {
		panic(err)
	}
	summary := res.AgentResult["summary"].(map[string]any)
	fmt.Println(res.Summary())
	fmt.Println("consensus:", summary["consensus"])
	fmt.Println("pairwise:", summary["pairwise_distance"])
	fmt.Println("tokens:", *res.TokensUsed)
	// Output:
	// 3 of 3 replicates valid; agreement confidence 0.93; consensus on 1 field; 1 disagreement, largest on "threshold" (distance 0.13 across r1, r2, r3).
	// consensus: map[feasible:yes]
	// pairwise: [[0 0.1 0.05] [0.1 0 0.05] [0.05 0.05 0]]
	// tokens: 360
}
