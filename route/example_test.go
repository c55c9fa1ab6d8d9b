package route_test

import (
	"context"
	"fmt"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/route"
)

func ExampleRules_Route() {
	rules := &route.Rules{
		Triggers: []route.Trigger{
			{Name: "quiz_request", Patterns: []string{"quiz me", "test my knowledge"}, Target: "quiz", Reason: "Quiz request"},
			{Name: "content_question", Patterns: []string{"explain", "why", "how does"}, Target: "tutor"},
		},
		Fallbacks:     map[string]string{"quiz": "tutor"},
		Default:       "tutor",
		DefaultReason: "unclear messages go to the tutor",
	}
	available := []string{"tutor", "quiz"}
	for _, msg := range []string{"Anyway, quiz me!", "Why?", "somewhy"} {
		d, err := rules.Route(context.Background(), troupe.RouteInput{Query: msg, Available: available}, troupe.NewContext("trace-1", ""))
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Printf("%-16q → %s (fallback %q): %s\n", msg, d.Target, d.Fallback, d.Reason)
	}
	// Output:
	// "Anyway, quiz me!" → quiz (fallback "tutor"): Quiz request: message matches "quiz me" (rule quiz_request)
	// "Why?"           → tutor (fallback ""): message matches "why" (rule content_question)
	// "somewhy"        → tutor (fallback ""): no rule matched; unclear messages go to the tutor
}

func ExamplePlanner() {
	rules := &route.Rules{Default: "tutor"}
	plan, _ := route.Planner(rules).Plan(&troupe.Request{Query: "hello"}, nil)
	fmt.Print(plan)
	// Output:
	// stage 1:
	//   (routed at run time)     priority 1.00  routed at run time by route.Rules(0 triggers, 0 intents, 0 KPIs, default tutor)
}
