package e2i

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/troupehq/troupe"
)

// DefaultBudget is what resource_optimizer allocates when the query names no budget, in
// dollars.
const DefaultBudget = 1_000_000

// rates holds, for brand's kpi over the last window weeks, each region's weekly value per 100
// target prescribers — the scale on which regions of different sizes compare.
type rates struct {
	window int
	weekly map[string][]float64 // region → per-week rates over the window
	mean   map[string]float64
}

func (ds *Dataset) rates(brand, kpi string, window int) rates {
	rt := rates{window: window, weekly: map[string][]float64{}, mean: map[string]float64{}}
	for _, r := range ds.regions {
		ys := ds.Total(brand, r, kpi)[Weeks-window:]
		w := make([]float64, len(ys))
		for i, y := range ys {
			w[i] = y / ds.prescribers[r] * 100
		}
		rt.weekly[r], rt.mean[r] = w, mean(w)
	}
	return rt
}

// best returns the region with the highest rate, leaving out except.
func (rt *rates) best(regions []string, except string) string {
	best := ""
	for _, r := range regions {
		if r != except && (best == "" || rt.mean[r] > rt.mean[best]) {
			best = r
		}
	}
	return best
}

// weeksBehind counts the weeks in which region's rate was below peer's, and the weeks compared.
func (rt *rates) weeksBehind(region, peer string) (behind, n int) {
	a, b := rt.weekly[region], rt.weekly[peer]
	for i := range a {
		if math.IsNaN(a[i]) || math.IsNaN(b[i]) {
			continue
		}
		n++
		if a[i] < b[i] {
			behind++
		}
	}
	return behind, n
}

// gapAnalyzer compares the region's KPI with its best peer region per 100 target prescribers
// over the query's period, and turns the gap into an opportunity in units: what the region
// would have written at the peer's rate. When causal_impact ran before it, it also says how
// much of the gap the estimated effect accounts for. With no region asked about it analyses
// the region furthest behind the leader. Its confidence is the rule-of-succession estimate of
// the region trailing (or leading) its peer in a week, from the weeks of the period. A
// comparative question naming two brands or two regions also gets their "comparison" (see
// Dataset.comparison); the gap figures stay those of the first brand and region.
func (ds *Dataset) gapAnalyzer(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s, err := ds.scope(d)
	if err != nil {
		return nil, err
	}
	rt := ds.rates(s.brand, s.kpi, s.window)
	region := s.region()
	ce, haveEffect := causalEffect(d, &s)
	if region == "" && haveEffect {
		region = lookupString(ce, "region")
	}
	if region == "" {
		leader := rt.best(ds.regions, "")
		for _, r := range ds.regions {
			if region == "" || rt.mean[r] < rt.mean[region] {
				region = r
			}
		}
		if region == leader {
			region = ds.regions[0]
		}
	}
	peer := rt.best(ds.regions, region)
	gapRate := rt.mean[peer] - rt.mean[region]
	perWeek := gapRate * ds.prescribers[region] / 100
	behind, n := rt.weeksBehind(region, peer)
	confidence := laplace(behind, n)
	if gapRate < 0 {
		confidence = laplace(n-behind, n)
	}
	ratesOut := map[string]any{}
	for _, r := range ds.regions {
		ratesOut[r] = round(rt.mean[r], 2)
	}
	out := map[string]any{
		"brand":                     s.brand,
		"region":                    region,
		"kpi":                       s.kpi,
		"period":                    s.period,
		"period_weeks":              s.window,
		"peer_region":               peer,
		"rate_per_100_prescribers":  round(rt.mean[region], 2),
		"peer_rate":                 round(rt.mean[peer], 2),
		"gap_pct":                   round(gapRate/rt.mean[peer], 4),
		"opportunity_per_week":      round(max(perWeek, 0), 1),
		"opportunity_total":         round(max(perWeek, 0)*float64(n), 0),
		"weeks_behind_peer":         behind,
		"weeks_compared":            n,
		"rates_per_100_prescribers": ratesOut,
	}
	var summary string
	if gapRate > 0 {
		summary = fmt.Sprintf("Over %s the %s wrote %.1f %s %s a week per 100 prescribers against %.1f in the %s, its best peer: %s behind, an opportunity of %s %s a week, %s over the period",
			s.span(), region, rt.mean[region], s.brand, s.kpi, rt.mean[peer], peer,
			pct(gapRate/rt.mean[peer]), units(perWeek), s.kpi, units(perWeek*float64(n)))
	} else {
		summary = fmt.Sprintf("Over %s the %s leads with %.1f %s %s a week per 100 prescribers, %s ahead of the %s at %.1f",
			s.span(), region, rt.mean[region], s.brand, s.kpi, pct(-gapRate/rt.mean[peer]), peer, rt.mean[peer])
	}
	if haveEffect && lookupString(ce, "region") == region {
		// The effect is a change a week since its change week: it is compared with the gap over
		// the weeks of the period since then. Before the change there was nothing for it to
		// explain, and averaging those weeks in makes the gap small and the share absurd.
		effect, okEffect := lookupNumber(ce, "units_per_week")
		week, okWeek := lookupNumber(ce, "change_week")
		from := Weeks - s.window + 1
		if okWeek && int(week) > from && int(week) <= Weeks {
			from = int(week)
		}
		since := gapSince(rt, region, peer, from) * ds.prescribers[region] / 100
		if okEffect && since > 0 {
			// Only a drop can account for a shortfall: a rise explains none of it, and a
			// negative share of a gap reads as nonsense.
			share := max(-effect/since, 0)
			out["causal_units_per_week"] = effect
			out["gap_explained_by_effect"] = round(share, 4)
			out["gap_compared_from_week"] = from
			out["gap_since_change_per_week"] = round(since, 1)
			that := "that gap"
			if from > Weeks-s.window+1 {
				that = fmt.Sprintf("the gap since week %d (%s a week)", from, units(since))
			}
			if effect > 0 {
				summary += fmt.Sprintf("; the estimated change is a rise of %s %s a week, which explains none of %s", units(effect), s.kpi, that)
			} else {
				summary += fmt.Sprintf("; the estimated drop of %s %s a week is %s of %s", units(math.Abs(effect)), s.kpi, pct(share), that)
			}
		}
	}
	if cmp := ds.comparison(d, &s); cmp != nil {
		out["comparison"] = cmp
		var parts []string
		for _, it := range cmp["items"].([]map[string]any) {
			parts = append(parts, fmt.Sprintf("%s %s a week (%.1f per 100 prescribers)", it["name"], units(it["units_per_week"].(float64)), it["rate_per_100_prescribers"]))
		}
		summary += fmt.Sprintf("; compared by %s: %s; %s leads by %s", cmp["by"], strings.Join(parts, ", "), cmp["leader"], pct(cmp["lead_pct"].(float64)))
	}
	return completed(summary, confidence, out, s.warnings), nil
}

// gapSince is the mean weekly rate gap of region behind peer (per 100 prescribers) over the
// weeks of rt's window from week from on.
func gapSince(rt rates, region, peer string, from int) float64 {
	first := Weeks - rt.window + 1
	var gaps []float64
	for w := max(from, first); w <= Weeks; w++ {
		gaps = append(gaps, rt.weekly[peer][w-first]-rt.weekly[region][w-first])
	}
	return mean(gaps) // NaN weeks are skipped; NaN when none is left
}

// resourceOptimizer splits a budget across regions in proportion to each one's gap to the
// leading region, in units of the KPI a week, rounding to whole dollars by largest remainder so
// the allocations add up to the budget. Its confidence is the allocation-weighted
// rule-of-succession estimate that each funded region really trails the leader week by week.
func (ds *Dataset) resourceOptimizer(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s, err := ds.scope(d)
	if err != nil {
		return nil, err
	}
	budget := float64(DefaultBudget)
	if b, ok := number(d.ParsedQuery["budget"]); ok && b > 0 {
		budget = b
	}
	regions := s.regions
	if len(regions) < 2 {
		regions = ds.Regions()
	}
	rt := ds.rates(s.brand, s.kpi, s.window)
	leader := rt.best(regions, "")
	gaps := make([]float64, len(regions))
	var total float64
	for i, r := range regions {
		gaps[i] = max(rt.mean[leader]-rt.mean[r], 0) * ds.prescribers[r] / 100
		total += gaps[i]
	}
	weights := slices.Clone(gaps)
	if total == 0 {
		for i := range weights {
			weights[i] = 1
		}
	}
	dollars := apportion(budget, weights)
	alloc := map[string]any{}
	gapOut := map[string]any{}
	var conf float64
	var parts []string
	for i, r := range regions {
		alloc[r] = dollars[i]
		gapOut[r] = round(gaps[i], 1)
		if r == leader || total == 0 {
			continue
		}
		behind, n := rt.weeksBehind(r, leader)
		conf += gaps[i] / total * laplace(behind, n)
		parts = append(parts, fmt.Sprintf("%s $%s (%s %s a week behind)", r, units(dollars[i]), units(gaps[i]), s.kpi))
	}
	out := map[string]any{
		"brand":              s.brand,
		"kpi":                s.kpi,
		"budget":             budget,
		"leader":             leader,
		"allocation":         alloc,
		"gap_units_per_week": gapOut,
		"period_weeks":       s.window,
	}
	if total == 0 {
		// No gap to close: an even split, and no better than a coin toss.
		summary := fmt.Sprintf("No region trails the %s in %s %s over the %s; $%s is split evenly across %s",
			leader, s.brand, s.kpi, s.period, units(budget), list(regions))
		return completed(summary, 0.5, out, s.warnings), nil
	}
	costPerUnit := budget / (total * float64(s.window))
	out["cost_per_unit_closed"] = round(costPerUnit, 2)
	summary := fmt.Sprintf("Allocate $%s against the %s %s gap to the %s: %s; the %s leads and gets $%s, about $%s per %s closed over %d weeks",
		units(budget), s.brand, s.kpi, leader, strings.Join(parts, ", "), leader, units(alloc[leader].(float64)),
		units(costPerUnit), s.kpi, s.window)
	return completed(summary, conf, out, s.warnings), nil
}

// apportion splits amount in proportion to weights into whole units that add up to amount
// (rounded), giving the leftover units to the largest remainders (Hamilton's method).
func apportion(amount float64, weights []float64) []float64 {
	var sum float64
	for _, w := range weights {
		sum += w
	}
	whole := math.Round(amount)
	out := make([]float64, len(weights))
	rem := make([]int, len(weights))
	var given float64
	for i, w := range weights {
		exact := whole * w / sum
		out[i] = math.Floor(exact)
		given += out[i]
		rem[i] = i
	}
	slices.SortStableFunc(rem, func(a, b int) int {
		ra := whole*weights[a]/sum - out[a]
		rb := whole*weights[b]/sum - out[b]
		switch {
		case ra > rb:
			return -1
		case ra < rb:
			return 1
		}
		return 0
	})
	for i := 0; given < whole; i++ {
		out[rem[i%len(rem)]]++
		given++
	}
	return out
}
