package engine_test

import (
	"fmt"
	"testing"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/engine"
)

// BenchmarkChainN separates a run's fixed cost from its cost per dispatch: chains of 1, 10
// and 20 no-op agents.
func BenchmarkChainN(b *testing.B) {
	for _, n := range []int{1, 10, 20} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			reg, names := registry(b, n, troupe.AgentFunc(noop))
			eng, err := engine.New(engine.Config{Registry: reg, Planner: staticPlan(chainPlan(names))})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			runAll(b, eng)
		})
	}
}
