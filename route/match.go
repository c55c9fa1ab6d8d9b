package route

import (
	"bytes"
	"encoding"
	"encoding/json"
	"maps"
	"math"
	"math/big"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// normalize prepares text for pattern matching: every rune is case-folded (to the smallest
// rune of its Unicode fold orbit, so "K", "k" and the Kelvin sign are one letter), apostrophe
// look-alikes become ', and runs of white space become one space, trimmed at both ends. The
// result is valid UTF-8 even when s is not.
func normalize(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for _, r := range s {
		switch {
		case unicode.IsSpace(r):
			space = b.Len() > 0
			continue
		case isApostrophe(r):
			r = '\''
		default:
			r = fold(r)
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	return b.String()
}

// isApostrophe reports whether r is typed for an apostrophe: phones and word processors turn
// "what's" into "what’s", and a trigger for one must match the other.
func isApostrophe(r rune) bool {
	switch r {
	case '\'', '\u2018', '\u2019', '\u201B', '\u02BC', '\u2032', '\uFF07':
		return true
	}
	return false
}

func fold(r rune) rune {
	least := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		least = min(least, f)
	}
	return least
}

func isWord(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.IsMark(r)
}

// containsWords reports whether pattern occurs in text at word boundaries; both are
// normalized. As with a regexp's \b, the boundary is checked only on a side where the pattern
// ends in a word character: "why" is not found in "somewhy", "next?" needs nothing after it.
func containsWords(text, pattern string) bool {
	if pattern == "" {
		return false
	}
	first, _ := utf8.DecodeRuneInString(pattern)
	last, _ := utf8.DecodeLastRuneInString(pattern)
	for from := 0; from < len(text); {
		i := strings.Index(text[from:], pattern)
		if i < 0 {
			return false
		}
		start, end := from+i, from+i+len(pattern)
		before, _ := utf8.DecodeLastRuneInString(text[:start])
		after, _ := utf8.DecodeRuneInString(text[end:])
		if (!isWord(first) || start == 0 || !isWord(before)) &&
			(!isWord(last) || end == len(text) || !isWord(after)) {
			return true
		}
		_, size := utf8.DecodeRuneInString(text[start:])
		from = start + size
	}
	return false
}

// maxDepth bounds how deeply nested a compared value may be; it turns a self-containing map
// or slice into "not equal" instead of a stack overflow.
const maxDepth = 64

// jsonEqual reports whether a and b encode to the same JSON value: numbers compare by value
// (1, int64(1), 1.0 and json.Number("1") are equal), strings and booleans exactly, objects
// key by key. Values with no JSON encoding (NaN, functions, channels) equal nothing.
func jsonEqual(a, b any) bool {
	ca, ok := canonical(a, 0)
	if !ok {
		return false
	}
	cb, ok := canonical(b, 0)
	return ok && canonicalEqual(ca, cb)
}

// canonical converts v to nil, bool, string, *big.Rat, []any or map[string]any.
func canonical(v any, depth int) (any, bool) {
	if depth > maxDepth {
		return nil, false
	}
	switch x := v.(type) {
	case nil:
		return nil, true
	case json.Number:
		return new(big.Rat).SetString(string(x))
	case map[string]any:
		out := make(map[string]any, len(x))
		for _, k := range slices.Sorted(maps.Keys(x)) {
			c, ok := canonical(x[k], depth+1)
			if !ok {
				return nil, false
			}
			out[k] = c
		}
		return out, true
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			c, ok := canonical(e, depth+1)
			if !ok {
				return nil, false
			}
			out[i] = c
		}
		return out, true
	case json.Marshaler, encoding.TextMarshaler:
		return viaJSON(v, depth)
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Bool:
		return rv.Bool(), true
	case reflect.String:
		return rv.String(), true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return new(big.Rat).SetInt64(rv.Int()), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return new(big.Rat).SetUint64(rv.Uint()), true
	case reflect.Float32, reflect.Float64:
		f := rv.Float()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, false
		}
		bits := 64
		if rv.Kind() == reflect.Float32 {
			bits = 32 // float32(0.1) encodes as 0.1, so compare the shortest decimal, as JSON does
		}
		return new(big.Rat).SetString(strconv.FormatFloat(f, 'g', -1, bits))
	}
	return viaJSON(v, depth)
}

// viaJSON canonicalizes what a store would see: the value encoded and decoded again.
func viaJSON(v any, depth int) (any, bool) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		return nil, false
	}
	return canonical(out, depth+1)
}

func canonicalEqual(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case string:
		y, ok := b.(string)
		return ok && x == y
	case *big.Rat:
		y, ok := b.(*big.Rat)
		return ok && x.Cmp(y) == 0
	case []any:
		y, ok := b.([]any)
		return ok && slices.EqualFunc(x, y, canonicalEqual)
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for _, k := range slices.Sorted(maps.Keys(x)) {
			e, ok := y[k]
			if !ok || !canonicalEqual(x[k], e) {
				return false
			}
		}
		return true
	}
	return false
}

// jsonText renders a When value for a reason sentence.
func jsonText(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return "(not JSON)"
	}
	return string(data)
}
