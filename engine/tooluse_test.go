package engine_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/engine"
	"github.com/troupehq/troupe/flow"
	"github.com/troupehq/troupe/troupetest"
)

// spendsCallingTools is an agent that calls tools (with the context it was given, opening no Usage of
// its own unless own) and reports tokens of its own.
func spendsCallingTools(tokens int64, own bool, tools ...troupe.Tool) troupe.Agent {
	return troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		var u *flow.Usage
		if own {
			ctx, u = flow.WithUsage(ctx)
		}
		for _, t := range tools {
			if _, err := t.Call(ctx, d, json.RawMessage(`{"task":"go"}`)); err != nil {
				return nil, err
			}
		}
		res := &troupe.Result{AgentResult: map[string]any{"spent": tokens}, TokensUsed: troupe.Ptr(tokens)}
		u.AddTo(res)
		return res, nil
	})
}

// An agent called as a tool that opens no Usage of its own, and calls a tool itself, spends
// what that tool spends too: mid (1000 tokens) calls leaf (100), so 1,100 tokens are spent
// before caller's next tool call, over the run's budget of 1,050, which refuses that call. The
// engine counted mid's 1000 less leaf's 100, taking mid's result to include what leaf spent,
// as a composite's includes its members'; AsTool now folds it in.
func TestLiveBudgetCountsToolOfToolWithoutUsage(t *testing.T) {
	var thirdRan atomic.Bool
	leaf := flow.AsTool("leaf", spendsCallingTools(100, false))
	mid := flow.AsTool("mid", spendsCallingTools(1000, false, leaf))
	third := flow.AsTool("third", troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		thirdRan.Store(true)
		return &troupe.Result{AgentResult: map[string]any{"ok": true}}, nil
	}))
	var thirdErr error
	caller := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		ctx, u := flow.WithUsage(ctx)
		if _, err := mid.Call(ctx, d, json.RawMessage(`{"task":"go"}`)); err != nil {
			return nil, err
		}
		_, thirdErr = third.Call(ctx, d, json.RawMessage(`{"task":"go"}`))
		res := &troupe.Result{AgentResult: map[string]any{"done": true}}
		u.AddTo(res)
		return res, nil
	})
	reg := troupe.NewRegistry().MustAdd("caller", caller)
	eng, err := engine.New(engine.Config{Registry: reg, Seed: 7, MaxTokens: 1050})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close(context.Background())
	if _, err := troupetest.Collect(eng.Run(t.Context(), troupe.Request{Query: "x"})); err != nil {
		t.Fatal(err)
	}
	if thirdRan.Load() || thirdErr == nil {
		t.Errorf("1100 tokens spent of a 1050-token budget, yet the third tool call was admitted (err %v): the engine counted mid's 1000 less leaf's 100", thirdErr)
	}
}
