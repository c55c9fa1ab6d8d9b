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
		// Containers Go code builds results with, which encoding/json writes as it writes the
		// ones above, and so cannot write with a NaN or an infinity in them either.
		{"typed map", map[string]any{"scores": map[string]float64{"b": 1, "a": nan}}, "r.scores.a", "NaN",
			map[string]any{"scores": map[string]any{"b": 1.0, "a": "NaN"}}},
		{"matrix", map[string]any{"m": [][]float64{{1, 2}, {3, -inf}}}, "r.m[1][1]", "-Inf",
			map[string]any{"m": []any{[]float64{1, 2}, []any{3.0, "-Inf"}}}}, // a finite row stays as it was
		{"float32 list", map[string]any{"f": []float32{1, float32(nan)}}, "r.f[1]", "NaN", map[string]any{"f": []any{float32(1), "NaN"}}},
		{"pointer", map[string]any{"p": &inf}, "r.p", "+Inf", map[string]any{"p": "+Inf"}},
		{"array", map[string]any{"a": [2]float64{nan, 0}}, "r.a[0]", "NaN", map[string]any{"a": []any{"NaN", 0.0}}},
		{"integer keys", map[string]any{"h": map[int]float64{10: 1, 2: inf}}, "r.h.2", "+Inf",
			map[string]any{"h": map[string]any{"10": 1.0, "2": "+Inf"}}},
		{"typed and finite", map[string]any{"m": map[string][]float64{"a": {1}}, "n": []int32{1}, "p": (*float64)(nil)}, "", "", nil},
		// Not looked into: a struct, bytes, a value that encodes itself.
		{"struct", map[string]any{"s": struct{ F float64 }{nan}}, "", "", nil},
		{"marshaler", map[string]any{"t": nanText(nan)}, "", "", nil},
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

// nanText is a number that encodes itself, as text: JSON can hold it whatever it is.
type nanText float64

func (n nanText) MarshalText() ([]byte, error) { return []byte("not a number"), nil }

// Finite runs on every result an engine receives: on what agents commonly return, typed lists
// and maps included, it allocates nothing.
func TestFiniteAllocatesNothing(t *testing.T) {
	v := map[string]any{
		"effect": -0.12, "n": 3, "ok": true, "label": "x", "none": nil,
		"drivers": []string{"access", "price"}, "tags": map[string]string{"a": "b"},
		"ci": []float64{-0.2, -0.05}, "rows": []any{map[string]any{"k": 1.5}}, "counts": map[string]int{"a": 1},
		"scores": map[string]float64{"a": 0.5}, "matrix": [][]float64{{1, 2}},
	}
	if n := testing.AllocsPerRun(100, func() { Finite(v) }); n != 0 {
		t.Errorf("Finite allocates %v times", n)
	}
}
