package tutor

import "github.com/troupehq/troupe/route"

// Agents returns the names of seed 003's specialist agents, the coordinator's possible
// targets, in the order the seed introduces them.
func Agents() []string { return []string{"diagnostic", "tutor", "quiz", "feedback", "pathplanner"} }

// Coordinator returns seed 003's Coordinator Agent as a routing table: it routes each user
// message on its words and the session state keys quiz_paused, quiz_complete and
// last_routed_to, and sends anything unclear to the tutor. Each call returns a new table.
//
// The table reads last_routed_to but does not write it: whoever runs the coordinator must
// record the agent each message was routed to, or feedback never follows a quiz.
func Coordinator() *route.Rules {
	return &route.Rules{
		// Seed 003 lists its rows by intent; the order here is the order they are tried, and
		// the first that fires wins.
		Triggers: []route.Trigger{
			{
				// "Automatic after quiz": no message condition, so it comes first, before the
				// learner's next words can send them elsewhere.
				Name:   "after_quiz",
				When:   map[string]any{"quiz_complete": true, "last_routed_to": "quiz"},
				Target: "feedback",
				Reason: "After quiz completion",
			},
			{
				Name:     "new_topic",
				Patterns: []string{"teach me", "i want to learn"},
				Target:   "diagnostic",
				Reason:   "New topic start",
			},
			{
				// Fires only while a quiz is paused; otherwise "resume" is an unclear message
				// and goes to the tutor.
				Name:     "resume_quiz",
				Patterns: []string{"continue quiz", "resume"},
				When:     map[string]any{"quiz_paused": true},
				Target:   "quiz",
				Reason:   "Resume paused quiz",
			},
			{
				// Before content_question: "quiz me on why plants grow" asks for a quiz.
				Name:     "quiz_request",
				Patterns: []string{"quiz me", "test my knowledge"},
				Target:   "quiz",
				Reason:   "Quiz request",
			},
			{
				Name:     "content_question",
				Patterns: []string{"explain", "why", "how does"},
				Target:   "tutor",
				Reason:   "Question about content",
			},
			{
				Name:     "progress_inquiry",
				Patterns: []string{"what's next", "my progress"},
				Target:   "pathplanner",
				Reason:   "Progress inquiry",
			},
		},
		// Seed 003 names no fallback agents; these follow its shared error table, which says
		// what the coordinator should do when an agent fails:
		//   TIMEOUT       "Retry or route to tutor": every other agent falls back to the tutor,
		//                 which the session's policy applies to timeouts too (on_timeout
		//                 on_error; seed 000's on_timeout alone would skip the agent).
		//   STATE_MISSING "Run diagnostic first": the tutor reads learner_level and
		//                 prerequisite_gaps, which only the diagnostic writes, so it falls back
		//                 to the diagnostic.
		// A fallback is one hop (RoutingDecision.Fallback), so tutor ⇄ diagnostic is no cycle.
		Fallbacks: map[string]string{
			"tutor":       "diagnostic",
			"diagnostic":  "tutor",
			"quiz":        "tutor",
			"feedback":    "tutor",
			"pathplanner": "tutor",
		},
		Default:       "tutor",
		DefaultReason: "Unclear → tutor default fallback",
	}
}
