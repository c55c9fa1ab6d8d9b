package engine_test

// Runs whose planned agents are composites (package flow), stopped and resumed from their log:
// defects TestResumeProperty found once some of its agents were composites, each reduced.

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/engine"
	"github.com/troupehq/troupe/flow"
	"github.com/troupehq/troupe/store/memory"
	"github.com/troupehq/troupe/troupetest"
)

// finalResult is the last result the log holds of the planned dispatch to agent.
func finalResult(t *testing.T, evs []troupe.Event, agent string) *troupe.Result {
	t.Helper()
	var last *troupe.Result
	for _, ev := range evs {
		if res, ok := ev.Data.(*troupe.Result); ok && ev.Parent == "" && res.AgentName == agent {
			last = res
		}
	}
	if last == nil {
		t.Fatalf("the log holds no result of %s", agent)
	}
	return last
}

// A composite in flight when the run failed (fail_fast) still ends as its members let it: a
// collect_all group one of whose members had completed completes. Resumed from a log that ends
// with the failure, the run makes the composite again, and the composite, cancelled at once,
// takes its finished member's result from the log and completes as it did without the crash,
// reporting what that member used; it was cancelled before it ran (and its members' usage
// lost from the run's totals).
func TestResumedCompositeCancelledAtOnceTakesItsMembers(t *testing.T) {
	m1Started := make(chan struct{})
	boom := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		select {
		case <-m1Started:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return nil, &troupe.AgentError{Code: troupe.CodeAgentError, Message: "broken"}
	})
	m0 := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{AgentResult: map[string]any{"m0": true}, TokensUsed: troupe.Ptr(int64(100)), CostDollars: troupe.Ptr(0.1)}, nil
	})
	m1 := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		close(m1Started)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	team := flow.Parallel(flow.ParallelConfig{MaxConcurrent: 1}, flow.Named("m0", m0), flow.Named("m1", m1))
	reg := agents(t, "boom", boom, "team", team)
	pol := troupe.ErrorPolicy{OnError: troupe.FailFast}
	st := memory.New()
	eng := newEngine(t, engine.Config{Registry: reg, Planner: group(2, "boom", "team"), Store: st, Policy: pol})
	r, err := eng.Start(t.Context(), troupe.Request{Query: "q"})
	if err != nil {
		t.Fatal(err)
	}
	r.Wait(t.Context()) // it fails: boom is broken
	ref, _ := st.Events(t.Context(), r.ID(), 0)
	want := finalResult(t, ref, "team")
	if want.Status != troupe.StatusCompleted || want.TokensUsed == nil || *want.TokensUsed != 100 {
		t.Fatalf("uninterrupted: team ended %s with tokens %v; want completed with m0's 100", want.Status, want.TokensUsed)
	}

	cut := logUpTo(t, st, r.ID(), func(ev troupe.Event) bool { return ev.Kind == troupe.KindDispatchFailed && ev.Agent == "boom" })
	eng2 := newEngine(t, engine.Config{Registry: reg, Planner: group(2, "boom", "team"), Store: cut, Policy: pol})
	r2, err := eng2.Resume(t.Context(), r.ID(), engine.ResumeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r2.Wait(t.Context())
	evs, _ := cut.Events(t.Context(), r.ID(), 0)
	troupetest.CheckFinishedLog(t, evs)
	got := finalResult(t, evs, "team")
	if got.Status != want.Status || got.TokensUsed == nil || *got.TokensUsed != *want.TokensUsed {
		t.Errorf("resumed: team ended %s with tokens %v; want %s with %d, as without the crash", got.Status, got.TokensUsed, want.Status, *want.TokensUsed)
	}
}

// A budget a composite's member found spent (its Admit check recorded budget_exhausted) is
// spent for the resumed run too, which takes the composite's result from the log and checks
// no budget of its own after it: its outcome names the budget, as the run's without the crash
// does, and its aggregation carries the warning.
func TestResumedRunOutcomeNamesBudgetSpentInComposite(t *testing.T) {
	release := make(chan struct{})
	slow := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return &troupe.Result{AgentResult: map[string]any{"slow": true}}, nil
	})
	costly := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{AgentResult: map[string]any{"m0": true}, TokensUsed: troupe.Ptr(int64(150))}, nil
	})
	never := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		t.Error("m1 ran although the token budget was spent")
		return &troupe.Result{AgentResult: map[string]any{"m1": true}}, nil
	})
	team := flow.Sequential(flow.SequentialConfig{}, flow.Named("m0", costly), flow.Named("m1", never))
	reg := agents(t, "team", team, "slow", slow)
	pol := troupe.ErrorPolicy{OnError: troupe.Continue}
	st := &gateStore{Store: memory.New()}
	eng := newEngine(t, engine.Config{Registry: reg, Planner: group(2, "team", "slow"), Store: st, Policy: pol})
	req := troupe.Request{Query: "q", Budget: troupe.Budget{MaxTokens: 100}}
	r, err := eng.Start(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	<-st.recorded(troupe.KindDispatchFailed, "team")
	close(release)
	r.Wait(t.Context())
	ref, _ := st.Events(t.Context(), r.ID(), 0)
	want := outcome(t, ref)
	if want.Budget == "" {
		t.Fatalf("uninterrupted: outcome %+v names no budget spent", want)
	}

	cut := logUpTo(t, st, r.ID(), func(ev troupe.Event) bool { return ev.Kind == troupe.KindDispatchFailed && ev.Agent == "team" })
	eng2 := newEngine(t, engine.Config{Registry: reg, Planner: group(2, "team", "slow"), Store: cut, Policy: pol})
	r2, err := eng2.Resume(t.Context(), r.ID(), engine.ResumeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r2.Wait(t.Context())
	evs, _ := cut.Events(t.Context(), r.ID(), 0)
	troupetest.CheckFinishedLog(t, evs)
	if got := outcome(t, evs); got.Budget != want.Budget || got.Status != want.Status {
		t.Errorf("resumed: outcome %s, budget %q; want %s, %q as without the crash", got.Status, got.Budget, want.Status, want.Budget)
	}
	if n := len(troupetest.Find(evs, troupe.KindBudgetExhausted, "")); n != 1 {
		t.Errorf("the log records budget_exhausted %d times, want once", n)
	}
	names := func(w string) bool { return strings.HasPrefix(w, want.Budget) }
	if agg := aggregation(t, evs); slices.ContainsFunc(aggregation(t, ref).Warnings, names) && !slices.ContainsFunc(agg.Warnings, names) {
		t.Errorf("resumed aggregation warnings %q name no budget spent", agg.Warnings)
	}
}

func aggregation(t *testing.T, evs []troupe.Event) *troupe.Aggregation {
	t.Helper()
	for _, ev := range evs {
		if a, ok := ev.Data.(*troupe.Aggregation); ok {
			return a
		}
	}
	t.Fatal("the log holds no aggregation")
	return nil
}

// A composite's member that the log shows started was admitted by the run that made the log,
// within its budget: a resumed run whose budget is spent by then (by results the log holds,
// recorded after the member started) runs it again all the same, as it makes a planned
// dispatch its log shows started, rather than refusing it as "not started" and failing the
// composite that completed without the crash.
func TestResumedCompositeMemberLoggedStartedIsAdmitted(t *testing.T) {
	release := make(chan struct{})
	m0Started := make(chan struct{})
	var once sync.Once
	m0 := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		once.Do(func() { close(m0Started) })
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return &troupe.Result{AgentResult: map[string]any{"m0": true}}, nil
	})
	spender := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		<-m0Started
		return &troupe.Result{AgentResult: map[string]any{"spent": true}, TokensUsed: troupe.Ptr(int64(150))}, nil
	})
	team := flow.Sequential(flow.SequentialConfig{}, flow.Named("m0", m0))
	reg := agents(t, "team", team, "spender", spender)
	st := &gateStore{Store: memory.New()}
	eng := newEngine(t, engine.Config{Registry: reg, Planner: group(2, "team", "spender"), Store: st})
	r, err := eng.Start(t.Context(), troupe.Request{Query: "q", Budget: troupe.Budget{MaxTokens: 100}})
	if err != nil {
		t.Fatal(err)
	}
	<-st.recorded(troupe.KindDispatchCompleted, "spender")
	close(release)
	r.Wait(t.Context())
	ref, _ := st.Events(t.Context(), r.ID(), 0)
	if want := finalResult(t, ref, "team"); want.Status != troupe.StatusCompleted {
		t.Fatalf("uninterrupted: team ended %s, want completed", want.Status)
	}

	cut := logUpTo(t, st, r.ID(), func(ev troupe.Event) bool { return ev.Kind == troupe.KindDispatchCompleted && ev.Agent == "spender" })
	eng2 := newEngine(t, engine.Config{Registry: reg, Planner: group(2, "team", "spender"), Store: cut})
	r2, err := eng2.Resume(t.Context(), r.ID(), engine.ResumeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r2.Wait(t.Context())
	evs, _ := cut.Events(t.Context(), r.ID(), 0)
	troupetest.CheckFinishedLog(t, evs)
	if got := finalResult(t, evs, "team"); got.Status != troupe.StatusCompleted {
		t.Errorf("resumed: team ended %s (%v), want completed as without the crash", got.Status, got.Errors)
	}
}

// What a composite's members used counts against the run's budgets as they finish, and a
// resumed composite's members whose results it takes from the log used it all the same: the
// resumed run counts them, and a member the budget refused without the crash is refused again
// rather than run.
func TestResumedCompositeCountsRecordedMembersAgainstBudget(t *testing.T) {
	release := make(chan struct{})
	var m2Runs atomic.Int32
	m0 := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{AgentResult: map[string]any{"m0": true}, TokensUsed: troupe.Ptr(int64(60))}, nil
	})
	m1 := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return &troupe.Result{AgentResult: map[string]any{"m1": true}, TokensUsed: troupe.Ptr(int64(60))}, nil
	})
	m2 := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		m2Runs.Add(1)
		return &troupe.Result{AgentResult: map[string]any{"m2": true}}, nil
	})
	team := flow.Parallel(flow.ParallelConfig{MaxConcurrent: 1}, flow.Named("m0", m0), flow.Named("m1", m1), flow.Named("m2", m2))
	reg := agents(t, "team", team)
	st := &gateStore{Store: memory.New()}
	req := troupe.Request{Query: "q", Budget: troupe.Budget{MaxTokens: 100}}
	eng := newEngine(t, engine.Config{Registry: reg, Planner: group(1, "team"), Store: st})
	r, err := eng.Start(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	<-st.recorded(troupe.KindDispatchStarted, "m1")
	close(release)
	r.Wait(t.Context())
	if n := m2Runs.Load(); n != 0 {
		t.Fatalf("uninterrupted: m2 ran %d times past the token budget", n)
	}

	cut := logUpTo(t, st, r.ID(), startedTo("m1"))
	eng2 := newEngine(t, engine.Config{Registry: reg, Planner: group(1, "team"), Store: cut})
	r2, err := eng2.Resume(t.Context(), r.ID(), engine.ResumeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r2.Wait(t.Context())
	evs, _ := cut.Events(t.Context(), r.ID(), 0)
	troupetest.CheckFinishedLog(t, evs)
	if n := m2Runs.Load(); n != 0 {
		t.Errorf("resumed: m2 ran %d times, though m0's recorded and m1's tokens spent the budget before it", n)
	}
}

// The same one level down: a composite inside the one in flight when the run failed, itself
// in flight then, with a member that had completed. Made again by the resumed run, already
// ending, the outer composite runs the inner one all the same (it is cancelled too), which
// takes its completed member's result and completes, so the outer one completes as without the
// crash; the inner one was refused as "not started", and both were cancelled.
func TestResumedNestedCompositeCancelledAtOnceTakesItsMembers(t *testing.T) {
	m1Started := make(chan struct{})
	boom := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		select {
		case <-m1Started:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return nil, &troupe.AgentError{Code: troupe.CodeAgentError, Message: "broken"}
	})
	m0 := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{AgentResult: map[string]any{"m0": true}, TokensUsed: troupe.Ptr(int64(100))}, nil
	})
	m1 := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		close(m1Started)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	inner := flow.Parallel(flow.ParallelConfig{MaxConcurrent: 1}, flow.Named("m0", m0), flow.Named("m1", m1))
	team := flow.Sequential(flow.SequentialConfig{}, flow.Named("inner", inner))
	reg := agents(t, "boom", boom, "team", team)
	pol := troupe.ErrorPolicy{OnError: troupe.FailFast}
	st := memory.New()
	eng := newEngine(t, engine.Config{Registry: reg, Planner: group(2, "boom", "team"), Store: st, Policy: pol})
	r, err := eng.Start(t.Context(), troupe.Request{Query: "q"})
	if err != nil {
		t.Fatal(err)
	}
	r.Wait(t.Context()) // it fails: boom is broken
	ref, _ := st.Events(t.Context(), r.ID(), 0)
	want := finalResult(t, ref, "team")
	if want.Status != troupe.StatusCompleted || want.TokensUsed == nil || *want.TokensUsed != 100 {
		t.Fatalf("uninterrupted: team ended %s with tokens %v; want completed with m0's 100", want.Status, want.TokensUsed)
	}

	cut := logUpTo(t, st, r.ID(), func(ev troupe.Event) bool { return ev.Kind == troupe.KindDispatchFailed && ev.Agent == "boom" })
	eng2 := newEngine(t, engine.Config{Registry: reg, Planner: group(2, "boom", "team"), Store: cut, Policy: pol})
	r2, err := eng2.Resume(t.Context(), r.ID(), engine.ResumeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r2.Wait(t.Context())
	evs, _ := cut.Events(t.Context(), r.ID(), 0)
	troupetest.CheckFinishedLog(t, evs)
	got := finalResult(t, evs, "team")
	if got.Status != want.Status || got.TokensUsed == nil || *got.TokensUsed != *want.TokensUsed {
		t.Errorf("resumed: team ended %s with tokens %v; want %s with %d, as without the crash", got.Status, got.TokensUsed, want.Status, *want.TokensUsed)
	}
}

// A sequence that goes on past a failed step (ContinueOnError), in flight when the run failed,
// made again by the resumed run, already ending: cancelled, it still takes the results the log
// holds of the steps after the failed one, which ran before it was cancelled the first time,
// and reports what they used, rather than stopping at the failed step as a cancelled sequence
// stops at a step that fails now.
func TestResumedSequenceCancelledAtOnceGoesPastRecordedFailure(t *testing.T) {
	m2Started := make(chan struct{})
	boom := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		select {
		case <-m2Started:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return nil, &troupe.AgentError{Code: troupe.CodeAgentError, Message: "broken"}
	})
	m0 := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		return nil, &troupe.AgentError{Code: troupe.CodeAgentError, Message: "flaky"}
	})
	m1 := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{AgentResult: map[string]any{"m1": true}, TokensUsed: troupe.Ptr(int64(100))}, nil
	})
	m2 := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		close(m2Started)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	team := flow.Sequential(flow.SequentialConfig{OnError: flow.ContinueOnError}, flow.Named("m0", m0), flow.Named("m1", m1), flow.Named("m2", m2))
	reg := agents(t, "boom", boom, "team", team)
	pol := troupe.ErrorPolicy{OnError: troupe.FailFast}
	st := memory.New()
	eng := newEngine(t, engine.Config{Registry: reg, Planner: group(2, "boom", "team"), Store: st, Policy: pol})
	r, err := eng.Start(t.Context(), troupe.Request{Query: "q"})
	if err != nil {
		t.Fatal(err)
	}
	r.Wait(t.Context()) // it fails: boom is broken
	ref, _ := st.Events(t.Context(), r.ID(), 0)
	want := finalResult(t, ref, "team")
	if want.TokensUsed == nil || *want.TokensUsed != 100 {
		t.Fatalf("uninterrupted: team ended %s with tokens %v; want m1's 100", want.Status, want.TokensUsed)
	}

	cut := logUpTo(t, st, r.ID(), func(ev troupe.Event) bool { return ev.Kind == troupe.KindDispatchFailed && ev.Agent == "boom" })
	eng2 := newEngine(t, engine.Config{Registry: reg, Planner: group(2, "boom", "team"), Store: cut, Policy: pol})
	r2, err := eng2.Resume(t.Context(), r.ID(), engine.ResumeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r2.Wait(t.Context())
	evs, _ := cut.Events(t.Context(), r.ID(), 0)
	troupetest.CheckFinishedLog(t, evs)
	got := finalResult(t, evs, "team")
	if got.Status != want.Status || got.TokensUsed == nil || *got.TokensUsed != *want.TokensUsed {
		t.Errorf("resumed: team ended %s with tokens %v; want %s with %d, as without the crash", got.Status, got.TokensUsed, want.Status, *want.TokensUsed)
	}
}

// A budget the log records as spent stays spent, for members of composites too: nothing the
// run that made the log had not started by then starts (Resume). A member refused for the
// budget without the crash is refused again, though what spent the budget — another
// composite's member, whose result the resumed run has not taken yet — does not count yet.
func TestResumedCompositeMemberRefusedAfterLoggedBudget(t *testing.T) {
	var resumed atomic.Bool
	s0Done, teamDone, release := make(chan struct{}), make(chan struct{}), make(chan struct{})
	var m1Runs atomic.Int32
	s0 := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		defer close(s0Done)
		return &troupe.Result{AgentResult: map[string]any{"s0": true}, TokensUsed: troupe.Ptr(int64(150))}, nil
	})
	s1 := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return &troupe.Result{AgentResult: map[string]any{"s1": true}}, nil
	})
	ok := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{AgentResult: map[string]any{"m0": true}}, nil
	})
	m1 := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		m1Runs.Add(1)
		return &troupe.Result{AgentResult: map[string]any{"m1": true}}, nil
	})
	spenderSeq := flow.Sequential(flow.SequentialConfig{}, flow.Named("s0", s0), flow.Named("s1", s1))
	teamSeq := flow.Sequential(flow.SequentialConfig{}, flow.Named("m0", ok), flow.Named("m1", m1))
	// Without the crash the spender spends the budget before the team asks to start m1;
	// resumed, the team runs before the spender takes s0's result from the log.
	spender := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		if resumed.Load() {
			<-teamDone
		}
		return spenderSeq.Run(ctx, d)
	})
	team := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		if !resumed.Load() {
			<-s0Done
		} else {
			defer close(teamDone)
		}
		return teamSeq.Run(ctx, d)
	})
	reg := agents(t, "spender", spender, "team", team)
	st := &gateStore{Store: memory.New()}
	req := troupe.Request{Query: "q", Budget: troupe.Budget{MaxTokens: 100}}
	eng := newEngine(t, engine.Config{Registry: reg, Planner: group(2, "spender", "team"), Store: st})
	r, err := eng.Start(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	<-st.recorded(troupe.KindDispatchFailed, "team")
	close(release)
	r.Wait(t.Context())
	if n := m1Runs.Load(); n != 0 {
		t.Fatalf("uninterrupted: m1 ran %d times past the token budget", n)
	}

	resumed.Store(true)
	cut := logUpTo(t, st, r.ID(), func(ev troupe.Event) bool { return ev.Kind == troupe.KindBudgetExhausted })
	eng2 := newEngine(t, engine.Config{Registry: reg, Planner: group(2, "spender", "team"), Store: cut})
	r2, err := eng2.Resume(t.Context(), r.ID(), engine.ResumeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r2.Wait(t.Context())
	evs, _ := cut.Events(t.Context(), r.ID(), 0)
	troupetest.CheckFinishedLog(t, evs)
	if n := m1Runs.Load(); n != 0 {
		t.Errorf("resumed: m1 ran %d times, though the log records the budget spent before it started", n)
	}
}

// A resumed FirstSuccess group takes the result its log holds of the branch that won before it
// runs any branch again: a branch that paused for a human before the winner won is not asked
// again, its question moot as it was. It was run again first, or not, as the branches were
// scheduled: one at a time, it always asked again.
func TestResumedFirstSuccessTakesRecordedWinnerFirst(t *testing.T) {
	var asks atomic.Int32
	asker := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		asks.Add(1)
		_, err := d.Ask(ctx, troupe.Question{Prompt: "which one?"})
		return nil, err // paused: there is no one to ask
	})
	release := make(chan struct{})
	slow := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return &troupe.Result{AgentResult: map[string]any{"slow": true}}, nil
	})
	winner := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{AgentResult: map[string]any{"answer": 42}}, nil
	})
	grp := flow.Parallel(flow.ParallelConfig{Strategy: flow.FirstSuccess, MaxConcurrent: 1}, flow.Named("asker", asker), flow.Named("winner", winner))
	reg := agents(t, "group", grp, "slow", slow)
	st := &gateStore{Store: memory.New()}
	eng := newEngine(t, engine.Config{Registry: reg, Planner: group(2, "group", "slow"), Store: st})
	r, err := eng.Start(t.Context(), troupe.Request{Query: "q"})
	if err != nil {
		t.Fatal(err)
	}
	<-st.recorded(troupe.KindDispatchCompleted, "group")
	close(release)
	r.Wait(t.Context())
	if n := asks.Load(); n != 1 {
		t.Fatalf("uninterrupted: asker ran %d times, want once", n)
	}

	cut := logUpTo(t, st, r.ID(), func(ev troupe.Event) bool { return ev.Kind == troupe.KindDispatchCompleted && ev.Agent == "winner" })
	eng2 := newEngine(t, engine.Config{Registry: reg, Planner: group(2, "group", "slow"), Store: cut})
	r2, err := eng2.Resume(t.Context(), r.ID(), engine.ResumeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r2.Wait(t.Context())
	evs, _ := cut.Events(t.Context(), r.ID(), 0)
	troupetest.CheckFinishedLog(t, evs)
	if got := finalResult(t, evs, "group"); got.Status != troupe.StatusCompleted {
		t.Errorf("resumed: group ended %s, want completed with the recorded winner", got.Status)
	}
	if n := asks.Load(); n != 1 {
		t.Errorf("resumed: asker asked again (%d runs in all), though the recorded winner had made its question moot", n)
	}
}

// A budget a composite's member found spent is noted where the log noted it, before what the
// resumed run does after: the aggregation's warnings come in the order they did without the
// crash, though the resumed run takes the member's composite whole from the log and checks no
// budget itself (it noted the budget spent as it ended, after the composite's warnings).
func TestResumedBudgetWarningKeepsItsPlace(t *testing.T) {
	s0 := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{AgentResult: map[string]any{"s0": true}, TokensUsed: troupe.Ptr(int64(150))}, nil
	})
	s1 := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{AgentResult: map[string]any{"s1": true}}, nil
	})
	sub := flow.Sequential(flow.SequentialConfig{OnError: flow.ContinueOnError}, flow.Named("s0", s0), flow.Named("s1", s1))
	team := flow.Sequential(flow.SequentialConfig{}, flow.Named("sub", sub))
	reg := agents(t, "team", team)
	st := &gateStore{Store: memory.New()}
	req := troupe.Request{Query: "q", Budget: troupe.Budget{MaxTokens: 100}}
	eng := newEngine(t, engine.Config{Registry: reg, Planner: group(1, "team"), Store: st})
	r, err := eng.Start(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	r.Wait(t.Context())
	ref, _ := st.Events(t.Context(), r.ID(), 0)
	want := aggregation(t, ref).Warnings

	cut := logUpTo(t, st, r.ID(), func(ev troupe.Event) bool { return ev.Kind == troupe.KindDispatchCompleted && ev.Agent == "sub" })
	eng2 := newEngine(t, engine.Config{Registry: reg, Planner: group(1, "team"), Store: cut})
	r2, err := eng2.Resume(t.Context(), r.ID(), engine.ResumeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r2.Wait(t.Context())
	evs, _ := cut.Events(t.Context(), r.ID(), 0)
	troupetest.CheckFinishedLog(t, evs)
	if got := aggregation(t, evs).Warnings; !slices.Equal(got, want) {
		t.Errorf("resumed aggregation warnings\n%q\nwant, as without the crash,\n%q", got, want)
	}
}

// A composite run again cancelled by a resumed run already ending runs only the composites
// among its members that the log shows running members then, not one that had paused for a
// human: that one had stopped, its question open, when the run that made the log ended, and
// is not started again to ask it again.
func TestResumedEndingRunDoesNotRestartPausedMember(t *testing.T) {
	asked, slowStarted := make(chan struct{}), make(chan struct{})
	var once sync.Once
	s0 := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{AgentResult: map[string]any{"s0": true}}, nil
	})
	s1 := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		defer once.Do(func() { close(asked) })
		_, err := d.Ask(ctx, troupe.Question{Prompt: "which?"})
		return nil, err // paused: there is no one to ask
	})
	slow := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		close(slowStarted)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	boom := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		<-asked
		<-slowStarted
		return nil, &troupe.AgentError{Code: troupe.CodeAgentError, Message: "broken"}
	})
	sub := flow.Sequential(flow.SequentialConfig{}, flow.Named("s0", s0), flow.Named("s1", s1))
	team := flow.Parallel(flow.ParallelConfig{}, flow.Named("sub", sub), flow.Named("slow", slow))
	reg := agents(t, "boom", boom, "team", team)
	pol := troupe.ErrorPolicy{OnError: troupe.FailFast}
	st := memory.New()
	eng := newEngine(t, engine.Config{Registry: reg, Planner: group(2, "boom", "team"), Store: st, Policy: pol})
	r, err := eng.Start(t.Context(), troupe.Request{Query: "q"})
	if err != nil {
		t.Fatal(err)
	}
	r.Wait(t.Context()) // it fails: boom is broken

	cut := logUpTo(t, st, r.ID(), func(ev troupe.Event) bool { return ev.Kind == troupe.KindDispatchFailed && ev.Agent == "boom" })
	eng2 := newEngine(t, engine.Config{Registry: reg, Planner: group(2, "boom", "team"), Store: cut, Policy: pol})
	r2, err := eng2.Resume(t.Context(), r.ID(), engine.ResumeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r2.Wait(t.Context())
	evs, _ := cut.Events(t.Context(), r.ID(), 0)
	troupetest.CheckFinishedLog(t, evs)
	for _, agent := range []string{"sub", "s1"} {
		if n := len(troupetest.Find(evs, troupe.KindDispatchStarted, agent)); n != 1 {
			t.Errorf("%s started %d times in the log, want once: it paused, and the run ended", agent, n)
		}
	}
}
