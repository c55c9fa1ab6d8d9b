package mcptool_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/agent/mcptool"
)

// flakyServer is an MCP server over stdio, in Python: pid answers its process id; crash
// writes why on stderr and the start of its answer, and exits 3, as a server dying mid-call
// does; killed kills itself with SIGKILL, as the OOM killer would; sleep never answers; mute
// fails (isError) without a word.
const flakyServer = `
import json, os, signal, sys, time
def send(m):
    sys.stdout.write(json.dumps(m) + "\n")
    sys.stdout.flush()
for line in sys.stdin:
    m = json.loads(line)
    method, id = m.get("method"), m.get("id")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": id, "result": {"protocolVersion": m["params"]["protocolVersion"],
              "capabilities": {"tools": {}}, "serverInfo": {"name": "flaky", "version": "1"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": id, "result": {"tools": [{"name": n, "inputSchema": {"type": "object"}} for n in ("pid", "crash", "killed", "sleep", "mute")]}})
    elif method == "tools/call":
        name = m["params"]["name"]
        if name == "pid":
            send({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": str(os.getpid())}]}})
        elif name == "crash":
            sys.stderr.write("flaky: the charger caught fire\n")
            sys.stderr.flush()
            sys.stdout.write('{"jsonrpc": "2.0", "id": %d, "res' % id)
            sys.stdout.flush()
            sys.exit(3)
        elif name == "killed":
            os.kill(os.getpid(), signal.SIGKILL)
        elif name == "sleep":
            time.sleep(1000)
        elif name == "mute":
            send({"jsonrpc": "2.0", "id": id, "result": {"content": [], "isError": True}})
    elif id is not None:
        send({"jsonrpc": "2.0", "id": id, "result": {}})
`

func flaky(t *testing.T) *mcptool.Client {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not installed")
	}
	script := filepath.Join(t.TempDir(), "flaky.py")
	if err := os.WriteFile(script, []byte(flakyServer), 0o644); err != nil {
		t.Fatal(err)
	}
	return connect(t, mcptool.Config{Command: []string{"python3", script}, CallTimeout: 30 * time.Second, StopTimeout: 200 * time.Millisecond})
}

// A stdio server that dies in the middle of a call fails that call, at once; the calls after
// it reach a new server process — one, however many calls find the old one gone — rather than
// failing, every one, for as long as the client lives. The dead process has been waited for.
func TestServerDyingMidCall(t *testing.T) {
	c := flaky(t)
	before := call(t, tool(t, c, "pid"), `{}`)

	_, err := mcptool.Agent(tool(t, c, "crash")).Run(t.Context(), troupe.NewDispatch())
	var ae *troupe.AgentError
	if !errors.As(err, &ae) || ae.Code != troupe.CodeAgentError || !ae.Recoverable {
		t.Fatalf("the call the server died in: %v; want a recoverable AGENT_ERROR", err)
	}
	if n := strings.Count(err.Error(), `calling "tools/call"`); n != 1 {
		t.Errorf("error %q says what failed %d times, want once", err, n)
	}

	var wg sync.WaitGroup
	after := make([]string, 3)
	for i := range after {
		wg.Go(func() {
			out, err := tool(t, c, "pid").Call(t.Context(), nil, nil)
			if err != nil {
				t.Errorf("a call after the server died: %v", err)
			}
			after[i] = string(out)
		})
	}
	wg.Wait()
	if after[0] == before || after[0] != after[1] || after[1] != after[2] {
		t.Errorf("server pids: %s before, %v after; want one new server for the calls after", before, after)
	}
	var text string
	if err := json.Unmarshal([]byte(before), &text); err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(text)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("the dead server %d is still in the process table (kill 0: %v)", pid, err)
	}
}

// A tool that fails without saying why fails with a message that says so, not an empty one.
func TestToolErrorWithoutAMessage(t *testing.T) {
	c := flaky(t)
	_, err := tool(t, c, "mute").Call(t.Context(), nil, nil)
	var te *mcptool.ToolError
	if !errors.As(err, &te) || te.Message != "the tool reported an error without saying what" {
		t.Errorf("err = %v; want a ToolError saying it has no message", err)
	}
}

// A call on a closed client fails; it does not start the server again. The error is
// ErrClosed, and, as an agent's, an AGENT_ERROR that is not recoverable: no retry can pass.
func TestCallAfterClose(t *testing.T) {
	c := flaky(t)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	_, err := tool(t, c, "pid").Call(t.Context(), nil, nil)
	if err == nil || !strings.Contains(err.Error(), "the client is closed") || strings.Count(err.Error(), "mcptool:") != 1 || !errors.Is(err, mcptool.ErrClosed) {
		t.Errorf("call after Close: %v; want one error, ErrClosed, saying the client is closed, prefixed once", err)
	}
	_, err = mcptool.Agent(tool(t, c, "pid")).Run(t.Context(), troupe.NewDispatch())
	var ae *troupe.AgentError
	if !errors.As(err, &ae) || ae.Code != troupe.CodeAgentError || ae.Recoverable || !errors.Is(err, mcptool.ErrClosed) ||
		!strings.Contains(err.Error(), "the client is closed") || strings.Count(err.Error(), "mcptool:") != 1 {
		t.Errorf("agent run after Close: %v; want a non-recoverable AGENT_ERROR, ErrClosed, saying the client is closed, prefixed once", err)
	}
}

// flakyWith is flaky with a prelude run as each server process starts: it may exit, or wait.
// Each process appends its pid to the file $PIDS.
func flakyWith(t *testing.T, prelude string, env ...string) (*mcptool.Client, string) {
	t.Helper()
	cfg, pids := flakyConfig(t, prelude, env...)
	return connect(t, cfg), pids
}

// flakyConfig is the Config of flakyWith's server, and the file its processes' pids go to.
func flakyConfig(t *testing.T, prelude string, env ...string) (mcptool.Config, string) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not installed")
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "flaky.py")
	src := "import os, sys, time\nopen(os.environ['PIDS'], 'a').write('%d\\n' % os.getpid())\n" + prelude + "\n" + flakyServer
	if err := os.WriteFile(script, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	pids := filepath.Join(dir, "pids")
	return mcptool.Config{Command: []string{"python3", script}, Env: append(env, "PIDS="+pids),
		CallTimeout: 30 * time.Second, StopTimeout: 200 * time.Millisecond}, pids
}

func serverPIDs(t *testing.T, path string) []int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		n, err := strconv.Atoi(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, n)
	}
	return out
}

// A lost session that cannot be re-established (the server will not start) fails the call
// that tried, recoverable, saying so; a later call tries again, and reaches the server once it
// starts.
func TestReconnectFailsThenSucceeds(t *testing.T) {
	down := filepath.Join(t.TempDir(), "down")
	c, _ := flakyWith(t, "if os.path.exists(os.environ['DOWN']): sys.exit(1)", "DOWN="+down)
	mcptool.Agent(tool(t, c, "crash")).Run(t.Context(), troupe.NewDispatch())
	if err := os.WriteFile(down, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := mcptool.Agent(tool(t, c, "pid")).Run(t.Context(), troupe.NewDispatch())
	var ae *troupe.AgentError
	if !errors.As(err, &ae) || ae.Code != troupe.CodeAgentError || !ae.Recoverable || !strings.Contains(err.Error(), "reconnecting failed") {
		t.Fatalf("a call that cannot reconnect: %v; want a recoverable AGENT_ERROR saying reconnecting failed", err)
	}
	if err := os.Remove(down); err != nil {
		t.Fatal(err)
	}
	if _, err := tool(t, c, "pid").Call(t.Context(), nil, nil); err != nil {
		t.Errorf("a call once the server starts again: %v", err)
	}
}

// Close while a call is re-establishing the session does not wait for the new server to
// answer (this one never does; the call's timeout is 30 s): it aborts the reconnect, stops
// the new server and returns. The call fails saying the client is closed, and no process is
// left; goleak (TestMain) checks no goroutine is.
func TestCloseAbortsReconnect(t *testing.T) {
	hang := filepath.Join(t.TempDir(), "hang")
	// A server started once the fifo exists opens it (which waits for the test to open the
	// other end: the test knows the server is up) and never answers.
	c, pids := flakyWith(t, "if os.path.exists(os.environ['HANG']):\n    open(os.environ['HANG'], 'w')\n    time.sleep(1000)", "HANG="+hang)
	mcptool.Agent(tool(t, c, "crash")).Run(t.Context(), troupe.NewDispatch())
	if err := syscall.Mkfifo(hang, 0o600); err != nil {
		t.Fatal(err)
	}
	called := make(chan error, 1)
	go func() {
		_, err := tool(t, c, "pid").Call(t.Context(), nil, nil)
		called <- err
	}()
	up := make(chan error, 1)
	go func() {
		f, err := os.Open(hang) // returns once the new server has opened its end
		if err == nil {
			f.Close()
		}
		up <- err
	}()
	select {
	case err := <-up:
		if err != nil {
			t.Fatal(err)
		}
	case err := <-called:
		t.Fatalf("the call returned before the new server was up: %v", err)
	}
	// A call that finds the session being replaced waits for that, or for its own context.
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if _, err := tool(t, c, "pid").Call(ctx, nil, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a call whose context ends while the session is replaced: %v; want its deadline", err)
	}
	// Calls that wait, with no deadline of their own, for the session being replaced.
	waiting := make(chan error, 2)
	for range cap(waiting) {
		go func() {
			_, err := tool(t, c, "pid").Call(t.Context(), nil, nil)
			waiting <- err
		}()
	}
	start := time.Now()
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	// Stopping the new server takes StopTimeout (200 ms) and a SIGTERM; waiting for it to
	// answer would take the call's timeout.
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("Close took %v: it waited for the reconnect", took)
	}
	if err := <-called; !errors.Is(err, mcptool.ErrClosed) || !strings.Contains(err.Error(), "the client is closed") || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("the reconnecting call: %v; want an error saying the client is closed", err)
	}
	for range cap(waiting) {
		if err := <-waiting; !errors.Is(err, mcptool.ErrClosed) || !strings.Contains(err.Error(), "the client is closed") {
			t.Errorf("a call waiting for the reconnect: %v; want an error saying the client is closed", err)
		}
	}
	if _, err := tool(t, c, "pid").Call(t.Context(), nil, nil); !errors.Is(err, mcptool.ErrClosed) || !strings.Contains(err.Error(), "the client is closed") {
		t.Errorf("a call after Close: %v; want an error saying the client is closed", err)
	}
	got := serverPIDs(t, pids)
	if len(got) != 2 {
		t.Errorf("servers started: %v; want the first and the one the call started", got)
	}
	for _, pid := range got {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("server %d is still in the process table after Close (kill 0: %v)", pid, err)
		}
	}
}

// Calls in flight, and calls made while Close runs, each return: with the tool's answer, or
// with an error saying the client is closed — not a hang, nor a bare "connection closed".
func TestCallsRacingClose(t *testing.T) {
	c := flaky(t)
	pid := tool(t, c, "pid")
	call(t, pid, `{}`)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for range 4 {
		wg.Go(func() {
			for {
				if _, err := pid.Call(t.Context(), nil, nil); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if !errors.Is(err, mcptool.ErrClosed) || !strings.Contains(err.Error(), "the client is closed") {
			t.Errorf("a call racing Close: %v; want an error saying the client is closed", err)
		}
	}
}

// Close may be called from several goroutines at once: one of them stops the server, and
// every call returns only once it is stopped — its process gone — with that call's result:
// nil, or, for a server that exits failing, its exit status, never a second teardown or a
// panic. A Close after them returns the same. goleak (TestMain) checks no goroutine is left.
func TestConcurrentClose(t *testing.T) {
	for _, tt := range []struct {
		name    string
		prelude string // run as the server starts
		want    string // in every Close's error; "" for none
	}{
		{"server exits", "", ""},
		{"server exits failing", "import atexit\natexit.register(lambda: os._exit(5))", "exit status 5"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg, pids := flakyConfig(t, tt.prelude)
			c, err := mcptool.Connect(t.Context(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			call(t, tool(t, c, "pid"), `{}`)
			servers := serverPIDs(t, pids)
			if len(servers) != 1 {
				t.Fatalf("servers started: %v; want one", servers)
			}
			const closers = 8
			start := make(chan struct{})
			type closed struct {
				err   error
				alive error // kill 0 of the server as Close returned: ESRCH once it is gone
			}
			results := make(chan closed, closers)
			var wg sync.WaitGroup
			for range closers {
				wg.Go(func() {
					<-start
					err := c.Close()
					results <- closed{err, syscall.Kill(servers[0], 0)}
				})
			}
			close(start)
			wg.Wait()
			close(results)
			for r := range results {
				if !errors.Is(r.alive, syscall.ESRCH) {
					t.Errorf("a Close returned (%v) with the server %d still in the process table (kill 0: %v)", r.err, servers[0], r.alive)
				}
				checkCloseErr(t, r.err, tt.want)
			}
			checkCloseErr(t, c.Close(), tt.want)
			if got := serverPIDs(t, pids); len(got) != 1 {
				t.Errorf("servers started: %v; want the one, stopped once", got)
			}
		})
	}
	t.Run("in memory", func(t *testing.T) {
		c, err := inMemory(t)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range 8 {
			wg.Go(func() {
				<-start
				if err := c.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			})
		}
		close(start)
		wg.Wait()
		if _, err := tool(t, c, "greet").Call(t.Context(), nil, json.RawMessage(`{"name":"x"}`)); !errors.Is(err, mcptool.ErrClosed) {
			t.Errorf("a call after Close: %v; want ErrClosed", err)
		}
	})
}

// checkCloseErr checks a Close returned nil when want is "", else an error holding want.
func checkCloseErr(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("Close: %v; want nil", err)
	case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
		t.Errorf("Close: %v; want an error saying %q", err, want)
	}
}
