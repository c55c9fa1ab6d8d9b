package jsonvalue_test

import (
	"strings"
	"testing"
	"unicode/utf8"

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

// Brief cuts by characters, never inside one, and marks the cut.
func TestBrief(t *testing.T) {
	for _, c := range []struct {
		v    any
		n    int
		want string
	}{
		{"short", 40, `"short"`},
		{map[string]int{"a": 1}, 40, `{"a":1}`},
		{strings.Repeat("é", 50), 10, `"éééééééé…`},
		{"hello", 1, "…"},
		{"hello", 0, "…"}, // no room: the mark that it was cut, not a panic
		{make(chan int), 4, "0x…"},
	} {
		got := jsonvalue.Brief(c.v, c.n)
		if c.want == "0x…" {
			if !strings.HasPrefix(got, "0x") || utf8.RuneCountInString(got) != c.n {
				t.Errorf("Brief(chan) = %q, want fmt's text cut to %d", got, c.n)
			}
			continue
		}
		if got != c.want || !utf8.ValidString(got) {
			t.Errorf("Brief(%v, %d) = %q, want %q", c.v, c.n, got, c.want)
		}
	}
}
