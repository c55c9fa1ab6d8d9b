package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/troupehq/troupe/config"
)

// runValidate is `troupe validate CONFIG`: it loads the file, reporting every problem at once
// with its position, then builds every agent (without running any) to catch what only
// building finds: a builtin the program does not have, an exec program that is not there.
func runValidate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	words, code, done := parseCommand("validate", fs, args, 1, 1, "one CONFIG (a file, or a directory holding troupe.yaml)", stdout, stderr)
	if done {
		return code
	}
	f, b, code, ok := loadWithBuiltins("validate", words[0], stderr)
	if !ok {
		return code
	}
	servers := newMCPServers()
	defer servers.Close()
	if _, err := config.Build(ctx, f, config.Options{Builtins: b, Factories: factories(servers)}); err != nil {
		var es config.Errors
		if errors.As(err, &es) {
			for _, e := range es {
				fmt.Fprintln(stderr, e)
			}
		} else {
			fmt.Fprintln(stderr, err)
		}
		fmt.Fprintf(stderr, "troupe validate: %s: its agents cannot be built\n", f.Path)
		return exitUsage
	}
	how := "every agent, in the stages their declarations imply"
	switch {
	case f.Routing != nil:
		how = "planned by " + count(len(f.Routing.Intents), "intent rule")
	case f.Coordinator != nil:
		how = "routed by a coordinator of " + count(len(f.Coordinator.Triggers), "trigger")
	}
	fmt.Fprintf(stdout, "%s: ok — %s, %s\n", f.Path, count(len(f.Order), "agent"), how)
	return exitOK
}
