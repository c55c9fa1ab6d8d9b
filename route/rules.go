package route

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/troupehq/troupe"
)

// Trigger is one row of a routing table: it sends the message to Target when the session
// state holds every When value and, if Patterns is not empty, the message contains one of
// the patterns (seed 003's "Trigger Patterns" column).
//
// Patterns match whole words, ignoring case, runs of white space, the apostrophe's
// spelling and how Unicode spells the text (both sides are brought to NFKC): "why" does
// not fire on "anyway" or "somewhy", "what's next" fires on "What’s next?", "café" on
// "cafe" followed by a combining acute accent, "quiz me" on full-width "ｑｕｉｚ ｍｅ".
// Word characters are letters, digits, marks and '_'; an apostrophe ends a
// word, so "don" fires on "don't". When values compare as JSON: 1 equals 1.0, true does not equal "true".
// A trigger with neither Patterns nor When fires on everything.
//
// The zero value has no target and never routes anywhere.
type Trigger struct {
	Name     string         `json:"name"`               // names the rule in reasons and metadata
	Patterns []string       `json:"patterns,omitempty"` // any one suffices; none means no message condition
	When     map[string]any `json:"when,omitempty"`     // session state key → required value; all must hold
	Target   string         `json:"target"`             // agent the message goes to
	Reason   string         `json:"reason,omitempty"`   // why, for people: "Quiz request"
}

// Rules is a deterministic routing table implementing troupe.Router; see the package
// documentation for the order in which it decides.
//
// The zero value (and a nil *Rules) routes planned tasks only and fails everything else. A
// Rules is safe for concurrent use as long as nobody modifies it; Route never does.
type Rules struct {
	Triggers      []Trigger           `json:"triggers,omitempty"`       // tried in order, first match wins
	Intents       map[string][]string `json:"intents,omitempty"`        // intent → candidate agents, in order
	KPIMap        map[string][]string `json:"kpi_map,omitempty"`        // KPI → candidate agents, in order
	Fallbacks     map[string]string   `json:"fallbacks,omitempty"`      // target → agent to use if it fails
	Default       string              `json:"default,omitempty"`        // agent when nothing else matched
	DefaultReason string              `json:"default_reason,omitempty"` // why, for people
}

var _ troupe.Router = (*Rules)(nil)

// Route chooses the agent for in: a planned task's agent, else the first trigger that fires
// on in.Query and in.State, else the candidates of the parsed query's intent, else those of
// each of its KPIs, else Default. Only agents listed in in.Available are chosen, so an empty
// list allows none; the others are skipped. The context is not consulted.
//
// The parsed query is read as plan.CriteriaFromParsed reads it: the intent is
// ParsedQuery["intent"] or ParsedQuery["intent_type"] (a string; both may be given if they
// agree), the KPIs are ParsedQuery["kpis"] (a list of strings, or one KPI as a string) or the
// "kpis" list of ParsedQuery["entities"] (both may be given if they agree). It is read only when
// neither a planned task nor a trigger decided, and only for what the table routes on: the
// intent when Intents is not empty, the KPIs when KPIMap is not empty. A value of the wrong
// shape there is an error, troupe.ValidationErrors naming the key, rather than ignored.
//
// The decision's Reason says in a sentence what matched. Its Metadata holds the same facts
// for programs:
//
//	"source"      "task", "trigger", "intent", "kpi" or "default"
//	"task"        the planned task's ID (source task)
//	"rule"        the trigger's name, "rule_index" its index in Triggers (source trigger)
//	"pattern"     the pattern that matched, as written in the trigger (source trigger)
//	"when"        the state keys the trigger required, sorted (source trigger)
//	"intent"      the intent, or "kpi" the KPI, and "candidates" its agents (source intent, kpi)
//	"skipped"     agents that matched earlier but are not available, in the order met
//
// Values are strings, ints and []string; after a JSON round trip, float64s and []any.
// Fallback is Fallbacks[target] when that agent is available.
//
// When no available agent is found, the error wraps troupe.ErrUnknownAgent and lists every
// agent tried; a parsed query of the wrong shape is not such an error.
func (r *Rules) Route(_ context.Context, in troupe.RouteInput, _ troupe.Context) (troupe.RoutingDecision, error) {
	if r == nil {
		r = &Rules{}
	}
	d := decider{rules: r, available: make(map[string]bool, len(in.Available))}
	for _, a := range in.Available {
		d.available[a] = true
	}

	// Step 1: a planner already chose.
	if t := in.Task; t.Agent != "" {
		d.tried = append(d.tried, "planned agent "+t.Agent)
		if d.take(t.Agent) {
			reason := t.Reason
			if reason == "" {
				reason = "planned"
			}
			meta := map[string]any{"source": "task"}
			if t.ID != "" {
				meta["task"] = t.ID
			}
			return d.decide(t.Agent, reason, meta), nil
		}
	}

	// Step 2: triggers on message and state.
	message := normalize(in.Query)
	for i := range r.Triggers {
		tr := &r.Triggers[i]
		pattern, ok := tr.match(message, in.State)
		if !ok || tr.Target == "" {
			continue
		}
		d.tried = append(d.tried, fmt.Sprintf("rule %s → %s", tr.label(i), tr.Target))
		if !d.take(tr.Target) {
			continue
		}
		meta := map[string]any{"source": "trigger", "rule": tr.Name, "rule_index": i}
		if len(tr.Patterns) > 0 {
			meta["pattern"] = pattern
		}
		if len(tr.When) > 0 {
			meta["when"] = slices.Sorted(maps.Keys(tr.When))
		}
		return d.decide(tr.Target, tr.reason(i, pattern), meta), nil
	}

	// Steps 3 and 4 read the parsed query, as the planner does; a shape the planner refuses is
	// an error here too, not something to route around.
	parsed, err := readParsed(in.ParsedQuery, len(r.Intents) > 0, len(r.KPIMap) > 0)
	if err != nil {
		return troupe.RoutingDecision{}, err
	}

	// Step 3: the parsed intent (seed 000's INTENT_ROUTING_RULES).
	if intent := parsed.intent; intent != "" {
		if cands := r.Intents[intent]; len(cands) > 0 {
			d.tried = append(d.tried, fmt.Sprintf("intent %s → %s", intent, strings.Join(cands, ", ")))
			for k, c := range cands {
				if d.take(c) {
					reason := fmt.Sprintf("intent %q routes to %s (candidate %d of %d)", intent, c, k+1, len(cands))
					meta := map[string]any{"source": "intent", "intent": intent, "candidates": slices.Clone(cands)}
					return d.decide(c, reason, meta), nil
				}
			}
		}
	}

	// Step 4: the parsed KPIs (seed 000's KPI_ROUTING_MAP), in the order the query names them.
	for _, kpi := range parsed.kpis {
		cands := r.KPIMap[kpi]
		if len(cands) == 0 {
			continue
		}
		d.tried = append(d.tried, fmt.Sprintf("KPI %s → %s", kpi, strings.Join(cands, ", ")))
		for k, c := range cands {
			if d.take(c) {
				reason := fmt.Sprintf("KPI %q routes to %s (candidate %d of %d)", kpi, c, k+1, len(cands))
				meta := map[string]any{"source": "kpi", "kpi": kpi, "candidates": slices.Clone(cands)}
				return d.decide(c, reason, meta), nil
			}
		}
	}

	// Step 5: the default.
	if r.Default != "" {
		d.tried = append(d.tried, "default "+r.Default)
		if d.take(r.Default) {
			reason := "no rule matched; " + r.Default + " is the default"
			if r.DefaultReason != "" {
				reason = "no rule matched; " + r.DefaultReason
			}
			return d.decide(r.Default, reason, map[string]any{"source": "default"}), nil
		}
	}

	avail := strings.Join(in.Available, ", ")
	if avail == "" {
		avail = "none"
	}
	if len(d.tried) == 0 {
		return troupe.RoutingDecision{}, fmt.Errorf("route: no rule matched and there is no default agent (available: %s): %w",
			avail, troupe.ErrUnknownAgent)
	}
	return troupe.RoutingDecision{}, fmt.Errorf("route: no available agent: tried %s (available: %s): %w",
		strings.Join(d.tried, "; "), avail, troupe.ErrUnknownAgent)
}

// decider carries one Route call's bookkeeping.
type decider struct {
	rules     *Rules
	available map[string]bool
	skipped   []string // unavailable agents met so far, without repeats
	tried     []string // what was considered, for the error message
}

// take reports whether agent can be chosen, remembering it as skipped when it cannot.
func (d *decider) take(agent string) bool {
	if agent == "" {
		return false
	}
	if d.available[agent] {
		return true
	}
	if !slices.Contains(d.skipped, agent) {
		d.skipped = append(d.skipped, agent)
	}
	return false
}

func (d *decider) decide(target, reason string, meta map[string]any) troupe.RoutingDecision {
	if len(d.skipped) > 0 {
		meta["skipped"] = slices.Clone(d.skipped)
		reason += "; skipped unavailable " + strings.Join(d.skipped, ", ")
	}
	dec := troupe.RoutingDecision{Target: target, Reason: reason, Metadata: meta}
	if fb := d.rules.Fallbacks[target]; fb != "" && fb != target && d.available[fb] {
		dec.Fallback = fb
	}
	return dec
}

// match reports whether t fires on the normalized message and the state, and which pattern
// matched (the first in t.Patterns that does).
func (t *Trigger) match(message string, state map[string]any) (pattern string, ok bool) {
	for _, k := range slices.Sorted(maps.Keys(t.When)) {
		v, present := state[k]
		if !present || !jsonEqual(t.When[k], v) {
			return "", false
		}
	}
	if len(t.Patterns) == 0 {
		return "", true
	}
	for _, p := range t.Patterns {
		// Normalized here rather than once per table: Rules is plain data that callers build
		// as a literal and compare field by field, so it has nowhere to keep a compiled copy.
		// A pattern written in lower-case ASCII, as most are, is already normal and costs a
		// scan, no allocation.
		if containsWords(message, normalize(p)) {
			return p, true
		}
	}
	return "", false
}

// label names the trigger for people: its name, or its position when it has none.
func (t *Trigger) label(i int) string {
	if t.Name != "" {
		return t.Name
	}
	return "#" + strconv.Itoa(i)
}

// reason is the sentence a firing trigger gives: `Quiz request: message matches "quiz me"
// (rule quiz_request)`.
func (t *Trigger) reason(i int, pattern string) string {
	var conds []string
	if len(t.Patterns) > 0 {
		conds = append(conds, fmt.Sprintf("message matches %q", pattern))
	}
	if len(t.When) > 0 {
		keys := slices.Sorted(maps.Keys(t.When))
		kv := make([]string, len(keys))
		for j, k := range keys {
			kv[j] = k + "=" + jsonText(t.When[k])
		}
		conds = append(conds, "state has "+strings.Join(kv, ", "))
	}
	s := "rule always matches"
	if len(conds) > 0 {
		s = strings.Join(conds, " and ")
	}
	s += " (rule " + t.label(i) + ")"
	if t.Reason != "" {
		s = t.Reason + ": " + s
	}
	return s
}

// String summarizes the table, as in `route.Rules(6 triggers, 0 intents, 0 KPIs, default tutor)`.
func (r *Rules) String() string {
	if r == nil {
		return "route.Rules(nil)"
	}
	def := "no default"
	if r.Default != "" {
		def = "default " + r.Default
	}
	return fmt.Sprintf("route.Rules(%d triggers, %d intents, %d KPIs, %s)",
		len(r.Triggers), len(r.Intents), len(r.KPIMap), def)
}
