package feasibility

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/bundle"
	"github.com/troupehq/troupe/evidence"
)

// Agent names of the system.
const (
	BundleAgent       = "feasibility_bundle"
	OrchestratorAgent = "orchestrator"
)

// Config configures the system. The zero value is seed 004's defaults: K = 3, ε = 0.2, seeds
// 11, 23, 47, and an orchestrator that decides outright at confidence 0.8.
type Config struct {
	// K, Epsilon and Seeds configure the evidence bundle (see evidence.Config).
	K       int
	Epsilon float64
	Seeds   []int64
	// Judge tunes each judge.
	Judge JudgeConfig
	// MinConfidence is the bundle confidence at or above which unanimous judges decide
	// outright; 0 means 0.8.
	MinConfidence float64
}

// Registry registers the system's two agents: the feasibility bundle (K judges as an
// evidence.Bundle, replicates validated against JudgeSchema) and the orchestrator, which
// runs after it and decides over its bundle. With the engine's default planner a request runs
// both, in that order.
func Registry(ds *Dataset, cfg Config) (*troupe.Registry, error) {
	if ds == nil {
		ds = DefaultDataset()
	}
	judges, err := evidence.New(ds.Judge(cfg.Judge), evidence.Config{
		Name: BundleAgent, Task: "feasibility", SchemaVersion: "feasibility.v1", Model: "feasibility-judge@v1",
		K: cfg.K, Epsilon: cfg.Epsilon, Seeds: cfg.Seeds, Schema: JudgeSchema(),
	})
	if err != nil {
		return nil, fmt.Errorf("feasibility: %w", err)
	}
	reg := troupe.NewRegistry()
	if err := reg.Add(BundleAgent, judges, troupe.Describe("K feasibility judges, replicate-and-decide, as one evidence bundle")); err != nil {
		return nil, fmt.Errorf("feasibility: %w", err)
	}
	if err := reg.Add(OrchestratorAgent, ds.Orchestrator(cfg.MinConfidence), troupe.After(BundleAgent),
		troupe.Describe("reads the bundle once and decides, citing disagreements and confidence")); err != nil {
		return nil, fmt.Errorf("feasibility: %w", err)
	}
	return reg, nil
}

// Builtins returns the Go agents troupe.yaml names as builtin: "judge" (one judge, whose
// replicates the file's bundle runs) and "orchestrator". A program loading the file passes
// them to config.Build.
func Builtins(ds *Dataset, cfg Config) (*troupe.Registry, error) {
	if ds == nil {
		ds = DefaultDataset()
	}
	reg := troupe.NewRegistry()
	if err := reg.Add("judge", ds.Judge(cfg.Judge), troupe.Describe("one feasibility judge: a seeded reference-class forecast")); err != nil {
		return nil, fmt.Errorf("feasibility: %w", err)
	}
	if err := reg.Add(OrchestratorAgent, ds.Orchestrator(cfg.MinConfidence), troupe.Describe("reads the bundle once and decides, citing disagreements and confidence")); err != nil {
		return nil, fmt.Errorf("feasibility: %w", err)
	}
	return reg, nil
}

// Orchestrator returns the orchestrator agent: it reads the feasibility bundle from its
// upstream results and decides with Decide. Its agent_result is a Decision; its summary the
// justification.
func (ds *Dataset) Orchestrator(minConfidence float64) troupe.Agent {
	if minConfidence <= 0 || minConfidence > 1 {
		minConfidence = 0.8
	}
	return troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		p, err := ds.ProposalOf(d)
		if err != nil {
			return nil, err
		}
		b, err := BundleOf(d)
		if err != nil {
			return nil, err
		}
		dec, err := Decide(p, b, minConfidence)
		if err != nil {
			return nil, err
		}
		out, err := asObject(dec)
		if err != nil {
			return nil, err
		}
		// The decision is the run's answer (seed 004: the orchestrator writes the final
		// report), not one summary beside the bundle's: the run's synthesis takes it from here.
		out["synthesis"] = dec.Justification
		return &troupe.Result{AgentResult: out, AnalysisSummary: &dec.Justification, Confidence: &dec.Confidence}, nil
	})
}

// BundleOf decodes the evidence bundle among a dispatch's upstream results (the bundle agent's
// agent_result is the bundle's JSON).
func BundleOf(d *troupe.Dispatch) (*bundle.Bundle, error) {
	for _, u := range d.UpstreamResults {
		if u.Agent != BundleAgent {
			continue
		}
		raw, err := json.Marshal(u.Result)
		if err != nil {
			return nil, fmt.Errorf("feasibility: bundle: %w", err)
		}
		var b bundle.Bundle
		if err := json.Unmarshal(raw, &b); err != nil {
			return nil, &troupe.AgentError{Code: troupe.CodeInvalidInput, Message: "feasibility: the bundle does not decode: " + err.Error()}
		}
		return &b, nil
	}
	var got []string
	for _, u := range d.UpstreamResults {
		got = append(got, u.Agent)
	}
	return nil, &troupe.AgentError{Code: troupe.CodeStateMissing,
		Message:        fmt.Sprintf("feasibility: no %s among upstream results [%s]", BundleAgent, strings.Join(got, ", ")),
		FallbackAction: "run " + BundleAgent + " first"}
}
