// Package schema compiles the JSON Schemas agents declare for their input and output and
// checks values against them, reporting every problem with the JSON pointer of the value at
// fault. The engine and package flow share it, so a planned dispatch and a nested one are
// checked the same way.
//
// It uses santhosh-tekuri/jsonschema/v6 rather than google/jsonschema-go: v6 implements every
// draft (4, 6, 7, 2019-09, 2020-12, chosen by $schema) and reports each failure with its
// instance location and keyword location, which is what an agent author needs to fix an output;
// google/jsonschema-go is built to infer schemas from Go types and validates one draft.
package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Schema is a compiled JSON Schema. It is safe for concurrent use.
type Schema struct {
	s *jsonschema.Schema
}

// Compile compiles raw; name says whose schema it is in errors ("tutor input").
func Compile(name string, raw json.RawMessage) (*Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("schema: %s: not JSON: %w", name, err)
	}
	c := jsonschema.NewCompiler()
	// Each schema has a compiler of its own, so one fixed location serves all: built from the
	// name, it would break on names that are not URL paths ("a#b", "50%", "é", "../x").
	const loc = "mem://troupe/schema.json"
	if err := c.AddResource(loc, doc); err != nil {
		return nil, fmt.Errorf("schema: %s: %w", name, err)
	}
	s, err := c.Compile(loc)
	if err != nil {
		return nil, fmt.Errorf("schema: %s: %w", name, err)
	}
	return &Schema{s: s}, nil
}

// CompileAgent compiles an agent's declared input and output schemas (either may be nil,
// giving a nil *Schema); errors name the agent and which schema.
func CompileAgent(agent string, input, output json.RawMessage) (in, out *Schema, err error) {
	if input != nil {
		if in, err = Compile(agent+" input", input); err != nil {
			return nil, nil, fmt.Errorf("agent %s: input schema: %w", agent, err)
		}
	}
	if output != nil {
		if out, err = Compile(agent+" output", output); err != nil {
			return nil, nil, fmt.Errorf("agent %s: output schema: %w", agent, err)
		}
	}
	return in, out, nil
}

// Problem is one way a value fails a schema: where (a JSON pointer into the value, "" for the
// value itself) and what.
type Problem struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

// String is "path: message", with "/" for the value itself.
func (p Problem) String() string {
	path := p.Path
	if path == "" {
		path = "/"
	}
	return path + ": " + p.Message
}

// Error is every problem of one value, sorted by path.
type Error struct {
	Problems []Problem
}

// Error lists the problems, "schema: " first.
func (e *Error) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.String()
	}
	return "schema: " + strings.Join(parts, "; ")
}

// Validate checks v — any value encoding/json can encode — against s. It returns nil or an
// *Error listing every problem.
func (s *Schema) Validate(v any) error {
	// The validator understands JSON's own types only: round-trip Go values (ints, structs,
	// typed slices) through JSON so they are checked as they will be sent.
	b, err := json.Marshal(v)
	if err != nil {
		return &Error{Problems: []Problem{{Message: "cannot be encoded as JSON: " + err.Error()}}}
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return &Error{Problems: []Problem{{Message: "not JSON: " + err.Error()}}}
	}
	err = s.s.Validate(doc)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return &Error{Problems: []Problem{{Message: err.Error()}}}
	}
	ps := Problems(ve)
	if len(ps) == 0 {
		ps = append(ps, Problem{Message: ve.Error()})
	}
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].Path < ps[j].Path })
	return &Error{Problems: ps}
}

// Problems lists what a validation error of the library found, each at the JSON pointer of the
// value at fault ("" for the value itself), in the order the library found them. It reads the
// error tree, not the library's basic output, which puts a $ref's own "validation failed" in
// place of the error the reference found; errors that only gather their causes are left out.
func Problems(e *jsonschema.ValidationError) []Problem {
	var ps []Problem
	collect(e, &ps)
	return ps
}

func collect(e *jsonschema.ValidationError, ps *[]Problem) {
	if len(e.Causes) == 0 || !wraps(e.ErrorKind) {
		var path strings.Builder
		for _, t := range e.InstanceLocation {
			path.WriteByte('/')
			path.WriteString(pointerEscaper.Replace(t))
		}
		*ps = append(*ps, Problem{Path: path.String(), Message: e.ErrorKind.LocalizedString(printer)})
	}
	for _, c := range e.Causes {
		collect(c, ps)
	}
}

// wraps reports whether an error of kind k only gathers its causes: the whole schema's
// ("doesn't validate with"), or a reference's ($ref, $dynamicRef, $recursiveRef) own
// "validation failed".
func wraps(k jsonschema.ErrorKind) bool {
	switch kp := k.KeywordPath(); len(kp) {
	case 0:
		return true
	case 1:
		return kp[0] == "$ref" || kp[0] == "$dynamicRef" || kp[0] == "$recursiveRef"
	}
	return false
}

var (
	printer        = message.NewPrinter(language.English) // the library's own
	pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")
)

// Details returns the problems of a schema failure wrapped in err as an ErrorInfo's details
// ({"validation_errors": [{path, message}, …]}), or nil when err is no schema failure.
func Details(err error) map[string]any {
	var se *Error
	if !errors.As(err, &se) {
		return nil
	}
	list := make([]any, len(se.Problems))
	for i, p := range se.Problems {
		list[i] = map[string]any{"path": p.Path, "message": p.Message}
	}
	return map[string]any{"validation_errors": list}
}
