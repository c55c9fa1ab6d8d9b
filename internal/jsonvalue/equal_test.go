package jsonvalue_test

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"

	"github.com/troupehq/troupe/internal/jsonvalue"
)

// score is a named float32, compared as the float32 it is.
type score float32

func TestEqual(t *testing.T) {
	cases := []struct {
		name string
		a, b any
		want bool
	}{
		{"int and float", 1, 1.0, true},
		{"int64 and json.Number", int64(7), json.Number("7"), true},
		{"float32 as JSON writes it", float32(0.1), 0.1, true},
		{"a named float32 as JSON writes it", score(0.1), 0.1, true},
		{"named float32s in a slice", []score{0.1, 0.7}, []any{0.1, 0.7}, true},
		{"large integers exactly", uint64(math.MaxUint64), json.Number("18446744073709551615"), true},
		{"close but different", 0.1, 0.1000001, false},
		{"number and string", 1, "1", false},
		{"bool", true, true, true},
		{"nested objects", map[string]any{"a": []any{1, "x"}}, map[string]any{"a": []any{1.0, "x"}}, true},
		{"object key sets differ", map[string]any{"a": 1}, map[string]any{"a": 1, "b": 2}, false},
		{"typed slice and []any", []string{"a", "b"}, []any{"a", "b"}, true},
		{"nil and empty", nil, map[string]any{}, false},
		{"NaN equals NaN", math.NaN(), math.NaN(), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := jsonvalue.Equal(tc.a, tc.b); got != tc.want {
				t.Errorf("Equal(%#v, %#v) = %v, want %v", tc.a, tc.b, got, tc.want)
			}
			if got := jsonvalue.Equal(tc.b, tc.a); got != tc.want {
				t.Errorf("Equal is not symmetric for %#v, %#v", tc.a, tc.b)
			}
		})
	}
}

func TestAsObject(t *testing.T) {
	type tally struct {
		Yes int `json:"yes"`
	}
	for _, tc := range []struct {
		v    any
		want map[string]any // nil: not an object
	}{
		{map[string]any{"a": 1}, map[string]any{"a": 1}},
		{map[string]int{"yes": 1}, map[string]any{"yes": 1}},
		{map[string][]string{"yes": {"m1"}}, map[string]any{"yes": []string{"m1"}}},
		{&map[string]string{"k": "v"}, map[string]any{"k": "v"}},
		{tally{Yes: 2}, map[string]any{"yes": json.Number("2")}},
		{map[string]any(nil), nil},
		{map[string]int(nil), nil},
		{[]any{1}, nil},
		{"s", nil},
		{3, nil},
		{nil, nil},
		{map[int]string{1: "a"}, map[string]any{"1": "a"}}, // as encoding/json writes it
	} {
		got, ok := jsonvalue.AsObject(tc.v)
		if ok != (tc.want != nil) || !reflect.DeepEqual(got, tc.want) && tc.want != nil {
			t.Errorf("AsObject(%#v) = %#v, %v; want %#v", tc.v, got, ok, tc.want)
		}
	}
}
