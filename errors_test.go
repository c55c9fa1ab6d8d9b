package troupe_test

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/troupehq/troupe"
)

func TestOrchestrationErrorChain(t *testing.T) {
	agentErr := &troupe.AgentError{Code: troupe.CodeRAGEmpty, Message: "no content", Recoverable: true, FallbackAction: "suggest related topics"}
	oe := &troupe.OrchestrationError{
		Stage:       troupe.StageExecute,
		Message:     "dispatch to explainer failed",
		Context:     troupe.NewContext("trace-42", "demo"),
		Cause:       fmt.Errorf("attempt 3: %w", agentErr),
		Recoverable: true,
	}
	wrapped := fmt.Errorf("engine: %w", oe)

	t.Run("errors.Is through Cause", func(t *testing.T) {
		timeout := &troupe.OrchestrationError{Stage: troupe.StageExecute, Cause: fmt.Errorf("x: %w", troupe.ErrTimeout)}
		if !errors.Is(fmt.Errorf("w: %w", timeout), troupe.ErrTimeout) {
			t.Error("errors.Is(…, ErrTimeout) = false")
		}
		if errors.Is(wrapped, troupe.ErrTimeout) {
			t.Error("errors.Is matched a sentinel that is not in the chain")
		}
	})
	t.Run("errors.As finds the OrchestrationError", func(t *testing.T) {
		var got *troupe.OrchestrationError
		if !errors.As(wrapped, &got) {
			t.Fatal("errors.As(*OrchestrationError) = false")
		}
		if got.Stage != troupe.StageExecute || !got.Recoverable || got.Context.TraceID() != "trace-42" {
			t.Errorf("got %+v", got)
		}
	})
	t.Run("errors.As finds the AgentError behind it", func(t *testing.T) {
		var got *troupe.AgentError
		if !errors.As(wrapped, &got) || got != agentErr {
			t.Fatalf("errors.As(*AgentError) = %v, %v", got, got == agentErr)
		}
	})
	t.Run("no cause", func(t *testing.T) {
		e := &troupe.OrchestrationError{Stage: troupe.StagePlan, Message: "no agents"}
		if e.Unwrap() != nil {
			t.Errorf("Unwrap() = %v, want nil", e.Unwrap())
		}
	})
}

func TestOrchestrationErrorMessage(t *testing.T) {
	cause := errors.New("connection refused")
	tests := []struct {
		name         string
		err          *troupe.OrchestrationError
		want         []string // substrings, in order
		causeAppears int      // how often the cause's text appears
	}{
		{
			name: "stage, message, cause and trace",
			err:  &troupe.OrchestrationError{Stage: troupe.StageRoute, Message: "no route", Cause: cause, Context: troupe.NewContext("abc", "")},
			want: []string{"troupe: ", "route", "no route", "connection refused", "abc"}, causeAppears: 1,
		},
		{
			name: "cause already in the message is not repeated",
			err:  &troupe.OrchestrationError{Stage: troupe.StageExecute, Message: "agent failed: connection refused", Cause: cause, Context: troupe.NewContext("t1", "")},
			want: []string{"execute", "agent failed: connection refused", "t1"}, causeAppears: 1,
		},
		{
			name: "no trace id",
			err:  &troupe.OrchestrationError{Stage: troupe.StageInitialize, Message: "setup failed"},
			want: []string{"initialize", "setup failed"},
		},
		{
			name: "terminal stage",
			err:  &troupe.OrchestrationError{Stage: troupe.StageFailed, Message: "min success rate not met", Context: troupe.NewContext("t2", "")},
			want: []string{"failed", "min success rate not met", "t2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg := tt.err.Error()
			rest := msg
			for _, w := range tt.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("Error() = %q: missing %q (in order %q)", msg, w, tt.want)
				}
				rest = rest[i+len(w):]
			}
			if n := strings.Count(msg, cause.Error()); n != tt.causeAppears {
				t.Errorf("Error() = %q: cause appears %d times, want %d", msg, n, tt.causeAppears)
			}
			if tt.err.Context.TraceID() == "" && strings.Contains(msg, "trace") {
				t.Errorf("Error() = %q mentions a trace without a trace id", msg)
			}
		})
	}
}

func TestAgentError(t *testing.T) {
	cause := errors.New("index offline")
	tests := []struct {
		name      string
		err       *troupe.AgentError
		want      []string
		wantCause error
	}{
		{"with cause", &troupe.AgentError{Code: troupe.CodeRAGEmpty, Message: "no content", Cause: cause}, []string{"RAG_EMPTY", "no content", "index offline"}, cause},
		{"without cause", &troupe.AgentError{Code: troupe.CodeInvalidInput, Message: "missing brand"}, []string{"INVALID_INPUT", "missing brand"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg := tt.err.Error()
			if !strings.HasPrefix(msg, "troupe: ") {
				t.Errorf("Error() = %q does not start with the package name", msg)
			}
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("Error() = %q, missing %q", msg, w)
				}
			}
			if !errors.Is(tt.err.Unwrap(), tt.wantCause) || (tt.wantCause == nil) != (tt.err.Unwrap() == nil) {
				t.Errorf("Unwrap() = %v, want %v", tt.err.Unwrap(), tt.wantCause)
			}
		})
	}
}

func TestErrorInfoOf(t *testing.T) {
	agentErr := &troupe.AgentError{
		Code: troupe.CodeTimeout, Message: "agent took too long", Recoverable: true, FallbackAction: "route to tutor",
	}
	panicErr := &troupe.PanicError{Value: "index out of range", Stack: "goroutine 7 [running]:\nmain.agent()\n"}
	tests := []struct {
		name        string
		err         error
		want        troupe.ErrorInfo
		wantMessage []string // substrings of Message; Message is otherwise not compared
		// exactMessage, when set, is all of Message: an agent error's code is a field of its
		// own, so the message does not repeat it.
		exactMessage string
	}{
		{
			name:         "agent error keeps its fields",
			err:          agentErr,
			want:         troupe.ErrorInfo{Code: troupe.CodeTimeout, Recoverable: true, FallbackAction: "route to tutor"},
			wantMessage:  []string{"agent took too long"},
			exactMessage: "agent took too long",
		},
		{
			name:         "wrapped agent error",
			err:          fmt.Errorf("attempt 2: %w", &troupe.AgentError{Code: troupe.CodeStateMissing, Message: "no scope", FallbackAction: "run diagnostic first"}),
			want:         troupe.ErrorInfo{Code: troupe.CodeStateMissing, FallbackAction: "run diagnostic first"},
			wantMessage:  []string{"no scope"},
			exactMessage: "attempt 2: no scope",
		},
		{
			name: "agent error behind an orchestration error",
			err:  &troupe.OrchestrationError{Stage: troupe.StageExecute, Message: "m", Cause: agentErr},
			want: troupe.ErrorInfo{Code: troupe.CodeTimeout, Recoverable: true, FallbackAction: "route to tutor"},
		},
		{
			name: "panic carries its stack",
			err:  panicErr,
			want: troupe.ErrorInfo{Code: troupe.CodePanic, Details: map[string]any{
				"panic": "index out of range", "stack": "goroutine 7 [running]:\nmain.agent()\n",
			}},
			wantMessage: []string{"panic", "index out of range"},
		},
		{
			name:        "timeout",
			err:         fmt.Errorf("dispatch disp_x: %w", troupe.ErrTimeout),
			want:        troupe.ErrorInfo{Code: troupe.CodeTimeout, Recoverable: true},
			wantMessage: []string{"timed out"},
		},
		{
			name: "blocked",
			err:  fmt.Errorf("pii guard: %w", troupe.ErrBlocked),
			want: troupe.ErrorInfo{Code: troupe.CodeBlocked},
		},
		{
			name: "cancelled",
			err:  troupe.ErrCancelled,
			want: troupe.ErrorInfo{Code: troupe.CodeCancelled},
		},
		{
			name:        "invalid output",
			err:         (&troupe.Result{}).Validate(nil),
			want:        troupe.ErrorInfo{Code: troupe.CodeInvalidOutput},
			wantMessage: []string{"status"},
		},
		{
			name:        "plain error",
			err:         errors.New("model returned garbage"),
			want:        troupe.ErrorInfo{Code: troupe.CodeAgentError, Recoverable: true},
			wantMessage: []string{"model returned garbage"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := troupe.ErrorInfoOf(tt.err)
			for _, w := range tt.wantMessage {
				if !strings.Contains(got.Message, w) {
					t.Errorf("Message = %q, missing %q", got.Message, w)
				}
			}
			if got.Message == "" {
				t.Error("Message is empty")
			}
			if tt.exactMessage != "" && got.Message != tt.exactMessage {
				t.Errorf("Message = %q, want %q", got.Message, tt.exactMessage)
			}
			got.Message = ""
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ErrorInfoOf (-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidationErrors(t *testing.T) {
	es := troupe.ValidationErrors{
		{Object: "dispatch", Field: "target_agent", Problem: "invalid target agent: oracle", Err: troupe.ErrUnknownAgent},
		{Object: "dispatch", Field: "timeout_seconds", Problem: "timeout must be positive", Err: troupe.ErrInvalidDispatch},
		{Object: "dispatch", Field: "x", Problem: "no sentinel"},
	}
	var err error = es
	for _, sentinel := range []error{troupe.ErrUnknownAgent, troupe.ErrInvalidDispatch} {
		if !errors.Is(err, sentinel) {
			t.Errorf("errors.Is(%v) = false", sentinel)
		}
	}
	if errors.Is(err, troupe.ErrInvalidResult) {
		t.Error("errors.Is(ErrInvalidResult) = true")
	}
	var ve *troupe.ValidationError
	if !errors.As(err, &ve) || ve.Field != "target_agent" {
		t.Errorf("errors.As = %v", ve)
	}
	msg := err.Error()
	for _, w := range []string{"troupe: dispatch", `"target_agent"`, "invalid target agent: oracle", `"timeout_seconds"`, "no sentinel"} {
		if !strings.Contains(msg, w) {
			t.Errorf("Error() = %q, missing %q", msg, w)
		}
	}
}

func TestSentinelsNamePackage(t *testing.T) {
	for _, err := range []error{
		troupe.ErrUnknownAgent, troupe.ErrInvalidDispatch, troupe.ErrInvalidResult, troupe.ErrTimeout,
		troupe.ErrCancelled, troupe.ErrPaused, troupe.ErrBudgetExhausted, troupe.ErrBlocked,
		troupe.ErrRunNotFound, troupe.ErrRunFinished, troupe.ErrSeqConflict, troupe.ErrShutdown,
	} {
		if !strings.HasPrefix(err.Error(), "troupe: ") {
			t.Errorf("%q does not start with the package name", err)
		}
	}
}

// panicsWith panics with v three frames deep, so the recovered stack has to go past the
// deferred function to name it.
//
//go:noinline
func panicsWith(v any) { deeper(v) }

//go:noinline
func deeper(v any) { panic(v) }

func TestNewPanicError(t *testing.T) {
	recovered := func() (pe *troupe.PanicError) {
		defer func() { pe = troupe.NewPanicError(recover()) }()
		panicsWith("boom")
		return nil
	}
	pe := recovered()
	if pe.Value != "boom" {
		t.Errorf("Value = %v, want boom", pe.Value)
	}
	// The stack is the panicking goroutine's from the panic down, not the recoverer's alone.
	for _, fn := range []string{"troupe_test.deeper", "troupe_test.panicsWith", "troupe_test.TestNewPanicError"} {
		if !strings.Contains(pe.Stack, fn) {
			t.Errorf("stack does not name %s:\n%s", fn, pe.Stack)
		}
	}
	info := troupe.ErrorInfoOf(fmt.Errorf("dispatch: %w", pe))
	if info.Code != troupe.CodePanic || info.Details["stack"] != pe.Stack || info.Details["panic"] != "boom" {
		t.Errorf("ErrorInfoOf = %+v, want code %s with the panic and its stack in details", info, troupe.CodePanic)
	}

	// A deep stack is cut at 16 KB.
	var deep func(n int) *troupe.PanicError
	deep = func(n int) (pe *troupe.PanicError) {
		if n == 0 {
			defer func() { pe = troupe.NewPanicError(recover()) }()
			panic("deep")
		}
		return deep(n - 1)
	}
	if got := len(deep(2000).Stack); got == 0 || got > 16<<10 {
		t.Errorf("a 2,000-frame stack gave %d bytes, want 1 to %d", got, 16<<10)
	}
}

// ErrorInfo.Err is ErrorInfoOf's inverse: the recorded code, message and details come back,
// and errors.Is finds the code's sentinel.
func TestErrorInfoErr(t *testing.T) {
	tests := []struct {
		code     string
		sentinel error
	}{
		{troupe.CodeTimeout, troupe.ErrTimeout},
		{troupe.CodeBlocked, troupe.ErrBlocked},
		{troupe.CodeCancelled, troupe.ErrCancelled},
		{troupe.CodeBudget, troupe.ErrBudgetExhausted},
		{troupe.CodeUnknownAgent, troupe.ErrUnknownAgent},
		{troupe.CodeInvalidOutput, troupe.ErrInvalidResult},
		{troupe.CodeInvalidRequest, troupe.ErrInvalidDispatch},
		{troupe.CodeAgentError, nil},
	}
	for _, tt := range tests {
		t.Run(tt.code, func(t *testing.T) {
			info := troupe.ErrorInfo{Code: tt.code, Message: "it went wrong", Recoverable: true, Details: map[string]any{"k": "v"}}
			err := info.Err()
			var ae *troupe.AgentError
			if !errors.As(err, &ae) || ae.Code != tt.code {
				t.Fatalf("Err() = %#v, want an *AgentError with code %s", err, tt.code)
			}
			if tt.sentinel != nil && !errors.Is(err, tt.sentinel) {
				t.Errorf("errors.Is(%v, %v) = false", err, tt.sentinel)
			}
			// The sentinel, which the code names already, is not added to the message: the
			// round trip gives info back as it was, however often it is made.
			back := troupe.ErrorInfoOf(err)
			if back.Message != info.Message {
				t.Errorf("ErrorInfoOf(Err()).Message = %q, want %q", back.Message, info.Message)
			}
			if again := troupe.ErrorInfoOf(back.Err()); again.Message != info.Message {
				t.Errorf("ErrorInfoOf, Err, ErrorInfoOf, Err: message %q, want %q", again.Message, info.Message)
			}
			if wrapped := troupe.ErrorInfoOf(fmt.Errorf("step 2: %w", err)); wrapped.Message != "step 2: "+info.Message {
				t.Errorf("ErrorInfoOf(wrapped Err()).Message = %q, want the wrapping kept and no sentinel", wrapped.Message)
			}
			if diff := cmp.Diff(info, back); diff != "" {
				t.Errorf("ErrorInfoOf(Err()) (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCallSafely(t *testing.T) {
	if err := troupe.CallSafely(func() error { return io.EOF }); err != io.EOF {
		t.Errorf("CallSafely returned %v, want f's error", err)
	}
	err := troupe.CallSafely(func() error { panic("setup exploded") })
	var pe *troupe.PanicError
	if !errors.As(err, &pe) || pe.Value != "setup exploded" || !strings.Contains(pe.Stack, "TestCallSafely") {
		t.Errorf("CallSafely of a panic = %v, want a PanicError with the value and the stack", err)
	}
}

// A PANIC AgentError whose message says who panicked keeps that message alone: its cause, the
// *PanicError, would add "troupe: agent panicked" of a panic that was not an agent's.
func TestErrorInfoOfNamedPanic(t *testing.T) {
	pe := troupe.NewPanicError("bad regexp")
	err := &troupe.AgentError{Code: troupe.CodePanic, Message: "guardrail pii panicked: bad regexp", Cause: pe, Details: troupe.ErrorInfoOf(pe).Details}
	info := troupe.ErrorInfoOf(fmt.Errorf("step 2: %w", err))
	if info.Code != troupe.CodePanic || info.Message != "step 2: guardrail pii panicked: bad regexp" {
		t.Errorf("ErrorInfoOf = %s %q, want PANIC %q", info.Code, info.Message, "step 2: guardrail pii panicked: bad regexp")
	}
	if info.Details["stack"] == nil {
		t.Errorf("details %v lack the stack", info.Details)
	}
}
