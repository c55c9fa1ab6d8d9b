package config_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/config"
	"github.com/troupehq/troupe/policy"
)

// Fallback agents are used only under on_error fallback: a file that declares them and says no
// on_error gets fallback, and one that says another on_error is told the fallbacks would be
// ignored, at on_error's place.
func TestFallbacksNeedOnErrorFallback(t *testing.T) {
	const agents = "version: 1\nagents: {a: {kind: builtin}, b: {kind: builtin}}\n"
	for _, tt := range []struct {
		name, src string
		want      troupe.ErrorAction
	}{
		{"fallback_agents", agents + "error_policy:\n  fallback_agents: {a: [b]}\n", troupe.Fallback},
		{"coordinator fallbacks", agents + "coordinator:\n  default: a\n  fallbacks: {a: b}\n", troupe.Fallback},
		{"explicit", agents + "error_policy:\n  on_error: fallback\n  fallback_agents: {a: [b]}\n", troupe.Fallback},
		{"no fallbacks", agents + "error_policy:\n  min_success_rate: 1\n", ""},
	} {
		f, err := config.Parse("t.yaml", []byte(tt.src))
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if p := f.Policy(); p.OnError != tt.want {
			t.Errorf("%s: on_error %q, want %q", tt.name, p.OnError, tt.want)
		}
	}
	src := agents + "error_policy:\n  on_error: continue\n  fallback_agents: {a: [b]}\ncoordinator:\n  default: a\n  fallbacks: {a: b}\n"
	want := []string{`t.yaml:4:13: error_policy.on_error: on_error continue never uses the fallback agents this file declares (error_policy.fallback_agents and coordinator.fallbacks): they are used only under on_error fallback, which retries recoverable failures first; write on_error: fallback, or remove the fallbacks`}
	if diff := cmp.Diff(want, parseErrs(t, src)); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
}

// A fallback agent runs only in place of an agent that failed. One named as its own fallback
// never runs as one (and, with no routing or coordinator, is then not planned at all), and
// agents that are each other's fallbacks, with no routing or coordinator to plan one of them,
// are none of them planned: the file is told so rather than running less than it declares.
func TestFallbacksThatWouldNeverRun(t *testing.T) {
	const agents = "version: 1\nagents: {a: {kind: builtin}, b: {kind: builtin}, c: {kind: builtin}}\n"
	const routing = "routing:\n  intents: [{intent: x, primary: [a]}, {intent: y, primary: [b]}]\n"
	for _, tt := range []struct {
		name, src string
		want      []string
	}{
		{"own fallback", agents + "error_policy:\n  fallback_agents: {a: [b, a]}\n", []string{
			`t.yaml:4:28: error_policy.fallback_agents.a[1]: an agent cannot be its own fallback`,
		}},
		{"own fallback, routed", agents + routing + "error_policy:\n  fallback_agents:\n    a: [a]\n", []string{
			`t.yaml:7:9: error_policy.fallback_agents.a[0]: an agent cannot be its own fallback`,
		}},
		{"each other's fallbacks", agents + "error_policy:\n  fallback_agents:\n    a: [c]\n    b: [a]\n    c: [b]\n", []string{
			`t.yaml:5:5: error_policy.fallback_agents.a: fallback_agents has a cycle, so none of its agents is planned (a fallback agent runs only in place of one that failed, and there is no routing or coordinator to plan one of them): a → c → b → a`,
		}},
		{"each other's fallbacks, routed", agents + routing + "error_policy:\n  fallback_agents: {a: [b], b: [a]}\n", nil},
		{"each other's fallbacks, coordinated", agents + "coordinator: {default: a}\nerror_policy:\n  fallback_agents: {a: [b], b: [a]}\n", nil},
		{"a chain", agents + "error_policy:\n  fallback_agents: {a: [b], b: [c]}\n", nil},
		// An agent another runs after is planned although it is a fallback (TopLevel), so the
		// cycle through it leaves no agent unplanned: a, then c, with b standing in for a.
		{"each other's fallbacks, one run after another", "version: 1\nagents: {a: {kind: builtin}, b: {kind: builtin}, c: {kind: builtin, after: [a]}}\n" +
			"error_policy:\n  fallback_agents: {a: [b], b: [a]}\n", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, parseErrs(t, tt.src)); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

// Every wait between attempts is capped at retry.max_backoff, policy.DefaultMaxBackoff when it
// is absent: an initial_backoff up to that is accepted, a longer one, which would never be
// waited, is an error.
func TestRetryBackoffWithinTheDefaultMax(t *testing.T) {
	src := func(d time.Duration) string {
		return fmt.Sprintf("version: 1\nagents: {a: {kind: builtin}}\nerror_policy:\n  retry: {initial_backoff: %s}\n", d)
	}
	if _, err := config.Parse("t.yaml", []byte(src(policy.DefaultMaxBackoff))); err != nil {
		t.Errorf("initial_backoff of policy.DefaultMaxBackoff: %v", err)
	}
	if errs := parseErrs(t, src(policy.DefaultMaxBackoff+time.Millisecond)); len(errs) != 1 {
		t.Errorf("initial_backoff a millisecond longer than policy.DefaultMaxBackoff: %v, want one problem", errs)
	}
	for _, max := range []string{"max_backoff: 1m", "initial_backoff: 30s, max_backoff: 1m"} {
		s := fmt.Sprintf("version: 1\nagents: {a: {kind: builtin}}\nerror_policy:\n  retry: {%s}\n", max)
		if _, err := config.Parse("t.yaml", []byte(s)); err != nil {
			t.Errorf("%s: %v", max, err)
		}
	}
}
