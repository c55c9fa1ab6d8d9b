// Package httpagent makes a service reachable over HTTP a troupe agent, in any language: each
// dispatch is POSTed as JSON and the response body is the result.
//
//	a, err := httpagent.New(httpagent.Config{URL: "https://summarizer.internal/dispatch", BearerTokenEnv: "SUMMARIZER_TOKEN"})
//	reg.Add("summarize", a)
//
// # The protocol, for a service in another language
//
// Request: POST to Config.URL with Content-Type: application/json; the body is seed 000's
// AgentDispatchRequest as troupe.Dispatch encodes it. Headers:
//
//   - Idempotency-Key: the dispatch id. A retry of a failed dispatch is a new dispatch with a new
//     id; the same id seen twice is the same work, safe to answer from a cache.
//   - traceparent: W3C trace context derived from the run's trace id (one W3C trace id per run,
//     one parent span id per dispatch), and X-Troupe-Trace-Id: the run's own trace id.
//   - Authorization: Bearer <token> when Config.BearerTokenEnv names a variable, and whatever
//     Config.Headers and Config.HeadersFromEnv add.
//
// Response: status 2xx with seed 000's AgentDispatchResponse as JSON. As for exec agents, the
// engine-owned fields (identification, timing, a "completed" status) may be left out and are
// filled in from the dispatch; the smallest answer is {"agent_result": {...}}. It is validated with troupe.DecodeResult; output that fails is never accepted: the dispatch fails
// with INVALID_OUTPUT and every problem in the error's details. A body over
// Config.MaxResponseBytes fails the same way (any other status fails by its status, as below).
//
// Any other status fails the dispatch with an *troupe.AgentError whose cause is a *StatusError
// and whose details hold http_status, a body_excerpt and, when the response has Retry-After
// (seconds or a date), retry_after_seconds. 408, 429 and 5xx are recoverable — the run's error
// policy may retry them — but 501 and 505, which say the service cannot do this at all; other
// 4xx and 3xx are not either (redirects are not followed: a redirected POST would lose its
// body). 408 and 504 carry code TIMEOUT, the rest AGENT_ERROR.
// Connection failures are recoverable, a certificate that does not verify is not, Config.Timeout
// or the dispatch's deadline is TIMEOUT, a cancelled run CANCELLED; when the failure comes
// while a response's body is read, its status is in the message and in http_status.
//
// # Testing
//
// Give the agent a client whose transport is a cassette's (package cassette) to record its
// exchanges once and replay them offline.
package httpagent
