package execagent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/agent/execagent"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// runtime is a hand-written DispatchRuntime that records progress.
type runtime struct {
	mu       sync.Mutex
	events   []troupe.Progress
	onEvent  func(p troupe.Progress)
	traceID  string
	noTracer bool
}

func (r *runtime) State(string) (any, bool) { return nil, false }
func (r *runtime) Ask(context.Context, troupe.Question) (troupe.Answer, error) {
	return troupe.Answer{}, troupe.ErrPaused
}
func (r *runtime) Partial(map[string]any) {}
func (r *runtime) Progress(kind string, data any) {
	p := troupe.Progress{Kind: kind, Data: data}
	r.mu.Lock()
	r.events = append(r.events, p)
	r.mu.Unlock()
	if r.onEvent != nil {
		r.onEvent(p)
	}
}
func (r *runtime) TraceID() string { return r.traceID }

func (r *runtime) lines() []troupe.Progress {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]troupe.Progress(nil), r.events...)
}

func dispatch(query string, parsed map[string]any, rt troupe.DispatchRuntime) *troupe.Dispatch {
	d := troupe.NewDispatch()
	d.DispatchID, d.SessionID, d.QueryID = troupe.NewDispatchID(7), "sess_1", "qry_1"
	d.TargetAgent, d.DispatchReason = "counter", "test"
	d.Query, d.ParsedQuery = query, parsed
	if rt != nil {
		d.Bind(rt)
	}
	return d
}

func newAgent(t testing.TB, cfg execagent.Config) *execagent.Agent {
	t.Helper()
	a, err := execagent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// buildGoAgent compiles testdata/goagent into a temporary directory.
func buildGoAgent(t testing.TB, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "goagent")
	out, err := exec.Command("go", "build", "-o", bin, "./testdata/goagent").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func agentError(t *testing.T, err error) *troupe.AgentError {
	t.Helper()
	var ae *troupe.AgentError
	if !errors.As(err, &ae) {
		t.Fatalf("error %v (%T) is not an *troupe.AgentError", err, err)
	}
	return ae
}

func TestAgentsInThreeLanguages(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not installed")
	}
	goBin := buildGoAgent(t, t.TempDir())
	for _, tc := range []struct {
		name     string
		command  []string
		progress string
	}{
		{"go", []string{goBin}, "counting words"},
		{"python", []string{"python3", "testdata/agent.py"}, "python agent got disp_"},
		{"sh", []string{"sh", "testdata/agent.sh"}, "shell agent got disp_"},
		// The smallest agent: it prints only what it knows; the engine-owned fields are filled in.
		{"minimal sh", []string{"sh", "-c", `echo "minimal agent" >&2; printf '{"agent_result":{"words":%d}}' "$(sed 's/.*"query": *"\([^"]*\)".*/\1/' | wc -w)"`}, "minimal agent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := &runtime{traceID: "trace_42"}
			res, err := newAgent(t, execagent.Config{Command: tc.command}).Run(t.Context(), dispatch("three little words", nil, rt))
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != troupe.StatusCompleted || res.DispatchID != troupe.NewDispatchID(7) || res.AgentName != "counter" {
				t.Errorf("result %+v", res)
			}
			if got := res.AgentResult["words"]; got != 3.0 {
				t.Errorf("words = %v, want 3", got)
			}
			if !hasLine(rt.lines(), tc.progress) {
				t.Errorf("progress %v lacks a line starting %q", rt.lines(), tc.progress)
			}
		})
	}
}

func hasLine(ps []troupe.Progress, prefix string) bool {
	for _, p := range ps {
		if s, ok := p.Data.(string); ok && p.Kind == "stderr" && strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}

func TestTraceparentReachesTheProcess(t *testing.T) {
	goBin := buildGoAgent(t, t.TempDir())
	a := newAgent(t, execagent.Config{Command: []string{goBin}})
	one, _ := a.Run(t.Context(), dispatch("x", nil, &runtime{traceID: "trace_42"}))
	two, _ := a.Run(t.Context(), dispatch("x", nil, &runtime{traceID: "trace_43"}))
	none, _ := a.Run(t.Context(), dispatch("x", nil, nil))
	p1, _ := one.AgentResult["trace"].(string)
	p2, _ := two.AgentResult["trace"].(string)
	if len(p1) != 55 || !strings.HasPrefix(p1, "00-") || !strings.HasSuffix(p1, "-01") {
		t.Errorf("TRACEPARENT = %q, not a W3C traceparent", p1)
	}
	if p1[3:35] == p2[3:35] {
		t.Errorf("two runs share a W3C trace id: %q %q", p1, p2)
	}
	if got := none.AgentResult["trace"]; got != "" {
		t.Errorf("outside a run TRACEPARENT = %q, want none", got)
	}
}

func TestFailures(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not installed")
	}
	type want struct {
		Code        string
		Recoverable bool
		Message     []string // substrings
		Exit        any
	}
	py := []string{"python3", "testdata/agent.py"}
	for _, tc := range []struct {
		name    string
		command []string
		mode    string
		cfg     execagent.Config
		want    want
	}{
		{"non-zero exit, with the stderr tail", py, "fail", execagent.Config{},
			want{troupe.CodeAgentError, false, []string{"exited with status 3", "stderr:", "the corpus is missing"}, 3}},
		{"EX_TEMPFAIL is recoverable", py, "tempfail", execagent.Config{},
			want{troupe.CodeAgentError, true, []string{"exited with status 75", "upstream busy"}, execagent.ExitTempFail}},
		{"a result that fails validation", py, "invalid", execagent.Config{},
			want{troupe.CodeInvalidOutput, false, []string{"invalid result", `"confidence": 7 is outside [0, 1]`, "python agent got"}, 0}},
		{"garbage on stdout", []string{"sh", "testdata/garbage.sh"}, "", execagent.Config{},
			want{troupe.CodeInvalidOutput, false, []string{"invalid result", "Traceback"}, 0}},
		{"stdout over its bound", py, "huge", execagent.Config{MaxOutputBytes: 64 << 10},
			want{troupe.CodeInvalidOutput, false, []string{"more than 65536 bytes to stdout"}, nil}},
		{"nothing on stdout", []string{"sh", "-c", "cat >/dev/null"}, "", execagent.Config{},
			want{troupe.CodeInvalidOutput, false, []string{"empty output"}, 0}},
		{"killed by a signal", []string{"sh", "-c", "kill -KILL $$"}, "", execagent.Config{},
			want{troupe.CodeAgentError, true, []string{"was killed by signal 9 (killed)"}, -1}},
		{"no such program", []string{"./testdata/no-such-agent"}, "", execagent.Config{},
			want{troupe.CodeAgentError, false, []string{"starting ./testdata/no-such-agent", "no such file"}, nil}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Command = tc.command
			res, err := newAgent(t, cfg).Run(t.Context(), dispatch("q", map[string]any{"mode": tc.mode}, &runtime{}))
			if res != nil || err == nil {
				t.Fatalf("Run = %+v, %v; want a failure", res, err)
			}
			ae := agentError(t, err)
			got := want{Code: ae.Code, Recoverable: ae.Recoverable, Message: tc.want.Message, Exit: ae.Details["exit_code"]}
			if tc.want.Exit == nil {
				got.Exit = nil
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
			for _, s := range tc.want.Message {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q lacks %q", err, s)
				}
			}
			if tc.want.Code == troupe.CodeInvalidOutput && tc.mode != "huge" && ae.Details["errors"] == nil {
				t.Errorf("invalid output without its decode errors: %v", ae.Details)
			}
		})
	}
}

func TestStderrBecomesBoundedProgress(t *testing.T) {
	for _, tc := range []struct {
		name   string
		script string
		cfg    execagent.Config
		want   []troupe.Progress
	}{
		{"lines, a long one cut, the last without newline", `printf 'one\nabcdefghij\r\nxy' >&2; exit 1`, execagent.Config{MaxLineBytes: 4},
			[]troupe.Progress{{Kind: "stderr", Data: "one"}, {Kind: "stderr", Data: "abcd…"}, {Kind: "stderr", Data: "xy"}}},
		{"too many lines: the rest counted", `for i in 1 2 3 4 5 6; do echo "l$i" >&2; done; exit 1`, execagent.Config{MaxProgress: 2},
			[]troupe.Progress{{Kind: "stderr", Data: "l1"}, {Kind: "stderr", Data: "l2"}, {Kind: "stderr_dropped", Data: 4}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := &runtime{}
			cfg := tc.cfg
			cfg.Command = []string{"sh", "-c", tc.script}
			newAgent(t, cfg).Run(t.Context(), dispatch("q", nil, rt))
			if d := cmp.Diff(tc.want, rt.lines()); d != "" {
				t.Errorf("progress (-want +got):\n%s", d)
			}
		})
	}
}

func TestStderrTailIsBounded(t *testing.T) {
	a := newAgent(t, execagent.Config{Command: []string{"sh", "-c", `for i in $(seq 1 200); do echo "line $i" >&2; done; exit 4`}, StderrTail: 20})
	_, err := a.Run(t.Context(), dispatch("q", nil, nil))
	tail, _ := agentError(t, err).Details["stderr_tail"].(string)
	if !strings.HasSuffix(tail, "line 200\n") || len(tail) > 20+len("…") || !strings.HasPrefix(tail, "…") {
		t.Errorf("stderr tail %q", tail)
	}
}

// A group that ignores SIGTERM — the agent and the child it started — is gone, SIGKILLed, by the
// time Run returns, whether the dispatch timed out or was cancelled.
func TestStopKillsAProcessGroupThatIgnoresSIGTERM(t *testing.T) {
	for _, tc := range []struct {
		name         string
		timeout      time.Duration
		cancelWhenUp bool
		code         string
		recoverable  bool
		cause        error
	}{
		{"timeout", 300 * time.Millisecond, false, troupe.CodeTimeout, true, troupe.ErrTimeout},
		{"cancel", time.Minute, true, troupe.CodeCancelled, false, context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The timeout runs from Run's start: a machine slow to start the agent (the race
			// detector, a loaded CI box) may kill it before it is up, which tests nothing. Such
			// an attempt is made again with twice the timeout.
			for timeout := tc.timeout; ; timeout *= 2 {
				if stopGroup(t, tc.cancelWhenUp, timeout, tc.code, tc.recoverable, tc.cause) {
					return
				}
				if tc.cancelWhenUp || timeout > 10*time.Second {
					t.Fatalf("the agent never got ready (timeout %v)", timeout)
				}
				t.Logf("the agent was not up within %v; trying again with %v", timeout, 2*timeout)
			}
		})
	}
}

// A dispatch stopped by a deadline or a cancellation says once what happened: the message
// names the program and the timeout that stopped it (its own, or its context's), the cause
// says it timed out or was cancelled, and callers branch on the cause with errors.Is.
func TestStoppedSaysWhatHappenedOnce(t *testing.T) {
	for _, tc := range []struct {
		name    string
		timeout time.Duration                                               // Config.Timeout
		ctx     func(context.Context) (context.Context, context.CancelFunc) // the caller's context
		code    string
		cause   error
		want    *regexp.Regexp
	}{
		{"own timeout", 200 * time.Millisecond, context.WithCancel,
			troupe.CodeTimeout, troupe.ErrTimeout,
			regexp.MustCompile(`^troupe: agent error TIMEOUT: execagent: sleep 10 did not finish within its timeout of 200ms: troupe: dispatch timed out$`)},
		{"context's deadline", 0, func(ctx context.Context) (context.Context, context.CancelFunc) {
			return context.WithTimeout(ctx, 200*time.Millisecond)
		},
			troupe.CodeTimeout, context.DeadlineExceeded,
			regexp.MustCompile(`^troupe: agent error TIMEOUT: execagent: sleep 10 did not finish within \d+ms, its context's deadline: context deadline exceeded$`)},
		{"cancelled", 0, func(ctx context.Context) (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(ctx)
			cancel()
			return ctx, cancel
		},
			troupe.CodeCancelled, context.Canceled,
			regexp.MustCompile(`^troupe: agent error CANCELLED: execagent: sleep 10: context canceled$`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newAgent(t, execagent.Config{Command: []string{"sleep", "10"}, Timeout: tc.timeout, KillGrace: 100 * time.Millisecond})
			ctx, cancel := tc.ctx(t.Context())
			defer cancel()
			_, err := a.Run(ctx, dispatch("q", nil, nil))
			if ae := agentError(t, err); ae.Code != tc.code || !errors.Is(err, tc.cause) {
				t.Errorf("error %v: code %s, want %s and errors.Is %v", err, ae.Code, tc.code, tc.cause)
			}
			if !tc.want.MatchString(err.Error()) {
				t.Errorf("error %q\ndoes not match %s", err, tc.want)
			}
		})
	}
}

// stopGroup runs testdata/ignoreterm.sh until it times out or, with cancelWhenUp, until it is
// cancelled once up, and checks the error and that its whole group is gone when Run returns.
// It reports whether the agent was up before it was stopped.
func stopGroup(t *testing.T, cancelWhenUp bool, timeout time.Duration, code string, recoverable bool, cause error) bool {
	t.Helper()
	hold, gone := holdPipe(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	rt := &runtime{onEvent: func(p troupe.Progress) {
		if p.Data == "ready" && cancelWhenUp {
			cancel()
		}
	}}
	a := newAgent(t, execagent.Config{Command: []string{"sh", "testdata/ignoreterm.sh"}, Env: []string{"HOLD=" + hold},
		Timeout: timeout, KillGrace: 100 * time.Millisecond})
	_, err := a.Run(ctx, dispatch("q", nil, rt))
	ae := agentError(t, err)
	if ae.Code != code || ae.Recoverable != recoverable || !errors.Is(err, cause) {
		t.Errorf("error %v: code %s recoverable %v", err, ae.Code, ae.Recoverable)
	}
	if err := gone(); err != nil {
		t.Errorf("after Run returned, a process of the agent's group still holds the pipe: %v", err)
	}
	return hasLine(rt.lines(), "ready")
}

// holdPipe makes a named pipe for an agent's processes to hold open for writing (the path goes
// to them as $HOLD) and opens its read end, before the agent starts so its writers never block.
// gone waits up to 10 s for the read end to reach EOF, which it does once every process that
// held the write end is dead, and says what it read otherwise.
func holdPipe(t *testing.T) (path string, gone func() error) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "hold")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return path, func() error {
		f.SetReadDeadline(time.Now().Add(10 * time.Second))
		if n, err := f.Read(make([]byte, 1)); n != 0 || err != io.EOF {
			return fmt.Errorf("read %d bytes, %v", n, err)
		}
		return nil
	}
}

func TestCancelStopsTheAgent(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not installed")
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	rt := &runtime{onEvent: func(p troupe.Progress) {
		if p.Data == "ready" {
			cancel()
		}
	}}
	a := newAgent(t, execagent.Config{Command: []string{"python3", "testdata/agent.py"}})
	_, err := a.Run(ctx, dispatch("q", map[string]any{"mode": "hang"}, rt))
	if ae := agentError(t, err); ae.Code != troupe.CodeCancelled || !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, code %s", err, ae.Code)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  execagent.Config
		want string
	}{
		{"no command", execagent.Config{}, "Command is empty"},
		{"empty program", execagent.Config{Command: []string{""}}, "Command is empty"},
		{"bad env", execagent.Config{Command: []string{"x"}, Env: []string{"NOEQUALS"}}, `Env[0] "NOEQUALS"`},
		{"negative bound", execagent.Config{Command: []string{"x"}, KillGrace: -1}, "KillGrace is negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := execagent.New(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "execagent: ") {
				t.Errorf("New = %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// One agent value serves concurrent dispatches, each in its own process, from its own Dir.
func TestConcurrentDispatches(t *testing.T) {
	a := newAgent(t, execagent.Config{Command: []string{"sh", "agent.sh"}, Dir: "testdata"})
	var wg sync.WaitGroup
	words := []string{"a", "a b", "a b c", "a b c d", "a b c d e", "a b c d e f"}
	got := make([]any, len(words))
	for i, q := range words {
		wg.Go(func() {
			res, err := a.Run(t.Context(), dispatch(q, nil, &runtime{}))
			if err != nil {
				t.Error(err)
				return
			}
			got[i] = res.AgentResult["words"]
		})
	}
	wg.Wait()
	if d := cmp.Diff([]any{1.0, 2.0, 3.0, 4.0, 5.0, 6.0}, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

// An agent that reports its own failure as a result (status failed, errors) is passed on as
// it is: the failure is the agent's answer, not a protocol error.
func TestAFailedResultIsPassedOn(t *testing.T) {
	script := `cat >/dev/null; printf '{"dispatch_id":"%s","session_id":"s","query_id":"q","agent_name":"%s","status":"failed",` +
		`"errors":[{"code":"RAG_EMPTY","message":"no documents","recoverable":false}],"warnings":[],` +
		`"execution_time_ms":0,"started_at":"2026-01-01T00:00:00Z","completed_at":"2026-01-01T00:00:00Z"}' "$TROUPE_DISPATCH_ID" "$TROUPE_AGENT"`
	res, err := newAgent(t, execagent.Config{Command: []string{"sh", "-c", script}}).Run(t.Context(), dispatch("q", nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	want := []troupe.ErrorInfo{{Code: troupe.CodeRAGEmpty, Message: "no documents"}}
	if d := cmp.Diff(want, res.Errors); d != "" || res.Status != troupe.StatusFailed {
		t.Errorf("status %s, errors (-want +got):\n%s", res.Status, d)
	}
}

// TestEnvValuesAreScrubbed: a program may print a value of Config.Env (a CLI echoing its
// token), whole, JSON-escaped, or cut by the agent's own bounds; none of it reaches the error,
// its details or the progress events.
func TestEnvValuesAreScrubbed(t *testing.T) {
	for _, tc := range []struct {
		name     string
		token    string
		script   string
		cfg      execagent.Config
		piece    int  // when set, no piece of the token this long may survive either
		redacted bool // "[redacted]" must show where the token was
	}{
		{"echoed on stderr", "tok-abcdef123456",
			`cat >/dev/null; echo "auth failed for $TOKEN" >&2; exit 1`, execagent.Config{}, 0, true},
		// The first line is cut at 20 bytes inside the token, the tail's 30 bytes start inside it.
		{"split by the line and tail bounds", "tok-0123456789abcdefghijklmnopqrstuvwxyz",
			`cat >/dev/null; printf 'line: %s\n' "$TOKEN" >&2; printf '%s end\n' "$TOKEN" >&2; exit 1`,
			execagent.Config{MaxLineBytes: 20, StderrTail: 30}, 6, false},
		// Each stderr line is a progress event: every line of the key is scrubbed from its own.
		{"a key of several lines", "-----BEGIN TEST KEY-----\nMIIBVwIBADANBgkqhkiG9w0B\nAQEFAASCAUEwggE9AgEAAkEA\n-----END TEST KEY-----",
			`cat >/dev/null; echo "bad key: $TOKEN" >&2; exit 1`, execagent.Config{}, 0, true},
		{"JSON-escaped in an invalid result", `tok-"quoted"-secret`,
			`cat >/dev/null; printf '{"agent_result":{"echo":"%s"},"confidence":7}' "$(printf '%s' "$TOKEN" | sed 's/"/\\"/g')"`,
			execagent.Config{}, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Command = []string{"sh", "-c", tc.script}
			cfg.Env = []string{"TOKEN=" + tc.token}
			rt := &runtime{}
			_, err := newAgent(t, cfg).Run(t.Context(), dispatch("q", nil, rt))
			if err == nil {
				t.Fatal("want an error")
			}
			ae := agentError(t, err)
			texts := map[string]string{"Error()": err.Error(), "Message": ae.Message}
			if s, ok := ae.Details["stderr_tail"].(string); ok {
				texts["stderr_tail"] = s
			}
			if s, ok := ae.Details["output"].(string); ok {
				// The excerpt is Go-quoted: unquoted, it is what the program printed.
				out, uerr := strconv.Unquote(strings.TrimSuffix(s, "…"))
				if uerr != nil {
					t.Fatalf("output detail %s: %v", s, uerr)
				}
				texts["output"] = out
			}
			for i, p := range rt.lines() {
				texts[fmt.Sprintf("progress %d", i)] = fmt.Sprint(p.Data)
			}
			escaped, _ := json.Marshal(tc.token)
			forbidden := append([]string{tc.token, string(escaped[1 : len(escaped)-1])}, strings.Split(tc.token, "\n")...)
			for i := 0; tc.piece > 0 && i+tc.piece <= len(tc.token); i++ {
				forbidden = append(forbidden, tc.token[i:i+tc.piece])
			}
			all := ""
			for where, text := range texts {
				all += text
				for _, f := range forbidden {
					if strings.Contains(text, f) {
						t.Errorf("%s holds %q: %q", where, f, text)
					}
				}
			}
			if tc.redacted && !strings.Contains(all, "[redacted]") {
				t.Errorf("no [redacted] where the token was: %q", texts)
			}
		})
	}
}

// Output that is not JSON is quoted in the error up to 64 bytes: a secret of the environment
// that the cut falls inside is scrubbed first, so none of it stays.
func TestSecretCutByTheOutputExcerptIsScrubbed(t *testing.T) {
	const token = "ghp_0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	a := newAgent(t, execagent.Config{Command: []string{"sh", "-c", `cat >/dev/null; echo "token $GH_TOKEN rejected"`}, Env: []string{"GH_TOKEN=" + token}})
	_, err := a.Run(t.Context(), dispatch("q", nil, nil))
	ae := agentError(t, err)
	if ae.Code != troupe.CodeInvalidOutput {
		t.Fatalf("error %v, want INVALID_OUTPUT", err)
	}
	for where, text := range map[string]string{"Error()": err.Error(), "details": fmt.Sprint(ae.Details)} {
		if strings.Contains(text, token[:12]) {
			t.Errorf("%s holds the start of the token: %q", where, text)
		}
	}
}

// A secret passed on the command line as well as in the environment is scrubbed from the
// command's name in messages before the name is cut, which would hide the secret's end.
func TestCommandNameIsScrubbedBeforeItIsCut(t *testing.T) {
	const token = "sk-live-abcdefghijklmnopqrstuvwxyz0123456789"
	a := newAgent(t, execagent.Config{Command: []string{"/nonexistent/mycli", "--api-key", token}, Env: []string{"API_KEY=" + token}})
	_, err := a.Run(t.Context(), dispatch("q", nil, nil))
	if err == nil {
		t.Fatal("want an error starting a missing program")
	}
	ae := agentError(t, err)
	for where, text := range map[string]string{"Error()": err.Error(), "Message": ae.Message, "details": fmt.Sprint(ae.Details)} {
		if strings.Contains(text, token[:12]) {
			t.Errorf("%s holds the start of the token: %q", where, text)
		}
	}
	if !strings.Contains(ae.Message, "mycli --api-key [redacted]") {
		t.Errorf("message %q does not name the command with the token redacted", ae.Message)
	}
}

func TestAlreadyCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := newAgent(t, execagent.Config{Command: []string{"sh", "testdata/agent.sh"}}).Run(ctx, dispatch("q", nil, nil))
	if ae := agentError(t, err); ae.Code != troupe.CodeCancelled || !errors.Is(err, context.Canceled) {
		t.Errorf("Run = %v", err)
	}
}

// An agent that answers and exits 0 while a child it started in the background still holds its
// stdout and stderr (a shell's "cmd &") succeeds with its answer, and the child is gone when Run
// returns.
func TestAnswerWithABackgroundChildStillRunning(t *testing.T) {
	hold, gone := holdPipe(t)
	a := newAgent(t, execagent.Config{Command: []string{"sh", "-c", `exec 3>"$HOLD"; cat >/dev/null; sleep 1000 & echo '{"agent_result":{"ok":true}}'`},
		Env: []string{"HOLD=" + hold}, KillGrace: 100 * time.Millisecond})
	res, err := a.Run(t.Context(), dispatch("q", nil, nil))
	if err != nil || res.AgentResult["ok"] != true {
		t.Fatalf("Run = %+v, %v; want the answer", res, err)
	}
	if err := gone(); err != nil {
		t.Errorf("after Run returned, the agent's background child still holds the pipe: %v", err)
	}
}

// An INVALID_OUTPUT error says what was wrong once: the message names the command and the
// problem, and the error's text does not repeat it through the cause.
func TestInvalidOutputSaysItsCauseOnce(t *testing.T) {
	for _, tc := range []struct {
		name, script, problem string
	}{
		{"one problem", `cat >/dev/null; echo '{"agent_result":{"n":1},"confidence":7}'`, `"confidence": 7 is outside [0, 1]`},
		{"two problems", `cat >/dev/null; echo '{"agent_result":{"n":1},"confidence":7,"status":"bogus"}'`, `is not one of`},
		{"not JSON", `cat >/dev/null; echo 'Traceback (most recent call last)'`, "invalid character"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := newAgent(t, execagent.Config{Command: []string{"sh", "-c", tc.script}}).Run(t.Context(), dispatch("q", nil, &runtime{}))
			ae := agentError(t, err)
			msg := err.Error()
			if ae.Code != troupe.CodeInvalidOutput || !strings.Contains(msg, "sh -c") || !strings.Contains(msg, tc.problem) {
				t.Fatalf("error %q: want INVALID_OUTPUT naming the command and %q", msg, tc.problem)
			}
			if n := strings.Count(msg, tc.problem); n != 1 {
				t.Errorf("error %q says %q %d times, want once", msg, tc.problem, n)
			}
			if !errors.Is(err, troupe.ErrInvalidResult) {
				t.Errorf("error %q does not match troupe.ErrInvalidResult", msg)
			}
		})
	}
}

// Closing a hurry channel ends the kill grace of a cancelled agent at once: its group, which
// ignores SIGTERM, is SIGKILLed long before KillGrace, whether the channel closes after the
// cancellation or before it, and whatever WithHurry it is under.
func TestHurryEndsTheKillGrace(t *testing.T) {
	for _, tc := range []struct {
		name  string
		early bool // the channel is closed before the dispatch is cancelled
		inner bool // under another WithHurry whose channel stays open
	}{
		{"after the cancellation", false, false},
		{"before the cancellation", true, false},
		{"under an inner WithHurry", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hold, gone := holdPipe(t)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			hurry := make(chan struct{})
			ctx = execagent.WithHurry(ctx, hurry)
			if tc.inner {
				ctx = execagent.WithHurry(ctx, make(chan struct{}))
			}
			if tc.early {
				close(hurry)
			}
			pgid := make(chan int, 1)
			rt := &runtime{onEvent: func(p troupe.Progress) {
				s, _ := p.Data.(string)
				if n, err := strconv.Atoi(strings.TrimPrefix(s, "pgid ")); err == nil {
					pgid <- n
					cancel()
					if !tc.early {
						close(hurry)
					}
				}
			}}
			const grace = time.Minute
			a := newAgent(t, execagent.Config{Command: []string{"sh", "-c",
				`trap '' TERM; exec 3>"$HOLD"; sleep 1000 & echo "pgid $$" >&2; while :; do wait; done`},
				Env: []string{"HOLD=" + hold}, KillGrace: grace})
			errc := make(chan error, 1)
			start := time.Now()
			go func() {
				_, err := a.Run(ctx, dispatch("q", nil, rt))
				errc <- err
			}()
			var err error
			select {
			case err = <-errc:
			case <-time.After(10 * time.Second):
				// Not hurried: end the wait for the grace here, so the test does not take a minute.
				select {
				case g := <-pgid:
					_ = syscall.Kill(-g, syscall.SIGKILL)
				default:
				}
				err = <-errc
				t.Errorf("Run returned only after %v, the hurry channel closed; KillGrace is %v", time.Since(start).Round(time.Millisecond), grace)
			}
			if ae := agentError(t, err); ae.Code != troupe.CodeCancelled || !errors.Is(err, context.Canceled) {
				t.Errorf("error %v, code %s", err, ae.Code)
			}
			if err := gone(); err != nil {
				t.Errorf("after Run returned, a process of the agent's group still holds the pipe: %v", err)
			}
		})
	}
}

// A closed hurry channel does nothing until the dispatch is stopped: the agent answers.
func TestHurryAloneStopsNothing(t *testing.T) {
	hurry := make(chan struct{})
	close(hurry)
	a := newAgent(t, execagent.Config{Command: []string{"sh", "testdata/agent.sh"}})
	res, err := a.Run(execagent.WithHurry(t.Context(), hurry), dispatch("how many words", nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != troupe.StatusCompleted {
		t.Errorf("status %s, want completed", res.Status)
	}
}

// A program stopped by its own timeout that takes its kill grace to die is reported stopped by
// that timeout, though its context's later deadline has passed by the time it is gone: the
// message names the bound to raise.
func TestStoppedNamesTheBoundThatFiredFirst(t *testing.T) {
	a := newAgent(t, execagent.Config{Command: []string{"sh", "-c", "trap '' TERM; while :; do sleep 0.05; done"},
		Timeout: 200 * time.Millisecond, KillGrace: 600 * time.Millisecond})
	ctx, cancel := context.WithTimeout(t.Context(), 400*time.Millisecond)
	defer cancel()
	_, err := a.Run(ctx, dispatch("q", nil, nil))
	if ae := agentError(t, err); ae.Code != troupe.CodeTimeout || !errors.Is(err, troupe.ErrTimeout) {
		t.Errorf("error %v: code %s, want TIMEOUT matching troupe.ErrTimeout", err, ae.Code)
	}
	if !strings.Contains(err.Error(), "did not finish within its timeout of 200ms") {
		t.Errorf("error %q, want it to name its own timeout of 200ms, which fired first", err)
	}
}

// A failure the program reports on stdout, quoting a value of Config.Env, is recorded with the
// value redacted, as the same words on stderr are; so are its warnings and summary.
func TestEnvValuesScrubbedFromReportedFailure(t *testing.T) {
	a, err := execagent.New(execagent.Config{Env: []string{"DB_URL=postgres://app:s3cretpw@db/x"},
		Command: []string{"sh", "-c", `cat >/dev/null; printf '{"status":"failed","agent_result":{"dsn":"%s"},"analysis_summary":"tried %s","warnings":["slow %s"],"errors":[{"code":"AGENT_ERROR","message":"cannot connect to %s","recoverable":false,"details":{"dsn":"%s"}}]}' "$DB_URL" "$DB_URL" "$DB_URL" "$DB_URL" "$DB_URL"`}})
	if err != nil {
		t.Fatal(err)
	}
	d := troupe.NewDispatch()
	d.DispatchID, d.SessionID, d.QueryID, d.TargetAgent = troupe.NewDispatchID(1), "s", "q", "db"
	res, err := a.Run(t.Context(), d)
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(res.Errors, res.Warnings, *res.AnalysisSummary, res.AgentResult)
	if strings.Contains(got, "s3cretpw") || strings.Count(got, "[redacted]") != 5 {
		t.Errorf("the reported failure records %s; want the DB_URL value redacted in all five places", got)
	}
}
