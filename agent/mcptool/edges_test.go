package mcptool_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/agent/mcptool"
)

// loudServer connects to an in-process server whose "loud" tool fails (isError) with a
// 100 KB message and whose "echo" tool answers its arguments.
func loudServer(t *testing.T, maxResult int64) *mcptool.Client {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "audit", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "loud"}, func(context.Context, *mcp.CallToolRequest, map[string]any) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("z", 100_000)}}}, nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in map[string]any) (*mcp.CallToolResult, any, error) {
		b, _ := json.Marshal(in)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil, nil
	})
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Wait() })
	return connect(t, mcptool.Config{Transport: ct, MaxResultBytes: maxResult})
}

// A result flagged isError is a result too, bound by max_result_bytes: its 100 KB text reached
// the caller whole (and through llmagent, a model).
func TestToolErrorOverMaxResultBytes(t *testing.T) {
	c := loudServer(t, 1000)
	_, err := tool(t, c, "loud").Call(t.Context(), nil, nil)
	if err == nil {
		t.Fatal("succeeded")
	}
	if n := len(err.Error()); n > 2000 {
		var big *mcptool.ResultTooLargeError
		t.Errorf("Call's error is %d bytes (ResultTooLargeError: %v), over max_result_bytes 1000", n, errors.As(err, &big))
	}
	_, err = mcptool.Agent(tool(t, c, "loud")).Run(t.Context(), troupe.NewDispatch())
	if n := len(err.Error()); n > 2000 {
		t.Errorf("Agent's error is %d bytes, over max_result_bytes 1000", n)
	}
}

// Arguments that are JSON but not an object (null) are refused, as [1] is; null was sent as {}.
func TestNullArgumentsRefused(t *testing.T) {
	c := loudServer(t, 0)
	out, err := tool(t, c, "echo").Call(t.Context(), nil, json.RawMessage(`null`))
	if err == nil || !strings.Contains(err.Error(), "not a JSON object") {
		t.Errorf("Call(null) = %s, %v; want arguments are not a JSON object", out, err)
	}
}

// Include naming a tool the server does not offer: the error lists what the server offers; it
// listed only the included tools that matched, as if they were all it offered.
func TestIncludeErrorListsWhatIsOffered(t *testing.T) {
	_, err := inMemory(t, "greet", "nosuch")
	if err == nil {
		t.Fatal("Connect accepted an Include naming no tool")
	}
	for _, name := range []string{"broken", "shout", "slow"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error %q: the offered tools it lists leave out %q, which the server offers", err, name)
		}
	}
}
