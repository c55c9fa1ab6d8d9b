package plan_test

import (
	"errors"
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
