package tutor_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/troupehq/troupe"
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
	t.Run("a paused quiz stops the loop", func(t *testing.T) {
		s, l := newSession(t, 9)
		// Cycle 1's quiz is answered wrong (mastery 0); cycle 2's is paused at its first question.
		l.set("script", "0", "0", "0", "0", "0", "pause")
		out, err := s.Master(t.Context(), "decimals")
		if err != nil {
			t.Fatal(err)
		}
		if out.Recommendation != tutor.ReasonQuizPaused || out.MasteryAchieved || out.TotalCycles != 2 || out.FinalMastery != 0 {
			t.Errorf("outcome %+v; want quiz_paused in cycle 2 at mastery 0", out)
		}
		if want := "Mastery work on Decimals stopped in cycle 2: the quiz is paused after 0 of 5 questions, nothing graded yet; your mastery stays 0.00."; !strings.Contains(out.Text, want) {
			t.Errorf("text lacks %q: %s", want, out.Text)
		}
		st := s.State()
		if st[tutor.KeyQuizPaused] != true || st[tutor.KeyQuizComplete] != false {
			t.Errorf("state: quiz_paused %v, quiz_complete %v; want the quiz paused", st[tutor.KeyQuizPaused], st[tutor.KeyQuizComplete])
		}
		// The paused quiz resumes at its first question, and feedback grades it.
		l.set("right")
		r := send(t, s, "continue quiz")
		if !strings.Contains(r.Text(), "Resumed at question 1 of 5.") || !strings.Contains(r.Text(), "Your mastery moved from 0.00 to 0.70") {
			t.Errorf("continue quiz:\n%s", r.Text())
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

// TestFeedbackPausedQuiz: feedback grades only a completed quiz. A quiz the learner paused is
// a stop, not missing state: nothing is graded and mastery is left alone. No quiz at all is
// seed 003's STATE_MISSING.
func TestFeedbackPausedQuiz(t *testing.T) {
	a := tutor.NewSpecialists(nil, tutor.Config{})
	t.Run("no quiz", func(t *testing.T) {
		_, err := a.Feedback(t.Context(), troupe.NewDispatch())
		var ae *troupe.AgentError
		if !errors.As(err, &ae) || ae.Code != troupe.CodeStateMissing {
			t.Errorf("err = %v, want STATE_MISSING", err)
		}
	})
	paused := func(mastery map[string]float64) *troupe.Dispatch {
		d := troupe.NewDispatch()
		q := a.Corpus().Draw("fractions", 1, 1, "quiz 1")[0]
		d.UpstreamResults = []troupe.UpstreamResult{{Agent: "quiz", Result: map[string]any{
			tutor.KeyQuizQuestions: []map[string]any{{"question_id": q.ID, "concept_name": "fractions", "expected_answer": q.Answer}},
			tutor.KeyQuizResponses: []any{}, tutor.KeyQuizScore: 0.0, tutor.KeyQuizQuestionIndex: 0,
			tutor.KeyQuizPaused: true, tutor.KeyQuizComplete: false, tutor.KeyMastery: mastery,
		}}}
		return d
	}
	t.Run("paused quiz", func(t *testing.T) {
		res, err := a.Feedback(t.Context(), paused(nil))
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{tutor.KeyMasteryScore, tutor.KeyMasteryAchieved, tutor.KeyMastery} {
			if v, ok := res.AgentResult[k]; ok {
				t.Errorf("a paused quiz wrote %s = %v", k, v)
			}
		}
		if want := "Quiz on Fractions paused after 0 of 1 questions; nothing graded yet."; res.Summary() != want {
			t.Errorf("summary %q, want %q", res.Summary(), want)
		}
	})
	t.Run("paused quiz, mastery known", func(t *testing.T) {
		mastery := map[string]float64{"fractions": 0.4, "division": 0.9}
		res, err := a.Feedback(t.Context(), paused(mastery))
		if err != nil {
			t.Fatal(err)
		}
		got := [3]any{res.AgentResult[tutor.KeyMasteryScore], res.AgentResult[tutor.KeyMasteryAchieved], res.AgentResult[tutor.KeyMastery]}
		if diff := cmp.Diff([3]any{0.4, false, mastery}, got); diff != "" {
			t.Errorf("mastery_score, mastery_achieved, mastery: want them unchanged (-want +got):\n%s", diff)
		}
	})
}

// runtime is a dispatch's runtime outside an engine: session state and a learner.
type runtime struct {
	state map[string]any
	human troupe.HumanHandler
}

func (r runtime) State(k string) (any, bool) { v, ok := r.state[k]; return v, ok }
func (r runtime) Progress(string, any)       {}
func (r runtime) Partial(map[string]any)     {}
func (r runtime) Ask(ctx context.Context, q troupe.Question) (troupe.Answer, error) {
	return r.human.Answer(ctx, q)
}

// Each cycle of the mastery loop reports seed 003's LearningCycle output, cycle_number
// included: 1, 2, … in the order the cycles ran.
func TestLearningCycleNumbersItsCycles(t *testing.T) {
	a := tutor.NewSpecialists(nil, tutor.Config{})
	l := &learner{corpus: a.Corpus(), mode: "wrong"} // never mastered: all three cycles run
	d := troupe.NewDispatch()
	d.Bind(runtime{state: map[string]any{tutor.KeyCurrentTopic: "decimals"}, human: l})
	out, err := a.MasteryLoop(3).Execute(t.Context(), d)
	if err != nil {
		t.Fatal(err)
	}
	var got []any
	for _, r := range out.Results {
		for _, k := range []string{"explanation", "quiz_score", "feedback_text", "mastery_achieved"} {
			if _, ok := r.AgentResult[k]; !ok {
				t.Errorf("cycle %d: no %s in %v", len(got)+1, k, r.AgentResult)
			}
		}
		got = append(got, r.AgentResult["cycle_number"])
	}
	if diff := cmp.Diff([]any{1, 2, 3}, got); diff != "" {
		t.Errorf("cycle_number of each cycle (-want +got):\n%s", diff)
	}
}
