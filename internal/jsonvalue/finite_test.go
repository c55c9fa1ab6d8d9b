package jsonvalue

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestNonFinite(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	tests := []struct {
		name       string
		v          any
		path, text string
		encodable  any
	}{
		{"plain", map[string]any{"a": 1.5, "b": []any{"x", 2}}, "", "", nil},
		{"top NaN", map[string]any{"b": 1, "a": nan}, "r.a", "NaN", map[string]any{"b": 1, "a": "NaN"}},
		{"nested list", map[string]any{"e": map[string]any{"ci": []any{0.1, -inf}}}, "r.e.ci[1]", "-Inf",
			map[string]any{"e": map[string]any{"ci": []any{0.1, "-Inf"}}}},
		{"float slice", map[string]any{"xs": []float64{1, inf}}, "r.xs[1]", "+Inf", map[string]any{"xs": []any{1.0, "+Inf"}}},
		{"float32", map[string]any{"f": float32(math.Inf(-1))}, "r.f", "-Inf", map[string]any{"f": "-Inf"}},
		{"first in key order", map[string]any{"z": nan, "m": []map[string]any{{"q": inf}}}, "r.m[0].q", "+Inf",
			map[string]any{"z": "NaN", "m": []any{map[string]any{"q": "+Inf"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path, text := NonFinite(tt.v, "r")
			if path != tt.path || text != tt.text {
				t.Errorf("NonFinite = %q, %q; want %q, %q", path, text, tt.path, tt.text)
			}
			if Finite(tt.v) != (tt.path == "") {
				t.Errorf("Finite = %v", Finite(tt.v))
			}
			if tt.path == "" {
				return
			}
			before, _ := json.Marshal(tt.v) // fails: NaN and infinities
			got := Encodable(tt.v)
			if diff := cmp.Diff(tt.encodable, got); diff != "" {
				t.Errorf("Encodable (-want +got):\n%s", diff)
			}
			if _, err := json.Marshal(got); err != nil {
				t.Errorf("Encodable's value does not encode: %v", err)
			}
			if after, _ := json.Marshal(tt.v); string(after) != string(before) {
				t.Error("Encodable modified its argument")
			}
		})
	}
}
