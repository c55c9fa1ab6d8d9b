package config_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/troupehq/troupe/evidence"
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

// A bundle's lint lane (seed 004): each lint is an agent of the file, run on every replicate's
// output with a tiny timeout. What cannot run is refused at its line, under its field: an
// agent not declared, the bundle itself or an agent holding it (a cycle, as for members), a
// lint given twice, a timeout that is zero or that the bundle's own timeout always cuts off
// first.
func TestBundleLintErrors(t *testing.T) {
	const head = "version: 1\nagents:\n  j: {kind: builtin}\n  tidy: {kind: builtin}\n  b:\n    kind: bundle\n    bundle:\n      agent: j\n      replicates: 3\n"
	tests := []struct {
		name   string
		fields string // lines of the bundle block after replicates, from line 10; then more agents
		want   []string
	}{
		{"ok", "      lints: [{agent: tidy}, {agent: j, timeout: 250ms}]\n", nil},
		{"none", "      lints: []\n", nil},
		{"unknown agent", "      lints: [{agent: tidi}]\n", []string{
			`t.yaml:10:23: agents.b.bundle.lints[0].agent: unknown agent "tidi" (did you mean "tidy"?)`,
		}},
		{"no agent", "      lints: [{timeout: 1s}]\n", []string{
			`t.yaml:10:15: agents.b.bundle.lints[0]: missing required field "agent"`,
		}},
		{"shorthand", "      lints: [tidy]\n", []string{
			`t.yaml:10:15: agents.b.bundle.lints[0]: got string, want object`,
		}},
		{"unknown field", "      lints: [{agent: tidy, budget: 1s}]\n", []string{
			`t.yaml:10:29: agents.b.bundle.lints[0].budget: unknown field "budget"; known fields: agent, timeout`,
		}},
		{"the bundle itself", "      lints: [{agent: b}]\n", []string{
			`t.yaml:6:5: agents.b: bundle agent "b" contains itself: b → b`,
		}},
		{"an agent holding the bundle", "      lints: [{agent: seq}]\n  seq: {kind: sequential, sequential: {agents: [tidy, b]}}\n", []string{
			`t.yaml:6:5: agents.b: bundle agent "b" contains itself: b → seq → b`,
		}},
		{"twice", "      lints:\n        - {agent: tidy}\n        - {agent: j}\n        - {agent: tidy, timeout: 2s}\n", []string{
			`t.yaml:13:19: agents.b.bundle.lints[2].agent: tidy is lints[0] already (line 11): a lint runs once on each replicate, its findings named after its agent`,
		}},
		{"timeout zero", "      lints: [{agent: tidy, timeout: 0s}]\n", []string{
			"t.yaml:10:38: agents.b.bundle.lints[0].timeout: a lint's timeout is more than 0s (absent: " + evidence.DefaultLintTimeout.String() + ")",
		}},
		{"timeout negative", "      lints: [{agent: tidy, timeout: -1s}]\n", []string{
			`t.yaml:10:38: agents.b.bundle.lints[0].timeout: "-1s" is negative: a duration here is positive, such as 30s`,
		}},
		{"timeout not a duration", "      lints: [{agent: tidy, timeout: 5}]\n", []string{
			`t.yaml:10:38: agents.b.bundle.lints[0].timeout: 5 is not a duration: a duration has a unit, such as 5s`,
		}},
		{"timeout past Go's durations", "      lints: [{agent: tidy, timeout: 2562048h}]\n", []string{
			`t.yaml:10:38: agents.b.bundle.lints[0].timeout: "2562048h" is too long: a duration is at most 2562047h`,
		}},
		{"timeout past the bundle's default", "      lints: [{agent: tidy, timeout: 11m}]\n", []string{
			`t.yaml:10:38: agents.b.bundle.lints[0].timeout: timeout 11m is longer than the bundle's, 10m when b has no timeout and the budget no default_timeout, as here, which cuts off every lint first: the lint lane runs with tiny budgets; shorten timeout`,
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

// A lint is cut off when its bundle is ready, and the bundle by its own timeout (the bundle
// agent's, else the budget's default_timeout, else evidence.DefaultBudgetTimeout): a lint
// timeout up to that is accepted, a longer one, which would never be reached, is an error.
func TestBundleLintTimeoutWithinTheBundles(t *testing.T) {
	const bundle = "    bundle: {agent: j, replicates: 2, lints: [{agent: j, timeout: %s}]}\n"
	for _, tt := range []struct {
		name, src string // src's %s is the lint's timeout
		ok, over  time.Duration
	}{
		{"the default", "version: 1\nagents:\n  j: {kind: builtin}\n  b:\n    kind: bundle\n" + bundle,
			evidence.DefaultBudgetTimeout, evidence.DefaultBudgetTimeout + time.Millisecond},
		{"the bundle's", "version: 1\nagents:\n  j: {kind: builtin}\n  b:\n    kind: bundle\n    timeout: 30s\n" + bundle,
			30 * time.Second, 31 * time.Second},
		{"the budget's default_timeout", "version: 1\nbudget: {default_timeout: 2s}\nagents:\n  j: {kind: builtin}\n  b:\n    kind: bundle\n" + bundle,
			2 * time.Second, 2001 * time.Millisecond},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if errs := parseErrs(t, fmt.Sprintf(tt.src, tt.ok)); errs != nil {
				t.Errorf("lint timeout %s: %v", tt.ok, errs)
			}
			if errs := parseErrs(t, fmt.Sprintf(tt.src, tt.over)); len(errs) != 1 || !strings.Contains(errs[0], "which cuts off every lint first") {
				t.Errorf("lint timeout %s: %v, want one problem", tt.over, errs)
			}
		})
	}
}
