package tutor

import (
	"encoding/json"
	"strconv"

	"github.com/troupehq/troupe"
)

// Session state keys of seed 003 that more than one agent or the session uses.
const (
	KeyCurrentTopic      = "current_topic"
	KeyQuizPaused        = "quiz_paused"
	KeyQuizComplete      = "quiz_complete"
	KeyLastRoutedTo      = "last_routed_to"
	KeyMastery           = "mastery"
	KeyLearnerLevel      = "learner_level"
	KeyPrerequisiteGaps  = "prerequisite_gaps"
	KeyQuizQuestions     = "quiz_questions"
	KeyQuizResponses     = "quiz_responses"
	KeyQuizScore         = "quiz_score"
	KeyQuizQuestionIndex = "quiz_question_index"
	// KeyQuizDifficulty is the difficulty the quiz was asked for at (easy, medium, hard,
	// adaptive), or "mixed"; a paused quiz resumes only at its own.
	KeyQuizDifficulty = "quiz_difficulty"
	// KeyGoals is the learner's stated goals (seed 003's PathPlanner input): concept ids, names
	// or aliases, most important first. SessionConfig.Goals sets it.
	KeyGoals           = "goals"
	KeyMasteryScore    = "mastery_score"
	KeyMasteryAchieved = "mastery_achieved"
)

// lookup finds key in what the dispatch can see: the latest upstream result that has it
// (inside a learning cycle the quiz's result reaches feedback that way), else session state.
// It decodes the value into out through JSON, so state that went through a log round trip
// ([]any, float64) and state written in-process (typed slices, ints) read the same.
func lookup(d *troupe.Dispatch, key string, out any) bool {
	var v any
	found := false
	for i := len(d.UpstreamResults) - 1; i >= 0 && !found; i-- {
		v, found = d.UpstreamResults[i].Result[key]
	}
	if !found {
		v, found = d.State(key)
	}
	return found && decode(v, out)
}

// decode decodes v into out through JSON, as lookup does; nil decodes to nothing.
func decode(v, out any) bool {
	if v == nil {
		return false
	}
	b, err := json.Marshal(v)
	if err != nil {
		return false
	}
	return json.Unmarshal(b, out) == nil
}

// seedOf returns the session's seed from the dispatch's user context ("seed"), or 1.
func seedOf(d *troupe.Dispatch) uint64 {
	switch v := d.UserContext["seed"].(type) {
	case uint64:
		return v
	case int:
		return uint64(v)
	case float64:
		return uint64(v)
	case string:
		if n, err := strconv.ParseUint(v, 10, 64); err == nil {
			return n
		}
	}
	return 1
}

// masteryOf reads the mastery map (concept → 0..1); absent concepts are unknown.
func masteryOf(d *troupe.Dispatch) map[string]float64 {
	m := map[string]float64{}
	lookup(d, KeyMastery, &m)
	return m
}

// gap is one entry of prerequisite_gaps.
type gap struct {
	Concept         string  `json:"concept"`
	CurrentMastery  float64 `json:"current_mastery"`
	RequiredMastery float64 `json:"required_mastery"`
}

// quizItem is one entry of quiz_questions (seed 003's Prepare Quiz output).
type quizItem struct {
	QuestionID     string `json:"question_id"`
	QuestionText   string `json:"question_text"`
	ConceptName    string `json:"concept_name"`
	Skill          string `json:"skill"`
	Difficulty     string `json:"difficulty"`
	ExpectedAnswer string `json:"expected_answer"`
	SourceContext  string `json:"source_context"`
}

// response is one entry of quiz_responses.
type response struct {
	QuestionID    string  `json:"question_id"`
	LearnerAnswer string  `json:"learner_answer"`
	IsCorrect     bool    `json:"is_correct"`
	Closeness     float64 `json:"closeness"`
	Feedback      string  `json:"feedback"`
}

func summary(s string) *string { return &s }
