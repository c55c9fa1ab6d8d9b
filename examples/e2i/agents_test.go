package e2i_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/examples/e2i"
)

// The expectations below are computed from e2i.NewDataset().Rows() with code written for the
// tests, not with the agents' helpers: the agents have to agree with an independent reading of
// the same data.

var regions = []string{"Midwest", "Northeast", "South", "West"}

// weekly sums kpi of brand in region over deciles [lo, hi], week by week (index 0 is week 1).
// The tests only use it where the data is complete.
func weekly(rows []e2i.Row, brand, region, kpi string, lo, hi int) []float64 {
	out := make([]float64, e2i.Weeks)
	for _, r := range rows {
		if r.Brand != brand || r.Region != region || r.Decile < lo || r.Decile > hi {
			continue
		}
		v := r.NRx
		switch kpi {
		case "TRx":
			v = r.TRx
		case "NBRx":
			v = r.NBRx
		}
		out[r.Week-1] += v
	}
	return out
}

func avg(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

func sampleVar(xs []float64) float64 {
	m, s := avg(xs), 0.0
	for _, x := range xs {
		s += (x - m) * (x - m)
	}
	return s / float64(len(xs)-1)
}

// logDiD is the textbook log difference-in-differences of region against the mean of the other
// regions with the change in week change: its estimate and Welch standard error.
func logDiD(rows []e2i.Row, brand, region string, change, lo, hi int) (effect, se float64) {
	y := weekly(rows, brand, region, "NRx", lo, hi)
	var controls [][]float64
	for _, r := range regions {
		if r != region {
			controls = append(controls, weekly(rows, brand, r, "NRx", lo, hi))
		}
	}
	var pre, post []float64
	for w := range e2i.Weeks {
		c := 0.0
		for _, cs := range controls {
			c += cs[w] / float64(len(controls))
		}
		g := math.Log(y[w]) - math.Log(c)
		if w+1 < change {
			pre = append(pre, g)
		} else {
			post = append(post, g)
		}
	}
	return avg(post) - avg(pre), math.Sqrt(sampleVar(pre)/float64(len(pre)) + sampleVar(post)/float64(len(post)))
}

func newDispatch(agent string, parsed map[string]any, upstream ...troupe.UpstreamResult) *troupe.Dispatch {
	d := troupe.NewDispatch()
	d.DispatchID = troupe.NewDispatchID(1)
	d.SessionID, d.QueryID = "sess_test", "qry_test"
	d.TargetAgent, d.DispatchReason = agent, "test"
	d.Query = "test"
	d.ParsedQuery = parsed
	d.UpstreamResults = upstream
	d.DispatchedAt = time.Unix(0, 0)
	return d
}

// call runs agent on d and checks seed 000's promises about a completed result.
func call(t *testing.T, reg *troupe.Registry, agent string, d *troupe.Dispatch) *troupe.Result {
	t.Helper()
	spec, ok := reg.Spec(agent)
	if !ok {
		t.Fatalf("no agent %s", agent)
	}
	r, err := spec.Agent.Run(t.Context(), d)
	if err != nil {
		t.Fatalf("%s: %v", agent, err)
	}
	if len(r.AgentResult) == 0 {
		t.Errorf("%s: empty agent_result", agent)
	}
	if r.Summary() == "" {
		t.Errorf("%s: no analysis_summary", agent)
	}
	if r.Confidence == nil || !(*r.Confidence >= 0 && *r.Confidence <= 1) {
		t.Errorf("%s: confidence %v is not in [0, 1]", agent, r.Confidence)
	}
	return r
}

func num(t *testing.T, m map[string]any, path ...string) float64 {
	t.Helper()
	var v any = m
	for _, k := range path {
		obj, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("%s: not an object at %q", strings.Join(path, "."), k)
		}
		v = obj[k]
	}
	switch v := v.(type) {
	case float64:
		return v
	case int:
		return float64(v)
	}
	t.Fatalf("%s: %v (%T) is not a number", strings.Join(path, "."), v, v)
	return 0
}

func near(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol {
		t.Errorf("%s = %v, want %v ± %v", what, got, want, tol)
	}
}

func upstreamOf(agent string, r *troupe.Result) troupe.UpstreamResult {
	return troupe.UpstreamResult{Agent: agent, Result: r.AgentResult, Confidence: r.Confidence, Summary: r.Summary()}
}

var kisqaliParsed = map[string]any{
	"intent": "causal", "brands": []string{"Kisqali"}, "kpis": []string{"NRx"}, "regions": []string{"Midwest"}, "time_period": "recent",
}

func TestCausalImpactRecoversPlantedEffect(t *testing.T) {
	reg, rows := registry(t), e2i.NewDataset().Rows()
	r := call(t, reg, "causal_impact", newDispatch("causal_impact", kisqaliParsed))
	ce := r.AgentResult["causal_effect"].(map[string]any)

	if w := num(t, ce, "change_week"); w != e2i.PlantedWeek {
		t.Errorf("change_week = %v, want the planted week %d", w, e2i.PlantedWeek)
	}
	rel, lo, hi := num(t, ce, "relative_effect"), num(t, ce, "ci_low"), num(t, ce, "ci_high")
	near(t, "relative_effect", rel, -e2i.PlantedDrop, 0.02)
	if !(lo < -e2i.PlantedDrop && -e2i.PlantedDrop < hi) {
		t.Errorf("95%% CI [%v, %v] does not cover the planted %v", lo, hi, -e2i.PlantedDrop)
	}

	effect, se := logDiD(rows, "Kisqali", "Midwest", e2i.PlantedWeek, 1, e2i.Deciles)
	near(t, "log_effect", num(t, ce, "log_effect"), effect, 1e-5)
	near(t, "std_error", num(t, ce, "std_error"), se, 1e-5)
	near(t, "t_stat", num(t, ce, "t_stat"), effect/se, 0.01)
	near(t, "relative_effect", rel, math.Expm1(effect), 1e-4)

	// Units lost: actual minus actual / (1 + effect), over the post weeks.
	y := weekly(rows, "Kisqali", "Midwest", "NRx", 1, e2i.Deciles)
	lost := 0.0
	for _, v := range y[e2i.PlantedWeek-1:] {
		lost += v - v/math.Exp(effect)
	}
	near(t, "units_total", num(t, ce, "units_total"), lost, 2)

	if !strings.Contains(r.Summary(), fmt.Sprintf("%.1f%%", -100*rel)) {
		t.Errorf("summary %q does not state the effect", r.Summary())
	}
	if c := *r.Confidence; c > 0.8+1e-9 || c < 0.5 {
		t.Errorf("confidence %v: want at most 0.8 (three placebos) and well above a coin toss", c)
	}
	// Only the Midwest has a planted effect. Asked about another region, the agent leaves the
	// Midwest out of the controls (its own drop would read as the other's rise) and finds no
	// significant change at the Midwest's week.
	for _, other := range []string{"Northeast", "South", "West"} {
		parsed := map[string]any{"intent": "causal", "brands": []string{"Kisqali"}, "regions": []string{other}}
		r := call(t, reg, "causal_impact", newDispatch("causal_impact", parsed))
		ce := r.AgentResult["causal_effect"].(map[string]any)
		rel, lo, hi := num(t, ce, "relative_effect"), num(t, ce, "ci_low"), num(t, ce, "ci_high")
		if math.Abs(rel) > 0.03 || lo > 0 || hi < 0 {
			t.Errorf("%s: effect %v (95%% CI %v to %v); want no significant change", other, rel, lo, hi)
		}
		if left, _ := ce["controls_left_out"].(map[string]any); left["Midwest"] == nil || slices.Contains(ce["control_regions"].([]string), "Midwest") {
			t.Errorf("%s: controls %v, left out %v; want the Midwest left out", other, ce["control_regions"], ce["controls_left_out"])
		}
		if got := num(t, ce, "change_week"); got < 17 || got > 19 {
			t.Errorf("%s: change week %v, want the Midwest's, 18, give or take a week of noise", other, got)
		}
		if !strings.Contains(r.Summary(), "shows no significant change from week ") || !strings.Contains(r.Summary(), "the Midwest (placebo t = ") {
			t.Errorf("%s: summary %q", other, r.Summary())
		}
	}
}

func TestCausalImpactFindsTheRegion(t *testing.T) {
	reg := registry(t)
	r := call(t, reg, "causal_impact", newDispatch("causal_impact", map[string]any{"intent": "causal", "brands": []string{"Kisqali"}}))
	if got := r.AgentResult["region"]; got != "Midwest" {
		t.Errorf("region = %v, want Midwest, where the effect is planted", got)
	}
}

func TestGapAnalyzer(t *testing.T) {
	reg, ds := registry(t), e2i.NewDataset()
	rows := ds.Rows()
	rate := map[string]float64{}
	for _, r := range regions {
		y := weekly(rows, "Kisqali", r, "NRx", 1, e2i.Deciles)
		rate[r] = avg(y[e2i.Weeks-8:]) / ds.Prescribers(r) * 100
	}
	peer := ""
	for _, r := range regions[1:] {
		if peer == "" || rate[r] > rate[peer] {
			peer = r
		}
	}
	opportunity := (rate[peer] - rate["Midwest"]) * ds.Prescribers("Midwest") / 100

	cause := call(t, reg, "causal_impact", newDispatch("causal_impact", kisqaliParsed))
	for _, withCause := range []bool{false, true} {
		t.Run(fmt.Sprint("upstream causal_impact=", withCause), func(t *testing.T) {
			var up []troupe.UpstreamResult
			if withCause {
				up = append(up, upstreamOf("causal_impact", cause))
			}
			r := call(t, reg, "gap_analyzer", newDispatch("gap_analyzer", kisqaliParsed, up...))
			ar := r.AgentResult
			if ar["peer_region"] != peer {
				t.Errorf("peer_region = %v, want %s", ar["peer_region"], peer)
			}
			near(t, "rate", num(t, ar, "rate_per_100_prescribers"), rate["Midwest"], 0.005)
			near(t, "peer_rate", num(t, ar, "peer_rate"), rate[peer], 0.005)
			near(t, "opportunity_per_week", num(t, ar, "opportunity_per_week"), opportunity, 0.05)
			near(t, "opportunity_total", num(t, ar, "opportunity_total"), 8*opportunity, 0.5)
			share, ok := ar["gap_explained_by_effect"]
			if ok != withCause {
				t.Fatalf("gap_explained_by_effect present = %v, want %v", ok, withCause)
			}
			if withCause {
				lost := -num(t, cause.AgentResult, "causal_effect", "units_per_week")
				near(t, "gap_explained_by_effect", share.(float64), lost/opportunity, 1e-3)
			}
		})
	}
}

func TestHeterogeneousOptimizer(t *testing.T) {
	reg, rows := registry(t), e2i.NewDataset().Rows()
	r := call(t, reg, "heterogeneous_optimizer", newDispatch("heterogeneous_optimizer", kisqaliParsed))
	segs := r.AgentResult["segments"].([]map[string]any)
	// The planted drop in decile d is 6% + 1%·(d−1), weighted by volume ∝ d within a segment.
	for i, sg := range []struct{ lo, hi int }{{1, 3}, {4, 7}, {8, 10}} {
		var planted, weight float64
		for d := sg.lo; d <= sg.hi; d++ {
			planted += float64(d) * (0.06 + 0.01*float64(d-1))
			weight += float64(d)
		}
		effect, _ := logDiD(rows, "Kisqali", "Midwest", e2i.PlantedWeek, sg.lo, sg.hi)
		got := num(t, segs[i], "relative_effect")
		near(t, fmt.Sprintf("segment %d-%d effect", sg.lo, sg.hi), got, math.Expm1(effect), 1e-4)
		near(t, fmt.Sprintf("segment %d-%d effect vs planted", sg.lo, sg.hi), got, -planted/weight, 0.03)
	}
	if r.AgentResult["focus_segment"] != "high" {
		t.Errorf("focus_segment = %v, want high: heavy prescribers lose most", r.AgentResult["focus_segment"])
	}
}

func TestDriftMonitor(t *testing.T) {
	reg, rows := registry(t), e2i.NewDataset().Rows()
	r := call(t, reg, "drift_monitor", newDispatch("drift_monitor", map[string]any{"intent": "trend", "brands": []string{"Kisqali"}}))
	for _, region := range regions {
		y := weekly(rows, "Kisqali", region, "NRx", 1, e2i.Deciles)
		first, last := y[:8], y[e2i.Weeks-8:]
		shift := (avg(last) - avg(first)) / avg(first)
		near(t, region+" shift", num(t, r.AgentResult, "regions", region, "shift"), shift, 1e-4)
		tstat := (avg(last) - avg(first)) / math.Sqrt(sampleVar(first)/8+sampleVar(last)/8)
		near(t, region+" t", num(t, r.AgentResult, "regions", region, "t_stat"), tstat, 0.01)
	}
	mw := num(t, r.AgentResult, "regions", "Midwest", "shift")
	for _, region := range regions[1:] {
		if s := num(t, r.AgentResult, "regions", region, "shift"); s <= mw {
			t.Errorf("%s shift %v is not above the Midwest's %v", region, s, mw)
		}
	}
}

func TestHealthScore(t *testing.T) {
	reg, ds := registry(t), e2i.NewDataset()
	r := call(t, reg, "health_score", newDispatch("health_score", map[string]any{"intent": "monitoring", "brands": []string{"Kisqali"}}))
	if got := num(t, r.AgentResult, "health_score"); got != 100 {
		t.Errorf("Kisqali health = %v, want 100: its feeds are complete", got)
	}

	r = call(t, reg, "health_score", newDispatch("health_score", map[string]any{"intent": "monitoring"}))
	completeness := float64(len(ds.Rows())) / float64(ds.ExpectedRows())
	near(t, "completeness", num(t, r.AgentResult, "completeness"), completeness, 1e-4)
	// Twelve feeds, one a week late: it loses a quarter of its freshness.
	near(t, "freshness", num(t, r.AgentResult, "freshness"), (11+0.75)/12, 1e-4)
	near(t, "health_score", num(t, r.AgentResult, "health_score"), 100*(0.5*completeness+0.3*(11.75/12)+0.2), 0.05)
	issues := strings.Join(r.AgentResult["issues"].([]string), "\n")
	for _, want := range []string{"Fabhalta/South: 4 rows missing", "Verzenio/West: 10 rows missing, latest week 25"} {
		if !strings.Contains(issues, want) {
			t.Errorf("issues %q lack %q", issues, want)
		}
	}
}

func TestSampleSize(t *testing.T) {
	// Textbook values: the normal approximation, and the t-test (G*Power's exact figures).
	tests := []struct {
		d             float64
		normal, exact int
	}{{0.2, 393, 394}, {0.5, 63, 64}, {0.8, 25, 26}}
	for _, tt := range tests {
		normal, exact := e2i.SampleSize(tt.d, 0.05, 0.8)
		if normal != tt.normal || exact != tt.exact {
			t.Errorf("SampleSize(%v, 0.05, 0.8) = %d, %d; want %d, %d", tt.d, normal, exact, tt.normal, tt.exact)
		}
	}
}

func TestExperimentDesigner(t *testing.T) {
	reg := registry(t)
	r := call(t, reg, "experiment_designer", newDispatch("experiment_designer", map[string]any{"intent": "what_if", "effect_size": 0.5}))
	if n, normal := num(t, r.AgentResult, "n_per_arm"), num(t, r.AgentResult, "n_per_arm_normal"); n != 64 || normal != 63 {
		t.Errorf("d = 0.5: n_per_arm = %v (normal %v), want 64 (63)", n, normal)
	}
	// From causal_impact's effect: a bigger change needs fewer cells.
	cause := call(t, reg, "causal_impact", newDispatch("causal_impact", kisqaliParsed))
	r2 := call(t, reg, "experiment_designer", newDispatch("experiment_designer", kisqaliParsed, upstreamOf("causal_impact", cause)))
	near(t, "relative_change", num(t, r2.AgentResult, "relative_change"), -num(t, cause.AgentResult, "causal_effect", "relative_effect"), 1e-4)
	if num(t, r2.AgentResult, "n_per_arm") >= 64 {
		t.Errorf("a %v change needs %v per arm; want fewer than d = 0.5 does", num(t, r2.AgentResult, "relative_change"), num(t, r2.AgentResult, "n_per_arm"))
	}
}

func TestPredictionSynthesizer(t *testing.T) {
	reg, rows := registry(t), e2i.NewDataset().Rows()
	r := call(t, reg, "prediction_synthesizer", newDispatch("prediction_synthesizer", kisqaliParsed))
	// Closed-form simple regression of the Midwest on week over the last 8 weeks.
	y := weekly(rows, "Kisqali", "Midwest", "NRx", 1, e2i.Deciles)
	var xs, ys []float64
	for w := e2i.Weeks - 7; w <= e2i.Weeks; w++ {
		xs, ys = append(xs, float64(w)), append(ys, y[w-1])
	}
	mx, my := avg(xs), avg(ys)
	var sxy, sxx float64
	for i := range xs {
		sxy += (xs[i] - mx) * (ys[i] - my)
		sxx += (xs[i] - mx) * (xs[i] - mx)
	}
	slope := sxy / sxx
	near(t, "trend_per_week", num(t, r.AgentResult, "trend_per_week"), slope, 0.005)
	for i, f := range r.AgentResult["forecast"].([]map[string]any) {
		week := float64(e2i.Weeks + 1 + i)
		near(t, fmt.Sprintf("forecast week %v", week), num(t, f, "value"), my+slope*(week-mx), 0.05)
		if !(num(t, f, "low") < num(t, f, "value") && num(t, f, "value") < num(t, f, "high")) {
			t.Errorf("forecast %v: value outside its interval", f)
		}
	}
}

func TestResourceOptimizer(t *testing.T) {
	reg, ds := registry(t), e2i.NewDataset()
	rows := ds.Rows()
	parsed := e2i.ParseQuery("Allocate a $2M budget to close the Kisqali NRx gaps")
	r := call(t, reg, "resource_optimizer", newDispatch("resource_optimizer", parsed))
	alloc := r.AgentResult["allocation"].(map[string]any)
	gap := map[string]float64{}
	best, total, sum := 0.0, 0.0, 0.0
	rate := map[string]float64{}
	for _, region := range regions {
		y := weekly(rows, "Kisqali", region, "NRx", 1, e2i.Deciles)
		rate[region] = avg(y[e2i.Weeks-8:]) / ds.Prescribers(region) * 100
		best = max(best, rate[region])
	}
	for _, region := range regions {
		gap[region] = (best - rate[region]) * ds.Prescribers(region) / 100
		total += gap[region]
	}
	for _, region := range regions {
		got := alloc[region].(float64)
		sum += got
		near(t, region+" allocation", got, 2e6*gap[region]/total, 1)
	}
	if sum != 2e6 {
		t.Errorf("allocations add up to %v, want the whole $2M", sum)
	}
}

func TestModelTrainer(t *testing.T) {
	reg, rows := registry(t), e2i.NewDataset().Rows()
	r := call(t, reg, "model_trainer", newDispatch("model_trainer", map[string]any{"intent": "ml_training", "brands": []string{"Kisqali"}}))
	tm := r.AgentResult["trained_model"].(map[string]any)
	if tm["model"] != "trend_region" {
		t.Fatalf("model = %v, want trend_region without a selector upstream", tm["model"])
	}
	// A common slope and one intercept per region on a balanced panel: the within estimator.
	train := e2i.Weeks - 4
	var sxy, sxx, sse, sst, grand float64
	ys := map[string][]float64{}
	for _, region := range regions {
		ys[region] = weekly(rows, "Kisqali", region, "NRx", 1, e2i.Deciles)[:train]
		grand += avg(ys[region]) / 4
	}
	wbar := float64(train+1) / 2
	for _, region := range regions {
		m := avg(ys[region])
		for i, y := range ys[region] {
			sxy += (float64(i+1) - wbar) * (y - m)
			sxx += (float64(i+1) - wbar) * (float64(i+1) - wbar)
		}
	}
	slope := sxy / sxx
	intercept := map[string]float64{}
	for _, region := range regions {
		intercept[region] = avg(ys[region]) - slope*wbar
		for i, y := range ys[region] {
			e := y - intercept[region] - slope*float64(i+1)
			sse += e * e
			sst += (y - grand) * (y - grand)
		}
	}
	near(t, "week", num(t, tm, "coefficients", "week"), slope, 1e-3)
	near(t, "intercept", num(t, tm, "coefficients", "intercept"), intercept["Midwest"], 1e-3)
	for _, region := range regions[1:] {
		near(t, region, num(t, tm, "coefficients", "region["+region+"]"), intercept[region]-intercept["Midwest"], 1e-3)
	}
	near(t, "r2", num(t, tm, "r2"), 1-sse/sst, 1e-4)
}

func TestModelPipeline(t *testing.T) {
	reg := registry(t)
	parsed := map[string]any{"intent": "ml_training", "brands": []string{"Kisqali"}, "kpis": []string{"NRx"}}
	var up []troupe.UpstreamResult
	results := map[string]*troupe.Result{}
	for _, agent := range []string{"scope_definer", "data_preparer", "model_selector", "model_trainer", "feature_analyzer", "model_deployer"} {
		r := call(t, reg, agent, newDispatch(agent, parsed, up...))
		results[agent] = r
		up = append(up, upstreamOf(agent, r))
	}
	selected := results["model_selector"].AgentResult["selected_model"]
	if got := results["model_trainer"].AgentResult["trained_model"].(map[string]any)["model"]; got != selected {
		t.Errorf("trainer fitted %v, selector chose %v", got, selected)
	}
	cands := results["model_selector"].AgentResult["candidates"].(map[string]any)
	for name, c := range cands {
		if num(t, c.(map[string]any), "holdout_mape") < num(t, cands[selected.(string)].(map[string]any), "holdout_mape") {
			t.Errorf("%s has a lower holdout error than the selected %v", name, selected)
		}
	}
	var shares float64
	for _, v := range results["feature_analyzer"].AgentResult["importance"].(map[string]any) {
		shares += v.(float64)
	}
	near(t, "importance shares", shares, 1, 1e-3)
	if got := results["model_deployer"].AgentResult["status"]; got != "deployed" {
		t.Errorf("status = %v, want deployed for R² %v", got, results["model_deployer"].AgentResult["r2"])
	}

	// The gate: a poor model is recorded as blocked, with a warning.
	poor := troupe.UpstreamResult{Agent: "model_trainer", Result: map[string]any{"trained_model": map[string]any{
		"model": "trend_region", "brand": "Kisqali", "kpi": "NRx", "r2": 0.42, "holdout_mape": 0.03,
	}}}
	r := call(t, reg, "model_deployer", newDispatch("model_deployer", parsed, poor))
	if r.AgentResult["status"] != "blocked" || len(r.Warnings) == 0 {
		t.Errorf("R² 0.42: status %v, warnings %v; want blocked with a warning", r.AgentResult["status"], r.Warnings)
	}
}

func TestExplainerUsesOnlyUpstreamNumbers(t *testing.T) {
	reg := registry(t)
	// Numbers no dataset computation would give: the explanation must carry them.
	up := troupe.UpstreamResult{Agent: "causal_impact", Confidence: troupe.Ptr(0.61), Result: map[string]any{
		"causal_effect": map[string]any{
			"brand": "Kisqali", "region": "Midwest", "kpi": "NRx", "control_regions": []any{"West"},
			"relative_effect": -0.3333, "ci_low": -0.4444, "ci_high": -0.2222, "change_week": 7.0,
			"units_per_week": -123.0, "units_total": -2468.0, "post_weeks": 20.0, "t_stat": -5.55,
		},
	}}
	other := troupe.UpstreamResult{Agent: "someone_else", Confidence: troupe.Ptr(0.9), Summary: "A summary from elsewhere"}
	r := call(t, reg, "explainer", newDispatch("explainer", kisqaliParsed, up, other))
	text := r.AgentResult["explanation"].(string)
	for _, want := range []string{"33.3%", "22.2%", "44.4%", "week 7", "123", "2,468", "20 weeks", "-5.5", "West", "A summary from elsewhere."} {
		if !strings.Contains(text, want) {
			t.Errorf("explanation %q lacks %q", text, want)
		}
	}
	if *r.Confidence != 0.61 {
		t.Errorf("confidence = %v, want the lowest upstream, 0.61", *r.Confidence)
	}
	if n := len(r.AgentResult["evidence"].([]any)); n != 8 {
		t.Errorf("evidence holds %d numbers, want the 8 the causal sentence uses", n)
	}

	spec, _ := reg.Spec("explainer")
	_, err := spec.Agent.Run(t.Context(), newDispatch("explainer", kisqaliParsed))
	var ae *troupe.AgentError
	if !errors.As(err, &ae) || ae.Code != troupe.CodeInvalidInput {
		t.Errorf("no upstream results: error %v, want INVALID_INPUT", err)
	}
}

func TestFeedbackLearner(t *testing.T) {
	reg := registry(t)
	up := []troupe.UpstreamResult{
		{Agent: "causal_impact", Confidence: troupe.Ptr(0.8), Summary: "a", Result: map[string]any{"x": 1}},
		{Agent: "gap_analyzer", Confidence: troupe.Ptr(0.6), Summary: "b", Result: map[string]any{"x": 1}},
		{Agent: "no_confidence", Result: map[string]any{"x": 1}},
	}
	r := call(t, reg, "feedback_learner", newDispatch("feedback_learner", kisqaliParsed, up...))
	if len(r.TrainingSignals) != 2 {
		t.Fatalf("%d training signals, want one per upstream result with a confidence (2)", len(r.TrainingSignals))
	}
	near(t, "signal_quality", *r.SignalQuality, 0.7, 1e-9)
	if got := r.AgentResult["below_threshold"].([]string); !slices.Equal(got, []string{"gap_analyzer"}) {
		t.Errorf("below_threshold = %v, want [gap_analyzer]", got)
	}
}

func TestObservabilityConnector(t *testing.T) {
	reg, ds := registry(t), e2i.NewDataset()
	up := []troupe.UpstreamResult{{Agent: "causal_impact", Confidence: troupe.Ptr(0.8), Summary: "a", Result: map[string]any{"x": 1}}}
	r := call(t, reg, "observability_connector", newDispatch("observability_connector", kisqaliParsed, up...))
	if got := num(t, r.AgentResult, "records"); got != float64(len(ds.Rows())) {
		t.Errorf("records = %v, want %d", got, len(ds.Rows()))
	}
	if got := num(t, r.AgentResult, "records_missing"); got != 14 {
		t.Errorf("records_missing = %v, want 14", got)
	}
}

// Every agent, on every kind of query, returns what seed 000 requires of a completed result,
// and honours a cancelled context.
func TestEveryAgent(t *testing.T) {
	reg := registry(t)
	queries := []string{
		kisqaliQuery, trendsQuery,
		"Compare Fabhalta TRx across regions last quarter",
		"What if Verzenio NBRx grew 8% in the South?",
		"How healthy is the data?",
		"Which region has the biggest MAU gap?", // a KPI the data does not hold
	}
	for _, name := range reg.Names() {
		for _, q := range queries {
			t.Run(name+"/"+q, func(t *testing.T) {
				d := newDispatch(name, e2i.ParseQuery(q))
				if name == "explainer" {
					cause := call(t, reg, "causal_impact", newDispatch("causal_impact", d.ParsedQuery))
					d.UpstreamResults = []troupe.UpstreamResult{upstreamOf("causal_impact", cause)}
				}
				call(t, reg, name, d)
			})
		}
		t.Run(name+"/cancelled", func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			spec, _ := reg.Spec(name)
			if _, err := spec.Agent.Run(ctx, newDispatch(name, kisqaliParsed)); !errors.Is(err, context.Canceled) {
				t.Errorf("cancelled context: error %v, want context.Canceled", err)
			}
		})
	}
}

// Every agent that reads the data refuses a brand the data does not hold, alone or beside one
// it holds, as invalid input naming the brands it does hold; none answers about another brand.
func TestUnknownBrandIsInvalidInput(t *testing.T) {
	reg := registry(t)
	for _, name := range reg.Names() {
		switch name {
		case "explainer", "feedback_learner", "observability_connector":
			continue // they read upstream results, not the data
		}
		for _, brands := range [][]string{{"Ozempic"}, {"Kisqali", "Ozempic"}} {
			t.Run(name+"/"+strings.Join(brands, "+"), func(t *testing.T) {
				spec, _ := reg.Spec(name)
				parsed := map[string]any{"intent": "causal", "brands": brands, "kpis": []string{"NRx"}}
				r, err := spec.Agent.Run(t.Context(), newDispatch(name, parsed))
				var ae *troupe.AgentError
				if !errors.As(err, &ae) || ae.Code != troupe.CodeInvalidInput {
					t.Fatalf("brands %v: result %+v, error %v; want %s", brands, r, err, troupe.CodeInvalidInput)
				}
				if want := "no data for brand Ozempic: the data holds Kisqali, Fabhalta and Verzenio"; ae.Message != want {
					t.Errorf("message %q, want %q", ae.Message, want)
				}
			})
		}
	}
}

// Agents of one parallel stage reach the explainer in the order they happened to finish; the
// answer must not depend on it.
func TestExplainerOrderIsStable(t *testing.T) {
	reg := registry(t)
	parsed := map[string]any{"intent": "trend", "brands": []string{"Kisqali"}, "kpis": []string{"NRx"}, "time_period": "recent"}
	var ups []troupe.UpstreamResult
	for _, a := range []string{"drift_monitor", "gap_analyzer", "prediction_synthesizer"} {
		ups = append(ups, upstreamOf(a, call(t, reg, a, newDispatch(a, parsed))))
	}
	want := call(t, reg, "explainer", newDispatch("explainer", parsed, ups...)).AgentResult["explanation"]
	reversed := slices.Clone(ups)
	slices.Reverse(reversed)
	got := call(t, reg, "explainer", newDispatch("explainer", parsed, reversed...)).AgentResult["explanation"]
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("explanation depends on the upstream order (-in order +reversed):\n%s", diff)
	}
}

// stateRuntime gives a dispatch outside an engine its session state.
type stateRuntime map[string]any

func (s stateRuntime) State(k string) (any, bool) { v, ok := s[k]; return v, ok }
func (stateRuntime) Progress(string, any)         {}
func (stateRuntime) Partial(map[string]any)       {}
func (stateRuntime) Ask(context.Context, troupe.Question) (troupe.Answer, error) {
	return troupe.Answer{}, troupe.ErrPaused
}

// An estimate in session state left by an earlier question about another brand or KPI says
// nothing about this one: the gap analyzer does not attribute the gap to it, nor does the
// experiment designer size a pilot by it, nor does the segment split take its change week.
func TestCausalEffectOfAnotherQuestionIsIgnored(t *testing.T) {
	reg := registry(t)
	cause := call(t, reg, "causal_impact", newDispatch("causal_impact", kisqaliParsed))
	state := stateRuntime{"causal_effect": cause.AgentResult["causal_effect"]}
	for _, tt := range []struct{ name, brand, kpi string }{
		{"another brand", "Verzenio", "NRx"},
		{"another KPI", "Kisqali", "TRx"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			parsed := map[string]any{"intent": "exploratory", "brands": []string{tt.brand}, "kpis": []string{tt.kpi}, "regions": []string{"Midwest"}}
			d := newDispatch("gap_analyzer", parsed)
			d.Bind(state)
			gap := call(t, reg, "gap_analyzer", d)
			if v, ok := gap.AgentResult["gap_explained_by_effect"]; ok {
				t.Errorf("gap_analyzer on %s %s explains the gap by the Kisqali NRx estimate: %v\n%s", tt.brand, tt.kpi, v, gap.Summary())
			}
			d = newDispatch("experiment_designer", parsed)
			d.Bind(state)
			if basis := call(t, reg, "experiment_designer", d).AgentResult["effect_basis"]; basis != "a default change" {
				t.Errorf("experiment_designer on %s %s sized by %v", tt.brand, tt.kpi, basis)
			}
		})
	}
	// The same brand and KPI in the same region: the estimate applies.
	d := newDispatch("gap_analyzer", kisqaliParsed)
	d.Bind(state)
	if _, ok := call(t, reg, "gap_analyzer", d).AgentResult["gap_explained_by_effect"]; !ok {
		t.Error("gap_analyzer ignores the estimate of its own brand, KPI and region in session state")
	}
	// The segment split of another region finds that region's own change week, not the
	// Midwest's.
	other := map[string]any{"intent": "comparative", "brands": []string{"Kisqali"}, "kpis": []string{"NRx"}, "regions": []string{"West"}}
	alone := call(t, reg, "heterogeneous_optimizer", newDispatch("heterogeneous_optimizer", other))
	d = newDispatch("heterogeneous_optimizer", other)
	d.Bind(state)
	withState := call(t, reg, "heterogeneous_optimizer", d)
	if got, want := withState.AgentResult["change_week"], alone.AgentResult["change_week"]; got != want {
		t.Errorf("heterogeneous_optimizer for the West with the Midwest's estimate in state: change_week %v, want the West's own %v", got, want)
	}
}

// Over a period reaching back before the change, the gap the estimated drop is compared with is
// the gap since the change: the weeks before it had no drop to explain, and averaging them in
// shrinks the gap and inflates the share (it read 570% over all 26 weeks).
func TestGapExplainedSinceTheChange(t *testing.T) {
	reg, ds := registry(t), e2i.NewDataset()
	rows := ds.Rows()
	cause := call(t, reg, "causal_impact", newDispatch("causal_impact", kisqaliParsed))
	change := int(num(t, cause.AgentResult, "causal_effect", "change_week"))
	lost := -num(t, cause.AgentResult, "causal_effect", "units_per_week")
	for _, period := range []string{"recent", "all time", "last 2 years"} {
		t.Run(period, func(t *testing.T) {
			parsed := map[string]any{"intent": "causal", "brands": []string{"Kisqali"}, "kpis": []string{"NRx"}, "regions": []string{"Midwest"}, "time_period": period}
			r := call(t, reg, "gap_analyzer", newDispatch("gap_analyzer", parsed, upstreamOf("causal_impact", cause)))
			ar := r.AgentResult
			peer := ar["peer_region"].(string)
			window := int(num(t, ar, "period_weeks"))
			from := max(e2i.Weeks-window+1, change)
			mw, pr := weekly(rows, "Kisqali", "Midwest", "NRx", 1, e2i.Deciles), weekly(rows, "Kisqali", peer, "NRx", 1, e2i.Deciles)
			var gaps []float64
			for w := from; w <= e2i.Weeks; w++ {
				gaps = append(gaps, (pr[w-1]/ds.Prescribers(peer)-mw[w-1]/ds.Prescribers("Midwest"))*ds.Prescribers("Midwest"))
			}
			if got := int(num(t, ar, "gap_compared_from_week")); got != from {
				t.Errorf("gap_compared_from_week = %d, want %d", got, from)
			}
			near(t, "gap_explained_by_effect", num(t, ar, "gap_explained_by_effect"), lost/avg(gaps), 2e-3)
			if share := num(t, ar, "gap_explained_by_effect"); share > 2 {
				t.Errorf("the drop explains %v of the gap", share)
			}
		})
	}
}

// A period longer than the data, or a calendar year the data's numbered weeks cannot pick
// out, is analysed over all the data, and every agent that reads the data says so.
func TestPeriodOutsideTheData(t *testing.T) {
	reg := registry(t)
	for _, tt := range []struct {
		period string
		weeks  float64
		warn   string
	}{
		{"last 2 years", e2i.Weeks, "the data holds 26 weeks, fewer than the last 2 years (104 weeks) asked about"},
		{"last year", e2i.Weeks, "fewer than the last year (52 weeks)"},
		{"year 2019", e2i.Weeks, "without calendar dates, so 2019 cannot be picked out"},
		{"last 3 quarters", e2i.Weeks, "fewer than the last 3 quarters (39 weeks)"},
		{"last 10 days", 2, ""},
		{"last 12 weeks", 12, ""},
	} {
		t.Run(tt.period, func(t *testing.T) {
			parsed := map[string]any{"intent": "exploratory", "brands": []string{"Kisqali"}, "regions": []string{"Midwest"}, "time_period": tt.period}
			r := call(t, reg, "gap_analyzer", newDispatch("gap_analyzer", parsed))
			if got := num(t, r.AgentResult, "period_weeks"); got != tt.weeks {
				t.Errorf("period_weeks = %v, want %v", got, tt.weeks)
			}
			warned := slices.ContainsFunc(r.Warnings, func(w string) bool { return tt.warn != "" && strings.Contains(w, tt.warn) })
			if warned != (tt.warn != "") || tt.warn == "" && len(r.Warnings) > 0 {
				t.Errorf("warnings %q, want one containing %q", r.Warnings, tt.warn)
			}
		})
	}
}

// A region the data does not hold is not answered about another one: alone it is invalid
// input, beside a region the data holds it is a warning.
func TestUnknownRegion(t *testing.T) {
	reg := registry(t)
	for _, agent := range []string{"causal_impact", "gap_analyzer", "drift_monitor", "health_score", "heterogeneous_optimizer"} {
		parsed := map[string]any{"intent": "causal", "brands": []string{"Kisqali"}, "kpis": []string{"NRx"}, "regions": []string{"Southeast"}}
		spec, _ := reg.Spec(agent)
		_, err := spec.Agent.Run(t.Context(), newDispatch(agent, parsed))
		var ae *troupe.AgentError
		if !errors.As(err, &ae) || ae.Code != troupe.CodeInvalidInput ||
			ae.Message != "no data for region Southeast: the data holds Midwest, Northeast, South and West" {
			t.Errorf("%s on the Southeast: err = %v, want INVALID_INPUT naming the regions the data holds", agent, err)
		}
	}
	parsed := map[string]any{"intent": "causal", "brands": []string{"Kisqali"}, "kpis": []string{"NRx"}, "regions": []string{"Southeast", "Midwest"}}
	r := call(t, reg, "causal_impact", newDispatch("causal_impact", parsed))
	if r.AgentResult["region"] != "Midwest" || !slices.Contains(r.Warnings, "no data for Southeast; analysed Midwest") {
		t.Errorf("Southeast and Midwest: region %v, warnings %q", r.AgentResult["region"], r.Warnings)
	}
}

// Seed 000's Sender agents return a training signal with their result when the dispatch asks
// them to collect signals; the others, recipients among them, return none; and the feedback
// learner turns only Senders' results into signals.
func TestTrainingSignals(t *testing.T) {
	reg := registry(t)
	senders := []string{"causal_impact", "gap_analyzer", "heterogeneous_optimizer", "drift_monitor", "experiment_designer", "prediction_synthesizer"}
	var up []troupe.UpstreamResult
	for _, agent := range []string{"causal_impact", "gap_analyzer", "heterogeneous_optimizer", "drift_monitor", "experiment_designer",
		"prediction_synthesizer", "health_score", "resource_optimizer"} {
		d := newDispatch(agent, kisqaliParsed)
		d.SignalSignature = troupe.Ptr(agent + ": question -> answer")
		r := call(t, reg, agent, d)
		up = append(up, upstreamOf(agent, r))
		if !slices.Contains(senders, agent) {
			if len(r.TrainingSignals) != 0 || r.SignalQuality != nil {
				t.Errorf("%s is no Sender, yet returned %d training signals", agent, len(r.TrainingSignals))
			}
			continue
		}
		if len(r.TrainingSignals) != 1 {
			t.Fatalf("%s: %d training signals, want 1", agent, len(r.TrainingSignals))
		}
		s := r.TrainingSignals[0]
		if s.Signature != *d.SignalSignature || s.Quality == nil || *s.Quality != *r.Confidence || r.SignalQuality == nil || *r.SignalQuality != *r.Confidence {
			t.Errorf("%s: signal %+v, signal_quality %v; want signature %q and quality %v", agent, s, r.SignalQuality, *d.SignalSignature, *r.Confidence)
		}
		if s.Input["query"] != d.Query || s.Output["analysis_summary"] != r.Summary() {
			t.Errorf("%s: signal input %v, output %v", agent, s.Input, s.Output)
		}
		d = newDispatch(agent, kisqaliParsed)
		d.CollectSignals = false
		if r := call(t, reg, agent, d); len(r.TrainingSignals) != 0 {
			t.Errorf("%s returned a signal though the dispatch collects none", agent)
		}
	}
	r := call(t, reg, "feedback_learner", newDispatch("feedback_learner", kisqaliParsed, up...))
	var from []string
	for _, s := range r.TrainingSignals {
		from = append(from, s.Signature)
	}
	if diff := cmp.Diff(senders, from); diff != "" {
		t.Errorf("feedback_learner's signals come from (-want +got):\n%s", diff)
	}
}
