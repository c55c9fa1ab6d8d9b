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
	"unicode/utf8"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/config"
	"github.com/troupehq/troupe/engine"
	"github.com/troupehq/troupe/route"
)

// runPlan is `troupe plan CONFIG "query"`: the stage plan and the routing decisions a run of
// the query would make, without running anything.
func runPlan(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("plan", flag.ContinueOnError)
	format := fs.String("format", "text", "text, mermaid or dot")
	input := fs.String("input", "", "read the request (query, parsed_query, state, …) from a JSON `FILE`")
	state := stateFlag{}
	fs.Var(state, "state", "session state `key=value` (repeatable; the value is JSON or a string)")
	words, code, done := parseCommand("plan", fs, args, 1, -1, `CONFIG and a query, as in: troupe plan examples/e2i "What caused the drop in NRx for Kisqali in Midwest?"`, stdout, stderr)
	if done {
		return code
	}
	switch *format { // before the query, as troupe run checks --output: see there
	case "text", "mermaid", "dot":
	default:
		fmt.Fprintf(stderr, "troupe plan: --format %q: want text, mermaid or dot\n", *format)
		return exitUsage
	}
	if !needQuery("plan", words, *input, stderr) {
		return exitUsage
	}
	f, ok := loadConfig("plan", words[0], stderr)
	if !ok {
		return exitUsage
	}
	req, in, err := request(f, strings.Join(words[1:], " "), *input, state, 0)
	if err != nil {
		report(stderr, "plan", err)
		return exitUsage
	}
	cat, err := config.Catalog(f)
	if err != nil {
		report(stderr, "plan", err)
		return exitUsage
	}
	eng, err := engine.New(engineConfig(f, cat))
	if err != nil {
		report(stderr, "plan", err)
		return exitUsage
	}
	pl, err := planOf(ctx, f, cat, eng, req)
	if perr := in.refused(err, req.ParsedQuery); perr != nil {
		report(stderr, "plan", perr) // a mistake in --input's file, as troupe run says
		return exitUsage
	}
	if err != nil {
		// The file is valid and the command line well formed, but its rules refuse this
		// request: no run failed, since none was started.
		fmt.Fprintf(stderr, "troupe plan: the request cannot be planned: %v\n", err)
		return exitFailed
	}
	switch *format {
	case "mermaid":
		fmt.Fprint(stdout, pl.mermaid())
	case "dot":
		fmt.Fprint(stdout, pl.dot())
	default:
		fmt.Fprint(stdout, pl.text())
	}
	return exitOK
}

// planned is what a run of a request would do: its plan and, for each task the router
// decides, the decision.
type planned struct {
	file      *config.File
	req       troupe.Request
	plan      *troupe.Plan
	decisions map[string]troupe.RoutingDecision // task id → decision
	ids       map[string]string                 // agent or task name → graph node id; see nodeIDs
}

// planOf plans req with eng, an engine over cat, f's declared agents, without building or
// running any, and routes the tasks a router decides.
func planOf(ctx context.Context, f *config.File, cat *troupe.Registry, eng *engine.Engine, req troupe.Request) (*planned, error) {
	p, err := eng.Plan(req)
	if err != nil {
		return nil, err
	}
	out := &planned{file: f, req: req, plan: p, decisions: map[string]troupe.RoutingDecision{}}
	if r := f.Router(); r != nil {
		for _, st := range p.Stages {
			for _, task := range st.Tasks {
				d, err := r.Route(ctx, troupe.RouteInput{Task: task, Query: req.Query, ParsedQuery: req.ParsedQuery, State: req.State, Available: cat.Names()}, troupe.Context{})
				if err != nil {
					return nil, err
				}
				out.decisions[task.ID] = d
			}
		}
	}
	return out, nil
}

// target is the agent a task runs: its own, or the router's choice.
func (p *planned) target(t troupe.Task) string {
	if d, ok := p.decisions[t.ID]; ok {
		return d.Target
	}
	return t.Agent
}

func (p *planned) text() string {
	var b strings.Builder
	title := p.file.Name
	if title == "" {
		title = p.file.Path
	}
	fmt.Fprintf(&b, "%s: %s (%s)\n\n", title, count(len(p.file.Order), "agent"), p.file.Path)
	fmt.Fprintf(&b, "query     %s\n", p.req.Query)
	if len(p.req.ParsedQuery) > 0 {
		fmt.Fprintf(&b, "parsed    %s\n", formatParsed(p.req.ParsedQuery))
	}
	if len(p.req.State) > 0 {
		fmt.Fprintf(&b, "state     %s\n", formatParsed(p.req.State))
	}
	if c := p.plan.Criteria; c != nil && c.IntentType != "" {
		fmt.Fprintf(&b, "criteria  intent %s, complexity %s, confidence threshold %.2f\n", c.IntentType, c.ComplexityLevel(), c.Threshold())
	}
	fmt.Fprintf(&b, "\nplan: %d stage%s\n", len(p.plan.Stages), plural(len(p.plan.Stages)))
	for i, st := range p.plan.Stages {
		mode := "sequential"
		if len(st.Tasks) > 1 {
			mode = fmt.Sprintf("parallel, at most %d at once", st.MaxConcurrency)
		}
		fmt.Fprintf(&b, "  stage %d (%s)\n", i+1, mode)
		width := 0 // the stage's agents' names, so that their priorities line up
		for _, t := range st.Tasks {
			width = max(width, utf8.RuneCountInString(t.Agent))
		}
		for _, t := range st.Tasks {
			if d, ok := p.decisions[t.ID]; ok {
				fmt.Fprintf(&b, "    %s → %s\n", t.ID, d.Target)
				continue
			}
			line := fmt.Sprintf("    %-*s  priority %.2f", width, t.Agent, t.Priority)
			if len(t.DependsOn) > 0 {
				line += "  after " + strings.Join(t.DependsOn, ", ")
			}
			fmt.Fprintln(&b, line)
		}
	}
	if len(p.decisions) > 0 {
		fmt.Fprintln(&b, "\nrouting")
		for _, id := range slices.Sorted(maps.Keys(p.decisions)) {
			d := p.decisions[id]
			fmt.Fprintf(&b, "  %s → %s: %s\n", id, d.Target, d.Reason)
			for _, k := range slices.Sorted(maps.Keys(d.Metadata)) {
				fmt.Fprintf(&b, "    %-10s %v\n", k, d.Metadata[k])
			}
			if d.Fallback != "" {
				fmt.Fprintf(&b, "    %-10s %s\n", "fallback", d.Fallback)
			}
			if d.Metadata["source"] == "default" {
				for _, m := range nearMisses(p.file, p.req.Query) {
					fmt.Fprintf(&b, "    %-10s %s\n", "near miss", m)
				}
			}
		}
	}
	if len(p.plan.Selected) > 0 {
		fmt.Fprintln(&b, "\nselected")
		for _, s := range p.plan.Selected {
			fmt.Fprintf(&b, "  %-24s %.2f  %s\n", s.Agent, s.Score, strings.Join(s.Reasons, "; "))
		}
	}
	if len(p.plan.Skipped) > 0 {
		fmt.Fprintln(&b, "\nskipped")
		for _, s := range p.plan.Skipped {
			fmt.Fprintf(&b, "  %-24s %.2f  %s\n", s.Agent, s.Score, strings.Join(s.Reasons, "; "))
		}
	}
	return b.String()
}

// mermaid draws the plan as a Mermaid flowchart: a subgraph a stage, an edge a dependency
// (or, between stages without declared dependencies, from every task of one stage to every
// task of the next).
func (p *planned) mermaid() string {
	var b strings.Builder
	b.WriteString("flowchart LR\n")
	b.WriteString("  query([\"" + mermaidText(cut(p.req.Query, 60)) + "\"])\n")
	for i, st := range p.plan.Stages {
		fmt.Fprintf(&b, "  subgraph stage%d [\"stage %d\"]\n", i+1, i+1)
		for _, t := range st.Tasks {
			fmt.Fprintf(&b, "    %s[\"%s\"]\n", p.nodeID(p.target(t)), mermaidText(p.target(t)))
		}
		b.WriteString("  end\n")
	}
	for _, e := range p.edges() {
		if e.label != "" {
			fmt.Fprintf(&b, "  %s -- \"%s\" --> %s\n", e.from, mermaidText(e.label), e.to)
		} else {
			fmt.Fprintf(&b, "  %s --> %s\n", e.from, e.to)
		}
	}
	return b.String()
}

// dot draws the plan as a Graphviz digraph, a cluster a stage.
func (p *planned) dot() string {
	var b strings.Builder
	b.WriteString("digraph plan {\n  rankdir=LR;\n  node [shape=box, style=rounded];\n")
	fmt.Fprintf(&b, "  query [shape=oval, label=%q];\n", cut(p.req.Query, 60))
	for i, st := range p.plan.Stages {
		fmt.Fprintf(&b, "  subgraph cluster_stage%d {\n    label=\"stage %d\";\n", i+1, i+1)
		for _, t := range st.Tasks {
			fmt.Fprintf(&b, "    %s [label=%q];\n", p.nodeID(p.target(t)), p.target(t))
		}
		b.WriteString("  }\n")
	}
	for _, e := range p.edges() {
		if e.label != "" {
			fmt.Fprintf(&b, "  %s -> %s [label=%q];\n", e.from, e.to, e.label)
		} else {
			fmt.Fprintf(&b, "  %s -> %s;\n", e.from, e.to)
		}
	}
	b.WriteString("}\n")
	return b.String()
}

type edge struct{ from, to, label string }

// edges are the plan's dependencies: the query to the first stage (labelled with the routing
// decision's reason when a router chose), then each task's DependsOn, or, for a task that
// declares none after the first stage, every task of the stage before.
func (p *planned) edges() []edge {
	var out []edge
	for i, st := range p.plan.Stages {
		for _, t := range st.Tasks {
			to := p.nodeID(p.target(t))
			switch {
			case i == 0:
				label := ""
				if d, ok := p.decisions[t.ID]; ok {
					label = d.Reason
				}
				out = append(out, edge{"query", to, label})
			case len(t.DependsOn) > 0:
				for _, d := range t.DependsOn {
					out = append(out, edge{p.nodeID(d), to, ""})
				}
			default:
				for _, prev := range p.plan.Stages[i-1].Tasks {
					out = append(out, edge{p.nodeID(p.target(prev)), to, ""})
				}
			}
		}
	}
	return out
}

// nodeID is the Mermaid and Graphviz identifier of the node of an agent (or a task) name:
// distinct names have distinct ids. See nodeIDs.
func (p *planned) nodeID(name string) string {
	if p.ids == nil {
		var names []string
		for _, st := range p.plan.Stages {
			for _, t := range st.Tasks {
				names = append(names, p.target(t))
				names = append(names, t.DependsOn...)
			}
		}
		p.ids = nodeIDs(names)
	}
	if id, ok := p.ids[name]; ok {
		return id
	}
	return safeID(name)
}

// nodeIDs gives each of names an identifier Mermaid and Graphviz accept: "a_" and the name with
// every character but ASCII letters, digits and _ made _. Two names can make the same one
// ("a-b" and "a_b"): a name made only of kept characters has it (no two such names share one);
// any other name has it when it is free, or else it and the first free "_2", "_3", …, taken in
// sorted order. The ids depend only on the set of names, so the same plan draws the same graph.
func nodeIDs(names []string) map[string]string {
	names = slices.Compact(slices.Sorted(slices.Values(names)))
	ids := make(map[string]string, len(names))
	used := map[string]bool{}
	kept := func(n string) bool { return safeID(n) == "a_"+n }
	for _, pass := range []bool{true, false} { // names kept whole first: their id is theirs
		for _, n := range names {
			if kept(n) != pass {
				continue
			}
			id := safeID(n)
			for i := 2; used[id]; i++ {
				id = fmt.Sprintf("%s_%d", safeID(n), i)
			}
			ids[n], used[id] = id, true
		}
	}
	return ids
}

// safeID makes a name safe as a Mermaid and Graphviz identifier, not necessarily distinct from
// another name's.
func safeID(name string) string {
	var b strings.Builder
	b.WriteString("a_")
	for _, r := range name {
		if r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

func mermaidText(s string) string { return strings.ReplaceAll(s, `"`, "#quot;") }

// nearMisses names the rules of f's coordinator whose words match query but whose state
// conditions did not hold ("continue quiz" without quiz_paused=true), so that a message that
// fell through to the default says which rule it almost met and what state that rule needs.
// Each rule is routed alone with its state conditions dropped, so the match is the router's own.
func nearMisses(f *config.File, query string) []string {
	r := f.RouteRules()
	if r == nil {
		return nil
	}
	var out []string
	for _, tr := range r.Triggers {
		if len(tr.Patterns) == 0 || len(tr.When) == 0 {
			continue
		}
		words := route.Rules{Triggers: []route.Trigger{{Name: tr.Name, Patterns: tr.Patterns, Target: tr.Target}}}
		d, err := words.Route(context.Background(), troupe.RouteInput{Query: query, Available: []string{tr.Target}}, troupe.Context{})
		if err != nil || d.Metadata["source"] != "trigger" {
			continue
		}
		var need []string
		for _, k := range slices.Sorted(maps.Keys(tr.When)) {
			v, _ := json.Marshal(tr.When[k])
			need = append(need, k+"="+string(v))
		}
		// The hint is the flags as a shell passes them on: --state 'mode="1"' gives the string
		// "1", which --state mode="1" would not (the shell drops the quotes).
		out = append(out, fmt.Sprintf("rule %s (→ %s) matches %q but needs state %s; try %s",
			tr.Name, tr.Target, d.Metadata["pattern"], strings.Join(need, ", "), strings.TrimSpace(stateFlags(tr.When))))
	}
	return out
}
