package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// What building an http agent finds wrong is said in the file's words, at the field at fault,
// every problem (TestBuildErrorsInTheFilesWords): a variable set but empty, a header value
// net/http cannot send and a URL with no host too. They reached the adapter, whose refusal was
// at the agent, in its Go field names (Config.BearerTokenEnv), and its first problem only.
func TestHTTPBuildErrorsAtTheirFields(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("TROUPE_TEST_EMPTY", "")
	cfg := `version: 1
agents:
  token: {kind: http, http: {url: "http://127.0.0.1:1/", bearer_token_env: TROUPE_TEST_EMPTY}}
  header: {kind: http, http: {url: "http://127.0.0.1:1/", headers: {"X-Ok": "a\nb"}}}
  nohost: {kind: http, http: {url: "http:///x"}}
`
	path := filepath.Join(dir, "troupe.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := invoke(t, "validate", dir)
	if code != exitUsage {
		t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitUsage, stderr)
	}
	for _, want := range []string{
		path + ":3:", "agents.token.http.bearer_token_env:",
		path + ":4:", "agents.header.http.headers",
		path + ":5:", "agents.nohost.http.url:",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q", want)
		}
	}
	if strings.Contains(stderr, "Config.") {
		t.Errorf("stderr names the adapter's Go fields, not the file's:\n%s", stderr)
	}
}

// An MCP server that never answers initialize is given up on after its connect_timeout, and the
// error names that bound and how long it was, so a user can tell a slow server (raise it) from
// a hung one, as every other bound the file sets is named when it cuts something off. It said
// only "context deadline exceeded".
func TestMCPConnectTimeoutNamesTheBound(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "silent.sh"), []byte("#!/bin/sh\necho 'not JSON-RPC'\nexec sleep 30\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := `version: 1
agents:
  a: {kind: mcp, mcp: {server: s, tool: add}}
mcp_servers:
  s: {command: ./silent.sh, connect_timeout: 300ms}
`
	if err := os.WriteFile(filepath.Join(dir, "troupe.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := invoke(t, "validate", dir)
	if code != exitUsage {
		t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitUsage, stderr)
	}
	if !strings.Contains(stderr, "connect_timeout") || !strings.Contains(stderr, "300ms") {
		t.Errorf("the error does not name the bound that expired (connect_timeout, 300ms):\n%s", stderr)
	}
}

// troupe run and troupe plan refuse a query that is not UTF-8 (it would reach the agents with
// U+FFFD in place of the byte); troupe chat says so of a line that is not, and skips it. It
// passed the line to the tutor, saying nothing.
func TestChatSkipsALineThatIsNotUTF8(t *testing.T) {
	var stdout, stderr strings.Builder
	code := chat(t.Context(), []string{"../../examples/tutor"}, strings.NewReader("teach me fr\xe9ctions\n"), &stdout, &stderr)
	if out := stdout.String() + stderr.String(); !strings.Contains(out, "UTF-8") {
		t.Errorf("exit %d; nothing says the line is not UTF-8:\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
}
