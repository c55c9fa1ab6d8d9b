package mcptool_test

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/agent/mcptool"
)

func Example() {
	ctx := context.Background()
	// An MCP server in this process; Config.Command or Config.URL reach real ones, e.g.
	// mcptool.Config{Command: []string{"mcp-server-filesystem", "/srv/docs"}}.
	srv := mcp.NewServer(&mcp.Implementation{Name: "math", Version: "1"}, nil)
	type pair struct{ A, B int }
	mcp.AddTool(srv, &mcp.Tool{Name: "add", Description: "adds A and B"},
		func(ctx context.Context, _ *mcp.CallToolRequest, in pair) (*mcp.CallToolResult, map[string]int, error) {
			return nil, map[string]int{"sum": in.A + in.B}, nil
		})
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		panic(err)
	}
	defer ss.Wait()

	client, err := mcptool.Connect(ctx, mcptool.Config{Transport: ct})
	if err != nil {
		panic(err)
	}
	defer client.Close()
	for _, t := range client.Tools() { // hand these to llmagent.Config.Tools
		fmt.Println(t.Info().Name, "-", t.Info().Description)
	}

	// One tool used directly as an agent.
	add, _ := client.Tool("add")
	d := troupe.NewDispatch()
	d.UserContext = map[string]any{"arguments": map[string]any{"A": 2, "B": 3}}
	res, err := mcptool.Agent(add).Run(ctx, d)
	if err != nil {
		panic(err)
	}
	fmt.Println(res.AgentResult["sum"])
	// Output:
	// add - adds A and B
	// 5
}
