package aggregate_test

import (
	"fmt"
	"testing"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/aggregate"
)

// BenchmarkCombine100 combines 100 results of about ten fields each, half of them shared and
// disagreeing, some nested.
func BenchmarkCombine100(b *testing.B) {
	rs := make([]*troupe.Result, 100)
	for i := range rs {
		ar := map[string]any{
			"brand":        "Kisqali",
			"region":       []string{"Midwest", "Northeast"}[i%2],
			"effect":       map[string]any{"size": float64(i%5) / 10, "kpi": "NRx", "ci": []any{-0.2, 0.1}},
			"driver":       []string{"access", "competitor", "supply"}[i%3],
			"score":        i % 4,
			"key_insights": []any{"shared insight", fmt.Sprint("insight ", i)},
		}
		for f := range 4 {
			ar[fmt.Sprintf("own_%d_%d", i, f)] = f
		}
		rs[i] = result(fmt.Sprint("agent_", i), ar, conf(0.5+float64(i%5)/10), summary(fmt.Sprint("summary ", i)), took(10), tokens(100))
	}
	for _, s := range []aggregate.Strategy{aggregate.HighestConfidence, aggregate.MostRecent, aggregate.WeightedVote} {
		b.Run(string(s), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := aggregate.Combine(rs, aggregate.Options{Strategy: s}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCombine10Small combines what a ten-step chain of small agents hands the engine: ten
// results with one shared, agreeing field each.
func BenchmarkCombine10Small(b *testing.B) {
	rs := make([]*troupe.Result, 10)
	for i := range rs {
		rs[i] = result(fmt.Sprintf("agent_%04d", i), map[string]any{"ok": true}, conf(1))
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := aggregate.Combine(rs, aggregate.Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCombine100Small combines what a 100-way fan-out of small agents hands the engine:
// 100 results with one shared, agreeing field each.
func BenchmarkCombine100Small(b *testing.B) {
	rs := make([]*troupe.Result, 100)
	for i := range rs {
		rs[i] = result(fmt.Sprintf("agent_%04d", i), map[string]any{"ok": true}, conf(1))
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := aggregate.Combine(rs, aggregate.Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
