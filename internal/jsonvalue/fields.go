package jsonvalue

import (
	"reflect"
	"strings"
)

// Fields are the JSON names of struct type t's exported fields, in declaration order, and the
// type of each: a tag's name, or the Go name when the tag gives none; a field tagged "-" is
// left out. troupe's wire types embed no structs, whose fields encoding/json would promote.
func Fields(t reflect.Type) (names []string, types map[string]reflect.Type) {
	types = map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if !f.IsExported() || tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		names = append(names, name)
		types[name] = f.Type
	}
	return names, types
}
