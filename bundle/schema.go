package bundle

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/troupehq/troupe/internal/schema"
)

// Schema is a compiled JSON Schema that replicates are validated against, and the source of
// what the distances need to know about fields:
//
//   - "minimum" and "maximum" of a number normalize its distance (|a−b| / (maximum−minimum));
//   - "x-weight" (a number ≥ 0, default 1) weighs a property in its object's distance;
//   - "x-distance" overrides how a field is compared: "categorical" (equal or not, also for
//     numbers), "text" (Jaccard distance of lower-cased words), "set" (Jaccard distance of the
//     elements) or "sequence" (position by position);
//   - "uniqueItems": true makes an array a set.
//
// Only "properties" and "items" are followed to find a field's schema; a field reached through
// "$ref", combinators or patternProperties gets the defaults. References to other documents are
// refused: compiling reads nothing but the given bytes.
//
// A *Schema is immutable and safe for concurrent use. A nil *Schema validates everything and
// gives every field the defaults.
type Schema struct {
	compiled *jsonschema.Schema
	root     *node
}

// node is what the distances know about one field.
type node struct {
	props    map[string]*node
	items    *node
	min, max float64
	bounded  bool
	weight   float64
	mode     string // "", categorical, text, set, sequence
}

var defaultNode = &node{weight: 1}

func (n *node) prop(k string) *node {
	if n != nil {
		if c, ok := n.props[k]; ok {
			return c
		}
	}
	return defaultNode
}

func (n *node) item() *node {
	if n != nil && n.items != nil {
		return n.items
	}
	return defaultNode
}

type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("bundle: schema: reference to %s: only the schema's own document can be read", url)
}

// CompileSchema compiles a JSON Schema document. Errors name the schema location at fault.
func CompileSchema(doc []byte) (*Schema, error) {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return nil, fmt.Errorf("bundle: schema: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(noLoader{})
	const loc = "mem://bundle/schema.json"
	if err := c.AddResource(loc, v); err != nil {
		return nil, fmt.Errorf("bundle: schema: %w", err)
	}
	compiled, err := c.Compile(loc)
	if err != nil {
		return nil, fmt.Errorf("bundle: schema: %w", err)
	}
	root, err := readNode(v, "#", 0)
	if err != nil {
		return nil, err
	}
	return &Schema{compiled: compiled, root: root}, nil
}

func readNode(v any, at string, depth int) (*node, error) {
	m, ok := v.(map[string]any)
	if !ok || depth > maxDepth {
		return defaultNode, nil
	}
	n := &node{weight: 1}
	min, hasMin := number(m["minimum"])
	max, hasMax := number(m["maximum"])
	if hasMin && hasMax && max > min && !math.IsInf(max-min, 0) {
		n.min, n.max, n.bounded = min, max, true
	}
	if w, ok := m["x-weight"]; ok {
		f, isNum := number(w)
		if !isNum || f < 0 || math.IsInf(f, 0) {
			return nil, fmt.Errorf("bundle: schema: %s/x-weight: want a finite number ≥ 0, got %v", at, w)
		}
		n.weight = f
	}
	if u, _ := m["uniqueItems"].(bool); u {
		n.mode = "set"
	}
	if d, ok := m["x-distance"]; ok {
		s, _ := d.(string)
		switch s {
		case "categorical", "text", "set", "sequence":
			n.mode = s
		default:
			return nil, fmt.Errorf("bundle: schema: %s/x-distance: want categorical, text, set or sequence, got %v", at, d)
		}
	}
	if props, ok := m["properties"].(map[string]any); ok {
		n.props = make(map[string]*node, len(props))
		for k, pv := range props {
			c, err := readNode(pv, at+"/properties/"+escapePointer(k), depth+1)
			if err != nil {
				return nil, err
			}
			n.props[k] = c
		}
	}
	if it, ok := m["items"]; ok {
		c, err := readNode(it, at+"/items", depth+1)
		if err != nil {
			return nil, err
		}
		n.items = c
	}
	return n, nil
}

// Validate checks v against the schema and returns every violation as "at <JSON pointer>:
// <problem>", sorted; none means v is valid. v is a value as encoding/json decodes JSON.
func (s *Schema) Validate(v any) []string {
	if s == nil || s.compiled == nil {
		return nil
	}
	err := s.compiled.Validate(v)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []string{"bundle: schema: " + err.Error()}
	}
	var out []string
	for _, p := range schema.Problems(ve) {
		out = append(out, "at "+p.String())
	}
	slices.Sort(out)
	out = slices.Compact(out)
	return out
}

// number reads a JSON number in any of the forms decoders and Go code produce.
func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil || math.IsInf(f, 0) // out of range reads as ±Inf
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case string, bool, nil, map[string]any, []any:
		return 0, false
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return float64(rv.Int()), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return float64(rv.Uint()), true
	case reflect.Float32, reflect.Float64:
		return rv.Float(), true
	}
	return 0, false
}

func escapePointer(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}
