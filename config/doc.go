// Package config reads troupe's declarative workflow files: one YAML file describes the agents
// (Go agents registered by name, subprocesses, HTTP endpoints, and sequential, parallel, loop
// and bundle composites of them), how requests are planned among them (seed 000's intent
// rules, KPI map, exclusive and compatible pairs) or routed (seed 003's coordinator table),
// the error policy, budgets, the schemas of each agent's input and output, and the keyword
// rules and gazetteers of a query parser.
//
// # Format
//
// The format is defined by a JSON Schema (draft 2020-12), Schema, checked in as
// troupe.schema.json; docs/config.md is its reference. Every agent has a kind and the block
// of that kind, named after it:
//
//	agents:
//	  fetch:
//	    kind: exec
//	    exec: {command: [./fetch.sh]}
//	    writes: [document]
//	    timeout: 10s
//	  pipeline:
//	    kind: sequential
//	    sequential: {agents: [fetch, summarize]}
//
// The kinds are builtin, exec, http, llm, mcp, sequential, parallel, loop and bundle. A new kind
// (a2a) is a new block and a new Factory; files written for the kinds that exist do not
// change — llm arrived that way.
//
// # Errors
//
// Load reports every problem at once, as Errors, each naming file:line:column, the field's
// path and the problem:
//
//	troupe.yaml:6:7: agents.fetch.exec.comand: unknown field "comand" (did you mean "command"?)
//	troupe.yaml:11:23: agents.summarize.sequential.agents[1]: unknown agent "sumarize" (did you mean "summarize"?)
//
// It checks the YAML, then the schema (unknown fields are errors), then what the schema
// cannot say: that every agent named in after, composites, routing, pairs, coordinator,
// fallbacks and the parser is declared; that no composite contains itself and after has no
// cycle; that input and output schemas compile; that routing and coordinator are not both
// given; and finally the planner's, router's and error policy's own validation.
//
// # Building
//
// Load only reads. Build turns a file into a troupe.Registry through Factories, one per
// kind, that the program passes in: this package builds builtin agents itself (from the
// program's registry) and nothing else, so it depends on no transport; cmd/troupe wires the
// exec, http, llm and composite kinds. Catalog registers the agents' declarations without
// building them, which is all planning needs. PlanRules, RouteRules, Planner, Router and
// Policy give the file's rules as the runtime's types.
package config
