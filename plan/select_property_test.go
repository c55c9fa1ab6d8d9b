package plan_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/plan"
)

// selectionScenario is a random rule set, catalog and criteria over eight agents: intents with
// primary and optional agents, KPI and flag agents, exclusive and compatible pairs,
// synthesizers, state keys, and agents missing from the catalog.
type selectionScenario struct {
	rules *plan.Rules
	reg   *troupe.Registry
	crit  *troupe.SelectionCriteria
}

func randomSelection(t *testing.T, rng *rand.Rand) selectionScenario {
	agents := []string{"a0", "a1", "a2", "a3", "a4", "a5", "a6", "a7"}
	some := func(n int) []string {
		var out []string
		for range rng.IntN(n + 1) {
			if a := agents[rng.IntN(len(agents))]; !slices.Contains(out, a) {
				out = append(out, a)
			}
		}
		return out
	}
	pair := func() [2]string {
		i := rng.IntN(len(agents))
		return [2]string{agents[i], agents[(i+1+rng.IntN(len(agents)-1))%len(agents)]}
	}
	r := &plan.Rules{MaxConcurrency: rng.IntN(3)}
	for _, intent := range []string{"i0", "i1"} {
		primary := append(some(1), agents[rng.IntN(len(agents))])
		primary = slices.Compact(primary)
		var optional []string
		for _, a := range some(3) {
			if !slices.Contains(primary, a) {
				optional = append(optional, a)
			}
		}
		r.Intents = append(r.Intents, plan.IntentRule{Intent: intent, Primary: primary, Optional: optional, SequenceRequired: rng.IntN(2) == 0})
	}
	r.KPIMap = map[string][]string{"K0": some(2), "K1": some(2)}
	r.FlagAgents = map[string][]string{plan.FlagRequiresML: some(2)}
	for range rng.IntN(4) {
		if p := pair(); !has(r.ExclusivePairs, p[0], p[1]) {
			r.ExclusivePairs = append(r.ExclusivePairs, p)
		}
	}
	for range rng.IntN(4) {
		if p := pair(); !has(r.ExclusivePairs, p[0], p[1]) {
			r.CompatiblePairs = append(r.CompatiblePairs, p)
		}
	}
	r.Synthesizers = some(1)

	reg := troupe.NewRegistry()
	keys := []string{"k0", "k1", "k2"}
	for _, a := range agents {
		if rng.IntN(8) == 0 {
			continue // not in the catalog
		}
		var opts []troupe.Option
		for range rng.IntN(2) {
			opts = append(opts, troupe.Writes(keys[rng.IntN(len(keys))]))
		}
		for range rng.IntN(2) {
			opts = append(opts, troupe.Reads(keys[rng.IntN(len(keys))]))
		}
		if err := reg.Add(a, troupe.AgentFunc(noop), opts...); err != nil {
			t.Fatal(err)
		}
	}
	c := &troupe.SelectionCriteria{
		IntentType:      "i0",
		Entities:        map[string][]string{plan.EntityKPIs: []string{"K0", "K1", "K9"}[:rng.IntN(4)]},
		Complexity:      []string{"", "simple", "moderate", "complex"}[rng.IntN(4)],
		RequiresML:      rng.IntN(2) == 0,
		PreferredAgents: some(1),
		ExcludedAgents:  some(1),
	}
	if rng.IntN(2) == 0 {
		c.SecondaryIntents = []string{"i1"}
	}
	if rng.IntN(2) == 0 {
		c.ConfidenceThreshold = ptr(float64(rng.IntN(11)) / 10)
	}
	return selectionScenario{r, reg, c}
}

// Seed 000's select_agents and get_execution_order together, over random rule sets: every
// selected agent is planned exactly once, after its dependencies and with no agent it
// conflicts with; selection follows the package documentation's rule (eligible, and primary,
// preferred or at the threshold); scores are in [0, 1]; and the plan is the same, byte for
// byte, every time.
func TestSelectAndPlanProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(0x5e1ec7, 0x000))
	planned := 0
	for n := range 2000 {
		s := randomSelection(t, rng)
		p, err := s.rules.Plan(&troupe.Request{Criteria: s.crit}, s.reg)
		if err != nil {
			continue // ErrNoSelection, or a cycle among random declarations
		}
		planned++
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			checkPlan(t, s.rules, s.reg, p)
			main := s.rules.Rule(s.crit.IntentType)
			for _, sel := range append(slices.Clone(p.Selected), p.Skipped...) {
				selected := slices.ContainsFunc(p.Selected, func(x troupe.Selection) bool { return x.Agent == sel.Agent })
				eligible := s.reg.Has(sel.Agent) && !slices.Contains(s.crit.ExcludedAgents, sel.Agent)
				always := slices.Contains(main.Primary, sel.Agent) || slices.Contains(s.crit.PreferredAgents, sel.Agent)
				if want := eligible && (always || sel.Score >= s.crit.Threshold()); selected != want {
					t.Errorf("%+v: selected %v, want %v (eligible %v, always %v, threshold %v)", sel, selected, want, eligible, always, s.crit.Threshold())
				}
				if !(sel.Score >= 0 && sel.Score <= 1) {
					t.Errorf("%s: score %v outside [0, 1]", sel.Agent, sel.Score)
				}
			}
			first, err := json.Marshal(p)
			if err != nil {
				t.Fatal(err)
			}
			for range 5 {
				again, err := s.rules.Plan(&troupe.Request{Criteria: s.crit}, s.reg)
				if err != nil {
					t.Fatal(err)
				}
				if b, _ := json.Marshal(again); !bytes.Equal(b, first) {
					t.Fatalf("plans differ:\n%s\n%s", first, b)
				}
			}
		})
	}
	if planned < 1000 {
		t.Errorf("only %d of 2000 scenarios planned: the generator tests little", planned)
	}
}
