package aggregate_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/aggregate"
)

func TestKeyInsights(t *testing.T) {
	tests := []struct {
		name    string
		results []*troupe.Result
		want    []string
	}{
		{"nothing", nil, []string{}},
		{"summaries then insights, per result in order", []*troupe.Result{
			result("a", map[string]any{"key_insights": []string{"a1", "a2"}}, summary("A sums up")),
			result("b", map[string]any{"key_insights": []any{"b1", 42, "a1", map[string]any{"x": 1}, "  b2  ", ""}}, summary("B sums up")),
		}, []string{"A sums up", "a1", "a2", "B sums up", "b1", "b2"}},
		{"summary repeated as an insight appears once", []*troupe.Result{
			result("a", map[string]any{"key_insights": []string{"Same"}}, summary("Same")),
		}, []string{"Same"}},
		{"key_insights of another type is ignored", []*troupe.Result{
			result("a", map[string]any{"key_insights": "one string"}),
		}, []string{}},
		{"failed results add nothing", []*troupe.Result{
			result("a", map[string]any{"key_insights": []string{"bogus"}}, summary("bogus too"), status(troupe.StatusFailed)),
			result("b", map[string]any{}, summary("real")),
		}, []string{"real"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, aggregate.KeyInsights(tt.results)); diff != "" {
				t.Errorf("KeyInsights (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSynthesis(t *testing.T) {
	tests := []struct {
		name    string
		results []*troupe.Result
		want    string
	}{
		{"nothing completed", []*troupe.Result{result("a", nil, status(troupe.StatusTimeout))}, ""},
		{"the last agent's explanation", []*troupe.Result{
			result("causal_impact", map[string]any{"ate": -0.12}, summary("Access drove it")),
			result("explainer", map[string]any{"explanation": "  Access restrictions drove the drop.  "}),
		}, "Access restrictions drove the drop."},
		{"synthesis before explanation", []*troupe.Result{
			result("explainer", map[string]any{"explanation": "E", "synthesis": "S"}),
		}, "S"},
		{"only the last completed result's explanation counts", []*troupe.Result{
			result("explainer", map[string]any{"explanation": "Earlier explanation"}, summary("Explained")),
			result("gap_analyzer", map[string]any{"gap": 0.4}, summary("Ohio has the largest gap!")),
			result("drift_monitor", nil, status(troupe.StatusFailed)),
		}, "explainer: Explained. gap_analyzer: Ohio has the largest gap!"},
		{"a blank or non-string explanation is skipped", []*troupe.Result{
			result("explainer", map[string]any{"explanation": "  ", "synthesis": 3}, summary(`It said "done."`)),
		}, `explainer: It said "done."`},
		{"summaries ended as sentences", []*troupe.Result{
			result("causal_impact", map[string]any{"x": 1}, summary("NRx fell 12.5% (p=0.03)")),
			result("gap_analyzer", map[string]any{"x": 1}),
			result("explainer", map[string]any{"x": 1}, summary("Done.")),
		}, "causal_impact: NRx fell 12.5% (p=0.03). explainer: Done."},
		{"without summaries, who contributed what", []*troupe.Result{
			result("causal_impact", map[string]any{"ate": -0.12, "region": "Midwest", "ci": []any{}}),
			result("gap_analyzer", map[string]any{"gap": 0.4}),
			result("explainer", nil),
		}, "causal_impact contributed ate, ci and region. gap_analyzer contributed gap. explainer contributed no fields."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, aggregate.Synthesis(tt.results)); diff != "" {
				t.Errorf("Synthesis (-want +got):\n%s", diff)
			}
		})
	}
}
