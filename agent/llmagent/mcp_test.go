package llmagent_test

import (
	"strings"
	"testing"
	"time"

	"github.com/troupehq/troupe/agent/llmagent"
	"github.com/troupehq/troupe/agent/mcptool"
	"github.com/troupehq/troupe/internal/peers"
)

// The tools of a real MCP server (the reference "everything" server over stdio) offered to an
// LLM agent: the model sees their names and schemas, calls two, and gets their answers back.
func TestMCPToolsOffered(t *testing.T) {
	c, err := mcptool.Connect(t.Context(), mcptool.Config{Command: []string{peers.Bin(t, "mcp-server-everything"), "stdio"},
		Include: []string{"echo", "get-sum"}, StopTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	srv := newCompletionServer(t,
		reply{toolCalls: []wireToolCall{{"c1", "echo", `{"message":"ping"}`}, {"c2", "get-sum", `{"a":19,"b":23}`}}, usage: [2]int{10, 10}},
		reply{content: "done", usage: [2]int{10, 10}},
	)
	a := newAgent(t, llmagent.Config{BaseURL: srv.URL(), Tools: c.Tools()})
	if _, err := a.Run(t.Context(), dispatch("use the tools", nil)); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	var offered []string
	for _, tl := range reqs[0].Body["tools"].([]any) {
		fn := tl.(map[string]any)["function"].(map[string]any)
		offered = append(offered, fn["name"].(string))
		if fn["parameters"].(map[string]any)["properties"] == nil {
			t.Errorf("%s offered without its input schema: %v", fn["name"], fn)
		}
	}
	if strings.Join(offered, ",") != "echo,get-sum" {
		t.Errorf("offered %v", offered)
	}
	var answers []string
	for _, m := range messages(reqs[1]) {
		if m["role"] == "tool" {
			answers = append(answers, m["content"].(string))
		}
	}
	if len(answers) != 2 || answers[0] != `"Echo: ping"` || !strings.Contains(answers[1], "is 42") {
		t.Errorf("tool answers = %q", answers)
	}
}
