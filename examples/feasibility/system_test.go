package feasibility_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/engine"
	"github.com/troupehq/troupe/examples/feasibility"
	"github.com/troupehq/troupe/troupetest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newEngine builds the system with seed 004's defaults on an engine with fixed run seeds.
func newEngine(tb testing.TB) *engine.Engine {
	tb.Helper()
	reg, err := feasibility.Registry(nil, feasibility.Config{})
	if err != nil {
		tb.Fatal(err)
	}
	eng, err := engine.New(engine.Config{Registry: reg, Seed: 1})
	if err != nil {
		tb.Fatal(err)
	}
	return eng
}

// run asks the system about a shipped case and returns the bundle's and the orchestrator's
// results.
func run(t *testing.T, caseID string) (bundle, decision *troupe.Result, evs []troupe.Event) {
	t.Helper()
	evs, err := troupetest.Collect(newEngine(t).Run(t.Context(), troupe.Request{Query: "is " + caseID + " feasible?", ParsedQuery: map[string]any{"case": caseID}}))
	if err != nil {
		t.Fatal(err)
	}
	if last := troupetest.Last(evs); last.Kind != troupe.KindRunCompleted {
		t.Fatalf("run ended %s: %+v", last.Kind, last.Data)
	}
	for _, ev := range troupetest.Find(evs, troupe.KindDispatchCompleted, "") {
		switch r := ev.Data.(*troupe.Result); r.AgentName {
		case feasibility.BundleAgent:
			bundle = r
		case feasibility.OrchestratorAgent:
			decision = r
		}
	}
	if bundle == nil || decision == nil {
		t.Fatalf("missing results: bundle %v, decision %v", bundle != nil, decision != nil)
	}
	return bundle, decision, evs
}

func meta(r *troupe.Result) map[string]any    { return r.AgentResult["meta"].(map[string]any) }
func summary(r *troupe.Result) map[string]any { return r.AgentResult["summary"].(map[string]any) }

// TestEarlyStop: the clear-cut CRM rollout — the first two judges agree within ε, so the
// third never runs, and the orchestrator decides outright.
func TestEarlyStop(t *testing.T) {
	b, d, evs := run(t, "crm-rollout")
	m := meta(b)
	if m["early_stop"] != true || m["k"] != 2.0 || fmt.Sprint(m["seeds"]) != "[11 23]" {
		t.Errorf("meta = %v; want early_stop with k=2, seeds 11 and 23", m)
	}
	started := 0
	for _, ev := range troupetest.Find(evs, troupe.KindAgentProgress, feasibility.BundleAgent) {
		if ev.Data.(*troupe.Progress).Kind == "replicate_started" {
			started++
		}
	}
	if started != 2 {
		t.Errorf("%d replicates started, want 2", started)
	}
	if d.AgentResult["decision"] != "go" || d.AgentResult["unanimous"] != true {
		t.Errorf("decision = %v", d.AgentResult)
	}
	if j := d.Summary(); !strings.Contains(j, "The first two judges agreed within ε = 0.2") || !strings.Contains(j, "so no further judge ran (k = 2 of at most 3)") {
		t.Errorf("justification does not cite the early stop: %s", j)
	}
}

// TestDisagreement: the borderline warehouse expansion — the first two judges disagree, all
// three run, and the bundle records the split verdict.
func TestDisagreement(t *testing.T) {
	b, _, _ := run(t, "warehouse-expansion")
	m, s := meta(b), summary(b)
	if m["early_stop"] != false || m["k"] != 3.0 {
		t.Errorf("meta = %v; want k=3 without early stop", m)
	}
	var verdict map[string]any
	for _, g := range s["disagreements"].([]any) {
		if g := g.(map[string]any); g["field"] == "verdict" {
			verdict = g
		}
	}
	if verdict == nil {
		t.Fatalf("no disagreement on verdict: %v", s["disagreements"])
	}
	if diff := cmp.Diff([]any{"feasible", "infeasible", "infeasible"}, verdict["values"]); diff != "" {
		t.Errorf("verdicts of r1, r2, r3 (-want +got):\n%s", diff)
	}
	if c := s["confidence"].(float64); c <= 0 || c >= 0.9 {
		t.Errorf("confidence %v of split judges, want in (0, 0.9)", c)
	}
}

// TestOrchestratorCitesBundle: the orchestrator's justification is computed from the bundle:
// it names each judge's verdict and the bundle's own confidence and distribution, and its
// decision follows the majority with a condition.
func TestOrchestratorCitesBundle(t *testing.T) {
	b, d, _ := run(t, "warehouse-expansion")
	s := summary(b)
	conf := s["confidence"].(float64)
	prob := s["distributions"].(map[string]any)["probability"].(map[string]any)
	j := d.Summary()
	for _, want := range []string{
		"Is the warehouse expansion feasible within 1,500k and 56 weeks?: no go unless rescoped.",
		"3 judges ran (seeds 11, 23, 47).",
		"The judges disagree on the verdict — r1 (seed 11) feasible, r2 (seed 23) infeasible, r3 (seed 47) infeasible — so the decision follows the majority, 2 of 3 infeasible",
		fmt.Sprintf("confidence %.2f (1 − mean pairwise distance), below the 0.80 needed", conf),
		fmt.Sprintf("mean %.2f ± %.2f (range %.2f–%.2f)", prob["mean"], prob["stdev"], prob["min"], prob["max"]),
		"They also differ on",
	} {
		if !strings.Contains(j, want) {
			t.Errorf("justification lacks %q:\n%s", want, j)
		}
	}
	if d.AgentResult["decision"] != "no_go_unless_rescoped" || d.AgentResult["confidence"] != conf || d.AgentResult["unanimous"] != false {
		t.Errorf("decision = %v", d.AgentResult)
	}
	var fields []string
	for _, f := range d.AgentResult["disagreements"].([]any) {
		fields = append(fields, f.(string))
	}
	if !slices.Contains(fields, "verdict") || slices.Contains(fields, "rationale") {
		t.Errorf("disagreements = %v; want verdict, and not the rationale (an explanation, not a judgement)", fields)
	}

	// The clear-cut infeasible case reads differently from the same code.
	_, d2, _ := run(t, "lab-platform")
	if d2.AgentResult["decision"] != "no_go" || !strings.Contains(d2.Summary(), "All 2 valid judges find it infeasible") {
		t.Errorf("lab-platform: %v\n%s", d2.AgentResult["decision"], d2.Summary())
	}
}

// TestOwnProposal: a request may bring its own proposal; a malformed one fails the run with
// INVALID_INPUT naming the field.
func TestOwnProposal(t *testing.T) {
	eng := newEngine(t)
	proposal := map[string]any{"id": "kiosk", "question": "Can we ship the kiosk app for 90k in 12 weeks?", "category": "software",
		"estimated_cost_k": 60, "budget_k": 90, "estimated_weeks": 8, "deadline_weeks": 12, "risks": []any{"new_technology"}}
	evs, err := troupetest.Collect(eng.Run(t.Context(), troupe.Request{ParsedQuery: map[string]any{"proposal": proposal}}))
	if err != nil {
		t.Fatal(err)
	}
	if last := troupetest.Last(evs); last.Kind != troupe.KindRunCompleted {
		t.Fatalf("run ended %s", last.Kind)
	}
	done := troupetest.Find(evs, troupe.KindDispatchCompleted, feasibility.OrchestratorAgent)
	if len(done) != 1 || !strings.HasPrefix(done[0].Data.(*troupe.Result).Summary(), "Can we ship the kiosk app for 90k in 12 weeks?: ") {
		t.Errorf("orchestrator results: %v", done)
	}

	proposal["budget_k"] = -1
	evs, err = troupetest.Collect(eng.Run(t.Context(), troupe.Request{ParsedQuery: map[string]any{"proposal": proposal}}))
	if err != nil {
		t.Fatal(err)
	}
	out := troupetest.Last(evs).Data.(*troupe.Outcome)
	if out.Status != troupe.RunFailed || out.Error == nil || !strings.Contains(out.Error.Message, "parsed_query.proposal.budget_k: must be positive, got -1") {
		t.Errorf("outcome %+v, error %+v", out, out.Error)
	}

	// A risk named twice is a malformed request too: it would strike twice in each draw, and
	// every judge's risk_drivers would repeat it, which the judge schema refuses.
	proposal["budget_k"] = 90
	proposal["risks"] = []any{"new_technology", "key_person", "new_technology"}
	evs, err = troupetest.Collect(eng.Run(t.Context(), troupe.Request{ParsedQuery: map[string]any{"proposal": proposal}}))
	if err != nil {
		t.Fatal(err)
	}
	out = troupetest.Last(evs).Data.(*troupe.Outcome)
	if out.Status != troupe.RunFailed || out.Error == nil || !strings.Contains(out.Error.Message, `parsed_query.proposal.risks[2]: "new_technology" is already risks[0]`) {
		t.Errorf("outcome %+v, error %+v", out, out.Error)
	}
}

// TestNoProposal: a request naming no proposal fails with INVALID_INPUT after two judges,
// and the bundle says why it runs no third: every judge gets the same request, so a third
// would fail the same way. Before, it reported the two failed judges as differing by more
// than ε and ran the third.
func TestNoProposal(t *testing.T) {
	evs, err := troupetest.Collect(newEngine(t).Run(t.Context(), troupe.Request{Query: "hello"}))
	if err != nil {
		t.Fatal(err)
	}
	var started int
	var reason any
	for _, ev := range troupetest.Find(evs, troupe.KindAgentProgress, feasibility.BundleAgent) {
		switch p := ev.Data.(*troupe.Progress); p.Kind {
		case "replicate_started":
			started++
		case "partial_summary":
			reason = p.Data.(map[string]any)["reason"]
		}
	}
	if started != 2 {
		t.Errorf("%d judges started, want 2", started)
	}
	if s, _ := reason.(string); !strings.HasPrefix(s, "the first two replicates both failed (INVALID_INPUT: feasibility: no proposal") ||
		!strings.HasSuffix(s, "not running the rest: INVALID_INPUT is not recoverable, and every replicate gets the same input") {
		t.Errorf("partial_summary reason %q", reason)
	}
	failed := troupetest.Find(evs, troupe.KindDispatchFailed, feasibility.BundleAgent)
	if len(failed) != 1 {
		t.Fatalf("%d failed bundle dispatches, want 1", len(failed))
	}
	if e := failed[0].Data.(*troupe.Result).Errors[0]; e.Code != troupe.CodeInvalidInput || e.Recoverable {
		t.Errorf("bundle error %+v, want INVALID_INPUT, not recoverable", e)
	}
}

// TestAggregationCitesWithoutConflict: the orchestrator cites the bundle without repeating
// any of its fields under the same key, so the run's aggregation finds no conflict between
// the two (its consistency is 1, nothing being held by both) — whether the judges agree or
// split. The judges' own disagreement is the bundle's to report, and it still does.
func TestAggregationCitesWithoutConflict(t *testing.T) {
	for _, tc := range []struct {
		caseID string
		split  bool // the judges disagree on the verdict
	}{
		{"crm-rollout", false},
		{"warehouse-expansion", true},
		{"lab-platform", false},
	} {
		t.Run(tc.caseID, func(t *testing.T) {
			b, d, evs := run(t, tc.caseID)
			aggs := troupetest.Find(evs, troupe.KindRunAggregated, "")
			if len(aggs) != 1 {
				t.Fatalf("%d run_aggregated events, want 1", len(aggs))
			}
			agg := aggs[0].Data.(*troupe.Aggregation)
			var fields []string
			for _, c := range agg.ConflictsDetected {
				fields = append(fields, c.Field)
			}
			if len(fields) != 0 || agg.ConsistencyScore != 1 {
				t.Errorf("conflicts on %v, consistency %v; want none and 1", fields, agg.ConsistencyScore)
			}
			for k := range d.AgentResult {
				if _, ok := b.AgentResult[k]; ok {
					t.Errorf("the orchestrator repeats the bundle's key %q", k)
				}
			}
			if d.AgentResult["judges"] != meta(b)["k"] {
				t.Errorf("judges = %v, bundle k = %v", d.AgentResult["judges"], meta(b)["k"])
			}
			var split bool
			for _, g := range summary(b)["disagreements"].([]any) {
				split = split || g.(map[string]any)["field"] == "verdict"
			}
			if split != tc.split || d.AgentResult["unanimous"] == tc.split {
				t.Errorf("bundle disagrees on verdict: %v, orchestrator unanimous: %v; want a split %v", split, d.AgentResult["unanimous"], tc.split)
			}
		})
	}
}
