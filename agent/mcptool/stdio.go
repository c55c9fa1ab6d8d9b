package mcptool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/troupehq/troupe/agent/internal/wire"
)

const (
	// stderrTail is how many trailing bytes of a stdio server's stderr its errors quote.
	stderrTail = 4 << 10
	// exitWait bounds how long a call that failed because its stdio server hung up waits for
	// the process to be waited for and its stderr read to the end, to say how it ended.
	exitWait = 2 * time.Second
	// drainWait bounds how long stopping a stdio server waits, once its process group is
	// killed, for its stderr to end: a process that left the group may hold it open.
	drainWait = time.Second
)

// stdioTransport runs a server as a subprocess with the go-sdk's CommandTransport, in its own
// process group, so that stopping it reaches whatever it started (npx's node, a wrapper
// script's child), and keeps the end of its stderr for errors. It is connected once: dial
// makes one per connection and finds, in conn, the connection it made.
type stdioTransport struct {
	cmd     *exec.Cmd
	stop    time.Duration // how long Close waits for the server to exit before it is terminated
	name    string        // "command npx -y …", for messages
	secrets *wire.Secrets
	conn    *stdioConn
}

func newStdioTransport(cfg Config) *stdioTransport {
	cmd := exec.Command(cfg.Command[0], cfg.Command[1:]...)
	cmd.Env = append(os.Environ(), cfg.Env...)
	cmd.Dir = cfg.Dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stop := cfg.StopTimeout
	if stop <= 0 {
		stop = 5 * time.Second // the go-sdk's default
	}
	return &stdioTransport{cmd: cmd, stop: stop, name: describe(cfg), secrets: wire.EnvSecrets(cfg.Env)}
}

func (t *stdioTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	// A pipe of our own: not cmd.StderrPipe, which Wait closes as soon as the process exits,
	// maybe before the last of what it wrote is read, nor an io.Writer, whose copying Wait
	// waits for as long as a child of the server holds the pipe.
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	t.cmd.Stderr = w
	conn, err := (&mcp.CommandTransport{Command: t.cmd, TerminateDuration: t.stop}).Connect(ctx)
	w.Close() // the server has its copy, or never will
	if err != nil {
		r.Close()
		return nil, err
	}
	c := &stdioConn{Connection: conn, t: t, pid: t.cmd.Process.Pid, stderr: r, tail: tail{t: wire.Tail{Max: stderrTail, Scrub: t.secrets.Tail}},
		drained: make(chan struct{}), stopped: make(chan struct{})}
	go func() { // Close waits for it
		defer close(c.drained)
		_, _ = io.Copy(&c.tail, r)
	}()
	// A server given up on while it starts (ctx ends before dial has a session) is owed no
	// graceful stop: it is killed at once, and the go-sdk's close of the half-made session,
	// which would otherwise wait StopTimeout for it, returns.
	c.stopKill = context.AfterFunc(ctx, c.kill)
	t.conn = c
	return c, nil
}

// stdioConn is the connection to a stdio server. Once closed (the server's stdin closed, the
// server exited or was terminated), it kills what is left of the server's process group — a
// server that is a wrapper may leave a child that never read its stdin — and reads its stderr
// to the end. It notes whether the server hung up (closed its stdout or stdin) before it was
// closed: then how the process ended is news, and errors say it.
type stdioConn struct {
	mcp.Connection
	t      *stdioTransport
	pid    int
	stderr *os.File // the read end, which Close closes
	tail   tail     // the end of what the server wrote to stderr

	closing atomic.Bool // Close has begun: an EOF from now on is its doing
	hungUp  atomic.Bool // the server hung up before Close began

	stopKill func() bool // ends the kill on the dial's context (see Connect)

	once    sync.Once
	err     error
	drained chan struct{} // closed once stderr is read to its end, or closed
	// stopped is closed when Close has returned; state and terminated, written before, say
	// how the process ended (state nil: it was not waited for).
	stopped    chan struct{}
	state      *os.ProcessState
	terminated bool // Close had to signal the process
}

func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := c.Connection.Read(ctx)
	if err != nil {
		c.note(err)
	}
	return m, err
}

func (c *stdioConn) Write(ctx context.Context, m jsonrpc.Message) error {
	err := c.Connection.Write(ctx, m)
	if err != nil {
		c.note(err)
	}
	return err
}

// note marks the server hung up when err, of a read or a write, says it closed its end of a
// pipe before Close closed ours.
func (c *stdioConn) note(err error) {
	if !c.closing.Load() && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.EPIPE)) {
		c.hungUp.Store(true)
	}
}

// kill ends the server's process group at once.
func (c *stdioConn) kill() { _ = syscall.Kill(-c.pid, syscall.SIGKILL) }

// started ends the watch on the dial's context, once dial has a session or has failed, and
// reports whether the server was still running then (false: the context ended and killed it).
func (c *stdioConn) started() bool { return c.stopKill() }

// Close may be called several times, concurrently: the first call stops the server (closes
// its stdin, waits for it to exit, terminates it if it does not), kills its group and reads
// its stderr to the end; the others wait for it and return its result.
func (c *stdioConn) Close() error {
	c.once.Do(func() {
		c.closing.Store(true)
		start := time.Now()
		c.err = c.Connection.Close()
		took := time.Since(start)
		_ = syscall.Kill(-c.pid, syscall.SIGKILL)
		timer := time.NewTimer(drainWait)
		select {
		case <-c.drained:
		case <-timer.C:
		}
		timer.Stop()
		c.stderr.Close() // ends the copy, if a process outside the group still holds the pipe
		<-c.drained
		// The process was waited for unless stopping it failed before (closing its stdin) or
		// gave up after SIGKILL, when the go-sdk's Wait may still run.
		var ee *exec.ExitError
		if c.err == nil || errors.As(c.err, &ee) {
			c.state = c.t.cmd.ProcessState
		}
		// The go-sdk signals a server that has not exited StopTimeout after its stdin closed.
		c.terminated = took >= c.t.stop
		close(c.stopped)
	})
	return c.err
}

// ending says how the server's process ended, when it ended of itself ("exited with status
// 1", "was killed by signal 9 (killed)"; "" when that is not known or it was Close that ended
// it), and what its stderr ended with (redacted, "" for nothing). It waits up to wait for
// Close to have stopped the server.
func (c *stdioConn) ending(wait time.Duration) (status, stderr string) {
	if wait > 0 {
		timer := time.NewTimer(wait)
		select {
		case <-c.stopped:
		case <-timer.C:
		}
		timer.Stop()
	}
	select {
	case <-c.stopped:
		if c.state != nil && c.hungUp.Load() {
			status = exitStatus(c.state, c.terminated)
		}
	default:
	}
	return status, c.tail.text()
}

// exitStatus words how a process ended as execagent does; "" for a signal that may have been
// Close's (terminated: it signalled the process).
func exitStatus(ps *os.ProcessState, terminated bool) string {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		if terminated && (ws.Signal() == syscall.SIGTERM || ws.Signal() == syscall.SIGKILL) {
			return ""
		}
		return fmt.Sprintf("was killed by signal %d (%v)", int(ws.Signal()), ws.Signal())
	}
	if !ps.Exited() {
		return ""
	}
	return "exited with status " + strconv.Itoa(ps.ExitCode())
}

// news is what errors add of a stdio server: subject and how it ended, then the end of its
// stderr ("; the server exited with status 1; stderr: …"); "" when nothing is known.
func news(subject, status, stderr string) string {
	var b strings.Builder
	if status != "" {
		b.WriteString("; " + subject + " " + status)
	}
	if stderr != "" {
		b.WriteString("; stderr: " + stderr)
	}
	return b.String()
}

// explain adds to err, the error of a call on a session whose stdio server hung up (the process
// died), the command, how it ended and the end of its stderr. Other errors are left as they
// are: a server that is still up (a call that timed out) is not news.
func (s *session) explain(err error) error {
	c := s.conn
	if c == nil || !c.hungUp.Load() {
		return err
	}
	status, stderr := c.ending(exitWait)
	if status == "" {
		status = "closed the connection"
	}
	return fmt.Errorf("%w%s", err, news(c.t.name, status, stderr))
}

// tail keeps the end of what the server writes to its stderr (wire.Tail). It is safe for
// concurrent use: the goroutine that reads the server's stderr writes it, while an error may
// quote it.
type tail struct {
	mu sync.Mutex
	t  wire.Tail
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.t.Write(p)
}

// text returns what is kept, secrets scrubbed (the tail's Scrub), trimmed and, when earlier
// bytes were dropped, from the first whole line kept (or rune, for a line longer than all),
// with "…" before it.
func (t *tail) text() string {
	t.mu.Lock()
	kept := t.t.String()
	t.mu.Unlock()
	cut := strings.HasPrefix(kept, "…")
	kept = strings.TrimPrefix(kept, "…")
	if i := strings.IndexByte(kept, '\n'); cut && i >= 0 && strings.TrimSpace(kept[i+1:]) != "" {
		kept = kept[i+1:]
	}
	for len(kept) > 0 && !utf8.RuneStart(kept[0]) {
		kept = kept[1:]
	}
	kept = strings.TrimSpace(strings.ToValidUTF8(kept, "\uFFFD"))
	if cut && kept != "" {
		kept = "…" + kept
	}
	return kept
}
