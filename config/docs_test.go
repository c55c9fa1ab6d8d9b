package config_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/troupehq/troupe/config"
)

var update = flag.Bool("update", false, "rewrite docs/config.md from the schema")

// docs/config.md is generated from troupe.schema.json: every field of the schema, and
// nothing else, with its type, whether it is required and the schema's description.
// go test ./config -run TestConfigReference -update rewrites it.
func TestConfigReference(t *testing.T) {
	got := reference(t)
	const path = "../docs/config.md"
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./config -run TestConfigReference -update)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("docs/config.md is not what troupe.schema.json says; run go test ./config -run TestConfigReference -update (-file +schema):\n%s", diff)
	}
}

func reference(t *testing.T) string {
	root, order := decodeOrdered(t, config.Schema)
	resolve := resolver(root)
	var b strings.Builder
	fmt.Fprintf(&b, `# Configuration reference

<!-- Generated from config/troupe.schema.json by go test ./config -run TestConfigReference -update. Do not edit. -->

A troupe configuration is one YAML file, usually troupe.yaml. It describes %s
Its JSON Schema, [config/troupe.schema.json](../config/troupe.schema.json), lets editors complete and
check it; add this first line to a file for editors using the YAML language server:

    # yaml-language-server: $schema=https://raw.githubusercontent.com/troupehq/troupe/main/config/troupe.schema.json

troupe validate FILE checks a file, reporting every problem at once as file:line:column: field: problem
(no field for a problem of the file as a whole: its syntax, its size).
It builds every agent and plans each of the file's examples as troupe plan would; what leaves plain-text
queries unplannable but the file usable with parsed ones (--input), such as routing with no parser, is a warning;
so is an MCP server no agent uses, which building neither starts nor checks.
Unknown fields are errors everywhere except in the free-form maps marked *map* below.
Durations are written as Go writes them, with their unit: 30s, 1m30s, 250ms, and zero as 0s; a bare number is not one.

Each section lists an object's fields: name, type, whether it is required, and what it means.
`, root["description"])
	type section struct {
		path   string
		schema map[string]any
	}
	queue := []section{{"(top level)", root}}
	seen := map[string]bool{}
	for len(queue) > 0 {
		sec := queue[0]
		queue = queue[1:]
		s := resolve(sec.schema)
		props, _ := s["properties"].(map[string]any)
		if seen[sec.path] || len(props) == 0 {
			continue
		}
		seen[sec.path] = true
		fmt.Fprintf(&b, "\n## %s\n\n", sec.path)
		if d, ok := s["description"].(string); ok && sec.path != "(top level)" {
			b.WriteString(d + "\n\n")
		}
		b.WriteString("| field | type | required | description |\n| --- | --- | --- | --- |\n")
		var req []string
		for _, r := range asSlice(s["required"]) {
			req = append(req, r.(string))
		}
		names := order(props) // as the schema lists them
		for _, n := range names {
			ps := resolve(props[n].(map[string]any))
			full := n
			if sec.path != "(top level)" {
				full = sec.path + "." + n
			}
			typ, child := typeOf(ps, resolve, full)
			r := ""
			if slices.Contains(req, n) {
				r = "yes"
			}
			desc, _ := ps["description"].(string)
			if e := enumOf(ps); e != "" {
				desc += " One of " + e + "."
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", n, typ, r, strings.ReplaceAll(desc, "|", "\\|"))
			if child != nil {
				queue = append(queue, section{child.path, child.schema})
			}
		}
	}
	return b.String()
}

type childSection struct {
	path   string
	schema map[string]any
}

// typeOf names a property's type and returns the object section it leads to, if any.
func typeOf(s map[string]any, resolve func(map[string]any) map[string]any, path string) (string, *childSection) {
	if _, ok := s["const"]; ok {
		return fmt.Sprintf("`%v`", s["const"]), nil
	}
	if _, ok := s["enum"]; ok {
		return "string", nil
	}
	if p, ok := s["pattern"].(string); ok && strings.Contains(p, "(ns|us") {
		return "duration", nil
	}
	switch tt := s["type"].(type) {
	case []any:
		var parts []string
		for _, x := range tt {
			parts = append(parts, x.(string))
		}
		return strings.Join(parts, " or "), nil
	case string:
		switch tt {
		case "array":
			items, _ := s["items"].(map[string]any)
			if items == nil {
				return "list", nil
			}
			it, child := typeOf(resolve(items), resolve, path+"[]")
			return "list of " + it, child
		case "object":
			if _, ok := s["properties"]; ok {
				return fmt.Sprintf("[object](#%s)", anchor(path)), &childSection{path, s}
			}
			if ap, ok := s["additionalProperties"].(map[string]any); ok {
				vt, child := typeOf(resolve(ap), resolve, path+".*NAME*")
				return "map of " + vt, child
			}
			return "*map* (any fields)", nil
		case "integer", "number":
			// A bound short of what the Go field holds is the field's own: say it.
			lo, hasLo := s["minimum"].(float64)
			hi, hasHi := s["maximum"].(float64)
			if hasLo && hasHi && hi < 1e15 {
				// In digits: %v writes 1073741824 as 1.073741824e+09.
				return fmt.Sprintf("%s, %s to %s", tt, strconv.FormatFloat(lo, 'f', -1, 64), strconv.FormatFloat(hi, 'f', -1, 64)), nil
			}
		}
		return tt, nil
	}
	return "any", nil
}

func anchor(path string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(path) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		}
	}
	return b.String()
}

func enumOf(s map[string]any) string {
	var vals []string
	for _, v := range asSlice(s["enum"]) {
		vals = append(vals, fmt.Sprintf("`%v`", v))
	}
	return strings.Join(vals, ", ")
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}

// decodeOrdered decodes the JSON object data and returns it with a function that lists the
// keys of any object in it (the properties of a section) in the order data writes them: the
// order of the file, not of the first mention of a name anywhere in it, which another
// object's field of the same name would decide.
func decodeOrdered(t *testing.T, data []byte) (map[string]any, func(map[string]any) []string) {
	t.Helper()
	keys := map[uintptr][]string{}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var value func() any
	value = func() any {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		switch tok {
		case json.Delim('{'):
			m := map[string]any{}
			var order []string
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					t.Fatal(err)
				}
				order = append(order, k.(string))
				m[k.(string)] = value()
			}
			dec.Token() // }
			keys[reflect.ValueOf(m).Pointer()] = order
			return m
		case json.Delim('['):
			var l []any
			for dec.More() {
				l = append(l, value())
			}
			dec.Token() // ]
			return l
		}
		if n, ok := tok.(json.Number); ok {
			f, err := n.Float64()
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
		return tok
	}
	root, _ := value().(map[string]any)
	return root, func(m map[string]any) []string {
		out := keys[reflect.ValueOf(m).Pointer()]
		if len(out) != len(m) {
			t.Fatalf("no order recorded for an object of keys %v", slices.Sorted(maps.Keys(m)))
		}
		return out
	}
}
