package route_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/route"
)

// analytics is a slice of seed 000's INTENT_ROUTING_RULES and KPI_ROUTING_MAP.
func analytics() *route.Rules {
	return &route.Rules{
		Triggers: []route.Trigger{
			{Name: "drift", Patterns: []string{"drift"}, Target: "drift_monitor", Reason: "Drift question"},
			{Name: "drift_any", Patterns: []string{"drift", "trend"}, Target: "health_score"},
		},
		Intents: map[string][]string{
			"causal":      {"causal_impact"},
			"comparative": {"gap_analyzer", "heterogeneous_optimizer"},
		},
		KPIMap: map[string][]string{
			"NRx":            {"causal_impact", "gap_analyzer"},
			"MAU":            {"gap_analyzer"},
			"data_freshness": {"health_score"},
		},
		Fallbacks:     map[string]string{"causal_impact": "explainer", "gap_analyzer": "explainer"},
		Default:       "explainer",
		DefaultReason: "explainer answers what nothing else claims",
	}
}

var allAnalytics = []string{"causal_impact", "gap_analyzer", "heterogeneous_optimizer", "drift_monitor", "health_score", "explainer"}

func without(names []string, drop ...string) []string {
	var out []string
	for _, n := range names {
		if !strings.Contains(" "+strings.Join(drop, " ")+" ", " "+n+" ") {
			out = append(out, n)
		}
	}
	return out
}

func TestRoute(t *testing.T) {
	ctx := troupe.NewContext("trace-route", "test")
	tests := []struct {
		name  string
		rules *route.Rules
		in    troupe.RouteInput
		want  troupe.RoutingDecision
	}{
		{
			name:  "planned task passes through",
			rules: analytics(),
			in: troupe.RouteInput{
				Task:        troupe.Task{ID: "t1", Agent: "gap_analyzer", Reason: "Identify improvement opportunities"},
				Query:       "why did NRx drift?",
				ParsedQuery: map[string]any{"intent": "causal"},
				Available:   allAnalytics,
			},
			want: troupe.RoutingDecision{
				Target:   "gap_analyzer",
				Reason:   "Identify improvement opportunities",
				Metadata: map[string]any{"source": "task", "task": "t1"},
				Fallback: "explainer",
			},
		},
		{
			name:  "planned task without a reason",
			rules: analytics(),
			in:    troupe.RouteInput{Task: troupe.Task{Agent: "drift_monitor"}, Available: allAnalytics},
			want: troupe.RoutingDecision{
				Target:   "drift_monitor",
				Reason:   "planned",
				Metadata: map[string]any{"source": "task"},
			},
		},
		{
			name:  "planned agent unavailable falls through to triggers",
			rules: analytics(),
			in: troupe.RouteInput{
				Task:      troupe.Task{ID: "t1", Agent: "model_trainer"},
				Query:     "Is the model drifting? Any drift?",
				Available: allAnalytics,
			},
			want: troupe.RoutingDecision{
				Target: "drift_monitor",
				Reason: `Drift question: message matches "drift" (rule drift); skipped unavailable model_trainer`,
				Metadata: map[string]any{
					"source": "trigger", "rule": "drift", "rule_index": 0, "pattern": "drift",
					"skipped": []string{"model_trainer"},
				},
			},
		},
		{
			name:  "trigger target unavailable skips to the next matching trigger",
			rules: analytics(),
			in:    troupe.RouteInput{Query: "DRIFT in match rate", Available: without(allAnalytics, "drift_monitor")},
			want: troupe.RoutingDecision{
				Target: "health_score",
				Reason: `message matches "drift" (rule drift_any); skipped unavailable drift_monitor`,
				Metadata: map[string]any{
					"source": "trigger", "rule": "drift_any", "rule_index": 1, "pattern": "drift",
					"skipped": []string{"drift_monitor"},
				},
			},
		},
		{
			name:  "trigger beats intent",
			rules: analytics(),
			in: troupe.RouteInput{
				Query: "what is the trend", ParsedQuery: map[string]any{"intent": "causal"}, Available: allAnalytics,
			},
			want: troupe.RoutingDecision{
				Target:   "health_score",
				Reason:   `message matches "trend" (rule drift_any)`,
				Metadata: map[string]any{"source": "trigger", "rule": "drift_any", "rule_index": 1, "pattern": "trend"},
			},
		},
		{
			name:  "intent",
			rules: analytics(),
			in: troupe.RouteInput{
				Query:       "What caused the drop in NRx for Kisqali in Midwest?",
				ParsedQuery: map[string]any{"intent": "causal", "kpis": []any{"NRx"}, "brands": []any{"Kisqali"}},
				Available:   allAnalytics,
			},
			want: troupe.RoutingDecision{
				Target:   "causal_impact",
				Reason:   `intent "causal" routes to causal_impact (candidate 1 of 1)`,
				Metadata: map[string]any{"source": "intent", "intent": "causal", "candidates": []string{"causal_impact"}},
				Fallback: "explainer",
			},
		},
		{
			name:  "intent skips an unavailable candidate",
			rules: analytics(),
			in: troupe.RouteInput{
				ParsedQuery: map[string]any{"intent": "comparative"},
				Available:   without(allAnalytics, "gap_analyzer"),
			},
			want: troupe.RoutingDecision{
				Target: "heterogeneous_optimizer",
				Reason: `intent "comparative" routes to heterogeneous_optimizer (candidate 2 of 2); skipped unavailable gap_analyzer`,
				Metadata: map[string]any{
					"source": "intent", "intent": "comparative",
					"candidates": []string{"gap_analyzer", "heterogeneous_optimizer"},
					"skipped":    []string{"gap_analyzer"},
				},
			},
		},
		{
			name:  "KPIs in query order, unmapped and unavailable ones skipped",
			rules: analytics(),
			in: troupe.RouteInput{
				ParsedQuery: map[string]any{"intent": "forecast", "kpis": []any{"TRx", "MAU", "data_freshness"}},
				Available:   without(allAnalytics, "gap_analyzer"),
			},
			want: troupe.RoutingDecision{
				Target: "health_score",
				Reason: `KPI "data_freshness" routes to health_score (candidate 1 of 1); skipped unavailable gap_analyzer`,
				Metadata: map[string]any{
					"source": "kpi", "kpi": "data_freshness", "candidates": []string{"health_score"},
					"skipped": []string{"gap_analyzer"},
				},
			},
		},
		{
			name:  "KPIs as []string",
			rules: analytics(),
			in:    troupe.RouteInput{ParsedQuery: map[string]any{"kpis": []string{"NRx"}}, Available: allAnalytics},
			want: troupe.RoutingDecision{
				Target:   "causal_impact",
				Reason:   `KPI "NRx" routes to causal_impact (candidate 1 of 2)`,
				Metadata: map[string]any{"source": "kpi", "kpi": "NRx", "candidates": []string{"causal_impact", "gap_analyzer"}},
				Fallback: "explainer",
			},
		},
		{
			name:  "KPI as a single string, fallback unavailable",
			rules: analytics(),
			in:    troupe.RouteInput{ParsedQuery: map[string]any{"kpis": "MAU"}, Available: []string{"gap_analyzer"}},
			want: troupe.RoutingDecision{
				Target:   "gap_analyzer",
				Reason:   `KPI "MAU" routes to gap_analyzer (candidate 1 of 1)`,
				Metadata: map[string]any{"source": "kpi", "kpi": "MAU", "candidates": []string{"gap_analyzer"}},
			},
		},
		{
			name:  "default with its reason; an intent without candidates falls through",
			rules: analytics(),
			in:    troupe.RouteInput{Query: "hello", ParsedQuery: map[string]any{"intent": "forecast"}, Available: allAnalytics},
			want: troupe.RoutingDecision{
				Target:   "explainer",
				Reason:   "no rule matched; explainer answers what nothing else claims",
				Metadata: map[string]any{"source": "default"},
			},
		},
		{
			name:  "default without a reason",
			rules: &route.Rules{Default: "a"},
			in:    troupe.RouteInput{Available: []string{"a"}},
			want: troupe.RoutingDecision{
				Target:   "a",
				Reason:   "no rule matched; a is the default",
				Metadata: map[string]any{"source": "default"},
			},
		},
		{
			name:  "nil rules still pass planned tasks",
			rules: nil,
			in:    troupe.RouteInput{Task: troupe.Task{Agent: "a", Reason: "chosen"}, Available: []string{"a"}},
			want:  troupe.RoutingDecision{Target: "a", Reason: "chosen", Metadata: map[string]any{"source": "task"}},
		},
		{
			name: "trigger without name, patterns or conditions always fires",
			rules: &route.Rules{Triggers: []route.Trigger{
				{Name: "never", Patterns: []string{"zzz"}, Target: "b"},
				{Target: "a"},
			}},
			in: troupe.RouteInput{Query: "anything", Available: []string{"a", "b"}},
			want: troupe.RoutingDecision{
				Target:   "a",
				Reason:   "rule always matches (rule #1)",
				Metadata: map[string]any{"source": "trigger", "rule": "", "rule_index": 1},
			},
		},
		{
			name: "state and pattern together",
			rules: &route.Rules{Triggers: []route.Trigger{{
				Name: "r", Patterns: []string{"go on"}, When: map[string]any{"step": 2, "mode": "exam"}, Target: "a",
			}}},
			in: troupe.RouteInput{
				Query:     "please go   ON",
				State:     map[string]any{"step": 2.0, "mode": "exam", "other": []any{1}},
				Available: []string{"a"},
			},
			want: troupe.RoutingDecision{
				Target: "a",
				Reason: `message matches "go on" and state has mode="exam", step=2 (rule r)`,
				Metadata: map[string]any{
					"source": "trigger", "rule": "r", "rule_index": 0, "pattern": "go on",
					"when": []string{"mode", "step"},
				},
			},
		},
		{
			name:  "fallback never equals the target",
			rules: &route.Rules{Default: "a", Fallbacks: map[string]string{"a": "a"}},
			in:    troupe.RouteInput{Available: []string{"a"}},
			want:  troupe.RoutingDecision{Target: "a", Reason: "no rule matched; a is the default", Metadata: map[string]any{"source": "default"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.rules.Route(context.Background(), tt.in, ctx)
			if err != nil {
				t.Fatalf("Route: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Route decision (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRouteNoCandidate(t *testing.T) {
	tests := []struct {
		name  string
		rules *route.Rules
		in    troupe.RouteInput
		want  []string // substrings of the error
	}{
		{
			name:  "nothing matches and no default",
			rules: &route.Rules{Triggers: []route.Trigger{{Name: "q", Patterns: []string{"quiz"}, Target: "quiz"}}},
			in:    troupe.RouteInput{Query: "hello", Available: []string{"quiz"}},
			want:  []string{"route: no rule matched and there is no default agent", "available: quiz"},
		},
		{
			name:  "every candidate unavailable",
			rules: analytics(),
			in: troupe.RouteInput{
				Task:        troupe.Task{Agent: "model_trainer"},
				Query:       "drift",
				ParsedQuery: map[string]any{"intent": "comparative", "kpis": []any{"MAU"}},
				Available:   []string{"web_search"},
			},
			want: []string{
				"route: no available agent: tried planned agent model_trainer; rule drift → drift_monitor; " +
					"rule drift_any → health_score; intent comparative → gap_analyzer, heterogeneous_optimizer; " +
					"KPI MAU → gap_analyzer; default explainer (available: web_search)",
			},
		},
		{
			name:  "nothing available",
			rules: &route.Rules{Default: "tutor"},
			in:    troupe.RouteInput{Query: "hi"},
			want:  []string{"tried default tutor (available: none)"},
		},
		{
			name:  "nil rules",
			rules: nil,
			in:    troupe.RouteInput{Query: "hi", Available: []string{"a"}},
			want:  []string{"no rule matched"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.rules.Route(context.Background(), tt.in, troupe.NewContext("trace", ""))
			if err == nil {
				t.Fatalf("Route = %+v, want an error", got)
			}
			if !errors.Is(err, troupe.ErrUnknownAgent) {
				t.Errorf("Route error %v does not wrap troupe.ErrUnknownAgent", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Route error %q does not contain %q", err, w)
				}
			}
			if diff := cmp.Diff(troupe.RoutingDecision{}, got); diff != "" {
				t.Errorf("Route decision on error (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPatterns covers how trigger patterns meet messages: whole words, any case, any
// apostrophe, any white space, any Unicode-equivalent spelling.
func TestPatterns(t *testing.T) {
	tests := []struct {
		pattern, message string
		want             bool
	}{
		{"why", "Why is the sky blue?", true},
		{"why", "anyway", false},
		{"why", "somewhy", false},
		{"why", "whys and wherefores", false},
		{"why", "but... why?!", true},
		{"why", "why_not", false},
		{"why", "«why»", true},
		{"what's next", "What's next?", true},
		{"what's next", "what’s NEXT", true},
		{"what’s next", "what's next", true},
		{"what's next", "whatʼs next", true},
		{"what's next", "whats next", false},
		{"what's next", "what's nextly", false},
		{"teach me", "Teach me fractions", true},
		{"teach me", "teach meteorology", false},
		{"teach me", "teach\tme\n now", true},
		{"  quiz   me ", "QUIZ ME", true},
		{"i want to learn", "I want to learn fractions", true},
		{"explain", "explained", false},
		{"explain", "re-explain", true},
		{"ÉTÉ", "un été chaud", true},
		{"straße", "STRAẞE", true},
		{"k", "\u212a", true}, // Kelvin sign folds to k
		{"σ", "Σ", true},
		{"next?", "what's next?now", true},
		{"", "anything", false},
		{"   ", "anything", false},
		{"x", "", false},
		{"\xff", "a\xffb", true}, // invalid UTF-8 reads as U+FFFD, a symbol, so no word boundary is needed
		{"ſ", "S", true},         // long s folds with s

		// Canonically equivalent spellings match each other (NFC)...
		{"café", "un cafe\u0301 noir", true},
		{"cafe\u0301", "un café noir", true},
		{"ÉTÉ", "un e\u0301te\u0301 chaud", true},
		{"ṩ", "s\u0323\u0307", true},                         // marks in either order
		{"ṩ", "s\u0307\u0323", true},                         // are canonically reordered
		{"한국", "\u1112\u1161\u11ab\u1100\u116e\u11a8", true}, // conjoining jamo compose to syllables
		{"cafe", "un cafe\u0301 noir", false},                // the accent is part of the word
		{"cafe", "un café noir", false},
		// ...and so do compatibility forms (NFKC).
		{"quiz me", "ｑｕｉｚ　ｍｅ!", true},
		{"ｑｕｉｚ ｍｅ", "Quiz me", true},
		{"teach me", "TEACH ME", true},
		{"find", "ﬁnd the area", true},
		{"teach me", "teach\u00a0me", true},
		{"x2", "solve x² = 4", true},
	}
	for _, tt := range tests {
		t.Run(tt.pattern+"|"+tt.message, func(t *testing.T) {
			r := &route.Rules{
				Triggers: []route.Trigger{{Name: "p", Patterns: []string{tt.pattern}, Target: "hit"}},
				Default:  "miss",
			}
			d, err := r.Route(context.Background(), troupe.RouteInput{Query: tt.message, Available: []string{"hit", "miss"}}, troupe.Context{})
			if err != nil {
				t.Fatal(err)
			}
			if got := d.Target == "hit"; got != tt.want {
				t.Errorf("pattern %q on message %q: matched = %v, want %v (%s)", tt.pattern, tt.message, got, tt.want, d.Reason)
			}
		})
	}
}

type level string

type wrapped struct{ N int }

// TestWhen covers how trigger conditions meet session state: JSON equality.
func TestWhen(t *testing.T) {
	tests := []struct {
		name  string
		when  any
		state map[string]any
		want  bool
	}{
		{"bool", true, map[string]any{"k": true}, true},
		{"bool differs", true, map[string]any{"k": false}, false},
		{"bool is not a string", true, map[string]any{"k": "true"}, false},
		{"string", "quiz", map[string]any{"k": "quiz"}, true},
		{"string case matters", "quiz", map[string]any{"k": "Quiz"}, false},
		{"named string type", "beginner", map[string]any{"k": level("beginner")}, true},
		{"int and float", 3, map[string]any{"k": 3.0}, true},
		{"int and int64", 3, map[string]any{"k": int64(3)}, true},
		{"uint8 and float", uint8(3), map[string]any{"k": 3.0}, true},
		{"json.Number", 0.5, map[string]any{"k": json.Number("5e-1")}, true},
		{"float32 as written", float32(0.1), map[string]any{"k": 0.1}, true},
		{"numbers differ", 3, map[string]any{"k": 3.5}, false},
		{"big integers exact", int64(1<<62 + 1), map[string]any{"k": int64(1 << 62)}, false},
		{"number is not a string", 3, map[string]any{"k": "3"}, false},
		{"NaN equals nothing", nanValue(), map[string]any{"k": nanValue()}, false},
		{"null", nil, map[string]any{"k": nil}, true},
		{"absent is not null", nil, map[string]any{}, false},
		{"absent", true, nil, false},
		{"nested", map[string]any{"a": []int{1, 2}}, map[string]any{"k": map[string]any{"a": []any{1.0, 2.0}}}, true},
		{"nested differs", map[string]any{"a": []int{1, 2}}, map[string]any{"k": map[string]any{"a": []any{2.0, 1.0}}}, false},
		{"extra key differs", map[string]any{"a": 1}, map[string]any{"k": map[string]any{"a": 1, "b": 2}}, false},
		{"struct through JSON", wrapped{N: 1}, map[string]any{"k": map[string]any{"N": 1}}, true},
		{"func is not JSON", func() {}, map[string]any{"k": nil}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &route.Rules{
				Triggers: []route.Trigger{{Name: "w", When: map[string]any{"k": tt.when}, Target: "hit"}},
				Default:  "miss",
			}
			d, err := r.Route(context.Background(), troupe.RouteInput{State: tt.state, Available: []string{"hit", "miss"}}, troupe.Context{})
			if err != nil {
				t.Fatal(err)
			}
			if got := d.Target == "hit"; got != tt.want {
				t.Errorf("when %#v on state %#v: matched = %v, want %v", tt.when, tt.state, got, tt.want)
			}
		})
	}
}

func nanValue() float64 {
	zero := 0.0
	return zero / zero
}

// TestSeed001Example is seed 001's make_routing_decision example, with the table that says
// what the seed's decision says: "search web" goes to web_search, rag_query backs it up.
func TestSeed001Example(t *testing.T) {
	rules := &route.Rules{
		Triggers: []route.Trigger{{
			Name:     "web_search",
			Patterns: []string{"search web", "search the web"},
			Target:   "web_search",
			Reason:   "Task contains 'search web'",
		}},
		Fallbacks: map[string]string{"web_search": "rag_query"},
		Default:   "llm_generate",
	}
	got, err := rules.Route(context.Background(), troupe.RouteInput{
		Task:      troupe.Task{ID: "t1", Reason: "search web for Python docs"},
		Query:     "search web for Python docs",
		Available: []string{"web_search", "rag_query", "llm_generate"},
	}, troupe.NewContext("xyz", "research"))
	if err != nil {
		t.Fatal(err)
	}
	want := troupe.RoutingDecision{
		Target:   "web_search",
		Reason:   `Task contains 'search web': message matches "search web" (rule web_search)`,
		Metadata: map[string]any{"source": "trigger", "rule": "web_search", "rule_index": 0, "pattern": "search web"},
		Fallback: "rag_query",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("seed 001 example (-want +got):\n%s", diff)
	}
}
