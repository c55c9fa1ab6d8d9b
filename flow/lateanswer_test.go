package flow_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/flow"
)

// A member with WithTimeout whose timeout passes before it answers timed out, whatever it
// returns then, as the engine records a planned agent past its deadline (timeouts hold even
// against an agent that ignores its context). A result it returned within the grace that
// follows was taken as completed: it could win a first_success group, vote, or write state.
func TestTimedMemberAnsweringLateTimesOut(t *testing.T) {
	agents := map[string]troupe.Agent{
		"returns a result once its context ends": troupe.AgentFunc(func(ctx context.Context, _ *troupe.Dispatch) (*troupe.Result, error) {
			<-ctx.Done()
			return &troupe.Result{AgentResult: map[string]any{"late": true}}, nil
		}),
		"ignores its context and answers after 100ms": troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
			time.Sleep(100 * time.Millisecond)
			return &troupe.Result{AgentResult: map[string]any{"late": true}}, nil
		}),
	}
	for name, a := range agents {
		t.Run(name, func(t *testing.T) {
			out, err := flow.Sequential(flow.SequentialConfig{}, flow.Named("late", a, troupe.WithTimeout(20*time.Millisecond))).
				Execute(t.Context(), troupe.NewDispatch())
			if r := out.Results[0]; r.Status != troupe.StatusTimeout || err == nil {
				t.Errorf("late (WithTimeout 20ms) answered after its deadline: status %s, err %v; want timeout", r.Status, err)
			}
		})
	}
}

// AsTool with WithTimeout returns a TIMEOUT error once the timeout has passed even when the agent
// ignores its context, as its doc says: an answer after the timeout is too late. It was returned.
func TestToolTimeoutHoldsAgainstALateAnswer(t *testing.T) {
	tool := flow.AsTool("late", troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		time.Sleep(100 * time.Millisecond)
		return &troupe.Result{AgentResult: map[string]any{"ok": true}}, nil
	}), troupe.WithTimeout(20*time.Millisecond))
	raw, err := tool.Call(t.Context(), nil, []byte(`{"task":"x"}`))
	if err == nil || troupe.ErrorInfoOf(err).Code != troupe.CodeTimeout {
		t.Errorf("AsTool with WithTimeout(20ms): the agent ignored its context and answered after 100ms; Call = %s, %v; want a TIMEOUT error (AsTool: \"the call returns a TIMEOUT error once the timeout has passed even when the agent ignores its context\")", raw, err)
	}
}

// A member abandoned past its timeout is recorded timed out, and cancelled only when its composite
// was cancelled first (the package doc): here its own timeout passes first (50ms) and the
// composite is cancelled later (100ms), within the grace. It was recorded cancelled, with a
// message that it did not stop within the grace after the cancel, which it had not been given.
func TestAbandonedAfterItsTimeoutThenCancelledIsTimedOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rel := make(chan struct{})
		stuck := flow.Named("stuck", troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
			<-rel
			return &troupe.Result{AgentResult: map[string]any{"ok": true}}, nil
		}), troupe.WithTimeout(50*time.Millisecond))
		seq := flow.Sequential(flow.SequentialConfig{}, stuck)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		time.AfterFunc(100*time.Millisecond, cancel)
		out, err := seq.Execute(ctx, troupe.NewDispatch())
		r := out.Results[0]
		if r.Status != troupe.StatusTimeout || r.Errors[len(r.Errors)-1].Code != troupe.CodeTimeout {
			t.Errorf("stuck timed out at 50ms, composite cancelled at 100ms: status %s, errors %+v (err %v); want timeout", r.Status, r.Errors, err)
		}
		close(rel)
		if err := seq.Teardown(t.Context()); err != nil {
			t.Error(err)
		}
	})
}
