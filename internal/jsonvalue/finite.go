package jsonvalue

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
)

// Finite reports whether v holds no NaN or infinity, which JSON cannot encode, in the values
// agents build results from: numbers, and maps and lists of any nesting (map[string]any,
// []any, []float64, []map[string]any). Values of other types are not looked into. It is the
// fast check; NonFinite says where.
func Finite(v any) bool { return finiteAt(v, 0) }

// FiniteAt is Finite for v found depth levels down a value Finite was not asked about (a
// value in a top-level map is at depth 1): a walk of its own that meets v gives the same
// answer as Finite over the whole, looking no deeper than MaxDepth from the top.
func FiniteAt(v any, depth int) bool { return finiteAt(v, depth) }

func finiteAt(v any, depth int) bool {
	if depth > MaxDepth {
		return true
	}
	switch x := v.(type) {
	case float64:
		return !math.IsNaN(x) && !math.IsInf(x, 0)
	case float32:
		return !math.IsNaN(float64(x)) && !math.IsInf(float64(x), 0)
	case map[string]any:
		for _, e := range x {
			if !finiteAt(e, depth+1) {
				return false
			}
		}
	case []any:
		for _, e := range x {
			if !finiteAt(e, depth+1) {
				return false
			}
		}
	case []float64:
		for _, e := range x {
			if math.IsNaN(e) || math.IsInf(e, 0) {
				return false
			}
		}
	case []map[string]any:
		for _, e := range x {
			if !finiteAt(e, depth+1) {
				return false
			}
		}
	}
	return true
}

// NonFinite returns the path of the first NaN or infinity in v (keys in sorted order, list
// items by index: "effect.ci[1]"), prefixed by prefix, and the value's text ("NaN", "+Inf"),
// or "", "" when v is Finite.
func NonFinite(v any, prefix string) (path, text string) {
	return nonFiniteAt(v, prefix, 0)
}

func nonFiniteAt(v any, path string, depth int) (string, string) {
	if depth > MaxDepth {
		return "", ""
	}
	item := func(i int) string { return path + "[" + strconv.Itoa(i) + "]" }
	switch x := v.(type) {
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return path, numberText(x)
		}
	case float32:
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return path, numberText(float64(x))
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			p := k
			if path != "" {
				p = path + "." + k
			}
			if p, t := nonFiniteAt(x[k], p, depth+1); p != "" {
				return p, t
			}
		}
	case []any:
		for i, e := range x {
			if p, t := nonFiniteAt(e, item(i), depth+1); p != "" {
				return p, t
			}
		}
	case []float64:
		for i, e := range x {
			if math.IsNaN(e) || math.IsInf(e, 0) {
				return item(i), numberText(e)
			}
		}
	case []map[string]any:
		for i, e := range x {
			if p, t := nonFiniteAt(e, item(i), depth+1); p != "" {
				return p, t
			}
		}
	}
	return "", ""
}

// Encodable returns v with every NaN and infinity Finite would find replaced by its text
// ("NaN", "+Inf", "-Inf"), copying only the maps and lists on the way to one; v itself is not
// modified. A result recorded as invalid for holding one keeps what the agent said, in a form
// its log can encode.
func Encodable(v any) any {
	if Finite(v) {
		return v
	}
	return encodableAt(v, 0)
}

func encodableAt(v any, depth int) any {
	if depth > MaxDepth || finiteAt(v, depth) {
		return v
	}
	switch x := v.(type) {
	case float64:
		return numberText(x)
	case float32:
		return numberText(float64(x))
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = encodableAt(e, depth+1)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = encodableAt(e, depth+1)
		}
		return out
	case []float64:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = encodableAt(e, depth+1)
		}
		return out
	case []map[string]any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = encodableAt(e, depth+1)
		}
		return out
	}
	return v
}

func numberText(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "+Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	}
	return "NaN"
}

// EncodeOutput makes an agent's output, its agent_result and handoff, encodable when Finite
// finds a NaN or an infinity in either: each such number becomes its text, in copies of the
// maps on the way to it (the agent's own maps are not modified). It returns what to say of
// agent's output, where the first such number was and what it was, or "" when there was none
// and nothing changed. Engines and composites record such an output as invalid.
func EncodeOutput(agent string, result, handoff *map[string]any) string {
	path, text := NonFinite(*result, "agent_result")
	if path == "" {
		if path, text = NonFinite(*handoff, "handoff"); path == "" {
			return ""
		}
	}
	for _, m := range []*map[string]any{result, handoff} {
		if v, ok := Encodable(*m).(map[string]any); ok {
			*m = v
		}
	}
	return fmt.Sprintf("output of %s: %s is %s, which JSON cannot encode (kept as the text %q)", agent, path, text, text)
}
