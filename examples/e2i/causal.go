package e2i

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/troupehq/troupe"
)

// minSegment is the fewest weeks on either side of a change point.
const minSegment = 4

// logGap returns, week by week, ln(target) − ln(mean of controls) for brand's kpi summed over
// deciles [lo, hi]: the series a difference-in-differences compares before and after. A
// multiplicative change common to every region (growth, seasonality) cancels out of it.
func (ds *Dataset) logGap(brand, target, kpi string, controls []string, lo, hi int) []float64 {
	y := ds.Series(brand, target, kpi, lo, hi)
	cs := make([][]float64, len(controls))
	for i, c := range controls {
		cs[i] = ds.Series(brand, c, kpi, lo, hi)
	}
	gap := make([]float64, Weeks)
	for w := range Weeks {
		vals := make([]float64, len(cs))
		missing := false
		for i := range cs {
			vals[i] = cs[i][w]
			missing = missing || math.IsNaN(vals[i])
		}
		if missing {
			// A control without that week would leave the mean to the others, whose level
			// differs: the gap would move for no change in the target. The week is left out.
			gap[w] = math.NaN()
			continue
		}
		gap[w] = math.Log(y[w]) - math.Log(mean(vals))
	}
	return gap
}

// changePoint returns the first week after the change that best splits xs (index 0 is week 1)
// in two: the split maximizing the before/after mean difference, weighted by √(n₁n₂/n) so that
// a short segment does not win on noise alone (the likelihood-ratio statistic of a mean
// shift). Each side keeps at least minSegment weeks.
func changePoint(xs []float64) int {
	best, bestWeek := -1.0, 0
	n := float64(len(xs))
	for k := minSegment; k <= len(xs)-minSegment; k++ {
		a, b := finite(xs[:k]), finite(xs[k:])
		if len(a) == 0 || len(b) == 0 {
			continue
		}
		stat := math.Abs(mean(b)-mean(a)) * math.Sqrt(float64(len(a)*len(b))/n)
		if stat > best {
			best, bestWeek = stat, k+1
		}
	}
	return bestWeek
}

// did is a difference-in-differences estimate of a change in one region against the others.
type did struct {
	brand, region, kpi string
	controls           []string
	changeWeek         int
	cmp                comparison // of the log gap, post (b) against pre (a)
	rel, lo, hi        float64    // relative effect and its 95% CI, as fractions
	perWeek, total     float64    // units gained (negative: lost) a week and over the post weeks
	pretrendT          float64    // t statistic of the pre-period slope of the log gap
	confidence         float64
}

// others returns the regions but region.
func (ds *Dataset) others(region string) []string {
	return slices.DeleteFunc(ds.Regions(), func(r string) bool { return r == region })
}

// diffInDiff estimates the change in region from changeWeek (0: find it) against the control
// regions, for brand's kpi over deciles [lo, hi].
//
// The effect is the mean log gap after the change minus before, compared by Welch's t test;
// exp(effect) − 1 is the relative change. The confidence is the probability that the effect has
// the sign estimated, scaled down by how much a pre-period trend in the gap threatens the
// parallel-trends assumption (1 − R² of the pre-period gap on week, from that slope's t).
func (ds *Dataset) diffInDiff(brand, region, kpi string, controls []string, changeWeek, lo, hi int) did {
	gap := ds.logGap(brand, region, kpi, controls, lo, hi)
	if changeWeek < 1+minSegment || changeWeek > Weeks-minSegment+1 {
		changeWeek = changePoint(gap)
	}
	pre, post := gap[:changeWeek-1], gap[changeWeek-1:]
	e := did{brand: brand, region: region, kpi: kpi, controls: controls, changeWeek: changeWeek, cmp: welch(pre, post)}
	e.rel = math.Expm1(e.cmp.Diff)
	lo95, hi95 := e.cmp.ci(0.95)
	e.lo, e.hi = math.Expm1(lo95), math.Expm1(hi95)

	y := ds.Series(brand, region, kpi, lo, hi)
	var n int
	for _, v := range finite(y[changeWeek-1:]) {
		e.total += v - v/(1+e.rel) // actual minus the counterfactual without the change
		n++
	}
	e.perWeek = e.total / float64(n)

	X := make([][]float64, 0, len(pre))
	var ys []float64
	for i, g := range pre {
		if !math.IsNaN(g) {
			X = append(X, []float64{1, float64(i + 1)})
			ys = append(ys, g)
		}
	}
	factor := 1.0
	if f, err := leastSquares(X, ys); err == nil {
		e.pretrendT = f.Beta[1] / f.SE[1]
		df := float64(f.N - f.K)
		factor = df / (e.pretrendT*e.pretrendT + df)
	}
	e.confidence = e.cmp.signConfidence() * factor
	return e
}

func (e *did) record() map[string]any {
	return map[string]any{
		"brand":           e.brand,
		"region":          e.region,
		"kpi":             e.kpi,
		"control_regions": slices.Clone(e.controls),
		"change_week":     e.changeWeek,
		"pre_weeks":       e.cmp.NA,
		"post_weeks":      e.cmp.NB,
		"relative_effect": round(e.rel, 4),
		"ci_low":          round(e.lo, 4),
		"ci_high":         round(e.hi, 4),
		"log_effect":      round(e.cmp.Diff, 5),
		"std_error":       round(e.cmp.SE, 5),
		"t_stat":          round(e.cmp.T, 2),
		"df":              round(e.cmp.DF, 1),
		"p_value":         round(e.cmp.pValue(), 6),
		"units_per_week":  round(e.perWeek, 1),
		"units_total":     round(e.total, 0),
		"pretrend_t":      round(e.pretrendT, 2),
		"method":          "difference-in-differences of log weekly totals against the control regions",
	}
}

// screened estimates the change in region against the other regions, leaving out of the
// controls any region that changed itself around the same week: one whose own placebo
// estimate, against the remaining controls, is significant (|t| ≥ 2) and larger than the
// target's. Kept in, a control's own drop reads as the target's rise. The estimate is made
// again without it, at the week first found. It returns the estimate and the placebo t of each
// region left out.
func (ds *Dataset) screened(brand, region, kpi string) (did, map[string]float64) {
	controls := ds.others(region)
	e := ds.diffInDiff(brand, region, kpi, controls, 0, 1, Deciles)
	var out map[string]float64
	for len(controls) > 1 {
		worst, worstT := "", 0.0
		for i, t := range ds.placebos(brand, kpi, controls, e.changeWeek) {
			if math.Abs(t) >= 2 && math.Abs(t) > math.Abs(e.cmp.T) && math.Abs(t) > math.Abs(worstT) {
				worst, worstT = controls[i], t
			}
		}
		if worst == "" {
			break
		}
		if out == nil {
			out = map[string]float64{}
		}
		out[worst] = worstT
		controls = slices.DeleteFunc(controls, func(r string) bool { return r == worst })
		// At the same week: the change the data shows there, which the question is about.
		e = ds.diffInDiff(brand, region, kpi, controls, e.changeWeek, 1, Deciles)
	}
	return e, out
}

// placebos are the t statistics of each control region treated as if it had changed in week,
// against the other controls, in the order of controls.
func (ds *Dataset) placebos(brand, kpi string, controls []string, week int) []float64 {
	ts := make([]float64, len(controls))
	for i, c := range controls {
		donors := slices.DeleteFunc(slices.Clone(controls), func(r string) bool { return r == c })
		ts[i] = ds.diffInDiff(brand, c, kpi, donors, week, 1, Deciles).cmp.T
	}
	return ts
}

// causalImpact estimates the effect behind a change in a KPI: a difference-in-differences of
// the region asked about against the other regions (those that did not change themselves, see
// screened), around the change point found in the data; an estimate whose 95% interval holds
// zero is reported as no significant change. With no region asked about it estimates every
// region and reports the one whose change is most significant. Its confidence is the
// estimate's (see diffInDiff) times the rule-of-succession share of placebo regions whose |t|
// it exceeds.
func (ds *Dataset) causalImpact(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
	s, err := ds.scope(d)
	if err != nil {
		return nil, err
	}
	candidates := s.regions
	if len(candidates) == 0 {
		candidates = ds.Regions()
	} else if len(candidates) > 1 {
		s.warnings = append(s.warnings, fmt.Sprintf("estimated %s only; one region per dispatch", candidates[0]))
		candidates = candidates[:1]
	}
	var best did
	var leftOut map[string]float64
	scanned := map[string]any{}
	for i, r := range candidates {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		e, out := ds.screened(s.brand, r, s.kpi)
		scanned[r] = round(e.rel, 4)
		if i == 0 || math.Abs(e.cmp.T) > math.Abs(best.cmp.T) {
			best, leftOut = e, out
		}
	}
	// Placebos in space: each control region, treated as if it had changed in the same week,
	// against the other controls. With four regions no estimate can rank above more than three
	// placebos, which caps the confidence at 4/5 by the rule of succession: a handful of
	// regions cannot make an observational estimate certain, however large its t.
	placebos := map[string]any{}
	beaten := 0
	for i, t := range ds.placebos(s.brand, s.kpi, best.controls, best.changeWeek) {
		placebos[best.controls[i]] = round(t, 2)
		if math.Abs(t) < math.Abs(best.cmp.T) {
			beaten++
		}
	}
	rank := laplace(beaten, len(best.controls))
	rec := best.record()
	rec["placebo_t"] = placebos
	rec["placebos_beaten"] = beaten
	dir, net := "fell", "lost"
	if best.rel > 0 {
		dir, net = "rose", "gained"
	}
	var summary string
	if best.lo <= 0 && best.hi >= 0 {
		summary = fmt.Sprintf("%s %s in the %s shows no significant change from week %d against the %s (%s%s, 95%% CI %s to %s, t = %.1f)",
			s.brand, s.kpi, best.region, best.changeWeek, list(best.controls), sign(best.rel), pct(math.Abs(best.rel)), pct(best.lo), pct(best.hi), best.cmp.T)
	} else {
		summary = fmt.Sprintf("%s %s in the %s %s %s from week %d against the %s (95%% CI %s to %s, t = %.1f, beyond %d of %d placebos): %s %s a week %s, %s in all",
			s.brand, s.kpi, best.region, dir, pct(math.Abs(best.rel)), best.changeWeek, list(best.controls),
			pct(best.lo), pct(best.hi), best.cmp.T, beaten, len(best.controls), units(math.Abs(best.perWeek)), s.kpi, net,
			units(math.Abs(best.total)))
	}
	if len(leftOut) > 0 {
		names := slices.SortedFunc(maps.Keys(leftOut), func(a, b string) int { return cmp.Compare(math.Abs(leftOut[b]), math.Abs(leftOut[a])) })
		left := map[string]any{}
		var parts []string
		for _, n := range names {
			left[n] = round(leftOut[n], 2)
			parts = append(parts, fmt.Sprintf("the %s (placebo t = %.1f)", n, leftOut[n]))
		}
		rec["controls_left_out"] = left
		summary += "; left out of the controls, as it changed itself: " + list(parts)
	}
	out := map[string]any{
		"brand":         s.brand,
		"region":        best.region,
		"kpi":           s.kpi,
		"causal_effect": rec,
	}
	if len(candidates) > 1 {
		out["regions_scanned"] = scanned
	}
	return completed(summary, best.confidence*rank, out, s.warnings), nil
}

// segment is a band of prescriber deciles.
type segment struct {
	name   string
	lo, hi int
}

// segments split prescribers by decile, for heterogeneous effects.
func segments() []segment { return []segment{{"low", 1, 3}, {"mid", 4, 7}, {"high", 8, 10}} }

// heterogeneousOptimizer splits the effect by prescriber segment: the same
// difference-in-differences, around the same change week, for light, medium and heavy
// prescribers, and for each decile. It says where the effect concentrates — where recovery
// effort pays most — and its confidence is the probability that the most affected segment is
// affected more than the least affected one.
func (ds *Dataset) heterogeneousOptimizer(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
	s, err := ds.scope(d)
	if err != nil {
		return nil, err
	}
	region, changeWeek := s.region(), 0
	if ce, ok := causalEffect(d, &s); ok {
		if region == "" {
			region = lookupString(ce, "region")
		}
		// The change week is the estimate's region's: another region changed (if at all) in
		// another week.
		if w, ok := lookupNumber(ce, "change_week"); ok && lookupString(ce, "region") == region {
			changeWeek = int(w)
		}
	}
	if region == "" {
		region = ds.mostChanged(s.brand, s.kpi)
	}
	if changeWeek == 0 {
		changeWeek = ds.diffInDiff(s.brand, region, s.kpi, ds.others(region), 0, 1, Deciles).changeWeek
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var rows []map[string]any
	var ests []did
	segs := segments()
	for _, sg := range segs {
		e := ds.diffInDiff(s.brand, region, s.kpi, ds.others(region), changeWeek, sg.lo, sg.hi)
		ests = append(ests, e)
		rows = append(rows, map[string]any{
			"segment":         sg.name,
			"deciles":         fmt.Sprintf("%d-%d", sg.lo, sg.hi),
			"relative_effect": round(e.rel, 4),
			"ci_low":          round(e.lo, 4),
			"ci_high":         round(e.hi, 4),
			"units_per_week":  round(e.perWeek, 1),
		})
	}
	byDecile := map[string]any{}
	for dec := 1; dec <= Deciles; dec++ {
		byDecile[fmt.Sprintf("d%02d", dec)] = round(ds.diffInDiff(s.brand, region, s.kpi, ds.others(region), changeWeek, dec, dec).rel, 4)
	}
	// The most and least affected segments: largest and smallest effect in the direction of
	// the overall change.
	sign := math.Copysign(1, ests[0].rel+ests[1].rel+ests[2].rel)
	most, least := 0, 0
	for i, e := range ests {
		if sign*e.rel > sign*ests[most].rel {
			most = i
		}
		if sign*e.rel < sign*ests[least].rel {
			least = i
		}
	}
	a, b := ests[most].cmp, ests[least].cmp
	diff := comparison{Diff: a.Diff - b.Diff, SE: math.Hypot(a.SE, b.SE)}
	diff.T = diff.Diff / diff.SE
	diff.DF = min(a.DF, b.DF)
	var change float64
	for _, e := range ests {
		change += e.perWeek
	}
	share := ests[most].perWeek / change
	seg := func(i int) string {
		return fmt.Sprintf("the %s segment (deciles %d-%d)", segs[i].name, segs[i].lo, segs[i].hi)
	}
	summary := fmt.Sprintf("In the %s, %s %s changed %s in %s against %s in %s; the %s segment carries %s of the change of %s %s a week",
		region, s.brand, s.kpi, pct(ests[most].rel), seg(most), pct(ests[least].rel), seg(least),
		segs[most].name, pct(share), units(change), s.kpi)
	out := map[string]any{
		"brand":           s.brand,
		"region":          region,
		"kpi":             s.kpi,
		"change_week":     changeWeek,
		"segments":        rows,
		"by_decile":       byDecile,
		"focus_segment":   segs[most].name,
		"focus_share":     round(share, 4),
		"heterogeneity_t": round(diff.T, 2),
	}
	return completed(summary, diff.signConfidence(), out, s.warnings), nil
}

// mostChanged returns the region whose kpi of brand changed most significantly against the
// others.
func (ds *Dataset) mostChanged(brand, kpi string) string {
	best, bestT := "", -1.0
	for _, r := range ds.regions {
		if t := math.Abs(ds.diffInDiff(brand, r, kpi, ds.others(r), 0, 1, Deciles).cmp.T); t > bestT {
			best, bestT = r, t
		}
	}
	return best
}

// sign is "+" for a rise, "−" for a fall, "" for none.
func sign(f float64) string {
	switch {
	case f > 0:
		return "+"
	case f < 0:
		return "−"
	}
	return ""
}
