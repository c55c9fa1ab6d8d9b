package feasibility_test

import (
	"testing"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/examples/feasibility"
	"github.com/troupehq/troupe/troupetest"
)

// BenchmarkAssess measures one judge: a bootstrap resample and 400 Monte Carlo draws.
func BenchmarkAssess(b *testing.B) {
	ds := feasibility.DefaultDataset()
	p, _ := ds.Case("warehouse-expansion")
	b.ReportAllocs()
	var seed uint64
	for b.Loop() {
		seed++
		if _, err := ds.Assess(p, seed, feasibility.JudgeConfig{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRun measures a whole request on the borderline case: three judges in the evidence
// bundle, the bundle's statistics, and the orchestrator's decision, through the engine.
func BenchmarkRun(b *testing.B) {
	eng := newEngine(b)
	req := troupe.Request{ParsedQuery: map[string]any{"case": "warehouse-expansion"}}
	b.ReportAllocs()
	for b.Loop() {
		evs, err := troupetest.Collect(eng.Run(b.Context(), req))
		if err != nil || troupetest.Last(evs).Kind != troupe.KindRunCompleted {
			b.Fatalf("%v %v", err, troupetest.Last(evs).Kind)
		}
	}
}
