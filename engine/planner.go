package engine

import (
	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/plan"
)

// defaultPlanner plans every registered agent; stages follow from declared dependencies and
// state keys, as plan.Rules orders them.
type defaultPlanner struct{}

func (defaultPlanner) Plan(req *troupe.Request, agents troupe.Catalog) (*troupe.Plan, error) {
	rules := &plan.Rules{Intents: []plan.IntentRule{{Intent: "all", Primary: agents.Names()}}}
	r := *req
	r.Criteria = &troupe.SelectionCriteria{IntentType: "all"}
	return rules.Plan(&r, agents)
}
