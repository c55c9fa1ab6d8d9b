package tutor_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/examples/tutor"
)

// dispatch is a dispatch of msg outside an engine, over state and a learner who answers right.
func dispatch(a *tutor.Specialists, msg string, parsed, state map[string]any) *troupe.Dispatch {
	d := troupe.NewDispatch()
	d.Query, d.ParsedQuery = msg, parsed
	d.Bind(runtime{state: state, human: &learner{corpus: a.Corpus(), mode: "right"}})
	return d
}

// field decodes the agent_result key of res as JSON into out.
func field(t *testing.T, res *troupe.Result, key string, out any) {
	t.Helper()
	b, err := json.Marshal(res.AgentResult[key])
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("%s: %v", key, err)
	}
}

// Seed 003's Prepare Quiz takes a difficulty — easy | medium | hard | adaptive — and each
// question it prepares carries one. A quiz asked for at a difficulty holds only questions of
// that difficulty (as many as the topic has, up to NumQuestions: fractions has 2 easy, 3
// medium and 1 hard); adaptive picks the difficulty from the learner's mastery of the topic
// (below the required 0.5: easy; below the 0.85 threshold: medium; else hard), or, unassessed,
// from the learner level. A quiz asked for at no difficulty draws from all of them, as before.
func TestQuizDifficulty(t *testing.T) {
	a := tutor.NewSpecialists(nil, tutor.Config{})
	fractions := func(m float64) map[string]any {
		return map[string]any{tutor.KeyCurrentTopic: "fractions", tutor.KeyMastery: map[string]float64{"fractions": m}}
	}
	for _, tt := range []struct {
		name   string
		msg    string
		parsed map[string]any
		state  map[string]any
		want   []string // the difficulties of the questions, in the order asked; nil: mixed, 5
		text   string   // in the summary
	}{
		{name: "easy", msg: "quiz me on easy fractions", want: []string{"easy", "easy"}, text: "Easy quiz on Fractions complete: 2 of 2 correct"},
		{name: "medium", msg: "quiz me, medium please", want: []string{"medium", "medium", "medium"}},
		{name: "hard", msg: "quiz me on hard fractions", want: []string{"hard"}, text: "Fractions has 1 hard question"},
		{name: "parsed_query", msg: "quiz me", parsed: map[string]any{"difficulty": "hard"}, want: []string{"hard"}},
		{name: "the message over parsed_query", msg: "quiz me easy", parsed: map[string]any{"difficulty": "hard"}, want: []string{"easy", "easy"}},
		{name: "none: mixed", msg: "quiz me"},
		{name: "adaptive, mastery 0.1", msg: "quiz me adaptive", state: fractions(0.1), want: []string{"easy", "easy"},
			text: "your mastery of Fractions is 0.10, so easy questions"},
		{name: "adaptive, mastery 0.6", msg: "quiz me adaptive", state: fractions(0.6), want: []string{"medium", "medium", "medium"}},
		{name: "adaptive, mastery 0.9", msg: "quiz me adaptive", state: fractions(0.9), want: []string{"hard"}},
		{name: "adaptive, advanced learner", msg: "quiz me adaptive", state: map[string]any{tutor.KeyCurrentTopic: "fractions", tutor.KeyLearnerLevel: "advanced"}, want: []string{"hard"}},
		{name: "adaptive, beginner", msg: "quiz me", parsed: map[string]any{"difficulty": "adaptive"}, state: map[string]any{tutor.KeyCurrentTopic: "fractions", tutor.KeyLearnerLevel: "beginner"}, want: []string{"easy", "easy"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			state := tt.state
			if state == nil {
				state = map[string]any{tutor.KeyCurrentTopic: "fractions"}
			}
			res, err := a.Quiz(t.Context(), dispatch(a, tt.msg, tt.parsed, state))
			if err != nil {
				t.Fatal(err)
			}
			var items []struct {
				ID         string `json:"question_id"`
				Difficulty string `json:"difficulty"`
			}
			field(t, res, tutor.KeyQuizQuestions, &items)
			var got []string
			for _, it := range items {
				q, ok := a.Corpus().Question(it.ID)
				if !ok || q.Difficulty != it.Difficulty {
					t.Errorf("question %s: difficulty %q, the corpus says %v", it.ID, it.Difficulty, q)
				}
				got = append(got, it.Difficulty)
			}
			if tt.want == nil {
				slices.Sort(got)
				if len(got) != 5 || len(slices.Compact(got)) < 2 {
					t.Errorf("difficulties %v; want 5 questions of mixed difficulty", got)
				}
			} else if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("difficulties (-want +got):\n%s", diff)
			}
			if !strings.Contains(res.Summary(), tt.text) {
				t.Errorf("summary lacks %q:\n%s", tt.text, res.Summary())
			}
		})
	}
	t.Run("unknown difficulty", func(t *testing.T) {
		_, err := a.Quiz(t.Context(), dispatch(a, "quiz me", map[string]any{"difficulty": "extreme"}, map[string]any{tutor.KeyCurrentTopic: "fractions"}))
		var ae *troupe.AgentError
		if !errors.As(err, &ae) || ae.Code != troupe.CodeInvalidInput || !strings.Contains(ae.Message, `"extreme"`) {
			t.Errorf("err = %v, want INVALID_INPUT naming \"extreme\"", err)
		}
	})
}

// A paused quiz resumes when the learner asks for a quiz at its difficulty, or at none; a
// quiz asked for at another difficulty is a new quiz.
func TestQuizDifficultyAndPause(t *testing.T) {
	s, l := newSession(t, 1)
	send(t, s, "teach me fractions")
	l.set("script", "pause")
	send(t, s, "quiz me on easy fractions")
	if s.State()[tutor.KeyQuizPaused] != true {
		t.Fatal("the easy quiz did not pause")
	}
	l.set("script", "pause")
	r := send(t, s, "quiz me on hard fractions")
	if strings.Contains(r.Text(), "Resumed") || len(l.questions()) != 1 {
		t.Errorf("a hard quiz resumed the paused easy one:\n%s", r.Text())
	}
	if q, _ := tutor.DefaultCorpus().Question(l.questions()[0]); q == nil || q.Difficulty != "hard" {
		t.Errorf("asked %v, want a hard question", l.questions())
	}
	l.set("right")
	r = send(t, s, "quiz me hard")
	if !strings.Contains(r.Text(), "Resumed at question 1 of 1.") {
		t.Errorf("the paused hard quiz did not resume:\n%s", r.Text())
	}
}

// Seed 003 routes "resume" to resuming the paused quiz: a difficulty word in the same message
// ("that was hard, resume") does not start a new quiz in its place.
func TestQuizResumeWinsOverDifficultyWord(t *testing.T) {
	s, l := newSession(t, 1)
	send(t, s, "teach me fractions")
	l.set("script", "pause")
	send(t, s, "quiz me on easy fractions")
	if s.State()[tutor.KeyQuizPaused] != true {
		t.Fatal("the easy quiz did not pause")
	}
	l.set("right")
	r := send(t, s, "that was hard, resume")
	if !strings.Contains(r.Text(), "Resumed at question") {
		t.Errorf("resume started a new quiz instead of resuming the paused one:\n%s", r.Text())
	}
	for _, id := range l.questions() {
		if q, _ := tutor.DefaultCorpus().Question(id); q == nil || q.Difficulty != "easy" {
			t.Errorf("asked %s, want the paused easy quiz's questions", id)
		}
	}
}

// Seed 003's PathPlanner takes the learner's stated goals. The path holds only what the goals
// need (each goal and its unmastered prerequisites), goal by goal in the order stated, each
// concept after its prerequisites. Goals come from the message ("what's next for
// multiplication and subtraction", in the order named), else parsed_query["goals"], else the
// session state's goals; without any, the current topic is the goal, as before.
func TestPathPlannerGoals(t *testing.T) {
	a := tutor.NewSpecialists(nil, tutor.Config{})
	known := map[string]float64{"addition": 0.9, "subtraction": 0.9, "multiplication": 0.9, "division": 0.9}
	for _, tt := range []struct {
		name   string
		msg    string
		parsed map[string]any
		state  map[string]any
		want   []string // learning_path's topics
		text   string   // in path_reasoning
	}{
		{name: "no goals: the current topic", msg: "what's next", state: map[string]any{tutor.KeyCurrentTopic: "fractions"},
			want: []string{"addition", "subtraction", "multiplication", "division", "fractions"}},
		{name: "a goal filters", msg: "what's next", state: map[string]any{tutor.KeyCurrentTopic: "fractions", "goals": []string{"subtraction"}},
			want: []string{"addition", "subtraction"}, text: "Toward your goal subtraction"},
		{name: "goals order", msg: "what's next", state: map[string]any{"goals": []string{"multiplication", "subtraction"}},
			want: []string{"addition", "multiplication", "subtraction"}},
		{name: "goals order, reversed", msg: "what's next", state: map[string]any{"goals": []string{"subtraction", "multiplication"}},
			want: []string{"addition", "subtraction", "multiplication"}},
		{name: "goals by name and alias", msg: "what's next", state: map[string]any{tutor.KeyCurrentTopic: "division", "goals": []any{"Percentages", "take away"}, tutor.KeyMastery: map[string]float64{"addition": 0.9}},
			want: []string{"subtraction", "multiplication", "division", "fractions", "decimals", "percentages"}},
		{name: "mastered prerequisites left out", msg: "my progress", state: map[string]any{"goals": []string{"decimals"}, tutor.KeyMastery: known},
			want: []string{"fractions", "decimals"}},
		{name: "goals named in the message", msg: "what's next for multiplication and subtraction?", state: map[string]any{tutor.KeyCurrentTopic: "fractions"},
			want: []string{"addition", "multiplication", "subtraction"}, text: "Toward your goals multiplication, then subtraction"},
		{name: "the message over state", msg: "what's next for subtraction", state: map[string]any{"goals": []string{"percentages"}},
			want: []string{"addition", "subtraction"}},
		{name: "parsed_query", msg: "what's next", parsed: map[string]any{"goals": []any{"multiplication", "subtraction"}},
			state: map[string]any{"goals": []string{"percentages"}}, want: []string{"addition", "multiplication", "subtraction"}},
		{name: "a mastered goal", msg: "what's next", state: map[string]any{"goals": []string{"addition", "multiplication"}, tutor.KeyMastery: map[string]float64{"addition": 0.9}},
			want: []string{"multiplication"}, text: "You have mastered addition already."},
		{name: "an unknown goal", msg: "what's next", state: map[string]any{"goals": []string{"calculus", "subtraction"}},
			want: []string{"addition", "subtraction"}, text: `I have no material on "calculus".`},
		{name: "only unknown goals: the current topic", msg: "what's next", state: map[string]any{tutor.KeyCurrentTopic: "division", "goals": []string{"calculus"}},
			want: []string{"addition", "subtraction", "multiplication", "division"}, text: `I have no material on "calculus".`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, err := a.PathPlanner(t.Context(), dispatch(a, tt.msg, tt.parsed, tt.state))
			if err != nil {
				t.Fatal(err)
			}
			var path []struct {
				Topic string `json:"topic"`
			}
			field(t, res, "learning_path", &path)
			var got []string
			for _, p := range path {
				got = append(got, p.Topic)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("learning_path (-want +got):\n%s\n%s", diff, res.Summary())
			}
			if next := res.AgentResult["next_topic"]; len(got) > 0 && next != got[0] {
				t.Errorf("next_topic %v, want the path's first, %s", next, got[0])
			}
			if reasoning, _ := res.AgentResult["path_reasoning"].(string); !strings.Contains(reasoning, tt.text) {
				t.Errorf("path_reasoning lacks %q: %s", tt.text, reasoning)
			}
		})
	}
}

// SessionConfig.Goals are the session's stated goals: "what's next" plans toward them, not
// toward the current topic, and the state carries them from message to message.
func TestSessionGoals(t *testing.T) {
	l := &learner{corpus: tutor.DefaultCorpus(), mode: "wrong"}
	s, err := tutor.NewSession(tutor.SessionConfig{Human: l, Seed: 1, Goals: []string{"multiplication", "subtraction"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	send(t, s, "teach me fractions")
	for _, msg := range []string{"what's next", "my progress"} {
		r := send(t, s, msg)
		path, _ := s.State()["learning_path"].([]map[string]any)
		var got []string
		for _, p := range path {
			got = append(got, p["topic"].(string))
		}
		if diff := cmp.Diff([]string{"addition", "multiplication", "subtraction"}, got); diff != "" {
			t.Errorf("%q: learning_path (-want +got):\n%s\n%s", msg, diff, r.Text())
		}
	}
}

// FindTopics finds what FindTopic finds, among the others a message names, and never panics.
func FuzzFindTopics(f *testing.F) {
	for _, s := range []string{"what's next for multiplication and subtraction?", "50% of 3 decimal points", "percent%", "take away times tables", "", "%%"} {
		f.Add(s)
	}
	c := tutor.DefaultCorpus()
	f.Fuzz(func(t *testing.T, msg string) {
		all := c.FindTopics(msg)
		if k, ok := c.FindTopic(msg); ok && !slices.Contains(all, k) {
			t.Errorf("FindTopic(%q) = %s, not among FindTopics %v", msg, k.ID, all)
		}
		for i, k := range all {
			if slices.Contains(all[:i], k) {
				t.Errorf("FindTopics(%q) lists %s twice", msg, k.ID)
			}
		}
	})
}
