// Package tutor is seed 003's adaptive tutor, runnable offline: a coordinator that routes each
// learner message by its routing table (Coordinator), and five specialists that do real work
// over a shipped corpus (corpus/arithmetic.json: seven arithmetic concepts with explanations per
// learner level, worked examples, key points, quiz questions with answers, and a prerequisite
// graph):
//
//   - diagnostic asks one quick-check question per concept of unknown mastery (the topic's
//     prerequisites and the topic itself, at most three), grades the answers and estimates
//     mastery per concept, gaps, a learner level and a recommendation;
//   - tutor composes an explanation for the current topic at the learner's level: recaps of
//     prerequisite gaps, the passages of the corpus that best answer a specific question, the
//     skills the last quiz found weak, examples and key points;
//   - quiz draws questions with the session's seed — of the difficulty asked for (easy, medium,
//     hard, or adaptive: picked from the learner's mastery), else of any — asks them through the
//     run's human-input handler, grades each answer and can be paused and resumed;
//   - feedback classifies the wrong answers, lists the skills to work on and updates mastery;
//   - pathplanner orders the unmastered concepts the learner's goals (else the topic) need,
//     goal by goal, in prerequisite order.
//
// LearningCycle (flow.Sequential: tutor → quiz → feedback) and MasteryLoop (flow.Loop until
// mastery) compose them. A Session holds the conversation: each message is one troupe run,
// routed by the coordinator, with the session state carried from message to message;
// Converse reads a terminal or a script, and `troupe chat examples/tutor` runs it.
package tutor
