package e2i

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/troupehq/troupe"
)

// driftWindow is the number of weeks drift_monitor compares at each end of the data.
const driftWindow = 8

// psi is the population stability index of distribution b against a (shares summing to 1):
// Σ (b − a)·ln(b / a). Below 0.1 is stable, 0.1–0.25 a moderate shift, above 0.25 a major one.
func psi(a, b []float64) float64 {
	var s float64
	for i := range a {
		if a[i] > 0 && b[i] > 0 {
			s += (b[i] - a[i]) * math.Log(b[i]/a[i])
		}
	}
	return s
}

// decileMix returns the share of kpi each decile wrote over weeks [from, to].
func (ds *Dataset) decileMix(brand, region, kpi string, from, to int) []float64 {
	mix := make([]float64, Deciles)
	var total float64
	for d := 1; d <= Deciles; d++ {
		for w := from; w <= to; w++ {
			if r := ds.cell(brand, region, w, d); r != nil {
				mix[d-1] += r.value(kpi)
			}
		}
		total += mix[d-1]
	}
	for i := range mix {
		mix[i] /= total
	}
	return mix
}

// driftMonitor compares the first and last driftWindow weeks of the KPI in each region asked
// about (all when none is): a Welch test of the mean shift of the weekly totals and the
// population stability index of the prescriber-decile mix. A region drifts when the shift is
// significant at 5% or the PSI reaches 0.1. Its confidence is the mean, over regions, of the
// probability that the shift has the direction estimated.
func (ds *Dataset) driftMonitor(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
	s, err := ds.scope(d)
	if err != nil {
		return nil, err
	}
	regions := s.regions
	if len(regions) == 0 {
		regions = ds.Regions()
	}
	late := Weeks - driftWindow + 1
	perRegion := map[string]any{}
	var drifted, stable []string
	var conf, maxPSI float64
	var parts []string
	for _, r := range regions {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		y := ds.Total(s.brand, r, s.kpi)
		c := welch(y[:driftWindow], y[late-1:])
		shift := c.Diff / mean(y[:driftWindow])
		p := psi(ds.decileMix(s.brand, r, s.kpi, 1, driftWindow), ds.decileMix(s.brand, r, s.kpi, late, Weeks))
		isDrift := c.pValue() < 0.05 || p >= 0.1
		perRegion[r] = map[string]any{
			"shift":   round(shift, 4),
			"t_stat":  round(c.T, 2),
			"p_value": round(c.pValue(), 6),
			"psi":     round(p, 5),
			"drifted": isDrift,
		}
		if isDrift {
			drifted = append(drifted, r)
		} else {
			stable = append(stable, r)
		}
		conf += c.signConfidence() / float64(len(regions))
		maxPSI = max(maxPSI, p)
		parts = append(parts, fmt.Sprintf("%s %s (p %s)", r, signed(shift), pValue(c.pValue())))
	}
	summary := fmt.Sprintf("%s %s from weeks 1-%d to %d-%d: %s; %d of %d regions drifted; decile mix PSI at most %.3f",
		s.brand, s.kpi, driftWindow, late, Weeks, strings.Join(parts, ", "), len(drifted), len(regions), maxPSI)
	out := map[string]any{
		"brand":           s.brand,
		"kpi":             s.kpi,
		"window_weeks":    driftWindow,
		"regions":         perRegion,
		"drifted_regions": nonNil(drifted),
		"stable_regions":  nonNil(stable),
		"max_psi":         round(maxPSI, 5),
	}
	return completed(summary, conf, out, s.warnings), nil
}

// healthScore scores the data feeds behind the query (brands and regions asked about, all when
// none is), from the data itself: completeness (rows present of those expected), freshness (a
// feed loses a quarter of its credit for each week its latest data lags the newest week) and
// consistency (rows where NBRx ≤ NRx ≤ TRx). The score is 100 × (0.5·completeness +
// 0.3·freshness + 0.2·consistency); its confidence is the completeness — the share of the data
// the score could look at.
func (ds *Dataset) healthScore(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s, err := ds.scope(d)
	if err != nil {
		return nil, err
	}
	brands := stringsOf(d.ParsedQuery["brands"])
	brands = slices.DeleteFunc(slices.Clone(brands), func(b string) bool { return ds.brandIndex(b) < 0 })
	if len(brands) == 0 {
		brands = ds.Brands()
	}
	regions := s.regions
	if len(regions) == 0 {
		regions = ds.Regions()
	}
	var present, expected, consistent, feeds int
	var fresh float64
	var issues []string
	for _, b := range brands {
		for _, r := range regions {
			feeds++
			latest, n := 0, 0
			for w := 1; w <= Weeks; w++ {
				for dec := 1; dec <= Deciles; dec++ {
					expected++
					row := ds.cell(b, r, w, dec)
					if row == nil {
						continue
					}
					present++
					n++
					latest = max(latest, w)
					if row.NBRx <= row.NRx && row.NRx <= row.TRx {
						consistent++
					}
				}
			}
			lag := Weeks - latest
			fresh += max(0, 1-float64(lag)/4)
			if missing := Weeks*Deciles - n; missing > 0 {
				what := fmt.Sprintf("%s/%s: %d rows missing", b, r, missing)
				if lag > 0 {
					what += fmt.Sprintf(", latest week %d (%d behind)", latest, lag)
				}
				issues = append(issues, what)
			}
		}
	}
	completeness := float64(present) / float64(expected)
	freshness := fresh / float64(feeds)
	consistency := float64(consistent) / float64(max(present, 1))
	score := 100 * (0.5*completeness + 0.3*freshness + 0.2*consistency)
	grade := "A"
	switch {
	case score < 70:
		grade = "D"
	case score < 85:
		grade = "C"
	case score < 95:
		grade = "B"
	}
	out := map[string]any{
		"health_score":   round(score, 1),
		"grade":          grade,
		"completeness":   round(completeness, 4),
		"freshness":      round(freshness, 4),
		"consistency":    round(consistency, 4),
		"feeds_checked":  feeds,
		"rows_present":   present,
		"rows_expected":  expected,
		"issues":         nonNil(issues),
		"brands_checked": brands,
	}
	summary := fmt.Sprintf("Data health %.1f/100 (grade %s) over %d feeds of %s: %s complete, %s fresh, %s consistent; issues: %s",
		score, grade, feeds, list(brands), pct(completeness), pct(freshness), pct(consistency), orNone(issues))
	return completed(summary, completeness, out, nil), nil
}

// observabilityConnector counts what the run has produced so far and the records behind it —
// upstream results, with and without confidence and summary, and dataset rows by brand — and
// emits the counts as an agent_progress event for whoever watches the run. Its confidence is
// the share of upstream results whose telemetry is complete (1 when there are none).
func (ds *Dataset) observabilityConnector(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	byAgent := map[string]any{}
	withConf, withSummary, full := 0, 0, 0
	var confSum float64
	for _, u := range d.UpstreamResults {
		n, _ := byAgent[u.Agent].(int)
		byAgent[u.Agent] = n + 1
		if u.Confidence != nil {
			withConf++
			confSum += *u.Confidence
		}
		if u.Summary != "" {
			withSummary++
		}
		if u.Confidence != nil && u.Summary != "" && len(u.Result) > 0 {
			full++
		}
	}
	byBrand := map[string]any{}
	for _, b := range ds.brands {
		n := 0
		for _, r := range ds.rows {
			if r.Brand == b {
				n++
			}
		}
		byBrand[b] = n
	}
	counts := map[string]any{
		"upstream_results":   len(d.UpstreamResults),
		"with_confidence":    withConf,
		"with_summary":       withSummary,
		"results_by_agent":   byAgent,
		"records":            len(ds.rows),
		"records_expected":   ds.ExpectedRows(),
		"records_missing":    ds.ExpectedRows() - len(ds.rows),
		"records_by_brand":   byBrand,
		"dispatch_id":        d.DispatchID,
		"collect_signals_on": d.CollectSignals,
	}
	d.Progress("records_counted", counts)
	conf := 1.0
	if n := len(d.UpstreamResults); n > 0 {
		conf = float64(full) / float64(n)
	}
	summary := fmt.Sprintf("%d upstream results (%d with confidence, %d with a summary); %s of %s records present, %d missing",
		len(d.UpstreamResults), withConf, withSummary, units(float64(len(ds.rows))), units(float64(ds.ExpectedRows())), ds.ExpectedRows()-len(ds.rows))
	if withConf > 0 {
		counts["mean_confidence"] = round(confSum/float64(withConf), 4)
	}
	return completed(summary, conf, counts, nil), nil
}

// signed formats a fraction as a percentage with its sign: +11.2%, -2.1%.
func signed(f float64) string {
	if f >= 0 {
		return "+" + pct(f)
	}
	return pct(f)
}

// pValue formats a p-value for people: "< 0.001" or "0.214".
func pValue(p float64) string {
	if p < 0.001 {
		return "< 0.001"
	}
	return fmt.Sprintf("%.3f", p)
}

func orNone(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, "; ")
}

func nonNil(xs []string) []string {
	if xs == nil {
		return []string{}
	}
	return xs
}
