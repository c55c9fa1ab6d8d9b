// Package mcptool connects troupe to MCP (Model Context Protocol) servers with the official
// go-sdk: Connect starts a server as a subprocess speaking MCP over stdio (Config.Command),
// dials a streamable HTTP endpoint (Config.URL) or uses any transport (Config.Transport),
// initializes the session and lists the server's tools.
//
// Each tool is a troupe.Tool — name, description and input schema as the server listed them —
// so a Client's Tools can be handed to an LLM agent (llmagent.Config.Tools) next to agents
// wrapped as tools. Call sends the model's arguments and returns the tool's structured
// content, else its text as a JSON string; a result the server flags as an error is a
// *ToolError, which an LLM agent passes back to the model to correct.
//
// Agent turns one tool into a troupe.Agent, for a workflow step that is a plain tool call:
// the arguments are the dispatch's user_context["arguments"] (a JSON object), else its
// parsed_query.
//
// Config.MaxResultBytes (0 means DefaultMaxResultBytes, 16 MiB: the go-sdk's frame limit over
// stdio) bounds a result: Call refuses one whose JSON encoding is larger, and Agent one whose
// agent_result is, with a *ResultTooLargeError saying the size and the bound (for Agent, a
// non-recoverable INVALID_OUTPUT). Over streamable HTTP, which the go-sdk does not bound, the
// server's responses are bounded as they are read: a JSON body, or one event of an SSE stream,
// past twice the bound plus 64 KiB is cut off there, and the call fails with a
// *ResultTooLargeError saying how much was read, so a misbehaving server cannot make troupe
// hold more than that. Config.HTTPClient is copied, its Transport wrapped, not changed.
//
// A Client owns its session and, for stdio, the server's process: Close ends both and waits
// for them, terminating a server that does not exit StopTimeout after its stdin closes. The
// server runs in its own process group; whatever is left of the group then (the child of a
// wrapper such as npx or a shell script) is killed with it. A session lost while the Client is
// open (the server crashed) fails the call in flight; the next call starts or dials the
// server again. Close does not wait for such a server to answer: it aborts the reconnect and
// stops what it started. A call in flight as the Client closes, or made after, fails with
// ErrClosed (for Agent, an AGENT_ERROR that is not recoverable: no retry can pass).
//
// A stdio server's stderr is kept, its last 4 KiB, for errors only: a server that exits
// before it answers, or dies during a call, fails Connect or the call with an error that
// names the command, says how the process ended ("exited with status 1", "was killed by
// signal 9 (killed)") and quotes the last lines of its stderr, the values of Config.Env
// redacted. A call that fails while the server is still up (a timeout) says neither.
package mcptool
