package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

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
	printWarnings(stderr, f)
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

// printWarnings writes f's warnings to w, one a line, as file:line:column: warning: field:
// problem.
func printWarnings(w io.Writer, f *config.File) {
	for _, e := range warnings(f) {
		fmt.Fprintf(w, "%s:%d:%d: warning: %s: %s\n", e.File, e.Line, e.Column, e.Path, e.Problem)
	}
}

// warnings are what may well be wrong with f but need not be, so validate and run report them
// without failing: an llm agent's api_key_env naming a variable this environment does not
// set. The variable may be set where the workflow runs, and a server that needs no key (a
// local one) is called without one, as llmagent does; but a file that names the variable
// expects a key. An agent that names none (OPENAI_API_KEY, by default) is not warned of.
func warnings(f *config.File) []*config.Error {
	var out []*config.Error
	for _, n := range f.Order {
		a := f.Agents[n]
		if a.LLM == nil || a.LLM.APIKeyEnv == "" {
			continue
		}
		v := a.LLM.APIKeyEnv
		what := "is not set"
		if key, ok := os.LookupEnv(v); ok {
			if key != "" {
				continue
			}
			what = "is empty"
		}
		err := fmt.Errorf("the environment variable %s %s here: the model will be called with no API key, which only a server that needs none accepts", v, what)
		out = append(out, f.Problem(a.Field(err, "llm", "api_key_env")))
	}
	return out
}
