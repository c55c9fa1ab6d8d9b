package tutor

import (
	"context"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/flow"
)

// Keys the learning cycle's members write, and so what carries from one cycle of the mastery
// loop to the next.
var (
	tutorWrites    = []string{"explanation", "examples_provided"}
	quizWrites     = []string{KeyQuizQuestions, KeyQuizResponses, KeyQuizScore, KeyQuizQuestionIndex, KeyQuizPaused, KeyQuizComplete, "quiz_number", KeyQuizDifficulty}
	feedbackWrites = []string{"error_patterns", "feedback_text", KeyMasteryScore, KeyMasteryAchieved, "improvement_areas", KeyMastery}
	cycleWrites    = append(append(append([]string{}, tutorWrites...), quizWrites...), feedbackWrites...)
)

// LearningCycle is seed 003's LearningCycle: tutor → quiz → feedback as a flow.Sequential over
// a's agents. It reads the current topic from session state; its agent_result is the three
// results merged (explanation, quiz_score, feedback_text, mastery_achieved, …). The
// learning_cycle agent of Registry, and each cycle of MasteryLoop, add seed 003's
// cycle_number.
func (a *Specialists) LearningCycle() *flow.SequentialAgent {
	return flow.Sequential(flow.SequentialConfig{},
		flow.Named("tutor", troupe.AgentFunc(a.Tutor), troupe.Reads(KeyCurrentTopic), troupe.Writes(tutorWrites...)),
		flow.Named("quiz", troupe.AgentFunc(a.Quiz), troupe.Reads(KeyCurrentTopic), troupe.Writes(quizWrites...)),
		flow.Named("feedback", troupe.AgentFunc(a.Feedback), troupe.Reads(KeyQuizQuestions, KeyQuizResponses, KeyQuizScore), troupe.Writes(feedbackWrites...)),
	)
}

// learningCycle is LearningCycle as the learning_cycle agent of Registry and MasteryLoop: its
// agent_result also carries seed 003's cycle_number, 1 for the first cycle and one more for
// each earlier cycle among its upstream results (a loop passes its earlier cycles on).
func (a *Specialists) learningCycle() troupe.AgentFunc {
	seq := a.LearningCycle()
	return func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		res, err := seq.Run(ctx, d)
		if res != nil && res.AgentResult != nil {
			n := 1
			for _, u := range d.UpstreamResults {
				if u.Agent == "learning_cycle" {
					n++
				}
			}
			res.AgentResult["cycle_number"] = n
		}
		return res, err
	}
}

// ReasonQuizPaused is the escalation_reason of a mastery loop that stopped because the learner
// paused a cycle's quiz: neither mastered nor out of cycles, and that quiz not graded yet.
const ReasonQuizPaused = "quiz_paused"

// MasteryLoop is seed 003's MasteryLoop: the learning cycle repeated until mastery_score
// reaches the mastery threshold (escalation "mastered") or maxIterations cycles have run
// ("needs_remediation"; 0 means flow.DefaultMaxIterations, seed 003's 5). Its agent_result
// is the last cycle's plus total_cycles, escalated, condition_met and escalation_reason.
//
// A cycle whose quiz the learner paused also ends the loop: they stopped, and another cycle
// would only ask again. The LoopAgent counts that stop as its condition met; the mastery_loop
// agent of Registry reports it as what it is (see masteryLoop).
func (a *Specialists) MasteryLoop(maxIterations int) *flow.LoopAgent {
	return flow.Loop(flow.LoopConfig{
		MaxIterations: maxIterations,
		Until: func(it flow.Iteration) bool {
			if paused, _ := it.State(KeyQuizPaused); paused == true {
				return true
			}
			v, ok := it.State(KeyMasteryScore)
			score, isNum := v.(float64)
			return ok && isNum && score >= a.cfg.Threshold
		},
	}, flow.Named("learning_cycle", a.learningCycle(), troupe.Reads(KeyCurrentTopic), troupe.Writes(cycleWrites...)))
}

// masteryLoop is MasteryLoop as the agent Registry registers: a loop stopped by a paused quiz
// reports escalated and condition_met false and escalation_reason ReasonQuizPaused, so neither
// its result nor the run's log says "mastered".
func (a *Specialists) masteryLoop() troupe.AgentFunc {
	l := a.MasteryLoop(a.cfg.MaxCycles)
	return func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		res, err := l.Run(ctx, d)
		if err == nil && res != nil && res.AgentResult[KeyQuizPaused] == true {
			res.AgentResult["escalated"] = false
			res.AgentResult["condition_met"] = false
			res.AgentResult["escalation_reason"] = ReasonQuizPaused
		}
		return res, err
	}
}
