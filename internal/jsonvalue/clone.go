package jsonvalue

import (
	"maps"
	"slices"
)

// Clone copies the maps and slices of a JSON-shaped value (what agents put in agent_result,
// handoff and session state: maps, lists, strings, numbers, and the typed lists Go code builds
// them with), so that the copy shares none of them with v down to MaxDepth; below that, and
// for values of any other type, the copy shares v's. nil maps and lists stay nil.
func Clone(v any) any { return cloneAt(v, 0) }

// CloneMap is Clone for a map: a deep copy of m, nil for nil.
func CloneMap(m map[string]any) map[string]any { return cloneMapAt(m, 0) }

func cloneAt(v any, depth int) any {
	if depth > MaxDepth {
		return v
	}
	switch x := v.(type) {
	case map[string]any:
		return cloneMapAt(x, depth)
	case []any:
		if x == nil {
			return x
		}
		c := make([]any, len(x))
		for i, e := range x {
			c[i] = cloneAt(e, depth+1)
		}
		return c
	case []map[string]any:
		if x == nil {
			return x
		}
		c := make([]map[string]any, len(x))
		for i, e := range x {
			c[i] = cloneMapAt(e, depth+1)
		}
		return c
	case map[string]string:
		return maps.Clone(x)
	case []string:
		return slices.Clone(x)
	case []float64:
		return slices.Clone(x)
	case []int:
		return slices.Clone(x)
	}
	return v
}

func cloneMapAt(m map[string]any, depth int) map[string]any {
	if m == nil || depth > MaxDepth {
		return m
	}
	c := make(map[string]any, len(m))
	for k, v := range m {
		c[k] = cloneAt(v, depth+1)
	}
	return c
}
