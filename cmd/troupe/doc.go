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
//	demo    run seed 000's E2I causal analytics example and watch its events
//	help    show help for troupe or one of its commands
//
// Run "troupe help" for examples of each command. Exit codes: 0 the run completed, 1 it
// failed, 2 the command line was wrong, 3 the run paused for a human, 130 it was cancelled.
//
// Every command is a function of its context, arguments and output streams (run), so the
// tests drive the command line in-process.
package main
