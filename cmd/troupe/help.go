package main

import (
	"context"
	"fmt"
	"io"
)

// runHelp prints the overview, or one command's help.
func runHelp(_ context.Context, args []string, stdout, stderr io.Writer) int {
	switch len(args) {
	case 0:
		usage(stdout)
		return exitOK
	case 1:
		if args[0] == "demo" {
			demoUsage(stdout)
			return exitOK
		}
		for _, c := range commands() {
			if c.name == args[0] {
				fmt.Fprintf(stdout, "troupe %s: %s\n\nExamples:\n", c.name, c.summary)
				writeExamples(stdout, c)
				return exitOK
			}
		}
		fmt.Fprintf(stderr, "troupe help: unknown command %q\n", args[0])
		if s := suggest(args[0]); s != "" {
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
		fmt.Fprintf(w, "  %-6s  %s\n", c.name, c.summary)
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

const exitCodes = `Exit codes: 0 the run completed, 1 it failed, 2 usage error,
3 it paused waiting for a human, 130 it was cancelled (Ctrl-C).
`
