package jsonvalue

import (
	"encoding"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// Finite reports whether v holds no NaN or infinity, which JSON cannot encode, in the values
// agents build results from: numbers, and maps, lists and arrays of any type and nesting, also
// behind pointers (map[string]any and []any as much as map[string]float64 or [][]float64).
// Structs, and values that encode themselves (json.Marshaler, encoding.TextMarshaler), are not
// looked into. It is the fast check; NonFinite says where.
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
	case map[string]float64:
		for _, e := range x {
			if math.IsNaN(e) || math.IsInf(e, 0) {
				return false
			}
		}
	case nil, string, bool, int, int64, json.Number:
		// The common leaves, spared the look at their kind below.
	default:
		// Other containers ([][]float64, []float32, map[string][]float64, pointers to them):
		// encoding/json writes their numbers as it writes these.
		return finiteValue(reflect.ValueOf(v), depth)
	}
	return true
}

// finiteValue is finiteAt for a value of a type finiteAt has no case for.
func finiteValue(rv reflect.Value, depth int) bool {
	if depth > MaxDepth || !lookInto(rv) {
		return true
	}
	switch rv.Kind() {
	case reflect.Float32, reflect.Float64:
		f := rv.Float()
		return !math.IsNaN(f) && !math.IsInf(f, 0)
	case reflect.Pointer, reflect.Interface:
		return finiteValue(rv.Elem(), depth+1)
	case reflect.Map:
		// One value to copy each element into: MapIter.Value would allocate a copy per element,
		// and MapRange the iterator.
		var it reflect.MapIter
		e := reflect.New(rv.Type().Elem()).Elem()
		for it.Reset(rv); it.Next(); {
			e.SetIterValue(&it)
			if !finiteValue(e, depth+1) {
				return false
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range rv.Len() {
			if !finiteValue(rv.Index(i), depth+1) {
				return false
			}
		}
	}
	return true
}

// lookInto reports whether rv may hold a number encoding/json writes as a number: a float, or
// a map, list, array, pointer or interface that can hold one (a []string cannot, and is not
// walked). Structs, nil pointers and values that encode themselves are not looked into.
func lookInto(rv reflect.Value) bool {
	switch rv.Kind() {
	case reflect.Pointer, reflect.Interface:
		if rv.IsNil() {
			return false
		}
	case reflect.Map, reflect.Slice, reflect.Array:
		if !mayHoldFloat(rv.Type().Elem()) {
			return false
		}
	case reflect.Float32, reflect.Float64:
	default:
		return false
	}
	t := rv.Type()
	return !t.Implements(marshalerType) && !t.Implements(textMarshalerType)
}

// mayHoldFloat reports whether a value of type t may be or hold a float.
func mayHoldFloat(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Float32, reflect.Float64, reflect.Interface, reflect.Pointer, reflect.Map, reflect.Slice, reflect.Array:
		return true
	}
	return false
}

var (
	marshalerType     = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
)

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
	case nil, string, bool, int, int64, json.Number:
	default:
		return nonFiniteValue(reflect.ValueOf(v), path, depth)
	}
	return "", ""
}

// nonFiniteValue is nonFiniteAt for a value of a type nonFiniteAt has no case for, as
// finiteValue looks into it; map keys are read as encoding/json writes them.
func nonFiniteValue(rv reflect.Value, path string, depth int) (string, string) {
	if depth > MaxDepth || !lookInto(rv) {
		return "", ""
	}
	switch rv.Kind() {
	case reflect.Float32, reflect.Float64:
		if f := rv.Float(); math.IsNaN(f) || math.IsInf(f, 0) {
			return path, numberText(f)
		}
	case reflect.Pointer, reflect.Interface:
		return nonFiniteValue(rv.Elem(), path, depth+1)
	case reflect.Map:
		keys := rv.MapKeys()
		names := make([]string, len(keys))
		for i, k := range keys {
			names[i] = keyText(k)
		}
		order := make([]int, len(keys))
		for i := range order {
			order[i] = i
		}
		slices.SortFunc(order, func(a, b int) int { return strings.Compare(names[a], names[b]) })
		for _, i := range order {
			p := names[i]
			if path != "" {
				p = path + "." + p
			}
			if p, t := nonFiniteValue(rv.MapIndex(keys[i]), p, depth+1); p != "" {
				return p, t
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range rv.Len() {
			if p, t := nonFiniteValue(rv.Index(i), path+"["+strconv.Itoa(i)+"]", depth+1); p != "" {
				return p, t
			}
		}
	}
	return "", ""
}

// keyText is a map key as encoding/json writes it: a string as it is, an integer in decimal,
// a TextMarshaler as its text.
func keyText(k reflect.Value) string {
	if k.Kind() == reflect.String {
		return k.String()
	}
	if tm, ok := k.Interface().(encoding.TextMarshaler); ok {
		if b, err := tm.MarshalText(); err == nil {
			return string(b)
		}
	}
	return fmt.Sprint(k.Interface())
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
	return encodableValue(reflect.ValueOf(v), depth)
}

// encodableValue is encodableAt for a value of a type encodableAt has no case for, which
// finiteValue found a NaN or an infinity in: a map becomes a map[string]any, a list or an
// array a []any, as encoding/json would write them.
func encodableValue(rv reflect.Value, depth int) any {
	if depth > MaxDepth || finiteValue(rv, depth) {
		return rv.Interface()
	}
	switch rv.Kind() {
	case reflect.Float32, reflect.Float64:
		return numberText(rv.Float())
	case reflect.Pointer, reflect.Interface:
		return encodableValue(rv.Elem(), depth+1)
	case reflect.Map:
		out := make(map[string]any, rv.Len())
		for it := rv.MapRange(); it.Next(); {
			out[keyText(it.Key())] = encodableValue(it.Value(), depth+1)
		}
		return out
	case reflect.Slice, reflect.Array:
		out := make([]any, rv.Len())
		for i := range out {
			out[i] = encodableValue(rv.Index(i), depth+1)
		}
		return out
	}
	return rv.Interface()
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
