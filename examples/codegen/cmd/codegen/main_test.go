package main

import (
	"bytes"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// env is the environment of a replay of the package's recorded cassettes.
func env(k string) string {
	return map[string]string{"OPENAI_BASE_URL": "http://llm.invalid/v1", "OPENAI_MODEL": "mock-model"}[k]
}

func TestRun(t *testing.T) {
	const sum = "Write a Go function Sum(xs []int) int that returns the sum of the integers in xs."
	tests := []struct {
		name string
		args []string
		code int
		out  []string // in the output, in order
		err  string
	}{
		{"review", []string{"-cassette", "../../testdata/review.json", sum}, 0,
			[]string{"== specification (analyzer)", `"signature": "func Sum(xs []int) int"`, "== code (generator)", "func Sum(xs []int) int {", "== review (reviewer): approve", "== 1070 tokens"}, ""},
		{"vote", []string{"-vote", "-cassette", "../../testdata/vote_majority.json", sum}, 0,
			[]string{"== answer 1: 2 vote(s) from implementer_a, implementer_b", "== answer 2: 1 vote(s) from implementer_c", "== winner", "total := 0"}, ""},
		{"tie", []string{"-vote", "-cassette", "../../testdata/vote_tie.json", "Write a Go function Reverse(s string) string that reverses a string by runes."}, 1,
			// Without a winner, each tied implementation is shown: the user must choose.
			[]string{"== implementer_c failed: INVALID_OUTPUT", "vote(s) from implementer_a", "func Reverse(s string) string {", "vote(s) from implementer_b", "func Reverse(s string) string {"}, "codegen: VOTE_TIE: no majority — 2 answers tied with 1 vote(s) each"},
		{"no task", nil, 2, nil, "codegen: give the task"},
		// Help asked for is not a usage error: exit 0, as the flag package's ExitOnError and
		// cmd/troupe do; the usage names the task argument too.
		{"help", []string{"-h"}, 0, nil, "codegen [-vote] [-cassette FILE] TASK"},
		{"bad flag", []string{"-bogus"}, 2, nil, "flag provided but not defined: -bogus"},
		{"unrecorded task", []string{"-cassette", "../../testdata/review.json", "something else"}, 1, nil, "no recorded exchange matches"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errs bytes.Buffer
			if code := run(t.Context(), tt.args, env, &out, &errs); code != tt.code {
				t.Errorf("exit %d, want %d; stderr: %s", code, tt.code, errs.String())
			}
			rest := out.String()
			for _, want := range tt.out {
				i := strings.Index(rest, want)
				if i < 0 {
					t.Fatalf("output lacks %q (in order):\n%s", want, out.String())
				}
				rest = rest[i+len(want):]
			}
			if !strings.Contains(errs.String(), tt.err) {
				t.Errorf("stderr lacks %q:\n%s", tt.err, errs.String())
			}
		})
	}
}
