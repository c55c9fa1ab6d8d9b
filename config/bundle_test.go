package config_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Every bundle field evidence.New would refuse is refused by Load first, at its line and under
// its name: a file that validates builds, and a bad value is never reported by evidence's
// message at the agent.
func TestBundleFieldErrors(t *testing.T) {
	const head = "version: 1\nagents:\n  j: {kind: builtin}\n  b:\n    kind: bundle\n    bundle:\n      agent: j\n      replicates: 3\n"
	tests := []struct {
		name   string
		fields string // lines of the bundle block after replicates, from line 9
		want   []string
	}{
		{"every field", "      task: t\n      model: m\n      schema_version: v1\n      seeds: [-1, 0, 9223372036854775807]\n      epsilon: 1\n" +
			"      stop: {confidence: 1, after: 1h, valid: 3}\n      max_tokens: 1\n      budget: {tokens: 0, cost_dollars: 0}\n" +
			"      limits: {max_fields: 0, max_diffs: 0, max_bytes: 0}\n      diff_encode: false\n      keep_raw: true\n" +
			"      redact: {patterns: [\"a+\"], fields: [\"**.ssn\", \"*.x\"], no_defaults: true, replacement: \"\"}\n", nil},
		{"epsilon zero", "      epsilon: 0\n", []string{
			"t.yaml:9:16: agents.b.bundle.epsilon: 0 is too small: want more than 0",
		}},
		{"epsilon above one", "      epsilon: 1.5\n", []string{
			"t.yaml:9:16: agents.b.bundle.epsilon: 1.5 is too large: want at most 1",
		}},
		{"seeds repeated", "      seeds: [11, 23, 11]\n", []string{
			"t.yaml:9:23: agents.b.bundle.seeds[2]: seed 11 is seeds[0] already: replicates need distinct seeds, or they are not independent samples",
		}},
		{"seeds empty", "      seeds: []\n", []string{
			"t.yaml:9:14: agents.b.bundle.seeds: the list has 0 items; want at least 1 item",
		}},
		{"seed not whole", "      seeds: [1.5]\n", []string{
			"t.yaml:9:15: agents.b.bundle.seeds[0]: got number, want integer; 1.5 is not a whole number",
		}},
		{"quorum above replicates", "      stop: {valid: 4}\n", []string{
			"t.yaml:9:21: agents.b.bundle.stop.valid: valid 4 is more than replicates 3",
		}},
		{"quorum under two", "      stop: {valid: 1}\n", []string{
			"t.yaml:9:21: agents.b.bundle.stop.valid: 1 is too small: want 2 or more",
		}},
		{"quorum twice", "      min_replicates: 2\n      stop: {valid: 2}\n", []string{
			"t.yaml:9:23: agents.b.bundle.min_replicates: min_replicates is stop.valid under its first name: give one or the other",
		}},
		{"min_replicates above replicates", "      min_replicates: 4\n", []string{
			"t.yaml:9:23: agents.b.bundle.min_replicates: min_replicates 4 is more than replicates 3",
		}},
		{"confidence above one", "      stop: {confidence: 1.01}\n", []string{
			"t.yaml:9:26: agents.b.bundle.stop.confidence: 1.01 is too large: want at most 1",
		}},
		{"stop after negative", "      stop: {after: -1s}\n", []string{
			`t.yaml:9:21: agents.b.bundle.stop.after: "-1s" is negative: a duration here is positive, such as 30s`,
		}},
		{"max_tokens negative", "      max_tokens: -1\n", []string{
			"t.yaml:9:19: agents.b.bundle.max_tokens: -1 is too small: want 0 or more",
		}},
		{"budget negative", "      budget: {tokens: -1, cost_dollars: -0.5}\n", []string{
			"t.yaml:9:24: agents.b.bundle.budget.tokens: -1 is too small: want 0 or more",
			"t.yaml:9:42: agents.b.bundle.budget.cost_dollars: -0.5 is too small: want 0 or more",
		}},
		{"budget infinite", "      budget: {cost_dollars: .inf}\n", []string{
			"t.yaml:9:30: agents.b.bundle.budget.cost_dollars: infinity and NaN are not numbers a configuration can hold",
		}},
		{"limits negative", "      limits: {max_fields: -1, max_diffs: -2, max_bytes: -3}\n", []string{
			"t.yaml:9:28: agents.b.bundle.limits.max_fields: -1 is too small: want 0 or more",
			"t.yaml:9:43: agents.b.bundle.limits.max_diffs: -2 is too small: want 0 or more",
			"t.yaml:9:58: agents.b.bundle.limits.max_bytes: -3 is too small: want 0 or more",
		}},
		{"redact pattern", "      redact:\n        patterns: [ok, \"(a\", \"x*\"]\n", []string{
			"t.yaml:10:24: agents.b.bundle.redact.patterns[1]: not a regular expression (RE2 syntax): missing closing ): `(a`",
			"t.yaml:10:30: agents.b.bundle.redact.patterns[2]: the pattern matches the empty string, so it would put the replacement between every two characters",
		}},
		{"redact field", "      redact:\n        fields: [a.b, \"a..b\", \"**\", \"a.**.b\"]\n", []string{
			"t.yaml:10:23: agents.b.bundle.redact.fields[1]: segment 2 of \"a..b\" is invalid: a path is member names separated by \".\", * for any one, and ** only as the first of several (**.password)",
			"t.yaml:10:31: agents.b.bundle.redact.fields[2]: segment 1 of \"**\" is invalid: a path is member names separated by \".\", * for any one, and ** only as the first of several (**.password)",
			"t.yaml:10:37: agents.b.bundle.redact.fields[3]: segment 2 of \"a.**.b\" is invalid: a path is member names separated by \".\", * for any one, and ** only as the first of several (**.password)",
		}},
		{"token budget past int64", "      max_tokens: 4611686018427387904\n", []string{
			"t.yaml:9:19: agents.b.bundle.max_tokens: replicates × max_tokens, the bundle's token budget when budget.tokens is absent, is more than 9223372036854775807: lower max_tokens or give budget.tokens",
		}},
		{"token budget given", "      max_tokens: 4611686018427387904\n      budget: {tokens: 1}\n", nil},
		{"unknown field", "      stop: {quorum: 2}\n", []string{
			`t.yaml:9:14: agents.b.bundle.stop.quorum: unknown field "quorum"; known fields: after, confidence, valid`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, parseErrs(t, head+tt.fields)); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}
