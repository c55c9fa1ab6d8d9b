package main

import (
	"bytes"
	"strings"
	"testing"
)

// invoke runs the command line in-process.
func invoke(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(t.Context(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		args       []string
		wantStderr []string
	}{
		{nil, []string{"Usage:", "troupe demo"}},
		{[]string{"frobnicate"}, []string{`unknown command "frobnicate"`, "Commands: demo, run, plan, validate, agents, chat, help", "troupe help"}},
		{[]string{"dmeo"}, []string{`unknown command "dmeo"`, `Did you mean "demo"?`}},
		{[]string{"demo", "--nope"}, []string{"flag provided but not defined: -nope", "troupe help demo"}},
		{[]string{"demo", "--seed", "x"}, []string{`invalid value "x" for flag -seed`}},
		{[]string{"help", "nope"}, []string{`unknown command "nope"`}},
		{[]string{"help", "demo", "help"}, []string{"at most one command"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, stdout, stderr := invoke(t, tt.args...)
			if code != exitUsage {
				t.Errorf("exit code %d, want %d", code, exitUsage)
			}
			if stdout != "" {
				t.Errorf("stdout %q, want nothing", stdout)
			}
			for _, want := range tt.wantStderr {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr)
				}
			}
		})
	}
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"-h"}, {"--help"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, stdout, stderr := invoke(t, args...)
			if code != exitOK || stderr != "" {
				t.Fatalf("exit %d, stderr %q", code, stderr)
			}
			// An example for each command.
			for _, c := range commands() {
				if !strings.Contains(stdout, "\n  troupe "+c.name) {
					t.Errorf("usage has no example of %s:\n%s", c.name, stdout)
				}
			}
			if !strings.Contains(stdout, "130 it was cancelled") {
				t.Errorf("usage does not list the exit codes:\n%s", stdout)
			}
		})
	}
	for _, args := range [][]string{{"help", "demo"}, {"demo", "-h"}, {"demo", "--help"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, stdout, _ := invoke(t, args...)
			if code != exitOK || !strings.Contains(stdout, "--seed N") || !strings.Contains(stdout, "troupe demo --json") {
				t.Errorf("exit %d, help:\n%s", code, stdout)
			}
		})
	}
}

// A file of one agent is counted in the singular by every command that counts its agents.
func TestOneAgentSingular(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "testdata/one.yaml", "hello there"}, "troupe run: one, 1 agent (testdata/one.yaml)\n"},
		{[]string{"plan", "testdata/one.yaml", "hello there"}, "one: 1 agent (testdata/one.yaml)\n"},
		{[]string{"agents", "testdata/one.yaml"}, "one: 1 agent\n"},
		{[]string{"validate", "testdata/one.yaml"}, "testdata/one.yaml: ok — 1 agent, every agent"},
	} {
		t.Run(tc.args[0], func(t *testing.T) {
			code, stdout, stderr := invoke(t, tc.args...)
			if code != exitOK {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			if !strings.Contains(stdout, tc.want) {
				t.Errorf("output lacks %q:\n%s", tc.want, stdout)
			}
		})
	}
}
