package jsonvalue_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/troupehq/troupe/internal/jsonvalue"
)

func TestStrings(t *testing.T) {
	given := []string{"NRx", "TRx"}
	for _, tc := range []struct {
		name string
		in   any
		want []string
		ok   bool
	}{
		{"a []string", given, []string{"NRx", "TRx"}, true},
		{"decoded JSON", []any{"NRx", "TRx"}, []string{"NRx", "TRx"}, true},
		{"empty", []any{}, []string{}, true},
		{"a number in the list", []any{"NRx", 7.0}, nil, false},
		{"a string", "NRx", nil, false},
		{"nil", nil, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := jsonvalue.Strings(tc.in)
			if ok != tc.ok || !cmp.Equal(got, tc.want) {
				t.Errorf("Strings(%v) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
			}
		})
	}
	got, _ := jsonvalue.Strings(given)
	got[0] = "changed"
	if given[0] != "NRx" {
		t.Error("Strings returned the caller's slice, not a copy")
	}
}

func TestStringOrStrings(t *testing.T) {
	for _, tc := range []struct {
		in   any
		want []string
		ok   bool
	}{
		{"NRx", []string{"NRx"}, true},
		{"", []string{}, true},
		{[]any{"NRx", "TRx"}, []string{"NRx", "TRx"}, true},
		{[]any{"NRx", 7.0}, nil, false},
		{7.0, nil, false},
	} {
		got, ok := jsonvalue.StringOrStrings(tc.in)
		if ok != tc.ok || !cmp.Equal(got, tc.want) {
			t.Errorf("StringOrStrings(%v) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}
