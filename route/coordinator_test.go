package route_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/examples/tutor"
	"github.com/troupehq/troupe/route"
)

// TestCoordinator is seed 003's Coordinator Agent routing table, row by row, as
// examples/tutor configures it.
func TestCoordinator(t *testing.T) {
	paused := map[string]any{"quiz_paused": true}
	notPaused := map[string]any{"quiz_paused": false}
	quizDone := map[string]any{"quiz_complete": true, "last_routed_to": "quiz", "quiz_paused": false}

	tests := []struct {
		name    string
		message string
		state   map[string]any
		target  string
		rule    string // metadata "rule"; "" for the default
	}{
		// New topic start → diagnostic: "teach me X", "I want to learn X".
		{"teach me", "Teach me fractions", nil, "diagnostic", "new_topic"},
		{"i want to learn", "I want to learn fractions", nil, "diagnostic", "new_topic"},
		{"i want to learn, bare", "i want to learn", nil, "diagnostic", "new_topic"},
		{"teach me is not teach meteorology", "teach meteorology", nil, "tutor", ""},

		// Question about content → tutor: "explain", "why", "how does".
		{"explain", "Can you explain photosynthesis?", nil, "tutor", "content_question"},
		{"why", "Why is the sky blue?", nil, "tutor", "content_question"},
		{"how does", "How does gravity work", nil, "tutor", "content_question"},

		// Quiz request → quiz: "quiz me", "test my knowledge".
		{"quiz me", "Quiz me on fractions", nil, "quiz", "quiz_request"},
		{"test my knowledge", "please test my knowledge", nil, "quiz", "quiz_request"},
		{"anyway, quiz me", "anyway, quiz me", nil, "quiz", "quiz_request"},
		{"quiz request beats why", "quiz me on why plants grow", nil, "quiz", "quiz_request"},

		// After quiz completion → feedback: automatic, whatever the message.
		{"after quiz", "ok", quizDone, "feedback", "after_quiz"},
		{"after quiz, empty message", "", quizDone, "feedback", "after_quiz"},
		{"after quiz beats a quiz request", "quiz me again", quizDone, "feedback", "after_quiz"},
		{"quiz complete but feedback given", "thanks", map[string]any{"quiz_complete": true, "last_routed_to": "feedback"}, "tutor", ""},
		{"quiz not complete", "ok", map[string]any{"quiz_complete": false, "last_routed_to": "quiz"}, "tutor", ""},

		// Progress inquiry → pathplanner: "what's next", "my progress".
		{"what's next", "What's next?", nil, "pathplanner", "progress_inquiry"},
		{"what’s next, typographic apostrophe", "what’s next", nil, "pathplanner", "progress_inquiry"},
		{"my progress", "Show me my progress", nil, "pathplanner", "progress_inquiry"},

		// Resume paused quiz → quiz: "continue quiz", "resume" when quiz_paused=True.
		{"resume while paused", "resume", paused, "quiz", "resume_quiz"},
		{"continue quiz while paused", "Continue quiz please", paused, "quiz", "resume_quiz"},
		{"resume not paused", "resume", notPaused, "tutor", ""},
		{"resume without state", "resume", nil, "tutor", ""},
		{"resume, paused as a string", "resume", map[string]any{"quiz_paused": "true"}, "tutor", ""},
		{"continue quiz not paused", "continue quiz", notPaused, "tutor", ""},

		// Unclear → tutor, the default fallback.
		{"unclear", "hmm", nil, "tutor", ""},
		{"empty", "", nil, "tutor", ""},
		{"anyway is not why", "anyway", nil, "tutor", ""},
	}
	rules := tutor.Coordinator()
	// The fallbacks coordinator.go derives from seed 003's error table.
	fallback := map[string]string{
		"tutor": "diagnostic", "diagnostic": "tutor", "quiz": "tutor", "feedback": "tutor", "pathplanner": "tutor",
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := rules.Route(context.Background(), troupe.RouteInput{
				Task:      troupe.Task{ID: route.TaskID},
				Query:     tt.message,
				State:     tt.state,
				Available: tutor.Agents(),
			}, troupe.NewContext("trace-tutor", ""))
			if err != nil {
				t.Fatal(err)
			}
			wantSource := "trigger"
			if tt.rule == "" {
				wantSource = "default"
			}
			type summary struct{ Target, Source, Rule, Fallback string }
			want := summary{tt.target, wantSource, tt.rule, fallback[tt.target]}
			rule, _ := got.Metadata["rule"].(string)
			source, _ := got.Metadata["source"].(string)
			if diff := cmp.Diff(want, summary{got.Target, source, rule, got.Fallback}); diff != "" {
				t.Errorf("message %q, state %v (-want +got):\n%s\nreason: %s", tt.message, tt.state, diff, got.Reason)
			}
		})
	}
}

func TestCoordinatorDecisions(t *testing.T) {
	tests := []struct {
		name      string
		message   string
		state     map[string]any
		available []string
		want      troupe.RoutingDecision
	}{
		{
			name:    "anyway, quiz me",
			message: "anyway, quiz me",
			want: troupe.RoutingDecision{
				Target:   "quiz",
				Reason:   `Quiz request: message matches "quiz me" (rule quiz_request)`,
				Metadata: map[string]any{"source": "trigger", "rule": "quiz_request", "rule_index": 3, "pattern": "quiz me"},
				Fallback: "tutor",
			},
		},
		{
			name:  "automatic feedback",
			state: map[string]any{"quiz_complete": true, "last_routed_to": "quiz"},
			want: troupe.RoutingDecision{
				Target: "feedback",
				Reason: `After quiz completion: state has last_routed_to="quiz", quiz_complete=true (rule after_quiz)`,
				Metadata: map[string]any{
					"source": "trigger", "rule": "after_quiz", "rule_index": 0,
					"when": []string{"last_routed_to", "quiz_complete"},
				},
				Fallback: "tutor",
			},
		},
		{
			name:    "resume while paused",
			message: "Resume",
			state:   map[string]any{"quiz_paused": true},
			want: troupe.RoutingDecision{
				Target: "quiz",
				Reason: `Resume paused quiz: message matches "resume" and state has quiz_paused=true (rule resume_quiz)`,
				Metadata: map[string]any{
					"source": "trigger", "rule": "resume_quiz", "rule_index": 2, "pattern": "resume",
					"when": []string{"quiz_paused"},
				},
				Fallback: "tutor",
			},
		},
		{
			name:    "unclear",
			message: "hmm",
			want: troupe.RoutingDecision{
				Target:   "tutor",
				Reason:   "no rule matched; Unclear → tutor default fallback",
				Metadata: map[string]any{"source": "default"},
				Fallback: "diagnostic",
			},
		},
		{
			name:      "quiz agent down: skipped, and unclear goes to the tutor",
			message:   "quiz me",
			available: []string{"diagnostic", "tutor", "feedback", "pathplanner"},
			want: troupe.RoutingDecision{
				Target:   "tutor",
				Reason:   "no rule matched; Unclear → tutor default fallback; skipped unavailable quiz",
				Metadata: map[string]any{"source": "default", "skipped": []string{"quiz"}},
				Fallback: "diagnostic",
			},
		},
		{
			name:      "diagnostic down: no fallback for the tutor",
			message:   "explain",
			available: []string{"tutor"},
			want: troupe.RoutingDecision{
				Target:   "tutor",
				Reason:   `Question about content: message matches "explain" (rule content_question)`,
				Metadata: map[string]any{"source": "trigger", "rule": "content_question", "rule_index": 4, "pattern": "explain"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			available := tt.available
			if available == nil {
				available = tutor.Agents()
			}
			got, err := tutor.Coordinator().Route(context.Background(), troupe.RouteInput{Query: tt.message, State: tt.state, Available: available}, troupe.Context{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Route (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCoordinatorValidates(t *testing.T) {
	reg := troupe.NewRegistry()
	for _, name := range tutor.Agents() {
		reg.MustAdd(name, troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) { return nil, nil }))
	}
	if err := tutor.Coordinator().Validate(reg); err != nil {
		t.Errorf("Coordinator().Validate(tutor agents) = %v", err)
	}
}
