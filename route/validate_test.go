package route_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/route"
)

func registry(t *testing.T, names ...string) *troupe.Registry {
	t.Helper()
	reg := troupe.NewRegistry()
	noop := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) { return nil, nil })
	for _, n := range names {
		if err := reg.Add(n, noop); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

func TestValidate(t *testing.T) {
	type problem struct {
		Field, Problem string
		Unknown        bool // matches troupe.ErrUnknownAgent
	}
	tests := []struct {
		name    string
		rules   *route.Rules
		catalog troupe.Catalog
		want    []problem
	}{
		{name: "nil rules", rules: nil, catalog: registry(t)},
		{name: "zero rules", rules: &route.Rules{}, catalog: registry(t)},
		{name: "analytics with its agents", rules: analytics(), catalog: registry(t, allAnalytics...)},
		{
			name:    "analytics without gap_analyzer or explainer",
			rules:   analytics(),
			catalog: registry(t, "causal_impact", "heterogeneous_optimizer", "drift_monitor", "health_score"),
			want: []problem{
				{"intents.comparative[0]", `unknown agent "gap_analyzer"`, true},
				{"kpi_map.MAU[0]", `unknown agent "gap_analyzer"`, true},
				{"kpi_map.NRx[1]", `unknown agent "gap_analyzer"`, true},
				{"fallbacks.causal_impact", `unknown agent "explainer"`, true},
				{"fallbacks", `key: unknown agent "gap_analyzer"`, true},
				{"fallbacks.gap_analyzer", `unknown agent "explainer"`, true},
				{"default", `unknown agent "explainer"`, true},
			},
		},
		{
			name: "every kind of problem",
			rules: &route.Rules{
				Triggers: []route.Trigger{
					{Name: "a", Patterns: []string{"ok", " \t"}, Target: "ghost"},
					{Name: "a", When: map[string]any{"f": func() {}, "ok": 1}},
				},
				Intents:   map[string][]string{"": {"known"}, "empty": {}, "x": {"known", ""}},
				KPIMap:    map[string][]string{"k": {"ghost"}},
				Fallbacks: map[string]string{"known": "known", "ghost": "known", "other": ""},
				Default:   "ghost",
			},
			catalog: registry(t, "known", "other"),
			want: []problem{
				{"triggers[0].patterns[1]", "blank pattern never matches", false},
				{"triggers[0].target", `unknown agent "ghost"`, true},
				{"triggers[1].name", `"a" is also the name of triggers[0]`, false},
				{"triggers[1].when.f", "", false}, // the problem prints a func's address
				{"triggers[1].target", "required", false},
				{"intents", "empty key", false},
				{"intents.empty", "no candidate agents", false},
				{"intents.x[1]", "required", false},
				{"kpi_map.k[0]", `unknown agent "ghost"`, true},
				{"fallbacks", `key: unknown agent "ghost"`, true},
				{"fallbacks.known", "an agent cannot be its own fallback", false},
				{"fallbacks.other", "required", false},
				{"default", `unknown agent "ghost"`, true},
			},
		},
		{
			name:    "nil catalog checks only the shape",
			rules:   &route.Rules{Triggers: []route.Trigger{{Name: "t", Target: "anyone"}}, Default: "whoever"},
			catalog: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.rules.Validate(tt.catalog)
			var got []problem
			if err != nil {
				var es troupe.ValidationErrors
				if !errors.As(err, &es) {
					t.Fatalf("Validate error %v is not troupe.ValidationErrors", err)
				}
				for _, e := range es {
					if e.Object != "rules" {
						t.Errorf("problem %v: object %q, want rules", e, e.Object)
					}
					p := problem{e.Field, e.Problem, errors.Is(e, troupe.ErrUnknownAgent)}
					if e.Field == "triggers[1].when.f" {
						p.Problem = ""
					}
					got = append(got, p)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Validate problems (-want +got):\n%s", diff)
			}
			wantUnknown := false
			for _, p := range tt.want {
				wantUnknown = wantUnknown || p.Unknown
			}
			if errors.Is(err, troupe.ErrUnknownAgent) != wantUnknown {
				t.Errorf("errors.Is(%v, ErrUnknownAgent) = %v, want %v", err, !wantUnknown, wantUnknown)
			}
		})
	}
}
