package evidence_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/evidence"
	"github.com/troupehq/troupe/troupetest"
)

// A bundle whose replicates all fail still reports what they spent, beside its error: its result
// is the only place the replicates' usage is counted (seed 004: the bundle reports aggregate
// usage and cost across its K runs). Three replicates spent 300 tokens and $0.75; the run
// counted none of it, where the same agent run alone has its 100 counted.
func TestFailedBundleReportsItsReplicatesUse(t *testing.T) {
	sub := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		tokens, cost := int64(100), 0.25
		return &troupe.Result{Status: troupe.StatusFailed, TokensUsed: &tokens, CostDollars: &cost,
			Errors: []troupe.ErrorInfo{{Code: troupe.CodeAgentError, Message: "model refused", Recoverable: true}}}, nil
	})
	totals := func(name string, a troupe.Agent) *int64 {
		reg := troupe.NewRegistry()
		reg.MustAdd(name, a)
		agg := troupetest.Find(runFeasibility(t, reg), troupe.KindRunAggregated, "")
		if len(agg) != 1 {
			t.Fatalf("%d aggregations", len(agg))
		}
		return agg[0].Data.(*troupe.Aggregation).TotalTokensUsed
	}
	if got := totals("feas", sub); got == nil || *got != 100 {
		t.Fatalf("baseline: the plain failing agent's run counted %v tokens, want 100", got)
	}
	if got := totals("feas_bundle", evidence.Bundle(sub, evidence.Config{})); got == nil || *got != 300 {
		t.Errorf("the failed bundle's run counted %v tokens; its 3 replicates spent 300", got)
	}
	res, err := evidence.Bundle(sub, evidence.Config{}).Run(t.Context(), dispatch(&recorder{}))
	if res == nil || res.TokensUsed == nil || *res.TokensUsed != 300 || res.CostDollars == nil || *res.CostDollars != 0.75 {
		t.Errorf("Run returned result %+v with error %v: no usage of the 3 replicates (300 tokens, $0.75)", res, err)
	}
}

// A lint whose check panics has failed, and says so in the result's warnings as well as in a
// warning event, as every other warning does (lint findings "become warning events and result
// warnings"): it reached only the events, so the run's warnings never said the lint had not run.
func TestLintPanicReachesResultWarnings(t *testing.T) {
	lints := []evidence.Lint{{Name: "crashy", Check: func(context.Context, string, any) []string { panic("lint bug") }}}
	sub := &bySeed{out: func(_ context.Context, seed int64) (*troupe.Result, error) {
		return ok(map[string]any{"verdict": "go"}, 1, 0), nil
	}}
	rec := &recorder{}
	res, err := evidence.Bundle(sub, evidence.Config{Lints: lints}).Run(t.Context(), dispatch(rec))
	if err != nil {
		t.Fatal(err)
	}
	events := 0
	for _, e := range rec.find(evidence.EventWarning) {
		if e["lint"] == "crashy" {
			events++
		}
	}
	inResult := 0
	for _, w := range res.Warnings {
		if strings.Contains(w, "crashy") {
			inResult++
		}
	}
	if events == 0 || inResult != events {
		t.Errorf("lint failure: %d warning events, %d result warnings %q", events, inResult, res.Warnings)
	}
}

// enclosingRuntime is a recorder whose runtime names enclosing agents (troupe.Encloser) and
// counts how often it is asked.
type enclosingRuntime struct {
	*recorder
	asked *atomic.Int32
}

func (e enclosingRuntime) Enclosing() []string { e.asked.Add(1); return []string{"outer"} }

// abandonedReplicate is a bundle whose replicate r2 ignores its context until release is
// closed, then sends what its dispatch's Enclosing says: abandoned past its 20 ms deadline, it
// is still running when Run returns.
func abandonedReplicate(t *testing.T) (a *evidence.Agent, release chan struct{}, after chan []string) {
	release, after = make(chan struct{}), make(chan []string, 1)
	sub := troupe.AgentFunc(func(_ context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		if d.UserContext[evidence.ReplicateKey] == "r2" {
			<-release // ignores its context
			after <- d.Enclosing()
		}
		return ok(map[string]any{"score": 0.5}, 1, 0), nil
	})
	a, err := evidence.New(sub, evidence.Config{Schema: []byte(scoreSchema), Replicate: evidence.Ceiling{Timeout: 20 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	return a, release, after
}

// A replicate abandoned past its deadline, still running after the bundle's Run returned, reaches
// nothing of the bundle's dispatch, which is the engine's again: its Enclosing read it.
func TestAbandonedReplicateAsksNothingOfTheEnclosing(t *testing.T) {
	a, release, after := abandonedReplicate(t)
	var asked atomic.Int32
	d := dispatch(nil)
	d.Bind(enclosingRuntime{&recorder{}, &asked})
	if _, err := a.Run(t.Context(), d); err != nil {
		t.Fatal(err)
	}
	before := asked.Load()
	close(release)
	got := <-after
	if err := a.Teardown(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := asked.Load() - before; n != 0 || got != nil {
		t.Errorf("after the bundle ended, its abandoned replicate reached the bundle's runtime %d time(s) (Enclosing = %v)", n, got)
	}
}

// The same as the engine does it: once the bundle's Run returned, the engine rebinds the
// bundle's dispatch while the abandoned replicate still runs. Under -race this raced.
func TestAbandonedReplicateDoesNotRaceTheRebind(t *testing.T) {
	a, release, after := abandonedReplicate(t)
	d := dispatch(&recorder{})
	if _, err := a.Run(t.Context(), d); err != nil {
		t.Fatal(err)
	}
	close(release)
	d.Bind(nil) // what the engine does once the bundle's Run has returned
	<-after
	if err := a.Teardown(t.Context()); err != nil {
		t.Fatal(err)
	}
}
