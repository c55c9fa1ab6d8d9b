package e2i

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/troupehq/troupe"
)

// comparison computes, for a comparative question that names two or more brands or two or
// more regions, each one's KPI over the query's period: units a week, the rate per 100 target
// prescribers, its share of all the data's brands' units in the same regions, and how units
// and share moved against the equal period before (when the data holds one). Brands are
// compared over the regions asked about (all when none is); regions for the scope's brand.
// Only weeks in which every brand has data in every region compared count, so that a late
// feed of one brand does not tilt the comparison. It returns nil for any other question,
// whose answer it leaves as it was.
func (ds *Dataset) comparison(d *troupe.Dispatch, s *scope) map[string]any {
	if d.ParsedQuery["intent"] != "comparative" {
		return nil
	}
	type item struct {
		name, brand string
		regions     []string
	}
	var items []item
	regions := s.regions
	out := map[string]any{"kpi": s.kpi, "period": s.period, "period_weeks": s.window}
	switch brands := stringsOf(d.ParsedQuery["brands"]); {
	case len(brands) > 1:
		if len(regions) == 0 {
			regions = ds.regions
		}
		for _, b := range brands {
			items = append(items, item{b, b, regions})
		}
		out["by"], out["regions"] = "brand", slices.Clone(regions)
	case len(regions) > 1:
		for _, r := range regions {
			items = append(items, item{r, s.brand, []string{r}})
		}
		out["by"], out["brand"] = "region", s.brand
	default:
		return nil
	}
	// totals[brand][week-1] is brand's KPI summed over the regions compared, NaN when a region
	// has no data that week.
	totals := map[string][]float64{}
	for _, b := range ds.brands {
		for _, it := range items {
			t := make([]float64, Weeks)
			for _, r := range it.regions {
				for w, v := range ds.Total(b, r, s.kpi) {
					t[w] += v
				}
			}
			totals[b+"\x00"+strings.Join(it.regions, ",")] = t
		}
	}
	common := func(from, to int) []int { // weeks from..to in which every brand has data everywhere
		var ws []int
		for w := max(from, 1); w <= to; w++ {
			ok := true
			for _, t := range totals {
				ok = ok && !math.IsNaN(t[w-1])
			}
			if ok {
				ws = append(ws, w)
			}
		}
		return ws
	}
	cur := common(Weeks-s.window+1, Weeks)
	var prev []int
	if 2*s.window <= Weeks {
		prev = common(Weeks-2*s.window+1, Weeks-s.window)
		out["previous_weeks"] = len(prev)
	}
	out["weeks_compared"] = len(cur)
	perWeek := func(brand string, regions []string, weeks []int) float64 {
		t := totals[brand+"\x00"+strings.Join(regions, ",")]
		var sum float64
		for _, w := range weeks {
			sum += t[w-1]
		}
		return sum / float64(len(weeks))
	}
	share := func(it item, weeks []int) float64 {
		var all float64
		for _, b := range ds.brands {
			all += perWeek(b, it.regions, weeks)
		}
		return perWeek(it.brand, it.regions, weeks) / all
	}
	var rows []map[string]any
	leader, runnerUp := -1, -1
	rates := make([]float64, len(items))
	for i, it := range items {
		var prescribers float64
		for _, r := range it.regions {
			prescribers += ds.prescribers[r]
		}
		u := perWeek(it.brand, it.regions, cur)
		rates[i] = u / prescribers * 100
		row := map[string]any{
			"name":                     it.name,
			"units_per_week":           round(u, 1),
			"rate_per_100_prescribers": round(rates[i], 2),
			"share":                    round(share(it, cur), 4),
		}
		if len(prev) > 0 {
			p := perWeek(it.brand, it.regions, prev)
			row["change_pct"] = round((u-p)/p, 4)
			row["share_change"] = round(share(it, cur)-share(it, prev), 4)
		}
		rows = append(rows, row)
		switch {
		case leader < 0 || rates[i] > rates[leader]:
			leader, runnerUp = i, leader
		case runnerUp < 0 || rates[i] > rates[runnerUp]:
			runnerUp = i
		}
	}
	out["items"] = rows
	out["leader"] = items[leader].name
	out["lead_pct"] = round((rates[leader]-rates[runnerUp])/rates[runnerUp], 4)
	return out
}

// objects reads a list of objects as a result holds it: []map[string]any in process, []any
// once it has been through JSON.
func objects(v any) []map[string]any {
	if ms, ok := v.([]map[string]any); ok {
		return ms
	}
	raw, _ := v.([]any)
	var out []map[string]any
	for _, r := range raw {
		if m, ok := r.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// explainComparison writes gap_analyzer's comparison: each brand's (or region's) units a week,
// rate per 100 prescribers, share and change on the period before, and which leads by how much.
func explainComparison(c *composer) string {
	const cmp = "comparison"
	raw, _ := lookup(c.result, cmp, "items")
	items := objects(raw)
	if len(items) < 2 {
		c.missing = true
		return ""
	}
	kpi, by := c.s(cmp, "kpi"), c.s(cmp, "by")
	weeks, prev := c.n(cmp, "weeks_compared"), 0.0
	if _, ok := lookup(c.result, cmp, "previous_weeks"); ok {
		prev = c.n(cmp, "previous_weeks")
	}
	var names, parts []string
	outer := c.result
	for _, it := range items {
		c.result = it
		name := c.s("name")
		names = append(names, name)
		if by == "region" {
			name = "the " + name
		}
		p := fmt.Sprintf("%s %s a week (%.1f per 100 prescribers, %s of all brands' %s",
			name, units(c.n("units_per_week")), c.n("rate_per_100_prescribers"), pct(c.n("share")), kpi)
		if prev > 0 {
			p += fmt.Sprintf("; %s on the %.0f weeks before, share %+.1f points", signed(c.n("change_pct")), prev, 100*c.n("share_change"))
		}
		parts = append(parts, p+")")
		c.result = outer
	}
	where := ""
	switch by {
	case "brand":
		regions, _ := lookup(c.result, cmp, "regions")
		where = " in the " + list(stringsOf(regions))
	case "region":
		names = []string{c.s(cmp, "brand")}
	}
	leader := c.s(cmp, "leader")
	if by == "region" {
		leader = "The " + leader
	}
	span := fmt.Sprintf("the last %.0f weeks", weeks)
	if asked := c.n(cmp, "period_weeks"); weeks < asked {
		span = fmt.Sprintf("the %.0f of the last %.0f weeks with every brand's data", weeks, asked)
	}
	return fmt.Sprintf("Comparing %s %s%s over %s: %s. %s leads by %s per prescriber.",
		list(names), kpi, where, span, strings.Join(parts, "; "), leader, pct(c.n(cmp, "lead_pct")))
}
