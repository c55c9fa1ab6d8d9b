package evidence_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/bundle"
	"github.com/troupehq/troupe/engine"
	"github.com/troupehq/troupe/evidence"
	"github.com/troupehq/troupe/executor/local"
	"github.com/troupehq/troupe/flow"
	"github.com/troupehq/troupe/troupetest"
)

// The bundle agent run by the real engine: its progress events land in the run's log, tagged
// with the tool's name and redacted, and its usage is counted once in the run's totals.
func TestThroughEngine(t *testing.T) {
	scores := map[int64]float64{11: 0.3, 23: 0.9, 47: 0.6}
	sub := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		seed := d.UserContext[evidence.SeedKey].(int64)
		d.Progress("thinking", map[string]any{"contact": "ops@example.com"})
		return ok(map[string]any{"score": scores[seed], "verdict": "go"}, 100, 0.25), nil
	})
	reg := troupe.NewRegistry()
	reg.MustAdd("feas_bundle", evidence.Bundle(sub, evidence.Config{Schema: []byte(scoreSchema), SchemaVersion: "feasibility.v1"}))
	evs := runFeasibility(t, reg)
	if last := troupetest.Last(evs); last.Kind != troupe.KindRunCompleted {
		t.Fatalf("run ended %s", last.Kind)
	}

	var kinds []string
	for _, ev := range troupetest.Find(evs, troupe.KindAgentProgress, "feas_bundle") {
		p := ev.Data.(*troupe.Progress)
		kinds = append(kinds, p.Kind)
		data := p.Data.(map[string]any)
		if data["source"] != "feas_bundle" {
			t.Errorf("%s: source %v", p.Kind, data["source"])
		}
		if j, _ := json.Marshal(data); strings.Contains(string(j), "ops@example.com") {
			t.Errorf("%s leaks an address: %s", p.Kind, j)
		}
	}
	count := map[string]int{}
	for _, k := range kinds {
		count[k]++
	}
	for k, n := range map[string]int{"replicate_started": 3, "replicate_done": 3, "replicate_progress": 3, "partial_summary": 1, "bundle_ready": 1} {
		if count[k] != n {
			t.Errorf("%d %s events in the log, want %d (all: %v)", count[k], k, n, kinds)
		}
	}
	if kinds[len(kinds)-1] != evidence.EventBundleReady {
		t.Errorf("last progress event %s, want bundle_ready", kinds[len(kinds)-1])
	}

	done := troupetest.Find(evs, troupe.KindDispatchCompleted, "feas_bundle")
	if len(done) != 1 {
		t.Fatalf("%d completed dispatches", len(done))
	}
	res := done[0].Data.(*troupe.Result)
	b := bundleOf(t, res)
	if b.Meta.SchemaVersion != "feasibility.v1" || b.Meta.K != 3 || len(b.Replicates) != 3 || *res.Confidence != b.Summary.Confidence {
		t.Errorf("bundle meta %+v, confidence %v", b.Meta, *res.Confidence)
	}
	// Usage counted once: 3 × 100 tokens and 3 × $0.25, in the result and the run's totals.
	agg := troupetest.Find(evs, troupe.KindRunAggregated, "")
	if len(agg) != 1 {
		t.Fatalf("%d aggregations", len(agg))
	}
	a := agg[0].Data.(*troupe.Aggregation)
	if *res.TokensUsed != 300 || a.TotalTokensUsed == nil || *a.TotalTokensUsed != 300 || a.TotalCostDollars == nil || *a.TotalCostDollars != 0.75 {
		t.Errorf("usage: result %d tokens, run totals %v tokens $%v", *res.TokensUsed, a.TotalTokensUsed, a.TotalCostDollars)
	}
}

// Seed 004's flow: an orchestrator agent calls the bundle as a tool (flow.AsTool), receives
// one atomic bundle, and decides over it, while the bundle's progress streams into the run.
func TestAsToolForAnOrchestrator(t *testing.T) {
	scores := map[int64]float64{11: 0.3, 23: 0.9, 47: 0.6}
	judge := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		seed := d.UserContext[evidence.SeedKey].(int64)
		return ok(map[string]any{"score": scores[seed], "verdict": "go"}, 100, 0.25), nil
	})
	tool := flow.AsTool("feas_bundle", evidence.Bundle(judge, evidence.Config{Schema: []byte(scoreSchema)}))
	calls := 0
	orchestrator := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		calls++
		raw, err := tool.Call(ctx, d, json.RawMessage(`{"task":"Is the launch feasible?"}`))
		if err != nil {
			return nil, err
		}
		var b bundle.Bundle
		if err := json.Unmarshal(raw, &b); err != nil {
			return nil, err
		}
		// Reason once over the whole bundle: here, cite the largest disagreement. A tool call
		// returns only the bundle, so the orchestrator records the replicates' usage from its
		// meta alongside its decision (seed 004's metrics): the run counts it there, once.
		tokens, cost := b.Meta.Usage.Tokens, b.Meta.Usage.CostDollars
		return &troupe.Result{Status: troupe.StatusCompleted, TokensUsed: &tokens, CostDollars: &cost, AgentResult: map[string]any{
			"decision": b.Summary.Consensus["verdict"], "replicates": float64(len(b.Replicates)),
			"cited": b.Summary.Disagreements[0].Field, "confidence": b.Summary.Confidence}}, nil
	})
	reg := troupe.NewRegistry()
	reg.MustAdd("orchestrator", orchestrator)
	evs := runFeasibility(t, reg)
	done := troupetest.Find(evs, troupe.KindDispatchCompleted, "orchestrator")
	if len(done) != 1 || calls != 1 {
		t.Fatalf("%d orchestrator completions, %d calls", len(done), calls)
	}
	// Scores 0.3, 0.9, 0.6 (schema range 1): distances 0.6, 0.3, 0.3 halved by the agreeing
	// verdict → 0.3, 0.15, 0.15; confidence 1 − 0.6/3 = 0.8.
	got := done[0].Data.(*troupe.Result).AgentResult
	want := map[string]any{"decision": "go", "replicates": 3.0, "cited": "score", "confidence": 0.8}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("orchestrator's decision (-want +got):\n%s", diff)
	}
	// The bundle's progress is in the run's log, nested under the orchestrator's dispatch.
	top := troupetest.Find(evs, troupe.KindDispatchStarted, "orchestrator")[0].DispatchID
	count := map[string]int{}
	for _, ev := range troupetest.Find(evs, troupe.KindAgentProgress, "feas_bundle") {
		p := ev.Data.(*troupe.Progress)
		if ev.Parent != top || p.Data.(map[string]any)["source"] != "feas_bundle" {
			t.Errorf("%s: parent %q source %v", p.Kind, ev.Parent, p.Data.(map[string]any)["source"])
		}
		count[p.Kind]++
	}
	if count["replicate_done"] != 3 || count["partial_summary"] != 1 || count["bundle_ready"] != 1 {
		t.Errorf("bundle progress in the run: %v", count)
	}
	agg := troupetest.Find(evs, troupe.KindRunAggregated, "")
	if len(agg) != 1 {
		t.Fatalf("%d aggregations", len(agg))
	}
	if a := agg[0].Data.(*troupe.Aggregation); a.TotalTokensUsed == nil || *a.TotalTokensUsed != 300 || a.TotalCostDollars == nil || *a.TotalCostDollars != 0.75 {
		t.Errorf("run totals %v tokens $%v, want 300 and 0.75 (counted once)", a.TotalTokensUsed, a.TotalCostDollars)
	}
}

// Progress streams: the run's consumer sees the first two replicates and the partial summary
// while the third is still running — it is the consumer who lets the third finish.
func TestProgressStreamsWhileTheBundleRuns(t *testing.T) {
	release := make(chan struct{})
	scores := map[int64]float64{11: 0.1, 23: 0.9, 47: 0.5}
	sub := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		seed := d.UserContext[evidence.SeedKey].(int64)
		if seed == 47 {
			select {
			case <-release:
			case <-ctx.Done(): // never released: the replicate times out and the test fails
				return nil, ctx.Err()
			}
		}
		return ok(map[string]any{"score": scores[seed], "verdict": "go"}, 1, 0), nil
	})
	reg := troupe.NewRegistry()
	reg.MustAdd("feas_bundle", evidence.Bundle(sub, evidence.Config{Schema: []byte(scoreSchema), Replicate: evidence.Ceiling{Timeout: 30 * time.Second}}))
	eng := feasibilityEngine(t, reg, nil)
	var seen []string
	released := false
	for ev, err := range eng.Run(t.Context(), troupe.Request{Query: "Is it feasible?", ParsedQuery: map[string]any{}}) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == troupe.KindDispatchCompleted && ev.Agent == "feas_bundle" {
			res := ev.Data.(*troupe.Result)
			if b := bundleOf(t, res); b.Replicates[2].Status != "completed" {
				t.Errorf("r3 = %+v", b.Replicates[2])
			}
		}
		if ev.Kind != troupe.KindAgentProgress {
			continue
		}
		p := ev.Data.(*troupe.Progress)
		seen = append(seen, p.Kind)
		if p.Kind == evidence.EventPartialSummary && !released {
			released = true
			close(release)
		}
	}
	want := []string{"replicate_started", "replicate_started", "replicate_done", "replicate_done", "partial_summary",
		"replicate_started", "replicate_done", "bundle_ready"}
	if !released || !cmp.Equal(seen, want) {
		t.Errorf("progress seen %v (released %v), want %v", seen, released, want)
	}
}

// runFeasibility runs the feasibility question through a real engine over reg, checks the
// log's invariants and closes the engine when the test ends.
func runFeasibility(t *testing.T, reg *troupe.Registry) []troupe.Event {
	t.Helper()
	return runFeasibilityWith(t, reg, nil, troupe.Budget{})
}

// feasibilityEngine is an engine over reg on exec (nil: the local executor), closed when the
// test ends.
func feasibilityEngine(t *testing.T, reg *troupe.Registry, exec troupe.Executor) *engine.Engine {
	t.Helper()
	eng, err := engine.New(engine.Config{Registry: reg, Seed: 7, Executor: exec})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := eng.Close(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return eng
}

// runFeasibilityWith is runFeasibility on exec (nil: the local executor) with the request's
// budget.
func runFeasibilityWith(t *testing.T, reg *troupe.Registry, exec troupe.Executor, budget troupe.Budget) []troupe.Event {
	t.Helper()
	eng := feasibilityEngine(t, reg, exec)
	evs, err := troupetest.Collect(eng.Run(t.Context(), troupe.Request{Query: "Is the launch feasible?", ParsedQuery: map[string]any{}, Budget: budget}))
	if err != nil {
		t.Fatal(err)
	}
	troupetest.CheckLog(t, evs)
	return evs
}

// A bundle starts no further replicate once the run's own budget is spent, though its own
// budget would allow more: here the run's time budget, on a clock each replicate moves on by a
// minute.
func TestRunBudgetStopsReplicates(t *testing.T) {
	var offset atomic.Int64
	start := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	clock := func() time.Time { return start.Add(time.Duration(offset.Load())) }
	scores := map[int64]float64{11: 0.3, 23: 0.9, 47: 0.6}
	var calls atomic.Int32
	sub := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		calls.Add(1)
		offset.Add(int64(time.Minute))
		seed := d.UserContext[evidence.SeedKey].(int64)
		return ok(map[string]any{"score": scores[seed], "verdict": "go"}, 100, 0.25), nil
	})
	reg := troupe.NewRegistry()
	reg.MustAdd("feas_bundle", evidence.Bundle(sub, evidence.Config{Schema: []byte(scoreSchema), SchemaVersion: "feasibility.v1"}))
	evs := runFeasibilityWith(t, reg, local.New(local.Config{Clock: clock}), troupe.Budget{TimeSeconds: 90})
	if n := calls.Load(); n != 2 {
		t.Errorf("%d replicates ran, want 2: the run's 90 s were spent after two minutes", n)
	}
	var warned bool
	for _, ev := range troupetest.Find(evs, troupe.KindAgentProgress, "feas_bundle") {
		if data, _ := ev.Data.(*troupe.Progress).Data.(map[string]any); strings.Contains(fmt.Sprint(data), "not starting replicates r3 to r3") {
			warned = true
		}
	}
	if !warned {
		t.Error("the bundle did not say why it started no third replicate")
	}
}

// A replicate that calls, as a tool, the composite enclosing its bundle is refused at once, as
// a plain member's call is: the composite does not run again inside itself, K replicates
// deeper each time, before a level further down is refused. The bundle, whose replicates all
// failed so, fails with seed 003's CIRCULAR_DEPENDENCY, naming the cycle.
func TestReplicateCallingItsEnclosingCompositeIsACycle(t *testing.T) {
	var preRuns, subRuns atomic.Int32
	var team troupe.Tool
	pre := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		preRuns.Add(1)
		return ok(map[string]any{"pre": true}, 1, 0), nil
	})
	sub := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		subRuns.Add(1)
		if _, err := team.Call(ctx, d, json.RawMessage(`{"task":"again"}`)); err != nil {
			return nil, err
		}
		return ok(map[string]any{"score": 1.0}, 1, 0), nil
	})
	seq := flow.Sequential(flow.SequentialConfig{}, flow.Named("pre", pre), flow.Named("feas", evidence.Bundle(sub, evidence.Config{K: 2})))
	team = flow.AsTool("team", seq)
	d := troupe.NewDispatch()
	d.TargetAgent = "team"
	_, err := seq.Run(t.Context(), d)
	var ae *troupe.AgentError
	if !errors.As(err, &ae) || ae.Code != troupe.CodeCircularDependency || ae.Recoverable {
		t.Fatalf("error %v is not a non-recoverable %s agent error", err, troupe.CodeCircularDependency)
	}
	if want := "r1, r2: troupe: circular agent call: team → feas → team"; !strings.HasSuffix(err.Error(), want) {
		t.Errorf("error %q does not end %q", err, want)
	}
	if n := preRuns.Load(); n != 1 {
		t.Errorf("the composite's first member ran %d times, want once: the composite ran again inside itself", n)
	}
	if n := subRuns.Load(); n != 2 {
		t.Errorf("the bundle's sub-agent ran %d times, want 2 (K)", n)
	}
}
