package tutor_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/troupehq/troupe/examples/tutor"
)

func TestGrade(t *testing.T) {
	for _, tt := range []struct {
		want, got string
		correct   bool
		near      float64
	}{
		{"0.5", "1/2", true, 1},
		{"0.5", ".50", true, 1},
		{"3/4", "6/8", true, 1},
		{"3/4", "0.75", true, 1},
		{"1000", "1,000", true, 1},
		{"25", "25%", true, 1},
		{"3 2/5", "3.4", true, 1},
		{"42", "41", false, 1 - 1.0/42},
		{"42", "84", false, 0},
		{"2", "two", false, 0},
		{"yes", " Yes! ", true, 1},
		{"5/6", "", false, 0},
		{"5/6", "1/0", false, 0},
		// Closeness is relative to the expected value, also below 1: a misplaced decimal
		// point is far off, not a near miss.
		{"0.08", "0.008", false, 0.1},
		{"0.5", "0.55", false, 0.9},
		{"0", "0.05", false, 0.95},
	} {
		correct, near := tutor.Grade(tt.want, tt.got)
		if correct != tt.correct || !cmp.Equal(near, tt.near, cmp.Comparer(func(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 })) {
			t.Errorf("Grade(%q, %q) = %v, %v; want %v, %v", tt.want, tt.got, correct, near, tt.correct, tt.near)
		}
	}
}

// A question that asks for a form grades the form as well as the value: "6/8" has the value
// of 3/4 but does not simplify 6/8.
func TestQuestionGradeForm(t *testing.T) {
	c := tutor.DefaultCorpus()
	for _, tt := range []struct {
		id, answer string
		correct    bool
		note       string // a substring of the note; "" for none
	}{
		{"frac-2", "3/4", true, ""},
		{"frac-2", " 3 / 4 ", true, ""},
		{"frac-2", "6/8", false, "not in simplest form"},
		{"frac-2", "0.75", false, "not a fraction"},
		{"frac-1", "6/8", false, "not in simplest form"},
		{"frac-6", "10/12", false, "not in simplest form"},
		{"dec-6", "0.6", false, "not a fraction"},
		{"dec-6", "6/10", false, "not in simplest form"},
		{"dec-6", "3/5", true, ""},
		{"dec-1", "1/2", false, "asks for a decimal"},
		{"dec-1", ".5", true, ""},
		{"dec-2", "3/4", false, "asks for a decimal"},
		{"frac-3", "10/12", true, ""}, // no form asked: any way of writing 5/6
		{"frac-2", "2/3", false, ""},  // wrong value: no note about the form
	} {
		q, ok := c.Question(tt.id)
		if !ok {
			t.Fatalf("no question %s", tt.id)
		}
		correct, near, note := q.Grade(tt.answer)
		if correct != tt.correct || (tt.note == "") != (note == "") || !strings.Contains(note, tt.note) {
			t.Errorf("%s (%q) graded %q: correct %v, note %q; want %v, note containing %q", tt.id, q.Text, tt.answer, correct, note, tt.correct, tt.note)
		}
		if note != "" && near != 1 {
			t.Errorf("%s graded %q: closeness %v; the value is right, want 1", tt.id, tt.answer, near)
		}
	}
	if _, err := tutor.ParseCorpus([]byte(`{"concepts":[{"id":"a","explanations":{"beginner":"b","intermediate":"i","advanced":"a"},` +
		`"questions":[{"id":"q","text":"t","answer":"1","form":"roman"}]}]}`)); err == nil || !strings.Contains(err.Error(), `form: "roman"`) {
		t.Errorf("unknown form: err %v", err)
	}
}

func TestDefaultCorpusGraph(t *testing.T) {
	c := tutor.DefaultCorpus()
	if diff := cmp.Diff([]string{"decimals", "multiplication", "fractions", "addition", "division", "subtraction"}, c.Prerequisites("percentages")); diff != "" {
		t.Errorf("prerequisites of percentages, nearest first (-want +got):\n%s", diff)
	}
	for _, k := range c.Concepts {
		for _, q := range k.Questions {
			if ok, _, note := q.Grade(q.Answer); !ok {
				t.Errorf("%s: its own answer %q does not grade correct: %s", q.ID, q.Answer, note)
			}
			if ok, _ := tutor.Grade(q.Answer, q.Answer); !ok {
				t.Errorf("%s: its own answer %q does not grade correct", q.ID, q.Answer)
			}
		}
		if got, ok := c.FindTopic("teach me " + strings.ToLower(k.Name)); !ok || got.ID != k.ID {
			t.Errorf("FindTopic(teach me %s) = %v", k.Name, got)
		}
	}
	if k, ok := c.FindTopic("what is 20% of 5"); !ok || k.ID != "percentages" {
		t.Errorf("FindTopic with %% = %v, %v", k, ok)
	}
}

func TestParseCorpusErrors(t *testing.T) {
	q := `"questions":[{"id":"%s","text":"t","answer":"1"}]`
	ex := `"explanations":{"beginner":"b","intermediate":"i","advanced":"a"}`
	for _, tt := range []struct {
		name, json string
		want       []string
	}{
		{"unknown field", `{"concepts":[],"extra":1}`, []string{`unknown field "extra"`}},
		{"unknown prerequisite and missing level", `{"concepts":[{"id":"a","requires":["zz"],"explanations":{"beginner":"b"},` + strings.Replace(q, "%s", "q1", 1) + `}]}`,
			[]string{`concepts[0].requires[0]: unknown concept "zz"`, "concepts[0].explanations.intermediate: required"}},
		{"cycle", `{"concepts":[{"id":"a","requires":["b"],` + ex + `,` + strings.Replace(q, "%s", "q1", 1) + `},{"id":"b","requires":["a"],` + ex + `,` + strings.Replace(q, "%s", "q2", 1) + `}]}`,
			[]string{"cycle among [a b]"}},
		{"duplicates", `{"concepts":[{"id":"a",` + ex + `,` + strings.Replace(q, "%s", "q1", 1) + `},{"id":"a",` + ex + `,` + strings.Replace(q, "%s", "q1", 1) + `}]}`,
			[]string{`concepts[1].id: duplicate "a"`, `concepts[1].questions[0].id: duplicate "q1"`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tutor.ParseCorpus([]byte(tt.json))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func FuzzParseCorpus(f *testing.F) {
	f.Add([]byte(`{"concepts":[{"id":"a","requires":["a"]}]}`))
	f.Add([]byte(`{"concepts":[null]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := tutor.ParseCorpus(b)
		if err != nil {
			return
		}
		for _, k := range c.Concepts {
			c.Prerequisites(k.ID) // must terminate: the graph is acyclic
			c.Draw(k.ID, 3, 1, "fuzz")
		}
	})
}

func FuzzGrade(f *testing.F) {
	f.Add("3/4", "0.75")
	f.Add("3 2/5", "-1 1/0")
	f.Fuzz(func(t *testing.T, want, got string) {
		correct, near := tutor.Grade(want, got)
		if near < 0 || near > 1 || (correct && near != 1) {
			t.Fatalf("Grade(%q, %q) = %v, %v", want, got, correct, near)
		}
	})
}

// An answer a teacher accepts in the form asked is graded correct however the fraction is
// typed: a vulgar fraction ("¾", "1½"), the fraction slash U+2044 ("3⁄4"), or a sentence's
// full stop after it ("3/4."). Before forms were graded, "3⁄4" and "3/4." were right.
func TestGradeAcceptsFractionsAsTyped(t *testing.T) {
	for _, c := range []struct{ form, want, ans string }{
		{tutor.FormSimplestFraction, "3/4", "¾"},
		{tutor.FormSimplestFraction, "3/4", "3⁄4"},
		{tutor.FormSimplestFraction, "3/4", "3/4."},
		{tutor.FormSimplestFraction, "3/2", "1½"},
		{tutor.FormSimplestFraction, "3/2", "1 ½"},
		{tutor.FormSimplestFraction, "5/6", "⅚"},
		{tutor.FormDecimal, "0.5", "0.50"},
		{tutor.FormDecimal, "0.5", "0.5."},
		{"", "0.75", "¾"},
	} {
		q := tutor.Question{ID: "q", Answer: c.want, Form: c.form}
		if ok, near, note := q.Grade(c.ans); !ok || near != 1 || note != "" {
			t.Errorf("%s answer %q to %q: correct %v, closeness %v, note %q; want correct", c.form, c.ans, c.want, ok, near, note)
		}
	}
	// The form still counts: a vulgar fraction is no decimal, ¾ written as 6/8 is not simplest.
	for _, c := range []struct{ form, want, ans string }{
		{tutor.FormDecimal, "0.5", "½"},
		{tutor.FormSimplestFraction, "3/4", "6⁄8"},
	} {
		q := tutor.Question{ID: "q", Answer: c.want, Form: c.form}
		if ok, near, note := q.Grade(c.ans); ok || near != 1 || note == "" {
			t.Errorf("%s answer %q to %q: correct %v, closeness %v, note %q; want the value right, the form wrong", c.form, c.ans, c.want, ok, near, note)
		}
	}
}
