package mcptool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/agent/internal/wire"
)

// DefaultCallTimeout bounds a tool call when Config.CallTimeout is zero.
const DefaultCallTimeout = time.Minute

// DefaultMaxResultBytes bounds a tool's result when Config.MaxResultBytes is zero: 16 MiB, the
// go-sdk's frame limit over stdio.
const DefaultMaxResultBytes = 16 << 20

// Config says how to reach one MCP server: exactly one of Command (stdio), URL (streamable
// HTTP) or Transport.
type Config struct {
	// Command runs the server as a subprocess speaking MCP over stdin and stdout: the program
	// and its arguments. Env is added to the inherited environment; Dir is its working
	// directory. A server that exits before it answers, or dies during a call, fails Connect or
	// the call with an error that names the command, says its exit status (or signal) and
	// quotes the end of its stderr, which is read for that only. Every value of Env of at
	// least 4 bytes may be a secret (a token): it is replaced by "[redacted]" where errors
	// quote the command or its stderr.
	Command []string
	Env     []string
	Dir     string
	// StopTimeout is how long Close waits, after closing a stdio server's stdin, for it to
	// exit before terminating it; 0 means 5 seconds.
	StopTimeout time.Duration

	// URL is a streamable HTTP endpoint ("http://127.0.0.1:3001/mcp"), reached with
	// HTTPClient (nil means http.DefaultClient).
	URL        string
	HTTPClient *http.Client

	// Transport is any MCP transport, for in-process servers and tests. A lost session is
	// re-established by connecting it again, which an in-memory transport cannot do.
	Transport mcp.Transport

	// Include, when not empty, keeps only the tools it names (as the server names them); a
	// name the server does not offer is an error of Connect.
	Include []string
	// Prefix is put before every tool's name as offered to agents ("fs_" makes the server's
	// read_text_file fs_read_text_file), so tools of several servers can be offered together.
	// The server is called with its own names. Tool and Include take the server's names.
	Prefix string
	// CallTimeout bounds each tool call; 0 means DefaultCallTimeout.
	CallTimeout time.Duration
	// ClientName is how troupe introduces itself to the server; "" means "troupe".
	ClientName string
	// MaxResultBytes bounds a tool's result as Call returns it (its JSON encoding) and as
	// Agent's agent_result, and the text of a result flagged isError, which a *ToolError
	// would carry; a larger one is a *ResultTooLargeError. 0 means
	// DefaultMaxResultBytes; negative is an error of Connect. Over streamable HTTP it also
	// bounds what is read of the server's responses: a JSON body, or one event of an SSE
	// stream, may be at most twice MaxResultBytes plus 64 KiB (a result's structured content
	// comes with a copy as text), and the call that receives more fails without reading it.
	MaxResultBytes int64
}

// Client is a connected MCP server and the tools it offers. Its methods are safe for
// concurrent use, Close too. Close ends the session (and stops a stdio server's process); a
// Client must be closed.
//
// A session lost while the Client is open — the server crashed, or the connection dropped —
// is started or dialled again by the next call that finds it closed: the call that was in
// flight when it was lost fails, the calls after it reach a new session (a new process, for a
// stdio server). A call finds the session closed before its request is sent, so it is sent
// once, to the new session.
type Client struct {
	cfg     Config // validated: what a lost session is re-established with
	tools   []*Tool
	timeout time.Duration

	swap   chan struct{} // held (one slot) while the session is replaced or closed
	done   chan struct{} // closed by Close: calls waiting for swap give up
	mu     sync.Mutex    // guards sess, closed and abort
	sess   *session
	closed bool
	abort  context.CancelCauseFunc // ends the reconnect in flight, if any: Close does not wait for a server to answer

	// stopped is closed by the Close that closed the session, once it has; closeErr, written
	// before, is its result, which every other Close waits for and returns.
	stopped  chan struct{}
	closeErr error
}

// session is one connection to the server.
type session struct {
	cs   *mcp.ClientSession
	conn *stdioConn  // a stdio server's connection, which knows how its process ended; nil for others
	lost atomic.Bool // a call found it closed
}

// ErrClosed is the error, matched with errors.Is, of a call made on a Client after Close, or
// in flight as it closed (a reconnect Close aborted among them): no retry can pass. Call puts
// the package and the tool's name before it; Agent makes it an AGENT_ERROR that is not
// recoverable.
var ErrClosed = errors.New("the client is closed")

// Connect starts or dials the server, initializes the session and lists the server's tools.
// ctx bounds the connection and listing only, not the session.
func Connect(ctx context.Context, cfg Config) (*Client, error) {
	if _, err := transport(cfg); err != nil {
		return nil, err
	}
	if cfg.CallTimeout < 0 || cfg.StopTimeout < 0 {
		return nil, fmt.Errorf("mcptool: config: negative timeout (call_timeout %v, stop_timeout %v)", cfg.CallTimeout, cfg.StopTimeout)
	}
	if cfg.CallTimeout == 0 {
		cfg.CallTimeout = DefaultCallTimeout
	}
	if cfg.MaxResultBytes < 0 {
		return nil, fmt.Errorf("mcptool: config: negative max_result_bytes %d", cfg.MaxResultBytes)
	}
	if cfg.MaxResultBytes == 0 {
		cfg.MaxResultBytes = DefaultMaxResultBytes
	}
	cfg.Command, cfg.Env, cfg.Include = slices.Clone(cfg.Command), slices.Clone(cfg.Env), slices.Clone(cfg.Include)
	s, err := dial(ctx, cfg)
	if err != nil {
		return nil, err
	}
	cs := s.cs
	c := &Client{cfg: cfg, sess: s, timeout: cfg.CallTimeout, swap: make(chan struct{}, 1), done: make(chan struct{}), stopped: make(chan struct{})}
	var offered []string // every tool the server lists, included or not
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			cs.Close()
			return nil, fmt.Errorf("mcptool: %s: list tools: %w%s", describe(cfg), scrub(cfg, err), s.news())
		}
		offered = append(offered, tool.Name)
		if len(cfg.Include) > 0 && !slices.Contains(cfg.Include, tool.Name) {
			continue
		}
		schema, err := json.Marshal(tool.InputSchema)
		if err != nil || tool.InputSchema == nil {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		desc := tool.Description
		if desc == "" {
			desc = tool.Title
		}
		c.tools = append(c.tools, &Tool{c: c, name: tool.Name, info: troupe.ToolInfo{Name: cfg.Prefix + tool.Name, Description: desc, InputSchema: schema}})
	}
	for _, want := range cfg.Include {
		if _, ok := c.Tool(want); !ok {
			cs.Close()
			return nil, fmt.Errorf("mcptool: %s: no tool named %q (offered: %s)", describe(cfg), want, strings.Join(offered, ", "))
		}
	}
	return c, nil
}

// dial starts or dials the server and initializes a session; ctx bounds that only. A stdio
// server that fails to is stopped, and the error says how it ended, if it exited of itself,
// and what its stderr ended with.
func dial(ctx context.Context, cfg Config) (*session, error) {
	t, err := transport(cfg)
	if err != nil {
		return nil, err
	}
	name := cfg.ClientName
	if name == "" {
		name = "troupe"
	}
	client := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, nil)
	cs, err := client.Connect(ctx, t, nil)
	var conn *stdioConn
	if st, ok := t.(*stdioTransport); ok {
		conn = st.conn // nil if the command did not start
	}
	s := &session{cs: cs, conn: conn}
	givenUp := false
	if conn != nil && !conn.started() {
		// ctx ended as the session was being made: the server was killed (see started), and
		// the caller has given up on it. What the go-sdk saw of the kill (the pipe's EOF, as
		// it read the answer to initialize) and how the server ended (by our SIGKILL) are
		// consequences, not news: the error is the context's.
		givenUp = true
		if err == nil {
			_ = cs.Close()
		}
		err = context.Cause(ctx)
	}
	if err != nil {
		if conn != nil {
			_ = conn.Close() // the go-sdk has closed it, or is closing it: this waits for that
		}
		news := ""
		if !givenUp {
			news = s.news()
		}
		return nil, fmt.Errorf("mcptool: connect to %s: %w%s", describe(cfg), scrub(cfg, err), news)
	}
	return s, nil
}

// news is what an error of a closed session adds of its stdio server: how it ended, when it
// exited of itself, and what its stderr ended with ("; the server exited with status 1;
// stderr: …"); "" for other transports.
func (s *session) news() string {
	if s.conn == nil {
		return ""
	}
	status, stderr := s.conn.ending(0)
	return news("the server", status, stderr)
}

// current returns the session calls go to: the open one, or, once a call found it lost, a new
// one, which it connects with ctx first. One caller at a time replaces a lost session; the
// others wait for it (or for ctx, or Close). Close aborts the reconnect: the call fails with
// ErrClosed.
func (c *Client) current(ctx context.Context) (*session, error) {
	c.mu.Lock()
	s, closed := c.sess, c.closed
	c.mu.Unlock()
	switch {
	case closed:
		return nil, ErrClosed
	case !s.lost.Load():
		return s, nil
	}
	select {
	case c.swap <- struct{}{}:
	case <-c.done:
		return nil, ErrClosed
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	defer func() { <-c.swap }()
	ctx, abort := context.WithCancelCause(ctx)
	defer abort(nil)
	c.mu.Lock()
	s, closed = c.sess, c.closed
	if !closed {
		c.abort = abort
	}
	c.mu.Unlock()
	switch {
	case closed:
		return nil, ErrClosed
	case !s.lost.Load():
		return s, nil // another call replaced it
	}
	// What is left of the lost session goes first: its process waited for, its group killed.
	// Its error (the exit status of a server that crashed) was the failed call's news.
	_ = s.cs.Close()
	n, err := dial(ctx, c.cfg)
	c.mu.Lock()
	c.abort = nil
	closed = c.closed
	if err == nil && !closed {
		c.sess = n
	}
	c.mu.Unlock()
	switch {
	case closed:
		// Close came first, and waits for swap: a server that answered after all is stopped
		// before it returns.
		if err == nil {
			_ = n.cs.Close()
		}
		return nil, ErrClosed
	case err != nil:
		return nil, fmt.Errorf("the session was lost, and reconnecting failed: %w", err)
	}
	return n, nil
}

func transport(cfg Config) (mcp.Transport, error) {
	n := 0
	for _, set := range []bool{len(cfg.Command) > 0, cfg.URL != "", cfg.Transport != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		return nil, errors.New("mcptool: config: set exactly one of command, url and transport")
	}
	switch {
	case len(cfg.Command) > 0:
		return newStdioTransport(cfg), nil
	case cfg.URL != "":
		if !strings.HasPrefix(cfg.URL, "http://") && !strings.HasPrefix(cfg.URL, "https://") {
			return nil, fmt.Errorf("mcptool: config: url %q is not an http or https URL", describe(cfg))
		}
		return httpTransport(cfg), nil
	default:
		return cfg.Transport, nil
	}
}

func describe(cfg Config) string {
	switch {
	case len(cfg.Command) > 0:
		return "command " + wire.CommandName(cfg.Command, wire.EnvSecrets(cfg.Env), 64)
	case cfg.URL != "":
		shown, _ := shownURL(cfg.URL)
		return shown
	default:
		return "transport"
	}
}

// shownURL returns an HTTP server's URL as messages quote it, a password and secret query
// values masked (wire.ShownURL), and those values, which the go-sdk's errors may quote as it
// sent them. A URL that does not parse is quoted as "the url".
func shownURL(raw string) (string, *wire.Secrets) {
	u, err := url.Parse(raw)
	if err != nil {
		return "the url", nil
	}
	shown, secrets := wire.ShownURL(u)
	return shown, wire.NewSecrets(secrets...)
}

// scrub returns err with the secrets of an HTTP server's URL scrubbed from its text (the
// go-sdk's errors quote the URL it posted to); err itself when it quotes none.
func scrub(cfg Config, err error) error {
	if cfg.URL == "" || err == nil {
		return err
	}
	_, secrets := shownURL(cfg.URL)
	if msg := secrets.String(err.Error()); msg != err.Error() {
		return &scrubbed{msg: msg, err: err}
	}
	return err
}

// scrubbed is an error whose text had secrets scrubbed from it. It unwraps to the error it
// was made of, so errors.Is and errors.As still find a deadline or ErrClosed in it; what a run
// records of it is its text.
type scrubbed struct {
	msg string
	err error
}

func (e *scrubbed) Error() string { return e.msg }
func (e *scrubbed) Unwrap() error { return e.err }

// Names returns the names the server calls its tools (without Config.Prefix), in the order
// it listed them: the names Tool takes.
func (c *Client) Names() []string {
	out := make([]string, len(c.tools))
	for i, t := range c.tools {
		out[i] = t.name
	}
	return out
}

// Tools returns the server's tools, in the order it listed them, as troupe tools an LLM agent
// can be given.
func (c *Client) Tools() []troupe.Tool {
	out := make([]troupe.Tool, len(c.tools))
	for i, t := range c.tools {
		out[i] = t
	}
	return out
}

// Tool returns the tool the server calls name.
func (c *Client) Tool(name string) (*Tool, bool) {
	for _, t := range c.tools {
		if t.name == name {
			return t, true
		}
	}
	return nil, false
}

// Close ends the session; for a stdio server it closes the process's stdin and waits for it to
// exit (terminating it if it does not), then kills whatever is left of its process group. A
// session being re-established is not waited for: the reconnect is aborted, the server it
// started stopped as any other. Calls in flight or after Close fail with ErrClosed.
//
// Close may be called more than once, from several goroutines at once: the first call stops
// the server, and every call returns once it is stopped, with the first call's result.
func (c *Client) Close() error {
	c.mu.Lock()
	first := !c.closed
	abort := c.abort
	if first {
		c.closed = true
		close(c.done)
	}
	c.mu.Unlock()
	if !first {
		<-c.stopped
		return c.closeErr
	}
	defer close(c.stopped)
	if abort != nil {
		abort(ErrClosed)
	}
	c.closeErr = c.stop()
	return c.closeErr
}

// stop closes the session, once no reconnect is replacing it: the one Close aborted lets go of
// swap when it has stopped the server it started.
func (c *Client) stop() error {
	c.swap <- struct{}{}
	defer func() { <-c.swap }()
	c.mu.Lock()
	s := c.sess
	c.mu.Unlock()
	// Read before closing: a call that finds the session closed under it marks it lost.
	lost := s.lost.Load()
	err := s.cs.Close()
	if lost {
		return nil // its error (a crashed server's exit status) was the failed call's news
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) && !ee.Exited() {
		return nil // a server that ignored its closed stdin was terminated, as Close promises
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("mcptool: close %s: %w%s", describe(c.cfg), scrub(c.cfg, err), s.news())
	}
	return nil
}

func (c *Client) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// Tool is one tool of an MCP server. It implements troupe.Tool and is safe for concurrent use.
type Tool struct {
	c    *Client
	name string // the server's name for it
	info troupe.ToolInfo
}

var _ troupe.Tool = (*Tool)(nil)

// Info returns the tool's name, description and input schema as the server listed them.
func (t *Tool) Info() troupe.ToolInfo { return t.info }

// ResultTooLargeError is a result over Config.MaxResultBytes. It is not recoverable: the same
// call returns the same result. Its zero value is not meaningful.
type ResultTooLargeError struct {
	Tool string // as offered to agents
	// Size is the result's encoded size; when the server's response was cut off before its
	// end (over streamable HTTP), Size is 0 and Read says how much was read.
	Size  int64
	Read  int64
	Limit int64 // Config.MaxResultBytes

	broke bool // cutting the response off broke the session
}

func (e *ResultTooLargeError) Error() string {
	if e.Size > 0 {
		return fmt.Sprintf("mcptool: %s: the result is %d bytes, over the bound of %d bytes (max_result_bytes)", e.Tool, e.Size, e.Limit)
	}
	return fmt.Sprintf("mcptool: %s: the server's response was cut off after %d bytes, over what a result bounded at %d bytes (max_result_bytes) may take", e.Tool, e.Read, e.Limit)
}

// ToolError is a tool's own report of failure (a result with isError set): the model may
// correct its arguments and call again.
type ToolError struct {
	Tool    string
	Message string
}

func (e *ToolError) Error() string { return "mcptool: " + e.Tool + ": " + e.Message }

// Call invokes the tool with args (a JSON object; empty means {}). It returns the tool's
// structured content when it has any, else its text content as a JSON string when every part
// is text, else its content parts as a JSON array. A result flagged isError is a *ToolError.
func (t *Tool) Call(ctx context.Context, _ *troupe.Dispatch, args json.RawMessage) (json.RawMessage, error) {
	res, err := t.call(ctx, args)
	if err != nil {
		var te *ToolError
		var big *ResultTooLargeError
		if errors.As(err, &te) || errors.As(err, &big) {
			return nil, err
		}
		return nil, fmt.Errorf("mcptool: %s: %w", t.info.Name, scrub(t.c.cfg, err))
	}
	var out json.RawMessage
	switch text, ok := textOf(res); {
	case res.StructuredContent != nil:
		out, err = json.Marshal(res.StructuredContent)
	case ok:
		out, err = json.Marshal(text)
	default:
		out, err = json.Marshal(res.Content)
	}
	if err != nil {
		return nil, fmt.Errorf("mcptool: %s: encode the result: %w", t.info.Name, err)
	}
	if err := t.bound(len(out)); err != nil {
		return nil, err
	}
	return out, nil
}

// bound refuses a result of size bytes over Config.MaxResultBytes.
func (t *Tool) bound(size int) error {
	if limit := t.c.cfg.MaxResultBytes; int64(size) > limit {
		return &ResultTooLargeError{Tool: t.info.Name, Size: int64(size), Limit: limit}
	}
	return nil
}

// call invokes the tool. Its errors but a *ToolError do not name the tool: the callers do.
func (t *Tool) call(ctx context.Context, args json.RawMessage) (*mcp.CallToolResult, error) {
	var in map[string]any
	if len(args) > 0 {
		if err := json.Unmarshal(args, &in); err != nil || in == nil {
			if err == nil {
				err = errors.New("got null") // empty arguments mean {}; null is not an object
			}
			return nil, fmt.Errorf("arguments are not a JSON object: %w", err)
		}
	}
	if in == nil {
		in = map[string]any{}
	}
	ctx, cancel := context.WithTimeout(ctx, t.c.timeout)
	defer cancel()
	// Over streamable HTTP a response cut off at the bound cancels the call with a
	// *ResultTooLargeError as the cause, which is the call's error.
	ctx, cut := context.WithCancelCause(ctx)
	defer cut(nil)
	ctx = context.WithValue(ctx, cutKey{}, cut)
	var res *mcp.CallToolResult
	for retried := false; ; retried = true {
		s, err := t.c.current(ctx)
		if err != nil {
			return nil, err
		}
		res, err = s.cs.CallTool(ctx, &mcp.CallToolParams{Name: t.name, Arguments: in})
		var big *ResultTooLargeError
		if err != nil && errors.As(context.Cause(ctx), &big) {
			if big.broke {
				s.lost.Store(true) // the next call reaches a new session
			}
			e := *big // a copy: the go-sdk may still be formatting the one the body returned
			e.Tool = t.info.Name
			return nil, &e
		}
		if errors.Is(err, mcp.ErrConnectionClosed) {
			// The session was lost (the server exited, the connection dropped) before this
			// call was sent: it goes, once, to a new session. Or Close closed it.
			s.lost.Store(true)
			if !retried && ctx.Err() == nil {
				continue
			}
			if t.c.isClosed() {
				return nil, ErrClosed
			}
		}
		if err != nil {
			if s.conn != nil && s.conn.hungUp.Load() {
				s.lost.Store(true) // the server is gone: the next call starts it again
			}
			return nil, s.explain(err)
		}
		break
	}
	if res.IsError {
		msg, ok := textOf(res)
		if !ok {
			b, _ := json.Marshal(res.Content)
			msg = string(b)
		}
		if strings.TrimSpace(msg) == "" {
			msg = "the tool reported an error without saying what"
		}
		if err := t.bound(len(msg)); err != nil {
			// An error is a result too (isError), bound as one: its whole text would reach
			// the caller, and a model, however long.
			return nil, err
		}
		return nil, &ToolError{Tool: t.info.Name, Message: msg}
	}
	return res, nil
}

// textOf joins the text parts of a result, reporting whether every part was text.
func textOf(res *mcp.CallToolResult) (string, bool) {
	parts := make([]string, 0, len(res.Content))
	for _, c := range res.Content {
		tc, ok := c.(*mcp.TextContent)
		if !ok {
			return "", false
		}
		parts = append(parts, tc.Text)
	}
	return strings.Join(parts, "\n"), true
}

// Agent uses one MCP tool directly as an agent. The arguments are the dispatch's
// user_context["arguments"] when it is a JSON object, else its parsed_query. The result's
// agent_result is the tool's structured content when it is an object, else {"text": ...}
// for text content, else {"content": [...]}. A tool's own error fails the dispatch with code
// AGENT_ERROR (not recoverable: the same arguments fail the same way); a lost session is a
// recoverable AGENT_ERROR (the next call reaches a new session), a call that outlasts
// CallTimeout or the dispatch's deadline a recoverable TIMEOUT, and a call on a closed Client
// an AGENT_ERROR that is not recoverable, its cause ErrClosed.
func Agent(t *Tool) troupe.Agent {
	return troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		args, err := arguments(d)
		if err != nil {
			return nil, &troupe.AgentError{Code: troupe.CodeInvalidInput, Message: err.Error()}
		}
		res, err := t.call(ctx, args)
		if err != nil {
			err = scrub(t.c.cfg, err) // the go-sdk's errors quote the URL it posted to, as Call's do
			var te *ToolError
			if errors.As(err, &te) {
				return nil, &troupe.AgentError{Code: troupe.CodeAgentError, Message: err.Error()}
			}
			var big *ResultTooLargeError
			if errors.As(err, &big) {
				return nil, &troupe.AgentError{Code: troupe.CodeInvalidOutput, Message: err.Error()}
			}
			msg := "mcptool: " + t.info.Name
			if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return nil, fmt.Errorf("%s: %w", msg, err)
			}
			if errors.Is(err, ErrClosed) {
				// Every call after Close fails the same way: retrying cannot help.
				return nil, &troupe.AgentError{Code: troupe.CodeAgentError, Message: msg, Cause: err}
			}
			if errors.Is(err, context.DeadlineExceeded) {
				// CallTimeout or the dispatch's deadline: a TIMEOUT, as the other adapters say,
				// so that the error policy's on_timeout applies.
				return nil, &troupe.AgentError{Code: troupe.CodeTimeout, Message: msg, Recoverable: true, Cause: fmt.Errorf("%w: %w", err, troupe.ErrTimeout)}
			}
			// A lost session among them: the next call reaches a new one.
			return nil, &troupe.AgentError{Code: troupe.CodeAgentError, Message: msg, Recoverable: true, Cause: err}
		}
		out := map[string]any{}
		summary := ""
		if m, ok := res.StructuredContent.(map[string]any); ok {
			out = m
			b, _ := json.Marshal(m)
			summary = string(b)
		} else if text, ok := textOf(res); ok {
			out["text"], summary = text, text
		} else {
			b, _ := json.Marshal(res.Content)
			var parts []any
			_ = json.Unmarshal(b, &parts)
			out["content"] = parts
			summary = fmt.Sprintf("%s returned %d content parts", t.info.Name, len(parts))
		}
		b, err := json.Marshal(out)
		if err != nil {
			return nil, &troupe.AgentError{Code: troupe.CodeInvalidOutput, Message: fmt.Sprintf("mcptool: %s: encode the result: %v", t.info.Name, err)}
		}
		if err := t.bound(len(b)); err != nil {
			return nil, &troupe.AgentError{Code: troupe.CodeInvalidOutput, Message: err.Error()}
		}
		if r := []rune(summary); len(r) > 200 {
			summary = string(r[:199]) + "…"
		}
		return &troupe.Result{AgentResult: out, AnalysisSummary: &summary}, nil
	})
}

func arguments(d *troupe.Dispatch) (json.RawMessage, error) {
	if v, ok := d.UserContext["arguments"]; ok {
		if _, isObj := v.(map[string]any); !isObj {
			return nil, fmt.Errorf("mcptool: user_context.arguments is %T, want a JSON object", v)
		}
		return json.Marshal(v)
	}
	if d.ParsedQuery == nil {
		return nil, nil // no arguments: {}
	}
	return json.Marshal(d.ParsedQuery)
}
