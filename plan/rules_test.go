package plan_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/examples/e2i"
	"github.com/troupehq/troupe/plan"
)

func TestSeed000RulesAreValid(t *testing.T) {
	if err := e2i.Rules().Validate(registry(t, nil)); err != nil {
		t.Fatal(err)
	}
	if err := (&plan.Rules{}).Validate(nil); err != nil {
		t.Fatalf("zero rules: %v", err)
	}
}

func TestRulesValidate(t *testing.T) {
	reg := troupe.NewRegistry().
		MustAdd("causal_impact", troupe.AgentFunc(noop)).
		MustAdd("gap_analyzer", troupe.AgentFunc(noop)).
		MustAdd("explainer", troupe.AgentFunc(noop))
	rules := &plan.Rules{
		Intents: []plan.IntentRule{
			{Intent: "causal", Primary: []string{"causal_impact"}, Optional: []string{"gap_analyzer", "explainer", "ghost", "gap_analyzer"}},
			{Intent: "causal", Primary: []string{"causal_impact"}},
			{Primary: []string{"explainer"}},
			{Intent: "trend"},
		},
		KPIMap:          map[string][]string{"TRx": {"gap_analyzer", "phantom"}, "NRx": {"spectre"}},
		FlagAgents:      map[string][]string{plan.FlagRequiresML: {"trainer"}, "requires_magic": {"explainer"}},
		ExclusivePairs:  [][2]string{{"causal_impact", "gap_analyzer"}, {"explainer", "explainer"}, {"wraith", ""}, {"gap_analyzer", "causal_impact"}},
		CompatiblePairs: [][2]string{{"gap_analyzer", "causal_impact"}},
		Synthesizers:    []string{"explainer", "narrator"},
		MaxConcurrency:  -1,
	}
	err := rules.Validate(reg)
	var es troupe.ValidationErrors
	if !errors.As(err, &es) {
		t.Fatalf("error %v is not a troupe.ValidationErrors", err)
	}
	type problem struct{ Field, Problem string }
	var got []problem
	for _, e := range es {
		if e.Object != "rules" {
			t.Errorf("%v: object %q, want rules", e, e.Object)
		}
		got = append(got, problem{e.Field, e.Problem})
	}
	want := []problem{
		{"intents[causal].optional_agents[2]", `unknown agent "ghost"`},
		{"intents[causal].optional_agents[3]", `agent "gap_analyzer" listed twice in the rule`},
		{"intents[1].intent_type", "duplicate intent"},
		{"intents[2].intent_type", "required"},
		{"intents[trend].primary_agents", "required"},
		{"kpi_map[NRx][0]", `unknown agent "spectre"`},
		{"kpi_map[TRx][1]", `unknown agent "phantom"`},
		{"flag_agents[requires_magic]", `"requires_magic" is not one of requires_ml, requires_causal_inference, requires_experimentation`},
		{"flag_agents[requires_ml][0]", `unknown agent "trainer"`},
		{"exclusive_pairs[1]", `pairs agent "explainer" with itself`},
		{"exclusive_pairs[2][0]", `unknown agent "wraith"`},
		{"exclusive_pairs[2][1]", "empty agent name"},
		{"exclusive_pairs[3]", `reverses exclusive_pairs[0]: "gap_analyzer" and "causal_impact" cannot each run first`},
		{"compatible_pairs[0]", "also listed in exclusive_pairs"},
		{"synthesizers[1]", `unknown agent "narrator"`},
		{"max_concurrency", "must not be negative"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
	if !errors.Is(err, troupe.ErrUnknownAgent) {
		t.Errorf("error does not match troupe.ErrUnknownAgent")
	}

	// Without a catalog only the structure is checked.
	if err := e2i.Rules().Validate(nil); err != nil {
		t.Errorf("structure of seed 000's rules: %v", err)
	}
}

// A rule repeating an intent is named by its index, not by the intent, which names the first.
func TestRulesValidateDuplicateIntent(t *testing.T) {
	rules := &plan.Rules{Intents: []plan.IntentRule{
		{Intent: "causal", Primary: []string{"a"}},
		{Intent: "trend", Primary: []string{"b"}},
		{Intent: "causal"},
		{Intent: "causal", Primary: []string{"a", "a"}},
	}}
	err := rules.Validate(nil)
	var es troupe.ValidationErrors
	if !errors.As(err, &es) {
		t.Fatalf("error %v is not a troupe.ValidationErrors", err)
	}
	var got []string
	for _, e := range es {
		got = append(got, e.Field+": "+e.Problem)
	}
	want := []string{
		"intents[2].intent_type: duplicate intent",
		"intents[2].primary_agents: required",
		"intents[3].intent_type: duplicate intent",
		`intents[3].primary_agents[1]: agent "a" listed twice in the rule`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
}

// Exclusive pairs order their agents, so pairs that order agents round a cycle, however many,
// are as contradictory as one pair listed in both orders.
func TestRulesValidateExclusivePairCycles(t *testing.T) {
	tests := []struct {
		name  string
		pairs [][2]string
		want  []string // field: problem
	}{
		{
			name:  "a chain",
			pairs: [][2]string{{"a", "b"}, {"b", "c"}, {"a", "c"}, {"c", "d"}},
		},
		{
			name:  "three pairs",
			pairs: [][2]string{{"a", "b"}, {"b", "c"}, {"c", "a"}},
			want:  []string{`exclusive_pairs[2]: closes a cycle with exclusive_pairs[0] and exclusive_pairs[1]: "c" before "a" before "b" before "c", so none of them can run first`},
		},
		{
			name:  "four pairs out of order",
			pairs: [][2]string{{"c", "d"}, {"a", "b"}, {"d", "a"}, {"b", "c"}},
			want:  []string{`exclusive_pairs[3]: closes a cycle with exclusive_pairs[0], exclusive_pairs[2] and exclusive_pairs[1]: "b" before "c" before "d" before "a" before "b", so none of them can run first`},
		},
		{
			name:  "each cycle once, by its shortest chain",
			pairs: [][2]string{{"a", "b"}, {"b", "c"}, {"c", "d"}, {"b", "d"}, {"d", "a"}, {"c", "a"}},
			want: []string{
				`exclusive_pairs[4]: closes a cycle with exclusive_pairs[0] and exclusive_pairs[3]: "d" before "a" before "b" before "d", so none of them can run first`,
				`exclusive_pairs[5]: closes a cycle with exclusive_pairs[0] and exclusive_pairs[1]: "c" before "a" before "b" before "c", so none of them can run first`,
			},
		},
		{
			name:  "a pair in both orders is reported as such",
			pairs: [][2]string{{"a", "b"}, {"b", "c"}, {"b", "a"}},
			want:  []string{`exclusive_pairs[2]: reverses exclusive_pairs[0]: "b" and "a" cannot each run first`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := (&plan.Rules{ExclusivePairs: tt.pairs}).Validate(nil)
			var got []string
			if err != nil {
				var es troupe.ValidationErrors
				if !errors.As(err, &es) {
					t.Fatalf("error %v is not a troupe.ValidationErrors", err)
				}
				for _, e := range es {
					got = append(got, e.Field+": "+e.Problem)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRulesJSON(t *testing.T) {
	data, err := json.Marshal(e2i.Rules())
	if err != nil {
		t.Fatal(err)
	}
	var back plan.Rules
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(e2i.Rules(), &back); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	var rule plan.IntentRule
	seed := `{"intent_type":"causal","primary_agents":["causal_impact"],"optional_agents":["explainer"],"sequence_required":true}`
	if err := json.Unmarshal([]byte(seed), &rule); err != nil {
		t.Fatal(err)
	}
	want := plan.IntentRule{Intent: "causal", Primary: []string{"causal_impact"}, Optional: []string{"explainer"}, SequenceRequired: true}
	if diff := cmp.Diff(want, rule); diff != "" {
		t.Errorf("seed 000's IntentRoutingRule JSON (-want +got):\n%s", diff)
	}
}
