package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/troupehq/troupe/config"
)

// Exit codes of every command.
const (
	exitOK        = 0   // the run completed
	exitFailed    = 1   // the run failed, or the command could not run it (plan: could not plan it)
	exitUsage     = 2   // the command line is wrong
	exitPaused    = 3   // the run paused for a human and can be resumed
	exitCancelled = 130 // the run was cancelled (128 + SIGINT, as shells report it)
)

// command is one subcommand: its name, a one-line summary for the command list, and examples
// for help, each a command line and what it does.
type command struct {
	name     string
	summary  string
	examples [][2]string
	usage    string // the command's usage and flags: the head of its --help and of troupe help NAME
	exits    string // the exit codes it uses: the foot of its help
	run      func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

func commands() []command {
	return []command{
		{
			name:    "demo",
			summary: "run seed 000's E2I causal analytics example and watch its events",
			examples: [][2]string{
				{"troupe demo", `ask "` + defaultQuery + `" and watch three agents answer it`},
				{"troupe demo Show me market trends and opportunities for Kisqali", "ask another question; the example's keyword parser reads it"},
				{"troupe demo --json --seed 7", "the events as JSON lines, one a line, with ids fixed by the seed"},
			},
			usage: demoUsage,
			exits: demoExits,
			run:   runDemo,
		},
		{
			name:    "run",
			summary: "run a query through a workflow file and watch its agents work",
			examples: [][2]string{
				{`troupe run examples/e2i "What caused the drop in NRx for Kisqali in Midwest?"`, "plan, run and answer a question with seed 000's 17 agents"},
				{`troupe run --output json examples/e2i "Why did NRx drop?" > run.json`, "the full run record (events, results, aggregation) as JSON"},
				{`troupe run cmd/troupe/testdata/workflow "How long are the words of this question?"`, "three shell-script agents (exec): two in parallel, then one on their results"},
			},
			usage: runUsage,
			exits: runExits,
			run:   runRun,
		},
		{
			name:    "plan",
			summary: "show the stages and routing decisions a query would get, without running anything",
			examples: [][2]string{
				{`troupe plan examples/e2i "Show me market trends and opportunities for Kisqali"`, "the stages, scores and reasons seed 000's rules give the question"},
				{`troupe plan --state quiz_paused=true examples/tutor "continue quiz"`, "which agent seed 003's coordinator routes a message to, in a session state"},
				{`troupe plan --format mermaid examples/e2i "Why did NRx drop?"`, "the plan as a Mermaid flowchart (or --format dot for Graphviz)"},
				{"troupe plan --input cmd/troupe/testdata/parsed.json examples/e2i", "plan a parsed query (intent, brands, KPIs) given as JSON"},
			},
			usage: planUsage,
			exits: planExits,
			run:   runPlan,
		},
		{
			name:    "validate",
			summary: "check a workflow file, reporting every problem with its line and column",
			examples: [][2]string{
				{"troupe validate examples/e2i", "check examples/e2i/troupe.yaml and build its agents without running them"},
			},
			usage: validateUsage,
			exits: validateExits,
			run:   runValidate,
		},
		{
			name:    "agents",
			summary: "list a workflow file's agents: kind, declarations, description",
			examples: [][2]string{
				{"troupe agents examples/tutor", "seed 003's five specialists and its two composites"},
			},
			usage: agentsUsage,
			exits: agentsExits,
			run:   runAgents,
		},
		{
			name:    "chat",
			summary: "hold a conversation with seed 003's tutor (examples/tutor)",
			examples: [][2]string{
				{"troupe chat examples/tutor", "talk to the tutor on this terminal; answer its quiz questions as they come"},
				{"troupe chat --script examples/tutor/testdata/fractions.chat examples/tutor", "replay a scripted conversation: diagnostic, explanation, a paused and resumed quiz, feedback"},
			},
			usage: chatUsage,
			exits: chatExits,
			run:   runChat,
		},
		{
			name:    "version",
			summary: "show the version of troupe, the revision it was built from and its Go",
			examples: [][2]string{
				{"troupe version", "module version, VCS revision, commit time, modified, Go version: one a line"},
				{"troupe --version", "the same"},
			},
			usage: versionUsage,
			exits: versionExits,
			run:   runVersion,
		},
		{
			name:    "help",
			summary: "show help for troupe or one of its commands",
			examples: [][2]string{
				{"troupe help", "this overview"},
				{"troupe help demo", "the flags of demo: the same as troupe demo --help"},
			},
			usage: helpUsage,
			exits: helpExits,
			run:   runHelp,
		},
	}
}

// run dispatches the command line to a subcommand and returns the process's exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	name := args[0]
	switch name {
	case "-h", "-help", "--help":
		name = "help"
	case "-version", "--version":
		name = "version"
	}
	for _, c := range commands() {
		if c.name == name {
			return c.run(ctx, args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "troupe: unknown command %q\n", name)
	if s := suggest(name); s != "" {
		fmt.Fprintf(stderr, "Did you mean %q?\n", s)
	}
	fmt.Fprintf(stderr, "Commands: %s. Run 'troupe help' for usage.\n", strings.Join(commandNames(), ", "))
	return exitUsage
}

func commandNames() []string {
	var names []string
	for _, c := range commands() {
		names = append(names, c.name)
	}
	return names
}

// suggest returns the command closest to name, if one is within two edits of it.
func suggest(name string) string {
	return config.Closest(strings.ToLower(name), commandNames())
}
