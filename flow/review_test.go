package flow_test

import (
	"context"
	"testing"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/flow"
)

// reviewMe is a member whose completed result asks for a human's review; noReview's does not.
var (
	reviewMe = troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{AgentResult: map[string]any{"draft": "v1"}, RequiresHuman: true}, nil
	})
	noReview = troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{AgentResult: map[string]any{"noReview": true}}, nil
	})
	broken = troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		return nil, &troupe.AgentError{Code: troupe.CodeAgentError, Message: "broken"}
	})
)

// A composite's result asks for review when a member's completed result it answers with does:
// the engine reviews planned dispatches' results, and a member's request reaches the human
// through its composite's. A member that lost a first_success race is not answered with, and
// its request is not passed on.
func TestCompositePassesOnRequiresHuman(t *testing.T) {
	slowReview := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		<-ctx.Done() // the other branch wins first
		return &troupe.Result{AgentResult: map[string]any{"late": true}, RequiresHuman: true}, nil
	})
	for _, tc := range []struct {
		name  string
		agent troupe.Agent
		want  bool
	}{
		{"collect_all with a member asking", flow.Parallel(flow.ParallelConfig{}, flow.Named("a", noReview), flow.Named("b", reviewMe)), true},
		{"collect_all with none asking", flow.Parallel(flow.ParallelConfig{}, flow.Named("a", noReview), flow.Named("b", noReview)), false},
		{"first_success won by a member not asking", flow.Parallel(flow.ParallelConfig{Strategy: flow.FirstSuccess}, flow.Named("a", noReview), flow.Named("b", slowReview)), false},
		{"sequence going on past a failure", flow.Sequential(flow.SequentialConfig{OnError: flow.ContinueOnError}, flow.Named("a", reviewMe), flow.Named("b", broken)), true},
		{"sequence with none asking", flow.Sequential(flow.SequentialConfig{}, flow.Named("a", noReview), flow.Named("b", noReview)), false},
		{"loop whose cycle asks", flow.Loop(flow.LoopConfig{MaxIterations: 2}, flow.Named("a", reviewMe)), true},
		{"nested: a sequence in a group", flow.Parallel(flow.ParallelConfig{}, flow.Named("a", noReview),
			flow.Named("s", flow.Sequential(flow.SequentialConfig{}, flow.Named("x", noReview), flow.Named("y", reviewMe)))), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := tc.agent.Run(t.Context(), troupe.NewDispatch())
			if err != nil {
				t.Fatal(err)
			}
			if res.RequiresHuman != tc.want {
				t.Errorf("requires_human = %v, want %v (result %+v)", res.RequiresHuman, tc.want, res)
			}
		})
	}
}

// An agent called as a tool whose completed result asks for a human's review passes the request
// to its caller's result through the Usage of the call's context (AddTo), as it passes its
// spending: the engine reviews the caller's result. The tool's answer is the agent_result alone;
// a failed call's request is not passed on (its result is not answered with).
func TestAgentToolPassesOnRequiresHuman(t *testing.T) {
	failedAsking := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{Status: troupe.StatusFailed, RequiresHuman: true, Errors: []troupe.ErrorInfo{{Code: troupe.CodeAgentError, Message: "bad"}}}, nil
	})
	for _, tc := range []struct {
		name  string
		agent troupe.Agent
		want  bool
	}{
		{"asking", reviewMe, true},
		{"not asking", noReview, false},
		{"a composite whose member asks", flow.Sequential(flow.SequentialConfig{}, flow.Named("a", noReview), flow.Named("b", reviewMe)), true},
		{"failed, asking", failedAsking, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, u := flow.WithUsage(t.Context())
			out, _ := flow.AsTool("x", tc.agent).Call(ctx, troupe.NewDispatch(), []byte(`{"task":"t"}`))
			if tc.want && string(out) != `{"draft":"v1"}` && string(out) != `{"draft":"v1","noReview":true}` {
				t.Errorf("tool answered %s; want the agent_result alone", out)
			}
			res := &troupe.Result{AgentResult: map[string]any{"caller": true}}
			u.AddTo(res)
			if u.RequiresHuman() != tc.want || res.RequiresHuman != tc.want {
				t.Errorf("Usage.RequiresHuman %v, caller's requires_human %v; want %v", u.RequiresHuman(), res.RequiresHuman, tc.want)
			}
		})
	}
}
