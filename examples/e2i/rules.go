package e2i

import "github.com/troupehq/troupe/plan"

// Agents returns the names of seed 000's 17 agents, in the order of its VALID_AGENTS. Each
// call returns a fresh slice.
func Agents() []string {
	return []string{
		"scope_definer", "data_preparer", "model_selector", "model_trainer",
		"feature_analyzer", "model_deployer", "observability_connector",
		"causal_impact", "gap_analyzer", "heterogeneous_optimizer",
		"experiment_designer", "drift_monitor", "health_score",
		"prediction_synthesizer", "resource_optimizer",
		"explainer", "feedback_learner",
	}
}

// Rules returns seed 000's routing tables as plan rules: INTENT_ROUTING_RULES (all eight
// intents, in the seed's order), KPI_ROUTING_MAP, EXCLUSIVE_PAIRS and PARALLEL_COMPATIBLE,
// with explainer as the synthesizer (seed 000's examples end with it to "synthesize results")
// and each requires_* flag of AgentSelectionCriteria mapped to the agent it calls for. Each
// call returns a fresh value the caller may modify.
func Rules() *plan.Rules {
	return &plan.Rules{
		Intents: []plan.IntentRule{
			{
				Intent:           "causal",
				Primary:          []string{"causal_impact"},
				Optional:         []string{"gap_analyzer", "heterogeneous_optimizer", "explainer"},
				SequenceRequired: true,
			},
			{
				Intent:           "what_if",
				Primary:          []string{"experiment_designer"},
				Optional:         []string{"causal_impact", "explainer"},
				SequenceRequired: true,
			},
			{
				Intent:   "trend",
				Primary:  []string{"drift_monitor"},
				Optional: []string{"explainer"},
			},
			{
				Intent: "ml_training",
				Primary: []string{
					"scope_definer",
					"data_preparer",
					"model_selector",
					"model_trainer",
					"feature_analyzer",
				},
				Optional: []string{"model_deployer"},
				// 000: "Must execute Tier 0 pipeline in order".
				SequenceRequired: true,
			},
			{
				Intent:   "model_deployment",
				Primary:  []string{"model_deployer"},
				Optional: []string{"health_score"},
			},
			{
				Intent:   "monitoring",
				Primary:  []string{"health_score", "drift_monitor"},
				Optional: []string{"explainer"},
			},
			{
				Intent:   "exploratory",
				Primary:  []string{"gap_analyzer"},
				Optional: []string{"causal_impact", "explainer"},
			},
			{
				Intent:   "comparative",
				Primary:  []string{"gap_analyzer", "heterogeneous_optimizer"},
				Optional: []string{"explainer"},
			},
		},
		KPIMap: map[string][]string{
			// Prescription metrics
			"NRx":  {"causal_impact", "gap_analyzer"},
			"TRx":  {"causal_impact", "gap_analyzer"},
			"NBRx": {"causal_impact", "heterogeneous_optimizer"},
			// Model performance
			"model_accuracy": {"drift_monitor", "health_score"},
			"model_f1":       {"drift_monitor", "health_score"},
			// Data quality
			"match_rate":     {"health_score", "drift_monitor"},
			"data_freshness": {"health_score"},
			// Engagement
			"MAU": {"gap_analyzer"},
			"DAU": {"gap_analyzer"},
			// Operational
			"time_to_release":   {"resource_optimizer"},
			"inference_latency": {"health_score", "resource_optimizer"},
		},
		FlagAgents: map[string][]string{
			plan.FlagRequiresCausalInference: {"causal_impact"},
			plan.FlagRequiresExperimentation: {"experiment_designer"},
			plan.FlagRequiresML:              {"model_trainer"},
		},
		ExclusivePairs: [][2]string{
			{"data_preparer", "model_trainer"},     // QC gate dependency
			{"model_trainer", "feature_analyzer"},  // Model must finish first
			{"feature_analyzer", "model_deployer"}, // SHAP before deploy
			{"scope_definer", "data_preparer"},     // Scope must be defined first
		},
		CompatiblePairs: [][2]string{
			{"gap_analyzer", "heterogeneous_optimizer"},      // Both Tier 2, independent
			{"drift_monitor", "health_score"},                // Both Tier 3, independent
			{"prediction_synthesizer", "resource_optimizer"}, // Both Tier 4, independent
			{"explainer", "feedback_learner"},                // Both Tier 5, independent (usually)
		},
		Synthesizers: []string{"explainer"},
	}
}
