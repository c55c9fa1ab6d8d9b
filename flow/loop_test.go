package flow_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/flow"
)

// quizQuestions are fraction sums a quiz agent asks about; expected answers are computed.
var quizQuestions = [][2]int{{2, 4}, {3, 6}, {4, 8}, {2, 6}, {4, 4}} // 1/a + 1/b

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func sum(q [2]int) string {
	n, d := q[0]+q[1], q[0]*q[1]
	g := gcd(n, d)
	return fmt.Sprintf("%d/%d", n/g, d/g)
}

// learningCycle is 003's LearningCycle (tutor → quiz → feedback) with scripted function agents.
// learner answers the quiz: it gets answers[cycle-1] questions right, and then guesses "0".
func learningCycle(answers []int) *flow.SequentialAgent {
	tutor := flow.Named("tutor", troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		topic, _ := d.ParsedQuery["topic"].(string)
		if topic == "" {
			return nil, &troupe.AgentError{Code: troupe.CodeInvalidInput, Message: "topic missing", FallbackAction: "ask user to clarify"}
		}
		gaps, _ := d.State("improvement_areas")
		return &troupe.Result{AgentResult: map[string]any{
			"explanation": fmt.Sprintf("To add 1/a + 1/b for %s, use the common denominator a·b; focus on %v", topic, gaps),
			"next_action": "quiz",
		}}, nil
	}), troupe.Writes("explanation"))
	quiz := flow.Named("quiz", troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		cycle := d.UserContext["loop_cycle"].(int)
		right := answers[min(cycle, len(answers))-1]
		var responses []any
		correct := 0
		for i, q := range quizQuestions {
			answer := "0" // the learner's guess, never right
			if i < right {
				answer = sum(q)
			}
			ok := answer == sum(q)
			if ok {
				correct++
			}
			responses = append(responses, map[string]any{"question_id": fmt.Sprintf("q%d", i+1), "answer": answer, "is_correct": ok})
		}
		return &troupe.Result{AgentResult: map[string]any{
			"quiz_responses": responses, "quiz_score": float64(correct) / float64(len(quizQuestions)), "quiz_complete": true,
		}}, nil
	}), troupe.Reads("explanation"), troupe.Writes("quiz_responses", "quiz_score"))
	feedback := flow.Named("feedback", troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		score, _ := d.State("quiz_score")
		responses, _ := d.State("quiz_responses")
		threshold, _ := d.ParsedQuery["mastery_threshold"].(float64)
		var weak []any
		for _, r := range responses.([]any) {
			if r := r.(map[string]any); r["is_correct"] == false {
				weak = append(weak, r["question_id"])
			}
		}
		s := score.(float64)
		return &troupe.Result{AgentResult: map[string]any{
			"feedback_text":     fmt.Sprintf("You scored %.0f%%; review %v", s*100, weak),
			"improvement_areas": weak, "mastery_score": s, "mastery_achieved": s >= threshold,
			"cycle_number": d.UserContext["loop_cycle"],
		}}, nil
	}), troupe.Reads("quiz_score", "quiz_responses"), troupe.Writes("feedback_text", "mastery_score", "improvement_areas"))
	return flow.Sequential(flow.SequentialConfig{}, tutor, quiz, feedback)
}

func masteryLoop(answers []int, max int) *flow.LoopAgent {
	return flow.Loop(flow.LoopConfig{MaxIterations: max, Until: func(it flow.Iteration) bool {
		score, ok := it.State("mastery_score")
		return ok && score.(float64) >= 0.85
	}}, flow.Named("learning_cycle", learningCycle(answers), troupe.Writes("mastery_score", "improvement_areas")))
}

func learnerDispatch() *troupe.Dispatch {
	d := troupe.NewDispatch()
	d.Query = "teach me fractions"
	d.ParsedQuery = map[string]any{"topic": "fractions", "learner_level": "beginner", "mastery_threshold": 0.85}
	return d
}

func TestLearningCycle(t *testing.T) {
	d := learnerDispatch()
	d.UserContext = map[string]any{"loop_cycle": 1}
	res, err := learningCycle([]int{5}).Run(t.Context(), d)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"explanation", "quiz_score", "feedback_text", "mastery_achieved", "cycle_number"} {
		if _, ok := res.AgentResult[k]; !ok {
			t.Errorf("LearningCycle output lacks %s: %v", k, res.AgentResult)
		}
	}
	if res.AgentResult["quiz_score"] != 1.0 || res.AgentResult["mastery_achieved"] != true {
		t.Errorf("a learner answering everything: score %v, mastery %v", res.AgentResult["quiz_score"], res.AgentResult["mastery_achieved"])
	}
}

func TestMasteryLoop(t *testing.T) {
	t.Run("mastered on cycle 3", func(t *testing.T) {
		out, err := masteryLoop([]int{2, 3, 5}, 0).Execute(t.Context(), learnerDispatch())
		if err != nil {
			t.Fatal(err)
		}
		if out.Cycles != 3 || !out.Escalated || !out.ConditionMet || out.Reason != flow.ReasonMastered {
			t.Errorf("outcome = %d cycles, escalated %v, met %v, %q; want 3, true, true, mastered", out.Cycles, out.Escalated, out.ConditionMet, out.Reason)
		}
		var scores []any
		for _, r := range out.Results {
			scores = append(scores, r.AgentResult["mastery_score"])
		}
		if diff := cmp.Diff([]any{0.4, 0.6, 1.0}, scores); diff != "" {
			t.Errorf("mastery per cycle (-want +got):\n%s", diff)
		}
		// The second cycle's tutor saw the first cycle's weak areas in state.
		if got := out.Results[1].AgentResult["explanation"]; got != "To add 1/a + 1/b for fractions, use the common denominator a·b; focus on [q3 q4 q5]" {
			t.Errorf("cycle 2 explanation = %q", got)
		}
	})
	t.Run("never mastered", func(t *testing.T) {
		loop := masteryLoop([]int{2}, 4)
		out, err := loop.Execute(t.Context(), learnerDispatch())
		if err != nil {
			t.Fatal(err)
		}
		if out.Cycles != 4 || out.ConditionMet || out.Reason != flow.ReasonNeedsRemediation {
			t.Errorf("outcome = %d cycles, met %v, %q; want 4, false, needs_remediation", out.Cycles, out.ConditionMet, out.Reason)
		}
		res, err := loop.Run(t.Context(), learnerDispatch())
		if err != nil || res.AgentResult["total_cycles"] != 4 || res.AgentResult["escalation_reason"] != flow.ReasonNeedsRemediation || res.AgentResult["mastery_score"] != 0.4 {
			t.Errorf("Run = %v, %v", res.AgentResult, err)
		}
	})
	t.Run("zero max iterations is bounded", func(t *testing.T) {
		out, err := masteryLoop([]int{0}, 0).Execute(t.Context(), learnerDispatch())
		if err != nil || out.Cycles != flow.DefaultMaxIterations {
			t.Errorf("cycles = %d, %v; want %d", out.Cycles, err, flow.DefaultMaxIterations)
		}
	})
	t.Run("a failed cycle stops the loop with its error", func(t *testing.T) {
		d := learnerDispatch()
		delete(d.ParsedQuery, "topic")
		out, err := masteryLoop([]int{5}, 3).Execute(t.Context(), d)
		var ae *troupe.AgentError
		if !errors.As(err, &ae) || ae.Code != troupe.CodeInvalidInput || out.Cycles != 1 {
			t.Errorf("err = %v after %d cycles; want INVALID_INPUT after 1", err, out.Cycles)
		}
		var se *flow.StepError
		if !errors.As(err, &se) || se.Step != 1 || se.Agent != "learning_cycle" {
			t.Errorf("err = %v, want a StepError of cycle 1 (learning_cycle)", err)
		}
		// Through the cycle's sequence down to the tutor's own error.
		if !errors.As(se.Cause, &se) || se.Agent != "tutor" || !strings.HasSuffix(err.Error(), "tutor: topic missing") {
			t.Errorf("err = %v, want the tutor's failure inside", err)
		}
	})
	t.Run("negative bound", func(t *testing.T) {
		if _, err := masteryLoop([]int{5}, -1).Execute(t.Context(), learnerDispatch()); err == nil {
			t.Error("negative MaxIterations accepted")
		}
	})
}

// TestLoopConfidence: a loop answers with its last cycle's output, which refined the earlier
// ones', so it reports that cycle's confidence, not the least of them; a failed cycle answers
// nothing, and a loop it ended reports the last completed cycle's.
func TestLoopConfidence(t *testing.T) {
	tests := []struct {
		name  string
		cycle []*float64 // each cycle's confidence; the last one fails when fail is set
		fail  bool
		want  *float64
	}{
		{"refined until sure", []*float64{troupe.Ptr(0.3), troupe.Ptr(0.6), troupe.Ptr(0.95)}, false, troupe.Ptr(0.95)},
		{"the last cycle reports none", []*float64{troupe.Ptr(0.3), nil}, false, nil},
		{"ended by a failed cycle", []*float64{troupe.Ptr(0.3), troupe.Ptr(0.6), troupe.Ptr(0.1)}, true, troupe.Ptr(0.6)},
		{"the first cycle failed", []*float64{troupe.Ptr(0.1)}, true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			attempt := troupe.AgentFunc(func(_ context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
				n := d.UserContext["loop_cycle"].(int)
				res := &troupe.Result{AgentResult: map[string]any{"attempt": n}, Confidence: tt.cycle[n-1]}
				if tt.fail && n == len(tt.cycle) {
					return res, errors.New("attempt broke")
				}
				return res, nil
			})
			loop := flow.Loop(flow.LoopConfig{MaxIterations: len(tt.cycle), Until: func(it flow.Iteration) bool {
				return it.Result.Confidence != nil && *it.Result.Confidence >= 0.9
			}}, flow.Named("attempt", attempt))
			res, err := loop.Run(t.Context(), troupe.NewDispatch())
			if (err != nil) != tt.fail {
				t.Fatalf("err = %v, want an error: %v", err, tt.fail)
			}
			if diff := cmp.Diff(tt.want, res.Confidence); diff != "" {
				t.Errorf("confidence (-want +got):\n%s", diff)
			}
		})
	}
}
