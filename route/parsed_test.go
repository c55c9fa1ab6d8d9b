package route_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/plan"
	"github.com/troupehq/troupe/route"
)

// TestRouteParsedQueryShapes: the router reads the parsed query's intent and KPIs in every
// shape plan.CriteriaFromParsed accepts: the intent from "intent" or "intent_type", the KPIs
// from "kpis" (one string or a list) or "entities"."kpis".
func TestRouteParsedQueryShapes(t *testing.T) {
	tests := []struct {
		name   string
		rules  *route.Rules
		parsed map[string]any
		query  string
		target string
		meta   map[string]any // the decision's metadata, but for "candidates" and "skipped"
	}{
		{
			name:   "intent_type",
			parsed: map[string]any{"intent_type": "causal"},
			target: "causal_impact",
			meta:   map[string]any{"source": "intent", "intent": "causal"},
		},
		{
			name:   "intent and intent_type agreeing",
			parsed: map[string]any{"intent": "comparative", "intent_type": "comparative"},
			target: "gap_analyzer",
			meta:   map[string]any{"source": "intent", "intent": "comparative"},
		},
		{
			name:   "nil intent with intent_type",
			parsed: map[string]any{"intent": nil, "intent_type": "causal"},
			target: "causal_impact",
			meta:   map[string]any{"source": "intent", "intent": "causal"},
		},
		{
			name:   "single KPI string",
			parsed: map[string]any{"intent_type": "forecast", "kpis": "MAU"},
			target: "gap_analyzer",
			meta:   map[string]any{"source": "kpi", "kpi": "MAU"},
		},
		{
			name:   "KPIs in entities",
			parsed: map[string]any{"entities": map[string]any{"kpis": []any{"data_freshness"}, "brands": []any{"Kisqali"}}},
			target: "health_score",
			meta:   map[string]any{"source": "kpi", "kpi": "data_freshness"},
		},
		{
			name:   "KPIs in entities as map[string][]string",
			parsed: map[string]any{"entities": map[string][]string{"kpis": {"MAU"}}},
			target: "gap_analyzer",
			meta:   map[string]any{"source": "kpi", "kpi": "MAU"},
		},
		{
			name:   "single KPI string agreeing with entities",
			parsed: map[string]any{"kpis": "MAU", "entities": map[string]any{"kpis": []any{"MAU"}}},
			target: "gap_analyzer",
			meta:   map[string]any{"source": "kpi", "kpi": "MAU"},
		},
		{
			name:   "empty KPI string is no KPI",
			parsed: map[string]any{"kpis": ""},
			target: "explainer",
			meta:   map[string]any{"source": "default"},
		},
		{
			name:   "nil KPIs are no KPIs",
			parsed: map[string]any{"kpis": nil, "intent": nil, "entities": nil},
			target: "explainer",
			meta:   map[string]any{"source": "default"},
		},
		{
			name:   "a trigger decides before the parsed query is read",
			parsed: map[string]any{"intent": 3, "kpis": 7},
			query:  "any drift?",
			target: "drift_monitor",
			meta:   map[string]any{"source": "trigger", "rule": "drift", "rule_index": 0, "pattern": "drift"},
		},
		{
			name:   "a table without intents does not read the intent",
			rules:  &route.Rules{KPIMap: map[string][]string{"MAU": {"gap_analyzer"}}},
			parsed: map[string]any{"intent": 3, "kpis": []any{"MAU"}},
			target: "gap_analyzer",
			meta:   map[string]any{"source": "kpi", "kpi": "MAU"},
		},
		{
			name:   "a table without a KPI map does not read the KPIs",
			rules:  &route.Rules{Default: "explainer"},
			parsed: map[string]any{"intent_type": true, "kpis": 7, "entities": "x"},
			target: "explainer",
			meta:   map[string]any{"source": "default"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rules := tt.rules
			if rules == nil {
				rules = analytics()
			}
			in := troupe.RouteInput{Query: tt.query, ParsedQuery: tt.parsed, Available: allAnalytics}
			got, err := rules.Route(context.Background(), in, troupe.NewContext("trace", ""))
			if err != nil {
				t.Fatalf("Route: %v", err)
			}
			if got.Target != tt.target {
				t.Errorf("target %q, want %q (reason %q)", got.Target, tt.target, got.Reason)
			}
			meta := map[string]any{}
			for k, v := range got.Metadata {
				if k != "candidates" && k != "skipped" && k != "when" {
					meta[k] = v
				}
			}
			if diff := cmp.Diff(tt.meta, meta); diff != "" {
				t.Errorf("metadata (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRouteParsedQueryErrors: a parsed query whose intent or KPIs the router must read but
// cannot is refused with an error naming the key, as plan.CriteriaFromParsed refuses it,
// rather than ignored.
func TestRouteParsedQueryErrors(t *testing.T) {
	tests := []struct {
		name   string
		parsed map[string]any
		want   string
	}{
		{"intent not a string", map[string]any{"intent": 3}, `field "intent": want a string, got a number`},
		{"intent_type not a string", map[string]any{"intent_type": []any{"causal"}}, `field "intent_type": want a string, got a list of strings`},
		{"intents disagree", map[string]any{"intent": "causal", "intent_type": "comparative"}, `field "intent_type": "comparative" conflicts with intent "causal"`},
		{"empty intent disagrees", map[string]any{"intent": "", "intent_type": "causal"}, `field "intent_type": "causal" conflicts with intent ""`},
		{"kpis a number", map[string]any{"kpis": 7.0}, `field "kpis": want a string or a list of strings, got a number`},
		{"kpis holds a number", map[string]any{"kpis": []any{"TRx", 7, "MAU"}}, `field "kpis": want a string or a list of strings, got a list whose item 2 is a number`},
		{"kpis an object", map[string]any{"kpis": map[string]any{"MAU": true}}, `field "kpis": want a string or a list of strings, got an object`},
		{"entities not an object", map[string]any{"entities": []any{"MAU"}}, `field "entities": want an object of string lists, got a list of strings`},
		{"entity KPIs a string", map[string]any{"entities": map[string]any{"kpis": "MAU"}}, `field "entities.kpis": want a list of strings, got a string`},
		{"entity KPIs conflict", map[string]any{"kpis": "NRx", "entities": map[string]any{"kpis": []any{"MAU"}}}, `field "entities.kpis": conflicts with top-level "kpis"`},
		{"bad KPIs refuse a query whose intent routes", map[string]any{"intent": "causal", "kpis": 7}, `field "kpis": want a string or a list of strings, got a number`},
		{"every problem at once", map[string]any{"intent": 1, "kpis": true}, `field "intent": want a string, got a number; troupe: parsed_query: field "kpis": want a string or a list of strings, got a boolean`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := troupe.RouteInput{Query: "hello", ParsedQuery: tt.parsed, Available: allAnalytics}
			got, err := analytics().Route(context.Background(), in, troupe.NewContext("trace", ""))
			if err == nil {
				t.Fatalf("Route = %+v, want an error", got)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "route: parsed query: ") || !strings.Contains(msg, tt.want) {
				t.Errorf("error %q, want it to start with %q and contain %q", msg, "route: parsed query: ", tt.want)
			}
			var ves troupe.ValidationErrors
			if !errors.As(err, &ves) {
				t.Errorf("error %v is not troupe.ValidationErrors", err)
			}
			if errors.Is(err, troupe.ErrUnknownAgent) {
				t.Errorf("error %v wraps troupe.ErrUnknownAgent: the agents are not at fault", err)
			}
			if diff := cmp.Diff(troupe.RoutingDecision{}, got); diff != "" {
				t.Errorf("decision on error (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRouteReadsParsedQueryLikePlanner: for the same parsed query, the router and
// plan.CriteriaFromParsed accept and refuse the same intent and KPI shapes, and read the
// same intent and the same KPIs in the same order.
func TestRouteReadsParsedQueryLikePlanner(t *testing.T) {
	intents := &route.Rules{
		Intents: map[string][]string{"causal": {"via_causal"}, "trend": {"via_trend"}},
		Default: "default",
	}
	// Every KPI maps to an unavailable agent, so the decision's "skipped" lists the KPIs read.
	kpis := &route.Rules{
		KPIMap:  map[string][]string{"NRx": {"via_NRx"}, "MAU": {"via_MAU"}, "TRx": {"via_TRx"}},
		Default: "default",
	}
	available := []string{"via_causal", "via_trend", "default"}

	for _, parsed := range []map[string]any{
		{"intent": "causal"},
		{"intent_type": "causal"},
		{"intent": "trend", "intent_type": "trend"},
		{"intent": "trend", "intent_type": "causal"},
		{"intent": nil, "intent_type": "trend"},
		{"intent": 3.0},
		{"intent_type": true},
		{"intent": "causal", "kpis": "NRx"},
		{"intent": "causal", "kpis": []any{"MAU", "NRx"}},
		{"intent": "causal", "kpis": []string{"TRx"}},
		{"intent": "causal", "kpis": []any{}},
		{"intent": "causal", "kpis": ""},
		{"intent": "causal", "kpis": nil},
		{"intent": "causal", "kpis": 7.0},
		{"intent": "causal", "kpis": []any{"NRx", 7.0}},
		{"intent": "causal", "kpis": map[string]any{}},
		{"intent": "causal", "entities": map[string]any{"kpis": []any{"MAU"}}},
		{"intent": "causal", "entities": map[string][]string{"kpis": {"TRx", "NRx"}}},
		{"intent": "causal", "entities": map[string]any{"kpis": "MAU"}},
		{"intent": "causal", "entities": []any{"MAU"}},
		{"intent": "causal", "kpis": "MAU", "entities": map[string]any{"kpis": []any{"MAU"}}},
		{"intent": "causal", "kpis": "MAU", "entities": map[string]any{"kpis": []any{"NRx"}}},
		{"intent": "causal", "kpis": []any{"MAU"}, "entities": map[string]any{"kpis": []any{}}},
	} {
		c, perr := plan.CriteriaFromParsed(parsed)
		in := troupe.RouteInput{ParsedQuery: parsed, Available: available}
		byIntent, ierr := intents.Route(context.Background(), in, troupe.Context{})
		byKPI, kerr := kpis.Route(context.Background(), in, troupe.Context{})
		rerr := errors.Join(ierr, kerr)
		if (perr == nil) != (rerr == nil) {
			t.Errorf("%v: planner error %v, router error %v", parsed, perr, rerr)
			continue
		}
		if perr != nil {
			continue
		}
		if got := byIntent.Metadata["intent"]; got != c.IntentType {
			t.Errorf("%v: router read intent %v, planner %q", parsed, got, c.IntentType)
		}
		var read []string
		skipped, _ := byKPI.Metadata["skipped"].([]string)
		for _, a := range skipped {
			read = append(read, strings.TrimPrefix(a, "via_"))
		}
		if diff := cmp.Diff(c.Entities[plan.EntityKPIs], read); diff != "" && (len(read) > 0 || len(c.Entities[plan.EntityKPIs]) > 0) {
			t.Errorf("%v: KPIs (-planner +router):\n%s", parsed, diff)
		}
	}
}
