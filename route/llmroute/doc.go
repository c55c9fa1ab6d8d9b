// Package llmroute is a router that asks a language model for a message's intent (seed 000's
// intent types: causal, exploratory, comparative, trend, what_if, ml_training,
// model_deployment, monitoring) when its rule router cannot place the message.
//
// It wraps a rule router — usually a *route.Rules — and leaves every decision the rules make
// alone, except the fall to their default: then the model classifies the message (through
// llmagent, with temperature 0, a seed and a JSON Schema whose intent is an enum) and the
// rules decide again with that intent in the parsed query, so the intent table stays the one
// place that maps intents to agents.
//
// Routing stays repeatable: classifications are cached by the message and parsed query, so
// the same inputs give the same decision, byte for byte in JSON, and concurrent routing of
// the same message asks the model once. Any failure — transport, timeout, an intent not in the
// list, an intent the rules do not place — leaves the rules' default decision in place with
// the reason under "llm_fallback" in its metadata.
//
// The package does I/O, so it lives apart from the pure package route.
package llmroute
