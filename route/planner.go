package route

import (
	"errors"
	"fmt"

	"github.com/troupehq/troupe"
)

// TaskID is the ID of the one task a Planner plans.
const TaskID = "route"

// Planner returns a troupe.Planner that leaves the choice of agent to r: its plan is one stage
// holding one task with ID TaskID and no Agent, so the engine asks its router at ROUTE time,
// when the message, parsed query and session state are at hand. This is how a message router
// such as seed 003's coordinator runs in the engine; give the engine r as its router too, the
// planner only names it in the task's reason.
//
// The planner ignores the request and catalog, so the plan is the same for every request. It
// is safe for concurrent use. A nil r makes every Plan call fail.
func Planner(r troupe.Router) troupe.Planner {
	return troupe.PlannerFunc(func(*troupe.Request, troupe.Catalog) (*troupe.Plan, error) {
		if r == nil {
			return nil, errors.New("route: planner has no router")
		}
		return &troupe.Plan{Stages: []troupe.PlanStage{{
			GroupID:        "group_1",
			Tasks:          []troupe.Task{{ID: TaskID, Reason: "routed at run time by " + describe(r), Priority: 1}},
			MaxConcurrency: 1,
		}}}, nil
	})
}

func describe(r troupe.Router) string {
	if s, ok := r.(fmt.Stringer); ok {
		return s.String()
	}
	return fmt.Sprintf("%T", r)
}
