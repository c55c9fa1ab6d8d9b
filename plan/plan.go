package plan

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/troupehq/troupe"
)

// Plan implements troupe.Planner. It takes the request's Criteria, or derives them from its
// ParsedQuery with CriteriaFromParsed when Criteria is nil; selects agents with Select; orders
// the selected ones, in rule order, with ExecutionOrderFor the main intent; and returns one
// task per agent, whose ID and Agent are the agent's name, Reason its selection reasons,
// Priority its score and DependsOn its direct dependencies in rule order. Every stage's
// MaxConcurrency is Rules.MaxConcurrency. The plan shares no memory with req.
func (r *Rules) Plan(req *troupe.Request, agents troupe.Catalog) (*troupe.Plan, error) {
	if req == nil {
		return nil, fmt.Errorf("plan: nil request")
	}
	var crit *troupe.SelectionCriteria
	if req.Criteria != nil {
		crit = cloneCriteria(req.Criteria)
	} else {
		var err error
		if crit, err = CriteriaFromParsed(req.ParsedQuery); err != nil {
			return nil, err
		}
	}
	cands, err := r.selectAgents(crit, agents)
	if err != nil {
		return nil, err
	}

	p := &troupe.Plan{Criteria: crit}
	var chosen []*candidate
	var names []string
	for _, cd := range cands {
		if cd.selected {
			chosen = append(chosen, cd)
			names = append(names, cd.Agent)
			p.Selected = append(p.Selected, cd.Selection)
		} else {
			p.Skipped = append(p.Skipped, cd.Selection)
		}
	}
	p.Selected, p.Skipped = byScore(p.Selected), byScore(p.Skipped)

	seq := false
	if rule := r.Rule(crit.IntentType); rule != nil {
		seq = rule.SequenceRequired
	}
	s, err := r.schedule(names, seq, agents)
	if err != nil {
		return nil, err
	}
	for n, st := range s.stages {
		stage := troupe.PlanStage{GroupID: GroupID(n), MaxConcurrency: r.maxConcurrency()}
		for _, i := range st {
			cd := chosen[i]
			t := troupe.Task{
				ID:       cd.Agent,
				Agent:    cd.Agent,
				Reason:   strings.Join(cd.Reasons, "; "),
				Priority: cd.Score,
			}
			for _, j := range s.deps[i] {
				t.DependsOn = append(t.DependsOn, names[j])
			}
			stage.Tasks = append(stage.Tasks, t)
		}
		stage.SharedResources = SharedResources(stage.Tasks, agents)
		p.Stages = append(p.Stages, stage)
	}
	return p, nil
}

// GroupID names the stage at index i (from 0) of a plan as Plan does: "group_1" for the first.
func GroupID(i int) string { return "group_" + strconv.Itoa(i+1) }

// SharedResources returns seed 000's shared_resources of a group of tasks: the session state
// keys that two or more of the tasks' agents declare they read, sorted, or nil. Tasks whose
// agent the catalog does not know (a routed task's, before routing), or knows with a nil spec,
// declare nothing.
func SharedResources(tasks []troupe.Task, agents troupe.Catalog) []string {
	if len(tasks) < 2 || agents == nil {
		return nil
	}
	readers := map[string]int{}
	for _, t := range tasks {
		if spec, ok := agents.Spec(t.Agent); ok && spec != nil && t.Agent != "" {
			for _, k := range dedupe(spec.Reads) {
				readers[k]++
			}
		}
	}
	var shared []string
	for k, n := range readers {
		if n >= 2 {
			shared = append(shared, k)
		}
	}
	slices.Sort(shared)
	return shared
}
