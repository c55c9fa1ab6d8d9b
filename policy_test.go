package troupe_test

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/troupehq/troupe"
)

// policyView is what a policy means once defaults are applied.
type policyView struct {
	Warning         troupe.WarningAction
	Error           troupe.ErrorAction
	Timeout         troupe.TimeoutAction
	FallbackEnabled bool
	PartialAllowed  bool
	MinSuccess      float64
	Attempts        int
}

func viewOf(p *troupe.ErrorPolicy) policyView {
	return policyView{p.Warning(), p.Error(), p.Timeout(), p.FallbackEnabled(), p.PartialAllowed(), p.MinSuccess(), p.Retry.Attempts()}
}

// seed000Defaults is seed 000's ErrorPropagationPolicy with every field left to its default.
var seed000Defaults = policyView{
	Warning: troupe.WarnContinue, Error: troupe.FailFast, Timeout: troupe.TimeoutSkip,
	FallbackEnabled: true, PartialAllowed: true, MinSuccess: 0.5, Attempts: 3,
}

func TestErrorPolicyDefaults(t *testing.T) {
	if troupe.WarnContinue != "continue" || troupe.FailFast != "fail_fast" || troupe.TimeoutSkip != "skip_agent" {
		t.Fatalf("default actions are not seed 000's names: %q %q %q", troupe.WarnContinue, troupe.FailFast, troupe.TimeoutSkip)
	}
	tests := []struct {
		name string
		json string // "" means the Go zero value
		want policyView
	}{
		{"zero value", "", seed000Defaults},
		{"empty object", `{}`, seed000Defaults},
		{"nulls", `{"on_warning":null,"enable_fallback":null,"allow_partial_results":null,"min_success_rate":null}`, seed000Defaults},
		{
			name: "explicit false and zero override",
			json: `{"enable_fallback":false,"allow_partial_results":false,"min_success_rate":0}`,
			want: policyView{troupe.WarnContinue, troupe.FailFast, troupe.TimeoutSkip, false, false, 0, 3},
		},
		{
			name: "explicit true and one",
			json: `{"enable_fallback":true,"allow_partial_results":true,"min_success_rate":1}`,
			want: policyView{troupe.WarnContinue, troupe.FailFast, troupe.TimeoutSkip, true, true, 1, 3},
		},
		{
			name: "every action named",
			json: `{"on_warning":"log_only","on_error":"fallback","on_timeout":"use_partial","retry":{"max_attempts":5}}`,
			want: policyView{troupe.WarnLogOnly, troupe.Fallback, troupe.TimeoutUsePartial, true, true, 0.5, 5},
		},
		{
			name: "seed 001's retry strategy",
			json: `{"on_error":"retry","on_timeout":"fail_fast"}`,
			want: policyView{troupe.WarnContinue, troupe.Retry, troupe.TimeoutFailFast, true, true, 0.5, 3},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p troupe.ErrorPolicy
			if tt.json != "" {
				if err := json.Unmarshal([]byte(tt.json), &p); err != nil {
					t.Fatal(err)
				}
			}
			if diff := cmp.Diff(tt.want, viewOf(&p)); diff != "" {
				t.Errorf("policy (-want +got):\n%s", diff)
			}
			if err := p.Validate(seedRegistry(t)); err != nil {
				t.Errorf("Validate: %v", err)
			}
			// Explicit values must survive a round trip, or a stored policy changes meaning.
			b, err := json.Marshal(&p)
			if err != nil {
				t.Fatal(err)
			}
			var back troupe.ErrorPolicy
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, viewOf(&back)); diff != "" {
				t.Errorf("after a round trip through %s (-want +got):\n%s", b, diff)
			}
		})
	}
}

func TestErrorPolicyValidate(t *testing.T) {
	reg := seedRegistry(t)
	tests := []struct {
		name     string
		p        troupe.ErrorPolicy
		agents   troupe.AgentSet
		want     []string
		sentinel error
	}{
		{"zero value", troupe.ErrorPolicy{}, reg, nil, nil},
		{"fully specified", troupe.ErrorPolicy{
			OnWarning: troupe.WarnLogOnly, OnError: troupe.Fallback, OnTimeout: troupe.TimeoutUsePartial,
			EnableFallback: troupe.Ptr(true), FallbackAgents: map[string][]string{"causal_impact": {"explainer", "gap_analyzer"}},
			AllowPartialResults: troupe.Ptr(false), MinSuccessRate: troupe.Ptr(1.0),
			Retry: troupe.RetryPolicy{MaxAttempts: 4, Initial: time.Second, Max: time.Minute, Multiplier: 2, Jitter: 1},
		}, reg, nil, nil},
		{"bad on_warning", troupe.ErrorPolicy{OnWarning: "ignore"}, reg, []string{"on_warning"}, nil},
		{"bad on_error", troupe.ErrorPolicy{OnError: "panic"}, reg, []string{"on_error"}, nil},
		{"on_timeout takes no retry", troupe.ErrorPolicy{OnTimeout: "retry"}, reg, []string{"on_timeout"}, nil},
		{"min_success_rate below 0", troupe.ErrorPolicy{MinSuccessRate: troupe.Ptr(-0.1)}, reg, []string{"min_success_rate"}, nil},
		{"min_success_rate above 1", troupe.ErrorPolicy{MinSuccessRate: troupe.Ptr(1.5)}, reg, []string{"min_success_rate"}, nil},
		{"negative attempts", troupe.ErrorPolicy{Retry: troupe.RetryPolicy{MaxAttempts: -1}}, reg, []string{"retry.max_attempts"}, nil},
		{"negative backoff", troupe.ErrorPolicy{Retry: troupe.RetryPolicy{Initial: -time.Second}}, reg, []string{"retry"}, nil},
		{"negative multiplier", troupe.ErrorPolicy{Retry: troupe.RetryPolicy{Multiplier: -2}}, reg, []string{"retry.multiplier"}, nil},
		// JSON cannot carry a NaN; a policy built in Go can, and policy.Backoff cannot use it.
		{"NaN multiplier", troupe.ErrorPolicy{Retry: troupe.RetryPolicy{Multiplier: math.NaN()}}, reg, []string{"retry.multiplier"}, nil},
		{"jitter above 1", troupe.ErrorPolicy{Retry: troupe.RetryPolicy{Jitter: 1.5}}, reg, []string{"retry.jitter"}, nil},
		{
			"unknown fallback agents, with their path",
			troupe.ErrorPolicy{FallbackAgents: map[string][]string{
				"gap_analyzer":  {"explainer", "oracle"},
				"causal_impact": {"ghost"},
			}},
			reg, []string{"fallback_agents.causal_impact[0]", "fallback_agents.gap_analyzer[1]"}, troupe.ErrUnknownAgent,
		},
		{"nil agent set skips fallback agents", troupe.ErrorPolicy{FallbackAgents: map[string][]string{"a": {"ghost"}}}, nil, nil, nil},
		{
			"every problem",
			troupe.ErrorPolicy{OnWarning: "x", OnError: "y", OnTimeout: "z", MinSuccessRate: troupe.Ptr(2.0), FallbackAgents: map[string][]string{"a": {"ghost"}}},
			reg, []string{"on_warning", "on_error", "on_timeout", "min_success_rate", "fallback_agents", "fallback_agents.a[0]"}, nil,
		},
		{
			"unknown fallback key",
			troupe.ErrorPolicy{FallbackAgents: map[string][]string{"explaner": {"explainer"}, "causal_impact": {"explainer"}}},
			reg, []string{"fallback_agents"}, troupe.ErrUnknownAgent,
		},
		{"nil agent set skips fallback keys", troupe.ErrorPolicy{FallbackAgents: map[string][]string{"explaner": {"explainer"}}}, nil, nil, nil},
		{
			"an agent as its own fallback",
			troupe.ErrorPolicy{FallbackAgents: map[string][]string{"explainer": {"gap_analyzer", "explainer"}}},
			reg, []string{"fallback_agents.explainer[1]"}, nil,
		},
		{"an agent as its own fallback, with a nil agent set", troupe.ErrorPolicy{FallbackAgents: map[string][]string{"a": {"a"}}}, nil, []string{"fallback_agents.a[0]"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.p.Validate(tt.agents)
			checkProblems(t, err, tt.want, tt.sentinel)
			var ve *troupe.ValidationError
			if err != nil && errors.As(err, &ve) && ve.Object != "error_policy" {
				t.Errorf("Object = %q, want error_policy", ve.Object)
			}
		})
	}
	t.Run("problems come in a stable order", func(t *testing.T) {
		p := troupe.ErrorPolicy{FallbackAgents: map[string][]string{"z": {"g1"}, "a": {"g2"}, "m": {"g3"}}}
		first := p.Validate(reg).Error()
		for range 20 {
			if got := p.Validate(reg).Error(); got != first {
				t.Fatalf("Validate is not deterministic:\n%s\n%s", first, got)
			}
		}
	})
}

func TestErrorPolicyJSONFieldNames(t *testing.T) {
	p := troupe.ErrorPolicy{
		OnWarning: troupe.WarnLogOnly, OnError: troupe.Continue, OnTimeout: troupe.TimeoutFailFast,
		EnableFallback: troupe.Ptr(false), FallbackAgents: map[string][]string{"a": {"b"}},
		AllowPartialResults: troupe.Ptr(false), MinSuccessRate: troupe.Ptr(0.0),
	}
	// seed 000's ErrorPropagationPolicy fields, plus troupe's retry shaping.
	checkJSONKeys(t, p, []string{
		"on_warning", "on_error", "on_timeout", "enable_fallback", "fallback_agents",
		"allow_partial_results", "min_success_rate", "retry",
	})
}

// A fallback_agents key is the name of the agent whose failure it covers: one naming no agent
// (a typo) never applies, and neither does an agent listed as its own fallback, so Validate
// names both, keys in sorted order, in the words route.Rules and the config loader use, and a
// request's policy is checked the same way.
func TestErrorPolicyValidateFallbackKeys(t *testing.T) {
	reg := troupe.NewRegistry().MustAdd("explainer", troupe.AgentFunc(nil))
	p := troupe.ErrorPolicy{FallbackAgents: map[string][]string{
		"zeta":      {"explainer"},
		"explaner":  {"explainer"},
		"explainer": {"ghost", "explainer"},
	}}
	type problem struct{ Field, Problem string }
	want := []problem{
		{"fallback_agents.explainer[0]", "unknown agent ghost"},
		{"fallback_agents.explainer[1]", "an agent cannot be its own fallback"},
		{"fallback_agents", `key: unknown agent "explaner"`},
		{"fallback_agents", `key: unknown agent "zeta"`},
	}
	for range 20 { // map order must not show
		var ves troupe.ValidationErrors
		err := p.Validate(reg)
		if !errors.As(err, &ves) {
			t.Fatalf("Validate = %v, want ValidationErrors", err)
		}
		var got []problem
		for _, e := range ves {
			got = append(got, problem{e.Field, e.Problem})
			if unknown := strings.Contains(e.Problem, "unknown agent"); errors.Is(e, troupe.ErrUnknownAgent) != unknown {
				t.Errorf("%v: errors.Is(ErrUnknownAgent) = %v, want %v", e, !unknown, unknown)
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("problems (-want +got):\n%s", diff)
		}
	}

	req := troupe.Request{Query: "q", Policy: &troupe.ErrorPolicy{FallbackAgents: map[string][]string{"explaner": {"explainer"}}}}
	var ves troupe.ValidationErrors
	if err := req.Validate(reg); !errors.As(err, &ves) || len(ves) != 1 ||
		ves[0].Field != "policy.fallback_agents" || ves[0].Problem != `key: unknown agent "explaner"` {
		t.Errorf("Request.Validate = %v, want one problem at policy.fallback_agents naming the key", err)
	}
}
