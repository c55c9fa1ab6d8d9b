package route

import (
	"fmt"
	"maps"
	"slices"

	"github.com/troupehq/troupe"
)

// Validate reports every problem of the table at once, as troupe.ValidationErrors whose
// fields are JSON paths: "triggers[2].target", "intents.causal[0]", "fallbacks.tutor".
// An agent that c does not know is a problem matching troupe.ErrUnknownAgent; with a nil c
// only the table's shape is checked. A nil or zero Rules is valid.
func (r *Rules) Validate(c troupe.Catalog) error {
	if r == nil {
		return nil
	}
	var es troupe.ValidationErrors
	bad := func(field, problem string, err error) {
		es = append(es, &troupe.ValidationError{Object: "rules", Field: field, Problem: problem, Err: err})
	}
	agent := func(field, name string) {
		switch {
		case name == "":
			bad(field, "required", nil)
		case c != nil && !c.Has(name):
			bad(field, fmt.Sprintf("unknown agent %q", name), troupe.ErrUnknownAgent)
		}
	}

	seen := make(map[string]int, len(r.Triggers))
	for i, t := range r.Triggers {
		at := fmt.Sprintf("triggers[%d]", i)
		if t.Name != "" {
			if j, dup := seen[t.Name]; dup {
				bad(at+".name", fmt.Sprintf("%q is also the name of triggers[%d]", t.Name, j), nil)
			} else {
				seen[t.Name] = i
			}
		}
		for k, p := range t.Patterns {
			if normalize(p) == "" {
				bad(fmt.Sprintf("%s.patterns[%d]", at, k), "blank pattern never matches", nil)
			}
		}
		for _, k := range slices.Sorted(maps.Keys(t.When)) {
			if !encodable(t.When[k]) {
				bad(at+".when."+k, fmt.Sprintf("%v is not a JSON value", t.When[k]), nil)
			}
		}
		agent(at+".target", t.Target)
	}

	candidates := func(field string, table map[string][]string) {
		for _, key := range slices.Sorted(maps.Keys(table)) {
			if key == "" {
				bad(field, "empty key", nil)
			}
			if len(table[key]) == 0 {
				bad(field+"."+key, "no candidate agents", nil)
			}
			for k, name := range table[key] {
				agent(fmt.Sprintf("%s.%s[%d]", field, key, k), name)
			}
		}
	}
	candidates("intents", r.Intents)
	candidates("kpi_map", r.KPIMap)

	for _, primary := range slices.Sorted(maps.Keys(r.Fallbacks)) {
		fb := r.Fallbacks[primary]
		switch {
		case primary == "":
			bad("fallbacks", "empty key", nil)
		case c != nil && !c.Has(primary):
			bad("fallbacks", fmt.Sprintf("key: unknown agent %q", primary), troupe.ErrUnknownAgent)
		}
		if fb == primary && fb != "" {
			bad("fallbacks."+primary, "an agent cannot be its own fallback", nil)
			continue
		}
		agent("fallbacks."+primary, fb)
	}

	if r.Default != "" {
		agent("default", r.Default)
	}
	if len(es) == 0 {
		return nil
	}
	return es
}
