package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/troupehq/troupe/config"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata")

// golden compares got with testdata/NAME.golden, rewriting it under -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./cmd/troupe -run %s -update writes it)", err, t.Name())
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("troupe plan output differs from %s (-want +got):\n%s", path, diff)
	}
}

// Seed 000's example queries, planned with examples/e2i/troupe.yaml: the stages, the scores
// and the reasons, in every format.
func TestPlanE2IGolden(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		stage string // what the plan must say, beyond the golden file
	}{
		{"e2i_causal", []string{"What caused the drop in NRx for Kisqali in Midwest?"}, "  stage 1 (sequential)\n    causal_impact  priority 1.00\n  stage 2 (sequential)\n    gap_analyzer  priority 0.85  after causal_impact\n  stage 3 (sequential)\n    explainer"},
		{"e2i_trends", []string{"Show me market trends and opportunities for Kisqali"}, "  stage 1 (parallel, at most 10 at once)\n    drift_monitor  priority 1.00\n    gap_analyzer   priority 0.80\n  stage 2 (sequential)\n    explainer"},
		{"e2i_causal_mermaid", []string{"--format", "mermaid", "What caused the drop in NRx for Kisqali in Midwest?"}, "a_causal_impact --> a_gap_analyzer"},
		{"e2i_causal_dot", []string{"--format=dot", "What caused the drop in NRx for Kisqali in Midwest?"}, "a_causal_impact -> a_gap_analyzer;"},
		{"e2i_trends_mermaid", []string{"Show me market trends and opportunities for Kisqali", "--format", "mermaid"}, "query --> a_drift_monitor"},
		// A parsed query from a file, no question: seed 000's parsed_query is the planner's input.
		{"e2i_parsed_input", []string{"--input", "testdata/parsed.json"}, "  stage 1 (parallel, at most 10 at once)\n    gap_analyzer             priority 1.00\n    heterogeneous_optimizer  priority 1.00\n    causal_impact            priority 0.85"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := invoke(t, append([]string{"plan", "../../examples/e2i"}, tt.args...)...)
			if code != exitOK || stderr != "" {
				t.Fatalf("exit %d, stderr:\n%s", code, stderr)
			}
			if !strings.Contains(stdout, tt.stage) {
				t.Errorf("plan lacks %q:\n%s", tt.stage, stdout)
			}
			golden(t, tt.name, stdout)
		})
	}
}

// Every row of seed 003's coordinator table, routed by examples/tutor/troupe.yaml, with the
// session state each row needs.
func TestPlanTutorGolden(t *testing.T) {
	rows := []struct {
		name    string
		message string
		state   []string
		target  string
		rule    string
	}{
		{"new_topic_teach_me", "teach me fractions", nil, "diagnostic", "New topic start"},
		{"new_topic_want_to_learn", "I want to learn decimals", nil, "diagnostic", "New topic start"},
		{"content_explain", "explain equivalent fractions", []string{"current_topic=fractions"}, "tutor", "Question about content"},
		{"content_why", "why do we flip the second fraction?", []string{"current_topic=fractions"}, "tutor", "Question about content"},
		{"content_how_does", "how does long division work", nil, "tutor", "Question about content"},
		{"quiz_me", "quiz me", []string{"current_topic=fractions"}, "quiz", "Quiz request"},
		{"quiz_test_my_knowledge", "test my knowledge please", nil, "quiz", "Quiz request"},
		{"after_quiz", "ok", []string{"quiz_complete=true", "last_routed_to=quiz"}, "feedback", "After quiz completion"},
		{"progress_whats_next", "what's next?", nil, "pathplanner", "Progress inquiry"},
		{"progress_my_progress", "show my progress", nil, "pathplanner", "Progress inquiry"},
		{"resume_continue_quiz", "continue quiz", []string{"quiz_paused=true"}, "quiz", "Resume paused quiz"},
		{"resume_resume", "resume", []string{"quiz_paused=true"}, "quiz", "Resume paused quiz"},
		{"resume_not_paused", "resume", []string{"quiz_paused=false"}, "tutor", "no rule matched; Unclear"},
		{"unclear", "hmm, bananas", nil, "tutor", "no rule matched; Unclear"},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			args := []string{"plan", "../../examples/tutor"}
			for _, s := range r.state {
				args = append(args, "--state", s)
			}
			code, stdout, stderr := invoke(t, append(args, r.message)...)
			if code != exitOK || stderr != "" {
				t.Fatalf("exit %d, stderr:\n%s", code, stderr)
			}
			if want := "  route → " + r.target + ": " + r.rule; !strings.Contains(stdout, want) {
				t.Errorf("plan lacks %q:\n%s", want, stdout)
			}
			golden(t, "tutor_"+r.name, stdout)
		})
	}
	code, stdout, _ := invoke(t, "plan", "--format", "mermaid", "--state", "quiz_paused=true", "../../examples/tutor", "continue quiz")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	golden(t, "tutor_resume_mermaid", stdout)
}

func loadTestConfig(t *testing.T, path string) *config.File {
	t.Helper()
	f, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// BenchmarkPlanCommand is `troupe plan examples/e2i "…"` in-process: load and check the file
// (YAML, schema, references), parse the question, plan and print.
func BenchmarkPlanCommand(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		var out, errOut strings.Builder
		if code := run(b.Context(), []string{"plan", "../../examples/e2i", "What caused the drop in NRx for Kisqali in Midwest?"}, &out, &errOut); code != exitOK {
			b.Fatalf("exit %d: %s", code, errOut.String())
		}
	}
}

// troupe plan runs nothing: a request its rules refuse is exit 1, "cannot be planned", and a
// wrong file or command line exit 2.
func TestPlanExitCodes(t *testing.T) {
	in := filepath.Join(t.TempDir(), "no_intent.json")
	if err := os.WriteFile(in, []byte(`{"parsed_query": {"kpis": ["NRx"]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		args []string
		code int
		says string
	}{
		{"planned", []string{"plan", "../../examples/e2i", "Why did NRx drop?"}, exitOK, "plan: "},
		{"refused", []string{"plan", "--input", in, "../../examples/e2i"}, exitFailed, "troupe plan: the request cannot be planned: "},
		{"bad file", []string{"plan", "testdata/nope.yaml", "q"}, exitUsage, "no such file"},
		{"bad flag", []string{"plan", "--format", "svg", "../../examples/e2i", "q"}, exitUsage, `--format "svg"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := invoke(t, tt.args...)
			if code != tt.code || !strings.Contains(stdout+stderr, tt.says) {
				t.Errorf("exit %d (want %d), output lacks %q:\n%s%s", code, tt.code, tt.says, stdout, stderr)
			}
		})
	}
}
