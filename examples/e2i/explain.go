package e2i

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/troupehq/troupe"
)

// composer writes an explanation from upstream results, reading every number through n, which
// records it as evidence: the explanation says nothing its evidence does not hold.
type composer struct {
	agent    string         // whose result is being read
	result   map[string]any // that result
	missing  bool           // a number a sentence needs is absent
	evidence []any
}

// n reads the number at path of the current result and records it.
func (c *composer) n(path ...string) float64 {
	v, ok := lookupNumber(c.result, path...)
	if !ok {
		c.missing = true
		return math.NaN()
	}
	c.evidence = append(c.evidence, map[string]any{"agent": c.agent, "field": strings.Join(path, "."), "value": v})
	return v
}

// s reads the string at path of the current result.
func (c *composer) s(path ...string) string {
	s := lookupString(c.result, path...)
	if s == "" {
		c.missing = true
	}
	return s
}

// renderer returns the function that turns agent's result into sentences, or nil. A renderer
// that lacks a number it needs is dropped in favour of the agent's own summary.
func renderer(agent string) func(c *composer) string {
	switch agent {
	case "causal_impact":
		return explainCausal
	case "gap_analyzer":
		return explainGap
	case "heterogeneous_optimizer":
		return explainSegments
	case "drift_monitor":
		return explainDrift
	case "health_score":
		return explainHealth
	case "experiment_designer":
		return explainExperiment
	case "prediction_synthesizer":
		return explainForecast
	case "resource_optimizer":
		return explainAllocation
	case "model_trainer":
		return explainTraining
	case "model_deployer":
		return explainDeployment
	}
	return nil
}

func explainCausal(c *composer) string {
	const ce = "causal_effect"
	rel, lo, hi := c.n(ce, "relative_effect"), c.n(ce, "ci_low"), c.n(ce, "ci_high")
	week, perWeek, total, post := c.n(ce, "change_week"), c.n(ce, "units_per_week"), c.n(ce, "units_total"), c.n(ce, "post_weeks")
	t := c.n(ce, "t_stat")
	controls, _ := lookup(c.result, ce, "control_regions")
	dir, net, a, b := "fell", "lost", -hi, -lo
	if rel > 0 {
		dir, net, a, b = "rose", "gained", lo, hi
	}
	kpi := c.s(ce, "kpi")
	out := fmt.Sprintf("%s %s in the %s %s %s from week %.0f against the %s (95%% CI %s to %s; difference-in-differences, t = %.1f): %s %s a week %s, %s over the %.0f weeks since.",
		c.s(ce, "brand"), kpi, c.s(ce, "region"), dir, pct(math.Abs(rel)), week, list(stringsOf(controls)),
		pct(a), pct(b), t, units(math.Abs(perWeek)), kpi, net, units(math.Abs(total)), post)
	if lo <= 0 && hi >= 0 {
		// A change point is found in any series: an interval that includes no change must not
		// read as a finding.
		out += " The change is not significant at 95%: its interval includes no change."
	}
	return out
}

func explainGap(c *composer) string {
	rate, peerRate, gap := c.n("rate_per_100_prescribers"), c.n("peer_rate"), c.n("gap_pct")
	weeks := c.n("period_weeks")
	region, peer, kpi := c.s("region"), c.s("peer_region"), c.s("kpi")
	if gap <= 0 {
		return fmt.Sprintf("Over the last %.0f weeks the %s led with %.1f %s a week per 100 prescribers, %s ahead of the %s at %.1f.",
			weeks, region, rate, kpi, pct(-gap), peer, peerRate)
	}
	perWeek, total := c.n("opportunity_per_week"), c.n("opportunity_total")
	out := fmt.Sprintf("Over the last %.0f weeks the %s wrote %.1f %s a week per 100 prescribers against %.1f in the %s, its best peer: %s behind, an opportunity of %s %s (%s a week).",
		weeks, region, rate, kpi, peerRate, peer, pct(gap), units(total), kpi, units(perWeek))
	if _, ok := c.result["gap_explained_by_effect"]; ok {
		share, effect := c.n("gap_explained_by_effect"), c.n("causal_units_per_week")
		// The share is of the gap the analyzer compared it with: the window's, or, when the
		// change came later than the window's start, the gap since the change.
		which := "that gap"
		if from, ok := lookupNumber(c.result, "gap_compared_from_week"); ok && from > Weeks-weeks+1 {
			from = c.n("gap_compared_from_week") // cited: counted as evidence
			which = fmt.Sprintf("the gap since week %.0f (%s a week)", from, units(c.n("gap_since_change_per_week")))
		}
		switch {
		case effect > 0:
			out += fmt.Sprintf(" The estimated change is a rise of %s a week, so it explains none of %s.", units(effect), which)
		case share >= 1:
			out += fmt.Sprintf(" The estimated effect, %s a week, is %s of %s: without it the %s would be level with or ahead of the %s.",
				units(math.Abs(effect)), pct(share), which, region, peer)
		default:
			out += fmt.Sprintf(" The estimated effect, %s a week, accounts for %s of %s.", units(math.Abs(effect)), pct(share), which)
		}
	}
	return out
}

func explainSegments(c *composer) string {
	segs, _ := c.result["segments"].([]map[string]any)
	if segs == nil {
		if raw, ok := c.result["segments"].([]any); ok {
			for _, r := range raw {
				if m, ok := r.(map[string]any); ok {
					segs = append(segs, m)
				}
			}
		}
	}
	if len(segs) == 0 {
		c.missing = true
		return ""
	}
	var parts []string
	outer := c.result
	for _, sg := range segs {
		c.result = sg
		parts = append(parts, fmt.Sprintf("%s in the %s segment (deciles %s)", signed(c.n("relative_effect")), c.s("segment"), c.s("deciles")))
		c.result = outer
	}
	return fmt.Sprintf("By prescriber segment the change was %s; the %s segment carries %s of it.",
		list(parts), c.s("focus_segment"), pct(c.n("focus_share")))
}

func explainDrift(c *composer) string {
	window := c.n("window_weeks")
	regions, _ := c.result["regions"].(map[string]any)
	if regions == nil {
		c.missing = true
		return ""
	}
	describe := func(names []string) string {
		var parts []string
		for _, r := range names {
			parts = append(parts, fmt.Sprintf("%s (%s, p %s)", r, signed(c.n("regions", r, "shift")), pValue(c.n("regions", r, "p_value"))))
		}
		return list(parts)
	}
	drifted, stable := stringsOf(c.result["drifted_regions"]), stringsOf(c.result["stable_regions"])
	out := fmt.Sprintf("Between the first and last %.0f weeks %s %s", window, c.s("brand"), c.s("kpi"))
	switch {
	case len(drifted) > 0 && len(stable) > 0:
		out += fmt.Sprintf(" shifted in the %s but not in the %s.", describe(drifted), describe(stable))
	case len(drifted) > 0:
		out += fmt.Sprintf(" shifted in the %s.", describe(drifted))
	default:
		out += fmt.Sprintf(" held steady in the %s.", describe(stable))
	}
	if psi := c.n("max_psi"); psi >= 0.1 {
		out += fmt.Sprintf(" The prescriber-decile mix moved too (PSI up to %.2f).", psi)
	}
	return out
}

func explainHealth(c *composer) string {
	out := fmt.Sprintf("The data scores %.1f/100 for health (grade %s): %s complete, %s fresh, %s consistent.",
		c.n("health_score"), c.s("grade"), pct(c.n("completeness")), pct(c.n("freshness")), pct(c.n("consistency")))
	if issues := stringsOf(c.result["issues"]); len(issues) > 0 {
		out += " Gaps: " + strings.Join(issues, "; ") + "."
	}
	return out
}

func explainExperiment(c *composer) string {
	return fmt.Sprintf("Detecting a %s change (d = %.2f) at α = %g with %.0f%% power takes %.0f %ss per arm: a pilot of %s.",
		pct(c.n("relative_change")), c.n("effect_size_d"), c.n("alpha"), 100*c.n("power"), c.n("n_per_arm"), c.s("unit"),
		plural(int(c.n("weeks_needed")), "week"))
}

func explainForecast(c *composer) string {
	fc, _ := c.result["forecast"].([]map[string]any)
	if fc == nil {
		if raw, ok := c.result["forecast"].([]any); ok {
			for _, r := range raw {
				if m, ok := r.(map[string]any); ok {
					fc = append(fc, m)
				}
			}
		}
	}
	if len(fc) == 0 {
		c.missing = true
		return ""
	}
	outer := c.result
	var parts []string
	var first, last float64
	for i, p := range fc {
		c.result = p
		v := c.n("value")
		parts = append(parts, units(v))
		if i == 0 {
			first = c.n("week")
		}
		last = c.n("week")
		c.result = outer
	}
	kpi := c.s("kpi")
	where := "all regions"
	if r := lookupString(c.result, "region"); r != "" {
		where = "the " + r
	}
	return fmt.Sprintf("A linear trend of %+.1f %s a week since week %.0f projects %s %s in %s at %s for weeks %.0f-%.0f.",
		c.n("trend_per_week"), kpi, c.n("fit_from_week"), c.s("brand"), kpi, where, list(parts), first, last)
}

func explainAllocation(c *composer) string {
	alloc, _ := c.result["allocation"].(map[string]any)
	if alloc == nil {
		c.missing = true
		return ""
	}
	var parts []string
	for _, r := range sortedByValue(alloc) {
		if v := c.n("allocation", r); v > 0 {
			parts = append(parts, fmt.Sprintf("$%s to the %s", units(v), r))
		}
	}
	return fmt.Sprintf("Splitting $%s by the size of each region's gap to the %s gives %s.", units(c.n("budget")), c.s("leader"), list(parts))
}

func explainTraining(c *composer) string {
	const tm = "trained_model"
	return fmt.Sprintf("A %s model fits %s %s with R² %.3f and a holdout error of %s.",
		c.s(tm, "model"), c.s(tm, "brand"), c.s(tm, "kpi"), c.n(tm, "r2"), pct(c.n(tm, "holdout_mape")))
}

func explainDeployment(c *composer) string {
	return fmt.Sprintf("The %s model was %s as %s (R² %.3f against a minimum of %.2f).",
		c.s("model"), c.s("status"), c.s("deployment_id"), c.n("r2"), c.n("gate", "min_r2"))
}

// sortedByValue returns m's keys by descending numeric value, then name.
func sortedByValue(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		va, _ := number(m[a])
		vb, _ := number(m[b])
		switch {
		case va > vb:
			return -1
		case va < vb:
			return 1
		}
		return strings.Compare(a, b)
	})
	return keys
}

// explainer composes the run's answer from its upstream results only: for each agent it knows,
// sentences built from that agent's numbers; for any other, the agent's own summary. A
// comparison of brands or regions (gap_analyzer's, for a comparative question) opens the
// answer. When the
// question names no brand, the answer opens by saying which brand the agents analysed. It writes
// the answer as agent_result "explanation" (which troupe's aggregation takes as the run's
// synthesis), the numbers it used as "evidence" and the confidence of each source. Its own
// confidence is the lowest of theirs: an explanation is no surer than what it explains.
func explainer(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(d.UpstreamResults) == 0 {
		return nil, &troupe.AgentError{Code: troupe.CodeInvalidInput, Message: "no upstream results to explain",
			FallbackAction: "plan explainer after the agents whose results it should explain"}
	}
	c := &composer{}
	var sentences, sources []string
	lead := "" // the comparison a comparative question asks for
	basis := map[string]any{}
	conf := 1.0
	// The agents of a parallel stage arrive in the order they finished; read them in seed
	// 000's agent order (tier by tier) so that the same question always gets the same answer.
	rank := func(agent string) int {
		if i := slices.Index(Agents(), agent); i >= 0 {
			return i
		}
		return len(Agents())
	}
	upstream := slices.Clone(d.UpstreamResults)
	slices.SortStableFunc(upstream, func(a, b troupe.UpstreamResult) int { return rank(a.Agent) - rank(b.Agent) })
	for _, u := range upstream {
		if u.Agent == "explainer" || u.Agent == "feedback_learner" || u.Agent == "observability_connector" {
			continue // about the run, not about the question
		}
		sources = append(sources, u.Agent)
		if u.Confidence != nil {
			basis[u.Agent] = *u.Confidence
			conf = min(conf, *u.Confidence)
		}
		if _, ok := u.Result["comparison"]; ok && lead == "" {
			// The comparison answers the question asked, so it opens the answer.
			c.agent, c.result, c.missing = u.Agent, u.Result, false
			mark := len(c.evidence)
			if lead = explainComparison(c); c.missing {
				lead, c.evidence = "", c.evidence[:mark]
			}
		}
		text := ""
		if render := renderer(u.Agent); render != nil {
			c.agent, c.result, c.missing = u.Agent, u.Result, false
			mark := len(c.evidence)
			text = render(c)
			if c.missing {
				text, c.evidence = "", c.evidence[:mark]
			}
		}
		if text == "" && u.Summary != "" {
			text = strings.TrimSpace(u.Summary)
			if !strings.HasSuffix(text, ".") {
				text += "."
			}
		}
		if text != "" {
			sentences = append(sentences, text)
		}
	}
	if len(sentences) == 0 {
		return nil, &troupe.AgentError{Code: troupe.CodeInvalidInput, Message: "upstream results hold nothing to explain"}
	}
	switch brands := stringsOf(d.ParsedQuery["brands"]); {
	case len(brands) == 0:
		// The agents analysed a brand the question did not name (or named as no gazetteer
		// and no capital marks it); the answer must say which.
		if b := brandOf(upstream); b != "" {
			sentences = slices.Insert(sentences, 0, fmt.Sprintf("The question names none of the brands in the data%s, so %s is analysed where a brand is needed.", mentioned(d.ParsedQuery), b))
		}
	case len(brands) > 1 && lead != "" && comparesBrands(upstream, brands):
		// The comparison covers every brand named; the other agents analyse one brand, and
		// the answer must not read as though they had compared them too.
		if b := brandOf(upstream); b != "" {
			sentences = slices.Insert(sentences, 0, fmt.Sprintf("The rest of this answer is about %s only.", b))
		}
	case len(brands) > 1:
		// The agents analyse one brand; an answer that reads as a comparison of the brands
		// the question names would claim what nobody computed.
		if b := brandOf(upstream); b != "" {
			sentences = slices.Insert(sentences, 0, fmt.Sprintf("The question names %s; the agents analyse one brand at a time, so this answer is about %s only.", list(brands), b))
		}
	}
	if lead != "" {
		sentences = slices.Insert(sentences, 0, lead)
	}
	explanation := strings.Join(sentences, " ")
	out := map[string]any{
		"explanation":      explanation,
		"sources":          sources,
		"evidence":         c.evidence,
		"confidence_basis": basis,
	}
	summary := fmt.Sprintf("Explained %d upstream results from %d of their numbers", len(sources), len(c.evidence))
	return completed(summary, conf, out, nil), nil
}

// comparesBrands says whether an upstream comparison is by brand and covers every one of brands.
func comparesBrands(upstream []troupe.UpstreamResult, brands []string) bool {
	for _, u := range upstream {
		if lookupString(u.Result, "comparison", "by") != "brand" {
			continue
		}
		v, _ := lookup(u.Result, "comparison", "items")
		var names []string
		for _, it := range objects(v) {
			names = append(names, lookupString(it, "name"))
		}
		return !slices.ContainsFunc(brands, func(b string) bool { return !slices.Contains(names, b) })
	}
	return false
}

// brandOf returns the brand the first upstream result that analysed one reports, or "".
func brandOf(upstream []troupe.UpstreamResult) string {
	for _, u := range upstream {
		for _, path := range [][]string{{"brand"}, {"causal_effect", "brand"}, {"trained_model", "brand"}} {
			if b := lookupString(u.Result, path...); b != "" {
				return b
			}
		}
	}
	return ""
}

// minSignalsForOptimization is seed 000's min_signals_for_optimization: the hub triggers an
// optimization cycle once this many training signals are collected.
const minSignalsForOptimization = 100

// feedbackLearner turns the upstream results of seed 000's Sender agents into DSPy training
// signals — one per result, its quality the result's confidence — and reports whether an
// optimization cycle is due. Recipients' results (health_score, resource_optimizer, explainer)
// are no signals. Its confidence is the signals' mean quality.
func feedbackLearner(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var signals []troupe.TrainingSignal
	var sum float64
	lowest, lowestAgent := math.Inf(1), ""
	var weak []string
	threshold := troupe.DefaultConfidenceThreshold
	if t, ok := number(d.ParsedQuery["confidence_threshold"]); ok {
		threshold = t
	}
	for _, u := range d.UpstreamResults {
		if u.Confidence == nil || !slices.Contains(senders(), u.Agent) {
			continue // only Senders' results are training signals (seed 000's DSPy hub)
		}
		q := *u.Confidence
		signals = append(signals, troupe.TrainingSignal{
			Signature: u.Agent,
			Input:     map[string]any{"query": d.Query, "parsed_query": d.ParsedQuery},
			Output:    map[string]any{"analysis_summary": u.Summary},
			Quality:   troupe.Ptr(q),
			Metadata:  map[string]any{"dispatch_id": u.DispatchID},
		})
		sum += q
		if q < lowest {
			lowest, lowestAgent = q, u.Agent
		}
		if q < threshold {
			weak = append(weak, u.Agent)
		}
	}
	n := len(signals)
	out := map[string]any{
		"signals_collected":       n,
		"below_threshold":         nonNil(weak),
		"optimization_due":        n >= minSignalsForOptimization,
		"signals_until_optimized": max(minSignalsForOptimization-n, 0),
	}
	var summary string
	var meanQ float64
	if n == 0 {
		summary = "No upstream result reported a confidence: no training signals collected"
	} else {
		meanQ = sum / float64(n)
		out["mean_quality"] = round(meanQ, 4)
		out["min_quality"] = round(lowest, 4)
		summary = fmt.Sprintf("Collected %d training signals (mean quality %.2f, lowest %.2f from %s); %d below the %.2f threshold; %d more before an optimization cycle",
			n, meanQ, lowest, lowestAgent, len(weak), threshold, max(minSignalsForOptimization-n, 0))
	}
	r := completed(summary, meanQ, out, nil)
	r.TrainingSignals = signals
	if n > 0 {
		r.SignalQuality = troupe.Ptr(round(meanQ, 4))
	}
	return r, nil
}
