package jsonvalue

import (
	"reflect"
	"slices"
	"testing"
)

func TestFields(t *testing.T) {
	type s struct {
		A      string `json:"a,omitempty"`
		B      int
		Hidden bool `json:"-"`
		c      int
		D      []string `json:",omitempty"`
	}
	names, types := Fields(reflect.TypeFor[s]())
	if want := []string{"a", "B", "D"}; !slices.Equal(names, want) {
		t.Errorf("names %q, want %q", names, want)
	}
	if types["a"] != reflect.TypeFor[string]() || types["B"] != reflect.TypeFor[int]() || types["D"] != reflect.TypeFor[[]string]() || len(types) != 3 {
		t.Errorf("types %v", types)
	}
}
