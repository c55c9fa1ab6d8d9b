// Package bundle computes seed 004's Evidence Bundle: K replicate outputs of one sub-agent,
// each validated, and deterministic statistics over them — pairwise distances, field-wise
// consensus, disagreements, distributions and a confidence — for an orchestrator to read in one
// turn. It is pure: no goroutines, clock, I/O or randomness; the same inputs give the same
// bundle, byte for byte. Package evidence runs the replicates and uses this package to decide
// when to stop and to build the bundle.
//
// # Shape
//
// A Bundle encodes as seed 004's Evidence Bundle: meta {task, k, model, seeds, schema_version},
// replicates[] {id, data, quality {valid, errors}} and summary {consensus, disagreements
// [{field, values}], pairwise_distance, distributions {field: {mean, stdev}}, confidence,
// truncated}. Each is always present but three, as in 004's example: quality.errors only on
// an invalid replicate; mean and stdev only for numeric fields; data only when the replicate
// produced some and it is neither diff-encoded nor cut to fit max_bytes. TestSeed004Shape
// holds the bundle to 004's example. What a bundle adds, and a reader of 004's contract may
// ignore: meta.k_max, epsilon, early_stop and usage (aggregate and per replicate, with cost);
// each replicate's seed and status, and base, delta or data_omitted; each disagreement's
// replicates, missing and distance; each distribution's n, min, max and counts; and
// summary.omitted when truncated. meta.k counts the replicates in the bundle: 2 after an early
// stop.
//
// # Distances
//
// Distance compares two JSON values in [0, 1]. Numbers: the absolute difference normalized by
// the schema's range (maximum − minimum) when the schema gives both bounds, otherwise by the
// larger magnitude (the relative difference |a−b| / max(|a|, |b|)), clamped to 1. Strings,
// booleans and null: a disagreement flag, 0 or 1 ("text" fields: Jaccard distance of words).
// Arrays of scalars (multi-valued categoricals) and sets: Jaccard distance. Other arrays
// (sequences): position by position. Objects: the weighted mean over the union of their keys,
// recursively; a field missing on one side counts as the maximal distance, 1. Schema
// annotations (x-weight, x-distance, uniqueItems, minimum/maximum) tune this; see Schema.
//
// # Statistics
//
// Replicates are Inputs; those that failed, produced no data or violate the schema are
// invalid. Invalid replicates are excluded from consensus, distributions and confidence, and
// included in disagreements and the pairwise matrix (a replicate without data is at distance
// 1 from every other).
//
//   - confidence = 1 − mean pairwise distance between valid replicates, clamped to [0, 1]; 0
//     with fewer than two valid replicates. It measures agreement, never correctness.
//   - consensus: fields (leaf paths such as "risk.level" or "steps[0].name") on which at least
//     two valid replicates all hold the same value.
//   - disagreements: fields on which replicates with data differ, ranked by the field's mean
//     pairwise distance, top max_diffs only.
//   - distributions: n, mean, population standard deviation, min and max of each numeric field
//     over the valid replicates; counts of each value (each element, for multi-valued fields)
//     of categorical fields the valid replicates do not all agree on.
//
// Distances, means, deviations and confidence are rounded to six decimals; means and
// deviations under 0.001 in magnitude to six significant digits instead. Usage is not rounded:
// meta.usage.cost_dollars is the replicates' costs added up, however small each is.
//
// # Caps and encoding
//
// Build enforces Limits: at most max_fields consensus entries and distributions, max_diffs
// disagreements and max_bytes of JSON for the whole bundle. Whatever a cap leaves out is
// counted in summary.omitted and sets summary.truncated. To fit max_bytes Build first
// diff-encodes the replicates (the first valid replicate in full, the others as JSON Patches
// against it: Bundle.Data reads them back), then halves distributions, consensus and
// disagreements, then drops replicate data, last replicate first.
//
// # Reproducibility
//
// A bundle holds no timing: the same replicates (same seeds, deterministic sub-agent) encode
// to identical bytes. Wall-clock figures belong to the result that carries the bundle.
package bundle
