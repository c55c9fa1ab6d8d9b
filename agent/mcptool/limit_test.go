package mcptool_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/agent/mcptool"
)

type sizedIn struct {
	N int `json:"n" jsonschema:"how many bytes of text to return"`
}

// sizedServer serves, over streamable HTTP in this process, a tool that returns n bytes of text;
// jsonResponse makes its answers application/json bodies rather than SSE streams.
func sizedServer(t *testing.T, jsonResponse bool) *httptest.Server {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "sized", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "sized", Description: "returns n bytes"}, func(ctx context.Context, req *mcp.CallToolRequest, in sizedIn) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x", in.N)}}}, nil, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{JSONResponse: jsonResponse})
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close) // after the client's Close, registered later
	return hs
}

func TestMaxResultBytesOverHTTP(t *testing.T) {
	const limit = 1 << 20
	for _, jsonResponse := range []bool{false, true} {
		t.Run(fmt.Sprintf("json=%v", jsonResponse), func(t *testing.T) {
			hs := sizedServer(t, jsonResponse)
			c := connect(t, mcptool.Config{URL: hs.URL, HTTPClient: hs.Client(), MaxResultBytes: limit})
			sized := tool(t, c, "sized")
			args := func(n int) map[string]any { return map[string]any{"n": n} }
			run := func(n int) (*troupe.Result, error) {
				d := troupe.NewDispatch()
				d.UserContext = map[string]any{"arguments": args(n)}
				return mcptool.Agent(sized).Run(t.Context(), d)
			}

			// Under the bound: Call and Agent pass.
			if got := call(t, sized, `{"n":100000}`); len(got) != 100000+2 {
				t.Errorf("100 KB: Call returned %d bytes", len(got))
			}
			if res, err := run(100000); err != nil || len(res.AgentResult["text"].(string)) != 100000 {
				t.Errorf("100 KB: Agent = %v, %v", res, err)
			}

			// 2 MiB is read (under twice the bound) and refused with its size.
			_, err := sized.Call(t.Context(), nil, []byte(`{"n":2097152}`))
			var big *mcptool.ResultTooLargeError
			if !errors.As(err, &big) || big.Size != 2097152+2 || big.Limit != limit || big.Tool != "sized" {
				t.Fatalf("2 MiB: Call error = %#v (%v)", big, err)
			}
			for _, want := range []string{"2097154 bytes", "1048576 bytes"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("2 MiB: error %q does not say %q", err, want)
				}
			}
			_, err = run(2097152)
			var ae *troupe.AgentError
			if !errors.As(err, &ae) || ae.Code != troupe.CodeInvalidOutput || ae.Recoverable || !strings.Contains(ae.Message, "1048576 bytes") {
				t.Errorf("2 MiB: Agent error = %v", err)
			}

			// 4 MiB is cut off as it is read: the response is never held.
			_, err = sized.Call(t.Context(), nil, []byte(`{"n":4194304}`))
			big = nil
			if !errors.As(err, &big) || big.Size != 0 || big.Read <= 2*limit || big.Read > 3*limit || big.Tool != "sized" {
				t.Fatalf("4 MiB: Call error = %#v (%v)", big, err)
			}
			if !strings.Contains(err.Error(), "cut off") || !strings.Contains(err.Error(), "1048576 bytes") {
				t.Errorf("4 MiB: error %q", err)
			}
			_, err = run(4194304)
			ae = nil
			if !errors.As(err, &ae) || ae.Code != troupe.CodeInvalidOutput || ae.Recoverable {
				t.Errorf("4 MiB: Agent error = %v", err)
			}

			// The client goes on working.
			if got := call(t, sized, `{"n":3}`); got != `"xxx"` {
				t.Errorf("after the cut: %s", got)
			}
		})
	}
}

func TestNegativeMaxResultBytes(t *testing.T) {
	_, err := mcptool.Connect(t.Context(), mcptool.Config{URL: "http://127.0.0.1:1/mcp", MaxResultBytes: -1})
	if err == nil || !strings.Contains(err.Error(), "max_result_bytes") {
		t.Errorf("Connect = %v", err)
	}
}
