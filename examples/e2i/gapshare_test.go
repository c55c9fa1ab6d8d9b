package e2i_test

import (
	"fmt"
	"strings"
	"testing"
)

// The explainer's gap sentence must state the share gap_analyzer computed against the gap it
// computed it against: over the last quarter that is the gap since the change week, not the
// quarter's gap the sentence has just quoted.
func TestExplainerGapShareNamesItsGap(t *testing.T) {
	reg := registry(t)
	parsed := map[string]any{"intent": "causal", "brands": []string{"Kisqali"}, "kpis": []string{"NRx"}, "regions": []string{"Midwest"}, "time_period": "last quarter"}
	cause := call(t, reg, "causal_impact", newDispatch("causal_impact", parsed))
	gap := call(t, reg, "gap_analyzer", newDispatch("gap_analyzer", parsed, upstreamOf("causal_impact", cause)))
	ex := call(t, reg, "explainer", newDispatch("explainer", parsed, upstreamOf("causal_impact", cause), upstreamOf("gap_analyzer", gap)))
	text := ex.AgentResult["explanation"].(string)
	ar := gap.AgentResult
	effect := -num(t, ar, "causal_units_per_week")
	quarterGap := num(t, ar, "opportunity_per_week")
	since := num(t, ar, "gap_since_change_per_week")
	from := num(t, ar, "gap_compared_from_week")
	share := num(t, ar, "gap_explained_by_effect")
	t.Logf("effect %.1f/wk; quarter gap %.1f/wk (effect/quarter gap = %.1f%%); gap since week %.0f %.1f/wk (share %.1f%%)",
		effect, quarterGap, 100*effect/quarterGap, from, since, 100*share)
	t.Logf("explanation: %s", text)
	if !strings.Contains(text, fmt.Sprintf("since week %.0f", from)) {
		t.Errorf("the explanation gives the %.1f%% share of the gap since week %.0f (%.0f a week) as a share of \"that gap\", the quarter's %.0f a week", 100*share, from, since, quarterGap)
	}
}
