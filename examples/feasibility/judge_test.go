package feasibility_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/bundle"
	"github.com/troupehq/troupe/engine"
	"github.com/troupehq/troupe/examples/feasibility"
)

// TestJudgesVaryWithSeedsOnly: a judgement is a function of proposal and seed; near the
// threshold seeds flip the verdict, far from it they only move the numbers.
func TestJudgesVaryWithSeedsOnly(t *testing.T) {
	ds := feasibility.DefaultDataset()
	verdicts := func(id string) map[string]int {
		p, _ := ds.Case(id)
		out := map[string]int{}
		for seed := uint64(1); seed <= 20; seed++ {
			a, err := ds.Assess(p, seed, feasibility.JudgeConfig{})
			if err != nil {
				t.Fatal(err)
			}
			b, _ := ds.Assess(p, seed, feasibility.JudgeConfig{})
			if a.Probability != b.Probability || a.Rationale != b.Rationale {
				t.Fatalf("%s seed %d: two judgements differ: %+v vs %+v", id, seed, a, b)
			}
			out[a.Verdict]++
		}
		return out
	}
	if v := verdicts("crm-rollout"); v["feasible"] != 20 {
		t.Errorf("crm-rollout over 20 seeds: %v, want all feasible", v)
	}
	if v := verdicts("lab-platform"); v["infeasible"] != 20 {
		t.Errorf("lab-platform over 20 seeds: %v, want all infeasible", v)
	}
	if v := verdicts("warehouse-expansion"); v["feasible"] == 0 || v["infeasible"] == 0 {
		t.Errorf("warehouse-expansion over 20 seeds: %v, want both verdicts", v)
	}
}

// TestAssessRecoversOverrun: with no risks and a budget at exactly the category's median
// overrun, about half the draws fit — the judge reads the reference class, not a constant.
func TestAssessRecoversOverrun(t *testing.T) {
	ds := feasibility.DefaultDataset()
	var ratios []float64
	for _, p := range ds.Reference("marketing") {
		ratios = append(ratios, p.ActualCostK/p.EstimatedCostK)
	}
	med := median(ratios)
	p := feasibility.Proposal{ID: "x", Question: "x", Category: "marketing", EstimatedCostK: 100, BudgetK: 100 * med, EstimatedWeeks: 10, DeadlineWeeks: 1000}
	// One judge sees one bootstrap sample of 12 projects, so one judgement can stray far;
	// averaged over judges the share within budget is the reference class's, about a half.
	sum := 0.0
	for seed := uint64(1); seed <= 40; seed++ {
		j, err := ds.Assess(p, seed, feasibility.JudgeConfig{Draws: 1000})
		if err != nil {
			t.Fatal(err)
		}
		if j.ProbabilityTime != 1 || (j.ProbabilityBudget < 0.8 && j.Binding != "budget") {
			t.Errorf("seed %d: %+v", seed, j)
		}
		sum += j.ProbabilityBudget
	}
	if avg := sum / 40; avg < 0.35 || avg > 0.65 {
		t.Errorf("budget at the median overrun: mean probability within budget %.3f over 40 judges, want about 0.5", avg)
	}
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func TestLoadDatasetErrors(t *testing.T) {
	projects := "id,category,estimated_cost_k,actual_cost_k,estimated_weeks,actual_weeks\na,x,1,2,3,4\nb,x,1,-2,3,zz\n"
	risks := "risk,probability,cost_impact,delay_impact,description\nr,1.5,0,0,d\n"
	cases := `[{"id":"c","question":"q","category":"nope","estimated_cost_k":0,"budget_k":1,"estimated_weeks":1,"deadline_weeks":1,"risks":["ghost"]}]`
	_, err := feasibility.LoadDataset(strings.NewReader(projects), strings.NewReader(risks), strings.NewReader(cases))
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		`projects.csv:3: actual_cost_k: want a non-negative number, got "-2"`,
		`projects.csv:3: actual_weeks: want a non-negative number, got "zz"`,
		"risks.csv:2: probability 1.5 is above 1",
		`cases.json: [0].category: "nope" has fewer than 2 reference projects`,
		"cases.json: [0].estimated_cost_k: must be positive, got 0",
		`cases.json: [0].risks[0]: unknown risk "ghost"`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	_, err = feasibility.LoadDataset(strings.NewReader("id,category\n"), strings.NewReader(risks), strings.NewReader(cases))
	if err == nil || !strings.Contains(err.Error(), "projects.csv") {
		t.Errorf("bad header: %v", err)
	}
}

func FuzzLoadDataset(f *testing.F) {
	f.Add("id,category,estimated_cost_k,actual_cost_k,estimated_weeks,actual_weeks\na,x,1,2,3,4\nb,x,2,2,3,3\n", `[{"id":"c","question":"q","category":"x","estimated_cost_k":1,"budget_k":1,"estimated_weeks":1,"deadline_weeks":1,"risks":[]}]`)
	f.Fuzz(func(t *testing.T, projects, cases string) {
		risks := "risk,probability,cost_impact,delay_impact,description\nr,0.5,0.1,0.1,d\n"
		ds, err := feasibility.LoadDataset(strings.NewReader(projects), strings.NewReader(risks), strings.NewReader(cases))
		if err != nil {
			return
		}
		for _, c := range ds.Cases {
			j, err := ds.Assess(c, 1, feasibility.JudgeConfig{Draws: 50})
			if err != nil {
				t.Fatalf("a loaded case does not assess: %v", err)
			}
			if j.Probability < 0 || j.Probability > 1 {
				t.Fatalf("probability %v", j.Probability)
			}
			if _, err := json.Marshal(j); err != nil {
				t.Fatalf("judgement does not encode (NaN or Inf?): %v", err)
			}
		}
	})
}

// TestDecideInvalidAndTie: the orchestrator leaves invalid replicates out of the vote, says
// so, and reads a tie cautiously.
func TestDecideInvalidAndTie(t *testing.T) {
	ds := feasibility.DefaultDataset()
	p, _ := ds.Case("warehouse-expansion")
	data := func(seed uint64) any {
		j, _ := ds.Assess(p, seed, feasibility.JudgeConfig{})
		raw, _ := json.Marshal(j)
		var v any
		json.Unmarshal(raw, &v)
		return v
	}
	schema, err := bundle.CompileSchema(feasibility.JudgeSchema())
	if err != nil {
		t.Fatal(err)
	}
	in := []bundle.Input{
		{ID: "r1", Seed: 11, Data: data(11)}, // feasible
		{ID: "r2", Seed: 23, Data: data(23)}, // infeasible
		{ID: "r3", Seed: 47, Data: map[string]any{"verdict": "maybe"}, Errors: []string{"schema"}}, // invalid
	}
	b, _, err := bundle.Build(bundle.Meta{Task: "feasibility", KMax: 3, Epsilon: 0.2}, in, bundle.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	d, err := feasibility.Decide(p, b, 0.8)
	if err != nil {
		t.Fatal(err)
	}
	if d.Verdict != "infeasible" || d.Votes != "1 of 2 infeasible" || d.Decision != "no_go_unless_rescoped" {
		t.Errorf("tie: %+v", d)
	}
	if !strings.Contains(d.Justification, "1 judge(s) produced invalid output and were left out of the vote") {
		t.Errorf("justification: %s", d.Justification)
	}
	none := []bundle.Input{{ID: "r1", Seed: 1, Status: "failed", Errors: []string{"boom"}}, {ID: "r2", Seed: 2, Status: "failed", Errors: []string{"boom"}}}
	b, _, _ = bundle.Build(bundle.Meta{Task: "feasibility", KMax: 2}, none, bundle.Options{})
	if _, err := feasibility.Decide(p, b, 0.8); err == nil || !strings.Contains(err.Error(), "no valid replicate") {
		t.Errorf("no valid replicates: %v", err)
	}
}

// A shipped case is found by its id however the question writes it — "warehouse expansion",
// "CRM-rollout" — or by its question without the exact punctuation.
func TestProposalOfQueryText(t *testing.T) {
	ds := feasibility.DefaultDataset()
	for _, tc := range []struct{ query, want string }{
		{"Is warehouse-expansion feasible?", "warehouse-expansion"},
		{"Is the warehouse expansion feasible?", "warehouse-expansion"},
		{"Check the CRM-Rollout", "crm-rollout"},
		{"can we roll out the new CRM within 40 weeks and 400k", "crm-rollout"},
		{"Lab platform: go or no go?", "lab-platform"},
	} {
		d := troupe.NewDispatch()
		d.Query = tc.query
		p, err := ds.ProposalOf(d)
		if err != nil {
			t.Errorf("%q: %v", tc.query, err)
			continue
		}
		if want, _ := ds.Case(tc.want); p.ID != want.ID {
			t.Errorf("%q: case %q, want %q", tc.query, p.ID, tc.want)
		}
	}
	d := troupe.NewDispatch()
	d.Query = "Can we build a bridge for 2M in 80 weeks?"
	if _, err := ds.ProposalOf(d); err == nil {
		t.Error("a question naming no case found one")
	}
}

// A budget or a deadline the question states replaces the case's own, so the answer is for
// the limits asked about; each shipped case's own question states its own limits.
func TestProposalOfStatedLimits(t *testing.T) {
	ds := feasibility.DefaultDataset()
	for _, c := range ds.Cases {
		d := troupe.NewDispatch()
		d.Query = c.Question
		p, err := ds.ProposalOf(d)
		if err != nil {
			t.Fatal(err)
		}
		if p.BudgetK != c.BudgetK || p.DeadlineWeeks != c.DeadlineWeeks {
			t.Errorf("%s: its own question %q reads as %gk and %g weeks, want %gk and %g weeks", c.ID, c.Question, p.BudgetK, p.DeadlineWeeks, c.BudgetK, c.DeadlineWeeks)
		}
	}
	crm, _ := ds.Case("crm-rollout")
	for _, tc := range []struct {
		query         string
		budget, weeks float64
	}{
		{"Is crm-rollout feasible within 10k and 2 weeks?", 10, 2},
		{"CRM rollout for $250k?", 250, crm.DeadlineWeeks},
		{"crm-rollout in a 12-week window", crm.BudgetK, 12},
		{"crm-rollout: 1,500.5k", 1500.5, crm.DeadlineWeeks},
		{"crm-rollout for 10k or 20k?", crm.BudgetK, crm.DeadlineWeeks}, // which one? neither
	} {
		d := troupe.NewDispatch()
		d.Query = tc.query
		p, err := ds.ProposalOf(d)
		if err != nil {
			t.Errorf("%q: %v", tc.query, err)
			continue
		}
		if p.ID != crm.ID || p.BudgetK != tc.budget || p.DeadlineWeeks != tc.weeks {
			t.Errorf("%q: %s with %gk and %g weeks, want crm-rollout with %gk and %g weeks", tc.query, p.ID, p.BudgetK, p.DeadlineWeeks, tc.budget, tc.weeks)
		}
	}
}

// TestDecideTieIsNotAMajority: with as many judges finding the proposal feasible as not, the
// justification says they split evenly and that the tie reads as infeasible; it does not claim
// a majority the votes do not have.
func TestDecideTieIsNotAMajority(t *testing.T) {
	ds := feasibility.DefaultDataset()
	p, _ := ds.Case("warehouse-expansion")
	reg, err := feasibility.Registry(ds, feasibility.Config{K: 2}) // seeds 11 (feasible) and 23 (infeasible)
	if err != nil {
		t.Fatal(err)
	}
	eng, err := engine.New(engine.Config{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	var dec map[string]any
	for ev, err := range eng.Run(t.Context(), troupe.Request{ParsedQuery: map[string]any{"case": p.ID}}) {
		if err != nil {
			t.Fatal(err)
		}
		if r, ok := ev.Data.(*troupe.Result); ok && ev.Kind == troupe.KindDispatchCompleted && r.AgentName == feasibility.OrchestratorAgent {
			dec = r.AgentResult
		}
	}
	if dec["decision"] != "no_go_unless_rescoped" || dec["verdict"] != "infeasible" || dec["votes"] != "1 of 2 infeasible" {
		t.Fatalf("decision %v, verdict %v, votes %v", dec["decision"], dec["verdict"], dec["votes"])
	}
	j, _ := dec["justification"].(string)
	if strings.Contains(j, "majority") {
		t.Errorf("a 1–1 split is not a majority:\n%s", j)
	}
	if !strings.Contains(j, "r1 (seed 11) feasible, r2 (seed 23) infeasible — an even split, 1 of 2 each way, which reads as infeasible, with a condition") {
		t.Errorf("the justification does not say the judges tied:\n%s", j)
	}
}

// TestDecideOneValidJudge: with a single valid replicate there is no pairwise distance among
// valid judges, and the bundle's confidence of 0 means "not measurable", not "1 − mean
// pairwise distance"; the justification must not present it as a measured agreement.
func TestDecideOneValidJudge(t *testing.T) {
	ds := feasibility.DefaultDataset()
	p, _ := ds.Case("crm-rollout")
	j, err := ds.Assess(p, 47, feasibility.JudgeConfig{})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(j)
	var data any
	if err := json.Unmarshal(raw, &data); err != nil {
		t.Fatal(err)
	}
	schema, err := bundle.CompileSchema(feasibility.JudgeSchema())
	if err != nil {
		t.Fatal(err)
	}
	in := []bundle.Input{
		{ID: "r1", Seed: 11, Status: "failed", Errors: []string{"garbage"}},
		{ID: "r2", Seed: 23, Status: "failed", Errors: []string{"garbage"}},
		{ID: "r3", Seed: 47, Data: data},
	}
	b, _, err := bundle.Build(bundle.Meta{Task: "feasibility", KMax: 3, Epsilon: 0.2, Seeds: []int64{11, 23, 47}}, in, bundle.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	d, err := feasibility.Decide(p, b, 0.8)
	if err != nil {
		t.Fatal(err)
	}
	if d.Decision != "go_with_contingency" || d.Votes != "1 of 1 feasible" || d.Confidence != 0 {
		t.Errorf("decision %+v", d)
	}
	if strings.Contains(d.Justification, "(1 − mean pairwise distance)") || strings.Contains(d.Justification, "All 1 valid judges") {
		t.Errorf("the justification presents one judge's confidence as measured agreement:\n%s", d.Justification)
	}
	if !strings.Contains(d.Justification, "Only 1 judge produced valid output, so agreement cannot be measured (confidence 0)") {
		t.Errorf("the justification does not say agreement cannot be measured:\n%s", d.Justification)
	}
	// Even asked to decide at any confidence, one judge does not decide outright.
	if d, err := feasibility.Decide(p, b, 0); err != nil || d.Decision != "go_with_contingency" {
		t.Errorf("at minimum confidence 0: decision %q, %v", d.Decision, err)
	}
}
