package plan

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/troupehq/troupe"
)

// Select is seed 000's select_agents: it scores every candidate agent for the criteria and
// splits them into those selected and those skipped, each sorted by score, highest first, then
// by rule order. Every Selection carries the reasons behind its score; a skipped one also says
// why it was skipped. The package documentation gives the scores and the rule order.
//
// It fails with ErrNoRule when the criteria's main or a secondary intent has no rule (a main
// intent without a rule is allowed when preferred agents are given) and with ErrNoSelection
// when nothing is selected.
func (r *Rules) Select(c *troupe.SelectionCriteria, available troupe.Catalog) (selected, skipped []troupe.Selection, err error) {
	cands, err := r.selectAgents(c, available)
	if err != nil {
		return nil, nil, err
	}
	for _, cd := range cands {
		if cd.selected {
			selected = append(selected, cd.Selection)
		} else {
			skipped = append(skipped, cd.Selection)
		}
	}
	return byScore(selected), byScore(skipped), nil
}

// byScore sorts by score, highest first, keeping rule order among equal scores.
func byScore(s []troupe.Selection) []troupe.Selection {
	slices.SortStableFunc(s, func(a, b troupe.Selection) int { return cmp.Compare(b.Score, a.Score) })
	return s
}

// candidate is one agent considered for a plan, in rule order.
type candidate struct {
	troupe.Selection
	always   bool // main-intent primary or preferred: selected whatever the threshold
	eligible bool // in the catalog and not excluded
	selected bool
}

// selectAgents scores the candidates and returns them in rule order.
func (r *Rules) selectAgents(c *troupe.SelectionCriteria, available troupe.Catalog) ([]*candidate, error) {
	if c == nil {
		return nil, fmt.Errorf("plan: no selection criteria")
	}
	if available == nil {
		return nil, fmt.Errorf("plan: no agent catalog")
	}
	if err := validateCriteria(c); err != nil {
		return nil, err
	}
	intent := c.IntentType
	main := r.Rule(intent)
	if main == nil && len(c.PreferredAgents) == 0 {
		return nil, fmt.Errorf("%w for intent %q", ErrNoRule, intent)
	}

	var cands []*candidate
	byName := map[string]*candidate{}
	add := func(name string, score float64, always bool, reason string) {
		cd := byName[name]
		if cd == nil {
			cd = &candidate{Selection: troupe.Selection{Agent: name}}
			byName[name] = cd
			cands = append(cands, cd)
		}
		cd.Score = max(cd.Score, score)
		cd.always = cd.always || always
		if !slices.Contains(cd.Reasons, reason) {
			cd.Reasons = append(cd.Reasons, reason)
		}
	}

	if main != nil {
		for _, a := range main.Primary {
			add(a, ScorePrimary, true, "primary agent for intent "+intent)
		}
	}
	for _, sec := range c.SecondaryIntents {
		if sec == intent {
			continue
		}
		rule := r.Rule(sec)
		if rule == nil {
			return nil, fmt.Errorf("%w for secondary intent %q", ErrNoRule, sec)
		}
		for _, a := range rule.Primary {
			add(a, ScoreSecondary, false, "primary agent for secondary intent "+sec)
		}
	}
	if main != nil {
		level := c.ComplexityLevel()
		score := map[string]float64{"simple": ScoreOptionalSimple, "moderate": ScoreOptionalModerate, "complex": ScoreOptionalComplex}[level]
		for _, a := range main.Optional {
			add(a, score, false, fmt.Sprintf("optional agent for intent %s (%s query)", intent, level))
		}
	}
	for _, kpi := range c.Entities[EntityKPIs] {
		for _, a := range r.KPIMap[kpi] {
			add(a, ScoreKPI, false, "KPI "+kpi+" routes to it")
		}
	}
	for _, f := range []struct {
		key string
		on  bool
	}{
		{FlagRequiresML, c.RequiresML},
		{FlagRequiresCausalInference, c.RequiresCausalInference},
		{FlagRequiresExperimentation, c.RequiresExperimentation},
	} {
		if f.on {
			for _, a := range r.FlagAgents[f.key] {
				add(a, ScoreFlag, false, f.key+" routes to it")
			}
		}
	}
	for _, a := range c.PreferredAgents {
		add(a, ScorePreferred, true, "preferred by the request")
	}

	excluded := map[string]bool{}
	for _, a := range c.ExcludedAgents {
		excluded[a] = true
	}
	synth := map[string]bool{}
	for _, a := range r.Synthesizers {
		synth[a] = true
	}
	threshold := c.Threshold()
	// Synthesizers count only non-synthesizers, so the outcome does not depend on the order
	// synthesizers are looked at.
	others := 0
	for _, cd := range cands {
		cd.eligible = !excluded[cd.Agent] && available.Has(cd.Agent)
		if cd.eligible && !synth[cd.Agent] && (cd.always || cd.Score >= threshold) {
			others++
		}
	}
	for _, cd := range cands {
		if synth[cd.Agent] && others >= 2 {
			cd.Score = max(cd.Score, ScoreSynthesizer)
			cd.Reasons = append(cd.Reasons, fmt.Sprintf("synthesizes the results of %d other selected agents", others))
		}
	}

	n := 0
	for _, cd := range cands {
		switch {
		case excluded[cd.Agent]:
			cd.Reasons = append(cd.Reasons, "skipped: excluded by the request")
		case !available.Has(cd.Agent):
			cd.Reasons = append(cd.Reasons, "skipped: not in the catalog")
		case cd.always || cd.Score >= threshold:
			cd.selected = true
			n++
		default:
			cd.Reasons = append(cd.Reasons, fmt.Sprintf("skipped: below the confidence threshold %v", threshold))
		}
	}
	if n == 0 {
		return nil, fmt.Errorf("%w for intent %q: %s", ErrNoSelection, intent, skipSummary(cands))
	}
	return cands, nil
}

func skipSummary(cands []*candidate) string {
	if len(cands) == 0 {
		return "no candidates"
	}
	s := ""
	for i, cd := range cands {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%s (%s)", cd.Agent, cd.Reasons[len(cd.Reasons)-1])
	}
	return s
}
