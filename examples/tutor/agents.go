package tutor

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/troupehq/troupe"
)

// Config tunes the agents. The zero value is seed 003's defaults.
type Config struct {
	// NumQuestions per quiz; 0 means 5 (seed 003's default), capped by the questions a concept has.
	NumQuestions int
	// Threshold is the mastery needed to count a concept mastered; 0 means 0.85 (seed 003).
	Threshold float64
	// RequiredMastery below which a prerequisite is a gap; 0 means 0.5 (seed 003).
	RequiredMastery float64
	// MaxProbes bounds the questions the diagnostic asks; 0 means 3.
	MaxProbes int
	// MaxCycles bounds the mastery loop; 0 means 5 (seed 003).
	MaxCycles int
}

func (c Config) withDefaults() Config {
	if c.NumQuestions <= 0 {
		c.NumQuestions = 5
	}
	if c.Threshold <= 0 || c.Threshold > 1 {
		c.Threshold = 0.85
	}
	if c.RequiredMastery <= 0 || c.RequiredMastery > 1 {
		c.RequiredMastery = 0.5
	}
	if c.MaxProbes <= 0 {
		c.MaxProbes = 3
	}
	return c
}

// Specialists are seed 003's five specialists over one corpus. Build with NewSpecialists; the methods
// are troupe agents (use them through Registry) and safe for concurrent use.
type Specialists struct {
	corpus *Corpus
	cfg    Config
}

// NewSpecialists returns the specialists over corpus (nil: DefaultCorpus).
func NewSpecialists(corpus *Corpus, cfg Config) *Specialists {
	if corpus == nil {
		corpus = DefaultCorpus()
	}
	return &Specialists{corpus: corpus, cfg: cfg.withDefaults()}
}

// Corpus returns the agents' corpus.
func (a *Specialists) Corpus() *Corpus { return a.corpus }

// pauseWords end a quiz early, keeping its place.
var pauseWords = []string{"pause", "stop", "later", "pause quiz", "quit"}

func isPause(answer string) bool {
	return slices.Contains(pauseWords, strings.Join(tokens(answer), " "))
}

// namesSubject reports whether a request to learn names a subject: whether any word is left
// once the words of asking ("teach me", "i want to learn about") are taken out.
func namesSubject(msg string) bool {
	asking := []string{"teach", "me", "i", "want", "would", "like", "to", "learn", "about", "please",
		"something", "anything", "some", "more", "new", "a", "topic", "can", "could", "you", "how"}
	for _, w := range tokens(msg) {
		if !slices.Contains(asking, w) {
			return true
		}
	}
	return false
}

// ask puts a question to the learner. A failure to get an answer is returned as is: the
// engine pauses the run on troupe.ErrPaused.
func ask(ctx context.Context, d *troupe.Dispatch, id, prompt, questionID, concept string) (string, error) {
	ans, err := d.Ask(ctx, troupe.Question{ID: id, Kind: troupe.QuestionAsk, Prompt: prompt,
		Data: map[string]any{"question_id": questionID, "concept": concept}})
	if err != nil {
		return "", err
	}
	return ans.Text, nil
}

// Diagnostic assesses the prerequisites of the topic the message names (or the current
// topic): it asks one probe question per prerequisite whose mastery is unknown, nearest first,
// up to MaxProbes, infers the rest, and reports gaps, a learner level and a recommendation.
func (a *Specialists) Diagnostic(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
	topic, ok := a.corpus.FindTopic(d.Query)
	if !ok {
		var cur string
		if lookup(d, KeyCurrentTopic, &cur) {
			topic, ok = a.corpus.Concept(cur)
		}
	}
	if !ok {
		code, what := troupe.CodeInvalidInput, "no topic named"
		fallback := "ask the learner which topic: " + strings.Join(a.topicNames(), ", ")
		// RAG_EMPTY only when the message names what it wants to learn: a bare "teach me"
		// names no topic, which is INVALID_INPUT, answered with the topics to choose from.
		if lower := strings.ToLower(d.Query); (strings.Contains(lower, "teach me") || strings.Contains(lower, "learn")) && namesSubject(d.Query) {
			code, what = troupe.CodeRAGEmpty, "no content for the topic asked for"
			fallback = "suggest related topics: " + strings.Join(a.ready(masteryOf(d)), ", ")
		}
		return nil, &troupe.AgentError{Code: code, Message: fmt.Sprintf("diagnostic: %s in %q", what, d.Query), FallbackAction: fallback}
	}
	mastery := masteryOf(d)
	prereqs := a.corpus.Prerequisites(topic.ID)
	// Probe direct prerequisites first, then the topic itself, then deeper ones.
	order := slices.Clone(topic.Requires)
	order = append(order, topic.ID)
	for _, p := range prereqs {
		if !slices.Contains(order, p) {
			order = append(order, p)
		}
	}
	var lines []string
	probed := map[string]float64{}
	seed := seedOf(d)
	for _, c := range order {
		if _, known := mastery[c]; known || len(probed) >= a.cfg.MaxProbes {
			continue
		}
		q := a.corpus.Draw(c, 1, seed, "diagnostic")[0]
		k, _ := a.corpus.Concept(c)
		prompt := fmt.Sprintf("Quick check on %s before %s: %s", k.Name, topic.Name, q.Text)
		if c == topic.ID {
			prompt = fmt.Sprintf("Quick check on %s itself: %s", k.Name, q.Text)
		}
		ans, err := ask(ctx, d, "diagnostic/"+q.ID, prompt, q.ID, q.Concept)
		if err != nil {
			return nil, err
		}
		if isPause(ans) {
			// The learner stopped the quick check (or left): a stop is not a wrong answer, so
			// nothing is graded and no mastery is estimated from it.
			return &troupe.Result{
				AgentResult: map[string]any{KeyCurrentTopic: topic.ID, "diagnostic_complete": false},
				AnalysisSummary: summary(fmt.Sprintf("Quick check on %s stopped before it was done; nothing was graded. Say \"teach me %s\" to take it again.",
					topic.Name, strings.ToLower(topic.Name))),
			}, nil
		}
		correct, near, note := q.Grade(ans)
		est := 0.1
		switch {
		case correct:
			est = 0.8
		case near >= 0.9:
			est = 0.4
		}
		probed[c] = est
		mastery[c] = est
		verdict := "right"
		switch {
		case note != "":
			verdict = "not quite: " + note + "; the answer is " + q.Answer
		case !correct:
			verdict = "not quite, the answer is " + q.Answer
		}
		lines = append(lines, fmt.Sprintf("  %s: %q — %s (estimate %.2f)", k.Name, ans, verdict, est))
	}
	// Knowing a concept implies knowing what it requires: an unknown prerequisite takes the
	// best estimate of a probed concept that needs it.
	for _, c := range append(slices.Clone(prereqs), topic.ID) {
		if _, known := mastery[c]; known {
			continue
		}
		best, found := 0.0, false
		for p, est := range probed {
			if slices.Contains(a.corpus.Prerequisites(p), c) {
				best, found = math.Max(best, est), true
			}
		}
		if found {
			mastery[c] = best
		}
	}
	var gaps []gap
	sum := 0.0
	for _, p := range prereqs {
		m := mastery[p]
		sum += m
		if m < a.cfg.RequiredMastery {
			gaps = append(gaps, gap{Concept: p, CurrentMastery: m, RequiredMastery: a.cfg.RequiredMastery})
		}
	}
	level := "advanced"
	if len(prereqs) > 0 {
		switch mean := sum / float64(len(prereqs)); {
		case mean < 0.5:
			level = "beginner"
		case mean < 0.8:
			level = "intermediate"
		}
	}
	rec := "proceed"
	switch {
	case mastery[topic.ID] >= a.cfg.Threshold:
		rec = "skip_ahead"
	case len(gaps) > 0:
		rec = "remediate"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Let's learn %s. %s\n", topic.Name, topic.Summary)
	if len(lines) > 0 {
		b.WriteString("Your quick check:\n" + strings.Join(lines, "\n") + "\n")
	}
	fmt.Fprintf(&b, "Level: %s.", level)
	if len(gaps) > 0 {
		var gs []string
		for _, g := range gaps {
			gs = append(gs, fmt.Sprintf("%s (%.2f < %.2f)", g.Concept, g.CurrentMastery, g.RequiredMastery))
		}
		fmt.Fprintf(&b, " Gaps to close first: %s — ask \"what's next\" for a path.", strings.Join(gs, ", "))
	} else if rec == "skip_ahead" {
		fmt.Fprintf(&b, " You already know %s well; ask \"what's next\" to move on.", topic.Name)
	} else {
		fmt.Fprintf(&b, " No gaps: ask me to explain %s, or say \"quiz me\".", topic.Name)
	}
	paused := false
	var prev string
	if lookup(d, KeyCurrentTopic, &prev) && prev == topic.ID {
		lookup(d, KeyQuizPaused, &paused) // the same topic keeps its paused quiz
	}
	if gaps == nil {
		gaps = []gap{}
	}
	return &troupe.Result{
		AgentResult: map[string]any{
			KeyCurrentTopic: topic.ID, "diagnostic_complete": true, KeyPrerequisiteGaps: gaps,
			KeyLearnerLevel: level, "recommendation": rec, KeyMastery: mastery, KeyQuizPaused: paused,
		},
		AnalysisSummary: summary(b.String()),
	}, nil
}

// Tutor explains the current topic at the learner's level: a recap of each prerequisite gap,
// the level's explanation, the passages of the corpus that best answer a specific question,
// examples (more for beginners) and key points.
func (a *Specialists) Tutor(_ context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
	var cur, level string
	lookup(d, KeyCurrentTopic, &cur)
	lookup(d, KeyLearnerLevel, &level)
	topic, ok := a.corpus.topicOf(d.Query, cur)
	if !ok {
		return nil, &troupe.AgentError{Code: troupe.CodeStateMissing, Message: "tutor: no current topic", FallbackAction: "run diagnostic first"}
	}
	if !slices.Contains(levels, level) {
		level = "beginner"
	}
	var gaps []gap
	lookup(d, KeyPrerequisiteGaps, &gaps)
	var b strings.Builder
	for _, g := range gaps {
		if k, ok := a.corpus.Concept(g.Concept); ok && slices.Contains(a.corpus.Prerequisites(topic.ID), g.Concept) {
			fmt.Fprintf(&b, "First, a reminder about %s: %s\n", k.Name, k.Summary)
		}
	}
	b.WriteString(topic.Explanations[level])
	// After a quiz on this topic, revisit what it showed needs work.
	var areas []string
	var lastQuiz []quizItem
	if lookup(d, "improvement_areas", &areas) && len(areas) > 0 && lookup(d, KeyQuizQuestions, &lastQuiz) && len(lastQuiz) > 0 && lastQuiz[0].ConceptName == topic.ID {
		fmt.Fprintf(&b, "\nYour last quiz showed these need work: %s.", strings.Join(areas, ", "))
		if ps := a.retrieve(strings.Join(areas, " "), topic.ID, b.String(), 2); len(ps) > 0 {
			b.WriteString(" " + strings.Join(ps, " "))
		}
	}
	question := a.specificQuestion(d.Query, topic)
	var passages []string
	if question != "" {
		passages = a.retrieve(question, topic.ID, topic.Explanations[level], 2)
		if len(passages) > 0 {
			b.WriteString("\nOn your question: " + strings.Join(passages, " "))
		}
	}
	n := map[string]int{"beginner": 3, "intermediate": 2, "advanced": 1}[level]
	examples := topic.Examples[:min(n, len(topic.Examples))]
	explanation := b.String()
	mastery := masteryOf(d)
	next := "quiz"
	switch {
	case question != "" && len(passages) == 0:
		next = "ask_question"
	case mastery[topic.ID] >= a.cfg.Threshold:
		next = "ask_question"
	}
	text := explanation + "\nExamples: " + strings.Join(examples, "; ") + "\nKey points: " + strings.Join(topic.KeyPoints, "; ") + "."
	switch next {
	case "quiz":
		text += "\nWhen you're ready, say \"quiz me\"."
	case "ask_question":
		text += "\nAsk me anything else about " + topic.Name + "."
	}
	return &troupe.Result{
		AgentResult: map[string]any{
			"explanation": explanation, "examples_provided": examples, "key_points": topic.KeyPoints,
			"next_action": next, "topic": topic.ID, "learner_level": level,
		},
		AnalysisSummary: summary(text),
	}, nil
}

// specificQuestion returns the message when it asks something beyond naming the topic.
func (a *Specialists) specificQuestion(msg string, topic *Concept) string {
	rest := 0
	names := map[string]bool{}
	for _, n := range append([]string{topic.ID, topic.Name}, topic.Aliases...) {
		for _, w := range tokens(n) {
			names[w] = true
		}
	}
	for _, w := range tokens(msg) {
		if !stopWords[w] && !names[w] {
			rest++
		}
	}
	if rest == 0 {
		return ""
	}
	return msg
}

var stopWords = map[string]bool{
	"a": true, "an": true, "the": true, "is": true, "are": true, "do": true, "does": true, "how": true, "why": true,
	"what": true, "explain": true, "me": true, "i": true, "you": true, "to": true, "of": true, "in": true, "it": true,
	"can": true, "please": true, "and": true, "we": true, "my": true, "about": true, "work": true, "works": true, "s": true,
	// Words that say nothing about the content: a sentence sharing them is no answer.
	"that": true, "this": true, "these": true, "those": true, "when": true, "so": true, "with": true, "for": true,
	"on": true, "at": true, "be": true, "if": true, "or": true, "but": true, "not": true, "did": true, "there": true,
	"they": true, "them": true, "its": true, "again": true, "just": true, "would": true, "should": true,
}

// retrieve returns up to n corpus sentences that share the most content words with question,
// preferring the topic's own material and skipping sentences already in shown.
func (a *Specialists) retrieve(question, topic, shown string, n int) []string {
	q := map[string]bool{}
	for _, w := range tokens(question) {
		if !stopWords[w] {
			q[w] = true
		}
	}
	type hit struct {
		s     string
		score float64
		at    int
	}
	var hits []hit
	at := 0
	for _, k := range a.corpus.Concepts {
		var texts []string
		for _, l := range levels {
			texts = append(texts, sentences(k.Explanations[l])...)
		}
		texts = append(texts, k.Examples...)
		for _, s := range texts {
			at++
			if strings.Contains(shown, s) {
				continue
			}
			score := 0.0
			for _, w := range tokens(s) {
				if q[w] {
					score++
					q[w] = false // count each question word once per sentence
				}
			}
			for w := range q {
				q[w] = true
			}
			if score == 0 {
				continue
			}
			if k.ID == topic {
				score += 0.5
			}
			hits = append(hits, hit{s, score, at})
		}
	}
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].score > hits[j].score })
	var out []string
	for _, h := range hits[:min(n, len(hits))] {
		out = append(out, h.s)
	}
	return out
}

// sentences splits text at sentence ends.
func sentences(text string) []string {
	var out []string
	start := 0
	for i := 0; i < len(text); i++ {
		if (text[i] == '.' || text[i] == '?' || text[i] == '!') && (i+1 == len(text) || text[i+1] == ' ') {
			if s := strings.TrimSpace(text[start : i+1]); s != "" {
				out = append(out, s)
			}
			start = i + 1
		}
	}
	if s := strings.TrimSpace(text[start:]); s != "" {
		out = append(out, s)
	}
	return out
}

// Quiz runs a quiz on the current topic: it draws NumQuestions questions with the session's
// seed, asks them one by one through the run's human-input handler, grades each answer, and
// stops early — quiz_paused — when the learner says "pause". A paused quiz resumes at the
// question it stopped at, unless the message names another topic ("quiz me on decimals") or,
// without asking to resume or continue, another difficulty.
//
// Seed 003's Prepare Quiz takes a difficulty, easy | medium | hard | adaptive: a word of the
// message ("quiz me on hard fractions"), else parsed_query["difficulty"]. A quiz at easy,
// medium or hard asks only questions of that difficulty, so it is as long as the topic has
// such questions, up to NumQuestions; adaptive picks the difficulty for the learner (see
// adaptiveDifficulty). A quiz at no difficulty draws from all of them.
func (a *Specialists) Quiz(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
	var (
		cur       string
		items     []quizItem
		responses []response
		index     int
		paused    bool
		number    int
		asked     string // the paused quiz's difficulty
	)
	requested, err := requestedDifficulty(d)
	if err != nil {
		return nil, err
	}
	lookup(d, KeyCurrentTopic, &cur)
	lookup(d, "quiz_number", &number)
	lookup(d, KeyQuizPaused, &paused)
	if paused {
		lookup(d, KeyQuizQuestions, &items)
		lookup(d, KeyQuizResponses, &responses)
		lookup(d, KeyQuizQuestionIndex, &index)
		lookup(d, KeyQuizDifficulty, &asked)
		// The paused quiz may be on another topic than the current one ("quiz me on decimals"
		// during fractions, then "pause"): a message naming no topic, such as "continue quiz",
		// resumes it rather than starting one on the current topic.
		if len(items) > 0 {
			_, named := a.corpus.FindTopic(d.Query)
			if _, known := a.corpus.Concept(items[0].ConceptName); known && !named {
				cur = items[0].ConceptName
			}
		}
	}
	// "quiz me on decimals" quizzes on decimals; a quiz paused on another topic stays paused.
	topic, ok := a.corpus.topicOf(d.Query, cur)
	if !ok {
		return nil, &troupe.AgentError{Code: troupe.CodeStateMissing, Message: fmt.Sprintf("quiz: unknown current topic %q", cur), FallbackAction: "run diagnostic first"}
	}
	if asked == "" {
		asked = difficultyMixed
	}
	// Seed 003 routes "resume" (and "continue quiz") to the paused quiz: asked to resume, the
	// quiz resumes at its own difficulty whatever other word the message holds.
	words := tokens(d.Query)
	resuming := slices.Contains(words, "resume") || slices.Contains(words, "continue")
	resumed := paused && len(items) > 0 && items[0].ConceptName == topic.ID && index < len(items) && index == len(responses) &&
		(requested == "" || requested == asked || resuming)
	var lines []string
	// verdict is said before the next question: the last answer's, so the learner hears it at
	// once, or, before the first question, how a quiz at a difficulty was made or where a
	// resumed quiz resumes. The summary, read after the quiz, recaps the resumption in the past
	// tense.
	verdict := ""
	if !resumed {
		number++
		asked, items, responses, index = requested, nil, nil, 0
		if asked == "" {
			asked = difficultyMixed
		}
		var qs []*Question
		var notes []string
		if asked == difficultyMixed {
			qs = a.corpus.Draw(topic.ID, a.cfg.NumQuestions, seedOf(d), fmt.Sprint("quiz ", number))
		} else {
			level := asked
			if level == "adaptive" {
				var why string
				level, why = a.adaptiveDifficulty(d, topic)
				notes = append(notes, fmt.Sprintf("Adaptive quiz: %s, so %s questions.", why, level))
			}
			qs, notes = a.drawAt(d, topic, level, number, notes)
		}
		for _, q := range qs {
			items = append(items, quizItem{QuestionID: q.ID, QuestionText: q.Text, ConceptName: q.Concept, Skill: q.Skill,
				Difficulty: q.Difficulty, ExpectedAnswer: q.Answer, SourceContext: topic.Summary})
		}
		if len(notes) > 0 {
			verdict = strings.Join(notes, " ") + "\n"
			lines = append(lines, notes...)
		}
	}
	// label names the difficulty of a quiz asked for at one: its questions'.
	label := ""
	if asked != difficultyMixed && len(items) > 0 && slices.Contains(difficulties[:3], items[0].Difficulty) {
		label = items[0].Difficulty
	}
	if resumed {
		verdict = fmt.Sprintf("Resuming your %s quiz at question %d of %d.\n", topic.Name, index+1, len(items))
		lines = append(lines, fmt.Sprintf("Resumed at question %d of %d.", index+1, len(items)))
	}
	paused = false
	for index < len(items) {
		it := items[index]
		about := topic.Name
		if label != "" {
			about += ", " + label
		}
		ans, err := ask(ctx, d, fmt.Sprintf("quiz/%d/%s", number, it.QuestionID),
			verdict+fmt.Sprintf("Question %d of %d (%s): %s", index+1, len(items), about, it.QuestionText), it.QuestionID, it.ConceptName)
		if err != nil {
			return nil, err
		}
		if isPause(ans) {
			paused = true
			break
		}
		// The answer is graded against the quiz as drawn; the corpus's question, when it still
		// has it, knows the form the answer must take.
		q := Question{ID: it.QuestionID, Answer: it.ExpectedAnswer}
		if cq, ok := a.corpus.Question(it.QuestionID); ok {
			q.Form = cq.Form
		}
		correct, near, note := q.Grade(ans)
		fb := "Correct."
		switch {
		case note != "":
			fb = fmt.Sprintf("Not quite: %s; the answer is %s.", note, it.ExpectedAnswer)
		case !correct:
			fb = fmt.Sprintf("Not quite: the answer is %s.", it.ExpectedAnswer)
		}
		responses = append(responses, response{QuestionID: it.QuestionID, LearnerAnswer: ans, IsCorrect: correct, Closeness: near, Feedback: fb})
		lines = append(lines, fmt.Sprintf("Q%d %s", index+1, fb))
		verdict = fmt.Sprintf("Q%d: %s\n", index+1, fb)
		index++
	}
	right := 0
	for _, r := range responses {
		if r.IsCorrect {
			right++
		}
	}
	score := 0.0
	if len(responses) > 0 {
		score = float64(right) / float64(len(responses))
	}
	complete := !paused
	if paused {
		lines = append(lines, fmt.Sprintf("Quiz paused after %d of %d questions; say \"continue quiz\" to pick up where you left off.", index, len(items)))
	} else {
		quiz := "Quiz"
		if label != "" {
			quiz = strings.ToUpper(label[:1]) + label[1:] + " quiz"
		}
		lines = append(lines, fmt.Sprintf("%s on %s complete: %d of %d correct (%.0f%%).", quiz, topic.Name, right, len(items), 100*score))
	}
	if responses == nil {
		responses = []response{}
	}
	return &troupe.Result{
		AgentResult: map[string]any{
			KeyQuizQuestions: items, KeyQuizResponses: responses, KeyQuizScore: score, KeyQuizQuestionIndex: index,
			KeyQuizPaused: paused, KeyQuizComplete: complete, "quiz_number": number, KeyQuizDifficulty: asked, "topic": topic.ID,
		},
		AnalysisSummary: summary(strings.Join(lines, "\n")),
	}, nil
}

// difficulties are seed 003's quiz difficulties: the questions' own, easiest first, then
// adaptive, which picks one of them for the learner.
var difficulties = []string{"easy", "medium", "hard", "adaptive"}

// difficultyMixed is the quiz_difficulty of a quiz asked for at no difficulty: its questions
// are drawn from all of them.
const difficultyMixed = "mixed"

// requestedDifficulty returns the difficulty a quiz is asked for at: the first of seed 003's
// difficulties the message says ("quiz me on hard fractions"), else parsed_query["difficulty"],
// else "". A parsed difficulty that is none of them is INVALID_INPUT.
func requestedDifficulty(d *troupe.Dispatch) (string, error) {
	for _, w := range tokens(d.Query) {
		if slices.Contains(difficulties, w) {
			return w, nil
		}
	}
	v, ok := d.ParsedQuery["difficulty"]
	if !ok || v == nil || v == "" {
		return "", nil
	}
	if s, isString := v.(string); isString && slices.Contains(difficulties, strings.ToLower(s)) {
		return strings.ToLower(s), nil
	}
	return "", &troupe.AgentError{Code: troupe.CodeInvalidInput,
		Message:        fmt.Sprintf("quiz: difficulty %q is not one of %s", fmt.Sprint(v), strings.Join(difficulties, ", ")),
		FallbackAction: "ask the learner for an easy, medium, hard or adaptive quiz"}
}

// adaptiveDifficulty is the difficulty an adaptive quiz on topic asks at, and why: by the
// learner's mastery of the topic when it is known — below RequiredMastery easy, below the
// mastery Threshold medium, else hard — else by the diagnostic's learner level (beginner easy,
// intermediate medium, advanced hard), else medium. In a mastery loop the quizzes so get
// harder as mastery grows.
func (a *Specialists) adaptiveDifficulty(d *troupe.Dispatch, topic *Concept) (level, why string) {
	if m, known := masteryOf(d)[topic.ID]; known {
		level = "hard"
		switch {
		case m < a.cfg.RequiredMastery:
			level = "easy"
		case m < a.cfg.Threshold:
			level = "medium"
		}
		return level, fmt.Sprintf("your mastery of %s is %.2f", topic.Name, m)
	}
	var learner string
	lookup(d, KeyLearnerLevel, &learner)
	if i := slices.Index(levels, learner); i >= 0 {
		return difficulties[i], "your level is " + learner
	}
	return "medium", fmt.Sprintf("your mastery of %s is not assessed yet", topic.Name)
}

// drawAt draws the quiz's questions at difficulty level: the topic's questions of that level,
// in the session seed's order, up to NumQuestions. A topic with none at that level is asked at
// the nearest level it has (the easier of two as near), and one whose questions have none of
// the levels, at all of them. notes gains what the learner should know: a quiz shorter than
// NumQuestions, or at another level.
func (a *Specialists) drawAt(d *troupe.Dispatch, topic *Concept, level string, number int, notes []string) ([]*Question, []string) {
	all := a.corpus.Draw(topic.ID, len(topic.Questions), seedOf(d), fmt.Sprint("quiz ", number))
	graded := difficulties[:3] // the levels a question has; adaptive is none
	want := slices.Index(graded, level)
	at := ""
	for dist := 0; at == "" && dist < len(graded); dist++ {
		for _, i := range []int{want - dist, want + dist} {
			if at == "" && i >= 0 && i < len(graded) && slices.ContainsFunc(all, func(q *Question) bool { return q.Difficulty == graded[i] }) {
				at = graded[i]
			}
		}
	}
	if at == "" {
		notes = append(notes, fmt.Sprintf("%s's questions have no difficulty; these are of any.", topic.Name))
		return all[:min(len(all), a.cfg.NumQuestions)], notes
	}
	qs := slices.DeleteFunc(all, func(q *Question) bool { return q.Difficulty != at })
	if at != level {
		notes = append(notes, fmt.Sprintf("%s has no %s questions; these are %s.", topic.Name, level, at))
	}
	if len(qs) < a.cfg.NumQuestions {
		plural := "s"
		if len(qs) == 1 {
			plural = ""
		}
		notes = append(notes, fmt.Sprintf("%s has %d %s question%s, so the quiz is %d question%s long.", topic.Name, len(qs), at, plural, len(qs), plural))
	}
	return qs[:min(len(qs), a.cfg.NumQuestions)], notes
}

// Feedback analyses a completed quiz: it classifies each wrong answer (a near-miss number is
// careless, a far one procedural, a non-answer conceptual), lists the skills to work on, and
// updates the topic's mastery as 0.3·previous + 0.7·score (the score alone the first time).
// A quiz the learner paused is a stop, not missing state: feedback says so, grades nothing and
// leaves the topic's mastery as it was (the learning cycle reaches feedback after every quiz).
// No quiz at all is STATE_MISSING.
func (a *Specialists) Feedback(_ context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
	var (
		items     []quizItem
		responses []response
		score     float64
		complete  bool
		paused    bool
	)
	lookup(d, KeyQuizQuestions, &items)
	lookup(d, KeyQuizResponses, &responses)
	lookup(d, KeyQuizScore, &score)
	lookup(d, KeyQuizComplete, &complete)
	lookup(d, KeyQuizPaused, &paused)
	if len(items) > 0 && paused && !complete {
		name := items[0].ConceptName
		if k, ok := a.corpus.Concept(name); ok {
			name = k.Name
		}
		text := fmt.Sprintf("Quiz on %s paused after %d of %d questions; nothing graded yet.", name, len(responses), len(items))
		ar := map[string]any{"feedback_text": text, "topic": items[0].ConceptName}
		// The topic's mastery, when known, is passed on unchanged: a mastery loop's result is its
		// last cycle's, so this keeps what the loop's earlier cycles graded.
		mastery := masteryOf(d)
		if m, ok := mastery[items[0].ConceptName]; ok {
			ar[KeyMastery], ar[KeyMasteryScore], ar[KeyMasteryAchieved] = mastery, m, m >= a.cfg.Threshold
		}
		return &troupe.Result{AgentResult: ar, AnalysisSummary: summary(text)}, nil
	}
	if len(items) == 0 || !complete {
		return nil, &troupe.AgentError{Code: troupe.CodeStateMissing, Message: "feedback: no completed quiz", FallbackAction: "run diagnostic first"}
	}
	topic, _ := a.corpus.Concept(items[0].ConceptName)
	byID := map[string]quizItem{}
	for _, it := range items {
		byID[it.QuestionID] = it
	}
	type pattern struct {
		PatternType          string   `json:"pattern_type"`
		Description          string   `json:"description"`
		AffectedQuestions    []string `json:"affected_questions"`
		SuggestedRemediation string   `json:"suggested_remediation"`
		skills               []string
	}
	var patterns []*pattern
	find := func(kind string) *pattern {
		for _, p := range patterns {
			if p.PatternType == kind {
				return p
			}
		}
		p := &pattern{PatternType: kind}
		patterns = append(patterns, p)
		return p
	}
	var areas []string
	for _, r := range responses {
		if r.IsCorrect {
			continue
		}
		it := byID[r.QuestionID]
		kind := "conceptual"
		if _, isNum := parseNumber(r.LearnerAnswer); isNum {
			kind = "procedural"
			if r.Closeness >= 0.9 {
				kind = "careless"
			}
		}
		p := find(kind)
		p.AffectedQuestions = append(p.AffectedQuestions, r.QuestionID)
		if !slices.Contains(p.skills, it.Skill) {
			p.skills = append(p.skills, it.Skill)
		}
		if !slices.Contains(areas, it.Skill) {
			areas = append(areas, it.Skill)
		}
	}
	order := map[string]int{"conceptual": 0, "procedural": 1, "careless": 2}
	sort.SliceStable(patterns, func(i, j int) bool { return order[patterns[i].PatternType] < order[patterns[j].PatternType] })
	out := []map[string]any{}
	for _, p := range patterns {
		skills := strings.Join(p.skills, ", ")
		switch p.PatternType {
		case "conceptual":
			p.Description = fmt.Sprintf("%d answer(s) on %s were not a number at all", len(p.AffectedQuestions), skills)
			p.SuggestedRemediation = fmt.Sprintf("re-read the explanation of %s: %s", topic.Name, strings.TrimSuffix(topic.Summary, "."))
		case "procedural":
			p.Description = fmt.Sprintf("%d answer(s) on %s were far from the expected value", len(p.AffectedQuestions), skills)
			p.SuggestedRemediation = fmt.Sprintf("rework the steps of %s; remember: %s", skills, strings.Join(topic.KeyPoints, "; "))
		case "careless":
			p.Description = fmt.Sprintf("%d answer(s) on %s were within 10%% of the expected value", len(p.AffectedQuestions), skills)
			p.SuggestedRemediation = "check each answer once more before moving on"
		}
		out = append(out, map[string]any{"pattern_type": p.PatternType, "description": p.Description,
			"affected_questions": p.AffectedQuestions, "suggested_remediation": p.SuggestedRemediation})
	}
	mastery := masteryOf(d)
	prev, known := mastery[topic.ID]
	m := score
	if known {
		m = 0.3*prev + 0.7*score
	}
	m = math.Round(m*1000) / 1000
	mastery[topic.ID] = m
	achieved := m >= a.cfg.Threshold
	var b strings.Builder
	right := 0
	for _, r := range responses {
		if r.IsCorrect {
			right++
		}
	}
	fmt.Fprintf(&b, "You got %d of %d questions on %s right (%.0f%%). ", right, len(responses), topic.Name, 100*score)
	if known {
		fmt.Fprintf(&b, "Your mastery moved from %.2f to %.2f", prev, m)
	} else {
		fmt.Fprintf(&b, "Your mastery is now %.2f", m)
	}
	fmt.Fprintf(&b, " (mastery needs %.2f).", a.cfg.Threshold)
	if achieved {
		fmt.Fprintf(&b, " You have mastered %s!", topic.Name)
	}
	for _, p := range patterns {
		fmt.Fprintf(&b, "\n- %s: %s; %s.", p.PatternType, p.Description, p.SuggestedRemediation)
	}
	if areas == nil {
		areas = []string{}
	}
	return &troupe.Result{
		AgentResult: map[string]any{
			"error_patterns": out, "feedback_text": b.String(), "improvement_areas": areas,
			KeyMasteryScore: m, KeyMasteryAchieved: achieved, KeyMastery: mastery, "topic": topic.ID,
		},
		Confidence:      troupe.Ptr(math.Min(1, float64(len(responses))/float64(a.cfg.NumQuestions))),
		AnalysisSummary: summary(b.String()),
	}, nil
}

// PathPlanner orders what is left to learn toward the learner's goals (seed 003's goals
// input; see goalsOf), else toward the current topic: each goal and the unmastered concepts it
// needs, goal by goal in the order the goals are stated, each concept after its prerequisites
// (topological order of the concept graph), with why and how much effort each takes. What no
// goal needs is left off the path. When every goal and all it needs is mastered, or there is
// no goal, it orders every unmastered concept. The concepts ready to start next are the
// alternatives.
func (a *Specialists) PathPlanner(_ context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
	mastery := masteryOf(d)
	var cur string
	lookup(d, KeyCurrentTopic, &cur)
	goals, unknown := a.goalsOf(d)
	stated := len(goals) > 0
	if !stated {
		if k, ok := a.corpus.Concept(cur); ok {
			goals = []string{k.ID}
		}
	}
	unmastered := func(id string) bool { return mastery[id] < a.cfg.Threshold }
	// scope is what the goals need: each goal and its prerequisites. The path takes them goal
	// by goal; what an earlier goal needs is already on it.
	scope := map[string]bool{}
	var order []string
	for _, g := range goals {
		mine := map[string]bool{g: true}
		for _, p := range a.corpus.Prerequisites(g) {
			mine[p] = true
		}
		part, err := a.corpus.topo(func(id string) bool { return mine[id] && !scope[id] && unmastered(id) })
		if err != nil {
			return nil, fmt.Errorf("tutor: pathplanner: %w", err)
		}
		order = append(order, part...)
		maps.Copy(scope, mine)
	}
	if len(goals) == 0 || len(order) == 0 {
		// No goal, or the goals and everything under them are mastered: plan onward over the
		// whole graph.
		goals, stated = nil, false
		var err error
		if order, err = a.corpus.topo(unmastered); err != nil {
			return nil, fmt.Errorf("tutor: pathplanner: %w", err)
		}
	}
	path := []map[string]any{}
	var steps []string
	for _, id := range order {
		k, _ := a.corpus.Concept(id)
		m, known := mastery[id]
		var reason string
		var unmet []string
		for _, r := range k.Requires {
			if unmastered(r) {
				unmet = append(unmet, r)
			}
		}
		switch {
		case slices.Contains(goals, id) && stated:
			reason = "your goal"
		case slices.Contains(goals, id):
			reason = "your current topic"
		case len(goals) > 0:
			var needs []string
			for _, c := range a.corpus.Concepts {
				if slices.Contains(c.Requires, id) && scope[c.ID] {
					needs = append(needs, c.ID)
				}
			}
			reason = "needed for " + strings.Join(needs, " and ")
		default:
			reason = "not yet mastered"
		}
		if known {
			reason += fmt.Sprintf("; mastery %.2f < %.2f", m, a.cfg.Threshold)
		} else {
			reason += "; not assessed yet"
		}
		if len(unmet) > 0 {
			reason += "; after " + strings.Join(unmet, ", ")
		}
		effort := "high"
		switch {
		case m >= 0.6:
			effort = "low"
		case m >= 0.3:
			effort = "medium"
		}
		path = append(path, map[string]any{"topic": id, "reason": reason, "estimated_effort": effort})
		steps = append(steps, fmt.Sprintf("%d. %s — %s (effort %s)", len(steps)+1, k.Name, reason, effort))
	}
	next := ""
	if len(order) > 0 {
		next = order[0]
	}
	alts := slices.DeleteFunc(a.ready(mastery), func(id string) bool { return id == next })
	var b strings.Builder
	var known []string
	for _, k := range a.corpus.Concepts {
		if m, ok := mastery[k.ID]; ok {
			known = append(known, fmt.Sprintf("%s %.2f", k.ID, m))
		}
	}
	if len(known) > 0 {
		b.WriteString("Your mastery: " + strings.Join(known, ", ") + ".\n")
	} else {
		b.WriteString("Nothing assessed yet.\n")
	}
	reasoning := ""
	var active, done []string // the goals not mastered yet, and the mastered ones
	for _, g := range goals {
		if unmastered(g) {
			active = append(active, g)
		} else {
			done = append(done, g)
		}
	}
	switch {
	case next == "":
		reasoning = "Every concept is mastered."
	case stated && len(active) == 0:
		reasoning = fmt.Sprintf("You have mastered your %s %s; %d concepts they build on are still below %.2f, so reinforce them in prerequisite order, starting with %s.",
			plural(len(done), "goal"), strings.Join(done, " and "), len(order), a.cfg.Threshold, next)
	case stated:
		reasoning = fmt.Sprintf("Toward your %s %s: learn the %d unmastered concepts %s, each after its prerequisites, starting with %s.",
			plural(len(active), "goal"), strings.Join(active, ", then "), len(order), map[bool]string{true: "it needs", false: "they need, goal by goal"}[len(active) == 1], next)
		if len(done) > 0 {
			reasoning += fmt.Sprintf(" You have mastered %s already.", strings.Join(done, " and "))
		}
	case len(goals) > 0 && len(done) > 0:
		// The topic is mastered but some of what it builds on is not: say so, rather than
		// telling the learner to "reach" what they already know.
		reasoning = fmt.Sprintf("You have mastered %s; %d concepts it builds on are still below %.2f, so reinforce them in prerequisite order, starting with %s.", goals[0], len(order), a.cfg.Threshold, next)
	case len(goals) > 0:
		reasoning = fmt.Sprintf("To reach %s, learn the %d unmastered concepts it depends on in prerequisite order, starting with %s.", goals[0], len(order), next)
	default:
		reasoning = fmt.Sprintf("%d concepts are not mastered; this order puts every concept after its prerequisites, starting with %s.", len(order), next)
	}
	if len(unknown) > 0 {
		var qs []string
		for _, u := range unknown {
			qs = append(qs, fmt.Sprintf("%q", u))
		}
		reasoning += fmt.Sprintf(" I have no material on %s.", strings.Join(qs, " or "))
	}
	b.WriteString(reasoning)
	if len(steps) > 0 {
		b.WriteString("\n" + strings.Join(steps, "\n"))
	}
	if len(alts) > 0 {
		b.WriteString("\nAlso ready to start: " + strings.Join(alts, ", ") + ".")
	}
	if alts == nil {
		alts = []string{}
	}
	return &troupe.Result{
		AgentResult:     map[string]any{"learning_path": path, "next_topic": next, "path_reasoning": reasoning, "alternative_paths": alts},
		AnalysisSummary: summary(b.String()),
	}, nil
}

// goalsOf returns the learner's stated goals as concept ids, most important first, and those
// the corpus has no concept for: the concepts the message names ("what's next for
// multiplication and subtraction", in the order named), else parsed_query["goals"], else the
// session state's goals (KeyGoals). A goal is a concept's id, name or alias; a string is one
// goal, a list several.
func (a *Specialists) goalsOf(d *troupe.Dispatch) (ids, unknown []string) {
	for _, k := range a.corpus.FindTopics(d.Query) {
		ids = append(ids, k.ID)
	}
	if len(ids) > 0 {
		return ids, nil
	}
	var v any
	if v = d.ParsedQuery[KeyGoals]; v == nil {
		lookup(d, KeyGoals, &v)
	}
	var stated []string
	switch g := v.(type) {
	case string:
		stated = []string{g}
	case nil:
	default:
		decode(g, &stated)
	}
	for _, g := range stated {
		k, ok := a.corpus.FindTopic(g)
		switch {
		case !ok && strings.TrimSpace(g) != "":
			unknown = append(unknown, g)
		case ok && !slices.Contains(ids, k.ID):
			ids = append(ids, k.ID)
		}
	}
	return ids, unknown
}

// plural is noun, with an s unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return noun
	}
	return noun + "s"
}

// ready returns the unmastered concepts whose prerequisites are all mastered.
func (a *Specialists) ready(mastery map[string]float64) []string {
	var out []string
	for _, k := range a.corpus.Concepts {
		if mastery[k.ID] >= a.cfg.Threshold {
			continue
		}
		ok := true
		for _, r := range k.Requires {
			ok = ok && mastery[r] >= a.cfg.Threshold
		}
		if ok {
			out = append(out, k.ID)
		}
	}
	return out
}

func (a *Specialists) topicNames() []string {
	var out []string
	for _, k := range a.corpus.Concepts {
		out = append(out, k.ID)
	}
	return out
}
