package codegen_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/agent/cassette"
	"github.com/troupehq/troupe/examples/codegen"
	"github.com/troupehq/troupe/flow"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestReviewHandsOffAlongTheSequence(t *testing.T) {
	cfg, sent := through(t, "review")
	r, err := codegen.Review(t.Context(), cfg, sumTask)
	if err != nil {
		t.Fatal(err)
	}
	if r.Verdict != "approve" || len(r.Issues) != 0 || !strings.Contains(r.Code, "func Sum(xs []int) int") {
		t.Errorf("verdict %q issues %v code:\n%s", r.Verdict, r.Issues, r.Code)
	}
	if r.Analysis["signature"] != "func Sum(xs []int) int" {
		t.Errorf("analysis = %v", r.Analysis)
	}
	if r.TokensUsed != 180+60+320+70+410+30 {
		t.Errorf("tokens = %d, want every completion counted once", r.TokensUsed)
	}
	var from []string
	for _, h := range r.Handoffs {
		from = append(from, h.SourceAgent)
	}
	if diff := cmp.Diff([]string{codegen.Analyzer, codegen.Generator, codegen.Reviewer}, from); diff != "" {
		t.Errorf("handoffs (-want +got):\n%s", diff)
	}

	// The analyzer sees the task alone; the generator the analyzer's handoff block, built from
	// its answer, before the task; the reviewer the generator's handoff, the spec and the code.
	an, gen, rev := sent.to(codegen.Analyzer), sent.to(codegen.Generator), sent.to(codegen.Reviewer)
	if len(an) != 1 || len(gen) != 1 || len(rev) != 1 {
		t.Fatalf("requests: analyzer %d, generator %d, reviewer %d; want one each", len(an), len(gen), len(rev))
	}
	if an[0] != sumTask {
		t.Errorf("analyzer asked %q", an[0])
	}
	for _, want := range []string{
		"=== Context from Previous Agent ===",
		"Task: Sum returns the total of a slice of ints, 0 for an empty or nil slice.",
		"- signature: func Sum(xs []int) int",
		"- edge_cases: ",
		"Metadata: Agent analyzer completed at ",
		"with status completed\n===================================",
	} {
		if !strings.Contains(gen[0], want) {
			t.Errorf("the generator's request lacks %q:\n%s", want, gen[0])
		}
	}
	if !strings.HasSuffix(gen[0], sumTask) {
		t.Errorf("the generator's request must end with the task:\n%s", gen[0])
	}
	for _, want := range []string{
		"Task: Ranges over xs accumulating a running total.",
		"Metadata: Agent generator completed at ",
		`"signature":"func Sum(xs []int) int"`,
		"func Sum(xs []int) int {\n\ttotal := 0",
	} {
		if !strings.Contains(rev[0], want) {
			t.Errorf("the reviewer's request lacks %q:\n%s", want, rev[0])
		}
	}
}

func TestReviewStopsOnCodeThatDoesNotParse(t *testing.T) {
	cfg, sent := through(t, "review_invalid")
	r, err := codegen.Review(t.Context(), cfg, clampTask)
	var step *flow.StepError
	if !errors.As(err, &step) {
		t.Fatalf("err = %v, want a *flow.StepError", err)
	}
	if step.Step != 2 || step.Agent != codegen.Generator || step.Err.Code != troupe.CodeInvalidOutput ||
		!strings.Contains(step.Err.Message, "line 7, column") {
		t.Errorf("step %d agent %s error %+v", step.Step, step.Agent, step.Err)
	}
	if len(r.Results) != 2 || r.Code != "" || r.Analysis["function_name"] != "Clamp" || r.Verdict != "" {
		t.Errorf("results %d, code %q, analysis %v, verdict %q", len(r.Results), r.Code, r.Analysis, r.Verdict)
	}
	if n := len(sent.to(codegen.Reviewer)); n != 0 {
		t.Errorf("the reviewer was asked %d times after the generator failed", n)
	}
	if r.TokensUsed != 170+50+300+40 {
		t.Errorf("tokens = %d, want the failed generator's counted too", r.TokensUsed)
	}
}

func TestVoteCountsNormalizedCode(t *testing.T) {
	cfg, sent := through(t, "vote_majority")
	v, err := codegen.Vote(t.Context(), cfg, sumTask)
	if err != nil {
		t.Fatal(err)
	}
	a, b, c := codegen.Implementers[0], codegen.Implementers[1], codegen.Implementers[2]
	for _, name := range codegen.Implementers {
		if got := sent.to(name); len(got) != 1 || got[0] != sumTask {
			t.Errorf("%s was asked %q", name, got)
		}
	}
	if v.Code[a] == v.Code[b] || v.Normal[a] != v.Normal[b] || v.Normal[a] == v.Normal[c] {
		t.Errorf("a and b differ as written and agree normalized, c differs:\n%s\n%s\n%s", v.Normal[a], v.Normal[b], v.Normal[c])
	}
	want := map[string]int{v.Normal[a]: 2, v.Normal[c]: 1}
	if diff := cmp.Diff(want, v.Tally.Counts); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{a, b}, v.Tally.Voters[v.Canonical]); diff != "" {
		t.Errorf("winning voters (-want +got):\n%s", diff)
	}
	if v.Tally.Tie || v.Winner != v.Code[a] || len(v.Failed) != 0 {
		t.Errorf("tie %v, winner:\n%s\nfailed %v", v.Tally.Tie, v.Winner, v.Failed)
	}
	if v.TokensUsed != 195+190+200 {
		t.Errorf("tokens = %d", v.TokensUsed)
	}
}

func TestVoteWithoutMajorityIsATie(t *testing.T) {
	cfg, _ := through(t, "vote_tie")
	v, err := codegen.Vote(t.Context(), cfg, reverseTask)
	var tie *flow.TieError
	if !errors.As(err, &tie) {
		t.Fatalf("err = %v, want a *flow.TieError", err)
	}
	var ae *troupe.AgentError
	if !errors.As(err, &ae) || ae.Code != flow.CodeVoteTie {
		t.Errorf("err = %v, want code %s", err, flow.CodeVoteTie)
	}
	a, b, c := codegen.Implementers[0], codegen.Implementers[1], codegen.Implementers[2]
	if f := v.Failed[c]; !strings.HasPrefix(f, troupe.CodeInvalidOutput+": ") || !strings.Contains(f, "codegen: the code does not parse: line 4, column 33") {
		t.Errorf("implementer c's failure = %q", f)
	}
	want := map[string]int{v.Normal[a]: 1, v.Normal[b]: 1}
	if diff := cmp.Diff(want, v.Tally.Counts); diff != "" || !v.Tally.Tie || len(v.Tally.Tied) != 2 {
		t.Errorf("tie %v tied %d counts (-want +got):\n%s", v.Tally.Tie, len(v.Tally.Tied), diff)
	}
	if v.Winner != "" || v.Canonical != "" {
		t.Errorf("a tie has no winner, got:\n%s", v.Winner)
	}
}

func TestBadInput(t *testing.T) {
	if _, err := codegen.Review(t.Context(), codegen.Config{}, "  "); err == nil || !strings.Contains(err.Error(), "codegen: review: the task is empty") {
		t.Errorf("Review: %v", err)
	}
	if _, err := codegen.Vote(t.Context(), codegen.Config{}, ""); err == nil || !strings.Contains(err.Error(), "codegen: vote: the task is empty") {
		t.Errorf("Vote: %v", err)
	}
	// A replaying cassette with nothing recorded fails the call naming it, never the network.
	empty := filepath.Join(t.TempDir(), "empty.json")
	if err := os.WriteFile(empty, []byte(`{"version": 1, "interactions": []}`), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := codegen.OpenCassette(empty, cassette.ModeReplay)
	if err != nil {
		t.Fatal(err)
	}
	_, err = codegen.Review(t.Context(), codegen.Config{BaseURL: endpoint, HTTPClient: c.Client()}, sumTask)
	if err == nil || !strings.Contains(err.Error(), cassette.ErrNoMatch.Error()) || !strings.Contains(err.Error(), "empty.json") {
		t.Errorf("Review through an empty cassette: %v", err)
	}
}

func TestCassettesHoldNoKey(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("cassettes: %v %v", files, err)
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(raw), testKey) || !strings.Contains(string(raw), `"Authorization": "`+cassette.Redacted+`"`) {
			t.Errorf("%s must hold the key redacted", f)
		}
	}
}

func TestEnv(t *testing.T) {
	env := map[string]string{"OPENAI_BASE_URL": "http://127.0.0.1:11434/v1/", "OPENAI_MODEL": "qwen2.5-coder"}
	got := codegen.Env(func(k string) string { return env[k] })
	if got.BaseURL != env["OPENAI_BASE_URL"] || got.Model != env["OPENAI_MODEL"] || got.APIKeyEnv != "" {
		t.Errorf("Env = %+v", got)
	}
}
