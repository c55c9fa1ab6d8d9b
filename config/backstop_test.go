package config_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// What only the planner's, router's or error policy's own validation finds is reported, like
// every other problem, at the line of the field at fault and by the file's path to it, not at
// the section in the runtime's words.
func TestParseRuntimeRulesAtTheirField(t *testing.T) {
	const agents = "version: 1\nagents: {a: {kind: builtin}, b: {kind: builtin}}\n"
	tests := []struct {
		name string
		src  string
		want []string
	}{
		{"agent twice in an intent rule", agents + "routing:\n  intents:\n    - intent: causal\n      primary: [a]\n      optional: [b, a]\n", []string{
			`t.yaml:7:21: routing.intents[0].optional[1]: agent "a" listed twice in the rule`,
		}},
		{"agent twice in the second rule", agents + "routing:\n  intents:\n    - {intent: trend, primary: [b]}\n    - intent: causal\n      primary: [a, a]\n", []string{
			`t.yaml:7:20: routing.intents[1].primary[1]: agent "a" listed twice in the rule`,
		}},
		{"pair both exclusive and compatible", agents + "routing:\n  intents: [{intent: x, primary: [a]}]\n  exclusive_pairs: [[a, b]]\n  compatible_pairs:\n    - [b, a]\n", []string{
			`t.yaml:7:7: routing.compatible_pairs[0]: also listed in exclusive_pairs`,
		}},
		{"blank pattern", agents + "coordinator:\n  triggers:\n    - name: t\n      patterns: [hello, \"  \"]\n      target: a\n", []string{
			`t.yaml:6:25: coordinator.triggers[0].patterns[1]: blank pattern never matches`,
		}},
		{"intent without candidates", agents + "coordinator:\n  default: a\n  intents:\n    causal: []\n", []string{
			`t.yaml:6:13: coordinator.intents.causal: no candidate agents`,
		}},
		{"a key the runtime's path cannot name", agents + "coordinator:\n  default: a\n  intents:\n    \"causal.v2\": []\n", []string{
			// At the nearest field the path names, with the rest of it said.
			`t.yaml:6:5: coordinator.intents: intents.causal.v2: no candidate agents`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, parseErrs(t, tt.src)); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}
