package tutor

import (
	"embed"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

//go:embed corpus/arithmetic.json
var corpusFS embed.FS

// Corpus is the tutor's teaching material: concepts with explanations per learner level,
// worked examples, key points and quiz questions, and the concept graph their Requires lists
// form. A Corpus is read-only once loaded and safe for concurrent use.
type Corpus struct {
	Name     string     `json:"name"`
	Concepts []*Concept `json:"concepts"`

	byID map[string]*Concept
	qs   map[string]*Question
}

// Concept is one node of the concept graph.
type Concept struct {
	ID           string            `json:"id"`
	Name         string            `json:"name"`
	Aliases      []string          `json:"aliases"`
	Requires     []string          `json:"requires"` // direct prerequisites
	Summary      string            `json:"summary"`
	Explanations map[string]string `json:"explanations"` // learner level → text
	Examples     []string          `json:"examples"`
	KeyPoints    []string          `json:"key_points"`
	Questions    []*Question       `json:"questions"`
}

// Question is one quiz question with its expected answer.
type Question struct {
	ID         string `json:"id"`
	Skill      string `json:"skill"`
	Difficulty string `json:"difficulty"`
	// Form is how the answer must be written when the question asks for more than its value
	// ("Simplify 6/8", "Write 1/2 as a decimal"): FormSimplestFraction or FormDecimal; ""
	// accepts any way of writing the value.
	Form    string `json:"form,omitempty"`
	Text    string `json:"text"`
	Answer  string `json:"answer"`
	Concept string `json:"-"` // set on load
}

// Answer forms a Question can ask for.
const (
	// FormSimplestFraction: a fraction in lowest terms ("3/4", "1 1/2"), or a whole number.
	FormSimplestFraction = "simplest_fraction"
	// FormDecimal: a decimal numeral ("0.75", ".5"), not a fraction.
	FormDecimal = "decimal"
)

// Levels are the learner levels of seed 003, lowest first.
var levels = []string{"beginner", "intermediate", "advanced"}

// DefaultCorpus returns the shipped arithmetic corpus: seven concepts from addition to
// percentages. Each call parses it anew.
func DefaultCorpus() *Corpus {
	b, err := corpusFS.ReadFile("corpus/arithmetic.json")
	if err != nil {
		panic(err) // embedded at build time
	}
	c, err := ParseCorpus(b)
	if err != nil {
		panic(err) // the shipped corpus is tested
	}
	return c
}

// ParseCorpus decodes and checks a corpus: unique ids, known prerequisites, no cycle in the
// concept graph, an explanation for every level and at least one question per concept.
// Every problem is reported.
func ParseCorpus(b []byte) (*Corpus, error) {
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	c := &Corpus{}
	if err := dec.Decode(c); err != nil {
		return nil, fmt.Errorf("tutor: corpus: %w", err)
	}
	var problems []string
	c.byID = make(map[string]*Concept)
	c.qs = make(map[string]*Question)
	for i, k := range c.Concepts {
		if k == nil || k.ID == "" {
			problems = append(problems, fmt.Sprintf("concepts[%d].id: required", i))
			continue
		}
		if _, dup := c.byID[k.ID]; dup {
			problems = append(problems, fmt.Sprintf("concepts[%d].id: duplicate %q", i, k.ID))
		}
		c.byID[k.ID] = k
		for _, l := range levels {
			if strings.TrimSpace(k.Explanations[l]) == "" {
				problems = append(problems, fmt.Sprintf("concepts[%d].explanations.%s: required", i, l))
			}
		}
		if len(k.Questions) == 0 {
			problems = append(problems, fmt.Sprintf("concepts[%d].questions: at least one required", i))
		}
		for j, q := range k.Questions {
			if q == nil || q.ID == "" || q.Answer == "" || q.Text == "" {
				problems = append(problems, fmt.Sprintf("concepts[%d].questions[%d]: id, text and answer are required", i, j))
				continue
			}
			if q.Form != "" && q.Form != FormSimplestFraction && q.Form != FormDecimal {
				problems = append(problems, fmt.Sprintf("concepts[%d].questions[%d].form: %q is not %s or %s", i, j, q.Form, FormSimplestFraction, FormDecimal))
			}
			if _, dup := c.qs[q.ID]; dup {
				problems = append(problems, fmt.Sprintf("concepts[%d].questions[%d].id: duplicate %q", i, j, q.ID))
			}
			q.Concept = k.ID
			c.qs[q.ID] = q
		}
	}
	for i, k := range c.Concepts {
		if k == nil {
			continue
		}
		for j, r := range k.Requires {
			if _, ok := c.byID[r]; !ok {
				problems = append(problems, fmt.Sprintf("concepts[%d].requires[%d]: unknown concept %q", i, j, r))
			}
		}
	}
	if len(problems) == 0 {
		if _, err := c.topo(nil); err != nil {
			problems = append(problems, err.Error())
		}
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("tutor: corpus: %s", strings.Join(problems, "; "))
	}
	return c, nil
}

// Concept returns the concept with id.
func (c *Corpus) Concept(id string) (*Concept, bool) { k, ok := c.byID[id]; return k, ok }

// Question returns the question with id, from any concept.
func (c *Corpus) Question(id string) (*Question, bool) { q, ok := c.qs[id]; return q, ok }

// FindTopic returns the concept a message names, by id, name or alias as whole words; the
// longest match wins, so "decimal point" beats "decimal".
func (c *Corpus) FindTopic(msg string) (*Concept, bool) {
	words := " " + strings.Join(tokens(msg), " ") + " "
	var best *Concept
	bestLen := 0
	for _, k := range c.Concepts {
		for _, name := range append([]string{k.ID, k.Name}, k.Aliases...) {
			n := strings.Join(tokens(name), " ")
			if n == "" && strings.Contains(msg, name) { // symbols such as "%"
				n = name
				if len(n) > bestLen {
					best, bestLen = k, len(n)
				}
				continue
			}
			if n != "" && strings.Contains(words, " "+n+" ") && len(n) > bestLen {
				best, bestLen = k, len(n)
			}
		}
	}
	return best, best != nil
}

// FindTopics returns every concept msg names, as FindTopic matches them, in the order msg
// first names them: "multiplication and subtraction" is [multiplication subtraction]. A name
// inside a longer name of another concept is not a mention of it, as in FindTopic.
func (c *Corpus) FindTopics(msg string) []*Concept {
	toks := tokens(msg)
	words := " " + strings.Join(toks, " ") + " "
	type match struct {
		k          *Concept
		start, end int // in tokens
	}
	var ms []match
	for _, k := range c.Concepts {
		for _, name := range append([]string{k.ID, k.Name}, k.Aliases...) {
			n := strings.Join(tokens(name), " ")
			switch {
			case n == "" && name != "": // symbols such as "%"
				for i := 0; ; {
					j := strings.Index(msg[i:], name)
					if j < 0 {
						break
					}
					at := len(tokens(msg[:i+j]))
					ms = append(ms, match{k, at, at})
					i += j + len(name)
				}
			case n != "":
				for i := 0; ; {
					j := strings.Index(words[i:], " "+n+" ")
					if j < 0 {
						break
					}
					at := strings.Count(words[:i+j+1], " ") - 1
					ms = append(ms, match{k, at, at + len(strings.Fields(n))})
					i += j + 1
				}
			}
		}
	}
	inside := func(m match) bool {
		return slices.ContainsFunc(ms, func(o match) bool {
			return o.k != m.k && o.start <= m.start && m.end <= o.end && o.end-o.start > m.end-m.start
		})
	}
	sort.SliceStable(ms, func(i, j int) bool { return ms[i].start < ms[j].start })
	var out []*Concept
	for _, m := range ms {
		if !inside(m) && !slices.Contains(out, m.k) {
			out = append(out, m.k)
		}
	}
	return out
}

// mentions reports whether msg names concept k by its id, name or an alias, as FindTopic
// matches them.
func mentions(k *Concept, msg string) bool {
	words := " " + strings.Join(tokens(msg), " ") + " "
	for _, name := range append([]string{k.ID, k.Name}, k.Aliases...) {
		n := strings.Join(tokens(name), " ")
		if n == "" && strings.Contains(msg, name) || n != "" && strings.Contains(words, " "+n+" ") {
			return true
		}
	}
	return false
}

// topicOf returns the concept a message is about in a session on current: the current topic
// when the message names it, though it may name others too ("dividing fractions" is still
// fractions), else the concept the message names, else the current topic.
func (c *Corpus) topicOf(msg, current string) (*Concept, bool) {
	cur, ok := c.Concept(current)
	if ok && mentions(cur, msg) {
		return cur, true
	}
	if named, found := c.FindTopic(msg); found {
		return named, true
	}
	return cur, ok
}

// Prerequisites returns every concept id that id requires, directly or not, nearest first
// (breadth-first), without id itself.
func (c *Corpus) Prerequisites(id string) []string {
	var out []string
	queue := []string{id}
	seen := map[string]bool{id: true}
	for len(queue) > 0 {
		k := c.byID[queue[0]]
		queue = queue[1:]
		if k == nil {
			continue
		}
		for _, r := range k.Requires {
			if !seen[r] {
				seen[r] = true
				out = append(out, r)
				queue = append(queue, r)
			}
		}
	}
	return out
}

// topo orders the concepts in keep (all when nil) so that every concept comes after its
// prerequisites; ties go in corpus order. It fails on a cycle.
func (c *Corpus) topo(keep func(id string) bool) ([]string, error) {
	indeg := make(map[string]int)
	for _, k := range c.Concepts {
		indeg[k.ID] += 0
		for range k.Requires {
			indeg[k.ID]++
		}
	}
	var order []string
	done := make(map[string]bool)
	for len(order) < len(c.Concepts) {
		progressed := false
		for _, k := range c.Concepts {
			if done[k.ID] || indeg[k.ID] > 0 {
				continue
			}
			done[k.ID], progressed = true, true
			order = append(order, k.ID)
			for _, d := range c.Concepts {
				if slices.Contains(d.Requires, k.ID) {
					indeg[d.ID]--
				}
			}
			break // restart in corpus order so ties keep it
		}
		if !progressed {
			var left []string
			for _, k := range c.Concepts {
				if !done[k.ID] {
					left = append(left, k.ID)
				}
			}
			return nil, fmt.Errorf("concept graph has a cycle among %v", left)
		}
	}
	if keep == nil {
		return order, nil
	}
	return slices.DeleteFunc(order, func(id string) bool { return !keep(id) }), nil
}

// Draw returns n questions of concept, chosen without repetition by a shuffle seeded with
// seed and salt: the same seed and salt always draw the same questions in the same order.
func (c *Corpus) Draw(concept string, n int, seed uint64, salt string) []*Question {
	k := c.byID[concept]
	if k == nil {
		return nil
	}
	qs := slices.Clone(k.Questions)
	rng := rand.New(rand.NewPCG(seed, hashString(concept+"/"+salt)))
	rng.Shuffle(len(qs), func(i, j int) { qs[i], qs[j] = qs[j], qs[i] })
	return qs[:min(n, len(qs))]
}

// hashString is FNV-1a, so that salts derive seeds without a package-level table.
func hashString(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// Grade compares a learner's answer with the expected one. Numbers compare by value, so
// "0.50", ".5", "1/2" and "½" all answer "0.5" (see typed); "3 remainder 2"-style answers and text compare as
// normalized words. closeness is 1 for a correct answer and, for a wrong numeric one, how
// near it came: 1 - the error relative to the expected value (to 1 when that is 0), floored
// at 0, so 0.008 for 0.08 is far off (0.1), not a near miss. It is 0 otherwise.
func Grade(expected, answer string) (correct bool, closeness float64) {
	expected, answer = typed(expected), typed(answer)
	want, wok := parseNumber(expected)
	got, gok := parseNumber(answer)
	if wok && gok {
		if math.Abs(want-got) <= 1e-9*math.Max(1, math.Abs(want)) {
			return true, 1
		}
		scale := math.Abs(want)
		if scale == 0 {
			scale = 1
		}
		return false, math.Max(0, 1-math.Abs(want-got)/scale)
	}
	if strings.Join(tokens(expected), " ") == strings.Join(tokens(answer), " ") && len(tokens(answer)) > 0 {
		return true, 1
	}
	return false, 0
}

// Grade grades answer to q: by value, as Grade does, and, when q asks for a form, in that
// form. An answer with the right value in the wrong form ("6/8" to "Simplify 6/8") is not
// correct; its closeness stays 1, since its value is right. note says what is wrong with the
// form, "" when nothing is.
func (q *Question) Grade(answer string) (correct bool, closeness float64, note string) {
	correct, closeness = Grade(q.Answer, answer)
	if !correct {
		return false, closeness, ""
	}
	if note = formProblem(q.Form, answer); note != "" {
		return false, closeness, note
	}
	return true, closeness, ""
}

// formProblem says how answer, whose value is right, fails form, or "" when it does not.
func formProblem(form, answer string) string {
	s := strings.Join(strings.Fields(typed(answer)), " ")
	s = strings.ReplaceAll(strings.ReplaceAll(s, " /", "/"), "/ ", "/") // "3 / 4" is 3/4
	switch form {
	case FormDecimal:
		if strings.Contains(s, "/") {
			return s + " is a fraction; the question asks for a decimal"
		}
	case FormSimplestFraction:
		frac := s
		if i := strings.LastIndexByte(s, ' '); i >= 0 {
			frac = strings.TrimSpace(s[i+1:]) // the fraction of a mixed number
		}
		num, den, isFrac := strings.Cut(frac, "/")
		if !isFrac {
			if _, err := strconv.Atoi(s); err == nil {
				return "" // a whole number is its own simplest form
			}
			return s + " is not a fraction; the question asks for a fraction in simplest form"
		}
		n, err1 := strconv.Atoi(strings.TrimSpace(num))
		d, err2 := strconv.Atoi(strings.TrimSpace(den))
		if err1 != nil || err2 != nil {
			return s + " is not a fraction of whole numbers; the question asks for one in simplest form"
		}
		if g := gcd(n, d); g != 1 || d < 0 {
			return s + " is not in simplest form"
		}
	}
	return ""
}

// vulgarFractions are the fractions Unicode writes as one character, as a learner may type them.
var vulgarFractions = map[rune]string{
	'½': "1/2", '⅓': "1/3", '⅔': "2/3", '¼': "1/4", '¾': "3/4", '⅕': "1/5", '⅖': "2/5", '⅗': "3/5", '⅘': "4/5",
	'⅙': "1/6", '⅚': "5/6", '⅐': "1/7", '⅛': "1/8", '⅜': "3/8", '⅝': "5/8", '⅞': "7/8", '⅑': "1/9", '⅒': "1/10",
}

// typed is an answer as the grader reads it: a vulgar fraction ("¾", "1½") and the fraction
// slashes U+2044 and U+2215 ("3⁄4") written with "/" ("3/4", "1 1/2"), and the full stop of a
// sentence after a number ("3/4.") dropped.
func typed(s string) string {
	s = strings.TrimSpace(s)
	var b strings.Builder
	for i, r := range s {
		switch f, vulgar := vulgarFractions[r]; {
		case vulgar:
			if i > 0 && s[i-1] >= '0' && s[i-1] <= '9' {
				b.WriteByte(' ') // "1½" is 1 1/2
			}
			b.WriteString(f)
		case r == '⁄' || r == '∕':
			b.WriteByte('/')
		default:
			b.WriteRune(r)
		}
	}
	s = b.String()
	if n := len(s); n >= 2 && s[n-1] == '.' && s[n-2] >= '0' && s[n-2] <= '9' {
		s = s[:n-1]
	}
	return s
}

func gcd(a, b int) int {
	a, b = max(a, -a), max(b, -b)
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// parseNumber reads a decimal ("0.75", ".5", "1,000", "25%"), a fraction ("3/4") or a mixed
// number ("3 2/5").
func parseNumber(s string) (float64, bool) {
	s = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "%"))
	s = strings.ReplaceAll(s, ",", "")
	if s == "" {
		return 0, false
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
		return f, true
	}
	whole := 0.0
	if i := strings.IndexByte(s, ' '); i > 0 {
		w, err := strconv.ParseFloat(s[:i], 64)
		if err != nil {
			return 0, false
		}
		whole, s = w, strings.TrimSpace(s[i+1:])
	}
	num, den, ok := strings.Cut(s, "/")
	if !ok {
		return 0, false
	}
	n, err1 := strconv.ParseFloat(strings.TrimSpace(num), 64)
	d, err2 := strconv.ParseFloat(strings.TrimSpace(den), 64)
	if err1 != nil || err2 != nil || d == 0 {
		return 0, false
	}
	if whole < 0 {
		return whole - n/d, true
	}
	return whole + n/d, true
}

// tokens lower-cases s and splits it into words of letters and digits.
func tokens(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}
