package execagent_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/agent/execagent"
)

// Programs that misbehave as real ones do. Each is a script run by sh; what it writes is
// judged as a whole, never silently changed or passed off as something else.
func TestMisbehavingPrograms(t *testing.T) {
	for _, tc := range []struct {
		name   string
		script string
		code   string // "" means the answer is accepted
		want   string // a substring of the error, or the answer's "text"
	}{
		// A pipe delivers a slow writer's output in pieces; the answer is their sum.
		{"an answer in many slow writes", `cat >/dev/null; for p in '{"agent_' 'result":{"te' 'xt":"whole' '"}}'; do printf '%s' "$p"; sleep 0.02; done`,
			"", "whole"},
		// Latin-1 "café": read as JSON, the é would become U+FFFD unseen.
		{"output that is not UTF-8", `cat >/dev/null; printf '{"agent_result":{"text":"caf\351"}}'`,
			troupe.CodeInvalidOutput, "not UTF-8, as JSON must be: byte 28 is 0xe9"},
		// Filled in as completed, it would fail for want of an agent_result: say what it said.
		{"an error object instead of a result", `cat >/dev/null; echo '{"error":{"message":"quota exceeded","code":"E42"}}'`,
			troupe.CodeInvalidOutput, `answered an error, not a result: "quota exceeded"`},
		{"an error string instead of a result", `cat >/dev/null; echo '{"error":"no such corpus"}'`,
			troupe.CodeInvalidOutput, `answered an error, not a result: "no such corpus"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := newAgent(t, execagent.Config{Command: []string{"sh", "-c", tc.script}}).Run(t.Context(), dispatch("q", nil, &runtime{}))
			if tc.code == "" {
				if err != nil || res.AgentResult["text"] != tc.want {
					t.Fatalf("Run = %+v, %v; want the answer %q", res, err, tc.want)
				}
				return
			}
			if res != nil || err == nil {
				t.Fatalf("Run = %+v, %v; want a failure", res, err)
			}
			if ae := agentError(t, err); ae.Code != tc.code || ae.Recoverable || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q (code %s, recoverable %v); want %s, not recoverable, saying %q", err, ae.Code, ae.Recoverable, tc.code, tc.want)
			}
		})
	}
}

// A program that writes more than MaxOutputBytes and goes on running (it ignores the broken
// pipe, and SIGTERM) fails at once with INVALID_OUTPUT, its whole group killed: it is not
// left to run until the timeout, then reported as a recoverable TIMEOUT that a retry repeats.
func TestOutputOverItsBoundStopsTheProgram(t *testing.T) {
	hold, gone := holdPipe(t)
	a := newAgent(t, execagent.Config{
		Command: []string{"sh", "-c", `trap '' PIPE TERM; exec 3>"$HOLD"; cat >/dev/null; head -c 200000 /dev/zero; sleep 1000 & wait`},
		Env:     []string{"HOLD=" + hold}, MaxOutputBytes: 64 << 10, Timeout: 30 * time.Second, KillGrace: 100 * time.Millisecond})
	_, err := a.Run(t.Context(), dispatch("q", nil, nil))
	if ae := agentError(t, err); ae.Code != troupe.CodeInvalidOutput || ae.Recoverable || !strings.Contains(err.Error(), "more than 65536 bytes to stdout") {
		t.Errorf("error %q (code %s, recoverable %v); want INVALID_OUTPUT for the output over its bound", err, ae.Code, ae.Recoverable)
	}
	if err := gone(); err != nil {
		t.Errorf("after Run returned, a process of the program's group still holds the pipe: %v", err)
	}
}

// A program stopped for its timeout, or because its run was cancelled, that dumps what it has
// as it goes (more than MaxOutputBytes) stopped for the timeout or the cancellation, not for
// its output: what stopped it first is what the dispatch failed of. A TIMEOUT stays recoverable,
// so the run's on_timeout applies, and a cancelled run's dispatch is CANCELLED.
func TestStoppedThenTooMuchOutputIsStillAStop(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cancel bool
		code   string
	}{
		{"timeout", false, troupe.CodeTimeout},
		{"cancelled", true, troupe.CodeCancelled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			timeout := 30 * time.Second
			if !tc.cancel {
				timeout = 300 * time.Millisecond
			}
			a := newAgent(t, execagent.Config{
				Command:        []string{"sh", "-c", `trap 'head -c 200000 /dev/zero; exit 1' TERM; cat >/dev/null; echo up >&2; while :; do sleep 0.01; done`},
				MaxOutputBytes: 1 << 10, Timeout: timeout, KillGrace: 5 * time.Second})
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			if tc.cancel {
				go func() { time.Sleep(300 * time.Millisecond); cancel() }()
			}
			_, err := a.Run(ctx, dispatch("q", nil, &runtime{}))
			if ae := agentError(t, err); ae.Code != tc.code {
				t.Errorf("error %q (code %s); want %s: the program was stopped before it wrote too much", err, ae.Code, tc.code)
			}
		})
	}
}
