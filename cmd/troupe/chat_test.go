package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestChatScript(t *testing.T) {
	var stdout, stderr strings.Builder
	code := run(t.Context(), []string{"chat", "--script", "../../examples/tutor/testdata/fractions.chat", "../../examples/tutor"}, &stdout, &stderr)
	if code != exitOK {
		t.Fatalf("exit %d, stderr: %s", code, stderr.String())
	}
	mustContain(t, stdout.String(),
		"> teach me fractions\n", // script lines are echoed after the prompt
		"[diagnostic ← New topic start",
		"Quiz paused after 1 of 5 questions",
		"> continue quiz\n",
		"Resuming your Fractions quiz at question 2 of 5.",
		"[feedback ← After quiz completion",
		"You have mastered Fractions!",
	)
}

// mustContain fails t for each of wants that out lacks.
func mustContain(t *testing.T, out string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestChatStdin holds the conversation over an in-memory terminal: messages and quiz
// answers come from the same lines.
func TestChatStdin(t *testing.T) {
	in := strings.NewReader("hello\nteach me addition\n15\n42\n225\nquiz me\n1\npause\ncontinue quiz\n")
	var stdout, stderr strings.Builder
	code := chat(t.Context(), []string{"--questions", "2", "../../examples/tutor"}, in, &stdout, &stderr)
	if code != exitOK {
		t.Fatalf("exit %d, stderr: %s", code, stderr.String())
	}
	mustContain(t, stdout.String(),
		"Which topic would you like to learn?", // INVALID_INPUT → ask the user to clarify
		"Question 1 of 2 (Addition)",
		"Quiz paused after 1 of 2 questions",
		"Resuming your Addition quiz at question 2 of 2.",
	)
}

func TestChatUsage(t *testing.T) {
	script := filepath.Join(t.TempDir(), "s.chat")
	if err := os.WriteFile(script, []byte("hi\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	foreign := writeConfig(t, `version: 1
agents:
  oracle: {kind: builtin}
coordinator:
  default: oracle
`)
	for _, tt := range []struct {
		name string
		args []string
		code int
		says string
	}{
		{"no example", []string{"chat"}, exitUsage, "want one example directory"},
		{"no config", []string{"chat", t.TempDir()}, exitUsage, "troupe.yaml"},
		{"not conversational", []string{"chat", "../../examples/e2i"}, exitUsage, "../../examples/e2i has no coordinator section"},
		{"table naming other agents", []string{"chat", foreign}, exitUsage, "unknown agent"},
		{"missing script", []string{"chat", "--script", "/nonexistent/x.chat", "../../examples/tutor"}, exitUsage, "--script"},
		{"bad flag", []string{"chat", "--nope", "../../examples/tutor"}, exitUsage, "nope"},
		{"help", []string{"chat", "--help"}, exitOK, "Usage: troupe chat"},
		{"ok", []string{"chat", "--script", script, "../../examples/tutor"}, exitOK, "Which topic"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr strings.Builder
			code := run(t.Context(), tt.args, &stdout, &stderr)
			if code != tt.code || !strings.Contains(stdout.String()+stderr.String(), tt.says) {
				t.Errorf("exit %d (want %d), output %q lacks %q", code, tt.code, stdout.String()+stderr.String(), tt.says)
			}
		})
	}
}

func TestChatCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	var stdout, stderr strings.Builder
	code := chat(ctx, []string{"../../examples/tutor"}, strings.NewReader("teach me addition\n"), &stdout, &stderr)
	if code != exitCancelled {
		t.Errorf("exit %d, want %d; stderr %s", code, exitCancelled, stderr.String())
	}
}

// TestChatUsesTheFilesTable: chat routes with the coordinator of the directory's troupe.yaml,
// so a row added there ("lesson on" → diagnostic) changes the conversation.
func TestChatUsesTheFilesTable(t *testing.T) {
	raw, err := os.ReadFile("../../examples/tutor/troupe.yaml")
	if err != nil {
		t.Fatal(err)
	}
	yaml := strings.Replace(string(raw), `      patterns: ["teach me", "i want to learn"]`, `      patterns: ["teach me", "i want to learn", "lesson on"]`, 1)
	if yaml == string(raw) {
		t.Fatal("the new_topic row of examples/tutor/troupe.yaml moved; update this test")
	}
	dir := writeConfig(t, yaml)
	for _, tt := range []struct {
		dir, says string
	}{
		// The tutor lacks state: run diagnostic first. Each decision is printed as it is made.
		{"../../examples/tutor", "[tutor ← no rule matched; Unclear → tutor default fallback]\n[diagnostic ← fallback for tutor, which failed: session state lacks"},
		{dir, `[diagnostic ← New topic start: message matches "lesson on"`},
	} {
		var stdout, stderr strings.Builder
		if code := chat(t.Context(), []string{tt.dir}, strings.NewReader("lesson on decimals\n"), &stdout, &stderr); code != exitOK {
			t.Fatalf("%s: exit %d: %s", tt.dir, code, stderr.String())
		}
		mustContain(t, stdout.String(), tt.says)
	}
}

// writeConfig writes a troupe.yaml into a new directory and returns the directory.
func writeConfig(t *testing.T, yaml string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "troupe.yaml"), []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}
