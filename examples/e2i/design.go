package e2i

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/troupehq/troupe"
)

// Defaults of experiment_designer when the parsed query sets none.
const (
	DefaultAlpha  = 0.05 // two-sided significance level
	DefaultPower  = 0.8
	defaultChange = 0.05 // the relative change to detect when nothing else says which
	horizon       = 4    // weeks prediction_synthesizer forecasts
)

// SampleSize returns the observations per arm a two-sample comparison of means needs to detect
// a standardized effect d (Cohen's d) with a two-sided test at level alpha and the given power:
// normal is the textbook normal approximation ⌈2(z₁₋α/₂ + z_power)²/d²⌉ and t adds Guenther's
// correction z₁₋α/₂²/4 for estimating the variance, which matches the exact t-test result.
// For d = 0.5, α = 0.05 and 80% power that is 63 and 64.
func SampleSize(d, alpha, power float64) (normal, t int) {
	za, zb := normQuantile(1-alpha/2), normQuantile(power)
	n := 2 * (za + zb) * (za + zb) / (d * d)
	return int(math.Ceil(n - 1e-9)), int(math.Ceil(n + za*za/4 - 1e-9))
}

// noiseCV is the week-to-week noise of brand's kpi in one region × decile cell, relative to the
// cell's level: the pooled coefficient of variation of the residuals of a linear trend fitted
// to each cell. m is how many residuals it pools.
func (ds *Dataset) noiseCV(brand, kpi string) (cv float64, m int) {
	var ss float64
	for _, r := range ds.regions {
		for dec := 1; dec <= Deciles; dec++ {
			ys := ds.Series(brand, r, kpi, dec, dec)
			var X [][]float64
			var y []float64
			for w, v := range ys {
				if !math.IsNaN(v) {
					X = append(X, []float64{1, float64(w + 1)})
					y = append(y, v)
				}
			}
			f, err := leastSquares(X, y)
			if err != nil {
				continue
			}
			level := mean(y)
			for i := range y {
				e := (y[i] - f.predict(X[i])) / level
				ss += e * e
			}
			m += len(y) - 2
		}
	}
	return math.Sqrt(ss / float64(m)), m
}

// experimentDesigner sizes an experiment (a regional pilot randomized over region × decile
// cells, measured weekly) to detect a change in the KPI: the effect_size of the parsed query
// when given, else its change_pct, else the size of causal_impact's estimated effect, else a
// 5% change — standardized by the cells' week-to-week noise. Its confidence is
// 1 − 1/√(2(m−1)), one minus the relative standard error of the noise estimate from m
// residuals.
func (ds *Dataset) experimentDesigner(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s, err := ds.scope(d)
	if err != nil {
		return nil, err
	}
	pq := d.ParsedQuery
	alpha, power := DefaultAlpha, DefaultPower
	if a, ok := number(pq["alpha"]); ok && a > 0 && a < 1 {
		alpha = a
	}
	if p, ok := number(pq["power"]); ok && p > 0 && p < 1 {
		power = p
	}
	cv, m := ds.noiseCV(s.brand, s.kpi)
	var effect float64 // Cohen's d
	var change float64 // the relative change it stands for
	var basis string
	if es, ok := number(pq["effect_size"]); ok && es > 0 {
		effect, change, basis = es, es*cv, "the effect size asked for"
	} else {
		change, basis = defaultChange, "a default change"
		if c, ok := number(pq["change_pct"]); ok && c != 0 {
			change, basis = math.Abs(c)/100, "the change asked for"
		} else if ce, ok := causalEffect(d, &s); ok {
			if rel, ok := lookupNumber(ce, "relative_effect"); ok && rel != 0 {
				change, basis = math.Abs(rel), "the effect causal_impact estimated"
			}
		}
		effect = change / cv
	}
	nNormal, n := SampleSize(effect, alpha, power)
	cellsPerArm := len(ds.regions) * Deciles / 2
	weeks := int(math.Ceil(float64(n) / float64(cellsPerArm)))
	out := map[string]any{
		"brand":            s.brand,
		"kpi":              s.kpi,
		"effect_size_d":    round(effect, 4),
		"relative_change":  round(change, 4),
		"effect_basis":     basis,
		"alpha":            alpha,
		"power":            power,
		"noise_cv":         round(cv, 4),
		"n_per_arm":        n,
		"n_per_arm_normal": nNormal,
		"total_n":          2 * n,
		"unit":             "region-decile cell-week",
		"cells_per_arm":    cellsPerArm,
		"weeks_needed":     weeks,
	}
	summary := fmt.Sprintf("To detect a %s change in %s %s (%s; d = %.2f against %.1f%% cell noise) at α = %g with %.0f%% power: %d cell-weeks per arm (%d by the normal approximation), %s with %d cells per arm",
		pct(change), s.brand, s.kpi, basis, effect, 100*cv, alpha, 100*power, n, nNormal, plural(weeks, "week"), cellsPerArm)
	return completed(summary, 1-1/math.Sqrt(2*float64(m-1)), out, s.warnings), nil
}

// predictionSynthesizer forecasts the KPI for the next horizon weeks with a linear trend fitted
// on the weeks since the change causal_impact found (when it ran for the same series) or else
// on the query's period, with 95% prediction intervals. Its confidence is one minus the
// relative half-width of the last interval.
func (ds *Dataset) predictionSynthesizer(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s, err := ds.scope(d)
	if err != nil {
		return nil, err
	}
	region := s.region()
	start := Weeks - max(s.window, 6) + 1
	basis := s.period
	if ce, ok := causalEffect(d, &s); ok {
		if region == "" {
			region = lookupString(ce, "region")
		}
		if w, ok := lookupNumber(ce, "change_week"); ok && lookupString(ce, "region") == region &&
			int(w) <= Weeks-minSegment+1 {
			start, basis = int(w), fmt.Sprintf("from the week-%d change causal_impact found", int(w))
		}
	}
	var y []float64
	where := "the " + region
	if region == "" {
		where = "all regions"
		y = make([]float64, Weeks)
		for _, r := range ds.regions {
			for i, v := range ds.Total(s.brand, r, s.kpi) {
				y[i] += v
			}
		}
	} else {
		y = ds.Total(s.brand, region, s.kpi)
	}
	// A week without data (a late feed: all regions sum to NaN when one is missing) is left
	// out of the fit, and the last week reported is the last one with data.
	var X [][]float64
	var ys []float64
	last := 0
	for w := start; w <= Weeks; w++ {
		if v := y[w-1]; !math.IsNaN(v) {
			X = append(X, []float64{1, float64(w)})
			ys = append(ys, v)
			last = w
		}
	}
	f, err := leastSquares(X, ys)
	if err != nil {
		return nil, &troupe.AgentError{Code: troupe.CodeInvalidInput, Message: "cannot fit a trend: " + err.Error()}
	}
	tq := tQuantile(0.975, float64(f.N-f.K))
	var forecast []map[string]any
	var points []string
	var lastHalf, lastValue float64
	for h := 1; h <= horizon; h++ {
		x := []float64{1, float64(Weeks + h)}
		v, half := f.predict(x), tq*f.predictionSE(x)
		forecast = append(forecast, map[string]any{
			"week": Weeks + h, "value": round(v, 1), "low": round(v-half, 1), "high": round(v+half, 1),
		})
		points = append(points, units(v))
		lastHalf, lastValue = half, v
	}
	out := map[string]any{
		"brand":           s.brand,
		"kpi":             s.kpi,
		"fit_from_week":   start,
		"trend_per_week":  round(f.Beta[1], 2),
		"fit_r2":          round(f.R2, 4),
		"forecast":        forecast,
		"interval_level":  0.95,
		"forecast_basis":  basis,
		"horizon_weeks":   horizon,
		"last_week":       last,
		"last_week_value": round(y[last-1], 1),
	}
	// "region" is the bare name every agent writes, so that the run's aggregation, which
	// compares fields of the same name across agents, sees agreement; a forecast of all
	// regions names none.
	if region != "" {
		out["region"] = region
	}
	summary := fmt.Sprintf("%s %s in %s is forecast at %s for weeks %d-%d (95%% interval ±%s at week %d), a trend of %+.1f a week fitted on weeks %d-%d (%s)",
		s.brand, s.kpi, where, strings.Join(points, ", "), Weeks+1, Weeks+horizon, pct(lastHalf/lastValue), Weeks+horizon,
		f.Beta[1], start, last, basis)
	return completed(summary, 1-lastHalf/lastValue, out, s.warnings), nil
}
