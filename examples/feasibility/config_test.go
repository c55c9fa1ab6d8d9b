package feasibility_test

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/config"
	"github.com/troupehq/troupe/examples/feasibility"
	"github.com/troupehq/troupe/troupetest"
)

// TestConfigLoads: troupe.yaml is valid, names the builtins Builtins provides, and its bundle
// replicates the judge against the judge's schema.
func TestConfigLoads(t *testing.T) {
	f, err := config.Load(".")
	if err != nil {
		t.Fatal(err)
	}
	reg, err := feasibility.Builtins(nil, feasibility.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for name, a := range f.Agents {
		if a.Kind == config.KindBuiltin && !reg.Has(name) {
			t.Errorf("troupe.yaml's builtin %s is not in Builtins", name)
		}
	}
	b := f.Agents[feasibility.BundleAgent]
	if b == nil || b.Bundle == nil || b.Bundle.Agent != "judge" || b.Bundle.Replicates != 3 {
		t.Errorf("bundle = %+v", b)
	}
	if o := f.Agents[feasibility.OrchestratorAgent]; o == nil || len(o.After) != 1 || o.After[0] != feasibility.BundleAgent {
		t.Errorf("orchestrator = %+v", o)
	}
}

// TestInputFile: testdata/warehouse.json, the request the file's comment runs, decodes as a
// request and names a shipped case.
func TestInputFile(t *testing.T) {
	raw, err := os.ReadFile("testdata/warehouse.json")
	if err != nil {
		t.Fatal(err)
	}
	var req troupe.Request
	if err := json.Unmarshal(raw, &req); err != nil {
		t.Fatal(err)
	}
	if _, ok := feasibility.DefaultDataset().Case(req.ParsedQuery["case"].(string)); !ok {
		t.Errorf("unknown case in %v", req.ParsedQuery)
	}
}

// TestConfigExamplesRun: every example query troupe.yaml lists (troupe agents shows them to a
// new user) picks a shipped case from its words alone and runs to the orchestrator's decision.
func TestConfigExamplesRun(t *testing.T) {
	f, err := config.Load(".")
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Examples) == 0 {
		t.Fatal("troupe.yaml lists no example queries")
	}
	for _, ex := range f.Examples {
		t.Run(ex.Query, func(t *testing.T) {
			evs, err := troupetest.Collect(newEngine(t).Run(t.Context(), troupe.Request{Query: ex.Query}))
			if err != nil {
				t.Fatal(err)
			}
			if last := troupetest.Last(evs); last.Kind != troupe.KindRunCompleted {
				t.Fatalf("run ended %s: %+v", last.Kind, last.Data)
			}
			decided := false
			for _, ev := range troupetest.Find(evs, troupe.KindDispatchCompleted, feasibility.OrchestratorAgent) {
				decided = ev.Data.(*troupe.Result).AgentResult["decision"] != nil
			}
			if !decided {
				t.Errorf("no orchestrator decision for %q", ex.Query)
			}
		})
	}
}
