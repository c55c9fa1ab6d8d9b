package tutor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/examples/tutor"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// learner answers the tutor's questions: correctly from the corpus, wrongly, or from a script
// of lines, and remembers what it was asked.
type learner struct {
	corpus *tutor.Corpus
	mu     sync.Mutex
	mode   string   // "right", "wrong" or "script"
	lines  []string // for "script"
	asked  []string // question ids (corpus ids) in the order asked
}

func (l *learner) Answer(_ context.Context, q troupe.Question) (troupe.Answer, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	data, _ := q.Data.(map[string]any)
	id, _ := data["question_id"].(string)
	l.asked = append(l.asked, id)
	text := "0"
	switch l.mode {
	case "right":
		qq, ok := l.corpus.Question(id)
		if !ok {
			return troupe.Answer{}, fmt.Errorf("unknown question %q", id)
		}
		text = qq.Answer
	case "script":
		if len(l.lines) == 0 {
			return troupe.Answer{}, fmt.Errorf("script ran out of answers at %q", q.Prompt)
		}
		text, l.lines = l.lines[0], l.lines[1:]
	}
	return troupe.Answer{QuestionID: q.ID, Text: text}, nil
}

func (l *learner) set(mode string, lines ...string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.mode, l.lines, l.asked = mode, lines, nil
}

func (l *learner) questions() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.asked...)
}

func newSession(t testing.TB, seed uint64) (*tutor.Session, *learner) {
	t.Helper()
	l := &learner{corpus: tutor.DefaultCorpus(), mode: "right"}
	s, err := tutor.NewSession(tutor.SessionConfig{Human: l, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s, l
}

func send(t *testing.T, s *tutor.Session, msg string) tutor.Reply {
	t.Helper()
	r, err := s.Send(t.Context(), msg)
	if err != nil {
		t.Fatalf("Send(%q): %v", msg, err)
	}
	if len(r.Turns) == 0 {
		t.Fatalf("Send(%q): no turns", msg)
	}
	return r
}

type routed struct{ Rule, Agent string }

func routes(r tutor.Reply) []routed {
	var out []routed
	for _, t := range r.Turns {
		out = append(out, routed{t.Rule, t.Agent})
	}
	return out
}

// TestRoutingTableRows drives one conversation through every row of seed 003's routing
// table and checks the row that fired and the agent that answered.
func TestRoutingTableRows(t *testing.T) {
	s, l := newSession(t, 7)
	steps := []struct {
		name  string
		msg   string
		mode  string
		lines []string
		want  []routed
	}{
		{"new topic start", "I want to learn fractions", "right", nil, []routed{{"new_topic", "diagnostic"}}},
		{"question about content", "How does a common denominator help?", "right", nil, []routed{{"content_question", "tutor"}}},
		{"resume without a paused quiz is unclear", "resume", "right", nil, []routed{{"default", "tutor"}}},
		{"quiz request, paused", "test my knowledge", "script", []string{"5/6", "pause"}, []routed{{"quiz_request", "quiz"}}},
		{"progress inquiry", "what's my progress?", "right", nil, []routed{{"progress_inquiry", "pathplanner"}}},
		{"resume paused quiz, then feedback after quiz completion", "continue quiz", "right", nil,
			[]routed{{"resume_quiz", "quiz"}, {"after_quiz", "feedback"}}},
		{"what's next", "What's next?", "right", nil, []routed{{"progress_inquiry", "pathplanner"}}},
		{"unclear", "hmm, ok", "right", nil, []routed{{"default", "tutor"}}},
	}
	for _, st := range steps {
		l.set(st.mode, st.lines...)
		r := send(t, s, st.msg)
		if diff := cmp.Diff(st.want, routes(r)); diff != "" {
			t.Errorf("%s: %q routed (-want +got):\n%s\nreply: %s", st.name, st.msg, diff, r.Text())
		}
		if got := s.State()[tutor.KeyLastRoutedTo]; got != st.want[len(st.want)-1].Agent {
			t.Errorf("%s: last_routed_to = %v, want %s", st.name, got, st.want[len(st.want)-1].Agent)
		}
	}
}

// TestContinueQuizResumes pauses a quiz after two answers and checks that "continue quiz"
// asks the remaining questions of the same draw, not a new quiz, and that feedback grades all
// five answers.
func TestContinueQuizResumes(t *testing.T) {
	s, l := newSession(t, 3)
	send(t, s, "teach me decimals")
	// Answer two questions correctly, then pause (the script's third line).
	corpus := tutor.DefaultCorpus()
	drawn := corpus.Draw("decimals", 5, 3, "quiz 1")
	l.set("script", drawn[0].Answer, "1", "pause")
	r := send(t, s, "quiz me")
	if st := s.State(); st[tutor.KeyQuizPaused] != true || st[tutor.KeyQuizQuestionIndex] != 2 {
		t.Fatalf("after pausing: quiz_paused=%v index=%v, want true 2; reply: %s", st[tutor.KeyQuizPaused], st[tutor.KeyQuizQuestionIndex], r.Text())
	}
	if !strings.Contains(r.Text(), "continue quiz") {
		t.Errorf("pause reply does not say how to resume: %s", r.Text())
	}
	// Something else in between: state must survive it.
	send(t, s, "explain decimals")
	l.set("right")
	r = send(t, s, "continue quiz")
	var wantAsked []string
	for _, q := range drawn[2:] {
		wantAsked = append(wantAsked, q.ID)
	}
	if diff := cmp.Diff(wantAsked, l.questions()); diff != "" {
		t.Errorf("resumed quiz asked (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]routed{{"resume_quiz", "quiz"}, {"after_quiz", "feedback"}}, routes(r)); diff != "" {
		t.Errorf("routes (-want +got):\n%s", diff)
	}
	st := s.State()
	if st[tutor.KeyQuizScore] != 0.8 { // 4 of 5: the second answer, "1", was wrong
		t.Errorf("quiz_score = %v, want 0.8", st[tutor.KeyQuizScore])
	}
	if !strings.Contains(r.Turns[0].Text, "Resumed at question 3 of 5.") || !strings.Contains(r.Turns[1].Text, "4 of 5") {
		t.Errorf("reply: %s", r.Text())
	}
}

// TestQuizDrawIsSeeded checks that the quiz draws the same questions for the same seed and
// different ones for another.
func TestQuizDrawIsSeeded(t *testing.T) {
	draw := func(seed uint64) []string {
		s, l := newSession(t, seed)
		send(t, s, "teach me percentages")
		l.set("right")
		send(t, s, "quiz me")
		return l.questions()
	}
	a, b, c := draw(11), draw(11), draw(12)
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("same seed drew different questions (-first +second):\n%s", diff)
	}
	if cmp.Equal(a, c) {
		t.Errorf("seeds 11 and 12 drew the same questions %v", a)
	}
}

// TestStateMissingFallsBackToDiagnostic: a quiz before any diagnostic fails with STATE_MISSING,
// and the session runs the diagnostic instead (seed 003: "Run diagnostic first").
func TestStateMissingFallsBackToDiagnostic(t *testing.T) {
	s, _ := newSession(t, 1)
	r := send(t, s, "quiz me on fractions")
	tu := r.Turns[0]
	if tu.Routed != "quiz" || tu.Agent != "diagnostic" || !tu.Fallback {
		t.Fatalf("turn = routed %s, answered by %s (fallback %v), want quiz → diagnostic: %s", tu.Routed, tu.Agent, tu.Fallback, tu.Text)
	}
	if got := s.State()[tutor.KeyCurrentTopic]; got != "fractions" {
		t.Errorf("current_topic = %v, want fractions", got)
	}
}

// TestErrorContract: messages the agents cannot act on get seed 003's fallback actions.
func TestErrorContract(t *testing.T) {
	for _, tt := range []struct {
		msg, code, says string
	}{
		{"hello there", troupe.CodeInvalidInput, "Which topic"},
		{"teach me astrophysics", troupe.CodeRAGEmpty, "Related topics you could start with: addition"},
	} {
		s, _ := newSession(t, 1)
		r := send(t, s, tt.msg)
		tu := r.Turns[0]
		if tu.Err == nil || tu.Err.Code != tt.code || !strings.Contains(tu.Text, tt.says) {
			t.Errorf("%q: err %+v, text %q; want code %s saying %q", tt.msg, tu.Err, tu.Text, tt.code, tt.says)
		}
	}
}

// TestDiagnosticEstimatesMastery: right probe answers give high estimates and no gaps, wrong
// ones give gaps, a beginner level and a remediation recommendation; the path then orders the
// unmastered prerequisites before the topic.
func TestDiagnosticEstimatesMastery(t *testing.T) {
	s, l := newSession(t, 5)
	l.set("wrong")
	send(t, s, "teach me division")
	st := s.State()
	if st["learner_level"] != "beginner" || st["recommendation"] != "remediate" {
		t.Errorf("wrong probes: level %v, recommendation %v", st["learner_level"], st["recommendation"])
	}
	send(t, s, "what's next")
	path, _ := s.State()["learning_path"].([]map[string]any)
	var topics []string
	for _, p := range path {
		topics = append(topics, p["topic"].(string))
	}
	if diff := cmp.Diff([]string{"addition", "subtraction", "multiplication", "division"}, topics); diff != "" {
		t.Errorf("path (-want +got):\n%s", diff)
	}

	s, l = newSession(t, 5)
	l.set("right")
	send(t, s, "teach me division")
	st = s.State()
	if gaps := st["prerequisite_gaps"]; fmt.Sprint(gaps) != "[]" {
		t.Errorf("right probes: gaps %v", gaps)
	}
	if st["learner_level"] != "advanced" || st["recommendation"] != "proceed" {
		t.Errorf("right probes: level %v, recommendation %v", st["learner_level"], st["recommendation"])
	}
}

// TestPathAfterMasteringTheTopic: once the current topic is mastered, "what's next" does not
// tell the learner to reach it; it names the prerequisites still below the threshold.
func TestPathAfterMasteringTheTopic(t *testing.T) {
	s, _ := newSession(t, 1)
	send(t, s, "teach me fractions")
	send(t, s, "quiz me") // all answers right: fractions mastered, prerequisites at the probe estimate
	m, _ := s.State()["mastery"].(map[string]float64)
	if m["fractions"] < 0.85 {
		t.Fatalf("fractions mastery %v after a perfect quiz; want ≥ 0.85", m["fractions"])
	}
	r := send(t, s, "what's next")
	reasoning, _ := s.State()["path_reasoning"].(string)
	if strings.Contains(reasoning, "To reach fractions") || !strings.HasPrefix(reasoning, "You have mastered fractions;") {
		t.Errorf("path reasoning after mastering fractions: %q", reasoning)
	}
	if strings.Contains(r.Text(), "5. Fractions") || strings.Contains(r.Text(), "your current topic;") {
		t.Errorf("the mastered topic is still on the path:\n%s", r.Text())
	}
}

// A question about the current topic stays on it, though it also mentions another concept
// ("dividing" fractions is still fractions); and a message with no content words beyond
// "how does that work" gets the topic's explanation, not a passage chosen for sharing "that".
func TestTutorStaysOnTheCurrentTopic(t *testing.T) {
	s, _ := newSession(t, 1)
	send(t, s, "teach me fractions")
	const fractions = "Key points: the denominator counts the parts of the whole"
	for _, tc := range []struct{ msg, notWant string }{
		{"why do we flip the second fraction when dividing?", "Key points: division undoes multiplication"},
		{"how does that work", "On your question:"},
	} {
		r := send(t, s, tc.msg)
		if text := r.Text(); !strings.Contains(text, fractions) || strings.Contains(text, tc.notWant) {
			t.Errorf("%q: reply strays from fractions (want %q, not %q):\n%s", tc.msg, fractions, tc.notWant, text)
		}
	}
}

// "quiz me on decimals" quizzes on decimals, whatever the current topic and even with a quiz
// on it paused.
func TestQuizOnTheNamedTopic(t *testing.T) {
	s, l := newSession(t, 1)
	send(t, s, "teach me fractions")
	l.set("script", "pause")
	send(t, s, "quiz me")
	if s.State()[tutor.KeyQuizPaused] != true {
		t.Fatal("the fractions quiz did not pause")
	}
	l.set("right")
	r := send(t, s, "quiz me on decimals")
	for _, id := range l.questions() {
		if q, _ := s.Corpus().Question(id); q.Concept != "decimals" {
			t.Errorf("asked %s (%s) in a quiz on decimals; reply: %s", id, q.Concept, r.Text())
		}
	}
	if !strings.Contains(r.Text(), "Quiz on Decimals complete") {
		t.Errorf("reply does not complete a decimals quiz:\n%s", r.Text())
	}
}

// "continue quiz" resumes the paused quiz, though it is on another topic than the current one
// ("quiz me on fractions" while learning decimals, then "pause"): it asks the rest of that
// quiz's questions, not a new quiz on the current topic.
func TestContinueQuizResumesAQuizOnAnotherTopic(t *testing.T) {
	s, l := newSession(t, 4)
	send(t, s, "teach me decimals")
	drawn := s.Corpus().Draw("fractions", 5, 4, "quiz 1")
	l.set("script", drawn[0].Answer, "pause")
	send(t, s, "quiz me on fractions")
	if st := s.State(); st[tutor.KeyQuizPaused] != true || st[tutor.KeyCurrentTopic] != "decimals" {
		t.Fatalf("after pausing: quiz_paused=%v current_topic=%v, want true decimals", st[tutor.KeyQuizPaused], st[tutor.KeyCurrentTopic])
	}
	l.set("right")
	r := send(t, s, "continue quiz")
	var want []string
	for _, q := range drawn[1:] {
		want = append(want, q.ID)
	}
	if diff := cmp.Diff(want, l.questions()); diff != "" {
		t.Errorf("continue quiz asked (-want +got):\n%s\nreply: %s", diff, r.Text())
	}
	if diff := cmp.Diff([]routed{{"resume_quiz", "quiz"}, {"after_quiz", "feedback"}}, routes(r)); diff != "" {
		t.Errorf("routes (-want +got):\n%s", diff)
	}
	if !strings.Contains(r.Turns[0].Text, "Resumed at question 2 of 5.") || !strings.Contains(r.Turns[1].Text, "5 of 5 questions on Fractions") {
		t.Errorf("reply: %s", r.Text())
	}
}

// formAnswerer answers every question with its right value, written the way a learner who
// skips the form would: a fraction unsimplified, a decimal as a fraction.
type formAnswerer struct{ corpus *tutor.Corpus }

func (f formAnswerer) Answer(_ context.Context, q troupe.Question) (troupe.Answer, error) {
	data, _ := q.Data.(map[string]any)
	id, _ := data["question_id"].(string)
	qq, ok := f.corpus.Question(id)
	if !ok {
		return troupe.Answer{}, fmt.Errorf("unknown question %q", id)
	}
	text := qq.Answer
	switch qq.Form {
	case tutor.FormSimplestFraction:
		num, den, _ := strings.Cut(qq.Answer, "/")
		n, _ := strconv.Atoi(num)
		d, _ := strconv.Atoi(den)
		text = fmt.Sprintf("%d/%d", 2*n, 2*d)
	case tutor.FormDecimal:
		text = map[string]string{"0.5": "1/2", "0.75": "3/4"}[qq.Answer]
	}
	return troupe.Answer{QuestionID: q.ID, Text: text}, nil
}

// The quiz grades the form a question asks for: "6/8" does not simplify 6/8, though it is
// worth 3/4. Every question of the quiz is answered with its right value; those asking for a
// form are answered in the wrong one, and only they are wrong.
func TestQuizGradesTheFormAsked(t *testing.T) {
	c := tutor.DefaultCorpus()
	s, err := tutor.NewSession(tutor.SessionConfig{Human: formAnswerer{c}, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	send(t, s, "teach me fractions")
	r := send(t, s, "quiz me")
	var items []map[string]any
	switch v := s.State()[tutor.KeyQuizQuestions].(type) {
	case []map[string]any:
		items = v
	default:
		b, _ := json.Marshal(v)
		if err := json.Unmarshal(b, &items); err != nil {
			t.Fatal(err)
		}
	}
	wantRight, withForm := 0, 0
	for _, it := range items {
		q, _ := c.Question(it["question_id"].(string))
		if q.Form == "" {
			wantRight++
		} else {
			withForm++
		}
	}
	if withForm == 0 {
		t.Fatal("the quiz drew no question asking for a form; this test checks nothing")
	}
	if got, want := s.State()[tutor.KeyQuizScore], float64(wantRight)/float64(len(items)); got != want {
		t.Errorf("quiz_score = %v, want %v (%d of %d questions ask for a form)\nreply: %s", got, want, withForm, len(items), r.Text())
	}
	if !strings.Contains(r.Text(), "is not in simplest form") {
		t.Errorf("the reply does not say what is wrong with the form:\n%s", r.Text())
	}
}

// Answers that are not numbers are a conceptual error, and its remediation quotes the
// topic's summary inside a sentence: once, without its own full stop doubling the sentence's.
func TestFeedbackConceptualRemediation(t *testing.T) {
	s, l := newSession(t, 1)
	send(t, s, "teach me fractions")
	l.set("script", "no idea", "no idea", "no idea", "no idea", "no idea")
	r := send(t, s, "quiz me")
	text := r.Text()
	if !strings.Contains(text, "conceptual: 5 answer(s)") || !strings.Contains(text, "re-read the explanation of Fractions") {
		t.Fatalf("feedback has no conceptual pattern:\n%s", text)
	}
	if strings.Contains(text, "..") {
		t.Errorf("feedback doubles a full stop:\n%s", text)
	}
}
