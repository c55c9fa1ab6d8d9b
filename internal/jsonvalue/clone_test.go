package jsonvalue

import (
	"reflect"
	"testing"
)

func TestCloneSharesNothing(t *testing.T) {
	orig := map[string]any{
		"n": 1.5, "s": "x", "b": true, "nil": nil,
		"m":  map[string]any{"l": []any{1.0, map[string]any{"k": "v"}}},
		"lm": []map[string]any{{"a": 1.0}},
		"ms": map[string]string{"a": "b"}, "ls": []string{"a"}, "lf": []float64{1}, "li": []int{1},
	}
	c := CloneMap(orig)
	if !reflect.DeepEqual(c, orig) {
		t.Fatalf("CloneMap = %v, want %v", c, orig)
	}
	// Change every container of the copy: the original must not see it.
	c["m"].(map[string]any)["l"].([]any)[1].(map[string]any)["k"] = "changed"
	c["lm"].([]map[string]any)[0]["a"] = 2.0
	c["ms"].(map[string]string)["a"] = "changed"
	c["ls"].([]string)[0], c["lf"].([]float64)[0], c["li"].([]int)[0] = "changed", 2, 2
	want := map[string]any{
		"n": 1.5, "s": "x", "b": true, "nil": nil,
		"m":  map[string]any{"l": []any{1.0, map[string]any{"k": "v"}}},
		"lm": []map[string]any{{"a": 1.0}},
		"ms": map[string]string{"a": "b"}, "ls": []string{"a"}, "lf": []float64{1}, "li": []int{1},
	}
	if !reflect.DeepEqual(orig, want) {
		t.Errorf("the original changed with its copy: %v", orig)
	}
	if CloneMap(nil) != nil || Clone([]any(nil)).([]any) != nil {
		t.Error("nil did not stay nil")
	}
}

// TestCloneSelfReference: a map that holds itself (Go allows it; JSON cannot say it) is copied
// down to MaxDepth and shared below, not copied until the stack runs out.
func TestCloneSelfReference(t *testing.T) {
	m := map[string]any{}
	m["self"] = m
	c := CloneMap(m)
	depth := 0
	for v := c; ; depth++ {
		next := v["self"].(map[string]any)
		if reflect.ValueOf(next).Pointer() == reflect.ValueOf(m).Pointer() {
			break
		}
		v = next
	}
	if depth != MaxDepth {
		t.Errorf("copied %d levels before sharing, want MaxDepth (%d)", depth, MaxDepth)
	}
}
