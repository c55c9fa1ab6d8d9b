package jsonvalue

import (
	"encoding/json"
	"errors"
	"net"
	"testing"
)

// TestKindWantedNamesJSONKinds decodes the wrong kind of value into each Go type and checks
// that the kind named for the error is JSON's, as a writer of JSON would call it.
func TestKindWantedNamesJSONKinds(t *testing.T) {
	for _, c := range []struct {
		into any
		json string
		want string
	}{
		{new(map[string]json.RawMessage), `[1,2,3]`, "an object"},
		{new(struct{ A int }), `"x"`, "an object"},
		{new(map[string]any), `"str"`, "an object"},
		{new(float64), `"0.5"`, "a number"},
		{new(*float64), `"0.5"`, "a number"},
		{new(string), `7`, "a string"},
		{new(int), `1.5`, "a whole number"},
		{new(uint8), `-1`, "a whole number, 0 or more"},
		{new(bool), `"yes"`, "a boolean"},
		{new([]string), `{}`, "a list of strings"},
		{new(map[string][]int), `[]`, "an object of lists of whole numbers"},
		{new([]any), `{}`, "a list"},
		{new(net.IP), `5`, "a string"},
	} {
		err := json.Unmarshal([]byte(c.json), c.into)
		var te *json.UnmarshalTypeError
		if !errors.As(err, &te) {
			t.Errorf("%T from %s: error %v, want a type error", c.into, c.json, err)
			continue
		}
		if got := KindWanted(te.Type); got != c.want {
			t.Errorf("%T from %s: KindWanted(%v) = %q, want %q", c.into, c.json, te.Type, got, c.want)
		}
	}
}

func TestKindOfNamesJSONKinds(t *testing.T) {
	for _, c := range []struct {
		v    any
		want string
	}{
		{map[string]any{}, "an object"},
		{map[string]int{"a": 1}, "an object"},
		{[]any{1}, "a list"},
		{[]string{"a"}, "a list"},
		{"s", "a string"},
		{7.0, "a number"},
		{int64(7), "a number"},
		{json.Number("7"), "a number"},
		{true, "a boolean"},
		{nil, "null"},
		{map[string]any(nil), "null"},
		{make(chan int), "a value JSON cannot hold (chan int)"},
	} {
		if got := KindOf(c.v); got != c.want {
			t.Errorf("KindOf(%#v) = %q, want %q", c.v, got, c.want)
		}
	}
	for _, c := range []struct {
		v    any
		want string
	}{
		{[]any{"a", 7.0}, "a list whose item 2 is a number"},
		{[]any{"a", "b"}, "a list of strings"},
		{[]string{"a"}, "a list of strings"},
		{7.0, "a number"},
	} {
		if got := KindOfStrings(c.v); got != c.want {
			t.Errorf("KindOfStrings(%#v) = %q, want %q", c.v, got, c.want)
		}
	}
}
