package bundle_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/troupehq/troupe/bundle"
)

// Values of different kinds that spell alike ("true" and true, "null" and null, "1" and 1) are
// different values — at distance 1, a disagreement — so they are counted apart: a string among
// other kinds of values is named by its JSON text. A field of strings only keeps plain names.
func TestCountsKeepKindsApart(t *testing.T) {
	in := []bundle.Input{
		{ID: "r1", Data: map[string]any{"flag": "true", "note": nil, "tags": []any{"1", "x"}, "verdict": "go"}},
		{ID: "r2", Data: map[string]any{"flag": true, "note": "null", "tags": []any{1.0, "x"}, "verdict": "no"}},
		{ID: "r3", Data: map[string]any{"flag": true, "note": "null", "tags": []any{"x"}, "verdict": "go"}},
	}
	got := bundle.Summarize(in, bundle.Options{}).Distributions
	want := map[string]map[string]int{
		"flag":    {`"true"`: 1, "true": 2},
		"note":    {"null": 1, `"null"`: 2},
		"tags":    {`"1"`: 1, "1": 1, `"x"`: 3},
		"verdict": {"go": 2, "no": 1},
	}
	for f, w := range want {
		if diff := cmp.Diff(w, got[f].Counts); diff != "" {
			t.Errorf("counts of %s (-want +got):\n%s", f, diff)
		}
	}
}
