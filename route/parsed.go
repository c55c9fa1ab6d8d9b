package route

import (
	"fmt"
	"slices"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/internal/jsonvalue"
)

// parsedQuery is what Route reads of a parsed query: seed 000's intent_type and the KPIs its
// KPI_ROUTING_MAP is keyed by.
type parsedQuery struct {
	intent string   // "" when none is given
	kpis   []string // in the order the query names them
}

// readParsed reads the intent (when readIntent) and the KPIs (when readKPIs) of parsed the way
// plan.CriteriaFromParsed reads them, so that the planner and the router accept and refuse the
// same shapes:
//
//   - the intent is "intent" or "intent_type", a string; when both are given they must agree;
//   - the KPIs are "kpis", a list of strings or a single KPI as a string ("" names none), or
//     the "kpis" list of an "entities" object; when both are given they must agree.
//
// A nil value counts as absent. Every problem is reported at once, as troupe.ValidationErrors
// naming the key.
func readParsed(parsed map[string]any, readIntent, readKPIs bool) (parsedQuery, error) {
	var q parsedQuery
	var es troupe.ValidationErrors
	bad := func(key, problem string) {
		es = append(es, &troupe.ValidationError{Object: "parsed_query", Field: key, Problem: problem})
	}
	want := func(key, kind string, v any) {
		bad(key, fmt.Sprintf("want %s, got %s", kind, jsonvalue.KindOfStrings(v)))
	}

	if readIntent {
		from := ""
		for _, key := range []string{"intent", "intent_type"} {
			v := parsed[key]
			if v == nil {
				continue
			}
			s, ok := v.(string)
			switch {
			case !ok:
				want(key, "a string", v)
			case from != "" && s != q.intent:
				bad(key, fmt.Sprintf("%q conflicts with %s %q", s, from, q.intent))
			default:
				q.intent, from = s, key
			}
		}
	}

	if readKPIs {
		top, topOK := []string(nil), false
		if v := parsed["kpis"]; v != nil {
			if top, topOK = jsonvalue.StringOrStrings(v); topOK {
				q.kpis = top
			} else {
				want("kpis", "a string or a list of strings", v)
			}
		}
		if v := parsed["entities"]; v != nil {
			var nested any
			present := false
			switch m := v.(type) {
			case map[string]any:
				nested, present = m["kpis"]
			case map[string][]string:
				var vs []string
				vs, present = m["kpis"]
				nested = vs
			default:
				want("entities", "an object of string lists", v)
			}
			if present {
				vs, ok := jsonvalue.Strings(nested)
				switch {
				case !ok:
					want("entities.kpis", "a list of strings", nested)
				case topOK && !slices.Equal(top, vs):
					bad("entities.kpis", `conflicts with top-level "kpis"`)
				case !topOK:
					q.kpis = vs
				}
			}
		}
	}

	if len(es) > 0 {
		return parsedQuery{}, fmt.Errorf("route: parsed query: %w", es)
	}
	return q, nil
}
