package plan

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/internal/jsonvalue"
)

// CriteriaFromParsed derives seed 000's AgentSelectionCriteria from a parsed query (the NLP
// layer's parsed_query, typically decoded from JSON):
//
//   - intent_type comes from "intent" or "intent_type" (both may be given if they agree);
//   - "kpis" is the KPIs entity (EntityKPIs): a list of strings, or a single KPI as a string
//     ("" names none), as the rule router route.Rules reads it;
//   - "preferred_agents", "excluded_agents" and "secondary_intents" fill those fields;
//   - "complexity", "requires_ml", "requires_causal_inference", "requires_experimentation",
//     "enable_discovery", "discovery_config", "confidence_threshold" and
//     "time_budget_seconds" are copied;
//   - every other key whose value is a list of strings ([]string, or []any holding only
//     strings) becomes an entity, as do the lists of an "entities" object (an entity given
//     both there and at the top level must agree);
//   - everything else (strings such as "time_period", numbers, objects) is ignored, and so is
//     any key whose value is nil.
//
// A known key with a value of the wrong type is an error naming the key; so are criteria that
// fail troupe.SelectionCriteria.Validate. Entity lists are copied, never shared with parsed.
func CriteriaFromParsed(parsed map[string]any) (*troupe.SelectionCriteria, error) {
	c := &troupe.SelectionCriteria{}
	var es troupe.ValidationErrors
	bad := func(key, problem string) {
		es = append(es, &troupe.ValidationError{Object: "parsed_query", Field: key, Problem: problem})
	}
	want := func(key, kind string, v any) {
		bad(key, fmt.Sprintf("want %s, got %s", kind, jsonvalue.KindOfStrings(v)))
	}
	addEntity := func(key string, vs []string) {
		if c.Entities == nil {
			c.Entities = make(map[string][]string)
		}
		c.Entities[key] = vs
	}

	intentKey := ""
	for _, key := range sortedKeys(parsed) {
		v := parsed[key]
		if v == nil {
			continue
		}
		switch key {
		case "intent", "intent_type":
			s, ok := v.(string)
			switch {
			case !ok:
				want(key, "a string", v)
			case intentKey != "" && s != c.IntentType:
				bad(key, fmt.Sprintf("%q conflicts with %s %q", s, intentKey, c.IntentType))
			default:
				intentKey, c.IntentType = key, s
			}
		case "complexity":
			if s, ok := v.(string); ok {
				c.Complexity = s
			} else {
				want(key, "a string", v)
			}
		case FlagRequiresML, FlagRequiresCausalInference, FlagRequiresExperimentation, "enable_discovery":
			b, ok := v.(bool)
			if !ok {
				want(key, "a boolean", v)
				break
			}
			switch key {
			case FlagRequiresML:
				c.RequiresML = b
			case FlagRequiresCausalInference:
				c.RequiresCausalInference = b
			case FlagRequiresExperimentation:
				c.RequiresExperimentation = b
			default:
				c.EnableDiscovery = b
			}
		case "discovery_config":
			if m, ok := v.(map[string]any); ok {
				c.DiscoveryConfig = jsonvalue.Clone(m).(map[string]any)
			} else {
				want(key, "an object", v)
			}
		case "confidence_threshold", "time_budget_seconds":
			f, ok := toFloat(v)
			if !ok {
				want(key, "a finite number", v)
				break
			}
			if key == "confidence_threshold" {
				c.ConfidenceThreshold = &f
			} else {
				c.TimeBudgetSeconds = &f
			}
		case "preferred_agents", "excluded_agents", "secondary_intents":
			vs, ok := jsonvalue.Strings(v)
			if !ok {
				want(key, "a list of strings", v)
				break
			}
			switch key {
			case "preferred_agents":
				c.PreferredAgents = vs
			case "excluded_agents":
				c.ExcludedAgents = vs
			default:
				c.SecondaryIntents = vs
			}
		case EntityKPIs:
			if vs, ok := jsonvalue.StringOrStrings(v); ok {
				addEntity(key, vs)
			} else {
				want(key, "a string or a list of strings", v)
			}
		case "entities":
			var nested map[string]any
			switch m := v.(type) {
			case map[string]any:
				nested = m
			case map[string][]string:
				nested = make(map[string]any, len(m))
				for k, vs := range m {
					nested[k] = vs
				}
			default:
				want(key, "an object of string lists", v)
			}
			for _, k := range sortedKeys(nested) {
				vs, ok := jsonvalue.Strings(nested[k])
				if !ok {
					want("entities."+k, "a list of strings", nested[k])
					continue
				}
				if top, ok := topLevelEntity(parsed, k); ok && !slices.Equal(top, vs) {
					bad("entities."+k, fmt.Sprintf("conflicts with top-level %q", k))
					continue
				}
				addEntity(k, vs)
			}
		default:
			if vs, ok := jsonvalue.Strings(v); ok {
				addEntity(key, vs)
			}
		}
	}
	if len(es) > 0 {
		return nil, fmt.Errorf("plan: parsed query: %w", es)
	}
	if err := validateCriteria(c); err != nil {
		return nil, err
	}
	return c, nil
}

// validateCriteria is SelectionCriteria.Validate, its error saying it is the plan's.
func validateCriteria(c *troupe.SelectionCriteria) error {
	if err := c.Validate(); err != nil {
		return fmt.Errorf("plan: invalid criteria: %w", err)
	}
	return nil
}

// topLevelEntity reads entity key at the top level of parsed, as CriteriaFromParsed does;
// ok is false when it is absent or not an entity there.
func topLevelEntity(parsed map[string]any, key string) (vs []string, ok bool) {
	v := parsed[key]
	switch {
	case v == nil:
		return nil, false
	case key == EntityKPIs:
		return jsonvalue.StringOrStrings(v)
	}
	return jsonvalue.Strings(v)
}

// toFloat converts any Go number to a finite float64.
func toFloat(v any) (float64, bool) {
	f, ok := number(v)
	return f, ok && !math.IsNaN(f) && !math.IsInf(f, 0)
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case float32:
		return float64(n), true
	case int:
		return float64(n), true
	case int8:
		return float64(n), true
	case int16:
		return float64(n), true
	case int32:
		return float64(n), true
	case int64:
		return float64(n), true
	case uint:
		return float64(n), true
	case uint8:
		return float64(n), true
	case uint16:
		return float64(n), true
	case uint32:
		return float64(n), true
	case uint64:
		return float64(n), true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

// cloneCriteria deep-copies c so a plan never shares memory with its request.
func cloneCriteria(c *troupe.SelectionCriteria) *troupe.SelectionCriteria {
	out := *c
	if c.Entities != nil {
		out.Entities = make(map[string][]string, len(c.Entities))
		for k, vs := range c.Entities {
			out.Entities[k] = slices.Clone(vs)
		}
	}
	if c.DiscoveryConfig != nil {
		out.DiscoveryConfig = jsonvalue.Clone(c.DiscoveryConfig).(map[string]any)
	}
	if c.TimeBudgetSeconds != nil {
		f := *c.TimeBudgetSeconds
		out.TimeBudgetSeconds = &f
	}
	if c.ConfidenceThreshold != nil {
		f := *c.ConfidenceThreshold
		out.ConfidenceThreshold = &f
	}
	out.PreferredAgents = slices.Clone(c.PreferredAgents)
	out.ExcludedAgents = slices.Clone(c.ExcludedAgents)
	out.SecondaryIntents = slices.Clone(c.SecondaryIntents)
	return &out
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
