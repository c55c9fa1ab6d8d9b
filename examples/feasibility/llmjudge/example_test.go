package llmjudge_test

import (
	"context"
	"fmt"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/agent/cassette"
	"github.com/troupehq/troupe/agent/llmagent"
	"github.com/troupehq/troupe/engine"
	"github.com/troupehq/troupe/examples/feasibility"
	"github.com/troupehq/troupe/examples/feasibility/llmjudge"
	"github.com/troupehq/troupe/troupetest"
)

// ExampleRegistry replays two recorded LLM judges that agree on the CRM rollout: the bundle
// stops at two and the orchestrator decides outright. Against a live endpoint, leave
// HTTPClient nil and set BaseURL and Model (the key stays in OPENAI_API_KEY).
func ExampleRegistry() {
	c, err := cassette.New("testdata/llm_agree.json", cassette.Config{Mode: cassette.ModeReplay})
	if err != nil {
		panic(err)
	}
	reg, err := llmjudge.Registry(nil, llmjudge.Config{LLM: llmagent.Config{
		BaseURL: "http://llm.invalid/v1", Model: "judge-model", Temperature: troupe.Ptr(0.7), HTTPClient: c.Client()}})
	if err != nil {
		panic(err)
	}
	eng, err := engine.New(engine.Config{Registry: reg})
	if err != nil {
		panic(err)
	}
	evs, err := troupetest.Collect(eng.Run(context.Background(), troupe.Request{Query: "is crm-rollout feasible?", ParsedQuery: map[string]any{"case": "crm-rollout"}}))
	if err != nil {
		panic(err)
	}
	for _, ev := range troupetest.Find(evs, troupe.KindDispatchCompleted, feasibility.OrchestratorAgent) {
		r := ev.Data.(*troupe.Result)
		fmt.Println(r.AgentResult["decision"], r.AgentResult["votes"], r.AgentResult["early_stop"])
	}
	// Output: go 2 of 2 feasible true
}
