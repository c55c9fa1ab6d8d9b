package plan_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/examples/e2i"
	"github.com/troupehq/troupe/plan"
)

// scenario is a random, acyclic planning problem over a subset of seed 000's agents. Every
// dependency it declares points forward in order, which is also the rule order.
type scenario struct {
	order      []string // the subset, shuffled, synthesizers last
	synth      map[string]bool
	writes     map[string][]string
	reads      map[string][]string
	after      map[string][]string
	exclusive  [][2]string
	compatible [][2]string
	seq        bool
	maxConc    int
}

func randomScenario(rng *rand.Rand) scenario {
	all := e2i.Agents()
	var s scenario
	for _, a := range all {
		if rng.IntN(2) == 0 {
			s.order = append(s.order, a)
		}
	}
	if len(s.order) == 0 {
		s.order = append(s.order, all[rng.IntN(len(all))])
	}
	rng.Shuffle(len(s.order), func(i, j int) { s.order[i], s.order[j] = s.order[j], s.order[i] })
	s.synth = map[string]bool{}
	for range rng.IntN(3) {
		s.synth[s.order[rng.IntN(len(s.order))]] = true
	}
	slices.SortStableFunc(s.order, func(a, b string) int {
		switch {
		case s.synth[a] == s.synth[b]:
			return 0
		case s.synth[a]:
			return 1
		}
		return -1
	})

	keys := []string{"k0", "k1", "k2", "k3", "k4", "k5"}
	s.writes, s.reads, s.after = map[string][]string{}, map[string][]string{}, map[string][]string{}
	for _, a := range s.order {
		for range rng.IntN(3) {
			s.writes[a] = append(s.writes[a], keys[rng.IntN(len(keys))])
		}
	}
	for i, a := range s.order {
		// Only keys every writer of which comes earlier, so that state edges point forward.
		var readable []string
		for _, k := range keys {
			ok := true
			for j, w := range s.order {
				if j >= i && slices.Contains(s.writes[w], k) {
					ok = false
				}
			}
			if ok {
				readable = append(readable, k)
			}
		}
		for range rng.IntN(3) {
			if len(readable) > 0 {
				s.reads[a] = append(s.reads[a], readable[rng.IntN(len(readable))])
			}
		}
		for range rng.IntN(3) {
			if d := all[rng.IntN(len(all))]; rng.IntN(4) == 0 && !slices.Contains(s.order, d) {
				s.after[a] = append(s.after[a], d) // not planned, so ignored
			} else if i > 0 {
				s.after[a] = append(s.after[a], s.order[rng.IntN(i)])
			}
		}
	}
	if len(s.order) > 1 {
		pair := func() [2]string {
			i := rng.IntN(len(s.order))
			j := (i + 1 + rng.IntN(len(s.order)-1)) % len(s.order)
			return [2]string{s.order[i], s.order[j]}
		}
		for range rng.IntN(7) {
			s.exclusive = append(s.exclusive, pair())
		}
		for range rng.IntN(5) {
			s.compatible = append(s.compatible, pair())
		}
	}
	s.seq = rng.IntN(2) == 0
	s.maxConc = rng.IntN(4)
	return s
}

func (s scenario) rules() *plan.Rules {
	r := &plan.Rules{
		Intents:         []plan.IntentRule{{Intent: "p", Primary: s.order, SequenceRequired: s.seq}},
		ExclusivePairs:  s.exclusive,
		CompatiblePairs: s.compatible,
		MaxConcurrency:  s.maxConc,
	}
	for _, a := range s.order {
		if s.synth[a] {
			r.Synthesizers = append(r.Synthesizers, a)
		}
	}
	return r
}

func (s scenario) registry(t testing.TB) *troupe.Registry {
	opts := map[string][]troupe.Option{}
	for _, a := range s.order {
		opts[a] = []troupe.Option{troupe.Writes(s.writes[a]...), troupe.Reads(s.reads[a]...), troupe.After(s.after[a]...)}
	}
	return registry(t, opts)
}

func has(pairs [][2]string, a, b string) bool {
	return slices.Contains(pairs, [2]string{a, b}) || slices.Contains(pairs, [2]string{b, a})
}

// wantDeps computes the package documentation's dependency rules independently: the direct
// dependencies of a, in rule order.
func (s scenario) wantDeps(a string) []string {
	g := s.wantGraph()
	var deps []string
	for _, b := range s.order {
		if g[[2]string{a, b}] {
			deps = append(deps, b)
		}
	}
	return deps
}

// wantGraph holds [a, b] when a runs after b.
func (s scenario) wantGraph() map[[2]string]bool {
	g := map[[2]string]bool{}
	for _, a := range s.order {
		for _, b := range s.order {
			if a == b {
				continue
			}
			if slices.Contains(s.after[a], b) ||
				slices.ContainsFunc(s.reads[a], func(k string) bool { return slices.Contains(s.writes[b], k) }) ||
				s.synth[a] && !s.synth[b] && !has(s.compatible, a, b) {
				g[[2]string{a, b}] = true
			}
		}
	}
	// reaches: a runs after b, through any chain.
	var reaches func(a, b string, seen map[string]bool) bool
	reaches = func(a, b string, seen map[string]bool) bool {
		for _, c := range s.order {
			if g[[2]string{a, c}] && !seen[c] {
				seen[c] = true
				if c == b || reaches(c, b, seen) {
					return true
				}
			}
		}
		return false
	}
	for _, p := range s.exclusive {
		if p[0] != p[1] && !reaches(p[0], p[1], map[string]bool{}) {
			g[[2]string{p[1], p[0]}] = true
		}
	}
	if s.seq {
		// Rule order made to agree with the edges so far: the first agent whose
		// dependencies are all placed goes next.
		var ranked []string
		for len(ranked) < len(s.order) {
			for _, a := range s.order {
				if slices.Contains(ranked, a) {
					continue
				}
				if !slices.ContainsFunc(s.order, func(b string) bool { return g[[2]string{a, b}] && !slices.Contains(ranked, b) }) {
					ranked = append(ranked, a)
					break
				}
			}
		}
		for i, a := range ranked {
			for _, b := range ranked[:i] {
				if !has(s.compatible, a, b) && !(s.synth[b] && !s.synth[a]) {
					g[[2]string{a, b}] = true
				}
			}
		}
	}
	return g
}

func (s scenario) conflict(a, b string) bool {
	return has(s.exclusive, a, b) ||
		slices.ContainsFunc(s.writes[a], func(k string) bool { return slices.Contains(s.writes[b], k) })
}

// Seed 000, testing requirement 3: parallelization rules followed and dependencies respected,
// over generated agent sets, exclusive pairs and state keys.
func TestSeed000ParallelizationAndDependencies(t *testing.T) {
	rng := rand.New(rand.NewPCG(0x000, 0x7831460252a8ab86))
	for n := range 500 {
		s := randomScenario(rng)
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			rules, reg := s.rules(), s.registry(t)
			p, err := rules.Plan(&troupe.Request{Criteria: &troupe.SelectionCriteria{IntentType: "p"}}, reg)
			if err != nil {
				t.Fatalf("scenario %+v: %v", s, err)
			}
			checkPlan(t, rules, reg, p)

			stageOf := map[string]int{}
			for i, st := range p.Stages {
				if want := max(s.maxConc, 0); st.MaxConcurrency != want && !(want == 0 && st.MaxConcurrency == plan.DefaultMaxConcurrency) {
					t.Errorf("stage %d: max concurrency %d for %d", i, st.MaxConcurrency, s.maxConc)
				}
				for _, task := range st.Tasks {
					stageOf[task.Agent] = i
				}
			}
			for i, st := range p.Stages {
				for x, task := range st.Tasks {
					if diff := cmp.Diff(s.wantDeps(task.Agent), task.DependsOn); diff != "" {
						t.Errorf("%s depends on (-want +got):\n%s", task.Agent, diff)
					}
					for _, other := range st.Tasks[x+1:] {
						if s.conflict(task.Agent, other.Agent) {
							t.Errorf("stage %d holds %s and %s, which conflict", i, task.Agent, other.Agent)
						}
					}
					// List scheduling: every stage between the dependencies and this one
					// holds something this agent conflicts with.
					lo := 0
					for _, d := range task.DependsOn {
						lo = max(lo, stageOf[d]+1)
					}
					if i < lo {
						t.Errorf("%s in stage %d before its dependencies (stage %d)", task.Agent, i, lo)
					}
					for st := lo; st < i; st++ {
						if !slices.ContainsFunc(p.Stages[st].Tasks, func(o troupe.Task) bool { return s.conflict(task.Agent, o.Agent) }) {
							t.Errorf("%s in stage %d could have run in stage %d", task.Agent, i, st)
						}
					}
				}
				if !slices.IsSortedFunc(st.Tasks, func(a, b troupe.Task) int {
					return slices.Index(s.order, a.Agent) - slices.Index(s.order, b.Agent)
				}) {
					t.Errorf("stage %d is not in rule order", i)
				}
			}

			order, err := rules.ExecutionOrderFor("p", s.order, reg)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(p.ExecutionPlan(), order); diff != "" {
				t.Errorf("ExecutionOrderFor differs from the plan (-plan +order):\n%s", diff)
			}
		})
	}
}

// randomAfter draws some of all in a random order, each running after at most one of them
// (itself included): after as a map, and as the options that declare it.
func randomAfter(rng *rand.Rand, all []string) ([]string, map[string][]string, map[string][]troupe.Option) {
	agents := slices.Clone(all[:1+rng.IntN(len(all))])
	rng.Shuffle(len(agents), func(i, j int) { agents[i], agents[j] = agents[j], agents[i] })
	after := map[string][]string{}
	opts := map[string][]troupe.Option{}
	for _, a := range agents {
		for range rng.IntN(2) {
			d := agents[rng.IntN(len(agents))]
			after[a] = append(after[a], d)
			opts[a] = append(opts[a], troupe.After(d))
		}
	}
	return agents, after, opts
}

func TestExecutionOrderCycles(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	all := e2i.Agents()
	for n := range 300 {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			agents, after, opts := randomAfter(rng, all)
			stages, err := (&plan.Rules{}).ExecutionOrder(agents, registry(t, opts))
			if err != nil {
				if !errors.Is(err, plan.ErrCycle) {
					t.Fatalf("error %v, want ErrCycle", err)
				}
				if !hasCycle(agents, after) {
					t.Fatalf("%v for acyclic %v", err, after)
				}
				return
			}
			stageOf := map[string]int{}
			for i, st := range stages {
				for _, a := range st {
					stageOf[a] = i
				}
			}
			if len(stageOf) != len(agents) {
				t.Errorf("%d agents planned of %d", len(stageOf), len(agents))
			}
			for a, ds := range after {
				for _, d := range ds {
					if d != a && stageOf[d] >= stageOf[a] {
						t.Errorf("%s (stage %d) runs after %s (stage %d)", a, stageOf[a], d, stageOf[d])
					}
				}
			}
		})
	}
}

// TestExecutionOrderCyclesWithTies: agents that each read what the other writes never make a
// cycle of their own; they run in the order After gives them, when it gives one.
func TestExecutionOrderCyclesWithTies(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	all := e2i.Agents()
	for n := range 300 {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			agents, after, opts := randomAfter(rng, all)
			var ties [][2]string
			for k := range rng.IntN(2 * len(agents)) {
				a, b := agents[rng.IntN(len(agents))], agents[rng.IntN(len(agents))]
				if a == b {
					continue
				}
				ka, kb := fmt.Sprintf("t%d%s", k, a), fmt.Sprintf("t%d%s", k, b)
				opts[a] = append(opts[a], troupe.Writes(ka), troupe.Reads(kb))
				opts[b] = append(opts[b], troupe.Writes(kb), troupe.Reads(ka))
				ties = append(ties, [2]string{a, b})
			}
			stages, err := (&plan.Rules{}).ExecutionOrder(agents, registry(t, opts))
			if err != nil {
				if !errors.Is(err, plan.ErrCycle) {
					t.Fatalf("error %v, want ErrCycle", err)
				}
				if !hasCycle(agents, after) {
					t.Fatalf("%v for acyclic %v with ties %v", err, after, ties)
				}
				return
			}
			if hasCycle(agents, after) {
				t.Fatalf("no error for cyclic %v", after)
			}
			stageOf := map[string]int{}
			for i, st := range stages {
				for _, a := range st {
					stageOf[a] = i
				}
			}
			for _, p := range ties {
				a, b := p[0], p[1]
				if stageOf[a] == stageOf[b] {
					t.Errorf("%s and %s, which read what each other writes, share stage %d", a, b, stageOf[a])
				}
				if reachesAfter(after, a, b) && stageOf[a] < stageOf[b] || reachesAfter(after, b, a) && stageOf[b] < stageOf[a] {
					t.Errorf("%s and %s run against After %v: stages %v", a, b, after, stages)
				}
			}
		})
	}
}

// reachesAfter reports whether a runs after b through a chain of After.
func reachesAfter(after map[string][]string, a, b string) bool {
	seen := map[string]bool{}
	stack := []string{a}
	for len(stack) > 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, d := range after[x] {
			if d == b {
				return true
			}
			if !seen[d] {
				seen[d] = true
				stack = append(stack, d)
			}
		}
	}
	return false
}

// TestExecutionOrderCyclesUnderSequence: under sequence_required, the cycle an error names is
// made of declared After edges only, never of the order sequence_required adds.
func TestExecutionOrderCyclesUnderSequence(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	all := e2i.Agents()
	for n := range 300 {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			agents, after, opts := randomAfter(rng, all)
			rules := &plan.Rules{Intents: []plan.IntentRule{{Intent: "p", Primary: agents, SequenceRequired: true}}}
			_, err := rules.ExecutionOrderFor("p", agents, registry(t, opts))
			if err == nil {
				if hasCycle(agents, after) {
					t.Fatalf("no error for cyclic %v", after)
				}
				return
			}
			if !errors.Is(err, plan.ErrCycle) {
				t.Fatalf("error %v, want ErrCycle", err)
			}
			msg := strings.TrimPrefix(err.Error(), "plan: dependency cycle: ")
			path := strings.Split(strings.TrimSuffix(msg, " (each runs after the next)"), " -> ")
			for i := range len(path) - 1 {
				if !slices.Contains(after[path[i]], path[i+1]) {
					t.Fatalf("%v: %s does not declare After(%s); declared %v", err, path[i], path[i+1], after)
				}
			}
		})
	}
}

// hasCycle reports whether the After edges among agents form a cycle (self-edges aside).
func hasCycle(agents []string, after map[string][]string) bool {
	const (
		unseen = iota
		active
		done
	)
	color := map[string]int{}
	var visit func(a string) bool
	visit = func(a string) bool {
		color[a] = active
		for _, d := range after[a] {
			if d == a {
				continue
			}
			if color[d] == active || color[d] == unseen && visit(d) {
				return true
			}
		}
		color[a] = done
		return false
	}
	for _, a := range agents {
		if color[a] == unseen && visit(a) {
			return true
		}
	}
	return false
}
