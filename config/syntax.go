package config

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml/token"
)

// blockFrame is one open level of block structure while the tokens are read: a mapping key
// whose value is being read, or an entry of a block sequence.
type blockFrame struct {
	col, line int
	key       string // "" for a sequence entry
	index     int    // a sequence entry's index
	inline    bool   // a key with its value on its line (a scalar, a flow collection): nothing nests under it
}

// syntaxPlace explains the YAML syntax error at line: the field it is in and, when the line
// is indented unlike the lines before it (the usual cause), a hint saying so. The parser's
// message ("value is not allowed in this context") names neither; the tokens, which the lexer
// gives even for a file the parser rejects, hold both.
//
// The field is the key on the line, placed beside the key it lines up with above it. A key
// indented deeper than a key whose value is on its own line is placed beside that key; one
// indented less than the key before it but lining up with none, under the deepest level it
// is indented deeper than.
func syntaxPlace(tokens token.Tokens, data []byte, line int) (path, hint string) {
	lines := bytes.Split(data, []byte("\n"))
	var stack []*blockFrame
	var prev *blockFrame // the last key before line
	flow := 0
	i := 0
	for ; i < len(tokens) && tokens[i].Position.Line < line; i++ {
		tk := tokens[i]
		switch tk.Type {
		case token.SequenceStartType, token.MappingStartType:
			flow++
		case token.SequenceEndType, token.MappingEndType:
			flow = max(flow-1, 0)
		case token.DocumentHeaderType:
			stack, prev, flow = nil, nil, 0
		case token.SequenceEntryType:
			if flow > 0 {
				break
			}
			col, index := tk.Position.Column, 0
			for len(stack) > 0 && stack[len(stack)-1].col > col {
				stack = stack[:len(stack)-1]
			}
			if n := len(stack); n > 0 && stack[n-1].col == col && stack[n-1].key == "" {
				index = stack[n-1].index + 1
				stack = stack[:n-1]
			}
			stack = append(stack, &blockFrame{col: col, line: tk.Position.Line, index: index})
		case token.MappingValueType:
			if flow > 0 || i == 0 {
				break
			}
			k := tokens[i-1]
			col := k.Position.Column
			for len(stack) > 0 && stack[len(stack)-1].col >= col {
				stack = stack[:len(stack)-1]
			}
			// From the source, not the next token: the lexer folds what follows a tab into
			// one token on the next line.
			inline := false
			if n := tk.Position.Line - 1; n < len(lines) {
				if r := []rune(string(lines[n])); tk.Position.Column <= len(r) {
					rest := strings.TrimSpace(string(r[tk.Position.Column:]))
					inline = rest != "" && !strings.HasPrefix(rest, "#") && !strings.HasPrefix(rest, "&") && !strings.HasPrefix(rest, "!")
				}
			}
			prev = &blockFrame{col: col, line: k.Position.Line, key: k.Value, inline: inline}
			stack = append(stack, prev)
		}
	}
	if !slices.Contains(stack, prev) {
		prev = nil
	}

	// The key on the line: the token before its first ':' outside a flow collection.
	var key *token.Token
	first := 0 // the column of the line's first token
	for ; i < len(tokens) && tokens[i].Position.Line == line; i++ {
		tk := tokens[i]
		if first == 0 && tk.Type != token.CommentType && tk.Type != token.InvalidType {
			first = tk.Position.Column
		}
		switch tk.Type {
		case token.SequenceStartType, token.MappingStartType:
			flow++
		case token.SequenceEndType, token.MappingEndType:
			flow = max(flow-1, 0)
		case token.MappingValueType:
			if flow == 0 && key == nil && i > 0 && tokens[i-1].Position.Line == line {
				key = tokens[i-1]
			} else if flow == 0 && key == nil && i > 0 && tokens[i-1].Position.Line < line {
				// The key was read as more of the plain scalar before it (see continuedKey).
				if p, k, ok := continuedKey(tokens, data, tokens[i-1]); ok && p.line == line {
					key, first = &token.Token{Type: token.StringType, Value: k, Position: &token.Position{Line: p.line, Column: p.col}}, p.col
				}
			}
		}
	}

	if tabIndented(lines, line) {
		// A tab has no width in YAML's eyes, so the columns say nothing: the line is taken
		// to go on from the key before it.
		switch {
		case key == nil || prev == nil:
			return framePath(stack), tabHint
		case prev.inline:
			return keyPath(stack[:slices.Index(stack, prev)], key), tabHint
		}
		return keyPath(stack[:slices.Index(stack, prev)+1], key), tabHint
	}
	if key == nil {
		// No key on the line: the error is in the value of the keys enclosing it.
		var outer []*blockFrame
		for _, f := range stack {
			if first == 0 || f.col < first {
				outer = append(outer, f)
			}
		}
		return framePath(outer), ""
	}

	col := key.Position.Column
	for j, f := range stack {
		if f.key != "" && f.col == col {
			return keyPath(stack[:j], key), "" // lined up with a key above
		}
	}
	// The levels the key is indented deeper than; an entry of a sequence whose "-" it lines up
	// with counts, as the entry's keys follow its "-".
	var outer []*blockFrame
	for _, f := range stack {
		if f.col < col || f.col == col && f.key == "" {
			outer = append(outer, f)
		}
	}
	if prev == nil {
		return keyPath(outer, key), ""
	}
	j := slices.Index(stack, prev)
	switch {
	case col > prev.col && prev.inline:
		return keyPath(stack[:j], key), fmt.Sprintf("check the indentation: %q is indented deeper than %q on line %d before it", key.Value, prev.key, prev.line)
	case col > prev.col:
		return keyPath(stack[:j+1], key), ""
	}
	hint = fmt.Sprintf("check the indentation: %q is indented less than %q on line %d before it", key.Value, prev.key, prev.line)
	for k := len(outer) - 1; k >= 0; k-- {
		if f := outer[k]; f.key != "" {
			hint += fmt.Sprintf(" and more than %q on line %d", f.key, f.line)
			break
		}
	}
	return keyPath(outer, key), hint
}

// continuedKey finds the key of a line the lexer read as more of the plain scalar at, the value
// of a key on the line before. A key indented deeper than a key whose value is a plain scalar on
// its line goes on with that scalar (kind: exec, then "     exec: {…}" is kind: "exec exec"
// followed by ':'), and the parser reports the scalar, on the line above the key, with nothing
// about indentation. It returns where the key is, on the line of the ':' after the scalar, and
// the key; ok is false when no ':' follows at on a later line.
func continuedKey(tokens token.Tokens, data []byte, at *token.Token) (p pos, key string, ok bool) {
	i := slices.IndexFunc(tokens, func(tk *token.Token) bool {
		return tk.Position.Line == at.Position.Line && tk.Position.Column == at.Position.Column && tk.Type == at.Type
	})
	if i < 1 || i+1 >= len(tokens) || at.Type != token.StringType {
		return pos{}, "", false
	}
	if v := tokens[i-1]; v.Type != token.MappingValueType || v.Position.Line != at.Position.Line {
		return pos{}, "", false // not a key's value on its line: a key without its ':', say
	}
	colon := tokens[i+1]
	if colon.Type != token.MappingValueType || colon.Position.Line <= at.Position.Line {
		return pos{}, "", false
	}
	lines := bytes.Split(data, []byte("\n"))
	if colon.Position.Line > len(lines) {
		return pos{}, "", false
	}
	l := []rune(string(lines[colon.Position.Line-1]))
	if colon.Position.Column-1 > len(l) {
		return pos{}, "", false
	}
	before := string(l[:colon.Position.Column-1])
	key = strings.TrimSpace(before)
	if key == "" {
		return pos{}, "", false
	}
	indent := len([]rune(before)) - len([]rune(strings.TrimLeft(before, " ")))
	return pos{colon.Position.Line, indent + 1}, key, true
}

const tabHint = "indent with spaces: YAML does not allow tabs in indentation"

// directiveProblem says what is wrong with the directive (%YAML, %TAG) whose '%' is at, which
// the YAML reader refused, and where: the reader takes one directive before a document, with a
// line "---" right after it, and says only "document not started", at the first directive, when
// a second follows or "---" is missing. (YAML allows several; the reader does not, and as tags
// change nothing troupe reads, a file needs none.) ok is false when at is not a directive, or
// the reader's own message says enough.
func directiveProblem(tokens token.Tokens, at *token.Token) (p pos, problem string, ok bool) {
	i := slices.IndexFunc(tokens, func(tk *token.Token) bool {
		return tk.Type == token.DirectiveType && tk.Position.Line == at.Position.Line && tk.Position.Column == at.Position.Column
	})
	if i < 0 {
		return pos{}, "", false
	}
	line := tokens[i].Position.Line
	heads := map[int]bool{} // the lines of directives
	for _, tk := range tokens[:i] {
		if tk.Type == token.DirectiveType {
			heads[tk.Position.Line] = true
		}
	}
	inside := slices.ContainsFunc(tokens[:i], func(tk *token.Token) bool {
		return tk.Type != token.CommentType && !heads[tk.Position.Line]
	})
	var name string
	var values int
	j := i + 1
	for ; j < len(tokens) && tokens[j].Position.Line == line; j++ {
		switch {
		case tokens[j].Type == token.CommentType:
		case j == i+1:
			name = tokens[j].Value
		default:
			values++
		}
	}
	for j < len(tokens) && tokens[j].Type == token.CommentType {
		j++
	}
	p = pos{line, tokens[i].Position.Column}
	switch {
	case inside:
		return p, fmt.Sprintf(`a directive (%%%s) goes at the head of the file, before the line "---" that starts the document`, name), true
	case j < len(tokens) && tokens[j].Type == token.DirectiveType:
		second := tokens[j].Position
		return pos{second.Line, second.Column}, fmt.Sprintf("a second directive before the document: the YAML reader takes one (%%%s on line %d); remove one — a configuration needs neither, as troupe reads YAML 1.2 and ignores tags", name, line), true
	case j == len(tokens) || tokens[j].Type != token.DocumentHeaderType:
		return p, fmt.Sprintf(`the directive %%%s must be followed by a line "---" that starts the document`, name), true
	case name == "TAG" && values != 2:
		return p, "a %TAG directive is a handle and a prefix, as in %TAG !e! tag:example.com,2000:", true
	case name == "YAML" && values != 1:
		return p, "a %YAML directive is a version, as in %YAML 1.2", true
	}
	return pos{}, "", false
}

// keyPath is the field path of key under the frames.
func keyPath(frames []*blockFrame, key *token.Token) string {
	return framePath(append(slices.Clone(frames), &blockFrame{key: key.Value}))
}

// framePath is the field path of the open frames, as errors show it.
func framePath(frames []*blockFrame) string {
	toks := make([]string, 0, len(frames))
	for _, f := range frames {
		if f.key == "" {
			toks = append(toks, strconv.Itoa(f.index))
		} else {
			toks = append(toks, f.key)
		}
	}
	return displayPath(pointer(toks...))
}

// tabIndented reports whether a tab indents line (1-based).
func tabIndented(lines [][]byte, line int) bool {
	if line < 1 || line > len(lines) {
		return false
	}
	l := lines[line-1]
	return bytes.ContainsRune(l[:len(l)-len(bytes.TrimLeft(l, " \t"))], '\t')
}

// missingColon says that the word alone on line (1-based) wants a ':' after it, when it is
// a key's name with the key's fields indented under it on the lines after: "agents" rather
// than "agents:", which the parser reports only as an unexpected key.
func missingColon(data []byte, line int) string {
	lines := bytes.Split(data, []byte("\n"))
	if line < 1 || line >= len(lines) {
		return ""
	}
	l := string(lines[line-1])
	if i := strings.Index(l, " #"); i >= 0 {
		l = l[:i]
	}
	word := strings.TrimSpace(l)
	if word == "" || strings.ContainsAny(word, ":{}[],#&*!|>'\"%@` \t") || strings.HasPrefix(word, "-") {
		return ""
	}
	indent := len(l) - len(strings.TrimLeft(l, " "))
	for _, next := range lines[line:] {
		n := strings.TrimRight(string(next), " \t\r")
		if strings.TrimSpace(n) == "" || strings.HasPrefix(strings.TrimSpace(n), "#") {
			continue
		}
		if len(n)-len(strings.TrimLeft(n, " ")) > indent {
			return fmt.Sprintf("%q has no ':' after it: write %s:", word, word)
		}
		return ""
	}
	return ""
}
