package route_test

import (
	"context"
	"strings"
	"testing"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/examples/tutor"
)

// BenchmarkRoute measures one routing decision by seed 003's coordinator: a message that
// fires an early trigger, one that tries every pattern and falls to the default, and the
// non-ASCII messages that need Unicode normalisation.
func BenchmarkRoute(b *testing.B) {
	coordinator := tutor.Coordinator()
	ctx := troupe.NewContext("bench", "")
	for _, bm := range []struct{ name, query string }{
		{"ascii_hit", "Teach me fractions"},
		{"ascii_default", "I am not sure what to do with these numbers, honestly"},
		{"ascii_long", strings.Repeat("the quick brown fox jumps over the lazy dog ", 20) + "what's next"},
		{"unicode_composed", "Qu’est-ce que c’est, un café noir ? What’s next?"},
		{"unicode_decomposed", "Qu’est-ce que c’est, un cafe\u0301 noir ? What’s next?"},
		{"fullwidth", "ｔｅａｃｈ　ｍｅ fractions"},
	} {
		in := troupe.RouteInput{Query: bm.query, State: map[string]any{"quiz_paused": false}, Available: tutor.Agents()}
		b.Run(bm.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := coordinator.Route(context.Background(), in, ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
