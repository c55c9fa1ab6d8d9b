package plan

import (
	"fmt"
	"slices"
	"strings"

	"github.com/troupehq/troupe"
)

// ExecutionOrder is seed 000's get_execution_order without an intent: it groups agents into
// stages that run one after another, each a group that may run in parallel. The order of
// agents is the rule order: it breaks every tie. Dependencies come from the catalog (After,
// Reads/Writes) and from Synthesizers, which run after every agent they do not form a
// compatible pair with; exclusive pairs and agents writing the same state key never share a
// stage. Duplicate names are ignored; a nil catalog declares nothing. A dependency cycle fails
// with ErrCycle. The package documentation gives the rules in full.
func (r *Rules) ExecutionOrder(agents []string, c troupe.Catalog) ([][]string, error) {
	return r.ExecutionOrderFor("", agents, c)
}

// ExecutionOrderFor is ExecutionOrder for agents planned for intent: when the intent's rule
// has sequence_required, each agent also runs after every earlier one, unless the two are a
// compatible pair. An empty intent has no rule; any other intent without one fails with
// ErrNoRule.
func (r *Rules) ExecutionOrderFor(intent string, agents []string, c troupe.Catalog) ([][]string, error) {
	seq := false
	if intent != "" {
		rule := r.Rule(intent)
		if rule == nil {
			return nil, fmt.Errorf("%w for intent %q", ErrNoRule, intent)
		}
		seq = rule.SequenceRequired
	}
	names := dedupe(agents)
	s, err := r.schedule(names, seq, c)
	if err != nil {
		return nil, err
	}
	out := make([][]string, len(s.stages))
	for i, st := range s.stages {
		for _, a := range st {
			out[i] = append(out[i], names[a])
		}
	}
	return out, nil
}

// CanExecuteParallel is seed 000's can_execute_parallel: it reports whether agents can all
// run in one parallel group, that is whether ExecutionOrder puts them in at most one stage.
// They cannot when one depends on another (After, or reading a state key another writes), when
// two are an exclusive pair or write the same state key, or when a synthesizer is among agents
// it does not form a compatible pair with.
func (r *Rules) CanExecuteParallel(agents []string, c troupe.Catalog) bool {
	s, err := r.schedule(dedupe(agents), false, c)
	return err == nil && len(s.stages) <= 1
}

func dedupe(names []string) []string {
	out := make([]string, 0, len(names))
	for _, n := range names {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// schedule is the result of ordering agents, by index into the names given, in rule order.
type schedule struct {
	deps   [][]int // direct dependencies of each agent, ascending
	stages [][]int // each stage's agents, ascending
}

// schedule computes the dependencies among names (in rule order) and assigns stages by list
// scheduling: agents are placed in dependency order, ties broken by rule order, each in the
// earliest stage after its dependencies that holds nothing it conflicts with.
func (r *Rules) schedule(names []string, seq bool, c troupe.Catalog) (schedule, error) {
	n := len(names)
	index := make(map[string]int, n)
	for i, a := range names {
		index[a] = i
	}
	specs := make([]*troupe.AgentSpec, n)
	for i, a := range names {
		if c != nil {
			if s, ok := c.Spec(a); ok && s != nil {
				specs[i] = s
			}
		}
		if specs[i] == nil {
			specs[i] = &troupe.AgentSpec{Name: a}
		}
	}
	synth := map[string]bool{}
	for _, a := range r.Synthesizers {
		synth[a] = true
	}
	compatible := newPairSet(r.CompatiblePairs)
	exclusive := newPairSet(r.ExclusivePairs)

	dep := make([][]bool, n) // dep[i][j]: i runs after j
	for i := range dep {
		dep[i] = make([]bool, n)
	}
	on := func(i, j int) {
		if i != j {
			dep[i][j] = true
		}
	}
	for i, s := range specs {
		for _, d := range s.DependsOn {
			if j, ok := index[d]; ok {
				on(i, j)
			}
		}
	}
	// A reader runs after every writer of what it reads. Two agents that each read what the
	// other writes are a tie, ordered below.
	var ties [][2]int
	for i := range n {
		for j := range n {
			if i == j || !intersects(specs[i].Reads, specs[j].Writes) {
				continue
			}
			if intersects(specs[j].Reads, specs[i].Writes) {
				if i < j {
					ties = append(ties, [2]int{i, j})
				}
				continue
			}
			on(i, j)
		}
	}
	// Compatible pairs are declared independent (seed 000's PARALLEL_COMPATIBLE pairs the
	// synthesizer explainer with feedback_learner), so neither inferred rule orders them.
	for i := range n {
		for j := range n {
			if synth[names[i]] && !synth[names[j]] && !compatible.has(names[i], names[j]) {
				on(i, j)
			}
		}
	}
	// A tie has no right answer of its own: it follows the order the rules above and the
	// ties before it already give the two, directly or through others, and only when they
	// give none does the earlier in rule order go first. Rule order regardless would close a
	// false cycle when After or the synthesizer rule puts the later one first. As a tie never
	// closes a cycle, whether there is one does not depend on the order agents are given in.
	for _, t := range ties {
		i, j := t[0], t[1]
		if runsAfter(dep, i, j) {
			on(i, j)
		} else {
			on(j, i)
		}
	}
	// An exclusive pair is ordered: seed 000 lists first the agent that must finish first
	// ("SHAP before deploy"). The pair's order gives way when the rules above say otherwise.
	for _, p := range r.ExclusivePairs {
		i, ok := index[p[0]]
		j, ok2 := index[p[1]]
		if ok && ok2 && i != j && !runsAfter(dep, i, j) {
			on(j, i)
		}
	}
	if seq {
		// A cycle is reported before sequence_required adds its edges: those follow an order
		// that cannot agree with a cycle, and a path through them would blame agents that
		// are not on it.
		if err := findCycle(names, dep); err != nil {
			return schedule{}, err
		}
		// Under sequence_required each agent runs after every earlier one, in rule order made
		// to agree with the rules above.
		rank := ranks(dep)
		for i := range n {
			for j := range n {
				// A synthesizer keeps its place after the others even when rule order lists
				// it first (as an optional agent before KPI-mapped or preferred ones).
				if rank[j] < rank[i] && !compatible.has(names[i], names[j]) && !(synth[names[j]] && !synth[names[i]]) {
					on(i, j)
				}
			}
		}
	}

	s := schedule{deps: make([][]int, n)}
	for i := range n {
		for j := range n {
			if dep[i][j] {
				s.deps[i] = append(s.deps[i], j)
			}
		}
	}

	conflict := func(i, j int) bool {
		return exclusive.has(names[i], names[j]) || intersects(specs[i].Writes, specs[j].Writes)
	}
	stage := make([]int, n)
	placed := make([]bool, n)
	for range n {
		next := -1
		for i := 0; i < n && next < 0; i++ {
			if !placed[i] && allPlaced(s.deps[i], placed) {
				next = i
			}
		}
		if next < 0 {
			return schedule{}, cycleError(names, s.deps, placed)
		}
		st := 0
		for _, j := range s.deps[next] {
			st = max(st, stage[j]+1)
		}
		for ; st < len(s.stages); st++ {
			if !slices.ContainsFunc(s.stages[st], func(j int) bool { return conflict(next, j) }) {
				break
			}
		}
		if st == len(s.stages) {
			s.stages = append(s.stages, nil)
		}
		s.stages[st] = append(s.stages[st], next)
		stage[next], placed[next] = st, true
	}
	for _, st := range s.stages {
		slices.Sort(st)
	}
	return s, nil
}

// runsAfter reports whether i runs after j, directly or through others.
func runsAfter(dep [][]bool, i, j int) bool {
	seen := make([]bool, len(dep))
	stack := []int{i}
	for len(stack) > 0 {
		k := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for d, ok := range dep[k] {
			if !ok || seen[d] {
				continue
			}
			if d == j {
				return true
			}
			seen[d] = true
			stack = append(stack, d)
		}
	}
	return false
}

// findCycle returns ErrCycle naming a cycle of dep (dep[i][j]: i runs after j), or nil when
// there is none.
func findCycle(names []string, dep [][]bool) error {
	n := len(dep)
	done := make([]bool, n)
	for progress := true; progress; {
		progress = false
		for i := range n {
			if !done[i] && ready(dep[i], done) {
				done[i], progress = true, true
			}
		}
	}
	if !slices.Contains(done, false) {
		return nil
	}
	deps := make([][]int, n)
	for i := range n {
		for j := range n {
			if dep[i][j] {
				deps[i] = append(deps[i], j)
			}
		}
	}
	return cycleError(names, deps, done)
}

// ranks orders agents by their dependencies, which form no cycle, taking the earliest in rule
// order whenever several may go next: rank[i] is agent i's place.
func ranks(dep [][]bool) []int {
	n := len(dep)
	rank := make([]int, n)
	done := make([]bool, n)
	for r := range n {
		next := -1
		for i := 0; i < n && next < 0; i++ {
			if !done[i] && ready(dep[i], done) {
				next = i
			}
		}
		if next < 0 { // a cycle; findCycle has ruled it out
			next = slices.Index(done, false)
		}
		rank[next], done[next] = r, true
	}
	return rank
}

// ready reports whether every dependency marked in deps is done.
func ready(deps, done []bool) bool {
	for j, ok := range deps {
		if ok && !done[j] {
			return false
		}
	}
	return true
}

func allPlaced(deps []int, placed []bool) bool {
	for _, j := range deps {
		if !placed[j] {
			return false
		}
	}
	return true
}

// cycleError names a cycle among the unplaced agents, every one of which waits for another
// unplaced agent: it walks from the first, always to its first unplaced dependency.
func cycleError(names []string, deps [][]int, placed []bool) error {
	at := slices.Index(placed, false)
	step := map[int]int{} // agent → position in path
	var path []int
	for {
		if p, seen := step[at]; seen {
			path = append(path[p:], at)
			break
		}
		step[at] = len(path)
		path = append(path, at)
		for _, j := range deps[at] {
			if !placed[j] {
				at = j
				break
			}
		}
	}
	parts := make([]string, len(path))
	for i, a := range path {
		parts[i] = names[a]
	}
	return fmt.Errorf("%w: %s (each runs after the next)", ErrCycle, strings.Join(parts, " -> "))
}

func intersects(a, b []string) bool {
	for _, x := range a {
		if slices.Contains(b, x) {
			return true
		}
	}
	return false
}
