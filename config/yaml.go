package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
)

// maxNodes bounds the values a document may expand to, aliases included, so that a small
// file of nested aliases (a "billion laughs") cannot exhaust memory.
const maxNodes = 100_000

// pos is a place in the file.
type pos struct{ line, col int }

// tree is a YAML document as JSON values (map[string]any, []any, string, json.Number, bool,
// nil) with the place of every value and every mapping key, by JSON pointer ("/agents/a/kind").
type tree struct {
	value any
	vals  map[string]pos // pointer → where its value starts
	keys  map[string]pos // pointer of a member → where its key is
	order map[string][]string
	errs  []*Error
	path  string // the file's name, for errors
	nodes int
}

// parseYAML reads data as one YAML document. A syntax error is returned alone; every other
// problem (a merge key, a non-JSON number, a duplicate key) is collected in the tree's errs.
func parseYAML(name string, data []byte) (*tree, error) {
	t := &tree{vals: map[string]pos{}, keys: map[string]pos{}, order: map[string][]string{}, path: name}
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		e := &Error{File: name, Problem: "YAML syntax: " + err.Error()}
		var se *yaml.SyntaxError
		if errors.As(err, &se) && se.Token != nil {
			e.Line, e.Column = se.Token.Position.Line, se.Token.Position.Column
			e.Problem = "YAML syntax: " + se.Message
		}
		return nil, e
	}
	var bodies []ast.Node
	for _, d := range f.Docs {
		if d.Body != nil {
			bodies = append(bodies, d.Body)
		}
	}
	switch len(bodies) {
	case 0:
		return t, nil
	case 1:
	default:
		p := at(bodies[1])
		t.errs = append(t.errs, &Error{File: name, Line: p.line, Column: p.col, Problem: "a configuration is one YAML document; this file holds " + strconv.Itoa(len(bodies))})
	}
	anchors := map[string]ast.Node{}
	t.value = t.walk(bodies[0], "", anchors, 0)
	return t, nil
}

func at(n ast.Node) pos {
	switch m := n.(type) {
	case *ast.MappingValueNode:
		if m.Key != nil {
			return at(m.Key)
		}
	case *ast.MappingNode:
		if !m.IsFlowStyle && len(m.Values) > 0 {
			return at(m.Values[0])
		}
	}
	if tk := n.GetToken(); tk != nil {
		return pos{tk.Position.Line, tk.Position.Column}
	}
	return pos{}
}

func (t *tree) fail(n ast.Node, ptr, problem string) {
	p := at(n)
	t.errs = append(t.errs, &Error{File: t.path, Line: p.line, Column: p.col, Path: displayPath(ptr), Problem: problem})
}

// walk converts n, found at pointer ptr, to a JSON value.
func (t *tree) walk(n ast.Node, ptr string, anchors map[string]ast.Node, depth int) any {
	t.nodes++
	if t.nodes > maxNodes || depth > 200 {
		if t.nodes == maxNodes+1 || depth == 201 {
			t.fail(n, ptr, fmt.Sprintf("the document is too large or too deep (more than %d values or 200 levels, aliases expanded)", maxNodes))
		}
		return nil
	}
	if _, ok := t.vals[ptr]; !ok {
		t.vals[ptr] = at(n)
	}
	switch n := n.(type) {
	case *ast.AnchorNode:
		if name, ok := n.Name.(*ast.StringNode); ok {
			anchors[name.Value] = n.Value
		}
		return t.walk(n.Value, ptr, anchors, depth+1)
	case *ast.AliasNode:
		name := ""
		if n.Value != nil {
			name = n.Value.GetToken().Value
		}
		target, ok := anchors[name]
		if !ok {
			t.fail(n, ptr, fmt.Sprintf("alias *%s names no anchor defined before it", name))
			return nil
		}
		return t.walk(target, ptr, anchors, depth+1)
	case *ast.TagNode:
		return t.walk(n.Value, ptr, anchors, depth+1)
	case *ast.MappingNode:
		return t.mapping(n.Values, ptr, anchors, depth)
	case *ast.MappingValueNode:
		return t.mapping([]*ast.MappingValueNode{n}, ptr, anchors, depth)
	case *ast.SequenceNode:
		out := make([]any, 0, len(n.Values))
		for i, v := range n.Values {
			out = append(out, t.walk(v, ptr+"/"+strconv.Itoa(i), anchors, depth+1))
		}
		return out
	case *ast.StringNode:
		return n.Value
	case *ast.LiteralNode:
		if n.Value == nil {
			return ""
		}
		return n.Value.Value
	case *ast.IntegerNode:
		switch v := n.Value.(type) {
		case int64:
			return json.Number(strconv.FormatInt(v, 10))
		case uint64:
			return json.Number(strconv.FormatUint(v, 10))
		}
		return json.Number(n.GetToken().Value)
	case *ast.FloatNode:
		return json.Number(strconv.FormatFloat(n.Value, 'g', -1, 64))
	case *ast.BoolNode:
		return n.Value
	case *ast.NullNode:
		return nil
	case *ast.InfinityNode, *ast.NanNode:
		t.fail(n, ptr, "infinity and NaN are not numbers a configuration can hold")
		return nil
	case *ast.CommentGroupNode, *ast.CommentNode:
		return nil
	}
	t.fail(n, ptr, fmt.Sprintf("unsupported YAML node %s", n.Type()))
	return nil
}

func (t *tree) mapping(members []*ast.MappingValueNode, ptr string, anchors map[string]ast.Node, depth int) any {
	out := make(map[string]any, len(members))
	for _, mv := range members {
		if mv.Key == nil {
			continue
		}
		var key string
		switch k := mv.Key.(type) {
		case *ast.MergeKeyNode:
			t.fail(k, ptr, "merge keys (<<) are not supported: write the fields out")
			continue
		case *ast.StringNode:
			key = k.Value
		case ast.ScalarNode:
			key = k.GetToken().Value
		default:
			t.fail(k, ptr, "a mapping key must be a plain string")
			continue
		}
		member := ptr + "/" + escapePointer(key)
		if _, dup := out[key]; dup {
			t.fail(mv.Key, member, fmt.Sprintf("duplicate key %q", key))
			continue
		}
		t.keys[member] = at(mv.Key)
		t.order[ptr] = append(t.order[ptr], key)
		var v any
		if mv.Value != nil {
			v = t.walk(mv.Value, member, anchors, depth+1)
		}
		out[key] = v
	}
	return out
}

// position returns where the value at ptr is, or, when it is absent, where the nearest
// enclosing value is.
func (t *tree) position(ptr string, key bool) pos {
	for {
		if key {
			if p, ok := t.keys[ptr]; ok {
				return p
			}
		}
		if p, ok := t.vals[ptr]; ok {
			return p
		}
		if ptr == "" {
			return pos{1, 1}
		}
		ptr = ptr[:strings.LastIndexByte(ptr, '/')]
	}
}

// errorAt builds an Error for the value at ptr.
func (t *tree) errorAt(ptr, problem string) *Error {
	p := t.position(ptr, false)
	return &Error{File: t.path, Line: p.line, Column: p.col, Path: displayPath(ptr), Problem: problem}
}

// keyErrorAt builds an Error for the key of the member at ptr.
func (t *tree) keyErrorAt(ptr, problem string) *Error {
	p := t.position(ptr, true)
	return &Error{File: t.path, Line: p.line, Column: p.col, Path: displayPath(ptr), Problem: problem}
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func unescapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
}

// pointer joins tokens into a JSON pointer.
func pointer(tokens ...string) string {
	var b strings.Builder
	for _, s := range tokens {
		b.WriteString("/" + escapePointer(s))
	}
	return b.String()
}

// displayPath turns a JSON pointer into the path people read: "/agents/a/after/1" is
// "agents.a.after[1]"; a key that is not a plain word is quoted.
func displayPath(ptr string) string {
	if ptr == "" {
		return ""
	}
	var b strings.Builder
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = unescapePointer(tok)
		if _, err := strconv.Atoi(tok); err == nil {
			b.WriteString("[" + tok + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		if plainKey(tok) {
			b.WriteString(tok)
		} else {
			b.WriteString(strconv.Quote(tok))
		}
	}
	return b.String()
}

func plainKey(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}
