// Package llmjudge is the LLM-judge mode of examples/feasibility: the same system — an
// evidence bundle of K judges read once by the orchestrator — with each judge a chat
// completion model (package agent/llmagent) on any OpenAI-compatible endpoint instead of the
// seeded Monte Carlo forecaster.
//
// Each replicate is one completion with its own seed (the bundle's, sent as the request's
// seed), given the proposal, its reference class of past projects and its risk factors,
// and asked for a judgement in the judge schema (feasibility.JudgeSchema, sent as
// response_format without its distance annotations). The answer is validated twice: against
// the schema on arrival (llmagent re-asks with the errors), then for what a schema cannot say
// — the verdict must follow from the probability and the threshold, risk drivers must be risks
// the proposal names, the binding constraint must be the likelier limit to break. A judgement
// that fails is an invalid replicate in the bundle, never a vote.
//
// It lives in its own package so that the feasibility package, and programs that load it,
// do not carry the OpenAI client unless they ask for this mode.
package llmjudge
