package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/troupehq/troupe/config"
	"github.com/troupehq/troupe/engine"
)

// runValidate is `troupe validate CONFIG`: it loads the file, reporting every problem at once
// with its position, then builds every agent (without running any) to catch what only
// building finds: a builtin the program does not have, an exec program that is not there. It
// plans each of the file's examples, as troupe plan would, and warns of a file whose plain-text
// queries its routing cannot plan (see planWarnings).
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
	for _, e := range byPosition(append(warnings(f), planWarnings(f)...)) {
		fmt.Fprintf(stderr, "%s:%d:%d: warning: %s: %s\n", e.File, e.Line, e.Column, e.Path, e.Problem)
	}
	servers := newMCPServers()
	defer servers.Close()
	var buildErrs config.Errors
	if _, err := config.Build(ctx, f, config.Options{Builtins: b, Factories: factories(servers)}); err != nil {
		if buildCancelled(ctx, "validate", stderr) {
			return exitCancelled
		}
		if !errors.As(err, &buildErrs) {
			fmt.Fprintln(stderr, printableText(err.Error()))
			fmt.Fprintf(stderr, "troupe validate: %s: its agents cannot be built\n", f.Path)
			return exitUsage
		}
	}
	unplanned := examples(ctx, f)
	if len(buildErrs) > 0 || len(unplanned) > 0 {
		for _, e := range byPosition(append(slices.Clone(buildErrs), unplanned...)) {
			fmt.Fprintln(stderr, printableText(e.Error()))
		}
		if len(buildErrs) > 0 {
			fmt.Fprintf(stderr, "troupe validate: %s: its agents cannot be built\n", f.Path)
		}
		if n := len(unplanned); n > 0 {
			fmt.Fprintf(stderr, "troupe validate: %s: %s of %d cannot be planned\n", f.Path, count(n, "example"), len(f.Examples))
		}
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

// byPosition sorts problems by their place in the file.
func byPosition(es []*config.Error) []*config.Error {
	slices.SortStableFunc(es, func(a, b *config.Error) int {
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column))
	})
	return es
}

// examples plans each of f's examples as troupe plan would — parsed by the file's parser, in
// its session state — and returns a problem, at the example's query, for each that cannot be:
// the file says it answers them, and troupe agents shows each as a troupe plan command to try.
func examples(ctx context.Context, f *config.File) []*config.Error {
	if len(f.Examples) == 0 {
		return nil
	}
	cat, err := config.Catalog(f)
	if err != nil {
		return []*config.Error{f.Problem(err)}
	}
	eng, err := engine.New(engineConfig(f, cat))
	if err != nil {
		return []*config.Error{f.Problem(err)}
	}
	var out []*config.Error
	for i, ex := range f.Examples {
		req, _, err := request(f, ex.Query, "", ex.State, 0)
		if err == nil {
			_, err = planOf(ctx, f, cat, eng, req)
		}
		if err != nil {
			err = fmt.Errorf("troupe plan cannot plan this example: %w", err)
			out = append(out, f.Problem(&config.FieldError{Path: []string{"examples", strconv.Itoa(i), "query"}, Err: err}))
		}
	}
	return out
}

// planWarnings are what makes plain-text queries of f unplannable but leaves the file usable
// with parsed queries (troupe run --input, or a server's clients), so validate warns of them
// without failing: routing, or a coordinator that routes only by intent and KPI, with no parser
// to give a query its intent; a parser whose intents, its default one included, have no
// routing rule to plan them.
func planWarnings(f *config.File) []*config.Error {
	var out []*config.Error
	at := func(ptr, problem string) {
		line, col := f.Position(ptr)
		out = append(out, &config.Error{File: f.Path, Line: line, Column: col, Path: strings.ReplaceAll(strings.TrimPrefix(ptr, "/"), "/", "."), Problem: problem})
	}
	field := func(err error, path ...string) {
		out = append(out, f.Problem(&config.FieldError{Path: path, Err: err}))
	}
	switch r, c := f.Routing, f.Coordinator; {
	case r != nil && f.Parser == nil:
		at("/routing", "routing plans a request by the intent of its parsed query, and with no parser a plain-text query has none, so none can be planned: add a parser, or pass parsed queries with --input")
	case r != nil:
		var intents []string
		for _, ir := range r.Intents {
			intents = append(intents, ir.Intent)
		}
		planned := "routing.intents has none"
		if len(intents) > 0 {
			planned = "routing.intents has rules for " + strings.Join(intents, ", ")
		}
		p := f.Parser
		if !slices.Contains(intents, p.DefaultIntent) {
			field(fmt.Errorf("a query none of parser.intents fires on gets intent %q, which no routing rule plans (%s): add a rule for %q under routing.intents, or make default_intent one of theirs", p.DefaultIntent, planned, p.DefaultIntent),
				"parser", "default_intent")
		}
		for _, list := range []struct {
			field string
			rules []config.IntentKeywords
			what  string
		}{{"intents", p.Intents, "intent"}, {"secondary_intents", p.SecondaryIntents, "secondary intent"}} {
			for i, ik := range list.rules {
				if ik.Intent != "" && !slices.Contains(intents, ik.Intent) {
					field(fmt.Errorf("a query this rule fires on gets %s %q, which no routing rule plans (%s): add a rule for %q under routing.intents", list.what, ik.Intent, planned, ik.Intent),
						"parser", list.field, strconv.Itoa(i), "intent")
				}
			}
		}
	case c != nil && f.Parser == nil && len(c.Triggers) == 0 && c.Default == "":
		at("/coordinator", "the coordinator has no triggers and no default, so it routes a request only by the intent or KPIs of its parsed query, and with no parser a plain-text query has neither: add a parser, a default or triggers, or pass parsed queries with --input")
	}
	return out
}

// printWarnings writes f's warnings to w, one a line, as file:line:column: warning: field:
// problem.
func printWarnings(w io.Writer, f *config.File) {
	for _, e := range warnings(f) {
		fmt.Fprintf(w, "%s:%d:%d: warning: %s: %s\n", e.File, e.Line, e.Column, e.Path, e.Problem)
	}
}

// warnings are what may well be wrong with f but need not be, so validate and run report them
// without failing, in file order: an llm agent's api_key_env naming a variable this environment
// does not set. The variable may be set where the workflow runs, and a server that needs no key
// (a local one) is called without one, as llmagent does; but a file that names the variable
// expects a key. An agent that names none (OPENAI_API_KEY, by default) is not warned of. And an
// MCP server no agent uses (see unusedServers).
func warnings(f *config.File) []*config.Error {
	out := unusedServers(f)
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
	return byPosition(out)
}

// unusedServers warns of each MCP server of f that no agent uses: no mcp agent is one of its
// tools and no llm agent's tools name it. A server is started, its command looked up and its
// env read, when an agent that uses it is built, so nothing checks one no agent uses, nor does
// anything run it; it is not an error, as nothing would fail, but a file that declares a server
// means some agent to use it (an llm agent's tools left without its mcp:NAME, say).
func unusedServers(f *config.File) []*config.Error {
	used := map[string]bool{}
	for _, a := range f.Agents {
		if a.MCP != nil {
			used[a.MCP.Server] = true
		}
		if a.LLM != nil {
			for _, t := range a.LLM.Tools {
				if server, _, ok := config.MCPTool(t); ok {
					used[server] = true
				}
			}
		}
	}
	var out []*config.Error
	for _, n := range slices.Sorted(maps.Keys(f.MCPServers)) {
		if !used[n] {
			line, col := f.Position("/mcp_servers/" + n) // a server's name is a plain word
			out = append(out, &config.Error{File: f.Path, Line: line, Column: col, Path: "mcp_servers." + n,
				Problem: fmt.Sprintf("no agent uses this server (no mcp agent has server: %s, no llm agent's tools name mcp:%s), so it is never started, nor its command or env checked", n, n)})
		}
	}
	return out
}
