package mcptool_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/agent/mcptool"
	"github.com/troupehq/troupe/internal/peers"
)

// A stdio server that dies before it answers — a missing directory, a bad token, the OOM
// killer — fails Connect with an error that says the command, how it ended and what it last
// wrote on stderr (its last lines, at most 4 KiB, without the values of Config.Env), not a
// bare "EOF".
func TestServerStartupFailureSaysWhy(t *testing.T) {
	const token = "tok-5f2a9c1e7b"
	for _, tc := range []struct {
		name   string
		script string
		env    []string
		want   []string
		never  []string
	}{
		{name: "exits with a message",
			script: "echo 'Error: None of the specified directories are accessible' >&2; exit 1",
			want:   []string{"mcptool: connect to command sh -c", "; the server exited with status 1", "; stderr: Error: None of the specified directories are accessible"}},
		{name: "killed by a signal",
			script: "echo 'out of memory' >&2; kill -9 $$",
			want:   []string{"; the server was killed by signal 9 (killed)", "; stderr: out of memory"}},
		{name: "prints its token",
			script: `echo "refused the token $TOKEN" >&2; exit 1`, env: []string{"TOKEN=" + token},
			want: []string{"; stderr: refused the token [redacted]"}, never: []string{token}},
		{name: "says a lot",
			script: `i=0; while [ $i -lt 2000 ]; do echo "noise $i of 2000"; i=$((i+1)); done >&2; echo 'the last words' >&2; exit 2`,
			want:   []string{"; the server exited with status 2", "; stderr: …noise ", "the last words"}, never: []string{"noise 0 of 2000"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := mcptool.Connect(t.Context(), mcptool.Config{Command: []string{"sh", "-c", tc.script}, Env: tc.env,
				StopTimeout: 200 * time.Millisecond})
			if err == nil {
				t.Fatal("connected")
			}
			msg := err.Error()
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not say %q", msg, w)
				}
			}
			for _, n := range tc.never {
				if strings.Contains(msg, n) {
					t.Errorf("error %q says %q", msg, n)
				}
			}
			if _, quoted, _ := strings.Cut(msg, "; stderr: "); len(quoted) > 4<<10+len("…") {
				t.Errorf("the error quotes %d bytes of stderr, over its bound of 4 KiB", len(quoted))
			}
		})
	}
}

// The reference filesystem server, given a directory that does not exist, says so on stderr
// and exits 1: Connect's error says both.
func TestFilesystemServerWithoutItsDirectory(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	_, err := mcptool.Connect(t.Context(), mcptool.Config{Command: []string{peers.Bin(t, "mcp-server-filesystem"), missing},
		StopTimeout: 200 * time.Millisecond})
	if err == nil {
		t.Fatal("connected")
	}
	for _, w := range []string{"mcp-server-filesystem", "; the server exited with status 1", "; stderr: ", "accessible"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
}

// A stdio server that dies during a call fails it with an error that names the command, says
// how the process ended and what it last wrote on stderr.
func TestServerDyingMidCallSaysWhy(t *testing.T) {
	for _, tc := range []struct {
		tool string
		want []string
	}{
		{"crash", []string{`calling "tools/call"`, "; command python3 ", " exited with status 3", "; stderr: flaky: the charger caught fire"}},
		{"killed", []string{`calling "tools/call"`, "; command python3 ", " was killed by signal 9 (killed)"}},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			c := flaky(t)
			_, err := tool(t, c, tc.tool).Call(t.Context(), nil, nil)
			if err == nil {
				t.Fatal("the call succeeded")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			// The server is gone: the next call starts another, as before.
			call(t, tool(t, c, "pid"), `{}`)
		})
	}
}

// A call that times out on a server that is still up says so, and no more: the server has
// not exited, and what it wrote on stderr (a warning as it started) is not the call's news.
func TestCallTimeoutOfALiveServerSaysNoMore(t *testing.T) {
	cfg, _ := flakyConfig(t, "sys.stderr.write('flaky: warming up\\n')\nsys.stderr.flush()")
	cfg.CallTimeout = 200 * time.Millisecond
	c := connect(t, cfg)
	_, err := mcptool.Agent(tool(t, c, "sleep")).Run(t.Context(), troupe.NewDispatch())
	if err == nil {
		t.Fatal("the call succeeded")
	}
	for _, n := range []string{"warming up", "stderr", "exited", "signal"} {
		if strings.Contains(err.Error(), n) {
			t.Errorf("error %q says %q", err, n)
		}
	}
}

// An HTTP server's URL is quoted with its password and secret query values masked, and the
// go-sdk's own error, which quotes the URL it posted to, is scrubbed of them.
func TestHTTPServerURLSecretsMasked(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "no", http.StatusForbidden)
	}))
	defer srv.Close()
	u := strings.Replace(srv.URL, "http://", "http://bob:hunter2pass@", 1) + "/mcp?token=t0k3n-s3cret-value"
	_, err := mcptool.Connect(t.Context(), mcptool.Config{URL: u, CallTimeout: 5 * time.Second})
	if err == nil {
		t.Fatal("connected to a server that refuses everything")
	}
	if msg := err.Error(); strings.Contains(msg, "hunter2pass") || strings.Contains(msg, "t0k3n-s3cret-value") || !strings.Contains(msg, "bob:xxxxx@") {
		t.Errorf("error %q; want the URL's password and token masked", msg)
	}
}

// A server that is still starting when the caller gives up is killed at once, not given its
// graceful stop: Connect returns soon after its context ends, however long StopTimeout is.
func TestConnectGivenUpKillsTheServerAtOnce(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	_, err := mcptool.Connect(ctx, mcptool.Config{Command: []string{"sh", "-c", "sleep 44"}, StopTimeout: time.Minute})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Connect: %v, want it cancelled", err)
	}
	// Well under the minute a graceful stop would wait: the bound is slack for a slow machine.
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("Connect returned %v after its context ended, want it to kill the server, not wait StopTimeout", took)
	}
}
