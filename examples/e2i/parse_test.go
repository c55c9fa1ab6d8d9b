package e2i_test

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/examples/e2i"
	"github.com/troupehq/troupe/plan"
)

// Seed 000's two example queries.
const (
	kisqaliQuery = "What caused the drop in NRx for Kisqali in Midwest?"
	trendsQuery  = "Show me market trends and opportunities for Kisqali"
)

func TestParseQuery(t *testing.T) {
	tests := []struct {
		query string
		want  map[string]any
	}{
		{kisqaliQuery, map[string]any{
			"intent": "causal", "brands": []string{"Kisqali"}, "kpis": []string{"NRx"},
			"regions": []string{"Midwest"}, "time_period": "recent",
		}},
		{trendsQuery, map[string]any{
			"intent": "trend", "secondary_intents": []string{"exploratory"},
			"brands": []string{"Kisqali"}, "time_period": "recent",
		}},
		{"Why is kisqali TRx lagging in the MID-WEST and the south?", map[string]any{
			"intent": "causal", "brands": []string{"Kisqali"}, "kpis": []string{"TRx"},
			"regions": []string{"Midwest", "South"}, "time_period": "recent",
		}},
		{"Where are the biggest gaps for Fabhalta in the Northeast last quarter?", map[string]any{
			"intent": "exploratory", "brands": []string{"Fabhalta"},
			"regions": []string{"Northeast"}, "time_period": "last quarter",
		}},
		{"What if we increase NBRx for Verzenio by 10% in the West?", map[string]any{
			"intent": "what_if", "brands": []string{"Verzenio"}, "kpis": []string{"NBRx"},
			"regions": []string{"West"}, "time_period": "recent", "change_pct": 10.0,
		}},
		{"Compare Kisqali versus Verzenio new prescriptions over the past 6 weeks", map[string]any{
			"intent": "comparative", "brands": []string{"Kisqali", "Verzenio"}, "kpis": []string{"NRx"},
			"time_period": "last 6 weeks",
		}},
		{"Train a model of NRx for ribociclib", map[string]any{
			"intent": "ml_training", "brands": []string{"Kisqali"}, "kpis": []string{"NRx"}, "time_period": "recent",
		}},
		{"Deploy the NRx model", map[string]any{
			"intent": "model_deployment", "kpis": []string{"NRx"}, "time_period": "recent",
		}},
		{"Monitor data freshness and match rate", map[string]any{
			"intent": "monitoring", "kpis": []string{"data_freshness", "match_rate"}, "time_period": "recent",
		}},
		{"Forecast Kisqali NRx trend and allocate a $2.5M budget", map[string]any{
			"intent": "trend", "brands": []string{"Kisqali"}, "kpis": []string{"NRx"}, "time_period": "recent",
			"budget": 2.5e6, "preferred_agents": []string{"prediction_synthesizer", "resource_optimizer"},
		}},
		{"What if a pilot must detect an effect size of 0.5?", map[string]any{
			"intent": "what_if", "time_period": "recent", "effect_size": 0.5,
		}},
		// Designing an experiment is the experiment designer's: its sample size is the answer.
		{"What sample size do we need to detect a 10% lift in Kisqali NRx?", map[string]any{
			"intent": "what_if", "brands": []string{"Kisqali"}, "kpis": []string{"NRx"}, "time_period": "recent", "change_pct": 10.0,
		}},
		{"Simulate d=.25 with $1,500,000 for the West, Q3", map[string]any{
			"intent": "what_if", "regions": []string{"West"}, "time_period": "last quarter", "effect_size": 0.25, "budget": 1.5e6,
		}},
		{"Is new-to-brand share healthy year to date?", map[string]any{
			"intent": "monitoring", "kpis": []string{"NBRx"}, "time_period": "year to date",
		}},
		// Word boundaries: "Midwestern" is one word, "Westfield" is not the West, "strain" is not
		// "train". A place after "in" that the gazetteer does not know is kept as written, so
		// that the agents report it as not in the data rather than answer about another region.
		{"Trends in Westfield and midwestern strain", map[string]any{
			"intent": "trend", "regions": []string{"Westfield", "Midwest"}, "time_period": "recent",
		}},
		{"What caused the drop in NRx for Kisqali in Southeast?", map[string]any{
			"intent": "causal", "brands": []string{"Kisqali"}, "kpis": []string{"NRx"},
			"regions": []string{"Southeast"}, "time_period": "recent",
		}},
		{"Why did NRx fall in the Pacific Northwest and the Midwest?", map[string]any{
			"intent": "causal", "kpis": []string{"NRx"}, "regions": []string{"Pacific Northwest", "Midwest"}, "time_period": "recent",
		}},
		{"Is NRx lagging in the Midwest or Southeast region?", map[string]any{
			"intent": "exploratory", "kpis": []string{"NRx"}, "regions": []string{"Midwest", "Southeast"}, "time_period": "recent",
		}},
		// Not places: a brand before a KPI, a segment, a payer, a month, a quarter.
		{"Why did NRx drop in Ozempic NRx, in Medicare patients, in Oncology, in March, in Q3?", map[string]any{
			"intent": "causal", "kpis": []string{"NRx"}, "mentions": []string{"Ozempic"}, "time_period": "last quarter",
		}},
		// Periods longer than the data, in other units, and calendar years are kept as asked;
		// the agents say what the data holds.
		{"Where are the gaps for Kisqali over the last 2 years?", map[string]any{
			"intent": "exploratory", "brands": []string{"Kisqali"}, "time_period": "last 2 years",
		}},
		{"NRx gaps in the past 3 quarters and 10 days", map[string]any{
			"intent": "exploratory", "kpis": []string{"NRx"}, "time_period": "last 3 quarters",
		}},
		{"NRx gaps in the past 10 days", map[string]any{
			"intent": "exploratory", "kpis": []string{"NRx"}, "time_period": "last 10 days",
		}},
		{"Why did Kisqali NRx drop in 2019 for 2000 prescribers?", map[string]any{
			"intent": "causal", "brands": []string{"Kisqali"}, "kpis": []string{"NRx"}, "time_period": "year 2019",
		}},
		// A name the gazetteer does not know is a brand when the question says so, kept as
		// written, so that it is reported as not in the data rather than answered as Kisqali...
		{"Why did NRx drop for the brand Ozempic?", map[string]any{
			"intent": "causal", "brands": []string{"Ozempic"}, "kpis": []string{"NRx"}, "time_period": "recent",
		}},
		// ...and a mention where a brand could stand, but a plan, a target, a region or a
		// segment could as well.
		{"What caused the drop in NRx for Ozempic in Midwest?", map[string]any{
			"intent": "causal", "mentions": []string{"Ozempic"}, "kpis": []string{"NRx"},
			"regions": []string{"Midwest"}, "time_period": "recent",
		}},
		{"Compare Kisqali and Ozempic versus Mounjaro", map[string]any{
			"intent": "comparative", "brands": []string{"Kisqali"}, "mentions": []string{"Ozempic", "Mounjaro"}, "time_period": "recent",
		}},
		{"Is Ozempic NRx holding up?", map[string]any{
			"intent": "exploratory", "mentions": []string{"Ozempic"}, "kpis": []string{"NRx"}, "time_period": "recent",
		}},
		{"How is Kisqali NRx tracking against Plan?", map[string]any{
			"intent": "exploratory", "brands": []string{"Kisqali"}, "mentions": []string{"Plan"}, "kpis": []string{"NRx"}, "time_period": "recent",
		}},
		{"What is the NRx trend for Southeast?", map[string]any{
			"intent": "trend", "mentions": []string{"Southeast"}, "kpis": []string{"NRx"}, "time_period": "recent",
		}},
		// Capitals alone name no brand: a sentence's first word, title case, keywords, common
		// words, words with digits, and names where no brand stands.
		{"Ozempic? Why did NRx drop In Westfield", map[string]any{
			"intent": "causal", "kpis": []string{"NRx"}, "regions": []string{"Westfield"}, "time_period": "recent",
		}},
		{"What Caused The Drop Of NRx For The West In Q3?", map[string]any{
			"intent": "causal", "kpis": []string{"NRx"}, "regions": []string{"West"}, "time_period": "last quarter",
		}},
		{"Trends For All Brands Of Prescribers, For Growth", map[string]any{
			"intent": "trend", "time_period": "recent",
		}},
		// Payers, channels, specialties, prescriber types and months are not brands, nor is a
		// name that describes a segment.
		{"Why did NRx drop for Medicare patients?", map[string]any{
			"intent": "causal", "kpis": []string{"NRx"}, "time_period": "recent",
		}},
		{"Why did NRx drop for HCPs in Oncology since March?", map[string]any{
			"intent": "causal", "kpis": []string{"NRx"}, "time_period": "recent",
		}},
		{"How did Kisqali NRx do for Kaiser accounts versus Commercial plans?", map[string]any{
			"intent": "comparative", "brands": []string{"Kisqali"}, "kpis": []string{"NRx"}, "time_period": "recent",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, e2i.ParseQuery(tt.query)); diff != "" {
				t.Errorf("ParseQuery(%q) mismatch (-want +got):\n%s", tt.query, diff)
			}
		})
	}
}

// registry builds the example's registry or fails the test.
func registry(t testing.TB) *troupe.Registry {
	t.Helper()
	reg, err := e2i.Registry()
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

func TestSeedPlans(t *testing.T) {
	reg := registry(t)
	if err := e2i.Rules().Validate(reg); err != nil {
		t.Fatalf("Rules().Validate: %v", err)
	}
	tests := []struct {
		query string
		want  [][]string
	}{
		{kisqaliQuery, [][]string{{"causal_impact"}, {"gap_analyzer"}, {"explainer"}}},
		{trendsQuery, [][]string{{"drift_monitor", "gap_analyzer"}, {"explainer"}}},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			p, err := e2i.Rules().Plan(&troupe.Request{Query: tt.query, ParsedQuery: e2i.ParseQuery(tt.query)}, reg)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, p.ExecutionPlan()); diff != "" {
				t.Errorf("plan mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRegistry(t *testing.T) {
	reg := registry(t)
	if diff := cmp.Diff(e2i.Agents(), reg.Names()); diff != "" {
		t.Errorf("registered agents differ from seed 000's (-want +got):\n%s", diff)
	}
	for _, name := range reg.Names() {
		spec, _ := reg.Spec(name)
		if len(spec.Reads) > 0 {
			t.Errorf("%s declares reads %v: it would fail with STATE_MISSING when planned without their writer", name, spec.Reads)
		}
	}
	spec, _ := reg.Spec("causal_impact")
	if !slices.Equal(spec.Writes, []string{"causal_effect"}) {
		t.Errorf("causal_impact writes %v, want [causal_effect]", spec.Writes)
	}
}

func FuzzParseQuery(f *testing.F) {
	for _, q := range []string{
		kisqaliQuery, trendsQuery, "", "what if $3k", "effect size .2", "last 0 weeks", "Mid-West mid west midwest",
		"\xff\xfe NRx", "İstanbul west", "d = 0.0", "$,", "train deploy monitor",
	} {
		f.Add(q)
	}
	reg, err := e2i.Registry()
	if err != nil {
		f.Fatal(err)
	}
	rules := e2i.Rules()
	intents := []string{"causal", "exploratory", "comparative", "trend", "what_if", "ml_training", "model_deployment", "monitoring"}
	f.Fuzz(func(t *testing.T, q string) {
		pq := e2i.ParseQuery(q)
		if !slices.Contains(intents, pq["intent"].(string)) {
			t.Fatalf("ParseQuery(%q): intent %q is not one of seed 000's", q, pq["intent"])
		}
		if _, err := plan.CriteriaFromParsed(pq); err != nil {
			t.Fatalf("ParseQuery(%q) = %v: not valid criteria: %v", q, pq, err)
		}
		if _, err := rules.Plan(&troupe.Request{Query: q, ParsedQuery: pq}, reg); err != nil {
			t.Fatalf("ParseQuery(%q) = %v: does not plan: %v", q, pq, err)
		}
	})
}

// Seed 000's question asked of the whole country, of an indication or a line of therapy, or of
// a season is no question about a region the data lacks: it is answered over every region,
// as before unknown places were read. "this year" is the year to date, not the 52 weeks of
// "last year" (which the 26 weeks of data would then warn fall short of).
func TestParseQueryNotAPlace(t *testing.T) {
	for q, want := range map[string]map[string]any{
		"What caused the drop in NRx for Kisqali in the United States?":       {"intent": "causal", "brands": []string{"Kisqali"}, "kpis": []string{"NRx"}, "time_period": "recent"},
		"What caused the drop in NRx for Kisqali in the USA?":                 {"intent": "causal", "brands": []string{"Kisqali"}, "kpis": []string{"NRx"}, "time_period": "recent"},
		"What caused the drop in NRx for Kisqali in Breast Cancer?":           {"intent": "causal", "brands": []string{"Kisqali"}, "kpis": []string{"NRx"}, "time_period": "recent"},
		"What caused the drop in NRx for Kisqali in First Line?":              {"intent": "causal", "brands": []string{"Kisqali"}, "kpis": []string{"NRx"}, "time_period": "recent"},
		"Why did Kisqali NRx drop in Summer in the Midwest?":                  {"intent": "causal", "brands": []string{"Kisqali"}, "kpis": []string{"NRx"}, "regions": []string{"Midwest"}, "time_period": "recent"},
		"What caused the drop in NRx for Kisqali in Midwest In Recent Weeks?": {"intent": "causal", "brands": []string{"Kisqali"}, "kpis": []string{"NRx"}, "regions": []string{"Midwest"}, "time_period": "recent"},
		"What caused the drop in NRx for Kisqali in Midwest this year?":       {"intent": "causal", "brands": []string{"Kisqali"}, "kpis": []string{"NRx"}, "regions": []string{"Midwest"}, "time_period": "year to date"},
	} {
		if diff := cmp.Diff(want, e2i.ParseQuery(q)); diff != "" {
			t.Errorf("%q (-want +got):\n%s", q, diff)
		}
	}
}
