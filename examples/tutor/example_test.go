package tutor_test

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/examples/tutor"
)

// A session routes each message with seed 003's coordinator and carries the state on; the
// Human answers the questions the agents ask (here, a learner who knows every answer).
func ExampleSession() {
	corpus := tutor.DefaultCorpus()
	learner := troupe.HumanFunc(func(_ context.Context, q troupe.Question) (troupe.Answer, error) {
		id := q.Data.(map[string]any)["question_id"].(string)
		qq, _ := corpus.Question(id)
		return troupe.Answer{QuestionID: q.ID, Text: qq.Answer}, nil
	})
	s, err := tutor.NewSession(tutor.SessionConfig{Human: learner, Seed: 1})
	if err != nil {
		panic(err)
	}
	defer s.Close(context.Background())
	for _, msg := range []string{"teach me decimals", "quiz me", "what's next"} {
		r, err := s.Send(context.Background(), msg)
		if err != nil {
			panic(err)
		}
		for _, t := range r.Turns {
			fmt.Printf("%-18q → %s (%s)\n", msg, t.Agent, t.Rule)
		}
	}
	fmt.Println("mastery of decimals:", s.State()[tutor.KeyMastery].(map[string]float64)["decimals"])
	// Output:
	// "teach me decimals" → diagnostic (new_topic)
	// "quiz me"          → quiz (quiz_request)
	// "quiz me"          → feedback (after_quiz)
	// "what's next"      → pathplanner (progress_inquiry)
	// mastery of decimals: 0.94
}

// Converse reads a conversation line by line, as `troupe chat` does: messages, and the
// answers to the questions asked in between.
func ExampleConverse() {
	script := "teach me addition\n15\nwhat's next\n" // addition has no prerequisites: one quick check
	var out strings.Builder
	if _, err := tutor.Converse(context.Background(), tutor.ConverseConfig{Echo: true}, strings.NewReader(script), &out); err != nil {
		panic(err)
	}
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(line, "[") {
			fmt.Fprintln(os.Stdout, line)
		}
	}
	// Output:
	// [diagnostic ← New topic start: message matches "teach me" (rule new_topic)]
	// [pathplanner ← Progress inquiry: message matches "what's next" (rule progress_inquiry)]
}
