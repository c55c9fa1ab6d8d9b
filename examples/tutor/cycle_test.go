package tutor_test

import (
	"strings"
	"testing"

	"github.com/troupehq/troupe/examples/tutor"
	"github.com/troupehq/troupe/flow"
)

// TestMasteryLoop runs seed 003's MasteryLoop (flow.Loop over the flow.Sequential learning
// cycle) with a learner who answers every quiz question right, and one who answers wrong.
func TestMasteryLoop(t *testing.T) {
	t.Run("correct answers reach mastery", func(t *testing.T) {
		s, l := newSession(t, 9)
		l.set("wrong") // the diagnostic finds fractions unknown: mastery 0.1
		send(t, s, "teach me fractions")
		l.set("right")
		out, err := s.Master(t.Context(), "fractions")
		if err != nil {
			t.Fatal(err)
		}
		// 0.3·0.1 + 0.7·1 = 0.73 after cycle 1; 0.3·0.73 + 0.7 = 0.919 after cycle 2.
		if out.Recommendation != flow.ReasonMastered || !out.MasteryAchieved || out.TotalCycles != 2 || out.FinalMastery != 0.919 {
			t.Errorf("outcome %+v; want mastered after 2 cycles at 0.919", out)
		}
		if n := len(l.questions()); n != 10 {
			t.Errorf("the learner was asked %d questions, want 2 quizzes of 5", n)
		}
		st := s.State()
		if m := st[tutor.KeyMastery].(map[string]float64)["fractions"]; m != 0.919 {
			t.Errorf("session mastery of fractions = %v, want the loop's 0.919", m)
		}
		// The path planner now plans past fractions.
		r := send(t, s, "what's next")
		if got := s.State()["next_topic"]; got == "fractions" {
			t.Errorf("next_topic after mastering fractions = %v: %s", got, r.Text())
		}
	})
	t.Run("wrong answers need remediation", func(t *testing.T) {
		s, l := newSession(t, 9)
		l.set("wrong")
		out, err := s.Master(t.Context(), "decimals")
		if err != nil {
			t.Fatal(err)
		}
		if out.Recommendation != flow.ReasonNeedsRemediation || out.MasteryAchieved || out.TotalCycles != flow.DefaultMaxIterations || out.FinalMastery != 0 {
			t.Errorf("outcome %+v; want needs_remediation after %d cycles at 0", out, flow.DefaultMaxIterations)
		}
		if !strings.Contains(out.Text, "needs remediation") || !strings.Contains(out.Text, "procedural") {
			t.Errorf("text: %s", out.Text)
		}
	})
	t.Run("unknown topic", func(t *testing.T) {
		s, _ := newSession(t, 9)
		if _, err := s.Master(t.Context(), "calculus"); err == nil || !strings.Contains(err.Error(), `unknown topic "calculus"`) {
			t.Errorf("err = %v", err)
		}
	})
}

// TestLearningCycleRevisitsWeakSkills: after a quiz with wrong answers, the next cycle's
// explanation names the skills the feedback found weak.
func TestLearningCycleRevisitsWeakSkills(t *testing.T) {
	s, l := newSession(t, 4)
	send(t, s, "teach me percentages")
	l.set("wrong")
	send(t, s, "quiz me")
	areas, _ := s.State()["improvement_areas"].([]string)
	if len(areas) == 0 {
		t.Fatalf("no improvement areas after a wrong quiz: %v", s.State())
	}
	r := send(t, s, "explain percentages")
	if !strings.Contains(r.Text(), "Your last quiz showed these need work: "+strings.Join(areas, ", ")) {
		t.Errorf("explanation does not revisit %v:\n%s", areas, r.Text())
	}
}
