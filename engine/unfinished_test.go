package engine_test

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/engine"
	"github.com/troupehq/troupe/executor/local"
	"github.com/troupehq/troupe/flow"
	"github.com/troupehq/troupe/store/memory"
	"github.com/troupehq/troupe/troupetest"
)

// A result the engine makes for a dispatch its deadline cut short carries the run's trace id,
// as every other result does (seed 001: trace_id flows through all stages). It had none.
func TestTimeoutResultCarriesTraceID(t *testing.T) {
	release := make(chan struct{})
	stuck := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		<-release
		return &troupe.Result{AgentResult: map[string]any{"late": true}}, nil
	})
	eng := newEngine(t, engine.Config{Registry: agents(t, "slow", opt(stuck, troupe.WithTimeout(20*time.Millisecond)), "after", troupetest.NewScript()),
		Planner: chain("slow", "after")})
	evs := run(t, eng, troupe.Request{Query: "q"})
	close(release)
	trace := evs[0].Context.TraceID()
	for agent, rs := range results(evs) {
		for _, r := range rs {
			if r.TraceID == nil || *r.TraceID != trace {
				t.Errorf("%s's %s result has trace id %v, want %q", agent, r.Status, r.TraceID, trace)
			}
		}
	}
}

// OrchestratorState holds an agent's latest result: an agent planned twice, which completed
// and then failed, is a failed agent, not in completed_agents as well.
func TestAgentPlannedTwiceHasOneLatestResult(t *testing.T) {
	a := troupetest.NewScript(troupetest.OK(nil), troupetest.Fail(troupe.CodeAgentError, false))
	eng := newEngine(t, engine.Config{Registry: agents(t, "a", a, "b", troupetest.NewScript()),
		Planner: staticPlan(&troupe.Plan{Stages: []troupe.PlanStage{
			{Tasks: []troupe.Task{{ID: "t1", Agent: "a", Reason: "x"}}},
			{Tasks: []troupe.Task{{ID: "t2", Agent: "b", Reason: "x"}}},
			{Tasks: []troupe.Task{{ID: "t3", Agent: "a", Reason: "x"}}},
		}}), Policy: troupe.ErrorPolicy{OnError: troupe.Continue}})
	r, err := eng.Start(t.Context(), troupe.Request{Query: "q"})
	if err != nil {
		t.Fatal(err)
	}
	st, _ := r.Wait(t.Context())
	_, c := st.CompletedAgents["a"]
	_, f := st.FailedAgents["a"]
	if c || !f {
		t.Errorf("a in completed_agents: %v, in failed_agents: %v; want failed only, its latest result", c, f)
	}
}

// A task a router was to place (it names no agent) that the budget kept from running is
// named in the outcome's skipped list and in the failure ("task t2"); it was an empty name.
func TestSkippedUnroutedTaskIsNamed(t *testing.T) {
	clock := troupetest.NewClock(time.Unix(1000, 0))
	a := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		clock.Advance(2 * time.Second)
		return &troupe.Result{AgentResult: map[string]any{"ok": true}, Confidence: troupe.Ptr(1.0)}, nil
	})
	eng := newEngine(t, engine.Config{Registry: agents(t, "a", a, "b", troupetest.NewScript()),
		Planner: staticPlan(&troupe.Plan{Stages: []troupe.PlanStage{
			{Tasks: []troupe.Task{{ID: "t1", Agent: "a", Reason: "x"}}},
			{Tasks: []troupe.Task{{ID: "t2", Reason: "x"}}},
		}}),
		Router: troupe.RouterFunc(func(ctx context.Context, in troupe.RouteInput, c troupe.Context) (troupe.RoutingDecision, error) {
			if in.Task.Agent != "" {
				return troupe.RoutingDecision{Target: in.Task.Agent, Reason: "planned"}, nil
			}
			return troupe.RoutingDecision{Target: "b", Reason: "chosen"}, nil
		}),
		Executor: local.New(local.Config{Clock: clock.Now}), TimeBudget: time.Second,
		Policy: troupe.ErrorPolicy{AllowPartialResults: troupe.Ptr(false)}})
	evs := run(t, eng, troupe.Request{Query: "q"})
	out := outcome(t, evs)
	if !slices.Equal(out.Skipped, []string{"task t2"}) || out.Error == nil || !strings.Contains(out.Error.Message, "so task t2 never ran") {
		t.Errorf("skipped %q, failure %v; want task t2 named in both", out.Skipped, out.Error)
	}
}

// The caller cancels the run while a human reviews a result, and the handler gives up with its
// context, as HumanHandler's doc says it may: the dispatch is cancelled, as an agent's own
// question cut short is. It was recorded as a failed review (HUMAN_REQUIRED).
func TestReviewCutShortByCancelIsCancelled(t *testing.T) {
	asked := make(chan struct{})
	h := troupe.HumanFunc(func(ctx context.Context, q troupe.Question) (troupe.Answer, error) {
		close(asked)
		<-ctx.Done()
		return troupe.Answer{}, ctx.Err()
	})
	rev := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{AgentResult: map[string]any{"ok": true}, Confidence: troupe.Ptr(1.0), RequiresHuman: true}, nil
	})
	eng := newEngine(t, engine.Config{Registry: agents(t, "rev", rev), Planner: chain("rev"), Human: h})
	ctx, cancel := context.WithCancel(t.Context())
	go func() { <-asked; cancel() }()
	evs, err := troupetest.Collect(eng.Run(ctx, troupe.Request{Query: "q"}))
	if err != nil {
		t.Fatal(err)
	}
	troupetest.CheckFinishedLog(t, evs)
	out := outcome(t, evs)
	if out.Status != troupe.RunCancelled {
		t.Fatalf("status %s", out.Status)
	}
	r := results(evs)["rev"][0]
	if r.Status != troupe.StatusCancelled || slices.ContainsFunc(r.Errors, func(e troupe.ErrorInfo) bool { return e.Code == troupe.CodeHumanRequired }) {
		t.Errorf("rev's result is %s (%v), want cancelled: the run was cancelled during its review", r.Status, r.Errors)
	}
}

// A run fails while a handler that ignores its context (a terminal prompt) reviews a result:
// cut off at the cancel grace, the dispatch reports what its agent used, which the totals
// count, and its error blames the handler, not the agent, which had finished.
func TestReviewCutOffAtGraceKeepsUsage(t *testing.T) {
	asked := make(chan struct{})
	release := make(chan struct{})
	h := troupe.HumanFunc(func(ctx context.Context, q troupe.Question) (troupe.Answer, error) {
		close(asked)
		<-release
		return troupe.Answer{Approved: true}, nil
	})
	rev := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{AgentResult: map[string]any{"ok": true}, Confidence: troupe.Ptr(1.0), RequiresHuman: true,
			TokensUsed: troupe.Ptr[int64](100), CostDollars: troupe.Ptr(0.5)}, nil
	})
	bad := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		<-asked
		return nil, &troupe.AgentError{Code: troupe.CodeAgentError, Message: "boom"}
	})
	eng := newEngine(t, engine.Config{Registry: agents(t, "rev", rev, "bad", bad), Planner: group(2, "rev", "bad"), Human: h,
		Executor: local.New(local.Config{CancelGrace: 20 * time.Millisecond})})
	evs := run(t, eng, troupe.Request{Query: "q"})
	close(release)
	if out := outcome(t, evs); out.Status != troupe.RunFailed {
		t.Errorf("the run ended %s, want failed (bad failed it)", out.Status)
	}
	r := results(evs)["rev"][0]
	if r.Status != troupe.StatusCancelled || len(r.Errors) == 0 || !strings.Contains(r.Errors[0].Message, "human-input handler") ||
		r.TokensUsed == nil || *r.TokensUsed != 100 || r.CostDollars == nil || *r.CostDollars != 0.5 {
		t.Errorf("rev ended %s with tokens %v, cost %v, errors %v; want cancelled, 100 tokens and $0.50, the handler named", r.Status, ptrText(r.TokensUsed), ptrText(r.CostDollars), r.Errors)
	}
	aggs := troupetest.Find(evs, troupe.KindRunAggregated, "")
	if len(aggs) != 1 {
		t.Fatalf("%d aggregations", len(aggs))
	}
	agg := aggs[0].Data.(*troupe.Aggregation)
	if agg.TotalTokensUsed == nil || *agg.TotalTokensUsed != 100 {
		t.Errorf("total tokens %v, want 100 (rev reported using them before its review)", agg.TotalTokensUsed)
	}
}

// A partial result goes through the result guardrails as a result does: one they block is
// not used by on_timeout use_partial, nor combined. It bypassed them.
func TestPartialResultPassesResultGuardrails(t *testing.T) {
	release := make(chan struct{})
	stuck := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		d.Partial(map[string]any{"secret": "hunter2"})
		<-release
		return &troupe.Result{AgentResult: map[string]any{"late": true}}, nil
	})
	var checked atomic.Int32
	g := troupe.GuardrailFuncs{ID: "no_secrets", After: func(ctx context.Context, d *troupe.Dispatch, r *troupe.Result) troupe.Verdict {
		checked.Add(1)
		if _, ok := r.AgentResult["secret"]; ok {
			return troupe.Verdict{Block: true, Reason: "secret in result"}
		}
		return troupe.Verdict{}
	}}
	eng := newEngine(t, engine.Config{Registry: agents(t, "slow", opt(stuck, troupe.WithTimeout(20*time.Millisecond))),
		Planner: chain("slow"), Guardrails: []troupe.Guardrail{g}, Policy: troupe.ErrorPolicy{OnTimeout: troupe.TimeoutUsePartial}})
	evs := run(t, eng, troupe.Request{Query: "q"})
	close(release)
	aggs := troupetest.Find(evs, troupe.KindRunAggregated, "")
	agg := aggs[0].Data.(*troupe.Aggregation)
	if checked.Load() == 0 {
		t.Error("the result guardrail never saw the partial result")
	}
	slow := results(evs)["slow"][0]
	if slow.Status != troupe.StatusTimeout || !slices.ContainsFunc(slow.Errors, func(e troupe.ErrorInfo) bool { return e.Code == troupe.CodeBlocked }) {
		t.Errorf("slow ended %s with errors %v; want a timeout whose partial result the guardrail blocked", slow.Status, slow.Errors)
	}
	if _, leaked := agg.CombinedResults["slow"]; leaked {
		t.Errorf("the partial result the result guardrail would block is combined: %v", agg.CombinedResults["slow"])
	}
}

// A composite whose first member spent 10 tokens times out (its second member ignores its
// context): what the finished member used was spent, and its timeout result reports it, so
// the budget and the totals count it, as they counted it while the composite ran. It was
// dropped, and an agent ran past the budget.
func TestTimedOutCompositeKeepsMemberUse(t *testing.T) {
	var calls atomic.Int32
	release := make(chan struct{})
	stuck := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		<-release
		return &troupe.Result{AgentResult: map[string]any{"ok": true}}, nil
	})
	seq := flow.Sequential(flow.SequentialConfig{}, flow.Named("m1", spender(&calls)), flow.Named("m2", stuck))
	var next1, next2 atomic.Int32
	eng := newEngine(t, engine.Config{Registry: agents(t, "seq", opt(seq, troupe.WithTimeout(50*time.Millisecond)),
		"next1", spender(&next1), "next2", spender(&next2)),
		Planner: chain("seq", "next1", "next2")})
	evs, err := troupetest.Collect(eng.Run(t.Context(), troupe.Request{Query: "q", Budget: troupe.Budget{MaxTokens: 15}}))
	close(release)
	if err != nil {
		t.Fatal(err)
	}
	if r := planResults(evs)["seq"]; len(r) != 1 || r[0].Status != troupe.StatusTimeout || r[0].TokensUsed == nil || *r[0].TokensUsed != 10 {
		t.Errorf("seq's results %v; want one timeout reporting m1's 10 tokens", r)
	}
	if n := next2.Load(); n != 0 {
		t.Errorf("next2 ran; m1's 10 tokens and next1's 10 spent the budget of 15 before it")
	}
	if aggs := troupetest.Find(evs, troupe.KindRunAggregated, ""); len(aggs) == 1 {
		agg := aggs[0].Data.(*troupe.Aggregation)
		if agg.TotalTokensUsed == nil || *agg.TotalTokensUsed != int64(10+10*(next1.Load()+next2.Load())) {
			t.Errorf("total tokens %v, want m1's 10 and 10 for each next agent that ran", ptrText(agg.TotalTokensUsed))
		}
	}
}

// stuckSequence is a sequence of one member, m, that ignores its context until release is
// called (before the engine's cleanup, which waits for it: deferred in the test).
func stuckSequence() (seq troupe.Agent, release func()) {
	ch := make(chan struct{})
	stuck := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		<-ch
		return &troupe.Result{AgentResult: map[string]any{"ok": true}}, nil
	})
	return flow.Sequential(flow.SequentialConfig{}, flow.Named("m", stuck)), func() { close(ch) }
}

// A composite whose member ignores its context times out: the member's dispatch_started is
// answered, cancelled, just after the composite's timeout, so the finished log answers every
// dispatch it started. It was left open.
func TestTimedOutCompositeEndsItsOpenMembers(t *testing.T) {
	seq, release := stuckSequence()
	defer release()
	eng := newEngine(t, engine.Config{Registry: agents(t, "seq", opt(seq, troupe.WithTimeout(20*time.Millisecond))), Planner: chain("seq")})
	evs, err := troupetest.Collect(eng.Run(t.Context(), troupe.Request{Query: "q"}))
	if err != nil {
		t.Fatal(err)
	}
	troupetest.CheckFinishedLog(t, evs)
	// m's closing follows seq's timeout, and says why.
	seqAt, mAt := -1, -1
	for i, ev := range evs {
		if res, ok := ev.Data.(*troupe.Result); ok {
			switch res.AgentName {
			case "seq":
				seqAt = i
			case "m":
				mAt = i
				if res.Status != troupe.StatusCancelled || !strings.Contains(res.Errors[0].Message, "seq, which it ran in, ended") {
					t.Errorf("m ended %s (%v); want cancelled with seq", res.Status, res.Errors)
				}
			}
		}
	}
	if seqAt < 0 || mAt < seqAt {
		t.Errorf("seq's result at event %d, m's at %d; want m's just after seq's", seqAt+1, mAt+1)
	}
}

// The caller cancels the run while a retry waits out its backoff: the run ends cancelled, the
// agent is not run again, and the log is whole.
func TestCancelDuringRetryBackoff(t *testing.T) {
	a := troupetest.NewScript(troupetest.Fail(troupe.CodeAgentError, true))
	eng := newEngine(t, engine.Config{Registry: agents(t, "a", a, "b", troupetest.NewScript()), Planner: chain("a", "b"),
		Policy: troupe.ErrorPolicy{OnError: troupe.Retry, Retry: troupe.RetryPolicy{Initial: 10 * time.Second, Max: 10 * time.Second}}})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	r, err := eng.Start(ctx, troupe.Request{Query: "q"})
	if err != nil {
		t.Fatal(err)
	}
	var evs []troupe.Event
	for ev, err := range r.Events(t.Context()) {
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
		if ev.Kind == troupe.KindRetryScheduled {
			cancel()
		}
	}
	troupetest.CheckFinishedLog(t, evs)
	st, _ := r.Wait(t.Context())
	out := outcome(t, evs)
	if out.Status != troupe.RunCancelled || a.Calls() != 1 || st.Status != troupe.RunCancelled {
		t.Errorf("run ended %s (state %s), a ran %d times; want cancelled, a run once", out.Status, st.Status, a.Calls())
	}
}

// A run resumed from a log that stops between a timed-out composite's result and the closing of
// its member still open takes the composite's result and closes the member as it ends, so its
// log answers every start too, and the run ends as it did.
func TestResumedTimedOutCompositeClosesItsOpenMember(t *testing.T) {
	seq, release := stuckSequence()
	defer release()
	st := memory.New()
	cfg := engine.Config{Registry: agents(t, "seq", opt(seq, troupe.WithTimeout(20*time.Millisecond))), Planner: chain("seq"), Store: st}
	id, ref := runToEnd(t, cfg, troupe.Request{Query: "q"})
	troupetest.CheckFinishedLog(t, ref)
	evs := resumeFrom(t, st, id, cfg, recordedAs(troupe.KindDispatchFailed, "seq"))
	troupetest.CheckFinishedLog(t, evs)
	if got, want := troupetest.Last(evs).Kind, troupetest.Last(ref).Kind; got != want {
		t.Errorf("resumed: the run ended with %s, want %s as without the crash", got, want)
	}
	if m := finalNested(t, evs, "m"); m.Status != troupe.StatusCancelled {
		t.Errorf("resumed: m ended %s (%v), want cancelled", m.Status, m.Errors)
	}
}
