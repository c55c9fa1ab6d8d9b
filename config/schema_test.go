package config_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/google/go-cmp/cmp"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/troupehq/troupe/config"
)

// exampleConfigs are every configuration file checked in that should load: the examples'
// troupe.yaml files and the test data of this package and of cmd/troupe, except files named
// bad*.yaml (deliberately broken).
func exampleConfigs(t testing.TB) []string {
	t.Helper()
	var files []string
	for _, pat := range []string{"../examples/*/troupe.yaml", "testdata/*.yaml", "../cmd/troupe/testdata/*.yaml", "../cmd/troupe/testdata/*/troupe.yaml"} {
		m, err := filepath.Glob(pat)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range m {
			if !strings.HasPrefix(filepath.Base(f), "bad") && !slices.Contains(files, f) {
				files = append(files, f)
			}
		}
	}
	if len(files) < 2 {
		t.Fatalf("found %d configuration files: %v", len(files), files)
	}
	return files
}

// schemaFromDisk compiles troupe.schema.json as an editor would: from the file, not from the
// copy embedded in the package.
func schemaFromDisk(t testing.TB) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	s, err := c.Compile("troupe.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// yamlToJSONValue reads YAML with a general-purpose decoder (not the loader's) as JSON values.
func yamlToJSONValue(t testing.TB, data []byte) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func TestEmbeddedSchemaIsTheFile(t *testing.T) {
	b, err := os.ReadFile("troupe.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, config.Schema) {
		t.Error("config.Schema differs from troupe.schema.json")
	}
}

// Every example configuration meets the schema and loads.
func TestExamplesMeetSchema(t *testing.T) {
	s := schemaFromDisk(t)
	for _, path := range exampleConfigs(t) {
		t.Run(path, func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Validate(yamlToJSONValue(t, data)); err != nil {
				t.Errorf("schema: %v", err)
			}
			if _, err := config.Load(path); err != nil {
				t.Errorf("Load: %v", err)
			}
		})
	}
}

// The schema and the loader accept and reject the same fields: an unknown field inserted
// into any object of a file that uses every field is rejected by both, and inserted into a
// free-form object (env, when, kpi_map, an inline schema) accepted by both.
func TestSchemaAndLoaderAgreeOnFields(t *testing.T) {
	s := schemaFromDisk(t)
	data, err := os.ReadFile("testdata/all.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	var objects [][]string
	var walk func(v any, path []string)
	walk = func(v any, path []string) {
		switch x := v.(type) {
		case map[string]any:
			objects = append(objects, slices.Clone(path))
			for k, c := range x {
				walk(c, append(path, k))
			}
		case []any:
			for i, c := range x {
				walk(c, append(path, strings.Repeat("#", i+1)))
			}
		}
	}
	walk(doc, nil)
	if len(objects) < 30 {
		t.Fatalf("only %d objects in testdata/all.yaml", len(objects))
	}
	rejected := 0
	for _, path := range objects {
		name := "/" + strings.Join(path, "/")
		t.Run(name, func(t *testing.T) {
			mutated := insert(t, doc, path, "zz_unknown", "x")
			b, err := json.Marshal(mutated)
			if err != nil {
				t.Fatal(err)
			}
			schemaErr := s.Validate(yamlToJSONValue(t, b)) // JSON is YAML
			_, loadErr := config.Parse("testdata/all.yaml", b)
			if (schemaErr == nil) != (loadErr == nil) {
				t.Fatalf("schema says %v; loader says %v", schemaErr, loadErr)
			}
			if loadErr != nil {
				rejected++
				var es config.Errors
				if !errors.As(loadErr, &es) || !strings.Contains(loadErr.Error(), "zz_unknown") {
					t.Errorf("loader: %v", loadErr)
				}
			}
		})
	}
	if rejected < 30 {
		t.Errorf("only %d of %d objects reject unknown fields", rejected, len(objects))
	}
}

// insert returns a copy of doc with key=value added to the object at path (array indexes
// written as runs of #).
func insert(t *testing.T, doc any, path []string, key string, value any) any {
	switch x := doc.(type) {
	case map[string]any:
		c := make(map[string]any, len(x)+1)
		for k, v := range x {
			c[k] = v
		}
		if len(path) == 0 {
			c[key] = value
			return c
		}
		c[path[0]] = insert(t, x[path[0]], path[1:], key, value)
		return c
	case []any:
		c := slices.Clone(x)
		i := len(path[0]) - 1
		c[i] = insert(t, x[i], path[1:], key, value)
		return c
	}
	t.Fatalf("path %v leads to %T", path, doc)
	return nil
}

// The Go types the loader decodes into declare exactly the schema's properties, object by
// object: a field added to one and not the other fails here.
func TestSchemaMatchesGoTypes(t *testing.T) {
	var root map[string]any
	if err := json.Unmarshal(config.Schema, &root); err != nil {
		t.Fatal(err)
	}
	resolve := resolver(root)
	checked := 0
	var match func(path string, s map[string]any, typ reflect.Type)
	match = func(path string, s map[string]any, typ reflect.Type) {
		s = resolve(s)
		for typ.Kind() == reflect.Pointer {
			typ = typ.Elem()
		}
		switch typ.Kind() {
		case reflect.Struct:
			if typ == reflect.TypeFor[config.Duration]() {
				return
			}
			props, _ := s["properties"].(map[string]any)
			if s["additionalProperties"] != false {
				t.Errorf("%s: the schema allows unknown fields", path)
			}
			fields := jsonFields(typ)
			var want []string
			for k := range props {
				want = append(want, k)
			}
			sort.Strings(want)
			var got []string
			for k := range fields {
				got = append(got, k)
			}
			sort.Strings(got)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s: fields (-schema +Go):\n%s", path, diff)
			}
			checked++
			for k, f := range fields {
				if ps, ok := props[k].(map[string]any); ok {
					match(path+"."+k, ps, f)
				}
			}
		case reflect.Map:
			if typ.Elem().Kind() == reflect.Interface {
				return
			}
			ap, ok := s["additionalProperties"].(map[string]any)
			if props, isObj := s["properties"].(map[string]any); !ok && isObj && s["additionalProperties"] == false {
				// A map with a fixed set of keys (flag_agents).
				for k, ps := range props {
					match(path+"."+k, ps.(map[string]any), typ.Elem())
				}
				return
			}
			if !ok {
				t.Errorf("%s: a Go map, but the schema gives its values no schema", path)
				return
			}
			match(path+"[*]", ap, typ.Elem())
		case reflect.Slice:
			if typ.Elem().Kind() == reflect.Uint8 { // json.RawMessage: any JSON
				return
			}
			items, ok := s["items"].(map[string]any)
			if !ok {
				t.Errorf("%s: a Go slice, but the schema gives its items no schema", path)
				return
			}
			match(path+"[]", items, typ.Elem())
		}
	}
	match("", root, reflect.TypeFor[config.File]())
	if checked < 20 {
		t.Errorf("checked %d objects", checked)
	}
}

// jsonFields returns the JSON names of a struct's fields, embedded structs' fields promoted.
func jsonFields(typ reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for f := range typ.Fields() {
		tag := f.Tag.Get("json")
		if tag == "-" || !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			for k, v := range jsonFields(f.Type) {
				out[k] = v
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

// resolver returns a function that replaces a schema holding a "$ref" to root's $defs with the
// definition, the referring schema's own keywords (a description) kept over it.
func resolver(root map[string]any) func(map[string]any) map[string]any {
	defs := root["$defs"].(map[string]any)
	return func(s map[string]any) map[string]any {
		ref, ok := s["$ref"].(string)
		if !ok {
			return s
		}
		merged := map[string]any{}
		for k, v := range defs[strings.TrimPrefix(ref, "#/$defs/")].(map[string]any) {
			merged[k] = v
		}
		for k, v := range s {
			if k != "$ref" {
				merged[k] = v
			}
		}
		return merged
	}
}
