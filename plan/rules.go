package plan

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/troupehq/troupe"
)

// Sentinel errors of planning; match them with errors.Is.
var (
	// ErrNoRule: the criteria name an intent the rules have no IntentRule for.
	ErrNoRule = errors.New("plan: no routing rule")
	// ErrNoSelection: every candidate agent was excluded, unavailable or below the
	// confidence threshold.
	ErrNoSelection = errors.New("plan: no agent selected")
	// ErrCycle: the dependencies among the selected agents form a cycle.
	ErrCycle = errors.New("plan: dependency cycle")
)

// Keys of Rules.FlagAgents: seed 000's AgentSelectionCriteria booleans.
const (
	FlagRequiresML              = "requires_ml"
	FlagRequiresCausalInference = "requires_causal_inference"
	FlagRequiresExperimentation = "requires_experimentation"
)

// EntityKPIs is the criteria entity whose values are looked up in Rules.KPIMap.
const EntityKPIs = "kpis"

// DefaultMaxConcurrency is seed 000's ParallelExecutionGroup.max_concurrency default, used
// when Rules.MaxConcurrency is zero.
const DefaultMaxConcurrency = 10

// Priority scores, in [0, 1], that Select gives an agent for each reason it is a candidate.
// An agent with several reasons gets the highest.
const (
	ScorePrimary          = 1.0  // primary agent of the main intent
	ScorePreferred        = 0.95 // named in the criteria's preferred_agents
	ScoreKPI              = 0.85 // mapped from a KPI in the criteria's "kpis" entity
	ScoreFlag             = 0.85 // mapped from a requires_* flag that is true
	ScoreSecondary        = 0.8  // primary agent of a secondary intent
	ScoreSynthesizer      = 0.8  // synthesizer with at least two other agents to synthesize
	ScoreOptionalSimple   = 0.4  // optional agent of the main intent, simple query
	ScoreOptionalModerate = 0.6  // optional agent of the main intent, moderate query
	ScoreOptionalComplex  = 0.75 // optional agent of the main intent, complex query
)

// IntentRule is seed 000's IntentRoutingRule: the agents an intent routes to and whether they
// must run one after another. The zero value routes nowhere.
type IntentRule struct {
	Intent           string   `json:"intent_type"`
	Primary          []string `json:"primary_agents"`
	Optional         []string `json:"optional_agents,omitempty"`
	SequenceRequired bool     `json:"sequence_required"`
}

// Rules is seed 000's AgentSelector as data: intent routing rules, the KPI routing map, the
// agents each requires_* flag calls for, and the parallel execution contracts. It implements
// troupe.Planner; see the package documentation for how a plan is made from it.
//
// The zero value is usable and plans only preferred agents. Rules is safe for concurrent use
// as long as nobody modifies it; call Validate once after building it.
type Rules struct {
	// Intents are the routing rules, one per intent; earlier rules win over later duplicates.
	Intents []IntentRule `json:"intents"`
	// KPIMap maps a KPI name to the agents that analyse it (seed 000's KPI_ROUTING_MAP).
	KPIMap map[string][]string `json:"kpi_map,omitempty"`
	// FlagAgents maps FlagRequiresML, FlagRequiresCausalInference and
	// FlagRequiresExperimentation to the agents that flag calls for.
	FlagAgents map[string][]string `json:"flag_agents,omitempty"`
	// ExclusivePairs never share a stage (seed 000's EXCLUSIVE_PAIRS), and when nothing else
	// orders a pair its first agent runs first ("SHAP before deploy"); so one pair may not be
	// listed in both orders, nor may pairs order agents round a cycle ([a b], [b c], [c a]).
	ExclusivePairs [][2]string `json:"exclusive_pairs,omitempty"`
	// CompatiblePairs may share a stage even under sequence_required (seed 000's
	// PARALLEL_COMPATIBLE); pairs are unordered.
	CompatiblePairs [][2]string `json:"compatible_pairs,omitempty"`
	// Synthesizers combine other agents' results: they run after every other selected agent
	// and are boosted when there are at least two results to combine.
	Synthesizers []string `json:"synthesizers,omitempty"`
	// MaxConcurrency is every stage's concurrency cap; 0 means DefaultMaxConcurrency.
	MaxConcurrency int `json:"max_concurrency,omitempty"`
}

var _ troupe.Planner = (*Rules)(nil)

// Rule returns the routing rule of intent, or nil when there is none.
func (r *Rules) Rule(intent string) *IntentRule {
	for i := range r.Intents {
		if r.Intents[i].Intent == intent {
			return &r.Intents[i]
		}
	}
	return nil
}

func (r *Rules) maxConcurrency() int {
	if r.MaxConcurrency <= 0 {
		return DefaultMaxConcurrency
	}
	return r.MaxConcurrency
}

// Validate checks the rules' structure and, when c is non-nil, that every agent they name is
// in c. It reports every problem as a troupe.ValidationErrors whose fields are paths such as
// "intents[causal].optional_agents[2]", naming an intent rule by its index instead
// ("intents[1].primary_agents") when its intent is empty or has an earlier rule; unknown
// agents match troupe.ErrUnknownAgent.
func (r *Rules) Validate(c troupe.Catalog) error {
	var es troupe.ValidationErrors
	bad := func(field, problem string) {
		es = append(es, &troupe.ValidationError{Object: "rules", Field: field, Problem: problem})
	}
	agent := func(field, name string) {
		switch {
		case name == "":
			bad(field, "empty agent name")
		case c != nil && !c.Has(name):
			es = append(es, &troupe.ValidationError{Object: "rules", Field: field,
				Problem: fmt.Sprintf("unknown agent %q", name), Err: troupe.ErrUnknownAgent})
		}
	}

	seen := map[string]bool{}
	for i, rule := range r.Intents {
		path := fmt.Sprintf("intents[%d]", i)
		switch {
		case rule.Intent == "":
			bad(path+".intent_type", "required")
		case seen[rule.Intent]:
			// Named by its index: by its intent, it would be the first rule of the intent.
			bad(path+".intent_type", "duplicate intent")
		default:
			path = "intents[" + rule.Intent + "]"
			seen[rule.Intent] = true
		}
		if len(rule.Primary) == 0 {
			bad(path+".primary_agents", "required")
		}
		inRule := map[string]bool{}
		check := func(field string, names []string) {
			for j, name := range names {
				f := fmt.Sprintf("%s.%s[%d]", path, field, j)
				agent(f, name)
				if name != "" && inRule[name] {
					bad(f, fmt.Sprintf("agent %q listed twice in the rule", name))
				}
				inRule[name] = true
			}
		}
		check("primary_agents", rule.Primary)
		check("optional_agents", rule.Optional)
	}

	for _, kpi := range sortedKeys(r.KPIMap) {
		path := "kpi_map[" + kpi + "]"
		if kpi == "" {
			bad(path, "empty KPI name")
		}
		for j, name := range r.KPIMap[kpi] {
			agent(fmt.Sprintf("%s[%d]", path, j), name)
		}
	}

	for _, flag := range sortedKeys(r.FlagAgents) {
		path := "flag_agents[" + flag + "]"
		switch flag {
		case FlagRequiresML, FlagRequiresCausalInference, FlagRequiresExperimentation:
		default:
			bad(path, fmt.Sprintf("%q is not one of %s, %s, %s", flag,
				FlagRequiresML, FlagRequiresCausalInference, FlagRequiresExperimentation))
		}
		for j, name := range r.FlagAgents[flag] {
			agent(fmt.Sprintf("%s[%d]", path, j), name)
		}
	}

	exclusive := newPairSet(r.ExclusivePairs)
	pairs := func(field string, ps [][2]string, other *pairSet, otherField string) {
		var ordered []int // the exclusive pairs so far that order their agents
		for i, p := range ps {
			path := fmt.Sprintf("%s[%d]", field, i)
			agent(path+"[0]", p[0])
			agent(path+"[1]", p[1])
			// An exclusive pair is ordered, its first agent running first: the two agents
			// listed the other way round as well would each run first, and so would every
			// agent of pairs that order agents round a cycle.
			reversed := -1
			var cycle []int
			if other == nil && p[0] != p[1] {
				reversed = slices.Index(ps[:i], [2]string{p[1], p[0]})
				if reversed < 0 {
					cycle = orderPath(ps, ordered, p[1], p[0])
				}
			}
			switch {
			case p[0] == p[1] && p[0] != "":
				bad(path, fmt.Sprintf("pairs agent %q with itself", p[0]))
			case other != nil && other.has(p[0], p[1]):
				bad(path, "also listed in "+otherField)
			case reversed >= 0:
				bad(path, fmt.Sprintf("reverses %s[%d]: %q and %q cannot each run first", field, reversed, p[0], p[1]))
			case cycle != nil:
				with := make([]string, len(cycle))
				agents := []string{strconv.Quote(p[0])}
				for k, j := range cycle {
					with[k] = fmt.Sprintf("%s[%d]", field, j)
					agents = append(agents, strconv.Quote(ps[j][0]))
				}
				agents = append(agents, strconv.Quote(p[0]))
				bad(path, fmt.Sprintf("closes a cycle with %s: %s, so none of them can run first",
					strings.Join(with[:len(with)-1], ", ")+" and "+with[len(with)-1], strings.Join(agents, " before ")))
			default:
				ordered = append(ordered, i)
			}
		}
	}
	pairs("exclusive_pairs", r.ExclusivePairs, nil, "")
	pairs("compatible_pairs", r.CompatiblePairs, &exclusive, "exclusive_pairs")

	for i, name := range r.Synthesizers {
		agent(fmt.Sprintf("synthesizers[%d]", i), name)
	}
	if r.MaxConcurrency < 0 {
		bad("max_concurrency", "must not be negative")
	}
	if len(es) == 0 {
		return nil
	}
	return es
}

// orderPath returns the shortest chain of the pairs ps[ordered] that orders from before to,
// each pair's first agent before its second, as indices into ps in the chain's order; or nil
// when there is none.
func orderPath(ps [][2]string, ordered []int, from, to string) []int {
	via := map[string]int{from: -1} // agent → the pair that reached it
	queue := []string{from}
	for len(queue) > 0 {
		a := queue[0]
		queue = queue[1:]
		for _, j := range ordered {
			b := ps[j][1]
			if _, seen := via[b]; ps[j][0] != a || seen {
				continue
			}
			via[b] = j
			if b == to {
				var chain []int
				for at := to; at != from; at = ps[via[at]][0] {
					chain = append(chain, via[at])
				}
				slices.Reverse(chain)
				return chain
			}
			queue = append(queue, b)
		}
	}
	return nil
}

// pairSet holds unordered agent pairs.
type pairSet struct{ m map[[2]string]bool }

func newPairSet(ps [][2]string) pairSet {
	s := pairSet{m: make(map[[2]string]bool, len(ps))}
	for _, p := range ps {
		s.m[orderedPair(p[0], p[1])] = true
	}
	return s
}

func (s pairSet) has(a, b string) bool { return s.m[orderedPair(a, b)] }

func orderedPair(a, b string) [2]string {
	if strings.Compare(a, b) > 0 {
		a, b = b, a
	}
	return [2]string{a, b}
}
