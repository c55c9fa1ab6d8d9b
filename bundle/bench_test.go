package bundle_test

import (
	"fmt"
	"testing"

	"github.com/troupehq/troupe/bundle"
	"github.com/troupehq/troupe/redact"
)

// doc200 is a nested document of 200 leaf fields — 10 sections of 20: numbers, categories,
// booleans and tag sets — varied by replicate r the way replicated judgements vary.
func doc200(r int) map[string]any {
	d := make(map[string]any, 10)
	for s := range 10 {
		sec := make(map[string]any, 20)
		for f := range 20 {
			k := fmt.Sprintf("f%02d", f)
			switch f % 4 {
			case 0:
				sec[k] = float64(s*20+f) + float64(r%3)*0.25
			case 1:
				sec[k] = []string{"low", "medium", "high"}[(f+r*(s%2))%3]
			case 2:
				sec[k] = (f+r)%5 != 0
			default:
				sec[k] = []any{"a", "b", []string{"c", "d"}[r%2]}
			}
		}
		d[fmt.Sprintf("section_%d", s)] = sec
	}
	return d
}

func fiveReplicates() []bundle.Input {
	in := make([]bundle.Input, 5)
	for i := range in {
		in[i] = bundle.Input{ID: fmt.Sprintf("r%d", i+1), Seed: int64(i), Data: doc200(i)}
	}
	return in
}

// BenchmarkBundleSummary is the target: the summary of 5 replicates of a 200-field
// nested JSON document in ≤ 1 ms.
func BenchmarkBundleSummary(b *testing.B) {
	in := fiveReplicates()
	b.ReportAllocs()
	for b.Loop() {
		s := bundle.Summarize(in, bundle.Options{})
		if s.Confidence <= 0 || len(s.Distributions) == 0 {
			b.Fatal("empty summary")
		}
	}
}

// BenchmarkBundleBuild adds validation-free assembly, diff encoding and the JSON encoding.
func BenchmarkBundleBuild(b *testing.B) {
	in := fiveReplicates()
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := bundle.Build(bundle.Meta{Task: "bench"}, in, bundle.Options{DiffEncode: true, Limits: bundle.Limits{MaxBytes: 1 << 20, MaxDiffs: 50}}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBundleSummaryRedacted is the summary as package evidence computes it by default:
// every value written into it passes through the default redactor.
func BenchmarkBundleSummaryRedacted(b *testing.B) {
	in := fiveReplicates()
	opts := bundle.Options{Present: redact.MustNew(redact.Config{}).ValueAt}
	b.ReportAllocs()
	for b.Loop() {
		s := bundle.Summarize(in, opts)
		if s.Confidence <= 0 || len(s.Distributions) == 0 {
			b.Fatal("empty summary")
		}
	}
}
