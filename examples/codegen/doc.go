// Package codegen is seed 002's code generation example, run against any OpenAI-compatible
// endpoint with LLM agents (package agent/llmagent):
//
//   - Review runs analyzer → generator → reviewer as a flow.Sequential: the analyzer writes a
//     specification, its handoff (seed 002's context block) reaches the generator, which
//     writes the Go code, whose handoff reaches the reviewer, which approves it or lists
//     issues.
//   - Vote runs three implementers at once as a flow.Parallel with a majority vote. Each
//     implementation is canonicalized by Normalize — parsed as Go, comments dropped, local
//     names renamed in order of declaration, printed as gofmt does — so implementations that
//     differ only in layout, comments or variable names vote together, and a different
//     algorithm votes apart. Code that does not parse is an invalid answer (INVALID_OUTPUT)
//     and is not counted.
//
// Env fills a Config with the endpoint from OPENAI_BASE_URL and the model from OPENAI_MODEL;
// the agents read the key on every call from OPENAI_API_KEY (or the variable
// Config.APIKeyEnv names). Tests replay recorded HTTP exchanges (package agent/cassette);
// README.md says how to run against a real endpoint and how to re-record.
package codegen
