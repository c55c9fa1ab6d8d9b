//go:build unix

package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/troupehq/troupe/agent/execagent"
)

// A terminal that closes (an SSH session dropped, a window shut) sends troupe SIGHUP. Its
// agents run in process groups of their own, which the hangup does not reach: troupe must
// cancel the run as it does on Ctrl-C, stopping them, and not die leaving them running.
func TestHangupStopsTheAgents(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd, out, pid := startSleeperRun(t, os.Args[0])
			defer syscall.Kill(pid, syscall.SIGKILL) // whatever happens, leave nothing behind
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			err := cmd.Wait()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != exitCancelled {
				t.Errorf("troupe ended with %v, want exit %d (cancelled)\n%s", err, exitCancelled, out.String())
			}
			if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
				t.Errorf("the agent (pid %d) is still running after troupe ended on %v", pid, sig)
			}
		})
	}
}

// Under nohup (SIGHUP ignored when troupe starts) a closing terminal must not cancel the run:
// that is what nohup is for. Notify for SIGHUP would install a handler and undo the ignore.
func TestHangupIgnoredUnderNohup(t *testing.T) {
	// The shell ignores SIGHUP, as nohup does, then becomes troupe: the ignore is inherited.
	cmd, out, pid := startSleeperRun(t, "sh", "-c", `trap "" HUP; exec "$0" "$@"`, os.Args[0])
	defer syscall.Kill(pid, syscall.SIGKILL) // whatever happens, leave nothing behind
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		t.Fatalf("troupe started with SIGHUP ignored ended on a hangup (%v):\n%s", err, out.String())
	case <-time.After(time.Second):
	}
	if err := syscall.Kill(pid, 0); err != nil {
		t.Errorf("the agent (pid %d) is gone after a hangup troupe ignores: %v", pid, err)
	}
	// SIGTERM still cancels the run.
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err := <-done
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitCancelled {
		t.Errorf("troupe ended with %v, want exit %d (cancelled)\n%s", err, exitCancelled, out.String())
	}
}

// An agent that ignores SIGTERM holds a cancelled run for the kill grace. A second Ctrl-C
// within it must not kill troupe, which would orphan the agent's process group: troupe
// SIGKILLs the group at once and ends as a cancelled run does.
func TestSecondInterruptKillsTheAgents(t *testing.T) {
	dir := t.TempDir()
	// The agent outlives SIGTERM (its trap notes the signal, which says the grace has begun, and
	// carries on) and starts a child that ignores it. Both hold the named pipe "hold" open, so
	// that the test sees when the last of the group is dead: kill(-pgid, 0) would not, since a
	// zombie left to an init that does not reap (a container's) still counts as a member.
	script := `trap 'echo > term' TERM
exec 3>hold
sh -c 'trap "" TERM; echo $$ > child.pid; exec sleep 60' &
echo $$ > agent.pid
while :; do wait; done
`
	yaml := "version: 1\nname: stubborn\nagents:\n  stubborn:\n    kind: exec\n    exec: {command: [sh, agent.sh]}\n"
	for name, body := range map[string]string{"agent.sh": script, "troupe.yaml": yaml} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	hold := filepath.Join(dir, "hold")
	if err := syscall.Mkfifo(hold, 0o600); err != nil {
		t.Fatal(err)
	}
	// The read end is open before the agent opens the write end, which then does not block.
	held, err := os.OpenFile(hold, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()

	cmd := exec.CommandContext(t.Context(), os.Args[0], "run", dir, "wait")
	cmd.Env = append(os.Environ(), "TROUPE_TEST_MAIN=1")
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	ended := false
	defer func() {
		if !ended {
			_ = cmd.Process.Kill()
			<-done
		}
	}()
	pgid := 0
	waitFor(t, "the agent and its child to start", &out, func() bool {
		if _, err := os.Stat(filepath.Join(dir, "child.pid")); err != nil {
			return false
		}
		pgid = readPid(filepath.Join(dir, "agent.pid"))
		return pgid != 0 && readPid(filepath.Join(dir, "child.pid")) != 0
	})
	defer syscall.Kill(-pgid, syscall.SIGKILL) // whatever happens, leave nothing behind

	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the agent to get SIGTERM", &out, func() bool {
		_, err := os.Stat(filepath.Join(dir, "term"))
		return err == nil
	})
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	second := time.Now()
	select {
	case err = <-done:
		ended = true
	case <-time.After(20 * time.Second):
		t.Fatalf("troupe still running 20s after the second interrupt:\n%s", out.String())
	}
	// Without the second interrupt it would end when the grace (from the first) is over.
	if took := time.Since(second); took >= execagent.DefaultKillGrace/2 {
		t.Errorf("troupe ended %v after the second interrupt; the kill grace was not cut short", took.Round(time.Millisecond))
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitCancelled {
		t.Errorf("troupe ended with %v, want exit %d (cancelled)\n%s", err, exitCancelled, out.String())
	}
	if !strings.Contains(out.String(), "cancelled") {
		t.Errorf("the output does not show the run cancelled:\n%s", out.String())
	}
	// EOF on the pipe once every process of the group is dead.
	held.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := held.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Errorf("the agent's process group (%d) is still alive after troupe ended: read %d bytes, %v", pgid, n, err)
	}
}

// waitFor polls cond until it holds, failing the test after 20 s.
func waitFor(t *testing.T, what string, out *syncBuffer, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited 20s for %s:\n%s", what, out.String())
		}
	}
}

// readPid reads a pid a shell wrote with echo; 0 until the whole line is there.
func readPid(path string) int {
	b, err := os.ReadFile(path)
	if err != nil || !strings.HasSuffix(string(b), "\n") {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// startSleeperRun starts `troupe run` (this test binary as the CLI, run through the command
// prefix, whose last word is the binary) on a workflow of one exec agent that sleeps a minute,
// and returns once the agent has started, with the agent's pid.
func startSleeperRun(t *testing.T, prefix ...string) (*exec.Cmd, *bytes.Buffer, int) {
	t.Helper()
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "agent.pid")
	yaml := "version: 1\nname: hangup\nagents:\n  sleeper:\n    kind: exec\n" +
		"    exec: {command: [sh, -c, \"echo $$ > agent.pid; exec sleep 60\"]}\n"
	if err := os.WriteFile(filepath.Join(dir, "troupe.yaml"), []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), prefix[0], append(prefix[1:], "run", dir, "wait")...)
	cmd.Env = append(os.Environ(), "TROUPE_TEST_MAIN=1")
	out := new(bytes.Buffer)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := 0
	for deadline := time.Now().Add(20 * time.Second); pid == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("the agent never started:\n%s", out.String())
		}
		if b, err := os.ReadFile(pidFile); err == nil && strings.HasSuffix(string(b), "\n") {
			pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
	}
	return cmd, out, pid
}

// Ctrl-C while an MCP server is starting cancels the command: exit 130, saying so, not a
// configuration problem (exit 2) made of the connect's "context canceled". The server writes
// to a FIFO once it runs, which is when the test cancels.
func TestCancelWhileMCPServerStarts(t *testing.T) {
	for _, cmd := range []string{"run", "validate"} {
		t.Run(cmd, func(t *testing.T) { cancelWhileMCPServerStarts(t, cmd) })
	}
}

func cancelWhileMCPServerStarts(t *testing.T, cmd string) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "started")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	yaml := "version: 1\nagents:\n  tool:\n    kind: mcp\n    mcp: {server: slow, tool: read}\n" +
		"mcp_servers:\n  slow: {command: sh, args: [-c, \"echo > started; exec sleep 44\"], connect_timeout: 30s, stop_timeout: 100ms}\n"
	if err := os.WriteFile(filepath.Join(dir, "troupe.yaml"), []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancelCause(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if f, err := os.Open(fifo); err == nil { // until the server opens it to write
			_, _ = io.Copy(io.Discard, f)
			f.Close()
		}
		cancel(errors.New("interrupt signal received"))
	}()
	args := []string{cmd, dir}
	if cmd == "run" {
		args = append(args, "q")
	}
	var stdout, stderr bytes.Buffer
	code := run(ctx, args, &stdout, &stderr)
	if f, err := os.OpenFile(fifo, os.O_RDWR, 0); err == nil { // frees the reader if the server never ran
		f.Close()
	}
	<-done
	if code != exitCancelled {
		t.Errorf("exit %d, want %d\nstderr:\n%s", code, exitCancelled, stderr.String())
	}
	if want := "troupe " + cmd + ": cancelled while building the agents: interrupt signal received\n"; stderr.String() != want {
		t.Errorf("stderr = %q, want %q", stderr.String(), want)
	}
}
