package config_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/troupehq/troupe/config"
)

// laughs is a "billion laughs": ten levels of an anchor aliased ten times each, 10^10
// values once expanded, in a few hundred bytes.
func laughs() string {
	var b strings.Builder
	b.WriteString("version: 1\nagents: {a: {kind: builtin}}\nx0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 10; i++ {
		fmt.Fprintf(&b, "x%d: &a%d [", i, i)
		for j := range 10 {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*a%d", i-1)
		}
		b.WriteString("]\n")
	}
	return b.String()
}

// lines is n lines made by format from their index.
func lines(n int, format string) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, format, i)
	}
	return b.String()
}

// TestParseBounds feeds Parse inputs that once took it minutes or gigabytes: each must be
// refused with one problem that says where and which bound.
func TestParseBounds(t *testing.T) {
	t.Parallel()
	longKey := strings.Repeat("k", 20_000)
	tests := []struct {
		name string
		src  string
		want string // a problem Parse must report, whole or its end
	}{
		{"billion laughs", laughs(), "t.yaml:7:45: x4[7]: alias *a3 expands too far: the document holds more than 100000 values, aliases expanded"},
		{"alias repeated", "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: [" + strings.Repeat("*a, ", 10_000) + "]\n",
			"t.yaml:2:33333: b[8332]: alias *a expands too far: the document holds more than 100000 values, aliases expanded"},
		{"alias nested", "a: &a " + strings.Repeat("[", 20) + "x" + strings.Repeat("]", 20) + "\nc: " + strings.Repeat("[", 190) + "*a" + strings.Repeat("]", 190) + "\n",
			": alias *a expands too far: collections nest more than 200 deep, aliases expanded"},
		{"long keys nested deep", "x: " + strings.Repeat("{"+longKey+": ", 150) + "1" + strings.Repeat("}", 150) + "\n",
			": the document's field paths are more than 32 MiB in all (long keys nested deep)"},
		{"long keys aliased", "x: &a " + strings.Repeat("{"+longKey[:2000]+": ", 100) + "1" + strings.Repeat("}", 100) + "\ny: [*a, *a, *a, *a, *a]\n",
			"t.yaml:2:13: y[2]: alias *a expands too far: the document's field paths are more than 32 MiB in all (long keys nested deep), aliases expanded"},
		{"flow nesting", strings.Repeat("[", 1_000_000), "t.yaml:1:201: collections nest more than 200 deep"},
		{"flow mapping nesting", strings.Repeat("{a: ", 500_000), "t.yaml:1:801: collections nest more than 200 deep"},
		{"compact sequences", strings.Repeat("- ", 1_000_000), "t.yaml:1:401: collections nest more than 200 deep"},
		{"many keys", lines(100_000, "k%d: 1\n"), "t.yaml:5001:1: a mapping holds more than 5000 keys"},
		{"many nested keys", "version: 1\nagents:\n" + lines(10_000, "  a%d: {kind: builtin}\n"), "t.yaml:5003:3: a mapping holds more than 5000 keys"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := parseErrs(t, tt.src)
			if !slices.ContainsFunc(got, func(g string) bool { return strings.HasSuffix(g, tt.want) }) {
				t.Errorf("problems %q\ndo not include %q", trim(got), tt.want)
			}
		})
	}
}

func trim(ss []string) []string {
	var out []string
	for _, s := range ss {
		if len(s) > 300 {
			s = s[:300] + "…"
		}
		out = append(out, s)
	}
	return out
}

// BenchmarkParseBillionLaughs rejects a 600-byte file whose aliases expand to 10^10 values:
// the cost is that of reading up to the bound (100000 values), not of the expansion.
func BenchmarkParseBillionLaughs(b *testing.B) {
	data := []byte(laughs())
	b.ReportAllocs()
	for b.Loop() {
		if _, err := config.Parse("t.yaml", data); err == nil {
			b.Fatal("no error")
		}
	}
}
