package config

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/lexer"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
)

// Bounds on what a document may expand to, so that Load takes time and memory in proportion
// to a small multiple of MaxFileBytes whatever the input: a few lines of nested aliases (a
// "billion laughs") would otherwise expand to billions of values, long keys nested deep and
// repeated by aliases to gigabytes of field paths, and deeply nested flow collections take
// the YAML parser quadratic time.
const (
	// maxNodes bounds the values a document holds, aliases expanded.
	maxNodes = 100_000
	// maxDepth bounds how deeply collections nest, aliases expanded.
	maxDepth = 200
	// maxKeys bounds the keys of one block mapping.
	maxKeys = 5_000
	// maxPathBytes bounds the total length of the field paths of all values (each value's
	// place is kept by its path).
	maxPathBytes = 32 << 20
)

// pos is a place in the file.
type pos struct{ line, col int }

// places are where a document's values and mapping keys are, by JSON pointer
// ("/agents/a/kind"): what errors found in loading, and after it in building, are placed by.
type places struct {
	vals map[string]pos // pointer → where its value starts
	keys map[string]pos // pointer of a member → where its key is
}

// tree is a YAML document as JSON values (map[string]any, []any, string, json.Number, bool,
// nil) with the place of every value and every mapping key.
type tree struct {
	value any
	places
	order map[string][]string
	errs  []*Error
	path  string              // the file's name, for errors
	nodes int                 // values walked, aliases expanded
	bytes int                 // total length of their paths
	alias *ast.AliasNode      // the outermost alias being expanded, if any
	aptr  string              // where that alias is
	over  bool                // a bound was exceeded and reported
	byKey map[string][]string // members by key, see membersNamed
	// scalars are how the file writes the numbers and booleans at their pointers, and the
	// strings it writes as numbers: quoted ("3"), or plain but not read as numbers by the YAML
	// reader (1e3, or too large for 64 bits). An error saying a value has the wrong type shows
	// it as written, and can say why a number is a string.
	scalars map[string]scalar
	// refused are the pointers of the values the schema refused, which Parse leaves out of the
	// File: a field there reads as absent, which is not what the file says.
	refused map[string]bool
}

// scalar is a value as the file writes it.
type scalar struct {
	text   string
	quoted bool
}

func (t *tree) scalar(ptr, text string, quoted bool) {
	if t.scalars == nil {
		t.scalars = map[string]scalar{}
	}
	t.scalars[ptr] = scalar{text: text, quoted: quoted}
}

// numberLike matches the numbers of YAML 1.2's core schema, and ones with _ separators.
var numberLike = regexp.MustCompile(`^[-+]?(\.[0-9]+|[0-9][0-9_]*(\.[0-9_]*)?)([eE][-+]?[0-9]+)?$`)

// text checks that data is text YAML can read: UTF-8 (a UTF-8 byte order mark is dropped
// first, as editors on Windows write one), without control characters. It returns data without
// its mark, or where the first problem is and what it is. The YAML parser itself would read
// a UTF-16 file as one string, and bytes that are not UTF-8 or control characters as part of
// a value, so that a binary or mis-encoded file would be read as something else.
func text(data []byte) (rest []byte, at pos, problem string) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	switch {
	case bytes.HasPrefix(data, []byte("\xff\xfe")), bytes.HasPrefix(data, []byte("\xfe\xff")),
		len(data) >= 2 && (data[0] == 0) != (data[1] == 0): // UTF-16 without its mark, of ASCII text
		return nil, pos{1, 1}, "the file is UTF-16 text: a configuration is UTF-8; save it as UTF-8"
	}
	line, col := 1, 1
	for i := 0; i < len(data); {
		r, n := utf8.DecodeRune(data[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			return nil, pos{line, col}, fmt.Sprintf("byte 0x%02x is not UTF-8: a configuration is UTF-8 text; save it as UTF-8", data[i])
		case r == '\n':
			line, col = line+1, 0
		case r == '\t', r == '\r', r == 0x85:
		case r < 0x20, r == 0x7f, r >= 0x80 && r < 0xa0, r == 0xfffe, r == 0xffff:
			// YAML's printable characters leave these out; a file holding one is most likely
			// not the text file meant.
			return nil, pos{line, col}, fmt.Sprintf("the control character %U is not allowed in YAML; is this the file meant?", r)
		}
		i += n
		col++
	}
	return data, pos{}, ""
}

// parseYAML reads data as one YAML document. A syntax error is returned alone; every other
// problem (a merge key, a non-JSON number, a duplicate key) is collected in the tree's errs.
func parseYAML(name string, data []byte) (*tree, error) {
	t := &tree{places: places{vals: map[string]pos{}, keys: map[string]pos{}}, order: map[string][]string{}, path: name}
	tokens := lexer.Tokenize(string(data))
	if p, problem := tooComplex(tokens); problem != "" {
		return nil, &Error{File: name, Line: p.line, Column: p.col, Problem: problem}
	}
	// Duplicate keys are reported by mapping, each of them, where the parser would stop at
	// the first.
	f, err := parser.Parse(tokens, 0, parser.AllowDuplicateMapKey())
	if err != nil {
		// A SyntaxError's Error prints the file's tokens around the place, which takes time
		// in proportion to the file: its message and place are enough.
		var se *yaml.SyntaxError
		if errors.As(err, &se) && se.Token != nil {
			if p, problem, ok := directiveProblem(tokens, se.Token); ok {
				return nil, &Error{File: name, Line: p.line, Column: p.col, Problem: "YAML syntax: " + problem}
			}
			line, col := se.Token.Position.Line, se.Token.Position.Column
			continued := ""
			if p, _, ok := continuedKey(tokens, data, se.Token); ok {
				// The error is the key's, on its line, not the scalar's it was read into.
				line, col = p.line, p.col
				continued = fmt.Sprintf(", so it is read as more of the value on line %d (%q)", se.Token.Position.Line, se.Token.Value)
			}
			path, hint := syntaxPlace(tokens, data, line)
			if hint == "" {
				hint = missingColon(data, line)
			} else {
				hint += continued
			}
			problem := "YAML syntax: " + se.Message
			if hint != "" {
				problem += "; " + hint
			}
			return nil, &Error{File: name, Line: line, Column: col, Path: path, Problem: problem}
		}
		return nil, &Error{File: name, Problem: "YAML syntax: " + err.Error()}
	}
	var bodies []ast.Node
	for _, d := range f.Docs {
		// A directive (%YAML 1.2) is read by the parser as a document of its own; it is the
		// head of the document after it.
		if _, directive := d.Body.(*ast.DirectiveNode); d.Body != nil && !directive {
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

func aliasName(a *ast.AliasNode) string {
	if a.Value == nil || a.Value.GetToken() == nil {
		return ""
	}
	return a.Value.GetToken().Value
}

// tooComplex reports where the tokens first go past what the YAML parser handles in time
// proportional to the file, before it sees them: its time grows with the square of the
// nesting depth and with the square of the number of keys of one block mapping. Flow
// collections ([...] and {...}) nest until they close; on one line, a run of block
// indicators (- - - x, ? - x, &a !t) nests too. Nesting by indentation needs no check: it
// costs its depth squared in bytes, so MaxFileBytes bounds it.
func tooComplex(tokens token.Tokens) (p pos, problem string) {
	type mapping struct{ col, keys int }
	var open []mapping // the block mappings open, by the column of their keys
	flow, run, line := 0, 0, 0
	for i, tk := range tokens {
		at := pos{tk.Position.Line, tk.Position.Column}
		if at.line != line {
			line, run = at.line, 0
			for len(open) > 0 && open[len(open)-1].col > at.col {
				open = open[:len(open)-1]
			}
		}
		switch tk.Type {
		case token.SequenceStartType, token.MappingStartType:
			flow++
		case token.SequenceEndType, token.MappingEndType:
			flow = max(flow-1, 0)
		case token.SequenceEntryType, token.MappingKeyType, token.AnchorType, token.TagType:
			run++
		case token.MappingValueType:
			run = 0
			if flow > 0 || i == 0 {
				break
			}
			col := tokens[i-1].Position.Column
			for len(open) > 0 && open[len(open)-1].col > col {
				open = open[:len(open)-1]
			}
			if len(open) == 0 || open[len(open)-1].col < col {
				open = append(open, mapping{col: col})
			}
			if open[len(open)-1].keys++; open[len(open)-1].keys > maxKeys {
				return pos{tokens[i-1].Position.Line, col}, fmt.Sprintf("a mapping holds more than %d keys", maxKeys)
			}
		default:
			run = 0
		}
		if flow+run > maxDepth {
			return at, fmt.Sprintf("collections nest more than %d deep", maxDepth)
		}
	}
	return pos{}, ""
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
	if t.over {
		return nil
	}
	t.nodes++
	t.bytes += len(ptr)
	var problem string
	switch {
	case depth > maxDepth:
		problem = fmt.Sprintf("collections nest more than %d deep", maxDepth)
	case t.nodes > maxNodes:
		problem = fmt.Sprintf("the document holds more than %d values", maxNodes)
	case t.bytes > maxPathBytes:
		problem = fmt.Sprintf("the document's field paths are more than %d MiB in all (long keys nested deep)", maxPathBytes>>20)
	}
	if problem != "" {
		// One error, at the alias whose expansion crossed the bound when there is one, and
		// nothing more is read: a bound exceeded once is exceeded everywhere after.
		t.over = true
		if a := t.alias; a != nil {
			t.fail(a, t.aptr, fmt.Sprintf("alias *%s expands too far: %s, aliases expanded", aliasName(a), problem))
		} else {
			t.fail(n, ptr, problem)
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
		name := aliasName(n)
		target, ok := anchors[name]
		if !ok {
			t.fail(n, ptr, fmt.Sprintf("alias *%s names no anchor defined before it", name))
			return nil
		}
		if t.alias != nil {
			return t.walk(target, ptr, anchors, depth+1)
		}
		t.alias, t.aptr = n, ptr
		v := t.walk(target, ptr, anchors, depth+1)
		t.alias = nil
		return v
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
		if numberLike.MatchString(n.Value) {
			t.scalar(ptr, n.Value, n.Token != nil && (n.Token.Type == token.SingleQuoteType || n.Token.Type == token.DoubleQuoteType))
		}
		return n.Value
	case *ast.LiteralNode:
		if n.Value == nil {
			return ""
		}
		return n.Value.Value
	case *ast.IntegerNode:
		t.scalar(ptr, n.GetToken().Value, false)
		switch v := n.Value.(type) {
		case int64:
			return json.Number(strconv.FormatInt(v, 10))
		case uint64:
			return json.Number(strconv.FormatUint(v, 10))
		}
		return json.Number(n.GetToken().Value)
	case *ast.FloatNode:
		t.scalar(ptr, n.GetToken().Value, false)
		return json.Number(strconv.FormatFloat(n.Value, 'g', -1, 64))
	case *ast.BoolNode:
		t.scalar(ptr, n.GetToken().Value, false)
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
			t.fail(mv.Key, member, fmt.Sprintf("duplicate key %q: it is first on line %d; a key is given once", key, t.keys[member].line))
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

// membersNamed returns the pointers of the members whose key is key, in the order of the
// file. The index is built on first use, so that looking up many keys stays linear.
func (t *tree) membersNamed(key string) []string {
	if t.byKey == nil {
		t.byKey = map[string][]string{}
		for member := range t.keys {
			k := unescapePointer(member[strings.LastIndexByte(member, '/')+1:])
			t.byKey[k] = append(t.byKey[k], member)
		}
		for _, ms := range t.byKey {
			slices.SortFunc(ms, func(a, b string) int {
				pa, pb := t.keys[a], t.keys[b]
				return cmp.Or(cmp.Compare(pa.line, pb.line), cmp.Compare(pa.col, pb.col), strings.Compare(a, b))
			})
		}
	}
	return t.byKey[key]
}

// position returns where the value at ptr is (its key, for a member, when key is true), or,
// when it is absent, where the nearest enclosing value is.
func (ps places) position(ptr string, key bool) pos {
	for {
		if key {
			if p, ok := ps.keys[ptr]; ok {
				return p
			}
		}
		if p, ok := ps.vals[ptr]; ok {
			return p
		}
		if ptr == "" {
			return pos{1, 1}
		}
		ptr = ptr[:strings.LastIndexByte(ptr, '/')]
	}
}

// valueAt returns the value at ptr, or nil when there is none. Once Parse has pruned what the
// schema rejects, a rejected member is gone.
func (t *tree) valueAt(ptr string) any {
	v := t.value
	if ptr == "" {
		return v
	}
	for _, tok := range strings.Split(ptr[1:], "/") {
		switch x := v.(type) {
		case map[string]any:
			v = x[unescapePointer(tok)]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
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
