// Package execagent runs a troupe agent as a subprocess, in any language: one process per
// dispatch, the dispatch as JSON on stdin, the result as JSON on stdout, progress on stderr.
//
//	a, err := execagent.New(execagent.Config{Command: []string{"python3", "agents/summarize.py"}, Timeout: time.Minute})
//	reg.Add("summarize", a)
//
// # The protocol, for an agent in another language
//
//  1. Read one JSON object from stdin until EOF: seed 000's AgentDispatchRequest
//     (dispatch_id, session_id, query_id, target_agent, query, parsed_query,
//     upstream_results, …), as troupe.Dispatch encodes it.
//  2. Write progress to stderr, one line at a time, flushed: each line becomes an
//     agent_progress event of kind "stderr" in the run's log (at most Config.MaxProgress
//     lines a dispatch, each cut at Config.MaxLineBytes). The last Config.StderrTail bytes
//     are quoted in the error when the dispatch fails.
//  3. Write one JSON object to stdout and exit 0: seed 000's AgentDispatchResponse. The
//     smallest valid answer is {"agent_result": {...}}: the fields the engine owns anyway —
//     dispatch_id, session_id, query_id, agent_name, status ("completed"), execution_time_ms,
//     started_at and completed_at — are filled in from the dispatch when left out, and checked
//     when sent (a dispatch_id or agent_name that answers another dispatch is refused). Add
//     whatever else the agent knows (analysis_summary, confidence, next_agent, handoff,
//     tokens_used, …), or status "failed" with errors shaped as {code, message, recoverable}.
//     It is validated with troupe.DecodeResult: output that fails is never accepted; the
//     dispatch fails with code INVALID_OUTPUT, every problem listed in the error's details.
//     So does output that is not UTF-8 (JSON text must be), a bare {"error": ...} in place
//     of a result (the error quotes it), and output over Config.MaxOutputBytes, whose
//     process group is then stopped at once, as on a timeout.
//  4. To fail without a result, exit non-zero: the dispatch fails with code AGENT_ERROR, the exit
//     status and the stderr tail, not recoverable — except exit 75 (EX_TEMPFAIL, ExitTempFail)
//     and death by a signal, which are recoverable, so the run's error policy may retry.
//
// The process also gets TROUPE_DISPATCH_ID and TROUPE_AGENT in its environment and, inside a
// run, TROUPE_TRACE_ID and a W3C TRACEPARENT derived from the run's trace id.
//
// testdata/agent.py, testdata/agent.sh (POSIX sh and sed) and testdata/goagent are complete
// agents.
//
// # Secrets
//
// A program may print what it was given in Config.Env (a CLI echoing its token when it
// fails). Every Config.Env value of at least 4 bytes, whatever its key, is replaced by
// "[redacted]" in every spelling — as it is, JSON-escaped, Go-quoted, percent-encoded — in
// the progress events, the stderr tail, errors and their details, also where a bound cuts it
// in two, and in what a result the program prints says besides a valid answer (its errors,
// warnings and summary; the agent_result of a failure). Values are scrubbed without looking at names, as httpagent scrubs every value it
// reads from the environment: a rule on names would miss DATABASE_URL=postgres://app:pw@db.
// Values under 4 bytes would blank unrelated text and are left alone, as are the variables
// inherited from the parent's environment. A valid result's agent_result is the program's
// answer and is passed on unchanged.
//
// # Stopping
//
// Each process runs in its own process group. When the dispatch's context ends — Config.Timeout,
// the dispatch's own timeout, a cancelled run — the group gets SIGTERM, and SIGKILL after
// Config.KillGrace, or at once when a hurry channel the context carries (WithHurry: a CLI's
// second Ctrl-C) is closed; when the agent exits, whatever is left of its group is killed, so
// nothing it started outlives the dispatch. Run returns only after the process and the goroutines
// copying its pipes are done; a timeout fails with TIMEOUT (recoverable), a cancellation with
// CANCELLED.
package execagent
