package engine

import (
	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/plan"
)

// defaultPlanner plans every registered agent; stages follow from declared dependencies and
// state keys, as plan.Rules orders them. The request's criteria hold but for their intent:
// its excluded agents are left out, and the answer is held to its confidence threshold.
type defaultPlanner struct{}

func (defaultPlanner) Plan(req *troupe.Request, agents troupe.Catalog) (*troupe.Plan, error) {
	rules := &plan.Rules{Intents: []plan.IntentRule{{Intent: "all", Primary: agents.Names()}}}
	r := *req
	c := troupe.SelectionCriteria{}
	if req.Criteria != nil {
		c = *req.Criteria // its threshold, exclusions and preferences hold; its intent is "all"
	}
	c.IntentType = "all"
	r.Criteria = &c
	return rules.Plan(&r, agents)
}
