package mcptool_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/agent/mcptool"
	"github.com/troupehq/troupe/internal/peers"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func connect(t *testing.T, cfg mcptool.Config) *mcptool.Client {
	t.Helper()
	c, err := mcptool.Connect(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	})
	return c
}

func tool(t *testing.T, c *mcptool.Client, name string) *mcptool.Tool {
	t.Helper()
	tl, ok := c.Tool(name)
	if !ok {
		var names []string
		for _, x := range c.Tools() {
			names = append(names, x.Info().Name)
		}
		t.Fatalf("no tool %q among %v", name, names)
	}
	return tl
}

func call(t *testing.T, tl troupe.Tool, args string) string {
	t.Helper()
	out, err := tl.Call(t.Context(), nil, json.RawMessage(args))
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

type greetIn struct {
	Name string `json:"name" jsonschema:"who to greet"`
}
type greetOut struct {
	Greeting string `json:"greeting"`
	Length   int    `json:"length"`
}

// inMemory connects to an MCP server in this process: greet (structured), shout (text) and
// broken (a tool error).
func inMemory(t *testing.T, include ...string) (*mcptool.Client, error) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "test-server", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "greet", Description: "greets someone"}, func(ctx context.Context, req *mcp.CallToolRequest, in greetIn) (*mcp.CallToolResult, greetOut, error) {
		g := "hello, " + in.Name
		return nil, greetOut{Greeting: g, Length: len(g)}, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "shout", Description: "upper-cases text"}, func(ctx context.Context, req *mcp.CallToolRequest, in greetIn) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.ToUpper(in.Name)}, &mcp.TextContent{Text: "!"}}}, nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "broken"}, func(ctx context.Context, req *mcp.CallToolRequest, in map[string]any) (*mcp.CallToolResult, any, error) {
		return nil, nil, errors.New("disk on fire")
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "slow"}, func(ctx context.Context, req *mcp.CallToolRequest, in map[string]any) (*mcp.CallToolResult, any, error) {
		<-ctx.Done() // until the client gives up on the call
		return nil, nil, ctx.Err()
	})
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Wait() })
	return mcptool.Connect(t.Context(), mcptool.Config{Transport: ct, Include: include, CallTimeout: callTimeout})
}

// callTimeout bounds inMemory's tool calls: the slow tool outlasts it.
const callTimeout = 200 * time.Millisecond

func TestInMemoryServer(t *testing.T) {
	c, err := inMemory(t)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var names []string
	for _, tl := range c.Tools() {
		names = append(names, tl.Info().Name)
	}
	if diff := cmp.Diff([]string{"broken", "greet", "shout", "slow"}, names); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	greet := tool(t, c, "greet")
	var schema map[string]any
	if err := json.Unmarshal(greet.Info().InputSchema, &schema); err != nil || schema["properties"].(map[string]any)["name"] == nil {
		t.Errorf("input schema = %s", greet.Info().InputSchema)
	}
	if got := call(t, greet, `{"name":"Ada"}`); got != `{"greeting":"hello, Ada","length":10}` {
		t.Errorf("greet = %s", got)
	}
	if got := call(t, tool(t, c, "shout"), `{"name":"ada"}`); got != `"ADA\n!"` {
		t.Errorf("shout = %s", got)
	}
	_, err = tool(t, c, "broken").Call(t.Context(), nil, nil)
	var te *mcptool.ToolError
	if !errors.As(err, &te) || !strings.Contains(te.Message, "disk on fire") {
		t.Errorf("broken: %v", err)
	}
	if _, err := greet.Call(t.Context(), nil, json.RawMessage(`[1]`)); err == nil || !strings.Contains(err.Error(), "not a JSON object") {
		t.Errorf("bad arguments: %v", err)
	}
}

func TestPrefix(t *testing.T) {
	c := connect(t, mcptool.Config{Command: []string{peers.Bin(t, "mcp-server-everything"), "stdio"}, StopTimeout: 200 * time.Millisecond,
		Include: []string{"echo"}, Prefix: "ev_"})
	tools := c.Tools()
	if len(tools) != 1 || tools[0].Info().Name != "ev_echo" {
		t.Fatalf("tools = %v", tools)
	}
	if got := call(t, tools[0], `{"message":"x"}`); got != `"Echo: x"` {
		t.Errorf("ev_echo = %s", got)
	}
}

func TestIncludeFilters(t *testing.T) {
	c, err := inMemory(t, "shout")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if n := len(c.Tools()); n != 1 {
		t.Errorf("%d tools, want 1", n)
	}
	if _, err := inMemory(t, "nosuch"); err == nil || !strings.Contains(err.Error(), `no tool named "nosuch"`) {
		t.Errorf("err = %v", err)
	}
}

func TestAgent(t *testing.T) {
	c, err := inMemory(t)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tests := []struct {
		tool    string
		parsed  map[string]any
		user    map[string]any
		want    map[string]any
		summary string
		code    string
	}{
		{tool: "greet", user: map[string]any{"arguments": map[string]any{"name": "Bo"}}, parsed: map[string]any{"name": "ignored"},
			want: map[string]any{"greeting": "hello, Bo", "length": 9.0}, summary: `{"greeting":"hello, Bo","length":9}`},
		{tool: "shout", parsed: map[string]any{"name": "hi"}, want: map[string]any{"text": "HI\n!"}, summary: "HI\n!"},
		{tool: "broken", parsed: map[string]any{}, code: troupe.CodeAgentError},
		{tool: "slow", parsed: map[string]any{}, code: troupe.CodeTimeout},
		{tool: "greet", user: map[string]any{"arguments": "Bo"}, code: troupe.CodeInvalidInput},
	}
	for _, tc := range tests {
		t.Run(tc.tool, func(t *testing.T) {
			d := troupe.NewDispatch()
			d.ParsedQuery, d.UserContext = tc.parsed, tc.user
			res, err := mcptool.Agent(tool(t, c, tc.tool)).Run(t.Context(), d)
			if tc.code != "" {
				// A timeout may pass on a retry; a tool's own error or bad arguments would not.
				var ae *troupe.AgentError
				if timeout := tc.code == troupe.CodeTimeout; !errors.As(err, &ae) || ae.Code != tc.code || ae.Recoverable != timeout || timeout != errors.Is(err, troupe.ErrTimeout) {
					t.Errorf("err = %v, want code %s, recoverable %v", err, tc.code, timeout)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, res.AgentResult); diff != "" {
				t.Errorf("agent_result (-want +got):\n%s", diff)
			}
			if res.Summary() != tc.summary {
				t.Errorf("summary = %q", res.Summary())
			}
		})
	}
}

func TestConfigErrors(t *testing.T) {
	for _, cfg := range []mcptool.Config{{}, {Command: []string{"x"}, URL: "http://x"}, {URL: "ftp://x"}} {
		if _, err := mcptool.Connect(t.Context(), cfg); err == nil || !strings.HasPrefix(err.Error(), "mcptool: config:") {
			t.Errorf("%+v: err = %v", cfg, err)
		}
	}
	_, err := mcptool.Connect(t.Context(), mcptool.Config{Command: []string{filepath.Join(t.TempDir(), "no-such-server")}})
	if err == nil || !strings.Contains(err.Error(), "no-such-server") {
		t.Errorf("missing command: %v", err)
	}
}

func TestEverythingOverStdio(t *testing.T) {
	c := connect(t, mcptool.Config{Command: []string{peers.Bin(t, "mcp-server-everything"), "stdio"}, StopTimeout: 200 * time.Millisecond})
	echo := tool(t, c, "echo")
	if echo.Info().Description == "" || !strings.Contains(string(echo.Info().InputSchema), "message") {
		t.Errorf("echo info = %+v", echo.Info())
	}
	if got := call(t, echo, `{"message":"hi there"}`); got != `"Echo: hi there"` {
		t.Errorf("echo = %s", got)
	}
	if got := call(t, tool(t, c, "get-sum"), `{"a":2,"b":40}`); !strings.Contains(got, "is 42") {
		t.Errorf("get-sum = %s", got)
	}
	// A schema violation comes back as the tool's error, for the model to correct.
	_, err := tool(t, c, "get-sum").Call(t.Context(), nil, json.RawMessage(`{"a":"two"}`))
	if err == nil {
		t.Error("get-sum with a string argument succeeded")
	}
	d := troupe.NewDispatch()
	d.UserContext = map[string]any{"arguments": map[string]any{"message": "as an agent"}}
	res, err := mcptool.Agent(echo).Run(t.Context(), d)
	if err != nil || res.AgentResult["text"] != "Echo: as an agent" {
		t.Errorf("agent: %v, %v", res, err)
	}
}

func TestEverythingOverStreamableHTTP(t *testing.T) {
	addr := peers.Start(t, "mcp-server-everything", []string{"streamableHttp"}, func(line string) bool {
		return strings.Contains(line, "listening on port")
	})
	c, err := mcptool.Connect(t.Context(), mcptool.Config{URL: "http://" + addr + "/mcp"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := call(t, tool(t, c, "echo"), `{"message":"over http"}`); got != `"Echo: over http"` {
		t.Errorf("echo = %s", got)
	}
}

func TestFilesystemServer(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("line one\nline two\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	c := connect(t, mcptool.Config{Command: []string{peers.Bin(t, "mcp-server-filesystem"), dir},
		Include: []string{"list_directory", "read_text_file"}})
	arg := func(p string) string { b, _ := json.Marshal(map[string]string{"path": p}); return string(b) }

	var listing struct{ Content string }
	if err := json.Unmarshal([]byte(call(t, tool(t, c, "list_directory"), arg(dir))), &listing); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff("[FILE] notes.txt\n[DIR] sub", listing.Content); diff != "" {
		t.Errorf("listing (-want +got):\n%s", diff)
	}
	var file struct{ Content string }
	if err := json.Unmarshal([]byte(call(t, tool(t, c, "read_text_file"), arg(filepath.Join(dir, "notes.txt")))), &file); err != nil {
		t.Fatal(err)
	}
	if file.Content != "line one\nline two\n" {
		t.Errorf("read = %q", file.Content)
	}
	// Outside the allowed directory the server refuses; the refusal is a tool error.
	_, err := tool(t, c, "read_text_file").Call(t.Context(), nil, json.RawMessage(arg("/etc/hostname")))
	var te *mcptool.ToolError
	if !errors.As(err, &te) {
		t.Errorf("read outside the root: %v", err)
	}
}

// Connect's context bounds connecting only: the session outlives it.
func TestSessionOutlivesConnectContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	c, err := mcptool.Connect(ctx, mcptool.Config{Command: []string{peers.Bin(t, "mcp-server-everything"), "stdio"}, StopTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cancel()
	if got := call(t, tool(t, c, "echo"), `{"message":"still here"}`); got != `"Echo: still here"` {
		t.Errorf("echo = %s", got)
	}
}

// A stdio server is often a wrapper — npx, a shell script — whose child does the work. When
// the server is stopped (here: it never answers, and Connect gives up), what the wrapper
// started must go with it, as execagent's process group does.
func TestStoppingAStdioServerStopsWhatItStarted(t *testing.T) {
	dir := t.TempDir()
	fifo, pidfile := filepath.Join(dir, "held"), filepath.Join(dir, "pid")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // whatever the outcome, leave nothing behind
		if b, err := os.ReadFile(pidfile); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	held := make(chan struct{}) // closed when the child has the fifo open
	gone := make(chan struct{}) // closed when no one holds it any more: the child is dead
	go func() {
		defer close(gone)
		f, err := os.Open(fifo) // blocks until the child opens its end
		close(held)
		if err != nil {
			return
		}
		defer f.Close()
		_, _ = io.Copy(io.Discard, f)
	}()
	go func() {
		<-held
		cancel() // the child runs: now give up on the server
	}()
	// The "server" reads nothing and answers nothing; its child holds the fifo.
	_, err := mcptool.Connect(ctx, mcptool.Config{
		Command:     []string{"sh", "-c", `sleep 1000 >"$1" & echo $! >"$2"; wait`, "sh", fifo, pidfile},
		StopTimeout: 50 * time.Millisecond,
	})
	if err == nil {
		t.Fatal("Connect to a server that never answers succeeded")
	}
	select {
	case <-gone:
	case <-time.After(10 * time.Second):
		t.Fatal("the server's child still runs after Connect gave up and stopped the server")
	}
}
