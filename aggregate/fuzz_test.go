package aggregate_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/aggregate"
)

func conflicts(a, b any) bool {
	return len(aggregate.DetectConflicts([]*troupe.Result{
		result("a", map[string]any{"v": a}),
		result("b", map[string]any{"v": b}),
	})) > 0
}

// validNumber reports whether encoding/json reads s, whole, as a number.
func validNumber(s string) bool {
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return false
	}
	n, ok := v.(json.Number)
	return ok && string(n) == s
}

// FuzzNumberEquality checks the json.Number reading behind conflict detection: equality is
// reflexive and symmetric, decimals compare as encoding/json decodes them, and strings that
// are not JSON numbers compare as strings.
func FuzzNumberEquality(f *testing.F) {
	for _, s := range [][2]string{
		{"1", "1.0"}, {"1e0", "10e-1"}, {"-0", "0"}, {"0.1", "0.10"}, {"9007199254740993", "9007199254740992"},
		{"abc", "1"}, {"01", "1"}, {"1.", "1"}, {"-", "-1"}, {"1e400", "1e401"}, {"1E+2", "100.0"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		na, nb := json.Number(a), json.Number(b)
		if conflicts(na, na) {
			t.Errorf("json.Number(%q) conflicts with itself", a)
		}
		if ab, ba := conflicts(na, nb), conflicts(nb, na); ab != ba {
			t.Errorf("conflict(%q, %q) = %v but conflict(%q, %q) = %v", a, b, ab, b, a, ba)
		}
		decimal := func(s string) bool { return strings.ContainsAny(s, ".eE") }
		var fa, fb float64
		if validNumber(a) && validNumber(b) && decimal(a) && decimal(b) &&
			json.Unmarshal([]byte(a), &fa) == nil && json.Unmarshal([]byte(b), &fb) == nil {
			if got, want := conflicts(na, nb), fa != fb; got != want {
				t.Errorf("conflict(%q, %q) = %v, want %v (encoding/json reads %v and %v)", a, b, got, want, fa, fb)
			}
		}
		if !validNumber(a) && conflicts(na, a) {
			t.Errorf("json.Number(%q), not a number, conflicts with the string %q", a, a)
		}
	})
}
