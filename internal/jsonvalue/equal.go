// Package jsonvalue compares Go values as the JSON values they encode to: numbers by value
// whatever their Go type (1, int64(1), 1.0 and json.Number("1") are equal), strings and
// booleans exactly, arrays element by element and objects key by key. The aggregation of agent
// results and the routing of messages on session state both need exactly this comparison.
package jsonvalue

import (
	"bytes"
	"encoding"
	"encoding/base64"
	"encoding/json"
	"math"
	"math/big"
	"reflect"
	"strconv"
)

// MaxDepth bounds recursion into nested values. A self-referencing map would otherwise recurse
// forever; encoding/json gives up at a similar depth, so no JSON-shaped result goes deeper.
const MaxDepth = 1000

// Equal reports whether a and b encode to the same JSON value (see the package doc). NaN
// equals NaN; values encoding/json cannot encode compare with reflect.DeepEqual.
func Equal(a, b any) bool { return equalAt(a, b, 0) }

func equalAt(a, b any, depth int) bool {
	if depth > MaxDepth {
		return reflect.DeepEqual(a, b)
	}
	// Fast paths for what encoding/json decodes into; they avoid the conversions below.
	switch x := a.(type) {
	case string:
		if y, ok := b.(string); ok {
			return x == y
		}
	case float64:
		if y, ok := b.(float64); ok {
			return x == y || (math.IsNaN(x) && math.IsNaN(y))
		}
	case bool:
		if y, ok := b.(bool); ok {
			return x == y
		}
	}
	if x, ok := toNumber(a); ok {
		if y, ok := toNumber(b); ok {
			return x.equal(y)
		}
	}
	a, b = jsonValue(a), jsonValue(b)
	switch x := a.(type) {
	case nil:
		return b == nil
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case string:
		y, ok := b.(string)
		return ok && x == y
	case number:
		y, ok := b.(number)
		return ok && x.equal(y)
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equalAt(x[i], y[i], depth+1) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x { // order does not matter: the answer is the same either way
			yv, ok := y[k]
			if !ok || !equalAt(xv, yv, depth+1) {
				return false
			}
		}
		return true
	case opaque:
		y, ok := b.(opaque)
		return ok && reflect.DeepEqual(x.v, y.v)
	}
	return false
}

// opaque wraps a value encoding/json cannot encode; such values compare with reflect.DeepEqual.
type opaque struct{ v any }

// jsonValue returns v as one of nil, bool, string, number, []any, map[string]any or opaque,
// converting as encoding/json would encode it. Elements of []any and map[string]any are
// converted lazily by the caller.
func jsonValue(v any) any {
	if n, ok := toNumber(v); ok {
		return n
	}
	switch x := v.(type) {
	case nil, bool, string, number, opaque:
		return v // v, not x: boxing x again would allocate
	case map[string]any:
		if x == nil {
			return nil
		}
		return v
	case []any:
		if x == nil {
			return nil
		}
		return v
	case json.Number:
		return string(x) // not a JSON number (toNumber took the rest): compare as a string
	case []byte:
		if x == nil {
			return nil
		}
		return base64.StdEncoding.EncodeToString(x)
	case json.Marshaler, encoding.TextMarshaler:
		return viaJSON(v)
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer, reflect.Interface:
		if rv.IsNil() {
			return nil
		}
		return jsonValue(rv.Elem().Interface())
	case reflect.Bool:
		return rv.Bool()
	case reflect.String:
		return rv.String()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return number{k: numInt, i: rv.Int()}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return uintNumber(rv.Uint())
	case reflect.Float32:
		return number{k: numFloat, f: float32Value(rv.Float())} // a named float32, as float32 is
	case reflect.Float64:
		return number{k: numFloat, f: rv.Float()}
	case reflect.Slice:
		if rv.IsNil() {
			return nil
		}
		if rv.Type().Elem().Kind() == reflect.Uint8 {
			return base64.StdEncoding.EncodeToString(rv.Bytes())
		}
		return sliceOf(rv)
	case reflect.Array:
		return sliceOf(rv)
	case reflect.Map:
		if rv.Type().Key().Kind() != reflect.String {
			return viaJSON(v)
		}
		if rv.IsNil() {
			return nil
		}
		m := make(map[string]any, rv.Len())
		for it := rv.MapRange(); it.Next(); {
			m[it.Key().String()] = it.Value().Interface()
		}
		return m
	}
	return viaJSON(v)
}

func sliceOf(rv reflect.Value) []any {
	s := make([]any, rv.Len())
	for i := range s {
		s[i] = rv.Index(i).Interface()
	}
	return s
}

// viaJSON encodes v and decodes it back, for structs, marshalers and maps with non-string keys.
func viaJSON(v any) any {
	data, err := json.Marshal(v)
	if err != nil {
		return opaque{v}
	}
	var out any
	if err := decodeUseNumber(data, &out); err != nil {
		return opaque{v}
	}
	return jsonValue(out)
}

func decodeUseNumber(data []byte, out *any) error {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	return d.Decode(out)
}

type numKind uint8

const (
	numInt   numKind = iota // i holds the value
	numUint                 // u holds a value above math.MaxInt64
	numFloat                // f holds the value
	numBig                  // b holds an integer beyond 64 bits
)

// number is a JSON number held exactly as its Go value was.
type number struct {
	k numKind
	i int64
	u uint64
	f float64
	b *big.Int
}

func uintNumber(u uint64) number {
	if u <= math.MaxInt64 {
		return number{k: numInt, i: int64(u)}
	}
	return number{k: numUint, u: u}
}

func (x number) equal(y number) bool {
	if x.k == y.k {
		switch x.k {
		case numInt:
			return x.i == y.i
		case numUint:
			return x.u == y.u
		case numFloat:
			return x.f == y.f || (math.IsNaN(x.f) && math.IsNaN(y.f))
		default:
			return x.b.Cmp(y.b) == 0
		}
	}
	if x.nonFinite() || y.nonFinite() {
		return false // only a float is NaN or infinite, and it is not the same kind as the other
	}
	return x.exact().Cmp(y.exact()) == 0
}

func (x number) nonFinite() bool {
	return x.k == numFloat && (math.IsNaN(x.f) || math.IsInf(x.f, 0))
}

// exact returns x as a big.Float holding its value without rounding.
func (x number) exact() *big.Float {
	switch x.k {
	case numInt:
		return new(big.Float).SetInt64(x.i)
	case numUint:
		return new(big.Float).SetUint64(x.u)
	case numFloat:
		return new(big.Float).SetFloat64(x.f)
	default:
		return new(big.Float).SetInt(x.b)
	}
}

// toNumber converts the Go number types and valid json.Numbers without reflection or
// allocation; other kinds of numbers (named types) go through jsonValue's reflection.
func toNumber(v any) (number, bool) {
	switch x := v.(type) {
	case float64:
		return number{k: numFloat, f: x}, true
	case int:
		return number{k: numInt, i: int64(x)}, true
	case int64:
		return number{k: numInt, i: x}, true
	case json.Number:
		return parseNumber(x)
	case float32:
		return number{k: numFloat, f: float32Value(float64(x))}, true
	case int32:
		return number{k: numInt, i: int64(x)}, true
	case int16:
		return number{k: numInt, i: int64(x)}, true
	case int8:
		return number{k: numInt, i: int64(x)}, true
	case uint:
		return uintNumber(uint64(x)), true
	case uint64:
		return uintNumber(x), true
	case uint32:
		return number{k: numInt, i: int64(x)}, true
	case uint16:
		return number{k: numInt, i: int64(x)}, true
	case uint8:
		return number{k: numInt, i: int64(x)}, true
	}
	return number{}, false
}

// parseNumber reads a json.Number: integers exactly, anything with a fraction or exponent as
// encoding/json would decode it into an any (float64). It reports false for a string that is
// not a JSON number, which then compares as a string.
func parseNumber(n json.Number) (number, bool) {
	s := string(n)
	if !isJSONNumber(s) {
		return number{}, false
	}
	if isInteger(s) {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return number{k: numInt, i: i}, true
		}
		if u, err := strconv.ParseUint(s, 10, 64); err == nil {
			return uintNumber(u), true
		}
		b, _ := new(big.Int).SetString(s, 10)
		return number{k: numBig, b: b}, true
	}
	f, _ := strconv.ParseFloat(s, 64) // out of range gives ±Inf, as close as float64 gets
	return number{k: numFloat, f: f}, true
}

func isInteger(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '.' || c == 'e' || c == 'E' {
			return false
		}
	}
	return true
}

// isJSONNumber reports whether s is a number in JSON's grammar (RFC 8259 section 6).
func isJSONNumber(s string) bool {
	if s == "" {
		return false
	}
	if s[0] == '-' {
		s = s[1:]
		if s == "" {
			return false
		}
	}
	switch {
	case s[0] == '0':
		s = s[1:]
	case '1' <= s[0] && s[0] <= '9':
		s = skipDigits(s[1:])
	default:
		return false
	}
	if len(s) >= 2 && s[0] == '.' && isDigit(s[1]) {
		s = skipDigits(s[2:])
	}
	if len(s) >= 2 && (s[0] == 'e' || s[0] == 'E') {
		s = s[1:]
		if s[0] == '+' || s[0] == '-' {
			s = s[1:]
			if s == "" {
				return false
			}
		}
		if !isDigit(s[0]) {
			return false
		}
		s = skipDigits(s)
	}
	return s == ""
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func skipDigits(s string) string {
	for s != "" && isDigit(s[0]) {
		s = s[1:]
	}
	return s
}

// AsObject returns the JSON object v encodes to, when it encodes to one that is not null: v
// itself for a map[string]any; for a map of another type with string keys (map[string]int, the
// []string map a vote tally is) a map[string]any holding its values; for a struct or a value
// that encodes itself, its JSON decoded, numbers as json.Number. A consumer that walks objects
// (aggregation comparing results field by field) so sees a value Go code built as it sees the
// value decoded from the JSON of a recorded log.
func AsObject(v any) (map[string]any, bool) {
	switch x := v.(type) {
	case map[string]any:
		return x, x != nil
	case nil, string, bool, float64, int, int64, []any:
		return nil, false
	}
	m, ok := jsonValue(v).(map[string]any)
	return m, ok && m != nil
}

// float32Value is the JSON value of a float32 (held in f): encoding/json writes a float32 as its
// shortest 32-bit decimal (float32(0.1) as 0.1), so that decimal, read as a float64, is it.
func float32Value(f float64) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(f, 'g', -1, 32), 64)
	return v
}
