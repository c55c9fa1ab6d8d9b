package feasibility_test

import (
	"context"
	"fmt"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/engine"
	"github.com/troupehq/troupe/examples/feasibility"
)

// The system runs as two agents: the feasibility bundle (K seeded judges) and the orchestrator
// that decides over it.
func ExampleRegistry() {
	reg, err := feasibility.Registry(nil, feasibility.Config{})
	if err != nil {
		panic(err)
	}
	eng, err := engine.New(engine.Config{Registry: reg})
	if err != nil {
		panic(err)
	}
	for _, id := range []string{"crm-rollout", "warehouse-expansion"} {
		for ev, err := range eng.Run(context.Background(), troupe.Request{ParsedQuery: map[string]any{"case": id}}) {
			if err != nil {
				panic(err)
			}
			if r, ok := ev.Data.(*troupe.Result); ok && ev.Kind == troupe.KindDispatchCompleted && r.AgentName == feasibility.OrchestratorAgent {
				fmt.Printf("%s: %s (%s, confidence %.2f, early stop %v)\n", id, r.AgentResult["decision"], r.AgentResult["votes"], r.AgentResult["confidence"], r.AgentResult["early_stop"])
			}
		}
	}
	// Output:
	// crm-rollout: go (2 of 2 feasible, confidence 0.96, early stop true)
	// warehouse-expansion: no_go_unless_rescoped (2 of 3 infeasible, confidence 0.78, early stop false)
}
