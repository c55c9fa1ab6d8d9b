package tutor_test

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/troupehq/troupe/examples/tutor"
)

// TestScriptedConversation replays testdata/fractions.chat, the script `troupe chat
// --script` takes, and checks the transcript and the state it leaves.
func TestScriptedConversation(t *testing.T) {
	f, err := os.Open("testdata/fractions.chat")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out strings.Builder
	st, err := tutor.Converse(t.Context(), tutor.ConverseConfig{Echo: true}, f, &out)
	if err != nil {
		t.Fatal(err)
	}
	transcript := out.String()
	for _, want := range []string{
		"[diagnostic ← New topic start",
		"Quick check on Division before Fractions",
		"[tutor ← Question about content",
		"On your question:",
		"Quiz paused after 1 of 5 questions",
		"[pathplanner ← Progress inquiry",
		"Resuming your Fractions quiz at question 2 of 5.",
		"Quiz on Fractions complete: 5 of 5 correct (100%).",
		"[feedback ← After quiz completion",
		"You have mastered Fractions!",
	} {
		if !strings.Contains(transcript, want) {
			t.Errorf("transcript lacks %q", want)
		}
	}
	// Each decision is printed before its agent asks anything, each verdict before the next
	// question, and each turn's reply before the automatic turn after it.
	for _, pair := range [][2]string{
		{"[quiz ← Quiz request", "Question 1 of 5 (Fractions)"},
		{"Q1: Correct.\nQuestion 2 of 5", "Quiz paused after 1 of 5"},
		// The resumption is said before the question it resumes at, not after the quiz.
		{"> continue quiz\n", "Resuming your Fractions quiz at question 2 of 5.\nQuestion 2 of 5 (Fractions)"},
		{"Resuming your Fractions quiz at question 2 of 5.", "Q2: Correct."},
		{"Quiz on Fractions complete", "[feedback ← After quiz completion"},
	} {
		i, j := strings.Index(transcript, pair[0]), strings.Index(transcript, pair[1])
		if i < 0 || j < 0 || i > j {
			t.Errorf("want %q before %q", pair[0], pair[1])
		}
	}
	if t.Failed() {
		t.Log(transcript)
	}
	if st[tutor.KeyMasteryAchieved] != true || st[tutor.KeyLastRoutedTo] != "pathplanner" {
		t.Errorf("final state: mastery_achieved %v, last_routed_to %v", st[tutor.KeyMasteryAchieved], st[tutor.KeyLastRoutedTo])
	}
}

// TestConverseEOFPausesQuiz: a script that ends mid-quiz pauses the quiz instead of failing.
func TestConverseEOFPausesQuiz(t *testing.T) {
	in := strings.NewReader("teach me addition\n15\nquiz me\n")
	var out strings.Builder
	st, err := tutor.Converse(t.Context(), tutor.ConverseConfig{}, in, &out)
	if err != nil {
		t.Fatal(err)
	}
	if st[tutor.KeyQuizPaused] != true {
		t.Errorf("quiz_paused = %v, want true; transcript:\n%s", st[tutor.KeyQuizPaused], out.String())
	}
}

// TestConverseEOFStopsDiagnosticUngraded: a conversation that ends during the diagnostic's
// quick check leaves no grades behind: the learner left, which is not a wrong answer.
func TestConverseEOFStopsDiagnosticUngraded(t *testing.T) {
	var out strings.Builder
	st, err := tutor.Converse(t.Context(), tutor.ConverseConfig{}, strings.NewReader("teach me fractions\n"), &out)
	if err != nil {
		t.Fatal(err)
	}
	if _, graded := st[tutor.KeyMastery]; graded || st["diagnostic_complete"] != false {
		t.Errorf("state %v: want the diagnostic incomplete and no mastery estimated", st)
	}
	if strings.Contains(out.String(), "not quite") || !strings.Contains(out.String(), "nothing was graded") {
		t.Errorf("transcript grades the learner who left:\n%s", out.String())
	}
}

// TestConverseMaster: "/master TOPIC" runs the mastery loop from the conversation, its quiz
// questions answered by the following lines.
func TestConverseMaster(t *testing.T) {
	c := tutor.DefaultCorpus()
	var lines []string
	for _, q := range c.Draw("addition", 5, 1, "quiz 1") {
		lines = append(lines, q.Answer)
	}
	in := strings.NewReader("/master addition\n" + strings.Join(lines, "\n") + "\n/master calculus\n")
	var out strings.Builder
	st, err := tutor.Converse(t.Context(), tutor.ConverseConfig{}, in, &out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"[mastery_loop ← /master]", "1 learning cycle(s) on Addition: mastery 1.00 — mastered.", `unknown topic "calculus"`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("transcript lacks %q:\n%s", want, out.String())
		}
	}
	if st[tutor.KeyMasteryAchieved] != true {
		t.Errorf("mastery_achieved = %v", st[tutor.KeyMasteryAchieved])
	}
}

// TestConverseReplies: what the learner hears when a message lacks what it needs — a topic
// to learn, a topic to master.
func TestConverseReplies(t *testing.T) {
	for _, tt := range []struct {
		name, in, want, not string
	}{
		// Seed 003's INVALID_INPUT: no topic named, so ask which; not RAG_EMPTY's "no material".
		{"teach me, no topic", "teach me\n", "Which topic would you like to learn? I can teach: addition, subtraction,", "no material"},
		{"want to learn, no topic", "I want to learn\n", "Which topic would you like to learn?", "no material"},
		{"teach me an unknown topic", "teach me calculus\n", "I have no material on that. Related topics you could start with:", "Which topic"},
		{"/master, no topic", "/master\n", "Usage: /master TOPIC runs the mastery loop on a topic: addition, subtraction,", "unknown topic"},
		{"/master, blank topic", "/master   \n", "Usage: /master TOPIC", "unknown topic"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			if _, err := tutor.Converse(t.Context(), tutor.ConverseConfig{}, strings.NewReader(tt.in), &out); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out.String(), tt.want) || strings.Contains(out.String(), tt.not) {
				t.Errorf("transcript lacks %q or has %q:\n%s", tt.want, tt.not, out.String())
			}
		})
	}
}

// TestConverseCancelWhileWaiting: cancelling the context ends a conversation that is waiting
// for the learner's next line, as Ctrl-C does at a terminal.
func TestConverseCancelWhileWaiting(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close() // lets the reader's blocked Read end
	ctx, cancel := context.WithCancel(t.Context())
	var out strings.Builder
	errc := make(chan error, 1)
	go func() {
		_, err := tutor.Converse(ctx, tutor.ConverseConfig{}, pr, &out)
		errc <- err
	}()
	if _, err := io.WriteString(pw, "teach me fractions\n"); err != nil { // the diagnostic now waits for an answer
		t.Fatal(err)
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("Converse = %v, want context.Canceled", err)
	}
}

// TestConverseMasterPausedQuiz: a quiz paused inside "/master TOPIC" — the learner says
// "pause", or the input ends, which answers "pause" — stops the mastery loop with a sentence
// for the learner, not the engine's error chain, and keeps the quiz paused so "continue quiz"
// picks it up where it stopped.
func TestConverseMasterPausedQuiz(t *testing.T) {
	var answers []string
	for _, q := range tutor.DefaultCorpus().Draw("fractions", 5, 1, "quiz 1") {
		answers = append(answers, q.Answer)
	}
	for _, tt := range []struct {
		name, in string
		wants    []string
		index    int  // quiz_question_index left in state
		paused   bool // quiz_paused left in state
	}{
		{"input ends at question 1", "/master fractions\n",
			[]string{"[mastery_loop ← /master]\nMastery work on Fractions stopped in cycle 1: the quiz is paused after 0 of 5 questions, nothing graded yet.",
				`Say "continue quiz" to pick it up where you left off, or "/master fractions" to start the mastery loop over with a new quiz.`},
			0, true},
		{"pause at question 2", "/master fractions\n" + answers[0] + "\npause\n",
			[]string{"Q1: Correct.\nQuestion 2 of 5", "Mastery work on Fractions stopped in cycle 1: the quiz is paused after 1 of 5 questions, nothing graded yet."},
			1, true},
		{"pause, then continue quiz", "/master fractions\n" + answers[0] + "\npause\ncontinue quiz\n" + strings.Join(answers[1:], "\n") + "\n",
			[]string{"the quiz is paused after 1 of 5 questions", "> [quiz ← Resume paused quiz",
				"Resuming your Fractions quiz at question 2 of 5.", "Quiz on Fractions complete: 5 of 5 correct (100%).",
				"[feedback ← After quiz completion", "You have mastered Fractions!"},
			5, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			st, err := tutor.Converse(t.Context(), tutor.ConverseConfig{}, strings.NewReader(tt.in), &out)
			if err != nil {
				t.Fatal(err)
			}
			transcript := out.String()
			for _, want := range tt.wants {
				if !strings.Contains(transcript, want) {
					t.Errorf("transcript lacks %q", want)
				}
			}
			for _, not := range []string{"no completed quiz", "troupe:", "flow:", "trace", "Let's run the diagnostic first"} {
				if strings.Contains(transcript, not) {
					t.Errorf("transcript has %q", not)
				}
			}
			if st[tutor.KeyQuizPaused] != tt.paused || st[tutor.KeyQuizQuestionIndex] != tt.index || st[tutor.KeyCurrentTopic] != "fractions" {
				t.Errorf("state: quiz_paused %v, quiz_question_index %v, current_topic %v; want %v, %d, fractions",
					st[tutor.KeyQuizPaused], st[tutor.KeyQuizQuestionIndex], st[tutor.KeyCurrentTopic], tt.paused, tt.index)
			}
			if t.Failed() {
				t.Log(transcript)
			}
		})
	}
}
