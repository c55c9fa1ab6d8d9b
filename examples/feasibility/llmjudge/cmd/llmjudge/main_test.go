package main

import (
	"bytes"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRun(t *testing.T) {
	env := func(k string) string {
		return map[string]string{"OPENAI_BASE_URL": "http://llm.invalid/v1", "OPENAI_MODEL": "judge-model"}[k]
	}
	tests := []struct {
		name string
		args []string
		code int
		out  string
		err  string
	}{
		{"split", []string{"-cassette", "../../testdata/llm_split.json", "warehouse-expansion"}, 0, "== decision: no_go_unless_rescoped (2 of 3 infeasible", ""},
		{"agree", []string{"-cassette", "../../testdata/llm_agree.json", "crm-rollout"}, 0, "== decision: go (2 of 2 feasible", ""},
		{"no case", nil, 2, "", "llmjudge: give one case"},
		// Help asked for is not a usage error: exit 0, as the flag package's ExitOnError and
		// cmd/troupe do.
		{"help", []string{"-h"}, 0, "", "llmjudge [-k 3] [-temperature 0.7] [-cassette FILE] CASE"},
		{"bad flag", []string{"-bogus"}, 2, "", "flag provided but not defined: -bogus"},
		{"unrecorded", []string{"-k", "4", "-cassette", "../../testdata/llm_agree.json", "lab-platform"}, 1, "", "no recorded exchange matches"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errs bytes.Buffer
			if code := run(t.Context(), tt.args, env, &out, &errs); code != tt.code {
				t.Errorf("exit %d, want %d; stderr: %s", code, tt.code, errs.String())
			}
			if !strings.Contains(out.String(), tt.out) || !strings.Contains(errs.String(), tt.err) {
				t.Errorf("stdout:\n%s\nstderr:\n%s\nwant %q and %q", out.String(), errs.String(), tt.out, tt.err)
			}
		})
	}
}
