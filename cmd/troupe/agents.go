package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/troupehq/troupe/config"
)

// runAgents is `troupe agents CONFIG`: the file's agents, one a line, with their kind, what
// they declare and what they do, then the example questions the file gives.
func runAgents(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("agents", flag.ContinueOnError)
	words, code, done := parseCommand("agents", fs, args, 1, 1, "one CONFIG (a file, or a directory holding troupe.yaml)", stdout, stderr)
	if done {
		return code
	}
	f, b, code, ok := loadWithBuiltins("agents", words[0], stderr)
	if !ok {
		return code
	}
	title := f.Name
	if title == "" {
		title = f.Path
	}
	fmt.Fprintf(stdout, "%s: %s", title, count(len(f.Order), "agent"))
	if f.Description != "" {
		fmt.Fprintf(stdout, " — %s", f.Description)
	}
	fmt.Fprint(stdout, "\n\n")
	tw := tabwriter.NewWriter(stdout, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "AGENT\tKIND\tDESCRIPTION, DECLARATIONS")
	for _, n := range f.Order {
		a := f.Agents[n]
		desc := a.Description
		if desc == "" && a.Kind == config.KindBuiltin {
			name := n
			if a.Builtin != nil && a.Builtin.Name != "" {
				name = a.Builtin.Name
			}
			if s, ok := b.Spec(name); ok {
				desc = s.Description
			} else {
				desc = "(no builtin agent " + name + " in this program)"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", n, kindDetail(a), desc)
		if d := declares(a); d != "" {
			fmt.Fprintf(tw, "\t\t%s\n", d)
		}
	}
	tw.Flush()
	if len(f.Examples) > 0 {
		fmt.Fprintln(stdout, "\nexamples")
		for _, ex := range f.Examples {
			fmt.Fprintf(stdout, "  troupe plan %s%s %q\n", stateFlags(ex.State), words[0], ex.Query)
		}
	}
	return exitOK
}

// stateFlags writes an example's session state as the --state flags that give it, each
// followed by a space: a value that --state would read back as written goes as it is, any other
// as JSON (a string "true" as '"true"'), and a flag the shell would split or expand is quoted.
func stateFlags(state map[string]any) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(state)) {
		b.WriteString("--state " + shellQuote(k+"="+stateValue(state[k])) + " ")
	}
	return b.String()
}

// stateValue writes v as --state reads it back: a string as it is when --state would read it
// as that string, and anything else, a string that would read as another value ("1", "true")
// included, as JSON.
func stateValue(v any) string {
	if s, ok := v.(string); ok {
		var back any
		if json.Unmarshal([]byte(s), &back) != nil && !strings.EqualFold(s, "true") && !strings.EqualFold(s, "false") {
			return s
		}
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// shellQuote quotes s for a POSIX shell when it holds anything but plain characters.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.,:/=+@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// kindDetail is the kind with what its block says in a few words.
func kindDetail(a *config.Agent) string {
	switch {
	case a.Exec != nil:
		return "exec " + strings.Join(a.Exec.Command, " ")
	case a.HTTP != nil:
		return "http " + a.HTTP.URL
	case a.Builtin != nil && a.Builtin.Name != "":
		return "builtin " + a.Builtin.Name
	case a.Loop != nil:
		return fmt.Sprintf("loop %s ×%d", a.Loop.Agent, a.Loop.MaxIterations)
	case a.Bundle != nil:
		s := fmt.Sprintf("bundle %s ×%d", a.Bundle.Agent, a.Bundle.Replicates)
		for i, l := range a.Bundle.Lints {
			if i == 0 {
				s += ", lints "
			} else {
				s += ", "
			}
			s += l.Agent
		}
		return s
	case a.Sequential != nil:
		return "sequential " + strings.Join(a.Sequential.Agents, " → ")
	case a.Parallel != nil:
		s := "parallel " + strings.Join(a.Parallel.Agents, " ‖ ")
		switch a.Parallel.Strategy {
		case config.StrategyFirstSuccess:
			s += ", first success"
		case config.StrategyMajorityVote:
			s += ", majority vote on " + a.Parallel.Vote
		}
		return s
	case a.LLM != nil:
		return "llm " + a.LLM.Model
	case a.MCP != nil:
		return "mcp " + a.MCP.Server + "/" + a.MCP.Tool
	}
	return a.Kind
}

// declares lists what an agent declares to the planner.
func declares(a *config.Agent) string {
	var parts []string
	if len(a.Reads) > 0 {
		parts = append(parts, "reads "+strings.Join(a.Reads, ", "))
	}
	if len(a.Writes) > 0 {
		parts = append(parts, "writes "+strings.Join(a.Writes, ", "))
	}
	if len(a.After) > 0 {
		parts = append(parts, "after "+strings.Join(a.After, ", "))
	}
	if a.Timeout > 0 {
		parts = append(parts, "timeout "+time.Duration(a.Timeout).String())
	}
	if len(a.InputSchema) > 0 || len(a.OutputSchema) > 0 {
		parts = append(parts, "schemas")
	}
	return strings.Join(parts, "; ")
}
