package jsonvalue

import (
	"encoding"
	"encoding/json"
	"reflect"
)

var (
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
)

// KindWanted names, in JSON's terms, the kind of value encoding/json decodes into a Go value
// of type t: "an object" for a map or a struct, not "map[string]json.RawMessage". It is for
// error messages read by whoever wrote the JSON, who knows no Go.
func KindWanted(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(textUnmarshaler) && !reflect.PointerTo(t).Implements(jsonUnmarshaler) {
		return "a string" // time.Time's kind, and any other type that reads itself from text
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "a whole number"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return "a whole number, 0 or more"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Interface:
		return "any JSON value"
	}
	return "a value of another kind"
}
