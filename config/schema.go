package config

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
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
	err = s.Validate(t.value)
	var ve *jsonschema.ValidationError
	if err == nil || !errors.As(err, &ve) {
		if err != nil {
			return Errors{{File: t.path, Problem: err.Error()}}, nil
		}
		return nil, nil
	}
	var out Errors
	var bad [][]string
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
			if len(loc) == 2 && loc[0] == "agents" {
				problem = fmt.Sprintf("%q is not a valid agent name: a letter, then letters, digits, _ and -", k.Property)
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
			problem := e.ErrorKind.LocalizedString(printer)
			if isDurationPattern(k.Want) {
				problem = fmt.Sprintf("%q is not a duration: write one as Go does, such as 30s, 1m30s or 250ms", k.Got)
				if d, err := time.ParseDuration(k.Got); err == nil && d < 0 {
					problem = fmt.Sprintf("%q is negative: a duration here is positive, such as 30s", k.Got)
				} else if _, err := strconv.ParseFloat(k.Got, 64); err == nil {
					problem = fmt.Sprintf("%q is not a duration: %s", k.Got, unitless(k.Got))
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

// Closest returns the candidate nearest to name, if one is within two edits of it (a typo),
// for "did you mean" messages; the first of equally near ones.
func Closest(name string, candidates []string) string {
	best, bestD := "", 3
	for _, c := range candidates {
		if d := editDistance(name, c); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
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
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
