package engine

import (
	"maps"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/plan"
)

// defaultPlanner plans every registered agent; stages follow from declared dependencies and
// state keys, as plan.Rules orders them. The request's criteria hold but for their intent:
// its excluded agents are left out, and the answer is held to its confidence threshold. A
// request without criteria has them read from its parsed query, as any planner does
// (plan.CriteriaFromParsed: excluded_agents, confidence_threshold, time_budget_seconds).
type defaultPlanner struct{}

func (defaultPlanner) Plan(req *troupe.Request, agents troupe.Catalog) (*troupe.Plan, error) {
	rules := &plan.Rules{Intents: []plan.IntentRule{{Intent: "all", Primary: agents.Names()}}}
	r := *req
	c := troupe.SelectionCriteria{}
	if req.Criteria != nil {
		c = *req.Criteria // its threshold, exclusions and preferences hold; its intent is "all"
	} else if len(req.ParsedQuery) > 0 {
		parsed := maps.Clone(req.ParsedQuery)
		delete(parsed, "intent_type")
		parsed["intent"] = "all" // whatever it says, this planner plans every agent
		pc, err := plan.CriteriaFromParsed(parsed)
		if err != nil {
			return nil, err
		}
		c = *pc
	}
	c.IntentType = "all"
	r.Criteria = &c
	return rules.Plan(&r, agents)
}
