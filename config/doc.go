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
// A bundle's lints (seed 004's lint lane) are agents of the file run on each replicate's output
// beside the evaluation, each with a tiny timeout; their findings are the bundle's warnings and
// never gate it. Like a composite's members, an agent used only as a lint is not planned on its
// own (TopLevel):
//
//	agents:
//	  panel:
//	    kind: bundle
//	    bundle: {agent: judge, replicates: 3, lints: [{agent: tidy, timeout: 500ms}]}
//
// The kinds are builtin, exec, http, llm, mcp, sequential, parallel, loop and bundle. A new kind
// (a2a) is a new block and a new Factory; files written for the kinds that exist do not
// change — llm and mcp arrived that way.
//
// # MCP tools
//
// mcp_servers declares MCP (Model Context Protocol) servers by name: a command run as a
// subprocess speaking MCP over stdio, or a streamable HTTP url, with the tools to include, a
// prefix for their names, timeouts and the bound of a tool's result (max_result_bytes). An
// llm agent lists their tools among its tools, all of a server's ("mcp:NAME") or one
// ("mcp:NAME/TOOL"); an agent of kind mcp is one tool used directly as a workflow step:
//
//	agents:
//	  writer:
//	    kind: llm
//	    llm: {model: small, tools: [fetch, "mcp:files/read_file"]}
//	  sum:
//	    kind: mcp
//	    mcp: {server: calc, tool: add}
//	mcp_servers:
//	  files: {command: mcp-server-filesystem, args: [./data]}
//	  calc: {url: "http://127.0.0.1:3001/mcp", call_timeout: 10s}
//
// Load checks that every server named is declared and has exactly one of command and url;
// the program connects the servers when it builds the agents (cmd/troupe closes them when
// the command ends).
//
// # Errors
//
// Load reports every problem at once, as Errors, each naming file:line:column, the field's
// path and the problem:
//
//	troupe.yaml:6:7: agents.fetch.exec.comand: unknown field "comand" (did you mean "command"?)
//	troupe.yaml:11:23: agents.summarize.sequential.agents[1]: unknown agent "sumarize" (did you mean "summarize"?)
//
// It checks that the file is UTF-8 text (a byte order mark is dropped; UTF-16, bytes that are
// not UTF-8 and control characters are refused at their place), then the YAML — reporting
// every duplicate key, a second directive before the document (the YAML reader takes one
// %YAML or %TAG, followed by "---"; tags are ignored), and refusing, with the place, a file
// that nests more than 200 deep, holds a mapping of more than 5000 keys or expands (aliases
// included) to more than 100000 values, so that loading any file takes bounded time and memory — then the schema (unknown
// fields are errors; numbers and durations are within what their Go fields hold), then what
// the schema cannot say: that every agent named in after, composites,
// routing, pairs, coordinator, fallbacks and the parser, and every MCP server named, is
// declared; that no composite contains itself and after has no
// cycle; that a sequential or parallel agent lists each member once and an llm agent offers each
// tool once (an entry listed once, a server not beside one of its tools), as flow and llmagent
// refuse the rest; that composites nest no deeper than flow.MaxNesting, past which every run
// would fail; that routing has an intent rule (unless the parser prefers agents, the planner's
// only way without one) and a coordinator something to route by; that no agent is its own fallback, and, with neither routing nor coordinator to plan
// them, that no agents none of which another runs after are each other's fallbacks; that input and output schemas compile; that a bundle and the agent it replicates do
// not both declare an input schema, and that what package evidence would refuse of a bundle
// is not there (a quorum past its replicates, repeated seeds, redact patterns that do not
// compile or match the empty string, malformed redact field paths); that a bundle's lints name
// agents declared, each once, neither the bundle nor an agent holding it (a lint counts among
// the bundle's children, as a member does, so the cycle check refuses it), with a timeout more
// than zero and no longer than the bundle's own, which cuts off every lint first; that no mcp agent's timeout is longer than its server's
// call_timeout, and no max_result_bytes of a server run as a command more than one of its
// messages can hold; that routing and coordinator are not both given; and finally the planner's,
// router's and error policy's own validation.
//
// # Building
//
// Load only reads. Build turns a file into a troupe.Registry through Factories, one per
// kind, that the program passes in: this package builds builtin agents itself (from the
// program's registry) and nothing else, so it depends on no transport; cmd/troupe wires the
// exec, http, llm, mcp and composite kinds. What building finds wrong is reported as Errors
// too: at the field at fault when the error is a FieldError (a factory says which field with
// one), else at the agent. Catalog registers the agents' declarations without building them,
// which is all planning needs; a bundle's declaration includes what its agent reads and its
// agent's input schema, as its replicates are dispatches of that agent. PlanRules, RouteRules, Planner, Router and
// Policy give the file's rules as the runtime's types.
package config
