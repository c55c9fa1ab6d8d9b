package jsonvalue

import "slices"

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
