package config

import (
	"cmp"
	"errors"
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

// FieldError is a problem of one field of a file found after loading it, while its agents are
// built: a Factory returns it, or an error wrapping it, so that Build reports the problem at the
// field's own line and path, as Load does, rather than at the agent's. Path is the field's
// path from the file's root, a key or a list index each element: {"agents", "fetch", "exec",
// "dir"}, {"mcp_servers", "files", "env", "TOKEN"}; an agent's own field is most easily named
// with Agent.Field. Err is the problem.
type FieldError struct {
	Path []string
	Err  error
}

// Error is the field's path, as Error shows it, then the problem.
func (e *FieldError) Error() string {
	problem := strings.TrimPrefix(e.Err.Error(), "config: ")
	if len(e.Path) == 0 {
		return "config: " + problem
	}
	return "config: " + displayPath(pointer(e.Path...)) + ": " + problem
}

// Unwrap returns the problem.
func (e *FieldError) Unwrap() error { return e.Err }

// Field returns err as a problem of the agent's field at path, under the agent ("exec",
// "dir"), or nil when err is nil.
func (a *Agent) Field(err error, path ...string) error {
	if err == nil {
		return nil
	}
	return &FieldError{Path: append([]string{"agents", a.Name}, path...), Err: err}
}

// errorOf is err as a problem of the file f: at the value of the field a FieldError in its chain
// names, as Load places a field's problems; else at the key of member, the JSON pointer of the
// agent (or section) the caller was building.
func (f *File) errorOf(member string, err error) *Error {
	ptr, key := member, true
	if fe, ok := errors.AsType[*FieldError](err); ok {
		ptr, key, err = pointer(fe.Path...), false, fe.Err
	}
	p := f.place(ptr, key)
	return &Error{File: f.Path, Line: p.line, Column: p.col, Path: displayPath(ptr), Problem: strings.TrimPrefix(err.Error(), "config: ")}
}

// Problem returns err as a problem of the file, placed as Build places a factory's: at the
// value of the field a *FieldError in err's chain names, else at the top of the file. It is
// for what a command finds of a loaded file besides Load and Build — a warning that fails
// nothing, say — to be shown as they show problems.
func (f *File) Problem(err error) *Error { return f.errorOf("", err) }

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
