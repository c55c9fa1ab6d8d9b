package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
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
		"> continue quiz\n[quiz ← Resume paused quiz",
		"Resuming your Fractions quiz at question 2 of 5.\nQuestion 2 of 5 (Fractions)", // before the question, not after the quiz
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
		{"table naming other agents", []string{"chat", foreign}, exitUsage, "its coordinator routes to oracle, which chat does not have"},
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

// TestChatOtherCoordinator: chat runs the tutor's agents, so a valid coordinator file routing
// to others is refused before the tutor's banner, saying what chat needs and what to use
// instead.
func TestChatOtherCoordinator(t *testing.T) {
	dir := writeConfig(t, `version: 1
name: c
agents:
  a: {kind: exec, exec: {command: [sh, -c, cat]}}
  b: {kind: exec, exec: {command: [sh, -c, cat]}}
coordinator:
  triggers:
    - name: greeting
      patterns: ["hi"]
      target: b
  default: a
`)
	if code, stdout, stderr := invoke(t, "validate", dir); code != exitOK {
		t.Fatalf("the file is meant to be valid: exit %d\n%s%s", code, stdout, stderr)
	}
	var stdout, stderr strings.Builder
	code := chat(t.Context(), []string{dir}, strings.NewReader("hi\n"), &stdout, &stderr)
	if code != exitUsage || stdout.String() != "" {
		t.Fatalf("exit %d (want %d), stdout %q (want nothing: no banner)", code, exitUsage, stdout.String())
	}
	mustContain(t, stderr.String(),
		"its coordinator routes to a, b, which chat does not have",
		"the coordinator must route among the tutor's agents (diagnostic, tutor, quiz, feedback, pathplanner",
		"troupe run "+dir+` "message"`)
}

// TestChatQuestions: --questions outside what every topic can give is refused with the range,
// which the help states too.
func TestChatQuestions(t *testing.T) {
	most := maxQuizQuestions()
	if most < 5 {
		t.Fatalf("the corpus has topics of %d questions; --questions' default is 5", most)
	}
	if want := fmt.Sprintf("questions per quiz, 1 to %d (default 5)", most); !strings.Contains(chatUsage, want) {
		t.Errorf("chat's help lacks %q", want)
	}
	for _, tt := range []struct {
		n    string
		code int
	}{
		{"0", exitUsage}, {"-3", exitUsage}, {strconv.Itoa(most + 1), exitUsage}, {"1000", exitUsage},
		{"1", exitOK}, {strconv.Itoa(most), exitOK},
	} {
		t.Run(tt.n, func(t *testing.T) {
			var stdout, stderr strings.Builder
			code := chat(t.Context(), []string{"--questions", tt.n, "../../examples/tutor"}, strings.NewReader("teach me addition\n15\n42\n225\nquiz me\n"), &stdout, &stderr)
			if code != tt.code {
				t.Fatalf("exit %d, want %d; stderr: %s", code, tt.code, stderr.String())
			}
			if tt.code == exitUsage {
				if want := fmt.Sprintf("--questions %s: want 1 to %d", tt.n, most); !strings.Contains(stderr.String(), want) || stdout.String() != "" {
					t.Errorf("stderr lacks %q, or stdout is not empty:\n%s%s", want, stderr.String(), stdout.String())
				}
				return
			}
			mustContain(t, stdout.String(), fmt.Sprintf("Question 1 of %s (Addition)", tt.n))
		})
	}
}

// TestChatReplies: a bare "teach me" asks which topic; "/master" alone gives its usage.
func TestChatReplies(t *testing.T) {
	var stdout, stderr strings.Builder
	if code := chat(t.Context(), []string{"../../examples/tutor"}, strings.NewReader("teach me\n/master\n"), &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	mustContain(t, stdout.String(), "Which topic would you like to learn? I can teach: addition", "Usage: /master TOPIC")
	if out := stdout.String(); strings.Contains(out, "no material") || strings.Contains(out, `unknown topic ""`) {
		t.Errorf("transcript:\n%s", out)
	}
}

// TestChatMasterPaused: a mastery loop whose quiz is paused — the input ends at its first
// question, which answers "pause" — ends in a sentence for the learner, not the engine's error
// chain, and "continue quiz" resumes the quiz it left paused.
func TestChatMasterPaused(t *testing.T) {
	for _, tt := range []struct{ name, in, resumed string }{
		{"input ends", "/master fractions\n", ""},
		{"pause, then continue quiz", "/master fractions\npause\ncontinue quiz\n", "Resuming your Fractions quiz at question 1 of 5."},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr strings.Builder
			if code := chat(t.Context(), []string{"../../examples/tutor"}, strings.NewReader(tt.in), &stdout, &stderr); code != exitOK {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			out := stdout.String()
			mustContain(t, out, "[mastery_loop ← /master]\nMastery work on Fractions stopped in cycle 1: the quiz is paused after 0 of 5 questions, nothing graded yet.", tt.resumed)
			if strings.Contains(out, "no completed quiz") || strings.Contains(out, "troupe: execute") {
				t.Errorf("transcript shows the engine's error:\n%s", out)
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
