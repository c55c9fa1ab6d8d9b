package config

import (
	"bytes"
	"cmp"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/big"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Schema is the JSON Schema (draft 2020-12) of a configuration file, the one in
// troupe.schema.json. Editors can use it to complete and check files; Load checks every
// file against it before anything else.
//
//go:embed troupe.schema.json
var Schema []byte

// SchemaID is the schema's $id.
const SchemaID = "https://github.com/troupehq/troupe/config/troupe.schema.json"

var compiled = sync.OnceValues(func() (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(Schema))
	if err != nil {
		return nil, fmt.Errorf("config: troupe.schema.json: %w", err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(SchemaID, doc); err != nil {
		return nil, fmt.Errorf("config: troupe.schema.json: %w", err)
	}
	s, err := c.Compile(SchemaID)
	if err != nil {
		return nil, fmt.Errorf("config: troupe.schema.json: %w", err)
	}
	return s, nil
})

// rawSchema is Schema decoded, for looking up what it declares.
var rawSchema = sync.OnceValue(func() any {
	var doc any
	_ = json.Unmarshal(Schema, &doc) // compiled() reports a broken schema
	return doc
})

var printer = message.NewPrinter(language.English)

// checkSchema validates the document against Schema and returns each leaf problem at its
// place in the file. An unknown field is reported at its key, with the known fields.
func checkSchema(t *tree) (Errors, [][]string) {
	s, err := compiled()
	if err != nil {
		return Errors{{File: t.path, Problem: err.Error()}}, nil
	}
	// Durations the pattern accepts but Go cannot hold are the one problem of a field the
	// schema cannot tell.
	out, bad := durationRange(t)
	err = s.Validate(t.value)
	var ve *jsonschema.ValidationError
	if err == nil || !errors.As(err, &ve) {
		if err != nil {
			return Errors{{File: t.path, Problem: err.Error()}}, nil
		}
		return out, bad
	}
	var missing []struct{ ptr, field string } // required fields absent, by the object's pointer
	misspelt := map[string]bool{}             // pointers of the fields unknown fields are near misses of
	var leaves func(e *jsonschema.ValidationError)
	leaves = func(e *jsonschema.ValidationError) {
		if k, ok := e.ErrorKind.(*kind.PropertyNames); ok {
			// The library's InstanceLocation of a propertyNames error can share memory with
			// later locations; find the key in the document instead.
			loc := append(slices.Clone(e.InstanceLocation), k.Property)
			if members := t.membersNamed(k.Property); len(members) > 0 {
				loc = nil
				for _, tok := range strings.Split(members[0][1:], "/") {
					loc = append(loc, unescapePointer(tok))
				}
			}
			bad = append(bad, loc)
			problem := fmt.Sprintf("%q is not a valid name", k.Property)
			parent := ""
			if len(loc) >= 2 {
				parent = loc[len(loc)-2]
			}
			switch {
			case len(loc) == 2 && loc[0] == "agents":
				problem = fmt.Sprintf("%q is not a valid agent name: a letter, then letters, digits, _ and -", k.Property)
			case parent == "env":
				problem = fmt.Sprintf("%q is not a valid environment variable name: a letter or _, then letters, digits and _", k.Property)
			case parent == "headers" || parent == "headers_from_env":
				problem = fmt.Sprintf("%q is not a valid header name: letters, digits and !#$%%&'*+-.^_`|~, no spaces or colons", k.Property)
			}
			out = append(out, t.keyErrorAt(pointer(loc...), problem))
			return
		}
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				leaves(c)
			}
			return
		}
		ptr := pointer(e.InstanceLocation...)
		switch k := e.ErrorKind.(type) {
		case *kind.Required:
		case *kind.AdditionalProperties:
			for _, p := range k.Properties {
				bad = append(bad, append(slices.Clone(e.InstanceLocation), p))
			}
		default:
			bad = append(bad, e.InstanceLocation)
		}
		switch k := e.ErrorKind.(type) {
		case *kind.AdditionalProperties:
			known := knownFields(e)
			for _, p := range k.Properties {
				out = append(out, t.keyErrorAt(ptr+"/"+escapePointer(p), unknownField(p, known)))
				if best := closestField(p, known); best != "" {
					misspelt[ptr+"/"+escapePointer(best)] = true
				}
			}
		case *kind.FalseSchema:
			if n := len(e.InstanceLocation); n > 0 {
				field := e.InstanceLocation[n-1]
				problem := fmt.Sprintf("field %q is not allowed here", field)
				if kindOf, ok := agentKind(t, e.InstanceLocation); ok {
					problem = fmt.Sprintf("field %q is not allowed in an agent of kind %s: an agent has the block of its own kind only", field, kindOf)
				}
				out = append(out, t.keyErrorAt(ptr, problem))
			}
		case *kind.Pattern:
			problem := fmt.Sprintf("%q does not match the pattern %s", k.Got, k.Want)
			if what, ok := patterns[k.Want]; ok {
				problem = fmt.Sprintf("%q is not %s", k.Got, what)
			}
			if isDurationPattern(k.Want) {
				problem = fmt.Sprintf("%q is not a duration: write one as Go does, such as 30s, 1m30s or 250ms", k.Got)
				if d, err := time.ParseDuration(k.Got); err == nil && d < 0 {
					problem = fmt.Sprintf("%q is negative: a duration here is positive, such as 30s", k.Got)
				} else if _, err := strconv.ParseFloat(k.Got, 64); err == nil {
					problem = fmt.Sprintf("%q is not a duration: %s", k.Got, unitless(k.Got))
				}
			}
			out = append(out, t.errorAt(ptr, problem))
		case *kind.Minimum, *kind.Maximum, *kind.ExclusiveMinimum, *kind.ExclusiveMaximum:
			out = append(out, t.errorAt(ptr, t.boundProblem(ptr, e.ErrorKind)))
		case *kind.MinItems:
			out = append(out, t.errorAt(ptr, fmt.Sprintf("the list has %s; want at least %s", items(k.Got), items(k.Want))))
		case *kind.MaxItems:
			out = append(out, t.errorAt(ptr, fmt.Sprintf("the list has %s; want at most %s", items(k.Got), items(k.Want))))
		case *kind.MinLength:
			if k.Got == 0 {
				out = append(out, t.errorAt(ptr, "empty: give a value, or leave the field out where it is optional"))
				break
			}
			out = append(out, t.errorAt(ptr, e.ErrorKind.LocalizedString(printer)))
		case *kind.Const:
			problem := e.ErrorKind.LocalizedString(printer)
			if ptr == "/version" {
				problem = fmt.Sprintf("version %s is not a version this troupe reads: write version: %d", t.written(ptr), Version)
				if _, ok := k.Got.(string); ok {
					problem = fmt.Sprintf("version is a number, not the string %s: write version: %d", t.written(ptr), Version)
				}
			}
			out = append(out, t.errorAt(ptr, problem))
		case *kind.MinProperties:
			problem := e.ErrorKind.LocalizedString(printer)
			if ptr == "/agents" {
				problem = "no agents: declare at least one under agents, each with its kind"
			}
			out = append(out, t.errorAt(ptr, problem))
		case *kind.Enum:
			problem := e.ErrorKind.LocalizedString(printer)
			if got, ok := k.Got.(string); ok {
				var want []string
				for _, w := range k.Want {
					if w, ok := w.(string); ok {
						want = append(want, w)
					}
				}
				if best := Closest(strings.ToLower(got), want); best != "" {
					problem += fmt.Sprintf(" (did you mean %q?)", best)
				}
			}
			out = append(out, t.errorAt(ptr, problem))
		case *kind.Required:
			for _, m := range k.Missing {
				missing = append(missing, struct{ ptr, field string }{ptr, m})
			}
		case *kind.Type:
			problem := e.ErrorKind.LocalizedString(printer)
			if loc := e.InstanceLocation; len(loc) == 2 && loc[0] == "agents" && slices.Contains(agentFields(), loc[1]) {
				// An agent's field dedented to the level of the agents reads as an agent of its
				// name; its key's column is what is wrong, so the error is there.
				owner := "an agent"
				if above := agentAbove(t, loc[1]); above != "" {
					owner = fmt.Sprintf("the agent %q above it", above)
				}
				out = append(out, t.keyErrorAt(ptr, problem+fmt.Sprintf("; %q looks like a field of %s: check its indentation", loc[1], owner)))
				break
			}
			if n, ok := t.valueAt(ptr).(json.Number); ok && isDurationPattern(schemaPattern(e.SchemaURL, "/type")) {
				// A bare number says no unit (a request's timeouts are seconds, a file's are not).
				problem = fmt.Sprintf("%s is not a duration: %s", n, unitless(n.String()))
			} else if k.Got == "null" {
				problem = nullProblem(k.Want)
			} else if hint := cmp.Or(t.numberHint(ptr, k), t.shapeHint(ptr, k)); hint != "" {
				problem += "; " + hint
			}
			out = append(out, t.errorAt(ptr, problem))
		default:
			out = append(out, t.errorAt(ptr, e.ErrorKind.LocalizedString(printer)))
		}
	}
	leaves(ve)
	for _, m := range missing {
		// A misspelt field is one mistake: the unknown field, with its "did you mean", says it
		// all, and "missing" first would point at the wrong cause.
		if !misspelt[m.ptr+"/"+escapePointer(m.field)] {
			out = append(out, t.errorAt(m.ptr, fmt.Sprintf("missing required field %q", m.field)))
		}
	}
	return out, bad
}

// prune removes the value at loc from v, in place: in objects the member goes, in arrays the
// item becomes null. What is left decodes into the Go types, so that references can be
// checked even in a file the schema rejects. It changes v, which is why Parse prunes only
// after the schema check is done with the tree; changing in place keeps pruning every bad
// value of a large file linear.
func prune(v any, loc []string) any {
	if len(loc) == 0 {
		return nil
	}
	switch x := v.(type) {
	case map[string]any:
		if len(loc) == 1 {
			delete(x, loc[0])
		} else if m, ok := x[loc[0]]; ok {
			x[loc[0]] = prune(m, loc[1:])
		}
	case []any:
		i, err := strconv.Atoi(loc[0])
		if err != nil || i < 0 || i >= len(x) {
			return x
		}
		if len(loc) == 1 {
			x[i] = nil
		} else {
			x[i] = prune(x[i], loc[1:])
		}
	}
	return v
}

// patterns say in words what the schema's patterns (other than a duration's) want.
var patterns = map[string]string{
	`^https?://`:               "an http:// or https:// URL",
	`^[A-Za-z][A-Za-z0-9_-]*$`: "a valid name: a letter, then letters, digits, _ and -",
	`^[A-Za-z_][A-Za-z0-9_]*$`: "an environment variable's name: a letter or _, then letters, digits and _",
	`^[A-Za-z0-9_-]*$`:         "made of letters, digits, _ and - only",
	`^([A-Za-z][A-Za-z0-9_-]*|mcp:[A-Za-z][A-Za-z0-9_-]*(/.+)?)$`: "an agent's name, mcp:SERVER or mcp:SERVER/TOOL",
}

// agentKind returns the kind of the agent whose block loc is in (loc = agents/NAME/block).
func agentKind(t *tree, loc []string) (string, bool) {
	if len(loc) != 3 || loc[0] != "agents" {
		return "", false
	}
	m, _ := t.value.(map[string]any)
	agents, _ := m["agents"].(map[string]any)
	a, _ := agents[loc[1]].(map[string]any)
	k, ok := a["kind"].(string)
	return k, ok
}

// agentFields returns the fields an agent declares, from the schema.
func agentFields() []string {
	doc, _ := rawSchema().(map[string]any)
	defs, _ := doc["$defs"].(map[string]any)
	agent, _ := defs["agent"].(map[string]any)
	props, _ := agent["properties"].(map[string]any)
	return slices.Sorted(maps.Keys(props))
}

// agentAbove returns the agent declared just before the member name of agents, if any.
func agentAbove(t *tree, name string) string {
	order := t.order["/agents"]
	if i := slices.Index(order, name); i > 0 {
		return order[i-1]
	}
	return ""
}

// isDurationPattern reports whether pattern is the schema's pattern of a duration.
func isDurationPattern(pattern string) bool { return strings.Contains(pattern, "(ns|us|µs|ms|s|m|h)") }

// unitless says how to write a duration that a number without a unit might mean.
func unitless(n string) string {
	if d, err := time.ParseDuration(n + "s"); err == nil && d >= 0 {
		return fmt.Sprintf("a duration has a unit, such as %ss", n)
	}
	return "write one as Go does, such as 30s, 1m30s or 250ms"
}

// schemaPattern returns the pattern of the schema whose keyword keyword is at url, if any.
func schemaPattern(url, keyword string) string {
	p, _ := schemaNode(url, keyword)["pattern"].(string)
	return p
}

// knownFields returns the properties the schema at e's keyword location declares.
func knownFields(e *jsonschema.ValidationError) []string {
	// The error's schema URL ends in ".../additionalProperties"; its parent declares the
	// properties.
	props, _ := schemaNode(e.SchemaURL, "/additionalProperties")["properties"].(map[string]any)
	var names []string
	for k := range props {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// schemaNode returns the object of the raw schema whose keyword (such as "/type") the schema
// URL of an error names, looked up by JSON pointer.
func schemaNode(u, keyword string) map[string]any {
	i := strings.IndexByte(u, '#')
	if i < 0 {
		return nil
	}
	frag := strings.TrimSuffix(u[i+1:], keyword)
	node := rawSchema()
	for _, tok := range strings.Split(strings.TrimPrefix(frag, "/"), "/") {
		if tok == "" {
			continue
		}
		switch n := node.(type) {
		case map[string]any:
			node = n[unescapePointer(tok)]
		case []any:
			var idx int
			if _, err := fmt.Sscan(tok, &idx); err != nil || idx >= len(n) {
				return nil
			}
			node = n[idx]
		default:
			return nil
		}
	}
	obj, _ := node.(map[string]any)
	return obj
}

// unknownField says a field is unknown, suggesting the closest known one.
func unknownField(name string, known []string) string {
	s := fmt.Sprintf("unknown field %q", name)
	if best := closestField(name, known); best != "" {
		return s + fmt.Sprintf(" (did you mean %q?)", best)
	}
	if len(known) > 0 && len(known) <= 12 {
		return s + "; known fields: " + strings.Join(slices.Clone(known), ", ")
	}
	return s
}

// closestField returns the known field name is a typo of, if any.
func closestField(name string, known []string) string {
	return Closest(strings.ToLower(name), known)
}

// Closest returns the candidate nearest to name, if one is near enough to be a typo of it,
// for "did you mean" messages: within two edits, and within a third of name's length (one
// edit for a name of two to five letters, none for one of a letter), an edit being a letter
// added, removed, changed or swapped with the next; the first of equally near ones. A short
// name is not taken for a typo of every other short name: "x" suggests nothing rather than "a".
func Closest(name string, candidates []string) string {
	best, bestD := "", min(2, max(1, len(name)/3), len(name)-1)+1
	for _, c := range candidates {
		if abs(len(c)-len(name)) >= bestD {
			continue // as many edits at least
		}
		if d := editDistance(name, c); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

func abs(n int) int { return max(n, -n) }

// editDistance is the optimal string alignment distance between a and b, in bytes: the
// Levenshtein distance with a swap of two adjacent letters ("agnets") one edit, not two.
func editDistance(a, b string) int {
	prev2 := make([]int, len(b)+1) // row i-2
	prev := make([]int, len(b)+1)  // row i-1
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

// written is the value at ptr as the file writes it: a number or a boolean in its own
// characters (JSON would write 1e+19 for 10000000000000000000, true for True), a string quoted.
func (t *tree) written(ptr string) string {
	v := t.valueAt(ptr)
	if s, ok := t.scalars[ptr]; ok {
		if _, str := v.(string); !str {
			return s.text
		}
	}
	switch v := v.(type) {
	case json.Number:
		return v.String()
	case string:
		return strconv.Quote(v)
	case nil:
		return "null"
	default:
		b, _ := json.Marshal(v)
		return string(b)
	}
}

// boundProblem says how the number at ptr is out of the bound k (a minimum or a maximum) of
// its field, in the file's digits rather than the library's floating point.
func (t *tree) boundProblem(ptr string, k jsonschema.ErrorKind) string {
	got := t.written(ptr)
	switch k := k.(type) {
	case *kind.Minimum:
		return fmt.Sprintf("%s is too small: want %s or more", got, k.Want.RatString())
	case *kind.Maximum:
		return fmt.Sprintf("%s is too large: want at most %s", got, k.Want.RatString())
	case *kind.ExclusiveMinimum:
		return fmt.Sprintf("%s is too small: want more than %s", got, k.Want.RatString())
	case *kind.ExclusiveMaximum:
		return fmt.Sprintf("%s is too large: want less than %s", got, k.Want.RatString())
	}
	return k.LocalizedString(printer)
}

// items counts list items.
func items(n int) string {
	if n == 1 {
		return "1 item"
	}
	return fmt.Sprintf("%d items", n)
}

// numberHint explains a wrong type where a number is wanted: a number with a fraction where a
// whole one is; a string written as a number, quoted ("3"), which makes it a string, or plain but
// not a number the YAML reader takes, as an exponent without a point (1e3) or a whole number too
// large for 64 bits.
func (t *tree) numberHint(ptr string, k *kind.Type) string {
	wantInt, wantNum := slices.Contains(k.Want, "integer"), slices.Contains(k.Want, "number")
	if k.Got == "number" && wantInt {
		return t.written(ptr) + " is not a whole number"
	}
	n, ok := t.scalars[ptr]
	if !ok || k.Got != "string" || !wantInt && !wantNum {
		return ""
	}
	if n.quoted {
		return "a number is written without quotes: " + n.text
	}
	f, _, err := big.ParseFloat(strings.ReplaceAll(n.text, "_", ""), 10, 64, big.ToNearestEven)
	if err != nil {
		return ""
	}
	if x, _ := f.Float64(); math.IsInf(x, 0) {
		return n.text + " is too large a number"
	}
	mant, exp, hasExp := strings.Cut(strings.ToLower(n.text), "e")
	if i, acc := f.Int64(); f.IsInt() && acc == big.Exact && hasExp {
		return fmt.Sprintf("an exponent needs a point in YAML (1.0e3, not 1e3): write %d", i)
	}
	if f.IsInt() && !wantNum {
		return fmt.Sprintf("%s is too large a number: a whole number here is at most %d", n.text, int64(math.MaxInt64))
	}
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	if hasExp {
		return fmt.Sprintf("an exponent needs a point in YAML (1.0e3, not 1e3): write %se%s", mant, exp)
	}
	return fmt.Sprintf("a number this large is written with a point: %s", mant)
}

// nullProblem says a field has no value, which is what a key written with nothing after it
// ("agents:") has.
func nullProblem(want []string) string {
	switch {
	case slices.Contains(want, "object"):
		return "no value: want its fields, indented under it"
	case slices.Contains(want, "array"):
		return `no value: want a list, as [a, b] or one "- item" a line under it`
	case len(want) > 0:
		return "no value: want " + want[0]
	}
	return "no value"
}

// shapeHint says how to write the value at ptr in the shape wanted when it has another: a list
// for one item, fields for a list, text for a number.
func (t *tree) shapeHint(ptr string, k *kind.Type) string {
	switch {
	case slices.Contains(k.Want, "array") && (k.Got == "string" || k.Got == "number" || k.Got == "boolean"):
		return fmt.Sprintf("write a list, even of one item: [%s]", t.written(ptr))
	case slices.Contains(k.Want, "array") && k.Got == "object":
		return `a list is written [a, b], or one "- item" a line`
	case slices.Contains(k.Want, "object") && k.Got == "array":
		return `fields are written "name: value", not as "- " items of a list`
	case slices.Contains(k.Want, "boolean") && k.Got == "string":
		v, _ := t.valueAt(ptr).(string)
		switch strings.ToLower(v) {
		case "true", "false":
			return "write " + strings.ToLower(v) + " without quotes"
		case "yes", "no", "on", "off", "y", "n":
			return fmt.Sprintf("%s is text in YAML 1.2: write true or false", v)
		}
		return "write true or false"
	case slices.Contains(k.Want, "string") && (k.Got == "number" || k.Got == "boolean"):
		return fmt.Sprintf("quote it to make it text: %q", t.written(ptr))
	}
	return ""
}

// durationPattern is the pattern of the schema's durations.
var durationPattern = regexp.MustCompile(`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`)

// durationFields are the places of the schema's durations, as JSON pointer tokens in which "*"
// stands for any key or index: {"agents", "*", "timeout"}.
var durationFields = sync.OnceValue(func() [][]string {
	var out [][]string
	var visit func(node any, path []string, depth int)
	visit = func(node any, path []string, depth int) {
		n, ok := node.(map[string]any)
		if !ok || depth > 32 {
			return
		}
		if ref, ok := n["$ref"].(string); ok {
			visit(schemaNode(ref, ""), path, depth+1)
		}
		if p, ok := n["pattern"].(string); ok && isDurationPattern(p) {
			out = append(out, slices.Clone(path))
		}
		for _, k := range []string{"allOf", "anyOf", "oneOf"} {
			if l, ok := n[k].([]any); ok {
				for _, sub := range l {
					visit(sub, path, depth+1)
				}
			}
		}
		for _, k := range []string{"then", "else"} {
			visit(n[k], path, depth+1)
		}
		if props, ok := n["properties"].(map[string]any); ok {
			for _, name := range slices.Sorted(maps.Keys(props)) {
				visit(props[name], append(slices.Clone(path), name), depth+1)
			}
		}
		visit(n["additionalProperties"], append(slices.Clone(path), "*"), depth+1)
		visit(n["items"], append(slices.Clone(path), "*"), depth+1)
		if pp, ok := n["patternProperties"].(map[string]any); ok {
			for _, sub := range pp {
				visit(sub, append(slices.Clone(path), "*"), depth+1)
			}
		}
	}
	visit(rawSchema(), nil, 0)
	return out
})

// durationRange reports the durations the schema's pattern accepts but Go cannot hold, being
// longer than 2562047h (about 292 years); without it they would fail decoding with no place.
func durationRange(t *tree) (Errors, [][]string) {
	var out Errors
	var bad [][]string
	for ptr := range t.vals {
		if ptr == "" {
			continue
		}
		toks := strings.Split(ptr[1:], "/")
		if !slices.ContainsFunc(durationFields(), func(f []string) bool { return fieldMatches(f, toks) }) {
			continue
		}
		s, ok := t.valueAt(ptr).(string)
		if !ok || !durationPattern.MatchString(s) {
			continue
		}
		if _, err := time.ParseDuration(s); err != nil {
			out = append(out, t.errorAt(ptr, fmt.Sprintf("%q is too long: a duration is at most %s", s, shortDuration(time.Duration(math.MaxInt64).Truncate(time.Hour)))))
			loc := make([]string, len(toks))
			for i, tok := range toks {
				loc[i] = unescapePointer(tok)
			}
			bad = append(bad, loc)
		}
	}
	return out, bad
}

// fieldMatches reports whether the pointer tokens toks are of the field f, whose "*" tokens
// match any key or index.
func fieldMatches(f, toks []string) bool {
	if len(f) != len(toks) {
		return false
	}
	for i, tok := range f {
		if tok != "*" && tok != unescapePointer(toks[i]) {
			return false
		}
	}
	return true
}
