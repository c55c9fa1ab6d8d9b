package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/bundle"
	"github.com/troupehq/troupe/config"
	"github.com/troupehq/troupe/evidence"
	"github.com/troupehq/troupe/redact"
)

// builtBundleConfig builds the file yaml, whose one bundle agent is panel, and returns the
// evidence.Config it was built from. The bundle is built as the command builds it, so a file
// that loads and whose config evidence.New refuses fails here.
func builtBundleConfig(t *testing.T, yaml string) evidence.Config {
	t.Helper()
	f, err := config.Parse(filepath.Join(t.TempDir(), "troupe.yaml"), []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	servers := newMCPServers()
	defer servers.Close()
	var got evidence.Config
	fs := factories(servers)
	fs[config.KindBundle] = func(ctx context.Context, b *config.Builder, a *config.Agent) (troupe.Agent, error) {
		cfg, err := bundleConfig(b, a)
		got = cfg
		if err != nil {
			return nil, err
		}
		return buildBundle(ctx, b, a)
	}
	builtins := troupe.NewRegistry()
	builtins.MustAdd("judge", troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		return nil, errors.New("not run")
	}))
	if _, err := config.Build(t.Context(), f, config.Options{Builtins: builtins, Factories: fs}); err != nil {
		t.Fatal(err)
	}
	return got
}

// Every key of a bundle block reaches the evidence.Config its agent is built from; the
// timeouts come from the agents' own (each replicate's from the sub-agent's, the bundle's
// from its own), and the replicates' schema from the sub-agent's output_schema.
func TestBundleKeysReachEvidenceConfig(t *testing.T) {
	const head = "version: 1\nagents:\n  judge: {kind: builtin, timeout: 45s, output_schema: {type: object}}\n  panel:\n    kind: bundle\n    timeout: 5m\n"
	for _, tt := range []struct {
		name, bundle string
		want         evidence.Config
	}{
		{"every key", `    bundle:
      agent: judge
      replicates: 5
      task: feasibility
      model: provider:model@1
      schema_version: feasibility.v1
      seeds: [7, 8]
      epsilon: 0.05
      stop: {confidence: 0.9, after: 30s, valid: 3}
      max_tokens: 2000
      budget: {tokens: 9000, cost_dollars: 0.5}
      limits: {max_fields: 10, max_diffs: 3, max_bytes: 4096}
      diff_encode: true
      redact: {patterns: ["sk_[a-z]+"], fields: ["**.ssn"], no_defaults: true, replacement: "[X]"}
      keep_raw: true
`, evidence.Config{
			Name: "panel", Task: "feasibility", Model: "provider:model@1", SchemaVersion: "feasibility.v1",
			K: 5, Epsilon: 0.05, Seeds: []int64{7, 8},
			Schema:     []byte(`{"type":"object"}`),
			Limits:     bundle.Limits{MaxFields: 10, MaxDiffs: 3, MaxBytes: 4096},
			DiffEncode: true,
			Replicate:  evidence.Ceiling{Tokens: 2000, Timeout: 45 * time.Second},
			Budget:     evidence.Budget{Timeout: 5 * time.Minute, Tokens: 9000, CostDollars: 0.5},
			Stop:       evidence.StopRule{Confidence: 0.9, After: 30 * time.Second, Valid: 3},
			Redact:     redact.Config{Patterns: []string{"sk_[a-z]+"}, Fields: []string{"**.ssn"}, NoDefaults: true, Replacement: "[X]"},
			KeepRaw:    true,
		}},
		// Left out, every field is zero: evidence's defaults, which docs/config.md states.
		{"no keys", "    bundle: {agent: judge, replicates: 3}\n", evidence.Config{
			Name: "panel", K: 3, Schema: []byte(`{"type":"object"}`),
			Replicate: evidence.Ceiling{Timeout: 45 * time.Second},
			Budget:    evidence.Budget{Timeout: 5 * time.Minute},
		}},
		// min_replicates is stop.valid under its first name.
		{"min_replicates", "    bundle: {agent: judge, replicates: 4, min_replicates: 2, stop: {after: 1s}}\n", evidence.Config{
			Name: "panel", K: 4, Schema: []byte(`{"type":"object"}`),
			Replicate: evidence.Ceiling{Timeout: 45 * time.Second},
			Budget:    evidence.Budget{Timeout: 5 * time.Minute},
			Stop:      evidence.StopRule{After: time.Second, Valid: 2},
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := builtBundleConfig(t, head+tt.bundle)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("evidence.Config (-want +got):\n%s", diff)
			}
		})
	}
}

// The extremes the schema accepts build: a file that validates is never refused by
// evidence.New.
func TestBundleBoundsBuild(t *testing.T) {
	builtBundleConfig(t, `version: 1
agents:
  judge: {kind: builtin}
  panel:
    kind: bundle
    bundle:
      agent: judge
      replicates: 32
      seeds: [-9223372036854775808, 0, 9223372036854775807, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29]
      epsilon: 1
      stop: {confidence: 1, after: 2562047h, valid: 32}
      max_tokens: 9223372036854775807
      budget: {tokens: 9223372036854775807, cost_dollars: 1.0e300}
      limits: {max_fields: 9223372036854775807, max_diffs: 9223372036854775807, max_bytes: 9223372036854775807}
      redact: {patterns: ["a+"], fields: ["**.x", "*", "a.*.b"], replacement: ""}
`)
}

// A bad value of a bundle is reported by validate at its line, under its field, not by
// evidence.New's message at the agent.
func TestBundleBadValueAtItsLine(t *testing.T) {
	dir := writeConfig(t, "version: 1\nagents:\n  judge: {kind: builtin}\n  panel:\n    kind: bundle\n    bundle:\n      agent: judge\n      replicates: 3\n      seeds: [11, 11]\n      redact: {patterns: [\"(\"]}\n")
	code, _, stderr := invoke(t, "validate", dir)
	file := filepath.Join(dir, "troupe.yaml")
	for _, want := range []string{
		file + ":9:19: agents.panel.bundle.seeds[1]: seed 11 is seeds[0] already",
		file + ":10:27: agents.panel.bundle.redact.patterns[0]: not a regular expression (RE2 syntax): missing closing ): `(`",
	} {
		if code != exitUsage || !strings.Contains(stderr, want) {
			t.Errorf("exit %d, stderr:\n%s\nwant %q", code, stderr, want)
		}
	}
	if strings.Contains(stderr, "evidence:") {
		t.Errorf("evidence's own message reached the user:\n%s", stderr)
	}
}

// A bundle run from a file carries what the file says: its meta has the file's task, model,
// schema version, seeds and epsilon; the replicates' data is redacted by the file's pattern.
// The sub-agent, a shell script, answers the same whatever its seed, so the first two agree
// and the bundle stops there: meta.seeds is the first two of the file's seeds.
func TestBundleRunFromFile(t *testing.T) {
	dir := t.TempDir()
	script := `cat >/dev/null; printf '{"agent_result":{"score":0.5,"note":"key sk_live"}}'`
	src := "version: 1\nagents:\n  judge:\n    kind: exec\n    exec: {command: [sh, -c, " + strconv.Quote(script) + "]}\n" +
		"  panel:\n    kind: bundle\n    bundle:\n      agent: judge\n      replicates: 3\n      task: feasibility\n" +
		"      model: provider:model@1\n      schema_version: feasibility.v1\n      seeds: [101, 202, 303]\n      epsilon: 0.1\n" +
		"      redact: {patterns: [\"sk_[a-z]+\"], replacement: \"[X]\"}\n"
	file := filepath.Join(dir, "bundle.yaml")
	if err := os.WriteFile(file, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	code, results, _ := runJSON(t, file, "How feasible is it?")
	if code != exitOK || len(results) != 1 {
		t.Fatalf("exit %d, %d results", code, len(results))
	}
	data, err := json.Marshal(results[0].AgentResult)
	if err != nil {
		t.Fatal(err)
	}
	var got bundle.Bundle
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	got.Meta.Usage = bundle.Usage{}
	want := bundle.Meta{Task: "feasibility", K: 2, KMax: 3, Model: "provider:model@1", Seeds: []int64{101, 202},
		SchemaVersion: "feasibility.v1", Epsilon: 0.1, EarlyStop: true}
	if diff := cmp.Diff(want, got.Meta); diff != "" {
		t.Errorf("meta (-want +got):\n%s", diff)
	}
	if len(got.Replicates) != 2 || !strings.Contains(string(data), `"note":"key [X]"`) || strings.Contains(string(data), "sk_live") {
		t.Errorf("replicates %s, want two whose note is redacted to \"key [X]\"", data)
	}
}

// Load accepts the redact patterns and field paths redact.New accepts, and no others: it checks
// them itself (package config does not import redact) and must not drift from it.
func TestBundleRedactAgreesWithRedact(t *testing.T) {
	for _, tt := range []redact.Config{
		{Patterns: []string{"sk_[a-z]+"}}, {Patterns: []string{"("}}, {Patterns: []string{"x*"}}, {Patterns: []string{"^"}},
		{Patterns: []string{`\bid\b`}}, {Patterns: []string{"(?i)Token"}}, {Patterns: []string{"a{2000}"}},
		{Fields: []string{"a"}}, {Fields: []string{"*"}}, {Fields: []string{"**"}}, {Fields: []string{"**.a"}},
		{Fields: []string{"a.**"}}, {Fields: []string{"a..b"}}, {Fields: []string{".a"}}, {Fields: []string{"a."}},
		{Fields: []string{"**.**.a"}}, {Fields: []string{"A.*.B"}}, {Fields: []string{"users.email"}},
	} {
		block := map[string][]string{}
		if tt.Patterns != nil {
			block["patterns"] = tt.Patterns
		}
		if tt.Fields != nil {
			block["fields"] = tt.Fields
		}
		src, err := json.Marshal(block)
		if err != nil {
			t.Fatal(err)
		}
		yaml := "version: 1\nagents:\n  judge: {kind: builtin}\n  panel:\n    kind: bundle\n    bundle: {agent: judge, replicates: 2, redact: " + string(src) + "}\n"
		_, loadErr := config.Parse("t.yaml", []byte(yaml))
		_, newErr := redact.New(tt)
		if (loadErr == nil) != (newErr == nil) {
			t.Errorf("patterns %q, fields %q: Load says %v; redact.New says %v", tt.Patterns, tt.Fields, loadErr, newErr)
		}
	}
}
