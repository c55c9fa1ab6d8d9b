package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/config"
	"github.com/troupehq/troupe/internal/jsonvalue"
)

// This file checks a request before anything runs: that its text is UTF-8, that --input's
// objects have only the fields troupe reads, and that the engine will accept it, so that a
// mistake in the request is a usage error naming the field rather than a run that fails at its
// start (or, for troupe plan, a plan of a request no run would take).

// checkRequest refuses what the engine refuses when a run starts (troupe.Request.Validate),
// naming each field by its JSON path. agents are the agents the run may name (the policy's
// fallbacks).
func checkRequest(req troupe.Request, agents troupe.AgentSet) error {
	err := req.Validate(agents)
	var ves troupe.ValidationErrors
	if !errors.As(err, &ves) {
		return err
	}
	problems := make([]string, len(ves))
	for i, e := range ves {
		problems[i] = e.Field + ": " + e.Problem
	}
	return errors.New(strings.Join(problems, "; "))
}

// fileAgents is the agent set of a workflow file: the agents it declares.
type fileAgents struct{ f *config.File }

func (a fileAgents) Has(name string) bool { _, ok := a.f.Agents[name]; return ok }

// notUTF8 says where s stops being UTF-8 text — the byte, its value and the text before it —
// or returns "" when s is UTF-8. A string from the command line or a JSON file that is not would
// otherwise reach the agents with U+FFFD in place of the byte.
func notUTF8(s string) string {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			before := []rune(s[:i])
			if len(before) > 20 {
				before = before[len(before)-20:]
			}
			where := "at its start"
			if len(before) > 0 {
				where = fmt.Sprintf("after %q", string(before))
			}
			return fmt.Sprintf("byte %d (0x%02x, %s) is not UTF-8", i+1, s[i], where)
		}
		i += n
	}
	return ""
}

// lineCol is the line and column (both from 1, the column in bytes) of the byte at off in b.
func lineCol(b []byte, off int) (line, col int) {
	line, col = 1, 1
	for _, c := range b[:min(off, len(b))] {
		if c == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return line, col
}

// unknownField finds, in the JSON b decoded into type t, the first key (in sorted order) that
// t has no field for, at any depth, and says where it is and which fields the object has. It
// returns nil when every key has a field, and leaves a value of the wrong kind to the decoder,
// which says so. Types that decode themselves (json.Unmarshaler) are theirs to check.
func unknownField(b []byte, t reflect.Type, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(reflect.TypeFor[json.Unmarshaler]()) {
		return nil
	}
	at := func(k string) string {
		if path == "" {
			return k
		}
		return path + "." + k
	}
	switch t.Kind() {
	case reflect.Struct:
		var obj map[string]json.RawMessage
		if json.Unmarshal(b, &obj) != nil {
			return nil
		}
		names, types := jsonvalue.Fields(t)
		for _, k := range slices.Sorted(maps.Keys(obj)) {
			ft, ok := types[k]
			if !ok {
				hint := ""
				if s := config.Closest(k, names); s != "" {
					hint = fmt.Sprintf(" (did you mean %q?)", s)
				}
				return fmt.Errorf("unknown field %q%s: %s's fields are %s", at(k), hint, path, strings.Join(names, ", "))
			}
			if err := unknownField(obj[k], ft, at(k)); err != nil {
				return err
			}
		}
	case reflect.Map:
		var obj map[string]json.RawMessage
		if json.Unmarshal(b, &obj) != nil {
			return nil
		}
		for _, k := range slices.Sorted(maps.Keys(obj)) {
			if err := unknownField(obj[k], t.Elem(), at(k)); err != nil {
				return err
			}
		}
	case reflect.Slice, reflect.Array:
		var list []json.RawMessage
		if json.Unmarshal(b, &list) != nil {
			return nil
		}
		for i, v := range list {
			if err := unknownField(v, t.Elem(), path+"["+strconv.Itoa(i)+"]"); err != nil {
				return err
			}
		}
	}
	return nil
}

// parsedProblem rewrites err, the planner's or router's refusal of a parsed query read from
// --input, in the file's terms: each key whose value has the wrong JSON type becomes
// `field "parsed_query.kpis": got a number, want a string or a list of strings`, with the
// kind of value found in JSON's words rather than Go's (float64, []interface {}). prefix is
// where the parsed query sits in the file ("parsed_query." or "" for a file that is one). It
// returns nil when err holds no such problem: a refusal of the request's meaning (no intent,
// conflicting keys) is the plan's to report.
func parsedProblem(err error, pq map[string]any, prefix string) error {
	var es []*troupe.ValidationError
	var ves troupe.ValidationErrors
	var ve *troupe.ValidationError
	switch {
	case errors.As(err, &ves):
		es = ves
	case errors.As(err, &ve):
		es = []*troupe.ValidationError{ve}
	}
	var problems []string
	for _, e := range es {
		want, _, ok := strings.Cut(e.Problem, ", got ")
		if e.Object != "parsed_query" || !ok || !strings.HasPrefix(want, "want ") {
			continue
		}
		v, found := lookupPath(pq, e.Field)
		if !found {
			continue
		}
		problems = append(problems, fmt.Sprintf("field %q: got %s, %s", prefix+e.Field, jsonvalue.KindOfStrings(v), want))
	}
	if len(problems) == 0 {
		return nil
	}
	return errors.New(strings.Join(problems, "; "))
}

// lookupPath finds the value at a dotted path ("entities.kpis") in m.
func lookupPath(m map[string]any, path string) (any, bool) {
	var v any = m
	for k := range strings.SplitSeq(path, ".") {
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = obj[k]; !ok {
			return nil, false
		}
	}
	return v, true
}
