package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
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
		cfg, err := bundleConfig(ctx, b, a)
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
	// A lint that says what it was given: the replicate and its data.
	builtins.MustAdd("echo_lint", troupe.AgentFunc(func(_ context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		data, err := json.Marshal(d.UserContext["lint_target"])
		if err != nil {
			return nil, err
		}
		return &troupe.Result{AgentResult: map[string]any{"findings": []any{fmt.Sprintf("%s on %v: %s", d.TargetAgent, d.UserContext["replicate"], data)}}}, nil
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

// A bundle's lints are the file's agents, built as the command builds them, each wrapped by
// evidence.LintAgent under its agent's name with the lint's timeout (absent: 0, evidence's
// default): the check of each dispatches its agent with the replicate's data.
func TestBundleLintsReachEvidenceConfig(t *testing.T) {
	got := builtBundleConfig(t, `version: 1
agents:
  judge: {kind: builtin}
  tidy: {kind: builtin, builtin: {name: echo_lint}}
  strict: {kind: builtin, builtin: {name: echo_lint}}
  panel:
    kind: bundle
    bundle:
      agent: judge
      replicates: 3
      lints: [{agent: tidy}, {agent: strict, timeout: 250ms}]
`)
	type lint struct {
		Name     string
		Timeout  time.Duration
		Findings []string
	}
	var lints []lint
	for _, l := range got.Lints {
		if l.Check == nil {
			t.Fatalf("lint %s has no check", l.Name)
		}
		lints = append(lints, lint{l.Name, l.Timeout, l.Check(t.Context(), "r2", map[string]any{"score": 0.5})})
	}
	want := []lint{
		{"tidy", 0, []string{`tidy on r2: {"score":0.5}`}},
		{"strict", 250 * time.Millisecond, []string{`strict on r2: {"score":0.5}`}},
	}
	if diff := cmp.Diff(want, lints); diff != "" {
		t.Errorf("lints (-want +got):\n%s", diff)
	}
}

// A bundle run from a file runs its lints on the replicates' output, beside the evaluation:
// the bundle's result carries their findings as warnings, and the lint agent is not a step of
// the plan of its own (one result, the bundle's). The lint (a shell script) finds, in the data
// of the replicate it is given, a verdict without a rationale. The lane never delays the
// bundle, so that the finding on r1 is there to see, r2's replicate answers only once r1's
// lint has ended: the lint writes its pid to ./linted, and r2 waits for that process to be
// gone, then 200ms more for execagent and the lane to take in what it said (no event marks
// that: nothing waits for a lint). A finding on r2 races the bundle being ready and is not
// looked for.
func TestBundleLintFromFile(t *testing.T) {
	judge := `in=$(cat); i=0
case $in in *'"replicate":"r2"'*)
  while [ ! -s linted ] && [ $i -lt 1000 ]; do sleep 0.01; i=$((i+1)); done
  pid=$(cat linted 2>/dev/null)
  while [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && [ $i -lt 2000 ]; do sleep 0.01; i=$((i+1)); done
  sleep 0.2;;
esac
printf '{"agent_result":{"score":0.5,"verdict":"feasible"}}'`
	tidy := `in=$(cat)
case $in in *'"lint_target":{'*'"verdict":"feasible"'*) f='"verdict feasible without a rationale"';; *) f='';; esac
printf '{"agent_result":{"findings":[%s]},"warnings":["score unexplained"]}' "$f"
case $in in *'"replicate":"r1"'*) echo $$ >linted.tmp && mv linted.tmp linted;; esac`
	dir := writeConfig(t, "version: 1\nagents:\n  judge:\n    kind: exec\n    exec: {command: [sh, -c, "+strconv.Quote(judge)+"]}\n"+
		"  tidy:\n    kind: exec\n    exec: {command: [sh, -c, "+strconv.Quote(tidy)+"]}\n"+
		"  panel:\n    kind: bundle\n    bundle:\n      agent: judge\n      replicates: 2\n      lints: [{agent: tidy, timeout: 30s}]\n")
	code, results, _ := runJSON(t, dir, "How feasible is it?")
	if code != exitOK || len(results) != 1 || results[0].AgentName != "panel" {
		t.Fatalf("exit %d, results %+v, want the bundle's only", code, results)
	}
	for _, want := range []string{"lint tidy on r1: verdict feasible without a rationale", "lint tidy on r1: score unexplained"} {
		if !slices.Contains(results[0].Warnings, want) {
			t.Errorf("bundle warnings %q, want %q among them", results[0].Warnings, want)
		}
	}
	if _, stdout, _ := invoke(t, "agents", dir); !strings.Contains(stdout, "bundle judge ×2, lints tidy") {
		t.Errorf("troupe agents does not show the lint:\n%s", stdout)
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
