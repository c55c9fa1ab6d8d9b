package wire_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/agent/internal/wire"
)

func TestSecretsString(t *testing.T) {
	s := wire.NewSecrets("ab", `k/"é<`, "key-1", "key-1-long")
	for _, tc := range []struct{ name, in, want string }{
		{"as it is", `x k/"é< y`, "x [redacted] y"},
		{"JSON-escaped", `x k/\"é\u003c y`, "x [redacted] y"},
		{"JSON-escaped without HTML escaping", `x k/\"é< y`, "x [redacted] y"},
		{"ASCII-only JSON (PHP)", `x k\/\"\u00e9< y`, "x [redacted] y"},
		{"ASCII-only JSON (Python)", `x k/\"\u00e9< y`, "x [redacted] y"},
		{"Go-quoted", `x k/\"é< y`, "x [redacted] y"},
		{"percent-encoded", "x k%2F%22%C3%A9%3C y", "x [redacted] y"},
		{"the longer secret whole", "key-1-long and key-1", "[redacted] and [redacted]"},
		{"values under MinSecret left alone", "ab", "ab"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := s.String(tc.in); got != tc.want {
				t.Errorf("String(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
	var none *wire.Secrets
	if got := none.String("key-1"); got != "key-1" || !none.Empty() {
		t.Errorf("a nil set scrubbed %q", got)
	}
}

// A text cut inside a secret keeps a piece no spelling matches: Head and Tail drop it.
func TestSecretsHeadAndTailDropWhatACutSplit(t *testing.T) {
	s := wire.NewSecrets("tok-12345678")
	for _, tc := range []struct {
		name string
		got  string
		want string
	}{
		{"head cut inside", s.Head("error: tok-123", true), "error: "},
		{"head cut after a whole one", s.Head("tok-12345678 x", true), "[redacted] x"},
		{"head not cut", s.Head("error: tok-123", false), "error: tok-123"},
		{"tail cut inside", s.Tail("5678 refused", true), " refused"},
		{"tail not cut", s.Tail("5678 refused", false), "5678 refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("got %q, want %q", tc.got, tc.want)
			}
		})
	}
}

func TestSecretsError(t *testing.T) {
	s := wire.NewSecrets("tok-12345678")
	command := []string{"cli", "--token", "tok-12345678"}
	orig := &troupe.AgentError{Code: troupe.CodeInvalidOutput, Message: "bad tok-12345678",
		Cause: errors.New("echo: tok-12345678"),
		Details: map[string]any{"command": command, "output": `"cut tok-1…`, "n": 3,
			"nested": []any{map[string]any{"k": "tok-12345678"}}}}
	err := s.Error(fmt.Errorf("agent x: %w", orig), []byte(`{"echo":"tok-12345678"}`))

	if got, want := err.Error(), "agent x: troupe: agent error INVALID_OUTPUT: bad [redacted]: echo: [redacted]"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	var ae *troupe.AgentError
	if !errors.As(err, &ae) || ae == orig {
		t.Fatalf("errors.As finds %v, want a scrubbed copy", ae)
	}
	want := map[string]any{"command": []string{"cli", "--token", "[redacted]"}, "output": `"{\"echo\":\"[redacted]\"}"`, "n": 3,
		"nested": []any{map[string]any{"k": "[redacted]"}}}
	if diff := cmp.Diff(want, ae.Details); diff != "" {
		t.Errorf("details (-want +got):\n%s", diff)
	}
	if command[2] != "tok-12345678" || orig.Message != "bad tok-12345678" {
		t.Errorf("the original error was changed: %v %v", command, orig)
	}
	plain := errors.New("nothing secret")
	if got := s.Error(plain, nil); got != plain {
		t.Errorf("an error without secrets became %v", got)
	}
}

// A command too long for messages loses its program's directory before any of its words, so
// the program's name survives a deep install path; past that the arguments are cut.
func TestCommandName(t *testing.T) {
	deep := "/check/work/main/.ci/peers/node_modules/.bin/mcp-server-filesystem"
	for _, tc := range []struct {
		name    string
		command []string
		secrets *wire.Secrets
		want    string
	}{
		{"short, as it is", []string{"/usr/bin/python3", "tool.py"}, nil, "/usr/bin/python3 tool.py"},
		{"deep path loses its directory", []string{deep, "/tmp/TestX/001/missing"}, nil, "…/mcp-server-filesystem /tmp/TestX/001/missing"},
		{"then the arguments are cut", []string{deep, "/tmp/a-very-long-directory-name/that/goes/on/and/on"}, nil, "…/mcp-server-filesystem /tmp/a-very-long-directory-name/that/goe…"},
		{"no directory: cut", []string{"sh", "-c", "echo one two three four five six seven eight nine ten eleven twelve"}, nil, "sh -c echo one two three four five six seven eight nine ten elev…"},
		{"secret scrubbed before the cut", []string{deep, "--token=s3cr3t-value"}, wire.NewSecrets("s3cr3t-value"), "…/mcp-server-filesystem --token=[redacted]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			secrets := tc.secrets
			if secrets == nil {
				secrets = wire.NewSecrets()
			}
			if got := wire.CommandName(tc.command, secrets, 64); got != tc.want {
				t.Errorf("CommandName = %q, want %q", got, tc.want)
			}
		})
	}
}
