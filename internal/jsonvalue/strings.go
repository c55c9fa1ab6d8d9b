package jsonvalue

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// Strings reads a list of strings as Go code writes one ([]string) or encoding/json decodes
// one ([]any holding only strings), into a new slice the caller owns. ok is false for
// anything else, a list holding a non-string included.
func Strings(v any) (_ []string, ok bool) {
	switch l := v.(type) {
	case []string:
		return slices.Clone(l), true
	case []any:
		out := make([]string, len(l))
		for i, e := range l {
			s, ok := e.(string)
			if !ok {
				return nil, false
			}
			out[i] = s
		}
		return out, true
	}
	return nil, false
}

// StringOrStrings reads a value that is one string or a list of them, as Strings reads a list;
// one string is a list of it, and "" a list of none.
func StringOrStrings(v any) (_ []string, ok bool) {
	switch s, ok := v.(string); {
	case !ok:
		return Strings(v)
	case s == "":
		return []string{}, true
	default:
		return []string{s}, true
	}
}

// Brief is v as JSON, or as fmt prints it when it has none, cut to n characters (runes), the
// last of them "…" when cut: a value quoted in a message, which may be a whole result. An n
// under 1 is taken as 1: a cut value is at least its "…".
func Brief(v any, n int) string {
	n = max(n, 1)
	s := fmt.Sprint(v)
	if b, err := json.Marshal(v); err == nil {
		s = string(b)
	}
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimRight(string(r[:n-1]), " ") + "…"
}
