package mcptool_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

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

// A call that fails in transport quotes the URL the go-sdk posted to: the agent's error, as the
// tool's, has the URL's secret query value masked.
func TestAgentErrorMasksTheURLsSecrets(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{JSONResponse: true})
	var down atomic.Bool
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() { // drop the connection: the POST fails in transport
			if c, _, err := w.(http.Hijacker).Hijack(); err == nil {
				c.Close()
			}
			return
		}
		h.ServeHTTP(w, r)
	}))
	defer hs.Close()
	const secret = "t0k3n-s3cret-value"
	c, err := mcptool.Connect(t.Context(), mcptool.Config{URL: hs.URL + "/mcp?token=" + secret, CallTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	tl, ok := c.Tool("echo")
	if !ok {
		t.Fatal("no echo tool")
	}
	down.Store(true)
	for name, call := range map[string]func() error{
		"Tool.Call": func() error { _, err := tl.Call(t.Context(), nil, nil); return err },
		"Agent":     func() error { _, err := mcptool.Agent(tl).Run(t.Context(), troupe.NewDispatch()); return err },
	} {
		err := call()
		if err == nil {
			t.Fatalf("%s: succeeded with the server down", name)
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("%s: error %q quotes the URL's token", name, err)
		}
	}
	down.Store(false)
	c.Close()
	for ss := range srv.Sessions() { // the client's goodbye may not have reached it
		ss.Close()
	}
}
