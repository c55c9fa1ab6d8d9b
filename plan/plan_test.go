package plan_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/examples/e2i"
	"github.com/troupehq/troupe/plan"
)

func noop(context.Context, *troupe.Dispatch) (*troupe.Result, error) { return nil, nil }

// registry registers seed 000's 17 agents as no-ops, with opts for some of them.
func registry(t testing.TB, opts map[string][]troupe.Option) *troupe.Registry {
	t.Helper()
	reg := troupe.NewRegistry()
	for _, name := range e2i.Agents() {
		if err := reg.Add(name, troupe.AgentFunc(noop), opts[name]...); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

func ptr(f float64) *float64 { return &f }

func TestSeed000SequentialExample(t *testing.T) {
	req := &troupe.Request{
		Query: "What caused the drop in NRx for Kisqali in Midwest?",
		ParsedQuery: map[string]any{
			"intent":      "causal",
			"brands":      []any{"Kisqali"},
			"kpis":        []any{"NRx"},
			"regions":     []any{"Midwest"},
			"time_period": "recent",
		},
	}
	p, err := e2i.Rules().Plan(req, registry(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"causal_impact"}, {"gap_analyzer"}, {"explainer"}}
	if diff := cmp.Diff(want, p.ExecutionPlan()); diff != "" {
		t.Errorf("execution plan (-want +got):\n%s", diff)
	}

	wantStages := []troupe.PlanStage{
		{GroupID: "group_1", MaxConcurrency: 10, Tasks: []troupe.Task{{
			ID: "causal_impact", Agent: "causal_impact", Priority: 1,
			Reason: "primary agent for intent causal; KPI NRx routes to it",
		}}},
		{GroupID: "group_2", MaxConcurrency: 10, Tasks: []troupe.Task{{
			ID: "gap_analyzer", Agent: "gap_analyzer", Priority: 0.85,
			Reason:    "optional agent for intent causal (moderate query); KPI NRx routes to it",
			DependsOn: []string{"causal_impact"},
		}}},
		{GroupID: "group_3", MaxConcurrency: 10, Tasks: []troupe.Task{{
			ID: "explainer", Agent: "explainer", Priority: 0.8,
			Reason:    "optional agent for intent causal (moderate query); synthesizes the results of 2 other selected agents",
			DependsOn: []string{"causal_impact", "gap_analyzer"},
		}}},
	}
	if diff := cmp.Diff(wantStages, p.Stages); diff != "" {
		t.Errorf("stages (-want +got):\n%s", diff)
	}
	wantSkipped := []troupe.Selection{{
		Agent: "heterogeneous_optimizer", Score: 0.6,
		Reasons: []string{"optional agent for intent causal (moderate query)", "skipped: below the confidence threshold 0.7"},
	}}
	if diff := cmp.Diff(wantSkipped, p.Skipped); diff != "" {
		t.Errorf("skipped (-want +got):\n%s", diff)
	}
	wantCriteria := &troupe.SelectionCriteria{
		IntentType: "causal",
		Entities:   map[string][]string{"brands": {"Kisqali"}, "kpis": {"NRx"}, "regions": {"Midwest"}},
	}
	if diff := cmp.Diff(wantCriteria, p.Criteria); diff != "" {
		t.Errorf("criteria (-want +got):\n%s", diff)
	}
}

func TestSeed000ParallelExample(t *testing.T) {
	req := &troupe.Request{
		Query: "Show me market trends and opportunities for Kisqali",
		ParsedQuery: map[string]any{
			"intent":            "trend",
			"secondary_intents": []any{"exploratory"},
			"brands":            []any{"Kisqali"},
		},
	}
	p, err := e2i.Rules().Plan(req, registry(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"drift_monitor", "gap_analyzer"}, {"explainer"}}
	if diff := cmp.Diff(want, p.ExecutionPlan()); diff != "" {
		t.Errorf("execution plan (-want +got):\n%s", diff)
	}
	wantSelected := []troupe.Selection{
		{Agent: "drift_monitor", Score: 1, Reasons: []string{"primary agent for intent trend"}},
		{Agent: "gap_analyzer", Score: 0.8, Reasons: []string{"primary agent for secondary intent exploratory"}},
		{Agent: "explainer", Score: 0.8, Reasons: []string{
			"optional agent for intent trend (moderate query)",
			"synthesizes the results of 2 other selected agents",
		}},
	}
	if diff := cmp.Diff(wantSelected, p.Selected); diff != "" {
		t.Errorf("selected (-want +got):\n%s", diff)
	}
	if p.Skipped != nil {
		t.Errorf("skipped = %v, want none", p.Skipped)
	}
}

func TestPlanExecutionOrder(t *testing.T) {
	tests := []struct {
		name     string
		rules    func(*plan.Rules)
		opts     map[string][]troupe.Option
		parsed   map[string]any
		criteria *troupe.SelectionCriteria
		want     [][]string
	}{
		{
			name:   "complex causal is seed 000's get_execution_order example",
			parsed: map[string]any{"intent": "causal", "complexity": "complex"},
			want:   [][]string{{"causal_impact"}, {"gap_analyzer", "heterogeneous_optimizer"}, {"explainer"}},
		},
		{
			name:   "ml_training runs the Tier 0 pipeline in order",
			parsed: map[string]any{"intent": "ml_training"},
			want:   [][]string{{"scope_definer"}, {"data_preparer"}, {"model_selector"}, {"model_trainer"}, {"feature_analyzer"}},
		},
		{
			name:   "complex ml_training adds the deployer last",
			parsed: map[string]any{"intent": "ml_training", "complexity": "complex", "requires_ml": true},
			want:   [][]string{{"scope_definer"}, {"data_preparer"}, {"model_selector"}, {"model_trainer"}, {"feature_analyzer"}, {"model_deployer"}},
		},
		{
			name:   "monitoring runs both primaries together",
			parsed: map[string]any{"intent": "monitoring"},
			want:   [][]string{{"health_score", "drift_monitor"}, {"explainer"}},
		},
		{
			name: "exclusive pair without dependencies splits a stage, its first agent first",
			rules: func(r *plan.Rules) {
				r.ExclusivePairs = append(r.ExclusivePairs, [2]string{"gap_analyzer", "drift_monitor"})
			},
			parsed: map[string]any{"intent": "trend", "secondary_intents": []any{"exploratory"}},
			want:   [][]string{{"gap_analyzer"}, {"drift_monitor"}, {"explainer"}},
		},
		{
			// Seed 000: ("feature_analyzer", "model_deployer") — "SHAP before deploy".
			name:   "deployment with a preferred feature analyzer explains before it deploys",
			parsed: map[string]any{"intent": "model_deployment", "preferred_agents": []any{"feature_analyzer"}},
			want:   [][]string{{"feature_analyzer"}, {"model_deployer"}},
		},
		{
			name:   "After wins over rule order under a sequence",
			opts:   map[string][]troupe.Option{"causal_impact": {troupe.After("gap_analyzer")}},
			parsed: map[string]any{"intent": "causal", "kpis": []any{"NRx"}},
			want:   [][]string{{"gap_analyzer"}, {"causal_impact"}, {"explainer"}},
		},
		{
			name: "exclusive pair does not move unrelated agents",
			rules: func(r *plan.Rules) {
				r.ExclusivePairs = append(r.ExclusivePairs, [2]string{"health_score", "drift_monitor"})
				r.CompatiblePairs = nil
			},
			parsed: map[string]any{"intent": "monitoring", "preferred_agents": []any{"gap_analyzer"}},
			want:   [][]string{{"health_score", "gap_analyzer"}, {"drift_monitor"}, {"explainer"}},
		},
		{
			name: "agents writing the same state key never share a stage",
			opts: map[string][]troupe.Option{
				"drift_monitor": {troupe.Writes("market_view")},
				"gap_analyzer":  {troupe.Writes("market_view", "gaps")},
			},
			parsed: map[string]any{"intent": "trend", "secondary_intents": []any{"exploratory"}},
			want:   [][]string{{"drift_monitor"}, {"gap_analyzer"}, {"explainer"}},
		},
		{
			name: "compatible pair still may not share a written key",
			opts: map[string][]troupe.Option{
				"gap_analyzer":            {troupe.Writes("opportunities")},
				"heterogeneous_optimizer": {troupe.Writes("opportunities")},
			},
			parsed: map[string]any{"intent": "causal", "complexity": "complex"},
			want:   [][]string{{"causal_impact"}, {"gap_analyzer"}, {"heterogeneous_optimizer"}, {"explainer"}},
		},
		{
			name:   "without state declarations exploratory agents run together",
			parsed: map[string]any{"intent": "exploratory", "complexity": "complex"},
			want:   [][]string{{"gap_analyzer", "causal_impact"}, {"explainer"}},
		},
		{
			name: "a reader runs after the writer of its key",
			opts: map[string][]troupe.Option{
				"causal_impact": {troupe.Writes("effect")},
				"gap_analyzer":  {troupe.Reads("effect")},
			},
			parsed: map[string]any{"intent": "exploratory", "complexity": "complex"},
			want:   [][]string{{"causal_impact"}, {"gap_analyzer"}, {"explainer"}},
		},
		{
			name: "agents reading each other's keys go in rule order",
			opts: map[string][]troupe.Option{
				"causal_impact": {troupe.Writes("effect"), troupe.Reads("gaps")},
				"gap_analyzer":  {troupe.Reads("effect"), troupe.Writes("gaps")},
			},
			parsed: map[string]any{"intent": "exploratory", "complexity": "complex"},
			want:   [][]string{{"gap_analyzer"}, {"causal_impact"}, {"explainer"}},
		},
		{
			name:   "After orders agents of a parallel intent",
			opts:   map[string][]troupe.Option{"drift_monitor": {troupe.After("gap_analyzer")}},
			parsed: map[string]any{"intent": "trend", "secondary_intents": []any{"exploratory"}},
			want:   [][]string{{"gap_analyzer"}, {"drift_monitor"}, {"explainer"}},
		},
		{
			name:   "After naming an unselected agent is ignored",
			opts:   map[string][]troupe.Option{"drift_monitor": {troupe.After("feedback_learner")}},
			parsed: map[string]any{"intent": "trend", "secondary_intents": []any{"exploratory"}},
			want:   [][]string{{"drift_monitor", "gap_analyzer"}, {"explainer"}},
		},
		{
			name:   "excluded agent is left out",
			parsed: map[string]any{"intent": "causal", "kpis": []any{"NRx"}, "excluded_agents": []any{"gap_analyzer"}},
			want:   [][]string{{"causal_impact"}},
		},
		{
			name:   "excluding the synthesizer",
			parsed: map[string]any{"intent": "monitoring", "excluded_agents": []any{"explainer"}},
			want:   [][]string{{"health_score", "drift_monitor"}},
		},
		{
			name:   "preferred agent is selected",
			parsed: map[string]any{"intent": "trend", "preferred_agents": []any{"health_score"}},
			want:   [][]string{{"drift_monitor", "health_score"}, {"explainer"}},
		},
		{
			name:   "preferred agent joins a sequence last",
			parsed: map[string]any{"intent": "causal", "preferred_agents": []any{"resource_optimizer"}},
			want:   [][]string{{"causal_impact"}, {"resource_optimizer"}, {"explainer"}},
		},
		{
			name:   "excluded wins over preferred",
			parsed: map[string]any{"intent": "trend", "preferred_agents": []any{"health_score"}, "excluded_agents": []any{"health_score"}},
			want:   [][]string{{"drift_monitor"}},
		},
		{
			name:   "preferred agents alone serve an intent without a rule",
			parsed: map[string]any{"intent": "forecast", "preferred_agents": []any{"prediction_synthesizer", "resource_optimizer"}},
			want:   [][]string{{"prediction_synthesizer", "resource_optimizer"}},
		},
		{
			name:   "high confidence threshold keeps only primaries",
			parsed: map[string]any{"intent": "causal", "kpis": []any{"NRx"}, "confidence_threshold": 0.9},
			want:   [][]string{{"causal_impact"}},
		},
		{
			name:   "low confidence threshold takes every optional agent",
			parsed: map[string]any{"intent": "causal", "complexity": "simple", "confidence_threshold": 0.4},
			want:   [][]string{{"causal_impact"}, {"gap_analyzer", "heterogeneous_optimizer"}, {"explainer"}},
		},
		{
			name:   "flag agents are selected",
			parsed: map[string]any{"intent": "trend", "requires_experimentation": true},
			want:   [][]string{{"drift_monitor", "experiment_designer"}, {"explainer"}},
		},
		{
			name:   "KPI routing adds agents",
			parsed: map[string]any{"intent": "trend", "kpis": []any{"inference_latency"}},
			want:   [][]string{{"drift_monitor", "health_score", "resource_optimizer"}, {"explainer"}},
		},
		{
			// explainer comes before gap_analyzer in rule order, as an optional agent before a
			// KPI's, but as the synthesizer it runs last.
			name: "the synthesizer runs last among agents that read what each other writes",
			opts: map[string][]troupe.Option{
				"explainer":    {troupe.Reads("gaps"), troupe.Writes("story")},
				"gap_analyzer": {troupe.Reads("story"), troupe.Writes("gaps")},
			},
			parsed: map[string]any{"intent": "trend", "complexity": "complex", "kpis": []any{"MAU"}},
			want:   [][]string{{"drift_monitor", "gap_analyzer"}, {"explainer"}},
		},
		{
			name:     "explicit criteria win over the parsed query",
			parsed:   map[string]any{"intent": "trend"},
			criteria: &troupe.SelectionCriteria{IntentType: "comparative"},
			want:     [][]string{{"gap_analyzer", "heterogeneous_optimizer"}, {"explainer"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rules := e2i.Rules()
			if tt.rules != nil {
				tt.rules(rules)
			}
			reg := registry(t, tt.opts)
			if err := rules.Validate(reg); err != nil {
				t.Fatalf("rules: %v", err)
			}
			p, err := rules.Plan(&troupe.Request{ParsedQuery: tt.parsed, Criteria: tt.criteria}, reg)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, p.ExecutionPlan()); diff != "" {
				t.Errorf("execution plan (-want +got):\n%s", diff)
			}
			checkPlan(t, rules, reg, p)
		})
	}
}

// checkPlan checks what every plan must satisfy: each selected agent in exactly one stage,
// dependencies in earlier stages, no exclusive pair or shared written key within a stage.
func checkPlan(t *testing.T, rules *plan.Rules, c troupe.Catalog, p *troupe.Plan) {
	t.Helper()
	stageOf := map[string]int{}
	for i, st := range p.Stages {
		if st.MaxConcurrency < 1 {
			t.Errorf("stage %d: max concurrency %d", i, st.MaxConcurrency)
		}
		for _, task := range st.Tasks {
			if _, dup := stageOf[task.Agent]; dup {
				t.Errorf("%s planned twice", task.Agent)
			}
			stageOf[task.Agent] = i
		}
	}
	for _, s := range p.Selected {
		if _, ok := stageOf[s.Agent]; !ok {
			t.Errorf("selected %s is in no stage", s.Agent)
		}
	}
	if len(stageOf) != len(p.Selected) {
		t.Errorf("%d tasks for %d selected agents", len(stageOf), len(p.Selected))
	}
	for i, st := range p.Stages {
		for _, task := range st.Tasks {
			for _, d := range task.DependsOn {
				if ds, ok := stageOf[d]; !ok || ds >= i {
					t.Errorf("%s (stage %d) depends on %s (stage %d, planned %v)", task.Agent, i, d, ds, ok)
				}
			}
		}
		for a, ta := range st.Tasks {
			for _, tb := range st.Tasks[a+1:] {
				if !rules.CanExecuteParallel([]string{ta.Agent, tb.Agent}, c) {
					t.Errorf("stage %d: %s and %s cannot run in parallel", i, ta.Agent, tb.Agent)
				}
			}
		}
	}
}

// Seed 000, testing requirement 3: correct agents selected for each intent.
func TestSeed000AgentSelection(t *testing.T) {
	reg := registry(t, nil)
	rules := e2i.Rules()
	// Seed 000's INTENT_ROUTING_RULES: the primaries always (1.0); the optional agents only
	// for a complex query (0.75, over the 0.7 threshold; 0.4 and 0.6 otherwise); explainer,
	// the synthesizer, at 0.8 whenever it is a candidate and two other agents are selected.
	primaries := map[string][]string{
		"causal":           {"causal_impact"},
		"exploratory":      {"gap_analyzer"},
		"comparative":      {"gap_analyzer", "heterogeneous_optimizer"},
		"trend":            {"drift_monitor"},
		"what_if":          {"experiment_designer"},
		"ml_training":      {"scope_definer", "data_preparer", "model_selector", "model_trainer", "feature_analyzer"},
		"model_deployment": {"model_deployer"},
		"monitoring":       {"health_score", "drift_monitor"},
	}
	type pick struct {
		Agent string
		Score float64
	}
	complex := map[string][]pick{
		"causal":           {{"explainer", 0.8}, {"gap_analyzer", 0.75}, {"heterogeneous_optimizer", 0.75}},
		"exploratory":      {{"explainer", 0.8}, {"causal_impact", 0.75}},
		"comparative":      {{"explainer", 0.8}},
		"trend":            {{"explainer", 0.75}},
		"what_if":          {{"explainer", 0.8}, {"causal_impact", 0.75}},
		"ml_training":      {{"model_deployer", 0.75}},
		"model_deployment": {{"health_score", 0.75}},
		"monitoring":       {{"explainer", 0.8}},
	}
	if len(rules.Intents) != len(primaries) {
		t.Fatalf("%d intents, want %d", len(rules.Intents), len(primaries))
	}
	for _, rule := range rules.Intents {
		t.Run(rule.Intent, func(t *testing.T) {
			for _, complexity := range []string{"simple", "moderate", "complex"} {
				selected, _, err := rules.Select(&troupe.SelectionCriteria{IntentType: rule.Intent, Complexity: complexity}, reg)
				if err != nil {
					t.Fatal(err)
				}
				var want []pick
				for _, a := range primaries[rule.Intent] {
					want = append(want, pick{a, plan.ScorePrimary})
				}
				for _, p := range complex[rule.Intent] {
					// With two primaries the synthesizer has two results to combine
					// whatever the complexity.
					if complexity == "complex" || p.Agent == "explainer" && len(primaries[rule.Intent]) >= 2 {
						want = append(want, p)
					}
				}
				var got []pick
				for _, s := range selected {
					got = append(got, pick{s.Agent, s.Score})
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("%s: selection (-want +got):\n%s", complexity, diff)
				}
			}
		})
	}
}

func TestSelect(t *testing.T) {
	reg := troupe.NewRegistry()
	for _, name := range e2i.Agents() {
		if name != "heterogeneous_optimizer" {
			reg.MustAdd(name, troupe.AgentFunc(noop))
		}
	}
	crit := &troupe.SelectionCriteria{
		IntentType:              "causal",
		Complexity:              "complex",
		Entities:                map[string][]string{"kpis": {"NBRx", "MAU", "unknown_kpi"}},
		RequiresCausalInference: true,
		RequiresML:              true,
		PreferredAgents:         []string{"feedback_learner"},
		ExcludedAgents:          []string{"model_trainer"},
		SecondaryIntents:        []string{"comparative", "causal"},
	}
	selected, skipped, err := e2i.Rules().Select(crit, reg)
	if err != nil {
		t.Fatal(err)
	}
	wantSelected := []troupe.Selection{
		{Agent: "causal_impact", Score: 1, Reasons: []string{
			"primary agent for intent causal",
			"KPI NBRx routes to it",
			"requires_causal_inference routes to it",
		}},
		{Agent: "feedback_learner", Score: 0.95, Reasons: []string{"preferred by the request"}},
		{Agent: "gap_analyzer", Score: 0.85, Reasons: []string{
			"primary agent for secondary intent comparative",
			"optional agent for intent causal (complex query)",
			"KPI MAU routes to it",
		}},
		{Agent: "explainer", Score: 0.8, Reasons: []string{
			"optional agent for intent causal (complex query)",
			"synthesizes the results of 3 other selected agents",
		}},
	}
	if diff := cmp.Diff(wantSelected, selected); diff != "" {
		t.Errorf("selected (-want +got):\n%s", diff)
	}
	wantSkipped := []troupe.Selection{
		{Agent: "heterogeneous_optimizer", Score: 0.85, Reasons: []string{
			"primary agent for secondary intent comparative",
			"optional agent for intent causal (complex query)",
			"KPI NBRx routes to it",
			"skipped: not in the catalog",
		}},
		{Agent: "model_trainer", Score: 0.85, Reasons: []string{
			"requires_ml routes to it",
			"skipped: excluded by the request",
		}},
	}
	if diff := cmp.Diff(wantSkipped, skipped); diff != "" {
		t.Errorf("skipped (-want +got):\n%s", diff)
	}
}

func TestSynthesizerNeedsTwoOthers(t *testing.T) {
	reg := registry(t, nil)
	tests := []struct {
		name string
		crit *troupe.SelectionCriteria
		want []troupe.Selection
	}{
		{
			name: "one other agent",
			crit: &troupe.SelectionCriteria{IntentType: "trend"},
			want: []troupe.Selection{{Agent: "drift_monitor", Score: 1, Reasons: []string{"primary agent for intent trend"}}},
		},
		{
			name: "one other agent, complex query keeps the base score",
			crit: &troupe.SelectionCriteria{IntentType: "trend", Complexity: "complex"},
			want: []troupe.Selection{
				{Agent: "drift_monitor", Score: 1, Reasons: []string{"primary agent for intent trend"}},
				{Agent: "explainer", Score: 0.75, Reasons: []string{"optional agent for intent trend (complex query)"}},
			},
		},
		{
			name: "a below-threshold agent does not count",
			crit: &troupe.SelectionCriteria{IntentType: "what_if"},
			want: []troupe.Selection{{Agent: "experiment_designer", Score: 1, Reasons: []string{"primary agent for intent what_if"}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			selected, _, err := e2i.Rules().Select(tt.crit, reg)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, selected); diff != "" {
				t.Errorf("selected (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPlanErrors(t *testing.T) {
	tests := []struct {
		name  string
		opts  map[string][]troupe.Option
		req   *troupe.Request
		is    error
		wants []string // substrings of the message
	}{
		{
			name:  "unknown intent",
			req:   &troupe.Request{ParsedQuery: map[string]any{"intent": "forecast"}},
			is:    plan.ErrNoRule,
			wants: []string{`plan: no routing rule for intent "forecast"`},
		},
		{
			name:  "unknown secondary intent",
			req:   &troupe.Request{ParsedQuery: map[string]any{"intent": "trend", "secondary_intents": []any{"forecast"}}},
			is:    plan.ErrNoRule,
			wants: []string{`no routing rule for secondary intent "forecast"`},
		},
		{
			name:  "missing intent",
			req:   &troupe.Request{ParsedQuery: map[string]any{"brands": []any{"Kisqali"}}},
			wants: []string{"plan: ", "intent_type", "required"},
		},
		{
			name:  "invalid explicit criteria",
			req:   &troupe.Request{Criteria: &troupe.SelectionCriteria{IntentType: "causal", ConfidenceThreshold: ptr(1.5)}},
			wants: []string{"plan: invalid criteria", "confidence_threshold"},
		},
		{
			name:  "infinite time budget",
			req:   &troupe.Request{Criteria: &troupe.SelectionCriteria{IntentType: "causal", TimeBudgetSeconds: ptr(math.Inf(1))}},
			wants: []string{"plan: invalid criteria", "time_budget_seconds", "must be finite"},
		},
		{
			name: "everything excluded",
			req: &troupe.Request{ParsedQuery: map[string]any{
				"intent": "trend", "excluded_agents": []any{"drift_monitor"},
			}},
			is:    plan.ErrNoSelection,
			wants: []string{`plan: no agent selected for intent "trend"`, "drift_monitor (skipped: excluded by the request)"},
		},
		{
			name: "cycle of After",
			opts: map[string][]troupe.Option{
				"drift_monitor": {troupe.After("gap_analyzer")},
				"gap_analyzer":  {troupe.After("drift_monitor")},
			},
			req:   &troupe.Request{ParsedQuery: map[string]any{"intent": "trend", "secondary_intents": []any{"exploratory"}}},
			is:    plan.ErrCycle,
			wants: []string{"plan: dependency cycle: drift_monitor -> gap_analyzer -> drift_monitor"},
		},
		{
			// causal requires a sequence, but the cycle is the two After declarations between
			// gap_analyzer and drift_monitor: causal_impact only waits for gap_analyzer, and
			// the error must not blame the order sequence_required adds.
			name: "cycle of After under sequence_required",
			opts: map[string][]troupe.Option{
				"causal_impact": {troupe.After("gap_analyzer")},
				"gap_analyzer":  {troupe.After("drift_monitor")},
				"drift_monitor": {troupe.After("gap_analyzer")},
			},
			req: &troupe.Request{ParsedQuery: map[string]any{
				"intent": "causal", "kpis": []any{"NRx"}, "preferred_agents": []any{"drift_monitor"},
			}},
			is:    plan.ErrCycle,
			wants: []string{"plan: dependency cycle: gap_analyzer -> drift_monitor -> gap_analyzer (each runs after the next)"},
		},
		{
			name:  "synthesizer feeding another agent",
			opts:  map[string][]troupe.Option{"explainer": {troupe.Writes("story")}, "health_score": {troupe.Reads("story")}},
			req:   &troupe.Request{ParsedQuery: map[string]any{"intent": "monitoring"}},
			is:    plan.ErrCycle,
			wants: []string{"health_score -> explainer -> health_score"},
		},
		{
			name:  "nil request",
			wants: []string{"plan: nil request"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := e2i.Rules().Plan(tt.req, registry(t, tt.opts))
			if err == nil {
				t.Fatalf("Plan = %v, want an error", p.ExecutionPlan())
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %v is not %v", err, tt.is)
			}
			for _, w := range tt.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestPlanIsDeterministic(t *testing.T) {
	reg := registry(t, map[string][]troupe.Option{
		"causal_impact": {troupe.Writes("effect")},
		"gap_analyzer":  {troupe.Reads("effect"), troupe.Writes("gaps")},
		"explainer":     {troupe.Reads("gaps")},
	})
	rules := e2i.Rules()
	newReq := func() *troupe.Request {
		return &troupe.Request{ParsedQuery: map[string]any{
			"intent":            "causal",
			"complexity":        "complex",
			"brands":            []any{"Kisqali", "Fabhalta"},
			"kpis":              []any{"NRx", "NBRx", "inference_latency", "model_f1"},
			"regions":           []any{"Midwest", "Northeast"},
			"secondary_intents": []any{"monitoring", "comparative"},
			"requires_ml":       true,
			"discovery_config":  map[string]any{"algorithms": []any{"ges", "pc"}, "alpha": 0.05},
		}}
	}
	var first []byte
	for i := range 20 {
		p, err := rules.Plan(newReq(), reg)
		if err != nil {
			t.Fatal(err)
		}
		got, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = got
			continue
		}
		if !bytes.Equal(first, got) {
			t.Fatalf("plan %d differs:\n%s\n%s", i, first, got)
		}
	}
}

func TestPlanSharesNothingWithRequest(t *testing.T) {
	crit := &troupe.SelectionCriteria{
		IntentType: "causal",
		Entities:   map[string][]string{"kpis": {"NRx"}},
	}
	p, err := e2i.Rules().Plan(&troupe.Request{Criteria: crit}, registry(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	crit.Entities["kpis"][0] = "TRx"
	crit.IntentType = "trend"
	want := &troupe.SelectionCriteria{IntentType: "causal", Entities: map[string][]string{"kpis": {"NRx"}}}
	if diff := cmp.Diff(want, p.Criteria); diff != "" {
		t.Errorf("plan criteria changed with the request (-want +got):\n%s", diff)
	}
}

func TestMaxConcurrency(t *testing.T) {
	rules := e2i.Rules()
	rules.MaxConcurrency = 2
	p, err := rules.Plan(&troupe.Request{ParsedQuery: map[string]any{
		"intent": "trend", "kpis": []any{"inference_latency", "MAU"},
	}}, registry(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	// The group is never split: the engine runs at most two of its four tasks at once.
	want := []troupe.PlanStage{
		{GroupID: "group_1", MaxConcurrency: 2, Tasks: []troupe.Task{{Agent: "drift_monitor"}, {Agent: "health_score"}, {Agent: "resource_optimizer"}, {Agent: "gap_analyzer"}}},
		{GroupID: "group_2", MaxConcurrency: 2, Tasks: []troupe.Task{{Agent: "explainer"}}},
	}
	if diff := cmp.Diff(want, p.Stages, cmp.Transformer("agent", func(t troupe.Task) string { return t.Agent })); diff != "" {
		t.Errorf("stages (-want +got):\n%s", diff)
	}
}

// TestSharedResources: seed 000's shared_resources of a parallel group are the state keys two
// or more of its agents read; a key one agent reads, or one they never declare, is not shared,
// and a single-task stage shares nothing.
func TestSharedResources(t *testing.T) {
	reg := registry(t, map[string][]troupe.Option{
		"drift_monitor": {troupe.Reads("baseline", "window", "window")},
		"gap_analyzer":  {troupe.Reads("window", "targets", "baseline")},
		"explainer":     {troupe.Reads("window")},
	})
	st := map[string]any{"baseline": 1, "window": 2, "targets": 3}
	p, err := e2i.Rules().Plan(&troupe.Request{ParsedQuery: map[string]any{"intent": "trend", "kpis": []any{"model_accuracy", "MAU"}}, State: st}, reg)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := p.ExecutionPlan(), [][]string{{"drift_monitor", "health_score", "gap_analyzer"}, {"explainer"}}; !cmp.Equal(got, want) {
		t.Fatalf("plan %v, want %v", got, want)
	}
	if got, want := p.Stages[0].SharedResources, []string{"baseline", "window"}; !cmp.Equal(got, want) {
		t.Errorf("group_1 shares %v, want %v", got, want)
	}
	if got := p.Stages[1].SharedResources; got != nil {
		t.Errorf("a stage of one task shares %v", got)
	}
	if s := p.String(); !strings.Contains(s, "stage 1 (parallel, max 10; sharing baseline, window):") {
		t.Errorf("String does not say what the group shares:\n%s", s)
	}
	data, err := json.Marshal(p.Stages[0])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"group_id":"group_1"`) || !strings.Contains(string(data), `"shared_resources":["baseline","window"]`) {
		t.Errorf("group JSON lacks seed 000's group_id or shared_resources: %s", data)
	}
}

// nilSpecs is a catalog that knows some agents but returns a nil spec for them, as a Catalog
// implementation other than troupe.Registry may.
type nilSpecs struct {
	troupe.Catalog
	nil map[string]bool
}

func (c nilSpecs) Spec(name string) (*troupe.AgentSpec, bool) {
	if c.nil[name] {
		return nil, true
	}
	return c.Catalog.Spec(name)
}

// TestSharedResourcesNilSpec: an agent the catalog knows but whose spec is nil declares
// nothing, as the scheduler treats it, rather than crashing the plan.
func TestSharedResourcesNilSpec(t *testing.T) {
	reg := registry(t, map[string][]troupe.Option{
		"drift_monitor": {troupe.Reads("baseline", "window")},
		"gap_analyzer":  {troupe.Reads("window", "baseline")},
		"health_score":  {troupe.Reads("window")},
	})
	tests := []struct {
		name string
		nil  []string
		want []string
	}{
		{"no nil spec", nil, []string{"baseline", "window"}},
		{"one nil spec", []string{"gap_analyzer"}, []string{"window"}},
		{"all but one nil", []string{"gap_analyzer", "health_score"}, nil},
		{"all nil", []string{"drift_monitor", "gap_analyzer", "health_score"}, nil},
	}
	tasks := []troupe.Task{{Agent: "drift_monitor"}, {Agent: "gap_analyzer"}, {Agent: "health_score"}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cat := nilSpecs{Catalog: reg, nil: map[string]bool{}}
			for _, n := range tt.nil {
				cat.nil[n] = true
			}
			if got := plan.SharedResources(tasks, cat); !cmp.Equal(got, tt.want) {
				t.Errorf("SharedResources = %v, want %v", got, tt.want)
			}
			// The planner fills every stage's shared resources the same way.
			p, err := e2i.Rules().Plan(&troupe.Request{ParsedQuery: map[string]any{"intent": "monitoring"}}, cat)
			if err != nil {
				t.Fatalf("Plan: %v", err)
			}
			if len(p.Stages) == 0 {
				t.Fatalf("empty plan")
			}
			for _, st := range p.Stages {
				if want := plan.SharedResources(st.Tasks, cat); !cmp.Equal(st.SharedResources, want) {
					t.Errorf("%s shares %v, want %v", st.GroupID, st.SharedResources, want)
				}
			}
		})
	}
}
