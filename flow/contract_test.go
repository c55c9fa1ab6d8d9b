package flow_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/flow"
)

// Members of a composite are held to their contracts as planned dispatches are: declared reads
// (STATE_MISSING, whose fallback names the members that write them), input schema (INVALID_INPUT), output schema (INVALID_OUTPUT, the output kept
// with its validation errors).
func TestMemberContracts(t *testing.T) {
	quizOut := json.RawMessage(`{"type": "object", "required": ["quiz_score"], "properties": {"quiz_score": {"type": "number", "maximum": 1}}}`)
	quizIn := json.RawMessage(`{"type": "object", "required": ["topic"]}`)
	score := func(v any) troupe.Agent {
		return troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
			return &troupe.Result{AgentResult: map[string]any{"quiz_score": v}}, nil
		})
	}
	// 003: the tutor reads learner_level, which the diagnostic writes, but the sequence runs the
	// tutor first: its STATE_MISSING error's fallback is "run diagnostic first".
	diagnostic := flow.Named("diagnostic", troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{AgentResult: map[string]any{"learner_level": "beginner"}}, nil
	}), troupe.Writes("learner_level", "prerequisite_gaps"))
	tutor := flow.Named("tutor", score(0.5), troupe.Reads("learner_level"))
	tests := []struct {
		name     string
		member   *troupe.AgentSpec
		parsed   map[string]any
		code     string
		details  any
		fallback string
		message  string // the error message says where and what, once
	}{
		{"valid", flow.Named("quiz", score(0.5), troupe.InputSchema(quizIn), troupe.OutputSchema(quizOut)), map[string]any{"topic": "x"}, "", nil, "", ""},
		{"output fails its schema", flow.Named("quiz", score(7), troupe.OutputSchema(quizOut)), nil, troupe.CodeInvalidOutput,
			[]any{map[string]any{"path": "/quiz_score", "message": "maximum: got 7, want 1"}}, "", "output of quiz fails its schema: schema: /quiz_score: maximum: got 7, want 1"},
		{"input fails its schema", flow.Named("quiz", score(0.5), troupe.InputSchema(quizIn)), map[string]any{}, troupe.CodeInvalidInput,
			[]any{map[string]any{"path": "", "message": "missing property 'topic'"}}, "ask the user to clarify", "input of quiz fails its schema: schema: /: missing property 'topic'"},
		{"declared read absent", flow.Named("quiz", score(0.5), troupe.Reads("explanation")), nil, troupe.CodeStateMissing, nil, "run the agent that writes it first",
			"session state lacks [explanation], which quiz reads"},
		{"read written by a later member", tutor, nil, troupe.CodeStateMissing, nil, "run diagnostic first", "session state lacks [learner_level], which tutor reads"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := troupe.NewDispatch()
			d.ParsedQuery = tt.parsed
			out, err := flow.Sequential(flow.SequentialConfig{}, tt.member, diagnostic).Execute(t.Context(), d)
			res := out.Results[0]
			if tt.code == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var ae *troupe.AgentError
			if !errors.As(err, &ae) || ae.Code != tt.code || res.Status != troupe.StatusFailed {
				t.Fatalf("err = %v, status %s; want %s", err, res.Status, tt.code)
			}
			if diff := cmp.Diff(tt.details, res.Errors[0].Details["validation_errors"]); diff != "" {
				t.Errorf("validation errors (-want +got):\n%s", diff)
			}
			if msg := res.Errors[0].Message; !strings.HasSuffix(msg, tt.message) || strings.Count(msg, tt.message) != 1 {
				t.Errorf("message %q, want %q in it once", msg, tt.message)
			}
			if !strings.HasSuffix(err.Error(), "step 1 of 2: "+tt.member.Name+": "+tt.message) {
				t.Errorf("sequence error %q, want it to end with the member's message", err)
			}
			if res.Errors[0].FallbackAction != tt.fallback {
				t.Errorf("fallback %q, want %q", res.Errors[0].FallbackAction, tt.fallback)
			}
			if tt.code == troupe.CodeInvalidOutput && res.AgentResult["quiz_score"] != 7 {
				t.Errorf("the invalid output is not kept: %v", res.AgentResult)
			}
		})
	}
}

// A member's own timeout (WithTimeout) ends its dispatch as a timeout, not the composite's.
func TestMemberTimeout(t *testing.T) {
	slow := flow.Named("slow", troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}), troupe.WithTimeout(time.Millisecond))
	fast := flow.Named("fast", troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{AgentResult: map[string]any{"ok": true}}, nil
	}))
	out, err := flow.Sequential(flow.SequentialConfig{OnError: flow.ContinueOnError}, slow, fast).Execute(t.Context(), troupe.NewDispatch())
	if err != nil {
		t.Fatal(err)
	}
	if r := out.Results[0]; r.Status != troupe.StatusTimeout || r.Errors[0].Code != troupe.CodeTimeout || !r.Errors[0].Recoverable {
		t.Errorf("slow: %s %+v", r.Status, r.Errors)
	}
	if !out.Results[1].Succeeded() {
		t.Errorf("fast: %s", out.Results[1].Status)
	}
}

// A member that reports its own timeout (an adapter's deadline, a 504) — code TIMEOUT, or an
// error wrapping troupe.ErrTimeout — is recorded timeout, as the engine records a planned agent
// that does, not failed with a TIMEOUT code: the composite's result says "timeout".
func TestMemberReportingItsOwnTimeout(t *testing.T) {
	tests := []struct {
		name     string
		err      error
		sentinel bool // the error wraps troupe.ErrTimeout
	}{
		{"agent error", &troupe.AgentError{Code: troupe.CodeTimeout, Message: "model call timed out", Recoverable: true}, false},
		{"wrapped sentinel", fmt.Errorf("model call: %w", troupe.ErrTimeout), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			slow := flow.Named("slow", troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) { return nil, tt.err }))
			fast := flow.Named("fast", troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
				return &troupe.Result{AgentResult: map[string]any{"ok": true}}, nil
			}))
			seq := flow.Sequential(flow.SequentialConfig{OnError: flow.ContinueOnError}, slow, fast)
			out, err := seq.Execute(t.Context(), troupe.NewDispatch())
			if err != nil {
				t.Fatal(err)
			}
			if r := out.Results[0]; r.Status != troupe.StatusTimeout || r.Errors[0].Code != troupe.CodeTimeout {
				t.Errorf("slow: %s %+v, want timeout with code TIMEOUT", r.Status, r.Errors)
			}
			res, err := seq.Run(t.Context(), troupe.NewDispatch())
			if err != nil || len(res.Warnings) != 1 || res.Warnings[0] != "slow: timeout" {
				t.Errorf("Run = %v, %v; want the warning slow: timeout", res.Warnings, err)
			}
			// Called as a tool, its error is still the timeout it reported.
			_, err = flow.AsTool("slow", slow.Agent).Call(t.Context(), nil, json.RawMessage(`{"task": "x"}`))
			if info := troupe.ErrorInfoOf(err); info.Code != troupe.CodeTimeout || errors.Is(err, troupe.ErrTimeout) != tt.sentinel {
				t.Errorf("tool error %v: code %s, wraps ErrTimeout %v; want TIMEOUT, %v", err, info.Code, errors.Is(err, troupe.ErrTimeout), tt.sentinel)
			}
		})
	}
}

// FuzzAgentToolArgs: whatever an LLM passes as arguments, the tool returns JSON or an error
// that says what is wrong; it never panics.
func FuzzAgentToolArgs(f *testing.F) {
	tool := flow.AsTool("echo", troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{AgentResult: map[string]any{"query": d.Query, "args": d.ParsedQuery}}, nil
	}))
	f.Add([]byte(`{"task": "x"}`))
	f.Add([]byte(`{"task": 3, "n": [1, {"a": null}]}`))
	f.Add([]byte(`"just a string"`))
	f.Fuzz(func(t *testing.T, args []byte) {
		out, err := tool.Call(context.Background(), nil, args)
		if err != nil {
			var ae *troupe.AgentError
			if !errors.As(err, &ae) || ae.Code != troupe.CodeInvalidInput {
				t.Fatalf("error %v is not INVALID_INPUT", err)
			}
			return
		}
		if !json.Valid(out) {
			t.Fatalf("output %q is not JSON", out)
		}
	})
}

// A member's output holding a NaN or an infinity, which JSON cannot encode, is invalid, as a
// planned dispatch's is: its result fails with INVALID_OUTPUT, keeps the number as its text so
// its nested events can be encoded, and writes nothing to session state.
func TestMemberNonFiniteOutput(t *testing.T) {
	inf := flow.Named("estimator", troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{AgentResult: map[string]any{"effect": map[string]any{"ci": []any{0.1, math.Inf(1)}}}}, nil
	}), troupe.Writes("effect"))
	next := flow.Named("next", troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{AgentResult: map[string]any{"ok": true}}, nil
	}))
	out, err := flow.Sequential(flow.SequentialConfig{}, inf, next).Execute(t.Context(), troupe.NewDispatch())
	var ae *troupe.AgentError
	if !errors.As(err, &ae) || ae.Code != troupe.CodeInvalidOutput {
		t.Fatalf("err = %v, want INVALID_OUTPUT", err)
	}
	res := out.Results[0]
	if res.Status != troupe.StatusFailed || !strings.Contains(res.Errors[0].Message, "agent_result.effect.ci[1] is +Inf") {
		t.Errorf("result: %s %+v", res.Status, res.Errors)
	}
	if _, err := json.Marshal(res); err != nil {
		t.Errorf("the failed result cannot be encoded: %v", err)
	}
	if diff := cmp.Diff(map[string]any{"ci": []any{0.1, "+Inf"}}, res.AgentResult["effect"]); diff != "" {
		t.Errorf("kept output (-want +got):\n%s", diff)
	}
	if len(out.Results) != 1 || out.State != nil {
		t.Errorf("the sequence went on (%d results) or wrote %v", len(out.Results), out.State)
	}
}

// TestMemberGuardrails: guardrails given to a member (troupe.Guard) check its dispatch and its
// result as the engine's check a planned agent's: a block fails the member with BLOCKED, and
// warnings and annotations, before and after, reach its result. A panicking guardrail fails
// the member with PANIC; the process goes on.
func TestMemberGuardrails(t *testing.T) {
	answer := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{AgentResult: map[string]any{"text": "rm -rf /"}}, nil
	})
	var ran bool
	watched := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		ran = true
		return &troupe.Result{AgentResult: map[string]any{"text": "ok"}}, nil
	})
	noteBefore := troupe.GuardrailFuncs{ID: "pii", Before: func(context.Context, *troupe.Dispatch) troupe.Verdict {
		return troupe.Verdict{Warnings: []string{"query names a person"}, Annotations: map[string]any{"checked": true}}
	}}
	blockBefore := troupe.GuardrailFuncs{ID: "scope", Before: func(context.Context, *troupe.Dispatch) troupe.Verdict {
		return troupe.Verdict{Block: true, Reason: "out of scope"}
	}}
	blockAfter := troupe.GuardrailFuncs{ID: "shell", After: func(_ context.Context, _ *troupe.Dispatch, r *troupe.Result) troupe.Verdict {
		if r.AgentResult["text"] == "rm -rf /" {
			return troupe.Verdict{Block: true, Reason: "destructive command"}
		}
		return troupe.Verdict{Warnings: []string{"reviewed"}}
	}}
	panics := troupe.GuardrailFuncs{ID: "flaky", After: func(context.Context, *troupe.Dispatch, *troupe.Result) troupe.Verdict { panic("nil map") }}

	tests := []struct {
		name     string
		member   *troupe.AgentSpec
		code     string // "" when the member completes
		ran      bool
		warnings []string
		notes    map[string]any
	}{
		{"blocked before it runs", flow.Named("w", watched, troupe.Guard(noteBefore, blockBefore)), troupe.CodeBlocked, false,
			[]string{"query names a person"}, map[string]any{"pii": map[string]any{"checked": true}}},
		{"result blocked", flow.Named("w", answer, troupe.Guard(blockAfter)), troupe.CodeBlocked, false, nil, nil},
		{"noted before and after", flow.Named("w", watched, troupe.Guard(noteBefore, blockAfter)), "", true,
			[]string{"query names a person", "reviewed"}, map[string]any{"pii": map[string]any{"checked": true}}},
		{"guardrail panics", flow.Named("w", watched, troupe.Guard(panics)), troupe.CodePanic, true, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ran = false
			out, _ := flow.Sequential(flow.SequentialConfig{}, tt.member).Execute(t.Context(), troupe.NewDispatch())
			if len(out.Results) != 1 {
				t.Fatalf("%d results", len(out.Results))
			}
			res := out.Results[0]
			if tt.code == "" {
				if res.Status != troupe.StatusCompleted {
					t.Errorf("status %s, errors %v; want completed", res.Status, res.Errors)
				}
			} else if res.Status != troupe.StatusFailed || len(res.Errors) == 0 || res.Errors[len(res.Errors)-1].Code != tt.code {
				t.Errorf("status %s, errors %v; want failed with %s", res.Status, res.Errors, tt.code)
			}
			if ran != tt.ran {
				t.Errorf("agent ran = %v, want %v", ran, tt.ran)
			}
			if !cmp.Equal(tt.warnings, res.Warnings, cmpopts.EquateEmpty()) {
				t.Errorf("warnings %q, want %q", res.Warnings, tt.warnings)
			}
			if !cmp.Equal(tt.notes, res.Annotations, cmpopts.EquateEmpty()) {
				t.Errorf("annotations %v, want %v", res.Annotations, tt.notes)
			}
		})
	}
}
