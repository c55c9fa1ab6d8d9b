package config_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/config"
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
