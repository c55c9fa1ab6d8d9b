package feasibility

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// JudgeConfig tunes a judge. The zero value is the shipped judge.
type JudgeConfig struct {
	// Draws is the number of Monte Carlo draws per judgement; 0 means 400.
	Draws int
	// Threshold is the probability of meeting both budget and deadline at or above which the
	// verdict is "feasible"; 0 means 0.5.
	Threshold float64
}

func (c JudgeConfig) withDefaults() JudgeConfig {
	if c.Draws <= 0 {
		c.Draws = 400
	}
	if c.Threshold <= 0 || c.Threshold >= 1 {
		c.Threshold = 0.5
	}
	return c
}

// Judgement is one judge's verdict on a proposal: the judge's agent_result.
type Judgement struct {
	Verdict           string   `json:"verdict"`            // feasible | infeasible
	Probability       float64  `json:"probability"`        // of meeting budget and deadline
	ProbabilityBudget float64  `json:"probability_budget"` // of meeting the budget
	ProbabilityTime   float64  `json:"probability_deadline"`
	ExpectedCostK     float64  `json:"expected_cost_k"`
	P80CostK          float64  `json:"p80_cost_k"`
	ExpectedWeeks     float64  `json:"expected_weeks"`
	P80Weeks          float64  `json:"p80_weeks"`
	Binding           string   `json:"binding_constraint"` // the likelier limit to break, when one is broken in more than 20% of draws; else none
	RiskDrivers       []string `json:"risk_drivers"`       // the proposal's risks that struck most in failing draws
	Rationale         string   `json:"rationale"`
}

// Assess judges p the way a reference-class forecaster would, with randomness from seed only:
//
//  1. bootstrap: resample the category's past projects with replacement — a judge who has
//     seen a different sample of history;
//  2. Monte Carlo: each draw takes a resampled project's cost and schedule overrun ratios
//     (actual / estimated), applies them to p's estimates, then strikes each of p's risks
//     with its probability, adding its cost and delay impact;
//  3. the probability is the share of draws within budget and deadline; the verdict is
//     feasible when it reaches the threshold.
//
// The same proposal, seed and config always give the same judgement. Judges with different
// seeds differ by the bootstrap's sampling error and the draws' Monte Carlo error: little
// when a proposal is far from its limits, enough to flip the verdict near the threshold.
func (ds *Dataset) Assess(p Proposal, seed uint64, cfg JudgeConfig) (Judgement, error) {
	if probs := ds.Check(p, "proposal"); len(probs) > 0 {
		return Judgement{}, fmt.Errorf("feasibility: %v", probs)
	}
	cfg = cfg.withDefaults()
	ref := ds.Reference(p.Category)
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	sample := make([]Project, len(ref))
	for i := range sample {
		sample[i] = ref[rng.IntN(len(ref))]
	}
	costs := make([]float64, cfg.Draws)
	weeks := make([]float64, cfg.Draws)
	inBudget, inTime, both := 0, 0, 0
	struck := map[string]int{} // risk → strikes in draws that failed
	for i := range cfg.Draws {
		ref := sample[rng.IntN(len(sample))]
		c := p.EstimatedCostK * ref.ActualCostK / ref.EstimatedCostK
		w := p.EstimatedWeeks * ref.ActualWeeks / ref.EstimatedWeeks
		var hits []string
		for _, name := range p.Risks {
			r := ds.Risks[name]
			if rng.Float64() < r.Probability {
				c *= 1 + r.CostImpact
				w *= 1 + r.DelayImpact
				hits = append(hits, name)
			}
		}
		costs[i], weeks[i] = c, w
		okB, okT := c <= p.BudgetK, w <= p.DeadlineWeeks
		if okB {
			inBudget++
		}
		if okT {
			inTime++
		}
		if okB && okT {
			both++
		} else {
			for _, h := range hits {
				struck[h]++
			}
		}
	}
	n := float64(cfg.Draws)
	j := Judgement{
		Probability:       round3(float64(both) / n),
		ProbabilityBudget: round3(float64(inBudget) / n),
		ProbabilityTime:   round3(float64(inTime) / n),
		ExpectedCostK:     math.Round(mean(costs)),
		P80CostK:          math.Round(quantile(costs, 0.8)),
		ExpectedWeeks:     round1(mean(weeks)),
		P80Weeks:          round1(quantile(weeks, 0.8)),
		Verdict:           "infeasible",
		Binding:           "none",
		RiskDrivers:       []string{},
	}
	if j.Probability >= cfg.Threshold {
		j.Verdict = "feasible"
	}
	if min(j.ProbabilityBudget, j.ProbabilityTime) < 0.8 {
		j.Binding = "budget"
		if j.ProbabilityTime < j.ProbabilityBudget {
			j.Binding = "deadline"
		}
	}
	for _, name := range p.Risks {
		if struck[name] > 0 && float64(struck[name]) >= 0.1*float64(cfg.Draws-both) {
			j.RiskDrivers = append(j.RiskDrivers, name)
		}
	}
	j.Rationale = fmt.Sprintf("%d resampled %s projects, %d draws: %.0f%% meet both the %.0fk budget and the %.0f-week deadline (budget %.0f%%, deadline %.0f%%); expected cost %gk (p80 %gk), expected %g weeks (p80 %g).",
		len(sample), p.Category, cfg.Draws, 100*j.Probability, p.BudgetK, p.DeadlineWeeks, 100*j.ProbabilityBudget, 100*j.ProbabilityTime, j.ExpectedCostK, j.P80CostK, j.ExpectedWeeks, j.P80Weeks)
	return j, nil
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// quantile is the q-quantile by linear interpolation between order statistics.
func quantile(xs []float64, q float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	pos := q * float64(len(s)-1)
	lo := int(pos)
	if lo+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[lo] + (pos-float64(lo))*(s[lo+1]-s[lo])
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }
func round1(x float64) float64 { return math.Round(x*10) / 10 }
