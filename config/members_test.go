package config_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/troupehq/troupe/flow"
)

// A composite that lists an agent twice is refused where it lists it again: flow tells members
// apart by name and refuses such a composite at its first run, so every run of it would fail. An
// llm agent's tools are refused the same way, a tool offered twice failing the build (with no
// field named) — an agent or server listed again, or a server and one of its tools.
func TestParseMembersOnce(t *testing.T) {
	const head = "version: 1\nagents:\n  a: {kind: builtin}\n  b: {kind: builtin}\n"
	for _, tt := range []struct {
		name, src string
		want      []string
	}{
		{"parallel", head + "  p: {kind: parallel, parallel: {agents: [a, b, a]}}\n", []string{
			`t.yaml:5:49: agents.p.parallel.agents[2]: "a" is listed twice`,
		}},
		{"sequential", head + "  s: {kind: sequential, sequential: {agents: [b, b]}}\n", []string{
			`t.yaml:5:50: agents.s.sequential.agents[1]: "b" is listed twice`,
		}},
		{"distinct", head + "  s: {kind: sequential, sequential: {agents: [a, b]}}\n  p: {kind: parallel, parallel: {agents: [s, a]}}\n", nil},
		{"llm tools", head + "  m: {kind: llm, llm: {model: x, tools: [a, b, a, \"mcp:fs/read\", \"mcp:fs\", \"mcp:fs\", \"mcp:fs/write\", \"mcp:gh/x\", \"mcp:gh/x\", \"mcp:gh/y\"]}}\nmcp_servers: {fs: {command: x}, gh: {command: y}}\n", []string{
			`t.yaml:5:48: agents.m.llm.tools[2]: "a" is listed twice`,
			`t.yaml:5:66: agents.m.llm.tools[4]: "mcp:fs" offers "mcp:fs/read", which tools[3] lists already: list the server or some of its tools, not both`,
			`t.yaml:5:76: agents.m.llm.tools[5]: "mcp:fs" is listed twice`,
			`t.yaml:5:86: agents.m.llm.tools[6]: "mcp:fs/write" is one of the tools "mcp:fs" (tools[4]) offers already: list the server or some of its tools, not both`,
			`t.yaml:5:114: agents.m.llm.tools[8]: "mcp:gh/x" is listed twice`,
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, parseErrs(t, tt.src)); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

// Composites nesting deeper than flow.MaxNesting are refused at the outermost, once: flow fails
// the member past that depth at every run. As deep as that bound is allowed.
func TestParseNestingWithinFlowsBound(t *testing.T) {
	chain := func(n int) string { // c1 holds c2 … holds c(n-1), which holds leaf: n agents
		var b strings.Builder
		b.WriteString("version: 1\nagents:\n  leaf: {kind: builtin}\n")
		for i := 1; i < n; i++ {
			next := fmt.Sprintf("c%d", i+1)
			if i == n-1 {
				next = "leaf"
			}
			kind := []string{"sequential", "parallel"}[i%2]
			fmt.Fprintf(&b, "  c%d: {kind: %s, %s: {agents: [%s]}}\n", i, kind, kind, next)
		}
		return b.String()
	}
	if errs := parseErrs(t, chain(flow.MaxNesting)); errs != nil {
		t.Errorf("a chain of flow.MaxNesting agents: %q, want no problems", errs)
	}
	want := []string{fmt.Sprintf("t.yaml:4:7: agents.c1: its members nest %d agents deep (c1 → … → leaf), and dispatches nest at most %d deep: every run of c1 would fail at leaf with MAX_DEPTH_EXCEEDED; nest fewer composites",
		flow.MaxNesting+1, flow.MaxNesting)}
	if diff := cmp.Diff(want, parseErrs(t, chain(flow.MaxNesting+1))); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
	// A loop nests its agent as a sequence does.
	src := strings.Replace(chain(flow.MaxNesting+2), "  c1: {kind: parallel, parallel: {agents: [c2]}}", "  c1: {kind: loop, loop: {agent: c2, max_iterations: 2}}", 1)
	want = []string{fmt.Sprintf("t.yaml:4:7: agents.c1: its members nest %d agents deep (c1 → … → leaf), and dispatches nest at most %d deep: every run of c1 would fail at c%d with MAX_DEPTH_EXCEEDED; nest fewer composites",
		flow.MaxNesting+2, flow.MaxNesting, flow.MaxNesting+1)}
	if diff := cmp.Diff(want, parseErrs(t, src)); diff != "" {
		t.Errorf("loop (-want +got):\n%s", diff)
	}
}

// Routing without an intent rule plans no request (unless its parser prefers agents, the
// planner's only way without one), and a coordinator with nothing to route by routes none: both
// are refused, at their field, rather than every request failing.
func TestParseRoutesSomething(t *testing.T) {
	const head = "version: 1\nagents:\n  a: {kind: builtin}\n"
	for _, tt := range []struct {
		name, src string
		want      []string
	}{
		{"routing of no intents", head + "routing: {intents: []}\n", []string{
			`t.yaml:4:20: routing.intents: routing has no intent rules, so no request can be planned: the planner selects agents by the rule of the request's intent; add a rule such as {intent: general, primary: [AGENT]}, or remove routing to run every top-level agent`,
		}},
		{"routing of no intents but preferred agents", head + "routing: {intents: []}\nparser:\n  default_intent: x\n  preferred_agents: [{agent: a, words: [aa]}]\n", nil},
		{"empty coordinator", head + "coordinator: {}\n", []string{
			`t.yaml:4:14: coordinator: the coordinator has no triggers, intents, kpi_map or default, so it routes no request to any agent: give it a default agent, or triggers`,
		}},
		{"coordinator of a reason alone", head + "coordinator:\n  default_reason: nothing else\n", []string{
			`t.yaml:5:3: coordinator: the coordinator has no triggers, intents, kpi_map or default, so it routes no request to any agent: give it a default agent, or triggers`,
		}},
		{"coordinator of a default", head + "coordinator: {default: a}\n", nil},
		{"coordinator of intents", head + "coordinator: {intents: {x: [a]}}\n", nil},
		{"coordinator of KPIs", head + "coordinator: {kpi_map: {NRx: [a]}}\n", nil},
		{"coordinator of a trigger", head + "coordinator: {triggers: [{name: t, patterns: [hi], target: a}]}\n", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, parseErrs(t, tt.src)); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}
