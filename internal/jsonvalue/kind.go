package jsonvalue

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// The functions of this file name kinds of JSON values in JSON's terms, for error messages read
// by whoever wrote the JSON, who need know no Go: "a list of strings", not "[]string";
// "an object", not "map[string]json.RawMessage".

var (
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	rawMessage      = reflect.TypeFor[json.RawMessage]()
)

// KindWanted names the kind of JSON value encoding/json decodes into a Go value of type t.
func KindWanted(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == rawMessage:
		return "any JSON value"
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8:
		return "a string" // bytes, in base64
	}
	if reflect.PointerTo(t).Implements(textUnmarshaler) && !reflect.PointerTo(t).Implements(jsonUnmarshaler) {
		return "a string" // a type that reads itself from text
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "a whole number"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return "a whole number, 0 or more"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		if e := kindsWanted(t.Elem()); e != "" {
			return "a list of " + e
		}
		return "a list"
	case reflect.Map:
		if e := kindsWanted(t.Elem()); e != "" {
			return "an object of " + e
		}
		return "an object"
	case reflect.Struct:
		return "an object"
	case reflect.Interface:
		return "any JSON value"
	}
	return "a value of another kind"
}

// kindsWanted names, in the plural, the kind of the items of a list or an object of Go type
// t ("strings", "lists of strings"), or "" when they may be of any kind.
func kindsWanted(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Interface:
		return ""
	case reflect.Slice, reflect.Array:
		if t == rawMessage {
			return ""
		}
		if e := kindsWanted(t.Elem()); e != "" {
			return "lists of " + e
		}
		return "lists"
	case reflect.Map, reflect.Struct:
		return "objects"
	case reflect.Pointer:
		return kindsWanted(t.Elem())
	}
	k := strings.TrimPrefix(strings.TrimPrefix(KindWanted(t), "a "), "an ")
	if w, rest, ok := strings.Cut(k, ","); ok { // "whole number, 0 or more"
		return w + "s," + rest
	}
	return k + "s"
}

// KindOf names the kind of JSON value v encodes to: "an object", "a list", "a string", "a
// number", "a boolean" or "null".
func KindOf(v any) string {
	switch x := jsonValue(v).(type) {
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	case string:
		return "a string"
	case number:
		return "a number"
	case bool:
		return "a boolean"
	case opaque:
		return fmt.Sprintf("a value JSON cannot hold (%T)", x.v)
	}
	return "a value of another kind"
}

// KindOfStrings is KindOf for a value wanted as a string or a list of strings: a list that
// holds something else is named by its first such item ("a list whose item 2 is a number").
func KindOfStrings(v any) string {
	if list, ok := jsonValue(v).([]any); ok {
		for i, item := range list {
			if _, ok := jsonValue(item).(string); !ok {
				return fmt.Sprintf("a list whose item %d is %s", i+1, KindOf(item))
			}
		}
		return "a list of strings"
	}
	return KindOf(v)
}
