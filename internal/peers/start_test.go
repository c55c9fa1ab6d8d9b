package peers_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"go.uber.org/goleak"

	"github.com/troupehq/troupe/internal/peers"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakePeer installs a shell script as the peer name in a fresh TROUPE_PEERS directory.
func fakePeer(t *testing.T, name, script string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TROUPE_PEERS", dir)
	t.Setenv("TROUPE_REQUIRE_PEERS", "1")
}

func TestStartWaitsForReadinessAndStopsThePeer(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	fakePeer(t, "server", `echo $$ > "$PID_FILE"
echo "booting on stdout"
echo "$GREETING, listening on $HOST:$PORT" >&2
exec sleep 1000
`)
	var addr string
	t.Run("running", func(t *testing.T) {
		var seen []string
		addr = peers.Start(t, "server", nil, func(line string) bool {
			seen = append(seen, line)
			return strings.Contains(line, "listening on")
		}, "PID_FILE="+pidFile, "GREETING=hello")
		want := []string{"booting on stdout", "hello, listening on " + addr}
		if fmt.Sprint(seen) != fmt.Sprint(want) {
			t.Errorf("ready saw %q, want %q", seen, want)
		}
		if _, port, _ := strings.Cut(addr, "127.0.0.1:"); port == "" {
			t.Errorf("address %q is not on 127.0.0.1", addr)
		}
	})
	raw, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	// The subtest's cleanup killed and reaped the peer: its pid names no process any more.
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("peer %d still exists after cleanup: %v", pid, err)
	}
}

// fatalTB records a Fatalf and ends the goroutine that called it, as testing.T does.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func TestStartFailsWhenThePeerExitsFirst(t *testing.T) {
	fakePeer(t, "broken", `echo "loading config"
echo "config: no such file" >&2
exit 2
`)
	ft := &fatalTB{TB: t}
	done := make(chan string)
	go func() {
		defer close(done)
		done <- peers.Start(ft, "broken", nil, func(line string) bool { return strings.Contains(line, "listening") })
	}()
	if addr, ok := <-done; ok {
		t.Fatalf("Start returned %q for a peer that never got ready", addr)
	}
	for _, want := range []string{"peers: broken exited before it was ready", "loading config", "config: no such file"} {
		if !strings.Contains(ft.msg, want) {
			t.Errorf("failure %q does not say %q", ft.msg, want)
		}
	}
}
