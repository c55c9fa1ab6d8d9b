package execagent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/agent/internal/wire"
)

// Bounds a zero Config field takes.
const (
	DefaultTimeout        = 5 * time.Minute
	DefaultKillGrace      = 2 * time.Second
	DefaultMaxOutputBytes = 4 << 20
	DefaultStderrTail     = 4 << 10
	DefaultMaxProgress    = 256
	DefaultMaxLineBytes   = 1 << 10
)

// ExitTempFail is the exit status (sysexits' EX_TEMPFAIL) by which an agent says its failure is
// temporary: the dispatch fails recoverable, so the error policy may retry it.
const ExitTempFail = 75

// Config configures an exec agent. Only Command is required; every zero bound takes its
// default, none means unlimited.
type Config struct {
	// Command is the program and its arguments; the program is looked up in PATH.
	Command []string
	// Dir is the working directory; "" is the current one.
	Dir string
	// Env is added to the parent's environment ("KEY=value"; a later entry wins). The agent
	// also gets TROUPE_DISPATCH_ID, TROUPE_AGENT and, inside a run, TROUPE_TRACE_ID and
	// TRACEPARENT. Every value of at least 4 bytes, whatever its key, may be a secret: it is
	// replaced by "[redacted]", in every spelling, in what the agent records of the process's
	// stderr and stdout (progress events, errors and their details).
	Env []string
	// Timeout bounds one dispatch; 0 means DefaultTimeout. A shorter deadline on the context
	// (the dispatch's timeout_seconds, the run's budget) wins.
	Timeout time.Duration
	// KillGrace is how long the process group has between SIGTERM and SIGKILL; 0 means
	// DefaultKillGrace. A hurry channel in the dispatch's context (WithHurry) ends it early.
	KillGrace time.Duration
	// MaxOutputBytes bounds stdout; 0 means DefaultMaxOutputBytes. More fails the dispatch.
	MaxOutputBytes int
	// StderrTail is how many trailing bytes of stderr errors quote; 0 means DefaultStderrTail.
	StderrTail int
	// MaxProgress bounds the stderr lines emitted as progress events per dispatch; 0 means
	// DefaultMaxProgress. Lines past it are counted in one final "stderr_dropped" event.
	MaxProgress int
	// MaxLineBytes cuts longer stderr lines in progress events; 0 means DefaultMaxLineBytes.
	MaxLineBytes int
	// Agents, when set, checks a result's next_agent names a known agent (the engine checks it
	// again in any case).
	Agents troupe.AgentSet
}

// Agent runs a command per dispatch. It is immutable and safe for concurrent use: each Run
// starts its own process. The zero value is not usable; build one with New.
type Agent struct {
	cfg     Config
	name    string        // the command, quoted, for messages
	secrets *wire.Secrets // the values of Config.Env, scrubbed from what the agent records
}

// New validates cfg and returns the agent.
func New(cfg Config) (*Agent, error) {
	if len(cfg.Command) == 0 || cfg.Command[0] == "" {
		return nil, errors.New("execagent: Config.Command is empty")
	}
	values := make([]string, 0, len(cfg.Env))
	for i, e := range cfg.Env {
		k, v, ok := strings.Cut(e, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("execagent: Config.Env[%d] %q is not KEY=value", i, e)
		}
		values = append(values, v)
	}
	for _, b := range []struct {
		name string
		v    int64
	}{{"Timeout", int64(cfg.Timeout)}, {"KillGrace", int64(cfg.KillGrace)}, {"MaxOutputBytes", int64(cfg.MaxOutputBytes)},
		{"StderrTail", int64(cfg.StderrTail)}, {"MaxProgress", int64(cfg.MaxProgress)}, {"MaxLineBytes", int64(cfg.MaxLineBytes)}} {
		if b.v < 0 {
			return nil, fmt.Errorf("execagent: Config.%s is negative", b.name)
		}
	}
	cfg.Command = append([]string(nil), cfg.Command...)
	cfg.Env = append([]string(nil), cfg.Env...)
	cfg.Timeout = or(cfg.Timeout, DefaultTimeout)
	cfg.KillGrace = or(cfg.KillGrace, DefaultKillGrace)
	cfg.MaxOutputBytes = or(cfg.MaxOutputBytes, DefaultMaxOutputBytes)
	cfg.StderrTail = or(cfg.StderrTail, DefaultStderrTail)
	cfg.MaxProgress = or(cfg.MaxProgress, DefaultMaxProgress)
	cfg.MaxLineBytes = or(cfg.MaxLineBytes, DefaultMaxLineBytes)
	secrets := wire.NewSecrets(values...)
	return &Agent{cfg: cfg, name: wire.CommandName(cfg.Command, secrets, 48), secrets: secrets}, nil
}

func or[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// Run writes d as JSON to a new process's stdin, emits its stderr lines as "stderr" progress
// events and reads its Result from stdout. It returns when the process and every pipe reader
// are done; on timeout or cancellation the whole process group gets SIGTERM, then SIGKILL after
// KillGrace or as soon as a hurry channel of ctx (WithHurry) is closed.
func (a *Agent) Run(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
	out := &capped{max: a.cfg.MaxOutputBytes}
	res, err := a.run(ctx, d, out)
	if err != nil {
		// A failing program may print a value of Config.Env (a CLI echoing its token); what the
		// error quotes of its output is quoted again from the scrubbed output.
		return nil, a.secrets.Error(err, out.buf.Bytes())
	}
	a.secrets.Result(res) // a failure it reports on stdout may quote one too
	return res, nil
}

func (a *Agent) run(ctx context.Context, d *troupe.Dispatch, out *capped) (*troupe.Result, error) {
	in, err := json.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("execagent: encoding the dispatch: %w", err)
	}
	parent, started := ctx, time.Now()
	ctx, cancel := context.WithTimeoutCause(ctx, a.cfg.Timeout, troupe.ErrTimeout)
	defer cancel()
	// Output over its bound fails the dispatch whatever comes next: the process group is
	// stopped then, as on a timeout, not left to run (and be reported timed out) until one.
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	out.stop = func() { stop(errTooMuch) }

	cmd := exec.CommandContext(ctx, a.cfg.Command[0], a.cfg.Command[1:]...)
	cmd.Dir = a.cfg.Dir
	cmd.Env = append(os.Environ(), a.cfg.Env...)
	cmd.Env = append(cmd.Env, "TROUPE_DISPATCH_ID="+d.DispatchID, "TROUPE_AGENT="+d.TargetAgent)
	if tid := d.TraceID(); tid != "" {
		cmd.Env = append(cmd.Env, "TROUPE_TRACE_ID="+tid, "TRACEPARENT="+wire.Traceparent(tid, d.DispatchID))
	}
	cmd.Stdin = bytes.NewReader(in)
	errw := &stderr{d: d, tail: wire.Tail{Max: a.cfg.StderrTail, Scrub: a.secrets.Tail}, maxEvents: a.cfg.MaxProgress,
		maxLine: a.cfg.MaxLineBytes, secrets: a.secrets}
	cmd.Stdout, cmd.Stderr = out, errw
	// Its own process group, so a timeout reaches whatever the agent started too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	// os/exec sends SIGKILL to the leader this long after Cancel, and stops waiting for pipes a
	// grandchild holds open this long after the leader exits.
	cmd.WaitDelay = a.cfg.KillGrace

	if err := cmd.Start(); err != nil {
		if ctx.Err() != nil {
			return nil, a.stopped(ctx, parent, started, nil, "")
		}
		return nil, &troupe.AgentError{Code: troupe.CodeAgentError, Message: fmt.Sprintf("execagent: starting %s", a.name), Cause: err}
	}
	stopHurry := killOnHurry(ctx, cmd.Process.Pid)
	waitErr := cmd.Wait() // waits for the stdin, stdout and stderr copying goroutines too
	stopHurry()
	// Whatever is left of the group (a child that ignored SIGTERM, a daemon the agent forked)
	// goes with the agent.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	errw.flush()
	if errors.Is(waitErr, exec.ErrWaitDelay) {
		// The agent exited 0 but something it started in the background held its pipes
		// KillGrace longer; that something is killed now, and the answer is judged on its own.
		waitErr = nil
	}

	details := func() map[string]any {
		m := map[string]any{"command": a.cfg.Command}
		if s := errw.tail.String(); s != "" {
			m["stderr_tail"] = s
		}
		if cmd.ProcessState != nil {
			m["exit_code"] = cmd.ProcessState.ExitCode()
		}
		return m
	}
	// What stopped the program first is what the dispatch fails of: its output over the bound
	// (which stopped it), or a timeout or cancellation that came before — a program may dump
	// what it has when told to stop, and that is still a timeout, recoverable, or a cancel.
	if ctx.Err() != nil && !errors.Is(context.Cause(ctx), errTooMuch) {
		return nil, a.stopped(ctx, parent, started, details(), a.quoteTail(errw))
	}
	if out.over {
		return nil, &troupe.AgentError{Code: troupe.CodeInvalidOutput, Details: details(),
			Message: fmt.Sprintf("execagent: %s wrote more than %d bytes to stdout%s", a.name, a.cfg.MaxOutputBytes, a.quoteTail(errw))}
	}
	if waitErr != nil {
		var ee *exec.ExitError
		if !errors.As(waitErr, &ee) {
			return nil, &troupe.AgentError{Code: troupe.CodeAgentError, Recoverable: true, Cause: waitErr, Details: details(),
				Message: fmt.Sprintf("execagent: %s%s", a.name, a.quoteTail(errw))}
		}
		status := "exited with status " + strconv.Itoa(ee.ExitCode())
		recoverable := ee.ExitCode() == ExitTempFail
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			status, recoverable = fmt.Sprintf("was killed by signal %d (%v)", int(ws.Signal()), ws.Signal()), true
		}
		return nil, &troupe.AgentError{Code: troupe.CodeAgentError, Recoverable: recoverable, Details: details(),
			Message: fmt.Sprintf("execagent: %s %s%s", a.name, status, a.quoteTail(errw))}
	}
	res, err := wire.DecodeResult("execagent: "+a.name, out.buf.Bytes(), d, a.cfg.Agents, details(), a.secrets)
	if err != nil {
		var ae *troupe.AgentError
		if errors.As(err, &ae) {
			ae.Message += a.quoteTail(errw)
		}
		return nil, err
	}
	return res, nil
}

// stopped is the error of a dispatch whose context ctx, derived at started from parent, ended:
// TIMEOUT (recoverable) for a deadline, CANCELLED otherwise. The cause, which the error's text
// ends with and callers branch on, says which; the message does not say it again, but names
// the program and, for a timeout, which one stopped it.
func (a *Agent) stopped(ctx, parent context.Context, started time.Time, details map[string]any, tail string) error {
	cause := context.Cause(ctx)
	if !errors.Is(cause, troupe.ErrTimeout) && !errors.Is(cause, context.DeadlineExceeded) {
		return &troupe.AgentError{Code: troupe.CodeCancelled, Cause: cause, Details: details,
			Message: fmt.Sprintf("execagent: %s%s", a.name, tail)}
	}
	within := fmt.Sprintf("its timeout of %v", a.cfg.Timeout)
	// The caller's deadline (the dispatch's timeout_seconds, the run's budget) stopped it if it
	// came first: its own timer's cause is troupe.ErrTimeout itself, and a parent that ended
	// with another came first. A parent ended by now may have ended during the kill grace,
	// after the program's own timeout stopped it.
	if parent.Err() != nil && (cause != troupe.ErrTimeout || context.Cause(parent) == troupe.ErrTimeout && parentFirst(parent, started.Add(a.cfg.Timeout))) {
		within = "its context's deadline"
		if dl, ok := parent.Deadline(); ok {
			within = fmt.Sprintf("%v, %s", max(dl.Sub(started), 0).Round(time.Millisecond), within)
		}
	}
	return &troupe.AgentError{Code: troupe.CodeTimeout, Recoverable: true, Cause: cause, Details: details,
		Message: fmt.Sprintf("execagent: %s did not finish within %s%s", a.name, within, tail)}
}

// parentFirst reports whether parent's deadline came before own: a parent without one
// ended before it.
func parentFirst(parent context.Context, own time.Time) bool {
	dl, ok := parent.Deadline()
	return !ok || dl.Before(own)
}

func (a *Agent) quoteTail(e *stderr) string {
	if s := e.tail.String(); s != "" {
		return "; stderr: " + strings.TrimSpace(s)
	}
	return ""
}

// capped keeps stdout up to max bytes; past that it fails the write, which stops os/exec's
// copying and closes the pipe under the agent, and calls stop, which stops the agent.
type capped struct {
	buf  bytes.Buffer
	max  int
	over bool
	stop func()
}

var errTooMuch = errors.New("execagent: stdout over its bound")

func (c *capped) Write(p []byte) (int, error) {
	if c.buf.Len()+len(p) > c.max {
		if !c.over && c.stop != nil {
			c.stop()
		}
		c.over = true
		return 0, errTooMuch
	}
	return c.buf.Write(p)
}

// stderr splits the agent's stderr into lines, each a progress event (bounded in number and
// length, secrets scrubbed), and keeps its tail for error messages. os/exec calls Write from
// one goroutine that Wait waits for; flush runs after Wait.
type stderr struct {
	d         *troupe.Dispatch
	tail      wire.Tail
	line      []byte // the current line, at most maxLine bytes of it
	n         int    // the current line's full length
	events    int
	dropped   int
	maxEvents int
	maxLine   int
	secrets   *wire.Secrets
}

func (s *stderr) Write(p []byte) (int, error) {
	s.tail.Write(p)
	rest := p
	for len(rest) > 0 {
		i := bytes.IndexByte(rest, '\n')
		chunk := rest
		if i >= 0 {
			chunk = rest[:i]
		}
		s.n += len(chunk)
		if room := s.maxLine - len(s.line); room > 0 {
			s.line = append(s.line, chunk[:min(room, len(chunk))]...)
		}
		if i < 0 {
			break
		}
		s.emit()
		rest = rest[i+1:]
	}
	return len(p), nil
}

func (s *stderr) emit() {
	cut := s.n > len(s.line)
	line := s.secrets.Head(strings.TrimSuffix(string(s.line), "\r"), cut)
	if len(line) > s.maxLine { // "[redacted]" is longer than the secret it replaced
		line, cut = line[:s.maxLine], true
	}
	line = strings.ToValidUTF8(line, "")
	if cut {
		line += "…"
	}
	s.line, s.n = s.line[:0], 0
	if s.events >= s.maxEvents {
		s.dropped++
		return
	}
	s.events++
	s.d.Progress("stderr", line)
}

func (s *stderr) flush() {
	if s.n > 0 {
		s.emit()
	}
	if s.dropped > 0 {
		s.d.Progress("stderr_dropped", s.dropped)
	}
}
