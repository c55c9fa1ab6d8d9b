package engine_test

import (
	"fmt"
	"testing"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/engine"
)

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

func BenchmarkChain10NoWatch(b *testing.B) {
	reg, names := registry(b, 10, troupe.AgentFunc(noop))
	eng, err := engine.New(engine.Config{Registry: reg, Planner: staticPlan(chainPlan(names))})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		r, err := eng.Start(b.Context(), troupe.Request{Query: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		<-r.Done()
	}
}
