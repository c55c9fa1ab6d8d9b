package main

import (
	"bytes"
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
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
		{[]string{"frobnicate"}, []string{`unknown command "frobnicate"`, "Commands: demo, run, plan, validate, agents, chat, version, help", "troupe help"}},
		{[]string{"dmeo"}, []string{`unknown command "dmeo"`, `Did you mean "demo"?`}},
		{[]string{"demo", "--nope"}, []string{"unknown flag --nope", "troupe demo --help"}},
		{[]string{"demo", "--seed", "x"}, []string{`flag --seed "x": want a whole number, 0 or more`}},
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

// parseInterleaved takes flags anywhere, and a word no flag could be named for ("-4 8 15",
// "-") as an argument wherever it is; an undefined flag, or a flag's missing or wrong value, is
// an error naming the flag as written.
func TestParseInterleaved(t *testing.T) {
	type parsed struct {
		Words []string
		N     int
		B     bool
	}
	tests := []struct {
		args []string
		want parsed
		err  string
	}{
		{[]string{"cfg", "-4 8 15"}, parsed{Words: []string{"cfg", "-4 8 15"}}, ""},
		{[]string{"-4", "cfg", "--b", "-3.5", "x"}, parsed{Words: []string{"-4", "cfg", "-3.5", "x"}, B: true}, ""},
		{[]string{"cfg", "--n", "-3", "q"}, parsed{Words: []string{"cfg", "q"}, N: -3}, ""},
		{[]string{"--n=2", "-", "- q"}, parsed{Words: []string{"-", "- q"}, N: 2}, ""},
		{[]string{"cfg", "--", "-x is odd", "--b"}, parsed{Words: []string{"cfg", "-x is odd", "--b"}}, ""},
		{[]string{"cfg", "--b=false", "q", "-n", "1"}, parsed{Words: []string{"cfg", "q"}, N: 1}, ""},
		{[]string{"cfg", "-x is odd"}, parsed{}, `unknown flag -x is odd`},
		{[]string{"cfg", "--nope=1"}, parsed{}, "unknown flag --nope"},
		{[]string{"cfg", "--n"}, parsed{}, "flag --n needs a value"},
		{[]string{"cfg", "--n", "x"}, parsed{}, `flag --n "x": want a whole number`},
		{[]string{"cfg", "-b=maybe"}, parsed{}, `flag -b "maybe": want true or false`},
		{[]string{"cfg", "-h"}, parsed{}, flag.ErrHelp.Error()},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			fs := flag.NewFlagSet("t", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			var got parsed
			fs.IntVar(&got.N, "n", 0, "")
			fs.BoolVar(&got.B, "b", false, "")
			words, err := parseInterleaved(fs, tt.args)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got.Words = words
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// A query may begin with '-': a number without more ado, anything else after --, which the
// help of every command taking a query mentions.
func TestQueryBeginningWithDash(t *testing.T) {
	for _, tt := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"plan", "testdata/one.yaml", "-4 8 15"}, exitOK, "query     -4 8 15\n"},
		{[]string{"plan", "testdata/one.yaml", "-4", "8", "--format", "mermaid"}, exitOK, `query(["-4 8"])`},
		{[]string{"plan", "testdata/one.yaml", "--", "-x is odd"}, exitOK, "query     -x is odd\n"},
		{[]string{"run", "testdata/one.yaml", "-x is odd"}, exitUsage, `troupe run: unknown flag -x is odd; a query word beginning with '-' goes after --, as in: troupe run CONFIG -- "-x is odd"`},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, stdout, stderr := invoke(t, tt.args...)
			if code != tt.code || !strings.Contains(stdout+stderr, tt.says) {
				t.Errorf("exit %d (want %d), output lacks %q:\n%s%s", code, tt.code, tt.says, stdout, stderr)
			}
		})
	}
	for _, name := range []string{"run", "plan", "demo"} {
		if _, help, _ := invoke(t, "help", name); !strings.Contains(help, "-- every argument is part of") {
			t.Errorf("the help of %s does not say what -- does:\n%s", name, help)
		}
	}
}
