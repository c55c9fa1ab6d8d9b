package route_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/examples/tutor"
	"github.com/troupehq/troupe/route"
)

func TestPlanner(t *testing.T) {
	tests := []struct {
		name   string
		router troupe.Router
		reason string
	}{
		{"rules", tutor.Coordinator(), "routed at run time by route.Rules(6 triggers, 0 intents, 0 KPIs, default tutor)"},
		{"router func", troupe.RouterFunc(func(context.Context, troupe.RouteInput, troupe.Context) (troupe.RoutingDecision, error) {
			return troupe.RoutingDecision{}, nil
		}), "routed at run time by troupe.RouterFunc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := &troupe.Request{Query: "teach me fractions", ParsedQuery: map[string]any{"intent": "causal"}}
			got, err := route.Planner(tt.router).Plan(req, registry(t, tutor.Agents()...))
			if err != nil {
				t.Fatal(err)
			}
			want := &troupe.Plan{Stages: []troupe.PlanStage{{
				GroupID:        "group_1",
				Tasks:          []troupe.Task{{ID: "route", Reason: tt.reason, Priority: 1}},
				MaxConcurrency: 1,
			}}}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Plan (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([][]string{{"?route"}}, got.ExecutionPlan()); diff != "" {
				t.Errorf("ExecutionPlan (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPlannerThenRoute follows the planned task to ROUTE time: with no agent in the task,
// the router decides on the message.
func TestPlannerThenRoute(t *testing.T) {
	rules := tutor.Coordinator()
	plan, err := route.Planner(rules).Plan(&troupe.Request{Query: "I want to learn fractions"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	task := plan.Stages[0].Tasks[0]
	d, err := rules.Route(context.Background(), troupe.RouteInput{Task: task, Query: "I want to learn fractions", Available: tutor.Agents()}, troupe.NewContext("t", ""))
	if err != nil {
		t.Fatal(err)
	}
	if d.Target != "diagnostic" || d.Metadata["rule"] != "new_topic" {
		t.Errorf("Route(planned task) = %+v, want diagnostic by rule new_topic", d)
	}
}

func TestPlannerNilRouter(t *testing.T) {
	_, err := route.Planner(nil).Plan(&troupe.Request{}, nil)
	if err == nil || !strings.HasPrefix(err.Error(), "route: ") {
		t.Errorf("Planner(nil).Plan error = %v, want a route: error", err)
	}
}
