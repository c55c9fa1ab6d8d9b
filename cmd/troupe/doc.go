// Command troupe is the command-line tool of troupe, a multi-agent orchestration runtime: it
// plans which agents should answer a request, runs them — in sequence, in parallel — and hands
// back one aggregated, explained answer, recording every step of the run as an event.
//
// Usage:
//
//	troupe <command> [flags] [arguments]
//
// The commands are:
//
//	demo      run seed 000's E2I causal analytics example and watch its events
//	run       run a query through a workflow file and watch its agents work
//	plan      show the stages and routing decisions a query would get, without running anything
//	validate  check a workflow file, reporting every problem with its line and column
//	agents    list a workflow file's agents
//	chat      hold a conversation with seed 003's tutor
//	version   show the version of troupe, the revision it was built from and its Go
//	help      show help for troupe or one of its commands
//
// A workflow file (CONFIG: a YAML file, or a directory holding troupe.yaml) declares agents —
// Go agents the program registers by name, subprocesses, HTTP endpoints, chat models, tools of
// MCP servers and composites of them — and how requests are planned or routed among them;
// docs/config.md is its reference and package config reads it. This command is the one place
// that wires concrete parts to a file: the exec, http, llm, mcp, sequential, parallel, loop
// and bundle factories, the MCP servers they connect to, the examples' Go agents as builtins,
// and the query parser (wire.go).
//
// troupe run draws a live view on a terminal whose TERM is not dumb (stages, a spinner per
// running agent, its duration and outcome, a bundle's replicates as they finish, then the
// aggregated answer) and prints plain lines elsewhere; --output json prints the run record of
// docs/run-record.md. Exit codes: 0 the run completed, 1 it failed, 2 the command line or
// the configuration was wrong, 3 the run paused for a human, 130 it was cancelled (Ctrl-C,
// which cancels the run cleanly and shows what had finished; a second Ctrl-C SIGKILLs the
// agents still running rather than wait out their grace, and a third stops troupe at once).
//
// Every command is a function of its context, arguments and output streams (run), so the
// tests drive the command line in-process.
package main
