package config_test

import (
	"strings"
	"testing"

	"github.com/troupehq/troupe/config"
)

// An exec agent's env, and an MCP server's, map variable names to values, and an http agent's
// headers and headers_from_env are keyed by header name. A name no environment can hold ("A=B"
// set A to "B=yyyy", beside a key "A" in no set order; "" was refused only when the agent was
// built, at the agent, in the adapter's words) or a header name net/http cannot send is refused
// when the file is loaded, at its key, saying what a name may hold.
func TestEnvAndHeaderNamesAreChecked(t *testing.T) {
	for _, tt := range []struct{ name, src, field string }{
		{"exec =", "version: 1\nagents:\n  a:\n    kind: exec\n    exec: {command: [sh], env: {\"A=B\": yyyy}}\n", "t.yaml:5:"},
		{"exec empty", "version: 1\nagents:\n  a:\n    kind: exec\n    exec: {command: [sh], env: {\"\": yyyy}}\n", "t.yaml:5:"},
		{"mcp server =", "version: 1\nagents:\n  a: {kind: mcp, mcp: {server: s, tool: t}}\nmcp_servers:\n  s: {command: srv, env: {\"A=B\": HOME}}\n", "t.yaml:5:"},
		{"header", "version: 1\nagents:\n  h:\n    kind: http\n    http: {url: \"http://x\", headers: {\"X Bad\": v}}\n", "t.yaml:5:"},
		{"header from env", "version: 1\nagents:\n  h:\n    kind: http\n    http: {url: \"http://x\", headers_from_env: {\"X-Key:\": K}}\n", "t.yaml:5:"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := config.Parse("t.yaml", []byte(tt.src))
			if err == nil {
				t.Fatalf("loaded without error; want an error at %s… at the key", tt.field)
			}
			want := "is not a valid environment variable name"
			if strings.HasPrefix(tt.name, "header") {
				want = "is not a valid header name"
			}
			if !strings.Contains(err.Error(), tt.field) || !strings.Contains(err.Error(), want) {
				t.Errorf("error %q is not at the key, or does not say %q", err, want)
			}
		})
	}
}
