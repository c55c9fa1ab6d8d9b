package plan_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/examples/e2i"
	"github.com/troupehq/troupe/plan"
	"github.com/troupehq/troupe/route"
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

// TestCriteriaFromParsedKPIShapes: "kpis" is read as the rule router reads it (route.Rules),
// a single string or a list of strings, alone or agreeing with "entities"."kpis".
func TestCriteriaFromParsedKPIShapes(t *testing.T) {
	tests := []struct {
		name   string
		parsed map[string]any
		want   []string
	}{
		{"single string", map[string]any{"kpis": "NRx"}, []string{"NRx"}},
		{"empty string is no KPI", map[string]any{"kpis": ""}, []string{}},
		{"list decoded from JSON", map[string]any{"kpis": []any{"NRx", "MAU"}}, []string{"NRx", "MAU"}},
		{"[]string", map[string]any{"kpis": []string{"MAU", "NRx"}}, []string{"MAU", "NRx"}},
		{"empty list", map[string]any{"kpis": []any{}}, []string{}},
		{"entities only", map[string]any{"entities": map[string]any{"kpis": []any{"NRx"}}}, []string{"NRx"}},
		{"single string agrees with entities", map[string]any{"kpis": "NRx", "entities": map[string]any{"kpis": []any{"NRx"}}}, []string{"NRx"}},
		{"nil is no KPI", map[string]any{"kpis": nil}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parsed := map[string]any{"intent": "trend"}
			for k, v := range tt.parsed {
				parsed[k] = v
			}
			c, err := plan.CriteriaFromParsed(parsed)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := c.Entities[plan.EntityKPIs]
			if ok != (tt.want != nil) {
				t.Fatalf("kpis entity present = %v, want %v (entities %v)", ok, tt.want != nil, c.Entities)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("kpis (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPlanSingleKPIRoutes: a parsed query naming one KPI as a string routes by it, as the
// same KPI in a list does.
func TestPlanSingleKPIRoutes(t *testing.T) {
	reg := registry(t, nil)
	for _, kpis := range []any{"NBRx", []any{"NBRx"}, []string{"NBRx"}} {
		req := &troupe.Request{Query: "How is NBRx trending?", ParsedQuery: map[string]any{"intent_type": "trend", "kpis": kpis}}
		p, err := e2i.Rules().Plan(req, reg)
		if err != nil {
			t.Fatalf("kpis %#v: %v", kpis, err)
		}
		var reasons []string
		for _, s := range p.Selected {
			if s.Agent == "heterogeneous_optimizer" {
				reasons = s.Reasons
			}
		}
		if !slices.Contains(reasons, "KPI NBRx routes to it") {
			t.Errorf("kpis %#v: heterogeneous_optimizer not selected for NBRx; selected %+v", kpis, p.Selected)
		}
	}
}

// checkRouterReadsAlike checks that the rule router route.Rules reads parsed as
// CriteriaFromParsed did (c or err): it refuses only what the planner refuses, and when the
// planner accepts, it reads the same intent and the same KPIs in the same order.
func checkRouterReadsAlike(t *testing.T, rules *plan.Rules, parsed map[string]any, c *troupe.SelectionCriteria, perr error) {
	t.Helper()
	intents := &route.Rules{Intents: map[string][]string{}, Default: "default"}
	available := []string{"default"}
	for _, r := range rules.Intents {
		if r.Intent != "" && intents.Intents[r.Intent] == nil {
			intents.Intents[r.Intent] = []string{"intent " + r.Intent}
			available = append(available, "intent "+r.Intent)
		}
	}
	// Every KPI maps to an agent that is not available, so "skipped" lists the KPIs read.
	kpis := &route.Rules{KPIMap: map[string][]string{}, Default: "default"}
	for k := range rules.KPIMap {
		kpis.KPIMap[k] = []string{"kpi " + k}
	}
	in := troupe.RouteInput{ParsedQuery: parsed, Available: available}
	byIntent, ierr := intents.Route(context.Background(), in, troupe.Context{})
	byKPI, kerr := kpis.Route(context.Background(), in, troupe.Context{})
	if rerr := errors.Join(ierr, kerr); rerr != nil {
		if perr == nil {
			t.Fatalf("the router refuses %v (%v), the planner accepts it", parsed, rerr)
		}
		return
	}
	if perr != nil {
		return // refused for something the router does not read
	}
	if src := byIntent.Metadata["source"]; src == "intent" && byIntent.Metadata["intent"] != c.IntentType {
		t.Fatalf("%v: the router read intent %v, the planner %q", parsed, byIntent.Metadata["intent"], c.IntentType)
	} else if src != "intent" && rules.Rule(c.IntentType) != nil {
		t.Fatalf("%v: the router did not route by intent %q: %+v", parsed, c.IntentType, byIntent)
	}
	var want, got []string
	for _, k := range c.Entities[plan.EntityKPIs] {
		if kpis.KPIMap[k] != nil && !slices.Contains(want, k) {
			want = append(want, k)
		}
	}
	skipped, _ := byKPI.Metadata["skipped"].([]string)
	for _, a := range skipped {
		got = append(got, strings.TrimPrefix(a, "kpi "))
	}
	if !slices.Equal(want, got) {
		t.Fatalf("%v: the router read KPIs %v, the planner %v", parsed, got, want)
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
		{"intent not a string", map[string]any{"intent": 3.0}, []string{`"intent": want a string, got a number`}},
		{"intents disagree", map[string]any{"intent": "causal", "intent_type": "trend"}, []string{`"intent_type": "trend" conflicts with intent "causal"`}},
		{"complexity not a string", map[string]any{"intent": "causal", "complexity": true}, []string{`"complexity": want a string, got a boolean`}},
		{"complexity unknown", map[string]any{"intent": "causal", "complexity": "hard"}, []string{`"hard" is not one of simple, moderate, complex`}},
		{"flag not a boolean", map[string]any{"intent": "causal", "requires_ml": "yes"}, []string{`"requires_ml": want a boolean, got a string`}},
		{"threshold not a number", map[string]any{"intent": "causal", "confidence_threshold": "high"}, []string{`"confidence_threshold": want a finite number, got a string`}},
		{"threshold out of range", map[string]any{"intent": "causal", "confidence_threshold": 2.0}, []string{`"confidence_threshold": 2 is outside [0, 1]`}},
		{"budget not positive", map[string]any{"intent": "causal", "time_budget_seconds": 0}, []string{`"time_budget_seconds": must be positive`}},
		{"preferred not a list", map[string]any{"intent": "causal", "preferred_agents": "explainer"}, []string{`"preferred_agents": want a list of strings, got a string`}},
		{"excluded holds a number", map[string]any{"intent": "causal", "excluded_agents": []any{"x", 1.0}}, []string{`"excluded_agents": want a list of strings`}},
		{"secondary not a list", map[string]any{"intent": "causal", "secondary_intents": map[string]any{}}, []string{`"secondary_intents": want a list of strings`}},
		{"discovery config not an object", map[string]any{"intent": "causal", "discovery_config": []any{}}, []string{`"discovery_config": want an object`}},
		{"entities not an object", map[string]any{"intent": "causal", "entities": []any{"x"}}, []string{`"entities": want an object of string lists`}},
		{"entity not a list", map[string]any{"intent": "causal", "entities": map[string]any{"kpis": "NRx"}}, []string{`"entities.kpis": want a list of strings`}},
		{"entity conflicts", map[string]any{"intent": "causal", "kpis": []any{"TRx"}, "entities": map[string]any{"kpis": []any{"NRx"}}}, []string{`"entities.kpis": conflicts with top-level "kpis"`}},
		{"kpis a number", map[string]any{"intent": "causal", "kpis": 7.0}, []string{`"kpis": want a string or a list of strings, got a number`}},
		{"kpis holds a number", map[string]any{"intent": "causal", "kpis": []any{"NRx", 7.0}}, []string{`"kpis": want a string or a list of strings, got a list whose item 2 is a number`}},
		{"kpis an object", map[string]any{"intent": "causal", "kpis": map[string]any{"NRx": true}}, []string{`"kpis": want a string or a list of strings, got an object`}},
		{"kpis a boolean", map[string]any{"intent": "causal", "kpis": true}, []string{`"kpis": want a string or a list of strings, got a boolean`}},
		{"single kpi conflicts with entities", map[string]any{"intent": "causal", "kpis": "TRx", "entities": map[string]any{"kpis": []any{"NRx"}}}, []string{`"entities.kpis": conflicts with top-level "kpis"`}},
		{"intent_type not a string", map[string]any{"intent_type": []any{"causal"}}, []string{`"intent_type": want a string, got a list of strings`}},
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
		`{"intent_type":"trend","kpis":"NBRx"}`,
		`{"intent":"causal","kpis":"NRx","entities":{"kpis":["NRx"]}}`,
		`{"intent":"causal","intent_type":"trend","kpis":"","entities":{"kpis":["TRx","MAU"]}}`,
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
		checkRouterReadsAlike(t, rules, parsed, c, err)
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
