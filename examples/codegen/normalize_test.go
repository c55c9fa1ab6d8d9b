package codegen_test

import (
	"strings"
	"testing"

	"github.com/troupehq/troupe/examples/codegen"
)

// TestNormalize: implementations that are the same program up to presentation share their
// canonical form; any difference in what they compute, call or name in their interface does
// not.
func TestNormalize(t *testing.T) {
	tests := []struct {
		name string
		same bool
		a, b string
	}{
		{"names, comments and layout", true,
			"package sum\n\n// Sum adds.\nfunc Sum(xs []int) int {\n\ttotal := 0\n\tfor _, x := range xs {\n\t\ttotal += x\n\t}\n\n\treturn total\n}\n",
			"package main\nfunc Sum(nums []int) (int) { s := 0 /* acc */; for _, n := range nums { s += n }; return s }"},
		{"a fence and no package clause", true,
			"```go\nfunc Twice(n int) int { return 2 * n }\n```",
			"package x\n\nfunc Twice(v int) int {\n\treturn 2 * v\n}"},
		{"import order", true,
			"package p\nimport (\"strings\"\n\"fmt\")\nfunc F(s string) string { return fmt.Sprint(strings.ToUpper(s)) }",
			"package p\nimport \"fmt\"\nimport \"strings\"\nfunc F(in string) string { return fmt.Sprint(strings.ToUpper(in)) }"},
		{"receiver, results and labels", true,
			"package p\ntype T struct{ N int }\nfunc (t T) Get() (n int) { outer: for { n = t.N; break outer }; return }",
			"package p\ntype T struct{ N int }\nfunc (recv T) Get() (res int) { L: for { res = recv.N; break L }; return }"},
		{"fields and selectors keep their names", true,
			"package p\ntype P struct{ X int }\nfunc F(X int) P { q := P{X: X}; return P{X: q.X} }",
			"package p\ntype P struct{ X int }\nfunc F(a int) P { b := P{X: a}; return P{X: b.X} }"},
		{"another algorithm", false,
			"func Sum(xs []int) int { t := 0; for _, x := range xs { t += x }; return t }",
			"func Sum(xs []int) int { t := 0; for i := 0; i < len(xs); i++ { t += xs[i] }; return t }"},
		{"another function name", false,
			"func Sum(xs []int) int { return len(xs) }", "func Count(xs []int) int { return len(xs) }"},
		{"another operator", false, "func F(a, b int) int { return a - b }", "func F(a, b int) int { return b - a }"},
		{"a global instead of a parameter", false,
			"var n = 1\nfunc F(m int) int { return m }", "var n = 1\nfunc F(m int) int { return n }"},
		{"a map key", false, "func F(k string) map[string]int { return map[string]int{k: 1} }", "func F(k string) map[string]int { return map[string]int{\"k\": 1} }"},
		{"another field", false, "type P struct{ X, Y int }\nfunc F(p P) int { return p.X }", "type P struct{ X, Y int }\nfunc F(p P) int { return p.Y }"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			na, err := codegen.Normalize(tt.a)
			if err != nil {
				t.Fatal(err)
			}
			nb, err := codegen.Normalize(tt.b)
			if err != nil {
				t.Fatal(err)
			}
			if (na == nb) != tt.same {
				t.Errorf("same canonical form = %v, want %v:\n%s\n---\n%s", na == nb, tt.same, na, nb)
			}
		})
	}
}

func TestNormalizeErrors(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"empty", " \n", "codegen: no code"},
		{"empty fence", "```go\n```", "codegen: no code"},
		{"bare function, error on line 1", "func F( {", "codegen: the code does not parse: line 1, column 9:"},
		{"file, error on line 3", "package p\n\nfunc F() int { return 1 +", "codegen: the code does not parse: line 3, column 26:"},
		{"prose", "Here is the function you asked for.", "codegen: the code does not parse: line 1, column 1:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := codegen.Normalize(tt.src)
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("err = %v, want %q…", err, tt.want)
			}
		})
	}
}

// FuzzNormalize: Normalize never panics, and its output is its own canonical form.
func FuzzNormalize(f *testing.F) {
	for _, s := range []string{
		"func Sum(xs []int) int { t := 0; for _, x := range xs { t += x }; return t }",
		"```go\npackage p\nimport \"fmt\"\nfunc F[T any](v T) string { type u int; return fmt.Sprint(v) }\n```",
		"package p\nfunc (r *R) M() (x, y int) { x, y = y, x; go func(z int) {}(x); return }",
		"func F() { L: for { break L } }",
		"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		out, err := codegen.Normalize(src)
		if err != nil {
			return
		}
		again, err := codegen.Normalize(out)
		if err != nil {
			t.Fatalf("the canonical form does not parse: %v\n%s", err, out)
		}
		if again != out {
			t.Fatalf("not idempotent:\n%s\n---\n%s", out, again)
		}
	})
}

func BenchmarkNormalize(b *testing.B) {
	src := "package sum\n\n// Sum adds.\nfunc Sum(xs []int) int {\n\ttotal := 0\n\tfor _, x := range xs {\n\t\ttotal += x\n\t}\n\treturn total\n}\n"
	b.ReportAllocs()
	for b.Loop() {
		if _, err := codegen.Normalize(src); err != nil {
			b.Fatal(err)
		}
	}
}
