// Package aggregate combines the results of one run's agents into seed 000's
// AgentResultAggregation (troupe.Aggregation): which agents contributed, their combined
// results, an overall confidence, a synthesis, key insights, the conflicts between agents and
// how each was resolved.
//
// Every function is pure: no clock, no goroutines, no I/O, no randomness, no package-level
// mutable state. The same inputs always give the same output, down to the bytes of
// json.Marshal, whatever order the agents' maps were built in. (Through the engine, the
// execution order is the order in which the agents finished, which in a parallel group may
// differ from run to run; the rest of the aggregation does not depend on it.) All functions are safe for
// concurrent use as long as no caller mutates the results while they run. Outputs share
// agent_result values (maps, slices) with the results passed in; copy the results first if you
// mean to mutate them afterwards.
//
// # Which results count
//
// Only completed results are combined. Failed, timed-out and cancelled results are named in
// Aggregation.Warnings ("gap_analyzer: timeout") and contribute nothing but their execution
// time, tokens and cost, which were spent either way. When one agent completed more than once
// (a loop, a retry), Combine keeps its last completed result and says so in a warning.
//
// # Confidence
//
// Overall confidence is seed 000's conservative rule: the minimum confidence of the completed
// results that report one (CombineConfidence). When no agent reports a confidence it is 0 and
// Combine warns "no agent reported confidence"; agents that do not report one are named in a
// warning rather than silently counted.
//
// # Conflicts
//
// Each agent_result is flattened into dotted field paths: {"effect": {"size": -0.12}} becomes
// "effect.size". Nested map[string]any values are walked; everything else (arrays, scalars,
// other map types) is a leaf compared as a whole. A path that is a leaf in one result and an
// object in another is compared at that path too, so a shape disagreement is not missed. Keys
// are not escaped: a literal key "a.b" and a nested a → b name the same path, and within one
// result the first in sorted key order (the nested one) is kept. Only a nested object gives a
// path its shape: a literal "a.b" does not make "a" an object, so {"a": 1} and {"a.b": 2} hold
// two different paths and do not conflict, where {"a": 1} and {"a": {"b": 2}} do.
//
// Two values are equal when they would encode to the same JSON: numbers compare by exact
// value whatever their Go type (int 1, float64 1.0 and json.Number("1") are equal; integer
// json.Numbers are read exactly, decimal ones as encoding/json reads them, into float64), maps
// and slices compare deeply, nil maps and slices equal null, []byte equals its base64 string,
// and other types (structs, marshalers) compare by their JSON encoding. NaN equals NaN, so
// equality stays an equivalence and WeightedVote can group by it.
//
// A path held by two or more completed results with values that are not all equal is a
// Conflict; its values are listed in the order the results were given, and conflicts are
// sorted by path. A path under a conflicting one is part of that conflict, not another one:
// resolving the parent takes one agent's whole value, children included, so the resolved
// values never say one thing at a path and another beneath it. ConsistencyScore is
// 1 − conflicting paths / shared paths, where the paths under a conflict are not counted.
//
// A number JSON cannot hold (NaN, an infinity) in a completed agent_result is an error
// (troupe.ErrInvalidResult): the aggregation could not be encoded. The engine records such a
// result as invalid before it gets here.
//
// # Resolution strategies
//
// Resolve chooses one value per conflict, by seed 000's three strategies:
//
//   - highest_confidence (the default): the value of the most confident agent; a missing
//     confidence counts as 0; on a tie the earliest result wins.
//   - most_recent: the value of the result that completed last; on a tie the later result in
//     the given order wins.
//   - weighted_vote: equal values form a group whose weight is the sum of its agents'
//     confidences (a missing confidence counts as 0.5); the heaviest group wins. Weights
//     within 1e-9 tie; a tie goes to the group holding the highest single confidence, then
//     to the group that appears first. The group's most confident agent is the winner.
//
// Each resolved conflict records its winner and a reason naming the rule and the numbers
// ("weighted vote 1.40 (causal_impact, explainer) vs 0.70 (gap_analyzer)").
//
// # Synthesis and insights
//
// Nothing is invented. The synthesis is the last completed agent's own "synthesis" or
// "explanation" string when it has one; otherwise the agents' analysis summaries, each
// prefixed by the agent's name; otherwise a list of which agent contributed which fields. Key
// insights are the analysis summaries and the string items of each agent_result's
// "key_insights", deduplicated in order.
package aggregate
