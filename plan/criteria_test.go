package plan_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/examples/e2i"
	"github.com/troupehq/troupe/plan"
)

func TestCriteriaFromParsed(t *testing.T) {
	tests := []struct {
		name   string
		parsed map[string]any
		want   *troupe.SelectionCriteria
	}{
		{
			name: "seed 000 sequential example",
			parsed: map[string]any{
				"intent":      "causal",
				"brands":      []any{"Kisqali"},
				"kpis":        []any{"NRx"},
				"regions":     []any{"Midwest"},
				"time_period": "recent",
			},
			want: &troupe.SelectionCriteria{
				IntentType: "causal",
				Entities:   map[string][]string{"brands": {"Kisqali"}, "kpis": {"NRx"}, "regions": {"Midwest"}},
			},
		},
		{
			name: "every field",
			parsed: map[string]any{
				"intent_type":               "what_if",
				"complexity":                "complex",
				"requires_ml":               true,
				"requires_causal_inference": true,
				"requires_experimentation":  false,
				"enable_discovery":          true,
				"discovery_config":          map[string]any{"algorithms": []any{"ges", "pc"}},
				"confidence_threshold":      0.5,
				"time_budget_seconds":       30,
				"preferred_agents":          []string{"explainer"},
				"excluded_agents":           []any{"causal_impact"},
				"secondary_intents":         []any{"trend"},
				"brands":                    []string{"Kisqali"},
				"entities":                  map[string]any{"regions": []any{"Midwest"}, "brands": []any{"Kisqali"}},
				"empty":                     []any{},
				"mixed":                     []any{"a", 1.0},
				"count":                     3.0,
				"nothing":                   nil,
			},
			want: &troupe.SelectionCriteria{
				IntentType:              "what_if",
				Complexity:              "complex",
				RequiresML:              true,
				RequiresCausalInference: true,
				EnableDiscovery:         true,
				DiscoveryConfig:         map[string]any{"algorithms": []any{"ges", "pc"}},
				ConfidenceThreshold:     ptr(0.5),
				TimeBudgetSeconds:       ptr(30),
				PreferredAgents:         []string{"explainer"},
				ExcludedAgents:          []string{"causal_impact"},
				SecondaryIntents:        []string{"trend"},
				Entities:                map[string][]string{"brands": {"Kisqali"}, "regions": {"Midwest"}, "empty": {}},
			},
		},
		{
			name:   "intent and intent_type may agree",
			parsed: map[string]any{"intent": "trend", "intent_type": "trend"},
			want:   &troupe.SelectionCriteria{IntentType: "trend"},
		},
		{
			name:   "json numbers",
			parsed: map[string]any{"intent": "trend", "confidence_threshold": json.Number("0.25")},
			want:   &troupe.SelectionCriteria{IntentType: "trend", ConfidenceThreshold: ptr(0.25)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := plan.CriteriaFromParsed(tt.parsed)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("criteria (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCriteriaFromParsedCopies(t *testing.T) {
	brands := []string{"Kisqali"}
	c, err := plan.CriteriaFromParsed(map[string]any{"intent": "trend", "brands": brands})
	if err != nil {
		t.Fatal(err)
	}
	brands[0] = "changed"
	if got := c.Entities["brands"][0]; got != "Kisqali" {
		t.Errorf("entity shares memory with the parsed query: %q", got)
	}
}

func TestCriteriaFromParsedErrors(t *testing.T) {
	tests := []struct {
		name   string
		parsed map[string]any
		wants  []string
	}{
		{"no intent", map[string]any{"brands": []any{"x"}}, []string{`"intent_type": required`}},
		{"nil query", nil, []string{`"intent_type": required`}},
		{"intent not a string", map[string]any{"intent": 3.0}, []string{`"intent": want a string, got float64`}},
		{"intents disagree", map[string]any{"intent": "causal", "intent_type": "trend"}, []string{`"intent_type": "trend" conflicts with intent "causal"`}},
		{"complexity not a string", map[string]any{"intent": "causal", "complexity": true}, []string{`"complexity": want a string, got bool`}},
		{"complexity unknown", map[string]any{"intent": "causal", "complexity": "hard"}, []string{`"hard" is not one of simple, moderate, complex`}},
		{"flag not a boolean", map[string]any{"intent": "causal", "requires_ml": "yes"}, []string{`"requires_ml": want a boolean, got string`}},
		{"threshold not a number", map[string]any{"intent": "causal", "confidence_threshold": "high"}, []string{`"confidence_threshold": want a finite number, got string`}},
		{"threshold out of range", map[string]any{"intent": "causal", "confidence_threshold": 2.0}, []string{`"confidence_threshold": 2 is outside [0, 1]`}},
		{"budget not positive", map[string]any{"intent": "causal", "time_budget_seconds": 0}, []string{`"time_budget_seconds": must be positive`}},
		{"preferred not a list", map[string]any{"intent": "causal", "preferred_agents": "explainer"}, []string{`"preferred_agents": want a list of strings, got string`}},
		{"excluded holds a number", map[string]any{"intent": "causal", "excluded_agents": []any{"x", 1.0}}, []string{`"excluded_agents": want a list of strings`}},
		{"secondary not a list", map[string]any{"intent": "causal", "secondary_intents": map[string]any{}}, []string{`"secondary_intents": want a list of strings`}},
		{"discovery config not an object", map[string]any{"intent": "causal", "discovery_config": []any{}}, []string{`"discovery_config": want an object`}},
		{"entities not an object", map[string]any{"intent": "causal", "entities": []any{"x"}}, []string{`"entities": want an object of string lists`}},
		{"entity not a list", map[string]any{"intent": "causal", "entities": map[string]any{"kpis": "NRx"}}, []string{`"entities.kpis": want a list of strings`}},
		{"entity conflicts", map[string]any{"intent": "causal", "kpis": []any{"TRx"}, "entities": map[string]any{"kpis": []any{"NRx"}}}, []string{`"entities.kpis": conflicts with top-level "kpis"`}},
		{
			"every problem is reported",
			map[string]any{"intent": 1.0, "requires_ml": 1.0, "complexity": 1.0},
			[]string{`"complexity"`, `"intent"`, `"requires_ml"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := plan.CriteriaFromParsed(tt.parsed)
			if err == nil {
				t.Fatalf("CriteriaFromParsed = %+v, want an error", c)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "plan: ") {
				t.Errorf("error %q does not start with the package name", msg)
			}
			for _, w := range tt.wants {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not contain %q", msg, w)
				}
			}
		})
	}
}

// FuzzCriteriaFromParsed feeds parsed queries decoded from JSON to the parser and, when they
// parse, to the seed 000 planner: neither may panic, and what they return must be consistent.
func FuzzCriteriaFromParsed(f *testing.F) {
	for _, s := range []string{
		`{"intent":"causal","brands":["Kisqali"],"kpis":["NRx"],"regions":["Midwest"],"time_period":"recent"}`,
		`{"intent":"trend","secondary_intents":["exploratory"],"brands":["Kisqali"]}`,
		`{"intent":"causal","complexity":"complex"}`,
		`{"intent":"ml_training","requires_ml":true,"confidence_threshold":0.3}`,
		`{"intent_type":"monitoring","entities":{"kpis":["match_rate"]},"excluded_agents":["explainer"]}`,
		`{"intent":"forecast","preferred_agents":["explainer","health_score"],"time_budget_seconds":12.5}`,
		`{"intent":1,"kpis":[1,"x"],"discovery_config":{"alpha":0.05}}`,
		`{}`,
	} {
		f.Add([]byte(s))
	}
	rules := e2i.Rules()
	reg := registry(f, nil)
	f.Fuzz(func(t *testing.T, data []byte) {
		var parsed map[string]any
		if json.Unmarshal(data, &parsed) != nil {
			return
		}
		c, err := plan.CriteriaFromParsed(parsed)
		if err != nil {
			if c != nil {
				t.Fatalf("criteria %+v with error %v", c, err)
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("parsed criteria are invalid: %v", err)
		}
		again, err := plan.CriteriaFromParsed(parsed)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(c, again); diff != "" {
			t.Fatalf("parsing twice differs (-first +second):\n%s", diff)
		}
		p, err := rules.Plan(&troupe.Request{ParsedQuery: parsed}, reg)
		if err != nil {
			return
		}
		if _, err := json.Marshal(p); err != nil {
			t.Fatalf("plan does not encode: %v", err)
		}
		checkPlan(t, rules, reg, p)
	})
}
