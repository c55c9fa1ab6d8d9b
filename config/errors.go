package config

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Error is one problem of a configuration file: where it is (file, line, column), which field
// (Path, as in "agents.fetch.exec.command[0]") and what is wrong with it. Line and Column are
// 1-based; they are 0 when the problem has no place in the file (the file cannot be read).
type Error struct {
	File    string
	Line    int
	Column  int
	Path    string
	Problem string
}

// Error formats the problem as file:line:column: path: problem, the way compilers do, so
// editors and terminals can jump to it.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", e.Line, e.Column)
	}
	b.WriteString(": ")
	if e.Path != "" {
		b.WriteString(e.Path + ": ")
	}
	b.WriteString(e.Problem)
	return b.String()
}

// Errors is every problem found in one file, in file order. Loading reports all of them at
// once, not the first only.
type Errors []*Error

// Error lists the problems, one a line, after a count.
func (es Errors) Error() string {
	var b strings.Builder
	n := len(es)
	fmt.Fprintf(&b, "config: %d problem", n)
	if n != 1 {
		b.WriteString("s")
	}
	for _, e := range es {
		b.WriteString("\n" + e.Error())
	}
	return b.String()
}

// sortErrors orders problems by position, then path and problem, and drops exact duplicates
// (a schema can report one mistake through two keywords).
func sortErrors(es Errors) Errors {
	slices.SortStableFunc(es, func(a, b *Error) int {
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column),
			cmp.Compare(a.Path, b.Path), cmp.Compare(a.Problem, b.Problem))
	})
	return slices.CompactFunc(es, func(a, b *Error) bool { return *a == *b })
}
