package flow_test

import (
	"context"
	"testing"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/flow"
)

// answering returns an agent answering a, asking for review when ask is set.
func answering(a string, ask bool) troupe.Agent {
	return troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{AgentResult: map[string]any{"a": a}, RequiresHuman: ask}, nil
	})
}

// failedAsking is a member whose failed result asks for review: not answered with.
var failedAsking = troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
	return &troupe.Result{Status: troupe.StatusFailed, RequiresHuman: true,
		Errors: []troupe.ErrorInfo{{Code: troupe.CodeAgentError, Message: "bad"}}}, nil
})

func TestNestedCompositesPassOnRequiresHuman(t *testing.T) {
	vote := func(ms ...*troupe.AgentSpec) troupe.Agent {
		return flow.Parallel(flow.ParallelConfig{Strategy: flow.MajorityVote, Answer: func(r *troupe.Result) string { return r.AgentResult["a"].(string) }}, ms...)
	}
	cycles := func(n *int) troupe.Agent {
		return troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
			*n++
			return &troupe.Result{AgentResult: map[string]any{"n": *n}, RequiresHuman: *n == 3}, nil
		})
	}
	var n1, n2 int
	for _, tc := range []struct {
		name    string
		agent   troupe.Agent
		want    bool
		wantErr bool
	}{
		{"vote: a winning voter asks", vote(flow.Named("x", answering("yes", true)), flow.Named("y", answering("yes", false)), flow.Named("z", answering("no", false))), true, false},
		{"vote: only an outvoted voter asks", vote(flow.Named("x", answering("yes", false)), flow.Named("y", answering("yes", false)), flow.Named("z", answering("no", true))), false, false},
		{"vote: tie (fails)", vote(flow.Named("x", answering("yes", true)), flow.Named("y", answering("no", false))), true, true},
		{"first_success: the winner asks", flow.Parallel(flow.ParallelConfig{Strategy: flow.FirstSuccess}, flow.Named("a", answering("w", true))), true, false},
		{"first_success: a failed branch asks, the winner does not", flow.Parallel(flow.ParallelConfig{Strategy: flow.FirstSuccess, MaxConcurrent: 1}, flow.Named("f", failedAsking), flow.Named("a", answering("w", false))), false, false},
		{"collect_all: a failed branch asks", flow.Parallel(flow.ParallelConfig{}, flow.Named("f", failedAsking), flow.Named("a", answering("w", false))), false, false},
		{"continue_on_error: the failed step asks", flow.Sequential(flow.SequentialConfig{OnError: flow.ContinueOnError}, flow.Named("f", failedAsking), flow.Named("a", answering("w", false))), false, false},
		{"continue_on_error: a later step asks after a failure", flow.Sequential(flow.SequentialConfig{OnError: flow.ContinueOnError}, flow.Named("f", failedAsking), flow.Named("a", answering("w", true))), true, false},
		{"loop: stopped by Until before the asking cycle", flow.Loop(flow.LoopConfig{MaxIterations: 5, Until: func(it flow.Iteration) bool { return it.Cycle == 2 }}, flow.Named("c", cycles(&n1))), false, false},
		{"loop: Until stops at the asking cycle", flow.Loop(flow.LoopConfig{MaxIterations: 5, Until: func(it flow.Iteration) bool { return it.Result.RequiresHuman }}, flow.Named("c", cycles(&n2))), true, false},
		{"three levels: loop in sequence in collect_all", flow.Parallel(flow.ParallelConfig{}, flow.Named("p", answering("w", false)),
			flow.Named("s", flow.Sequential(flow.SequentialConfig{}, flow.Named("x", answering("w", false)),
				flow.Named("l", flow.Loop(flow.LoopConfig{MaxIterations: 1}, flow.Named("c", answering("w", true))))))), true, false},
		{"three levels: asking voter outvoted inside a sequence", flow.Sequential(flow.SequentialConfig{}, flow.Named("v", vote(flow.Named("x", answering("yes", false)), flow.Named("y", answering("yes", false)),
			flow.Named("z", flow.Sequential(flow.SequentialConfig{}, flow.Named("zz", answering("no", true))))))), false, false},
		{"three levels: winning voter is a sequence whose step asks", flow.Sequential(flow.SequentialConfig{}, flow.Named("v", vote(flow.Named("x", answering("yes", false)), flow.Named("z", flow.Sequential(flow.SequentialConfig{}, flow.Named("zz", answering("yes", true)))),
			flow.Named("y", answering("no", false))))), true, false},
		{"first_success in a sequence: winner is a group whose branch asks", flow.Sequential(flow.SequentialConfig{}, flow.Named("fs", flow.Parallel(flow.ParallelConfig{Strategy: flow.FirstSuccess},
			flow.Named("g", flow.Parallel(flow.ParallelConfig{}, flow.Named("b1", answering("w", true)), flow.Named("b2", answering("w", false))))))), true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := tc.agent.Run(t.Context(), troupe.NewDispatch())
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v, wantErr %v", err, tc.wantErr)
			}
			if res.RequiresHuman != tc.want {
				t.Errorf("requires_human = %v, want %v", res.RequiresHuman, tc.want)
			}
		})
	}
}
