//go:build unix

package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A terminal that closes (an SSH session dropped, a window shut) sends troupe SIGHUP. Its
// agents run in process groups of their own, which the hangup does not reach: troupe must
// cancel the run as it does on Ctrl-C, stopping them, and not die leaving them running.
func TestHangupStopsTheAgents(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			pidFile := filepath.Join(dir, "agent.pid")
			yaml := "version: 1\nname: hangup\nagents:\n  sleeper:\n    kind: exec\n" +
				"    exec: {command: [sh, -c, \"echo $$ > agent.pid; exec sleep 60\"]}\n"
			if err := os.WriteFile(filepath.Join(dir, "troupe.yaml"), []byte(yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.CommandContext(t.Context(), os.Args[0], "run", dir, "wait")
			cmd.Env = append(os.Environ(), "TROUPE_TEST_MAIN=1")
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			pid := 0
			for deadline := time.Now().Add(20 * time.Second); pid == 0; time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("the agent never started:\n%s", out.String())
				}
				if b, err := os.ReadFile(pidFile); err == nil && strings.HasSuffix(string(b), "\n") {
					pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
				}
			}
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
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "agent.pid")
	yaml := "version: 1\nname: hangup\nagents:\n  sleeper:\n    kind: exec\n" +
		"    exec: {command: [sh, -c, \"echo $$ > agent.pid; exec sleep 60\"]}\n"
	if err := os.WriteFile(filepath.Join(dir, "troupe.yaml"), []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	// The shell ignores SIGHUP, as nohup does, then becomes troupe: the ignore is inherited.
	cmd := exec.CommandContext(t.Context(), "sh", "-c", `trap "" HUP; exec "$0" "$@"`, os.Args[0], "run", dir, "wait")
	cmd.Env = append(os.Environ(), "TROUPE_TEST_MAIN=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
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
