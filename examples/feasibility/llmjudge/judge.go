package llmjudge

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/agent/llmagent"
	"github.com/troupehq/troupe/evidence"
	"github.com/troupehq/troupe/examples/feasibility"
)

// DefaultModel is the model asked for when Config.LLM.Model is empty.
const DefaultModel = "gpt-4o-mini"

// Config configures the LLM judges. The zero value asks DefaultModel at
// llmagent.DefaultBaseURL with the key in OPENAI_API_KEY, with seed 004's bundle defaults.
type Config struct {
	// LLM is the endpoint, model, key variable, temperature, prices, timeouts and HTTP client
	// of every judge (see llmagent.Config). Its Name, Seed, System, Prompt, Schema and
	// SchemaName are the judge's own and are ignored.
	LLM llmagent.Config
	// Threshold is the probability of meeting both budget and deadline at or above which the
	// verdict must be "feasible"; 0 means 0.5, as feasibility.JudgeConfig.
	Threshold float64
	// Feasibility configures the bundle and the orchestrator (K, ε, seeds, MinConfidence);
	// its Judge field is the Monte Carlo judge's and is ignored.
	Feasibility feasibility.Config
}

// Judge is an LLM feasibility judge: a troupe.Agent whose agent_result is a judgement in the
// judge schema. It is safe for concurrent use.
type Judge struct {
	ds        *feasibility.Dataset
	cfg       Config
	threshold float64
	schema    json.RawMessage // the judge schema without its x- annotations, for the model

	mu     sync.Mutex
	agents map[int64]*llmagent.Agent // one per seed: llmagent sends a configured seed
}

// New returns the LLM judge over ds (nil means feasibility.DefaultDataset()). Configuration
// problems are reported at once.
func New(ds *feasibility.Dataset, cfg Config) (*Judge, error) {
	if ds == nil {
		ds = feasibility.DefaultDataset()
	}
	if cfg.LLM.Model == "" {
		cfg.LLM.Model = DefaultModel
	}
	th := cfg.Threshold
	if th <= 0 || th >= 1 {
		th = 0.5
	}
	schema, err := withoutAnnotations(feasibility.JudgeSchema())
	if err != nil {
		return nil, fmt.Errorf("llmjudge: the judge schema: %w", err)
	}
	j := &Judge{ds: ds, cfg: cfg, threshold: th, schema: schema, agents: map[int64]*llmagent.Agent{}}
	if _, err := j.agent(1); err != nil { // validates cfg.LLM now, not at the first dispatch
		return nil, err
	}
	return j, nil
}

// Registry registers the LLM-judge system, as feasibility.Registry does the Monte Carlo one:
// the bundle agent (feasibility.BundleAgent) of K LLM judges, each replicate validated
// against feasibility.JudgeSchema, and the orchestrator after it.
func Registry(ds *feasibility.Dataset, cfg Config) (*troupe.Registry, error) {
	if ds == nil {
		ds = feasibility.DefaultDataset()
	}
	j, err := New(ds, cfg)
	if err != nil {
		return nil, err
	}
	fc := cfg.Feasibility
	judges, err := evidence.New(j, evidence.Config{
		Name: feasibility.BundleAgent, Task: "feasibility", SchemaVersion: "feasibility.v1", Model: "llm-judge:" + j.cfg.LLM.Model,
		K: fc.K, Epsilon: fc.Epsilon, Seeds: fc.Seeds, Schema: feasibility.JudgeSchema(),
	})
	if err != nil {
		return nil, fmt.Errorf("llmjudge: %w", err)
	}
	reg := troupe.NewRegistry()
	if err := reg.Add(feasibility.BundleAgent, judges, troupe.Describe("K LLM feasibility judges, replicate-and-decide, as one evidence bundle")); err != nil {
		return nil, fmt.Errorf("llmjudge: %w", err)
	}
	if err := reg.Add(feasibility.OrchestratorAgent, ds.Orchestrator(fc.MinConfidence), troupe.After(feasibility.BundleAgent),
		troupe.Describe("reads the bundle once and decides, citing disagreements and confidence")); err != nil {
		return nil, fmt.Errorf("llmjudge: %w", err)
	}
	return reg, nil
}

// agent returns the LLM agent that asks with seed, building it the first time.
func (j *Judge) agent(seed int64) (*llmagent.Agent, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if a, ok := j.agents[seed]; ok {
		return a, nil
	}
	c := j.cfg.LLM
	c.Name, c.Seed = "judge", &seed
	c.System, c.Prompt = system, "{{.Query}}"
	c.Schema, c.SchemaName = j.schema, "feasibility_judgement"
	a, err := llmagent.New(c)
	if err != nil {
		return nil, fmt.Errorf("llmjudge: %w", err)
	}
	j.agents[seed] = a
	return a, nil
}

const system = `You are a feasibility judge: one of several independent judges whose judgements of the same proposal are compared, so reason from the evidence given, not from what other judges might say.
Use reference-class forecasting: from the past projects of the proposal's category, take how far their actual cost and duration overran their estimates, apply that spread to the proposal's estimates, add the named risks' cost and delay impacts in proportion to how likely each is, and judge the probability that the project meets BOTH its budget and its deadline.
Answer with the judgement object:
- probability: of meeting both budget and deadline, in [0, 1]; probability_budget and probability_deadline: of meeting each alone;
- verdict: "feasible" when probability is at least the threshold given, else "infeasible";
- expected_cost_k and p80_cost_k (thousands), expected_weeks and p80_weeks: your expected outcome and its 80th percentile;
- binding_constraint: "budget" or "deadline", whichever is likelier to break, when either is broken with probability 0.2 or more; else "none";
- risk_drivers: the proposal's risks (by their names as given) that most drive failure; none other;
- rationale: two or three sentences citing the reference class and the numbers.`

// Brief is the judge's prompt for p: the proposal, its reference class and its risks, and the
// threshold the verdict follows.
func Brief(ds *feasibility.Dataset, p feasibility.Proposal, threshold float64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Proposal %s: %s\n", p.ID, p.Question)
	fmt.Fprintf(&b, "Category: %s. Estimate: %gk and %g weeks. Budget: %gk. Deadline: %g weeks.\n", p.Category, p.EstimatedCostK, p.EstimatedWeeks, p.BudgetK, p.DeadlineWeeks)
	ref := ds.Reference(p.Category)
	fmt.Fprintf(&b, "\nPast %s projects (%d): id, estimated cost k → actual (ratio), estimated weeks → actual (ratio)\n", p.Category, len(ref))
	for _, r := range ref {
		fmt.Fprintf(&b, "- %s: %g → %g (%.2f), %g → %g (%.2f)\n", r.ID, r.EstimatedCostK, r.ActualCostK, r.ActualCostK/r.EstimatedCostK,
			r.EstimatedWeeks, r.ActualWeeks, r.ActualWeeks/r.EstimatedWeeks)
	}
	if len(p.Risks) > 0 {
		b.WriteString("\nRisks the proposal names: name, probability, cost impact, delay impact (fractions added when it strikes)\n")
		for _, name := range p.Risks {
			r := ds.Risks[name]
			fmt.Fprintf(&b, "- %s: %g, +%g, +%g — %s\n", name, r.Probability, r.CostImpact, r.DelayImpact, r.Description)
		}
	}
	fmt.Fprintf(&b, "\nThreshold: the verdict is \"feasible\" when the probability of meeting both is at least %g.", threshold)
	return b.String()
}

// Run judges the dispatch's proposal (feasibility's ProposalOf: parsed_query "proposal" or
// "case") with one completion seeded by the replicate's seed (user_context "seed", 1 without
// one). The answer must satisfy the schema and Check; else the dispatch fails with
// INVALID_OUTPUT and the reasons, its usage still counted.
func (j *Judge) Run(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
	p, err := j.ds.ProposalOf(d)
	if err != nil {
		return nil, err
	}
	a, err := j.agent(int64(feasibility.SeedOf(d)))
	if err != nil {
		return nil, err
	}
	brief := *d // the same dispatch and runtime, asking the brief
	brief.Query = Brief(j.ds, p, j.threshold)
	res, err := a.Run(ctx, &brief)
	if err != nil {
		return res, err
	}
	if probs := Check(res.AgentResult, p, j.threshold); len(probs) > 0 {
		return res, &troupe.AgentError{Code: troupe.CodeInvalidOutput, Recoverable: true, FallbackAction: "ask the judge again",
			Message: "llmjudge: the judgement contradicts itself: " + strings.Join(probs, "; ")}
	}
	prob, _ := res.AgentResult["probability"].(float64)
	rationale, _ := res.AgentResult["rationale"].(string)
	res.Confidence, res.AnalysisSummary = troupe.Ptr(math.Abs(2*prob-1)), &rationale
	return res, nil
}

// Check returns what is wrong with a schema-valid judgement of p that the schema cannot say:
// a verdict that does not follow from the probability and the threshold, a joint probability
// above either single one, a binding constraint that is not the likelier limit to break
// (budget or deadline when either is met with probability below 0.8 — either when they are
// equal; at exactly 0.8, the likelier or none — else none), a risk
// driver the proposal does not name, and p80 figures below the expected ones.
func Check(j map[string]any, p feasibility.Proposal, threshold float64) []string {
	num := func(k string) float64 { v, _ := j[k].(float64); return v }
	var probs []string
	pr, pb, pd := num("probability"), num("probability_budget"), num("probability_deadline")
	want := "infeasible"
	if pr >= threshold {
		want = "feasible"
	}
	if v, _ := j["verdict"].(string); v != want {
		probs = append(probs, fmt.Sprintf("verdict %q with probability %g and threshold %g", v, pr, threshold))
	}
	if pr > min(pb, pd)+1e-9 {
		probs = append(probs, fmt.Sprintf("probability %g of meeting both exceeds that of meeting one (budget %g, deadline %g)", pr, pb, pd))
	}
	likelier := "budget"
	if pd < pb {
		likelier = "deadline"
	}
	binding := "none"
	if min(pb, pd) < 0.8 {
		binding = likelier
	}
	v, _ := j["binding_constraint"].(string)
	named := v == likelier || pb == pd && v == "deadline"
	// The prompt says "broken with probability 0.2 or more", the Monte Carlo judge "more than
	// 0.2": on the boundary (met with probability exactly 0.8) either reading is consistent.
	boundary := min(pb, pd) == 0.8 && (v == "none" || named)
	if v != binding && !(binding != "none" && named) && !boundary {
		probs = append(probs, fmt.Sprintf("binding_constraint %q, but budget %g and deadline %g make it %q", v, pb, pd, binding))
	}
	drivers, _ := j["risk_drivers"].([]any)
	for _, r := range drivers {
		if s, _ := r.(string); !slices.Contains(p.Risks, s) {
			probs = append(probs, fmt.Sprintf("risk driver %q is not among the proposal's risks %v", s, p.Risks))
		}
	}
	if num("p80_cost_k") < num("expected_cost_k") || num("p80_weeks") < num("expected_weeks") {
		probs = append(probs, "a p80 figure is below the expected one")
	}
	return probs
}

// withoutAnnotations removes the x- keywords (the bundle's distance annotations) from a JSON
// Schema: strict structured output on some endpoints rejects keywords it does not know.
func withoutAnnotations(raw []byte) (json.RawMessage, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	var strip func(any)
	strip = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if strings.HasPrefix(k, "x-") {
					delete(v, k)
					continue
				}
				strip(x)
			}
		case []any:
			for _, x := range v {
				strip(x)
			}
		}
	}
	strip(v)
	return json.Marshal(v)
}
