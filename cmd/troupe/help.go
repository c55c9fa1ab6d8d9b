package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
)

// runHelp prints the overview, or one command's help: the same text as the command's --help.
func runHelp(_ context.Context, args []string, stdout, stderr io.Writer) int {
	switch len(args) {
	case 0:
		usage(stdout)
		return exitOK
	case 1:
		name := args[0]
		switch name {
		case "-h", "-help", "--help":
			name = "help"
		}
		for _, c := range commands() {
			if c.name == name {
				commandUsage(stdout, c.name)
				return exitOK
			}
		}
		fmt.Fprintf(stderr, "troupe help: unknown command %q\n", name)
		if s := suggest(name); s != "" {
			fmt.Fprintf(stderr, "Did you mean %q?\n", s)
		}
		return exitUsage
	}
	fmt.Fprintln(stderr, "troupe help: at most one command, as in 'troupe help demo'")
	return exitUsage
}

// usage prints the overview: what troupe is, its commands, an example of each, exit codes.
func usage(w io.Writer) {
	fmt.Fprint(w, `troupe runs teams of agents: it plans which agents should answer a request, runs
them — in sequence, in parallel — and hands back one aggregated, explained answer,
recording every step of the run as an event.

Usage:
  troupe <command> [flags] [arguments]

Commands:
`)
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-8s  %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, "\nExamples:\n")
	for _, c := range commands() {
		writeExamples(w, c)
	}
	fmt.Fprint(w, "\n"+exitCodes)
}

func writeExamples(w io.Writer, c command) {
	for _, ex := range c.examples {
		fmt.Fprintf(w, "  %s\n      %s\n", ex[0], ex[1])
	}
}

// exitCodes is the overview's summary of the exit codes; each command's help gives its own.
const exitCodes = `Exit codes: 0 the command did what it was asked (run, demo: the run completed), 1 the run
failed (plan: the request could not be planned), 2 usage or configuration error, 3 the run
paused waiting for a human, 130 it was cancelled (Ctrl-C). 'troupe help COMMAND' gives the
codes of a command.
`

// The exit codes of each command, closing its help. plan, validate and agents run nothing,
// so theirs say nothing of runs.
const (
	runExits = `Exit codes: 0 the run completed, 1 it failed, 2 usage or configuration error, or a
request the engine would refuse, 3 it paused waiting for a human, 130 it was cancelled (Ctrl-C).
`
	demoExits = `Exit codes: 0 the run completed, 1 it failed, 2 usage error, 130 it was cancelled (Ctrl-C).
`
	planExits = `Exit codes: 0 the plan was shown, 1 the request could not be planned (the file's
planner or router refused it; nothing ran), 2 usage or configuration error, or an --input
request the engine refuses.
`
	validateExits = `Exit codes: 0 the file is valid and every agent builds (with warnings or not), 1 troupe
failed before it could check the file, 2 the file has problems (each is reported) or the
command line is wrong, 130 it was cancelled (Ctrl-C) while building the agents.
`
	agentsExits = `Exit codes: 0 the agents were listed, 1 troupe failed before it could list them,
2 usage or configuration error.
`
	chatExits = `Exit codes: 0 the conversation ended (at the end of the input or of the script),
1 it failed, 2 usage or configuration error, 130 it was cancelled (Ctrl-C).
`
	helpExits = `Exit codes: 0 the help was shown, 2 there is no such command.
`
)

// commandUsage prints a command's usage, its examples and its exit codes: its --help, and
// troupe help NAME.
func commandUsage(w io.Writer, name string) {
	for _, c := range commands() {
		if c.name == name {
			fmt.Fprint(w, c.usage)
			fmt.Fprint(w, "\nExamples:\n")
			writeExamples(w, c)
			fmt.Fprint(w, "\n"+c.exits)
		}
	}
}

// dashDash closes the help of the commands that take a query.
const dashDash = `
Flags may come before or after CONFIG and the query. After -- every argument is part of the
query, so a query beginning with '-' and a letter goes after it: troupe run CONFIG -- "-x is odd".
A word beginning with '-' and a digit, such as "-4 8 15", is a query word without it.
`

const configArg = `CONFIG is a workflow file (see docs/config.md), or a directory holding troupe.yaml.
`

const runUsage = `Usage: troupe run [--output text|json] [--input FILE.json] [--state key=value]... [--seed N] CONFIG [query...]

Runs a query through the workflow CONFIG describes: the query is parsed by the file's parser
(if it has one), planned by its routing rules (or routed by its coordinator), and its agents
run stage by stage. On a terminal (unless TERM is dumb) the stages and agents are drawn live,
each with a spinner, then its duration and outcome, bundle replicates as they finish, and at
the end the aggregated answer with its confidence, conflicts and warnings. Elsewhere (a pipe,
a file) each step is one plain line. Ctrl-C cancels the run and shows what had finished; a
second Ctrl-C kills the agents still running at once. Before the run, the warnings troupe
validate gives (an llm agent's api_key_env naming a variable not set here) are written to
stderr; they do not stop it.

` + configArg + `
Flags:
  --output text|json   json prints the run record instead: the request, every event, every
                       result and the aggregation, as docs/run-record.md describes (version 1)
  --input FILE.json    the request from a file, {"query": ..., "parsed_query": {...}, "state": {...}},
                       or a parsed query alone, {"intent": "causal", "kpis": ["NRx"], ...}
  --state key=value    session state (repeatable); the value is JSON (true, 3, "x", [1]),
                       True or False in any case (booleans; Python writes True), or else a string
  --seed N             seed of the run: fixes its ids (0 picks one)
` + dashDash

const planUsage = `Usage: troupe plan [--format text|mermaid|dot] [--input FILE.json] [--state key=value]... CONFIG [query...]

Shows what a run of the query would do, without running anything: the parsed query, the
stages of agents (with each selected agent's score, and why every candidate was selected or
skipped), and, for a coordinator, the agent each message is routed to and the rule that
decided it.

` + configArg + `
Flags:
  --format text|mermaid|dot   text for people, a Mermaid flowchart, or a Graphviz digraph
  --input FILE.json           the request from a file, {"query": ..., "parsed_query": {...}, "state": {...}},
                              or a parsed query alone, {"intent": "causal", "kpis": ["NRx"], ...}
  --state key=value           session state (repeatable); the value is JSON (true, 3, "x", [1]),
                              True or False in any case (booleans; Python writes True), or else a string
` + dashDash

const validateUsage = `Usage: troupe validate CONFIG

Checks a workflow file: its YAML, its fields against the schema (config/troupe.schema.json;
unknown fields are errors), and that everything it names exists — agents in rules, pairs,
composites and fallbacks, builtin agents, schema files — with no composite containing
itself and no cycle in after. Every problem is reported at once, as
file:line:column: field: problem (no field for the file as a whole: its syntax, its size). Then it builds every agent, without running any, and
plans each of the file's examples as troupe plan would: an example that cannot be planned is
an error at its query. What may be wrong but need not be is a warning,
file:line:column: warning: field: problem, which does not change the exit code: an llm
agent's api_key_env naming a variable not set here (it may be where the workflow runs);
routing with no parser, or a parser intent no routing rule plans, which leaves plain-text
queries unplannable though parsed ones (--input) still plan.

` + configArg

const agentsUsage = `Usage: troupe agents CONFIG

Lists the agents of a workflow file, in the order it declares them: each agent's kind (and
command, URL, model, MCP tool or members), what it declares to the planner (reads, writes,
after, timeout, schemas) and what it does; then the file's example queries.

` + configArg

const helpUsage = `Usage: troupe help [COMMAND]

Shows the overview of troupe and its commands or, given a command, its usage, flags,
examples and exit codes: the same as troupe COMMAND --help.
`

// parseCommand parses the flags of subcommand name, wherever they are among its arguments,
// and checks it was given between minArgs and maxArgs other arguments (maxArgs < 0: any
// number). done says the command is over — it printed its help, or a usage error — and
// code is its exit code.
func parseCommand(name string, fs *flag.FlagSet, args []string, minArgs, maxArgs int, want string, stdout, stderr io.Writer) (words []string, code int, done bool) {
	fs.SetOutput(io.Discard) // errors are reported here, usage on request
	words, err := parseInterleaved(fs, args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		commandUsage(stdout, name)
		return nil, exitOK, true
	case err != nil:
		var uf *unknownFlag
		if errors.As(err, &uf) && uf.hint == "" && maxArgs < 0 {
			// What was meant may be a query word beginning with '-'.
			config := "CONFIG "
			if minArgs == 0 {
				config = ""
			}
			fmt.Fprintf(stderr, "troupe %s: %v; a query word beginning with '-' goes after --, as in: troupe %s %s-- %q\n", name, err, name, config, uf.arg)
		} else {
			fmt.Fprintf(stderr, "troupe %s: %v\n", name, err)
		}
		fmt.Fprintf(stderr, "Run 'troupe %s --help' for usage.\n", name)
		return nil, exitUsage, true
	case len(words) < minArgs || maxArgs >= 0 && len(words) > maxArgs:
		fmt.Fprintf(stderr, "troupe %s: want %s, got %d argument%s\nRun 'troupe %s --help' for usage.\n", name, want, len(words), plural(len(words)), name)
		return nil, exitUsage, true
	}
	return words, exitOK, false
}
