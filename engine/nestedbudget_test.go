package engine_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/engine"
	"github.com/troupehq/troupe/flow"
	"github.com/troupehq/troupe/store/memory"
	"github.com/troupehq/troupe/troupetest"
)

// spender is an agent that reports using ten tokens, counting its calls.
func spender(calls *atomic.Int32) troupe.Agent {
	return troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		calls.Add(1)
		return &troupe.Result{AgentResult: map[string]any{"ok": true}, Confidence: troupe.Ptr(1.0), TokensUsed: troupe.Ptr[int64](10)}, nil
	})
}

// A composite stops starting members once the run's token budget is spent by the members it
// already ran, not only when it finishes: the budget holds inside a running composite.
func TestBudgetHoldsInsideComposite(t *testing.T) {
	var calls atomic.Int32
	var members []*troupe.AgentSpec
	for _, n := range []string{"m1", "m2", "m3", "m4", "m5"} {
		members = append(members, flow.Named(n, spender(&calls)))
	}
	eng := newEngine(t, engine.Config{Registry: agents(t, "seq", flow.Sequential(flow.SequentialConfig{}, members...)), Planner: chain("seq")})
	evs := run(t, eng, troupe.Request{Query: "q", Budget: troupe.Budget{MaxTokens: 25}})
	if n := calls.Load(); n != 3 {
		t.Errorf("%d members ran, want 3 (10 + 10 + 10 reaches 25 before the fourth)", n)
	}
	if got := troupetest.Find(evs, troupe.KindBudgetExhausted, ""); len(got) != 1 {
		t.Errorf("%d budget_exhausted events, want 1", len(got))
	}
	res := planResults(evs)["seq"]
	if len(res) != 1 || res[0].Status == troupe.StatusCompleted || len(res[0].Errors) == 0 ||
		res[0].Errors[0].Code != troupe.CodeBudget || !strings.Contains(res[0].Errors[0].Message, "token budget of 25 spent (30)") {
		t.Fatalf("composite result %+v, want it failed at step 4 with BUDGET, saying which budget", res)
	}
}

// nestedSpenders is a sequence of a nested sequence (a, b) and c, each leaf spending 10 tokens.
func nestedSpenders(calls *atomic.Int32) troupe.Agent {
	inner := flow.Sequential(flow.SequentialConfig{}, flow.Named("a", spender(calls)), flow.Named("b", spender(calls)))
	return flow.Sequential(flow.SequentialConfig{}, flow.Named("inner", inner), flow.Named("c", spender(calls)))
}

// Tokens spent deep in nested composites count once toward the budget while the run goes on:
// an inner composite's result, which sums its members', adds nothing they did not.
func TestNestedUsageCountsOnce(t *testing.T) {
	var calls atomic.Int32
	eng := newEngine(t, engine.Config{Registry: agents(t, "outer", nestedSpenders(&calls)), Planner: chain("outer")})
	// a and b spend 20; counted twice (b's 10 again in inner's 20), c would not start under 35.
	evs := run(t, eng, troupe.Request{Query: "q", Budget: troupe.Budget{MaxTokens: 35}})
	if n := calls.Load(); n != 3 {
		t.Errorf("%d leaf agents ran, want 3", n)
	}
	if o := outcome(t, evs); o.Status != troupe.RunCompleted {
		t.Fatalf("run ended %s: %+v", o.Status, o.Error)
	}
	agg := troupetest.Find(evs, troupe.KindRunAggregated, "")[0].Data.(*troupe.Aggregation)
	if agg.TotalTokensUsed == nil || *agg.TotalTokensUsed != 30 {
		t.Errorf("total tokens %v, want 30: each leaf's 10 once", agg.TotalTokensUsed)
	}
}

// The budget holds at every depth: a composite nested in a composite starts no further member
// once the run's budget is spent.
func TestBudgetHoldsInNestedComposite(t *testing.T) {
	var calls atomic.Int32
	eng := newEngine(t, engine.Config{Registry: agents(t, "outer", nestedSpenders(&calls)), Planner: chain("outer")})
	evs := run(t, eng, troupe.Request{Query: "q", Budget: troupe.Budget{MaxTokens: 5}})
	if n := calls.Load(); n != 1 {
		t.Errorf("%d leaf agents ran, want 1: a's 10 tokens spend the budget of 5 before b starts", n)
	}
	if got := troupetest.Find(evs, troupe.KindBudgetExhausted, ""); len(got) != 1 {
		t.Errorf("%d budget_exhausted events, want 1", len(got))
	}
}

// What a member used before it stopped to wait for a human counts toward the budget when the
// run resumes with the answer, as it counted while the run ran: the member's first attempt
// spent 20 tokens, the answered one 10, and the next member does not start under a budget of
// 25. A resumed run counted only the answered attempt's 10, and started it.
func TestResumedRunCountsPausedMemberUse(t *testing.T) {
	var afterRuns atomic.Int32
	asker := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		if _, err := d.Ask(ctx, troupe.Question{Prompt: "which way?"}); err != nil {
			return &troupe.Result{TokensUsed: troupe.Ptr[int64](20)}, err // what it used before asking
		}
		return &troupe.Result{AgentResult: map[string]any{"ok": true}, TokensUsed: troupe.Ptr[int64](10)}, nil
	})
	team := flow.Sequential(flow.SequentialConfig{}, flow.Named("asker", asker), flow.Named("after", spender(&afterRuns)))
	st := memory.New()
	eng := newEngine(t, engine.Config{Registry: agents(t, "team", team), Planner: chain("team"), Store: st})
	req := troupe.Request{Query: "q", Budget: troupe.Budget{MaxTokens: 25}}
	r, err := eng.Start(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	r.Wait(t.Context())
	evs, _ := st.Events(t.Context(), r.ID(), 0)
	o := outcome(t, evs)
	if o.Status != troupe.RunPaused || len(o.Questions) != 1 {
		t.Fatalf("run ended %s with questions %v, want paused on asker's", o.Status, o.Questions)
	}
	r2, err := eng.Resume(t.Context(), r.ID(), engine.ResumeOptions{Answers: []troupe.Answer{{QuestionID: o.Questions[0].ID, Text: "left"}}})
	if err != nil {
		t.Fatal(err)
	}
	r2.Wait(t.Context())
	evs, _ = st.Events(t.Context(), r.ID(), 0)
	troupetest.CheckFinishedLog(t, evs)
	if n := afterRuns.Load(); n != 0 {
		t.Errorf("after ran %d times; the budget of 25 was spent (20 before the pause, 10 after)", n)
	}
	if got := troupetest.Find(evs, troupe.KindBudgetExhausted, ""); len(got) != 1 || !strings.Contains(got[0].Data.(*troupe.Warning).Message, "token budget of 25 spent (30)") {
		t.Errorf("budget_exhausted events %+v, want one saying 30 of 25 spent", got)
	}
}
