package config_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/troupehq/troupe/agent/mcptool"
	"github.com/troupehq/troupe/config"
)

const mcpFile = `version: 1
agents:
  writer:
    kind: llm
    llm: {model: m, tools: [lookup, "mcp:everything/echo"]}
  lookup:
    kind: mcp
    mcp: {server: everything, tool: get-sum}
mcp_servers:
  everything:
    command: mcp-server-everything
    env: {TOKEN: MY_TOKEN}
    include: [echo, get-sum]
    prefix: ev_
    call_timeout: 5s
    max_result_bytes: 1048576
`

func TestMCPServers(t *testing.T) {
	t.Parallel()
	f, err := config.Parse("t.yaml", []byte(mcpFile))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"lookup"}, f.Agents["writer"].Children()); diff != "" {
		t.Errorf("an llm agent's children are its agent tools only (-want +got):\n%s", diff)
	}
	want := &config.MCPServer{Command: "mcp-server-everything", Env: map[string]string{"TOKEN": "MY_TOKEN"}, Include: []string{"echo", "get-sum"}, Prefix: "ev_", CallTimeout: config.Duration(5e9), MaxResultBytes: 1 << 20}
	if diff := cmp.Diff(want, f.MCPServers["everything"]); diff != "" {
		t.Errorf("server (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(&config.MCPSpec{Server: "everything", Tool: "get-sum"}, f.Agents["lookup"].MCP); diff != "" {
		t.Errorf("mcp agent (-want +got):\n%s", diff)
	}
}

func TestMCPTool(t *testing.T) {
	t.Parallel()
	tests := []struct {
		ref, server, tool string
		ok                bool
	}{
		{"mcp:fs", "fs", "", true},
		{"mcp:fs/read_file", "fs", "read_file", true},
		{"mcp:fs/a/b", "fs", "a/b", true},
		{"fetch", "", "", false},
	}
	for _, tt := range tests {
		s, tool, ok := config.MCPTool(tt.ref)
		if s != tt.server || tool != tt.tool || ok != tt.ok {
			t.Errorf("MCPTool(%q) = %q, %q, %v; want %q, %q, %v", tt.ref, s, tool, ok, tt.server, tt.tool, tt.ok)
		}
	}
}

func TestMCPErrors(t *testing.T) {
	t.Parallel()
	const head = "version: 1\nagents:\n"
	tests := []struct {
		name string
		src  string
		want []string
	}{
		{"unknown server in tools", head + "  w: {kind: llm, llm: {model: m, tools: [\"mcp:everthing\"]}}\nmcp_servers:\n  everything: {command: x}\n",
			[]string{`t.yaml:3:42: agents.w.llm.tools[0]: unknown MCP server "everthing" (did you mean "everything"?)`}},
		{"no servers", head + "  s: {kind: mcp, mcp: {server: fs, tool: read}}\n",
			[]string{`t.yaml:3:32: agents.s.mcp.server: unknown MCP server "fs": declare it under mcp_servers`}},
		{"command and url", head + "  s: {kind: mcp, mcp: {server: fs, tool: read}}\nmcp_servers:\n  fs: {command: x, url: http://h/mcp}\n",
			[]string{`t.yaml:5:7: mcp_servers.fs: an MCP server has a command (stdio) or a url (streamable HTTP): give exactly one`}},
		{"neither", head + "  s: {kind: mcp, mcp: {server: fs, tool: read}}\nmcp_servers:\n  fs: {include: [read]}\n",
			[]string{`t.yaml:5:7: mcp_servers.fs: an MCP server has a command (stdio) or a url (streamable HTTP): give exactly one`}},
		{"args at a url", head + "  s: {kind: mcp, mcp: {server: fs, tool: read}}\nmcp_servers:\n  fs: {url: http://h/mcp, args: [x]}\n",
			[]string{`t.yaml:5:7: mcp_servers.fs: args, env and dir are for a server run as a command, not one at a url`}},
		{"mcp without tool", head + "  s: {kind: mcp, mcp: {server: fs}}\nmcp_servers:\n  fs: {command: x}\n",
			[]string{`t.yaml:3:23: agents.s.mcp: missing required field "tool"`}},
		{"mcp block on another kind", head + "  s: {kind: builtin, mcp: {server: fs, tool: t}}\nmcp_servers:\n  fs: {command: x}\n",
			[]string{`t.yaml:3:22: agents.s.mcp: field "mcp" is not allowed in an agent of kind builtin: an agent has the block of its own kind only`}},
		{"bad tool reference", head + "  w: {kind: llm, llm: {model: m, tools: [\"mcp:\"]}}\n",
			[]string{`t.yaml:3:42: agents.w.llm.tools[0]: "mcp:" is not an agent's name, mcp:SERVER or mcp:SERVER/TOOL`}},
		{"env value is a name", head + "  s: {kind: mcp, mcp: {server: fs, tool: read}}\nmcp_servers:\n  fs: {command: x, env: {T: \"secret value\"}}\n",
			[]string{`t.yaml:5:29: mcp_servers.fs.env.T: "secret value" is not an environment variable's name: a letter or _, then letters, digits and _`}},
		{"max_result_bytes negative", head + "  s: {kind: mcp, mcp: {server: fs, tool: read}}\nmcp_servers:\n  fs: {url: http://h/mcp, max_result_bytes: -1}\n",
			[]string{`t.yaml:5:45: mcp_servers.fs.max_result_bytes: -1 is too small: want 0 or more`}},
		{"max_result_bytes too large", head + "  s: {kind: mcp, mcp: {server: fs, tool: read}}\nmcp_servers:\n  fs: {url: http://h/mcp, max_result_bytes: 2147483648}\n",
			[]string{`t.yaml:5:45: mcp_servers.fs.max_result_bytes: 2147483648 is too large: want at most 1073741824`}},
		{"max_result_bytes with a unit", head + "  s: {kind: mcp, mcp: {server: fs, tool: read}}\nmcp_servers:\n  fs: {url: http://h/mcp, max_result_bytes: 16MiB}\n",
			[]string{`t.yaml:5:45: mcp_servers.fs.max_result_bytes: got string, want integer`}},
		{"max_result_bytes past a stdio message", head + "  s: {kind: mcp, mcp: {server: fs, tool: read}}\nmcp_servers:\n  fs:\n    command: x\n    max_result_bytes: 33554432\n",
			[]string{`t.yaml:7:23: mcp_servers.fs.max_result_bytes: 33554432 is more than a server run as a command can send: the MCP SDK reads each of its messages as one line of at most 16777216 bytes (16 MiB), so a larger result fails before this bound is reached; lower max_result_bytes to 16777216 or less, or reach the server at a url`}},
		{"timeout longer than call_timeout", head + "  s:\n    kind: mcp\n    timeout: 5m\n    mcp: {server: fs, tool: read}\nmcp_servers:\n  fs:\n    command: x\n    call_timeout: 30s\n",
			[]string{`t.yaml:5:14: agents.s.timeout: timeout 5m is longer than mcp_servers.fs.call_timeout, 30s (line 10), which cuts off every call to the server first: raise call_timeout to 5m or more, or shorten timeout`}},
		{"timeout longer than the default call_timeout", head + "  s:\n    kind: mcp\n    timeout: 90s\n    mcp: {server: fs, tool: read}\nmcp_servers:\n  fs: {command: x}\n",
			[]string{`t.yaml:5:14: agents.s.timeout: timeout 1m30s is longer than mcp_servers.fs.call_timeout, 1m when absent as here, which cuts off every call to the server first: set call_timeout to 1m30s or more on the server, or shorten timeout`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, parseErrs(t, tt.src)); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

// An mcp agent's dispatch is one call to its server, which the server's call_timeout (absent:
// mcptool.DefaultCallTimeout) cuts off: a timeout of the agent's up to it is accepted, a longer
// one refused (TestMCPErrors), whatever the budget's default_timeout, which agents without
// their own take, and whatever the bound of an llm agent calling the server's tools, each call
// of which the server bounds.
func TestMCPTimeoutWithinCallTimeout(t *testing.T) {
	t.Parallel()
	const server = "mcp_servers:\n  fs: {command: x}\n  slow: {command: x, call_timeout: 10m}\n"
	ok := map[string]string{
		"the default":           fmt.Sprintf("  s: {kind: mcp, timeout: %s, mcp: {server: fs, tool: t}}\n", mcptool.DefaultCallTimeout),
		"the server's":          "  s: {kind: mcp, timeout: 10m, mcp: {server: slow, tool: t}}\n",
		"budget default":        "  s: {kind: mcp, mcp: {server: fs, tool: t}}\nbudget: {default_timeout: 1h}\n",
		"llm agent using tools": "  w: {kind: llm, timeout: 1h, llm: {model: m, tools: [\"mcp:fs\"]}}\n",
	}
	for name, agent := range ok {
		if errs := parseErrs(t, "version: 1\nagents:\n"+agent+server); errs != nil {
			t.Errorf("%s: %v", name, errs)
		}
	}
	over := fmt.Sprintf("version: 1\nagents:\n  s: {kind: mcp, timeout: %s, mcp: {server: fs, tool: t}}\n%s", mcptool.DefaultCallTimeout+time.Second, server)
	if errs := parseErrs(t, over); len(errs) != 1 {
		t.Errorf("a timeout a second longer than mcptool.DefaultCallTimeout: %v, want one problem", errs)
	}
}

// A server's max_result_bytes is a result's bound, 0 or absent its default. A server run as a
// command sends each message as one line the MCP SDK reads up to mcp.DefaultMaxLineLength, so
// a bound past that is refused there (TestMCPErrors); at a url a bound up to 1 GiB is accepted.
func TestMCPMaxResultBytes(t *testing.T) {
	t.Parallel()
	const agent = "version: 1\nagents:\n  s: {kind: mcp, mcp: {server: fs, tool: t}}\nmcp_servers:\n"
	for _, tt := range []struct {
		server string
		want   int64
	}{
		{"  fs: {command: x}\n", 0},
		{"  fs: {command: x, max_result_bytes: 0}\n", 0},
		{fmt.Sprintf("  fs: {command: x, max_result_bytes: %d}\n", mcp.DefaultMaxLineLength), mcp.DefaultMaxLineLength},
		{"  fs: {url: http://h/mcp, max_result_bytes: 1073741824}\n", 1 << 30},
	} {
		f, err := config.Parse("t.yaml", []byte(agent+tt.server))
		if err != nil {
			t.Errorf("%s: %v", tt.server, err)
			continue
		}
		if got := f.MCPServers["fs"].MaxResultBytes; got != tt.want {
			t.Errorf("%s: max_result_bytes %d, want %d", tt.server, got, tt.want)
		}
	}
	over := fmt.Sprintf("%s  fs: {command: x, max_result_bytes: %d}\n", agent, mcp.DefaultMaxLineLength+1)
	if errs := parseErrs(t, over); len(errs) != 1 {
		t.Errorf("a command's max_result_bytes one past mcp.DefaultMaxLineLength: %v, want one problem", errs)
	}
}

// An llm agent's tools are agents of the file and MCP tools; MCPTool tells them apart.
func ExampleMCPTool() {
	for _, ref := range []string{"fetch", "mcp:files", "mcp:files/read_file"} {
		server, tool, ok := config.MCPTool(ref)
		fmt.Printf("%s: server %q tool %q mcp %v\n", ref, server, tool, ok)
	}
	// Output:
	// fetch: server "" tool "" mcp false
	// mcp:files: server "files" tool "" mcp true
	// mcp:files/read_file: server "files" tool "read_file" mcp true
}
