// Package evidence is seed 004's bundle tool: an agent that runs a sub-agent as K isolated
// replicates with distinct seeds, validates each output against a JSON Schema, and returns
// one atomic Evidence Bundle (package bundle) with the raw replicates and deterministic
// statistics — consensus, disagreements, pairwise distances, distributions, confidence.
//
// # Agreement is not verification
//
// A bundle measures how much the replicates agree, nothing more. Replicates of one model
// given one prompt share its blind spots: they can agree, with confidence 1, on an answer that
// is wrong, and early stop makes that cheaper, not truer. The confidence is 1 − the mean
// pairwise distance between valid replicates; consensus lists fields the valid replicates hold
// the same; "valid" means the output satisfied the schema. None of them checks a fact. Treat a
// low confidence or a disagreement as a reason to look closer, and a high one as the absence of
// that reason — not as evidence the answer is right. Where correctness matters, verify it
// another way (a test, a tool, a source, a human). Put bundle.PromptHint beside the bundle in
// the orchestrator's prompt: it tells the model the same.
//
// # Replicate-and-decide
//
// Bundle starts two replicates in parallel. When both are valid and their distance is at most
// epsilon, it stops there (meta.early_stop). When both failed on the same error that is not
// recoverable — INVALID_INPUT, say — it stops there too: every replicate gets the same input,
// so the rest would fail the same way; its partial_summary event says so in its reason, and
// a bundle left without output fails with that error's code, not recoverable. Otherwise —
// including two recoverable failures, or two different ones — it starts the rest, up to k, in
// parallel. Stragglers still running are cancelled once a stop rule holds — the valid
// replicates finished so far reach Stop.Confidence, or Stop.After has passed with two valid —
// or once the token or cost budget is spent. Each replicate has its own timeout and token
// ceiling; the whole bundle has a time budget after which it is built from what finished.
//
// These hold even against a sub-agent that ignores its context. A replicate still running
// 250 ms after its timeout, the bundle's budget or its cancellation is recorded as it would
// be had it returned then (timeout, cancelled), with a warning, and left running: the bundle
// is built without it. Its late answer is dropped; its runtime no longer reaches the bundle's
// dispatch. Agent.Teardown, which the engine calls when the run ends, waits for such
// replicates to return.
//
// # Isolation and seeds
//
// Every replicate runs on its own deep copy of the dispatch (a JSON round trip: no map or
// slice is shared), with a dispatch id of its own derived from the bundle's, and never sees
// another replicate's output. Its seed is in Dispatch.UserContext["seed"] (an int64), with its
// id in UserContext["replicate"] and the bundle's dispatch id in
// UserContext["bundle_dispatch_id"], and in the context: ReplicateFrom(ctx). (troupe.Context,
// the run's execution context, is not reachable from an agent, so it carries no seed.) A
// sub-agent that cannot use a seed ignores it — the seed is then a no-op, recorded in meta for
// the record only — and replicates differ only as the sub-agent's own sampling makes them. The copy's timeout_seconds is the
// replicate timeout and its max_cost_dollars an equal share of the cost budget. Its runtime
// reads session state and asks humans through the bundle's dispatch (questions redacted),
// forwards progress as replicate_progress events, and ignores partial results.
//
// # Events
//
// Through Dispatch.Progress (agent_progress events in the run's log): replicate_started,
// replicate_done (with usage), replicate_progress, partial_summary (after the first two),
// warning (invalid replicates, truncation, budget, lint findings), cancelled, timeout and
// bundle_ready. Each payload is a JSON object with "source" set to the bundle's name (seed
// 004's metadata.source), and passes through the configured redaction before it is emitted. Events may be emitted from
// several goroutines at once (a sub-agent's own progress), as the engine's runtime allows.
//
// # Result
//
// The result's agent_result is the bundle in seed 004's JSON shape; its confidence is the
// bundle's, an agreement figure (see above); its analysis_summary is computed from the statistics; its tokens_used and
// cost_dollars are the sums over the replicates — the only place the replicates' usage is
// counted, since they do not run as dispatches of their own; a bundle that ends without one (no
// replicate produced output, or the run was cancelled) returns its error beside a result that
// carries those sums and its warnings, which the engine counts. Unless Config.KeepRaw, the bundle
// itself is redacted too — replicate data, summary values (field-path rules apply to them by
// the path they were taken from), field names and quality errors; statistics are computed on
// the raw values before redaction. A bundle holds no
// timing, so the same seeds and a deterministic sub-agent give a byte-identical agent_result;
// which replicates a time-based stop rule cancels is, of course, a matter of timing. The
// result asks for a human's review (requires_human) when a valid replicate's did; an invalid
// replicate vouches for nothing, and its request is not passed on.
//
// # Lint lane
//
// Lints are fast checks run on each replicate's output as it arrives, each with a tiny
// timeout. Their findings become warning events and result warnings; they never gate the
// bundle, and the bundle never waits for them: when it is ready, running checks are cancelled.
package evidence
