package bundle

import (
	"encoding/json"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/troupehq/troupe/internal/jsonvalue"
)

// maxDepth bounds recursion into nested values; deeper than this, values are compared as
// equal or not.
const maxDepth = 64

// Distance returns how far apart two JSON values are, in [0, 1]: 0 for equal values, 1 for
// values of different kinds or a value against a missing one. It is symmetric and
// deterministic. With the schema's annotations (see Schema) the kinds compare as follows:
//
//   - numbers: |a−b| / (maximum−minimum) when the schema gives both bounds, else
//     |a−b| / max(|a|, |b|) (the relative difference), clamped to 1;
//   - strings, booleans, null: 0 when equal, 1 when not (a disagreement flag); "text" fields
//     use the Jaccard distance of their lower-cased words;
//   - arrays whose elements are all scalars, and "set" or uniqueItems arrays: the Jaccard
//     distance 1 − |A∩B| / |A∪B| of their elements (multi-valued categoricals);
//   - other arrays and "sequence" arrays: the mean distance position by position over the
//     longer length, a missing position counting 1;
//   - objects: the mean of the property distances over the union of keys, weighted by
//     x-weight (default 1), a property missing on one side counting 1.
func Distance(a, b any, s *Schema) float64 {
	var root *node
	if s != nil {
		root = s.root
	}
	return dist(a, b, root, 0, nil)
}

func dist(a, b any, n *node, depth int, kc keyCache) float64 {
	if n == nil {
		n = defaultNode
	}
	if depth > maxDepth {
		return flag(equalJSON(a, b))
	}
	if x, ok := number(a); ok {
		y, ok := number(b)
		if !ok {
			return 1
		}
		if n.mode == "categorical" {
			return flag(x == y)
		}
		return numDist(x, y, n)
	}
	switch x := a.(type) {
	case string:
		y, ok := b.(string)
		if !ok {
			return 1
		}
		if n.mode == "text" {
			return textDist(x, y)
		}
		return flag(x == y)
	case bool:
		y, ok := b.(bool)
		return flag(ok && x == y)
	case nil:
		return flag(b == nil)
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok {
			return 1
		}
		return objDist(x, y, n, depth, kc)
	case []any:
		y, ok := b.([]any)
		if !ok {
			return 1
		}
		if isSet(x, y, n) {
			return jaccard(x, y)
		}
		return seqDist(x, y, n, depth, kc)
	}
	return flag(equalJSON(a, b))
}

func flag(equal bool) float64 {
	if equal {
		return 0
	}
	return 1
}

func numDist(x, y float64, n *node) float64 {
	if x == y {
		return 0
	}
	if math.IsNaN(x) || math.IsNaN(y) || math.IsInf(x, 0) || math.IsInf(y, 0) {
		return 1
	}
	var d float64
	if n.bounded {
		d = math.Abs(x-y) / (n.max - n.min)
	} else {
		d = math.Abs(x-y) / math.Max(math.Abs(x), math.Abs(y))
	}
	if !(d <= 1) { // also NaN from an overflowed difference
		return 1
	}
	return d
}

func objDist(x, y map[string]any, n *node, depth int, kc keyCache) float64 {
	if len(x) == 0 && len(y) == 0 {
		return 0
	}
	var sum, total float64
	add := func(k string, d float64) {
		if c := n.prop(k); c.weight != 0 {
			if d < 0 {
				d = dist(x[k], y[k], c, depth+1, kc)
			}
			sum += c.weight * d
			total += c.weight
		}
	}
	// Walk the union of keys in sorted order, merging both sides' sorted keys, so the sum is
	// the same whichever side is a.
	xs, ys := kc.sorted(x), kc.sorted(y)
	i, j := 0, 0
	for i < len(xs) || j < len(ys) {
		switch {
		case j == len(ys) || i < len(xs) && xs[i] < ys[j]:
			add(xs[i], 1) // only in x
			i++
		case i == len(xs) || ys[j] < xs[i]:
			add(ys[j], 1) // only in y
			j++
		default:
			add(xs[i], -1) // in both: compare
			i++
			j++
		}
	}
	if total == 0 {
		return 0
	}
	return clamp01(sum / total)
}

// keyCache remembers the sorted keys of objects compared many times (each replicate's objects
// meet every other replicate's); nil sorts every time.
type keyCache map[uintptr][]string

func (kc keyCache) sorted(m map[string]any) []string {
	var id uintptr
	if kc != nil {
		id = reflect.ValueOf(m).Pointer()
		if ks, ok := kc[id]; ok {
			return ks
		}
	}
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	if kc != nil {
		kc[id] = ks
	}
	return ks
}

func unionKeys(x, y map[string]any) []string {
	keys := make([]string, 0, len(x)+len(y))
	for k := range x {
		keys = append(keys, k)
	}
	for k := range y {
		if _, ok := x[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

func seqDist(x, y []any, n *node, depth int, kc keyCache) float64 {
	l := max(len(x), len(y))
	if l == 0 {
		return 0
	}
	it := n.item()
	var sum float64
	for i := range l {
		if i < len(x) && i < len(y) {
			sum += dist(x[i], y[i], it, depth+1, kc)
		} else {
			sum++
		}
	}
	return clamp01(sum / float64(l))
}

// isSet decides whether two arrays compare as sets; the rule looks at both sides alike, so
// the distance stays symmetric.
func isSet(x, y []any, n *node) bool {
	switch n.mode {
	case "set", "categorical", "text":
		return true
	case "sequence":
		return false
	}
	return allScalar(x) && allScalar(y)
}

func allScalar(v []any) bool {
	for _, e := range v {
		switch e.(type) {
		case map[string]any, []any:
			return false
		}
	}
	return true
}

func jaccard(x, y []any) float64 {
	if len(x) == 0 && len(y) == 0 {
		return 0
	}
	if len(x)*len(y) > 256 {
		return jaccardHashed(x, y)
	}
	// Small sets (the common case) compare element by element without allocating.
	distinctX, distinctY, inter := 0, 0, 0
	for i, e := range x {
		if indexOf(x[:i], e) >= 0 {
			continue
		}
		distinctX++
		if indexOf(y, e) >= 0 {
			inter++
		}
	}
	for i, e := range y {
		if indexOf(y[:i], e) < 0 {
			distinctY++
		}
	}
	return 1 - float64(inter)/float64(distinctX+distinctY-inter)
}

func indexOf(s []any, v any) int {
	for i, e := range s {
		if sameElement(e, v) {
			return i
		}
	}
	return -1
}

// sameElement is set membership: JSON values equal as JSON (numbers by value).
func sameElement(a, b any) bool { return jsonvalue.Equal(a, b) }

func jaccardHashed(x, y []any) float64 {
	xs := make(map[string]struct{}, len(x))
	for _, e := range x {
		xs[key(e)] = struct{}{}
	}
	ys := make(map[string]struct{}, len(y))
	for _, e := range y {
		ys[key(e)] = struct{}{}
	}
	inter := 0
	for k := range xs {
		if _, ok := ys[k]; ok {
			inter++
		}
	}
	return 1 - float64(inter)/float64(len(xs)+len(ys)-inter)
}

func textDist(x, y string) float64 {
	if x == y {
		return 0
	}
	words := func(s string) []any {
		f := strings.Fields(strings.ToLower(s))
		out := make([]any, len(f))
		for i, w := range f {
			out[i] = w
		}
		return out
	}
	return jaccard(words(x), words(y))
}

// key is a canonical text of a value: numbers by value whatever their Go type, strings
// distinguished from the numbers and literals they spell, containers as canonical JSON.
func key(v any) string {
	if f, ok := number(v); ok {
		if f == 0 {
			f = 0 // −0 is the same element as 0
		}
		return "n" + strconv.FormatFloat(f, 'g', -1, 64)
	}
	switch x := v.(type) {
	case string:
		return "s" + x
	case bool:
		return "b" + strconv.FormatBool(x)
	case nil:
		return "z"
	}
	return "j" + canonical(v, 0)
}

// canonical encodes v as JSON with sorted keys and numbers by value.
func canonical(v any, depth int) string {
	var sb strings.Builder
	writeCanonical(&sb, v, depth)
	return sb.String()
}

func writeCanonical(sb *strings.Builder, v any, depth int) {
	if depth > maxDepth {
		sb.WriteString("…")
		return
	}
	if f, ok := number(v); ok {
		sb.WriteString(strconv.FormatFloat(f, 'g', -1, 64))
		return
	}
	switch x := v.(type) {
	case bool:
		sb.WriteString(strconv.FormatBool(x))
	case nil:
		sb.WriteString("null")
	case map[string]any:
		sb.WriteByte('{')
		for i, k := range slices.Sorted(maps.Keys(x)) {
			if i > 0 {
				sb.WriteByte(',')
			}
			sb.WriteString(strconv.Quote(k))
			sb.WriteByte(':')
			writeCanonical(sb, x[k], depth+1)
		}
		sb.WriteByte('}')
	case []any:
		sb.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				sb.WriteByte(',')
			}
			writeCanonical(sb, e, depth+1)
		}
		sb.WriteByte(']')
	default:
		b, err := json.Marshal(v)
		if err != nil {
			sb.WriteString(strconv.Quote(err.Error()))
			return
		}
		sb.Write(b)
	}
}

func equalJSON(a, b any) bool { return jsonvalue.Equal(a, b) }

func clamp01(x float64) float64 {
	switch {
	case !(x >= 0): // NaN too
		return 0
	case x > 1:
		return 1
	}
	return x
}
