package peers

import (
	"bufio"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// StartTimeout bounds how long Start waits for a peer to say it is ready.
const StartTimeout = 60 * time.Second

// Start runs the peer executable name (found by Bin, so a missing peer skips or fails the test
// as Bin does) with args as a server on a free 127.0.0.1 port, and returns its address
// ("127.0.0.1:port") once a line the peer printed on stdout or stderr satisfies ready. The port
// reaches the peer as PORT in its environment, with HOST=127.0.0.1 (mock-llm and the MCP
// reference servers read them); env adds more "KEY=value" entries. The peer runs in a fresh
// temporary directory.
//
// The peer's output is drained for as long as it runs, so it never blocks on a full pipe. At the
// test's cleanup the peer is killed and waited for, and the goroutine reading its output is
// waited for too. A peer that exits, or stays silent for StartTimeout, before it is ready fails
// the test with the last lines it printed.
func Start(t testing.TB, name string, args []string, ready func(line string) bool, env ...string) string {
	t.Helper()
	bin := Bin(t, name)
	port, err := freePort()
	if err != nil {
		t.Fatalf("peers: %s: %v", name, err)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatalf("peers: %s: %v", name, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = t.TempDir()
	cmd.Env = append(append(os.Environ(), "HOST=127.0.0.1", "PORT="+port), env...)
	cmd.Stdout, cmd.Stderr = pw, pw // *os.File: the peer writes to the pipe directly, no copying goroutine
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		t.Fatalf("peers: starting %s: %v", name, err)
	}
	pw.Close() // the peer holds the write end now; the reader sees EOF when it exits

	out := &lines{ready: ready, isReady: make(chan struct{})}
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		out.read(pr)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		pr.Close() // ends a read blocked on a descendant that still holds the write end
		<-drained
	})

	timer := time.NewTimer(StartTimeout)
	defer timer.Stop()
	select {
	case <-out.isReady:
	case <-drained:
		select {
		case <-out.isReady: // it said it was ready, then closed its output
		default:
			t.Fatalf("peers: %s exited before it was ready; its last output:\n%s", name, out.tail())
		}
	case <-timer.C:
		t.Fatalf("peers: %s was not ready after %v; its last output:\n%s", name, StartTimeout, out.tail())
	}
	return "127.0.0.1:" + port
}

// freePort returns a TCP port on 127.0.0.1 that nothing listened on a moment ago.
func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port), nil
}

// lines reads a peer's output: until ready it keeps the last lines for an error message and
// asks ready of each; after, it discards.
type lines struct {
	ready   func(string) bool
	isReady chan struct{}

	mu   sync.Mutex
	last []string
}

const keepLines = 20

func (l *lines) read(r io.Reader) {
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			l.see(strings.TrimRight(line, "\r\n"))
		}
		if err != nil {
			return
		}
	}
}

func (l *lines) see(line string) {
	select {
	case <-l.isReady:
		return
	default:
	}
	l.mu.Lock()
	l.last = append(l.last, line)
	if len(l.last) > keepLines {
		l.last = l.last[1:]
	}
	l.mu.Unlock()
	if l.ready(line) {
		close(l.isReady)
	}
}

func (l *lines) tail() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.last, "\n")
}
