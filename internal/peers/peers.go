// Package peers finds the real peers troupe's tests run against — reference MCP servers and an
// OpenAI-compatible server from the npm registry — installed by .ci/run into .ci/peers.
//
// A test asks for a peer's executable with Bin, or runs a peer that serves on a port (mock-llm,
// the everything server over streamable HTTP) with Start. When the peer is not installed the
// test is skipped, unless TROUPE_REQUIRE_PEERS is set (as .ci/run sets it): then it fails, so
// CI can never pass by skipping. To install the peers by hand: npm ci --prefix .ci/peers.
package peers

import (
	"os"
	"path/filepath"
	"testing"
)

// Bin returns the path of the peer executable name (e.g. "mcp-server-everything"), from
// $TROUPE_PEERS or else the module's .ci/peers/node_modules/.bin.
func Bin(t testing.TB, name string) string {
	t.Helper()
	dir := os.Getenv("TROUPE_PEERS")
	if dir == "" {
		dir = defaultDir()
	}
	p := filepath.Join(dir, name)
	if _, err := os.Stat(p); err != nil {
		msg := "peer " + name + " is not installed (run: npm ci --prefix .ci/peers): " + err.Error()
		if os.Getenv("TROUPE_REQUIRE_PEERS") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return p
}

// defaultDir walks up from the working directory (a test runs in its package's directory) to
// the module root.
func defaultDir() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, ".ci", "peers", "node_modules", ".bin")
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}
