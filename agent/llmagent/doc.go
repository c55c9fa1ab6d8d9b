// Package llmagent makes a chat completion model a troupe agent, on any OpenAI-compatible
// endpoint (OpenAI, Azure, Ollama, vLLM, llama.cpp's server, LM Studio, OpenRouter…) through
// the official openai-go SDK.
//
// An Agent renders its System and Prompt templates (text/template) with the dispatch, the
// upstream handoffs in seed 002's format, session state and the agent's optimized prompt
// (seed 000's optimized_prompts), and converses with the model:
//
//   - Tool calls: the model may call Config.Tools (agents as tools, MCP tools — anything
//     implementing troupe.Tool) over several turns, at most MaxTurns completions. A tool's
//     error is the model's to handle and goes back as the tool's answer; an error whose
//     Fatal() reports true (the cycle and depth guards) fails the dispatch. A result over
//     MaxToolResultBytes is not sent: the model is told its size, to ask for less.
//   - Structured output: with a Schema the answer is requested as response_format
//     json_schema and validated on arrival; an invalid answer is asked again with the
//     validation errors, at most MaxReasks times, then the dispatch fails with the errors
//     (code INVALID_OUTPUT) — never with a placeholder.
//   - Streaming: with Stream each piece of text becomes an agent_progress event of kind
//     "token"; usage comes from the last chunk (stream_options.include_usage).
//   - Accounting: prompt and completion tokens of every completion are summed into
//     tokens_used, the model the server named into model_used, and their price from
//     Config.Prices into cost_dollars — also on failure, so a run's totals count every call
//     once. What agents called through the tools spend (flow.AsTool reports it through
//     flow.WithUsage) is added to tokens_used and cost_dollars too, and shown apart in the
//     llm_usage annotation as tool_tokens and tool_cost_dollars. Before each completion the
//     dispatch stops with code BUDGET once its cost, its tools' included, has reached the
//     dispatch's max_cost_dollars or its tokens MaxTotalTokens. A server that reports no
//     usage gets a warning on the result. An agent called through a tool whose completed
//     result asks for a human's review (requires_human) has the agent's result ask for it
//     too, so the run reviews it.
//
// A call refused (HTTP 401 or 403) when no key was sent says which environment variable is
// unset.
//   - Transport: 408, 409, 429, 5xx and lost connections are retried at most MaxRetries
//     times, honouring Retry-After (up to MaxRetryDelay) and otherwise backing off; each
//     attempt is bounded by CallTimeout. HTTPClient is the seam for a recording or
//     replaying transport (see package cassette). Refused attempts appear as "http_error"
//     progress events. A call still refused fails with http_status (and retry_after_seconds
//     when the server sent Retry-After) in the error's details, so the run's error policy
//     waits as asked; the status decides whatever shape the error body has. A 408 or 504
//     still refused is a timeout (code TIMEOUT, matching troupe.ErrTimeout), as httpagent
//     reports one, so the run's on_timeout applies to it.
//     A response whose body or stream is cut short or stalls fails saying so, its status in
//     the message and in http_status (recoverable; TIMEOUT when a deadline stopped it).
//     Every response body, a stream's whole included, is bounded by MaxResponseBytes: an
//     answer over it fails with code INVALID_OUTPUT. A 200 that carries an error object
//     instead of choices fails with that error (recoverable when its code is a status worth
//     retrying); a stream answered with no stream chunks at all (a server that ignores
//     "stream", a proxy's page) fails with code INVALID_OUTPUT naming its Content-Type.
//   - Lifecycle: the agent's Setup sets up the Config.Tools that implement troupe.Setupper,
//     in order, tearing down those already set up if one fails; its Teardown tears down those
//     that implement troupe.Teardowner, the last first, and joins the errors. A tool shared
//     by two agents is set up by each.
//
// The API key is read on each call from the environment variable Config.APIKeyEnv names; it
// is never part of the configuration, and an error that echoes it is redacted before it
// reaches a result or an event — in every spelling a server may echo it in: as sent,
// JSON-escaped, URL-escaped or Go-quoted. A key shorter than 4 bytes is not redacted: it
// would blank unrelated text.
//
// The answer becomes agent_result: the validated object of a structured answer, or
// {"text": ...}; analysis_summary is its "summary" member, or its first 200 characters; a
// "confidence" member in [0, 1] becomes the result's confidence.
package llmagent
