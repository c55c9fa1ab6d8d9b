package plan_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/examples/e2i"
	"github.com/troupehq/troupe/plan"
)

func TestExecutionOrder(t *testing.T) {
	tests := []struct {
		name   string
		intent string
		agents []string
		opts   map[string][]troupe.Option
		want   [][]string
	}{
		{
			name:   "seed 000's get_execution_order docstring",
			intent: "causal",
			agents: []string{"causal_impact", "gap_analyzer", "heterogeneous_optimizer", "explainer"},
			want:   [][]string{{"causal_impact"}, {"gap_analyzer", "heterogeneous_optimizer"}, {"explainer"}},
		},
		{
			name:   "without an intent only the synthesizer waits",
			agents: []string{"causal_impact", "gap_analyzer", "heterogeneous_optimizer", "explainer"},
			want:   [][]string{{"causal_impact", "gap_analyzer", "heterogeneous_optimizer"}, {"explainer"}},
		},
		{
			name:   "exclusive pairs of the Tier 0 pipeline",
			agents: []string{"scope_definer", "data_preparer", "model_trainer", "feature_analyzer", "model_deployer"},
			want:   [][]string{{"scope_definer"}, {"data_preparer"}, {"model_trainer"}, {"feature_analyzer"}, {"model_deployer"}},
		},
		{
			// Seed 000 lists each pair's first agent first: "Model must finish first".
			name:   "exclusive pairs run in the order listed, whatever the order given",
			agents: []string{"model_deployer", "model_trainer", "feature_analyzer", "data_preparer", "scope_definer", "health_score"},
			want:   [][]string{{"scope_definer", "health_score"}, {"data_preparer"}, {"model_trainer"}, {"feature_analyzer"}, {"model_deployer"}},
		},
		{
			name:   "After wins over an exclusive pair's order",
			agents: []string{"data_preparer", "model_trainer"},
			opts:   map[string][]troupe.Option{"data_preparer": {troupe.After("model_trainer")}},
			want:   [][]string{{"model_trainer"}, {"data_preparer"}},
		},
		{
			name:   "given order breaks ties",
			agents: []string{"health_score", "drift_monitor"},
			want:   [][]string{{"health_score", "drift_monitor"}},
		},
		{
			name:   "duplicates are ignored",
			agents: []string{"drift_monitor", "drift_monitor", "explainer"},
			want:   [][]string{{"drift_monitor"}, {"explainer"}},
		},
		{
			name:   "After on a later agent",
			agents: []string{"drift_monitor", "health_score", "gap_analyzer"},
			opts:   map[string][]troupe.Option{"drift_monitor": {troupe.After("gap_analyzer")}},
			want:   [][]string{{"health_score", "gap_analyzer"}, {"drift_monitor"}},
		},
		{
			name:   "a chain of state keys",
			agents: []string{"explainer", "gap_analyzer", "causal_impact", "drift_monitor"},
			opts: map[string][]troupe.Option{
				"causal_impact": {troupe.Writes("effect")},
				"gap_analyzer":  {troupe.Reads("effect"), troupe.Writes("gaps")},
				"drift_monitor": {troupe.Reads("gaps")},
			},
			want: [][]string{{"causal_impact"}, {"gap_analyzer"}, {"drift_monitor"}, {"explainer"}},
		},
		{
			name:   "agents that read what each other writes go in rule order",
			agents: []string{"heterogeneous_optimizer", "gap_analyzer"},
			opts: map[string][]troupe.Option{
				"gap_analyzer":            {troupe.Reads("segments"), troupe.Writes("gaps")},
				"heterogeneous_optimizer": {troupe.Reads("gaps"), troupe.Writes("segments")},
			},
			want: [][]string{{"heterogeneous_optimizer"}, {"gap_analyzer"}},
		},
		{
			name:   "agents that read what each other writes go in rule order, either way round",
			agents: []string{"gap_analyzer", "heterogeneous_optimizer"},
			opts: map[string][]troupe.Option{
				"gap_analyzer":            {troupe.Reads("segments"), troupe.Writes("gaps")},
				"heterogeneous_optimizer": {troupe.Reads("gaps"), troupe.Writes("segments")},
			},
			want: [][]string{{"gap_analyzer"}, {"heterogeneous_optimizer"}},
		},
		{
			// Rule order puts heterogeneous_optimizer before gap_analyzer, which rule order
			// would also put before drift_monitor; but drift_monitor runs before
			// heterogeneous_optimizer, so that second tie gives way.
			name:   "agents that read what each other writes in pairs",
			agents: []string{"heterogeneous_optimizer", "gap_analyzer", "drift_monitor"},
			opts: map[string][]troupe.Option{
				"gap_analyzer":            {troupe.Reads("segments", "health"), troupe.Writes("gaps")},
				"heterogeneous_optimizer": {troupe.Reads("gaps"), troupe.Writes("segments"), troupe.After("drift_monitor")},
				"drift_monitor":           {troupe.Reads("gaps"), troupe.Writes("health")},
			},
			want: [][]string{{"drift_monitor"}, {"heterogeneous_optimizer"}, {"gap_analyzer"}},
		},
		{
			name:   "After orders agents that read what each other writes under a sequence",
			intent: "causal",
			agents: []string{"causal_impact", "gap_analyzer", "heterogeneous_optimizer"},
			opts: map[string][]troupe.Option{
				"gap_analyzer":            {troupe.Reads("segments"), troupe.Writes("gaps"), troupe.After("heterogeneous_optimizer")},
				"heterogeneous_optimizer": {troupe.Reads("gaps"), troupe.Writes("segments")},
			},
			want: [][]string{{"causal_impact"}, {"heterogeneous_optimizer"}, {"gap_analyzer"}},
		},
		{
			name: "empty",
			want: [][]string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := e2i.Rules().ExecutionOrderFor(tt.intent, tt.agents, registry(t, tt.opts))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("execution order (-want +got):\n%s", diff)
			}
		})
	}
}

func TestExecutionOrderErrors(t *testing.T) {
	rules := e2i.Rules()
	if _, err := rules.ExecutionOrderFor("forecast", []string{"explainer"}, nil); !errors.Is(err, plan.ErrNoRule) {
		t.Errorf("unknown intent: error %v, want ErrNoRule", err)
	}
	reg := registry(t, map[string][]troupe.Option{
		"drift_monitor": {troupe.After("health_score")},
		"health_score":  {troupe.After("gap_analyzer")},
		"gap_analyzer":  {troupe.After("drift_monitor")},
	})
	_, err := rules.ExecutionOrder([]string{"explainer", "drift_monitor", "health_score", "gap_analyzer"}, reg)
	if !errors.Is(err, plan.ErrCycle) {
		t.Fatalf("error %v, want ErrCycle", err)
	}
	want := "plan: dependency cycle: drift_monitor -> health_score -> gap_analyzer -> drift_monitor (each runs after the next)"
	if err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
}

// When two agents each read what the other writes, rule order decides only what nothing else
// does: an order that After, other state keys or the synthesizer rule give the two holds
// whatever the order the agents are given in.
func TestReadWriteTieGivesWayToOtherRules(t *testing.T) {
	tie := map[string][]troupe.Option{
		"gap_analyzer":            {troupe.Reads("segments"), troupe.Writes("gaps")},
		"heterogeneous_optimizer": {troupe.Reads("gaps"), troupe.Writes("segments")},
	}
	with := func(extra map[string][]troupe.Option) map[string][]troupe.Option {
		opts := map[string][]troupe.Option{}
		for a, o := range tie {
			opts[a] = slices.Clone(o)
		}
		for a, o := range extra {
			opts[a] = append(opts[a], o...)
		}
		return opts
	}
	tests := []struct {
		name   string
		agents []string
		opts   map[string][]troupe.Option
		want   [][]string
	}{
		{
			name:   "After",
			agents: []string{"gap_analyzer", "heterogeneous_optimizer"},
			opts:   with(map[string][]troupe.Option{"gap_analyzer": {troupe.After("heterogeneous_optimizer")}}),
			want:   [][]string{{"heterogeneous_optimizer"}, {"gap_analyzer"}},
		},
		{
			name:   "After through another agent",
			agents: []string{"gap_analyzer", "drift_monitor", "heterogeneous_optimizer"},
			opts: with(map[string][]troupe.Option{
				"gap_analyzer":  {troupe.After("drift_monitor")},
				"drift_monitor": {troupe.After("heterogeneous_optimizer")},
			}),
			want: [][]string{{"heterogeneous_optimizer"}, {"drift_monitor"}, {"gap_analyzer"}},
		},
		{
			name:   "a state key through another agent",
			agents: []string{"gap_analyzer", "causal_impact", "heterogeneous_optimizer"},
			opts: with(map[string][]troupe.Option{
				"causal_impact": {troupe.Reads("segments"), troupe.Writes("effect")},
				"gap_analyzer":  {troupe.Reads("effect")},
			}),
			want: [][]string{{"heterogeneous_optimizer"}, {"causal_impact"}, {"gap_analyzer"}},
		},
		{
			name:   "the synthesizer rule",
			agents: []string{"explainer", "gap_analyzer"},
			opts: map[string][]troupe.Option{
				"explainer":    {troupe.Reads("gaps"), troupe.Writes("story")},
				"gap_analyzer": {troupe.Reads("story"), troupe.Writes("gaps")},
			},
			want: [][]string{{"gap_analyzer"}, {"explainer"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := registry(t, tt.opts)
			for _, agents := range permutations(tt.agents) {
				got, err := e2i.Rules().ExecutionOrder(agents, reg)
				if err != nil {
					t.Errorf("ExecutionOrder(%v): %v", agents, err)
					continue
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("ExecutionOrder(%v) (-want +got):\n%s", agents, diff)
				}
			}
		})
	}

	// A cycle of After is still one, and names only the agents on it.
	reg := registry(t, with(map[string][]troupe.Option{
		"drift_monitor": {troupe.After("health_score")},
		"health_score":  {troupe.After("gap_analyzer")},
		"gap_analyzer":  {troupe.After("drift_monitor")},
	}))
	for _, agents := range permutations([]string{"heterogeneous_optimizer", "drift_monitor", "health_score", "gap_analyzer"}) {
		_, err := e2i.Rules().ExecutionOrder(agents, reg)
		if !errors.Is(err, plan.ErrCycle) {
			t.Errorf("ExecutionOrder(%v): error %v, want ErrCycle", agents, err)
		} else if strings.Contains(err.Error(), "heterogeneous_optimizer") {
			t.Errorf("ExecutionOrder(%v): %v names an agent off the cycle", agents, err)
		}
	}
}

// permutations returns every order of names.
func permutations(names []string) [][]string {
	if len(names) <= 1 {
		return [][]string{slices.Clone(names)}
	}
	var out [][]string
	for i := range names {
		rest := slices.Concat(names[:i], names[i+1:])
		for _, p := range permutations(rest) {
			out = append(out, append([]string{names[i]}, p...))
		}
	}
	return out
}

func TestCanExecuteParallel(t *testing.T) {
	reg := registry(t, map[string][]troupe.Option{
		"causal_impact":          {troupe.Writes("effect")},
		"gap_analyzer":           {troupe.Reads("effect")},
		"drift_monitor":          {troupe.Writes("health")},
		"health_score":           {troupe.Writes("health")},
		"prediction_synthesizer": {troupe.After("resource_optimizer")},
	})
	tests := []struct {
		name   string
		agents []string
		want   bool
	}{
		{"none", nil, true},
		{"one", []string{"explainer"}, true},
		{"independent", []string{"gap_analyzer", "heterogeneous_optimizer", "feedback_learner"}, true},
		{"reads what another writes", []string{"causal_impact", "gap_analyzer"}, false},
		{"write the same key", []string{"drift_monitor", "health_score"}, false},
		{"After", []string{"resource_optimizer", "prediction_synthesizer"}, false},
		{"exclusive pair", []string{"data_preparer", "model_trainer"}, false},
		{"exclusive pair either way round", []string{"model_trainer", "data_preparer"}, false},
		{"synthesizer among others", []string{"gap_analyzer", "explainer"}, false},
		{"synthesizer with its compatible agent", []string{"explainer", "feedback_learner"}, true},
		{"synthesizer with its compatible agent and another", []string{"explainer", "feedback_learner", "gap_analyzer"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := e2i.Rules().CanExecuteParallel(tt.agents, reg); got != tt.want {
				t.Errorf("CanExecuteParallel(%v) = %v, want %v", tt.agents, got, tt.want)
			}
		})
	}
}
