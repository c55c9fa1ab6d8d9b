package e2i

import (
	"context"
	"fmt"
	"slices"

	"github.com/troupehq/troupe"
)

// Registry returns seed 000's 17 agents as function agents over one NewDataset, registered in
// the order of Agents. Only causal_impact and model_trainer declare state: they write
// "causal_effect" and "trained_model". No agent declares a read — troupe.Reads fails a
// dispatch with STATE_MISSING when the key is absent, and every consumer of those keys can be
// planned without their writer (gap_analyzer alone for an exploratory query, model_deployer
// alone for a deployment) — so consumers look in their upstream results and then in session
// state, and do without. Seed 000's Sender agents (causal_impact, gap_analyzer,
// heterogeneous_optimizer, drift_monitor, experiment_designer, prediction_synthesizer) return
// a training signal with their result when the dispatch collects signals.
//
// Each call builds a new registry and dataset; the agents are safe for concurrent use.
func Registry() (*troupe.Registry, error) {
	ds := NewDataset()
	reg := troupe.NewRegistry()
	for _, a := range []struct {
		name string
		fn   troupe.AgentFunc
		desc string
		opts []troupe.Option
	}{
		{"scope_definer", ds.scopeDefiner, "defines the modelling problem: target, unit, training and holdout weeks", nil},
		{"data_preparer", ds.dataPreparer, "builds the region-week modelling table and applies the QC gate", nil},
		{"model_selector", ds.modelSelector, "picks the model with the lowest holdout error", nil},
		{"model_trainer", ds.modelTrainer, "fits the chosen model by least squares", []troupe.Option{troupe.Writes("trained_model")}},
		{"feature_analyzer", ds.featureAnalyzer, "ranks the trained model's features by standardized importance", nil},
		{"model_deployer", ds.modelDeployer, "records a deployment gated on the model's fit", nil},
		{"observability_connector", ds.observabilityConnector, "counts results and records, and emits them as a progress event", nil},
		{"causal_impact", ds.causalImpact, "difference-in-differences estimate of a change against control regions", []troupe.Option{troupe.Writes("causal_effect")}},
		{"gap_analyzer", ds.gapAnalyzer, "gap to the best peer region and the opportunity in units", nil},
		{"heterogeneous_optimizer", ds.heterogeneousOptimizer, "the effect by prescriber segment and decile", nil},
		{"experiment_designer", ds.experimentDesigner, "sample size for a pilot to detect a change", nil},
		{"drift_monitor", ds.driftMonitor, "mean shift and population stability between the first and last weeks", nil},
		{"health_score", ds.healthScore, "completeness, freshness and consistency of the data feeds", nil},
		{"prediction_synthesizer", ds.predictionSynthesizer, "linear-trend forecast with prediction intervals", nil},
		{"resource_optimizer", ds.resourceOptimizer, "budget allocation in proportion to each region's gap", nil},
		{"explainer", explainer, "composes the answer from the upstream results' numbers", nil},
		{"feedback_learner", feedbackLearner, "turns upstream results into training signals", nil},
	} {
		opts := append([]troupe.Option{troupe.Describe(a.desc)}, a.opts...)
		fn := a.fn
		if slices.Contains(senders(), a.name) {
			fn = sender(a.name, fn)
		}
		if err := reg.Add(a.name, fn, opts...); err != nil {
			return nil, fmt.Errorf("e2i: %w", err)
		}
	}
	return reg, nil
}

// senders are seed 000's DSPy Sender agents, those whose results the hub collects training
// signals from ("Called by: causal_impact, gap_analyzer, heterogeneous_optimizer,
// drift_monitor, experiment_designer, prediction_synthesizer"). The rest — the recipients
// (health_score, resource_optimizer, explainer) among them — send none.
func senders() []string {
	return []string{"causal_impact", "gap_analyzer", "heterogeneous_optimizer", "drift_monitor", "experiment_designer", "prediction_synthesizer"}
}

// sender makes fn a Sender: when its dispatch asks it to collect signals (collect_signals),
// its result carries one training signal — the dispatch's signal_signature (else the agent's
// name), the question as input, its summary as output, its confidence as quality — and that
// quality as signal_quality (seed 000's "Signal Collection in Agent Response").
func sender(name string, fn troupe.AgentFunc) troupe.AgentFunc {
	return func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		r, err := fn(ctx, d)
		if err != nil || r == nil || !d.CollectSignals {
			return r, err
		}
		sig := name
		if d.SignalSignature != nil && *d.SignalSignature != "" {
			sig = *d.SignalSignature
		}
		r.TrainingSignals = append(r.TrainingSignals, troupe.TrainingSignal{
			Signature: sig,
			Input:     map[string]any{"query": d.Query, "parsed_query": d.ParsedQuery},
			Output:    map[string]any{"analysis_summary": r.Summary()},
			Quality:   r.Confidence,
			Metadata:  map[string]any{"agent": name, "dispatch_id": d.DispatchID},
		})
		r.SignalQuality = r.Confidence
		return r, nil
	}
}
