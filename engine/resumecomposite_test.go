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
	"testing/synctest"
	"time"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/engine"
	"github.com/troupehq/troupe/executor/local"
	"github.com/troupehq/troupe/flow"
	"github.com/troupehq/troupe/store/memory"
	"github.com/troupehq/troupe/troupetest"
)

// askAndWinAfter returns an agent that asks a question and, with no one to ask, pauses, and one
// that completes once st records the first one's pause.
func askAndWinAfter(st *gateStore) (ask, win troupe.Agent) {
	ask = troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		_, err := d.Ask(ctx, troupe.Question{Prompt: "which way?"})
		return nil, err // paused: there is no one to ask
	})
	win = troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		<-st.recorded(troupe.KindDispatchFailed, "ask") // it paused
		return &troupe.Result{AgentResult: map[string]any{"won": true}}, nil
	})
	return ask, win
}

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
	teamDone, release := make(chan struct{}), make(chan struct{})
	var m1Runs atomic.Int32
	st := &gateStore{Store: memory.New()}
	s0 := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
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
			// s0's result recorded, its tokens are counted: returned, they might not be yet
			// when the team asks to start m1, and m1 would run (and the test wait forever
			// for the team's failure).
			<-st.recorded(troupe.KindDispatchCompleted, "s0")
		} else {
			defer close(teamDone)
		}
		return teamSeq.Run(ctx, d)
	})
	reg := agents(t, "spender", spender, "team", team)
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

// resumeFrom resumes run id from the log in st, cut after the first event last matches, in a
// new engine of cfg (its store replaced by the cut log), and returns the finished log. With
// before, the cut log is gated (gateStore) and handed to each before the run resumes.
func resumeFrom(t *testing.T, st troupe.Store, id string, cfg engine.Config, last func(troupe.Event) bool, before ...func(*gateStore)) []troupe.Event {
	t.Helper()
	cfg.Store = logUpTo(t, st, id, last)
	if len(before) > 0 {
		cut := &gateStore{Store: cfg.Store}
		for _, f := range before {
			f(cut)
		}
		cfg.Store = cut
	}
	r, err := newEngine(t, cfg).Resume(t.Context(), id, engine.ResumeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r.Wait(t.Context())
	evs, _ := cfg.Store.Events(t.Context(), id, 0)
	troupetest.CheckFinishedLog(t, evs)
	return evs
}

// runToEnd runs req in a new engine of cfg and returns the run's id and its finished log.
func runToEnd(t *testing.T, cfg engine.Config, req troupe.Request) (string, []troupe.Event) {
	t.Helper()
	r, err := newEngine(t, cfg).Start(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	r.Wait(t.Context())
	evs, _ := cfg.Store.Events(t.Context(), r.ID(), 0)
	return r.ID(), evs
}

func recordedAs(kind troupe.Kind, agent string) func(troupe.Event) bool {
	return func(ev troupe.Event) bool { return ev.Kind == kind && ev.Agent == agent }
}

// A sequence that goes on past a failed step (ContinueOnError) stops at a step cancelled with
// it, when the run's caller cancels the run. Resumed from a log that holds that step's
// cancelled result, and not the sequence's, the run is cancelled at the same point and makes
// the group holding the sequence again, cancelled, and the group the sequence: the sequence
// takes the step's result from the log and stops there, as it did. It went on past it, taking
// it for a failure from before it was cancelled, and, that step its last, completed.
func TestResumedSequenceStopsAtRecordedCancelledStep(t *testing.T) {
	m1Started := make(chan struct{})
	st := &gateStore{Store: memory.New()}
	m0 := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{AgentResult: map[string]any{"m0": true}}, nil
	})
	m1 := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		close(m1Started)
		<-ctx.Done()
		<-st.recorded(troupe.KindDispatchFailed, "other")
		return nil, ctx.Err()
	})
	// other's cancelled result, before m1's in the log, cancels the resumed run, which makes
	// team again first; slow, still running when the process died, is made again too.
	wait := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	seq := flow.Sequential(flow.SequentialConfig{OnError: flow.ContinueOnError}, flow.Named("m0", m0), flow.Named("m1", m1))
	team := flow.Parallel(flow.ParallelConfig{}, flow.Named("seq", seq))
	cfg := engine.Config{Registry: agents(t, "team", team, "other", wait, "slow", wait), Planner: group(3, "team", "other", "slow")}
	cfg.Store = st
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	r, err := newEngine(t, cfg).Start(ctx, troupe.Request{Query: "q"})
	if err != nil {
		t.Fatal(err)
	}
	<-m1Started
	cancel()
	r.Wait(t.Context())
	ref, _ := st.Events(t.Context(), r.ID(), 0)
	last := func(evs []troupe.Event) *troupe.Result { rs := results(evs)["seq"]; return rs[len(rs)-1] }
	if want := last(ref); want.Status != troupe.StatusCancelled {
		t.Fatalf("uninterrupted: seq ended %s, want cancelled", want.Status)
	}

	evs := resumeFrom(t, st, r.ID(), cfg, recordedAs(troupe.KindDispatchFailed, "m1"))
	if got := last(evs); got.Status != troupe.StatusCancelled {
		t.Errorf("resumed: seq ended %s (%v), want cancelled as without the crash", got.Status, got.Errors)
	}
}

// A first_success group one branch of which asked a human (there is no one to ask: it paused)
// before another won has completed: the question is moot. A resumed run that takes the run's
// failure from its log makes again the collect_all group holding it, which the log shows
// running members (the other branch, cancelled by the failure): the group takes the
// first_success group's completed result from the log and completes, as it did. The open
// question held the group as if it waited for the answer, so it was cancelled before running.
func TestResumedGroupWithMootQuestionTakesItsMembers(t *testing.T) {
	asked, won := make(chan struct{}), make(chan struct{})
	ask := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		defer close(asked)
		_, err := d.Ask(ctx, troupe.Question{Prompt: "which?"})
		return nil, err
	})
	win := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		<-asked
		return &troupe.Result{AgentResult: map[string]any{"won": true}}, nil
	})
	slow := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	boom := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		select {
		case <-won:
		case <-ctx.Done():
		}
		return nil, &troupe.AgentError{Code: troupe.CodeAgentError, Message: "broken"}
	})
	pick := flow.Parallel(flow.ParallelConfig{Strategy: flow.FirstSuccess}, flow.Named("ask", ask), flow.Named("win", win))
	team := flow.Parallel(flow.ParallelConfig{}, flow.Named("slow", slow), flow.Named("pick", pick))
	cfg := engine.Config{Registry: agents(t, "team", team, "boom", boom), Planner: group(2, "team", "boom"), Policy: troupe.ErrorPolicy{OnError: troupe.FailFast}}
	st := &gateStore{Store: memory.New()}
	cfg.Store = st
	go func() { <-st.recorded(troupe.KindDispatchCompleted, "pick"); close(won) }()
	id, ref := runToEnd(t, cfg, troupe.Request{Query: "q"})
	if want := finalResult(t, ref, "team"); want.Status != troupe.StatusCompleted {
		t.Fatalf("uninterrupted: team ended %s, want completed (pick completed)", want.Status)
	}

	evs := resumeFrom(t, st, id, cfg, recordedAs(troupe.KindDispatchFailed, "boom"))
	if got := finalResult(t, evs, "team"); got.Status != troupe.StatusCompleted {
		t.Errorf("resumed: team ended %s (%v), want completed as without the crash", got.Status, got.Errors)
	}
}

// Once a budget is spent, every member refused for it is refused for the reason recorded
// then, with what was spent then: a resumed run, which takes the spent budget from its log
// before it counts all that the log shows used, says the same. The run that made the log named
// what was spent by the time of each refusal, which a resumed run cannot know.
func TestRefusalsAfterBudgetSpentNameTheRecordedSpend(t *testing.T) {
	m0Release := make(chan struct{})
	var m1Runs atomic.Int32
	st := &gateStore{Store: memory.New()}
	spender := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		<-st.recorded(troupe.KindDispatchStarted, "m0")
		<-st.recorded(troupe.KindDispatchStarted, "p0")
		return &troupe.Result{AgentResult: map[string]any{"a": true}, TokensUsed: troupe.Ptr(int64(150))}, nil
	})
	late := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		<-st.recorded(troupe.KindBudgetExhausted, "")
		return &troupe.Result{AgentResult: map[string]any{"b": true}, TokensUsed: troupe.Ptr(int64(50))}, nil
	})
	// probe's second step is the first refused, once spender's tokens are counted.
	p0 := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		<-st.recorded(troupe.KindDispatchCompleted, "spender")
		return &troupe.Result{AgentResult: map[string]any{"p0": true}}, nil
	})
	p1 := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{AgentResult: map[string]any{"p1": true}}, nil
	})
	probe := flow.Sequential(flow.SequentialConfig{}, flow.Named("p0", p0), flow.Named("p1", p1))
	m0 := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		select {
		case <-m0Release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return &troupe.Result{AgentResult: map[string]any{"m0": true}}, nil
	})
	m1 := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		m1Runs.Add(1)
		return &troupe.Result{AgentResult: map[string]any{"m1": true}}, nil
	})
	team := flow.Sequential(flow.SequentialConfig{OnError: flow.ContinueOnError}, flow.Named("m0", m0), flow.Named("m1", m1))
	plan := &troupe.Plan{Stages: []troupe.PlanStage{stage(0, "team", "spender", "late", "probe")}}
	cfg := engine.Config{Registry: agents(t, "team", team, "spender", spender, "late", late, "probe", probe), Planner: staticPlan(plan),
		Policy: troupe.ErrorPolicy{OnError: troupe.Continue}}
	cfg.Store = st
	go func() { <-st.recorded(troupe.KindDispatchCompleted, "late"); close(m0Release) }()
	req := troupe.Request{Query: "q", Budget: troupe.Budget{MaxTokens: 100}}
	id, ref := runToEnd(t, cfg, req)
	refusal := func(evs []troupe.Event) string { return strings.Join(finalResult(t, evs, "team").Warnings, "; ") }
	want := refusal(ref)
	if m1Runs.Load() != 0 || !strings.Contains(want, "spent (150)") {
		t.Fatalf("uninterrupted: m1 ran %d times, refused with %q; want it refused for the 150 tokens spent when the budget ran out", m1Runs.Load(), want)
	}

	evs := resumeFrom(t, st, id, cfg, recordedAs(troupe.KindDispatchCompleted, "late"))
	if got := refusal(evs); got != want {
		t.Errorf("resumed: m1 refused with %q, want %q as without the crash", got, want)
	}
}

// What a composite's members used before the process died counts toward the run's budgets
// from the moment the resumed run makes the composite again, before anything it runs again
// finishes: it was spent by then in the run that made the log. Here slow, run again, finishes
// before the group takes its member's result from the log: the token budget is spent all the
// same, and late, which the run that made the log never started, does not start. It started,
// the member's use counted only once the group took its result.
func TestResumedRunCountsLoggedMemberUseAtOnce(t *testing.T) {
	st := &gateStore{Store: memory.New()}
	var resumed atomic.Pointer[gateStore] // the resumed run's log, once there is one
	var lateRuns atomic.Int32
	spend := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{AgentResult: map[string]any{"m0": true}, TokensUsed: troupe.Ptr(int64(150))}, nil
	})
	m1 := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		<-st.recorded(troupe.KindDispatchCompleted, "slow")
		return &troupe.Result{AgentResult: map[string]any{"m1": true}}, nil
	})
	pair := flow.Parallel(flow.ParallelConfig{}, flow.Named("m0", spend), flow.Named("m1", m1))
	team := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		if cut := resumed.Load(); cut != nil {
			<-cut.recorded(troupe.KindDispatchCompleted, "slow") // slow, at once, first
		}
		return pair.Run(ctx, d)
	})
	slow := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		<-st.recorded(troupe.KindDispatchCompleted, "m0")
		return &troupe.Result{AgentResult: map[string]any{"slow": true}}, nil
	})
	late := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		lateRuns.Add(1)
		return &troupe.Result{AgentResult: map[string]any{"late": true}}, nil
	})
	cfg := engine.Config{Registry: agents(t, "team", team, "slow", slow, "late", late), Planner: group(2, "team", "slow", "late"),
		Policy: troupe.ErrorPolicy{OnError: troupe.Continue}}
	cfg.Store = st
	req := troupe.Request{Query: "q", Budget: troupe.Budget{MaxTokens: 100}}
	id, _ := runToEnd(t, cfg, req)
	if lateRuns.Load() != 0 {
		t.Fatalf("uninterrupted: late ran %d times; want never, the budget spent when slow finished", lateRuns.Load())
	}

	evs := resumeFrom(t, st, id, cfg, recordedAs(troupe.KindDispatchCompleted, "m0"), resumed.Store)
	if n := len(troupetest.Find(evs, troupe.KindDispatchStarted, "late")); n != 0 || lateRuns.Load() != 0 {
		t.Errorf("resumed: late started %d times, ran %d; want neither, as without the crash", n, lateRuns.Load())
	}
}

// A collect_all group one member of which paused for a human (there is no one to ask) waits
// for the answer, and when the run fails meanwhile (fail_fast) it ends cancelled for want of
// it. A resumed run that makes the group again only once it is ending (the failure, run again,
// comes first) keeps the member waiting: the group takes its other member's result from the
// log and pauses, and ends cancelled, as it did. The member was refused for the ending run, as
// one not yet started is, and the group completed without it.
func TestResumedEndingRunKeepsPausedMemberWaiting(t *testing.T) {
	st := &gateStore{Store: memory.New()}
	var resumed atomic.Pointer[gateStore]
	ask := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		_, err := d.Ask(ctx, troupe.Question{Prompt: "which?"})
		return nil, err
	})
	ok := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		<-st.recorded(troupe.KindDispatchFailed, "ask")
		return &troupe.Result{AgentResult: map[string]any{"ok": true}}, nil
	})
	pair := flow.Parallel(flow.ParallelConfig{}, flow.Named("ask", ask), flow.Named("ok", ok))
	team := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		if cut := resumed.Load(); cut != nil {
			<-cut.recorded(troupe.KindDispatchFailed, "boom") // the failure, run again, first
		}
		return pair.Run(ctx, d)
	})
	boom := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		if resumed.Load() == nil {
			<-st.recorded(troupe.KindDispatchCompleted, "ok")
		}
		return nil, &troupe.AgentError{Code: troupe.CodeAgentError, Message: "broken"}
	})
	cfg := engine.Config{Registry: agents(t, "team", team, "boom", boom), Planner: group(2, "team", "boom"), Policy: troupe.ErrorPolicy{OnError: troupe.FailFast}}
	cfg.Store = st
	id, ref := runToEnd(t, cfg, troupe.Request{Query: "q"})
	want := finalResult(t, ref, "team")
	if want.Status != troupe.StatusCancelled || !strings.Contains(want.Errors[0].Message, "waiting for a human") {
		t.Fatalf("uninterrupted: team ended %s (%v), want cancelled waiting for a human", want.Status, want.Errors)
	}

	evs := resumeFrom(t, st, id, cfg, recordedAs(troupe.KindDispatchCompleted, "ok"), resumed.Store)
	if got := finalResult(t, evs, "team"); got.Status != want.Status || got.Errors[0].Message != want.Errors[0].Message {
		t.Errorf("resumed: team ended %s (%v), want %s (%v) as without the crash", got.Status, got.Errors, want.Status, want.Errors)
	}
}

// A first_success group whose winner a resumed run takes from its log does not run its other
// branches again, but a composite branch the log shows running members it makes again,
// cancelled by the win as it was, to take them: a sequence whose first step completed before
// the win ends cancelled reporting what that step used, and the group's result counts it, as
// without the crash. The sequence was left out, and what its step used with it.
func TestResumedFirstSuccessCountsCancelledBranchUse(t *testing.T) {
	st := &gateStore{Store: memory.New()}
	s0 := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{AgentResult: map[string]any{"s0": true}, TokensUsed: troupe.Ptr(int64(100))}, nil
	})
	s1 := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	win := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		<-st.recorded(troupe.KindDispatchStarted, "s1")
		return &troupe.Result{AgentResult: map[string]any{"won": true}, TokensUsed: troupe.Ptr(int64(10))}, nil
	})
	seq := flow.Sequential(flow.SequentialConfig{}, flow.Named("s0", s0), flow.Named("s1", s1))
	team := flow.Parallel(flow.ParallelConfig{Strategy: flow.FirstSuccess}, flow.Named("seq", seq), flow.Named("win", win))
	cfg := engine.Config{Registry: agents(t, "team", team), Planner: group(1, "team")}
	cfg.Store = st
	id, ref := runToEnd(t, cfg, troupe.Request{Query: "q"})
	want := finalResult(t, ref, "team")
	if want.Status != troupe.StatusCompleted || want.TokensUsed == nil || *want.TokensUsed != 110 {
		t.Fatalf("uninterrupted: team ended %s with tokens %v; want completed with 110, s0's and win's", want.Status, want.TokensUsed)
	}

	evs := resumeFrom(t, st, id, cfg, recordedAs(troupe.KindDispatchCompleted, "win"))
	if got := finalResult(t, evs, "team"); got.Status != want.Status || got.TokensUsed == nil || *got.TokensUsed != *want.TokensUsed {
		t.Errorf("resumed: team ended %s with tokens %v; want %s with %d, as without the crash", got.Status, got.TokensUsed, want.Status, *want.TokensUsed)
	}
}

// A question asked by a branch of a first_success group that another branch then won is moot:
// the group completed, and no answer changes that. It holds neither the dispatch it was asked
// through nor the run: a sequence whose next step fails fails the run at once, rather than
// pausing it for an answer that can change nothing. A run resumed from its log, which takes
// the group's completed result and does not ask again, ends so too; it ended otherwise.
func TestMootQuestionHoldsNothing(t *testing.T) {
	asked := make(chan struct{})
	ask := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		defer close(asked)
		_, err := d.Ask(ctx, troupe.Question{Prompt: "which?"})
		return nil, err
	})
	win := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		<-asked
		return &troupe.Result{AgentResult: map[string]any{"won": true}}, nil
	})
	fail := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		return nil, &troupe.AgentError{Code: troupe.CodeAgentError, Message: "broken"}
	})
	pick := flow.Parallel(flow.ParallelConfig{Strategy: flow.FirstSuccess}, flow.Named("ask", ask), flow.Named("win", win))
	team := flow.Sequential(flow.SequentialConfig{}, flow.Named("pick", pick), flow.Named("fail", fail))
	cfg := engine.Config{Registry: agents(t, "team", team), Planner: group(1, "team")}
	st := memory.New()
	cfg.Store = st
	id, ref := runToEnd(t, cfg, troupe.Request{Query: "q"})
	if last := troupetest.Last(ref); last.Kind != troupe.KindRunFailed {
		t.Fatalf("uninterrupted: the run ended with %s, want run_failed: the question is moot", last.Kind)
	}

	evs := resumeFrom(t, st, id, cfg, recordedAs(troupe.KindDispatchCompleted, "pick"))
	if last := troupetest.Last(evs); last.Kind != troupe.KindRunFailed {
		t.Errorf("resumed: the run ended with %s, want run_failed as without the crash", last.Kind)
	}
}

// A composite waiting for a human's answer when the run ends (another dispatch fails it) is
// recorded cancelled with what its finished members used, which the run's totals count: they
// spent it, as the members of a composite the run cancels mid-way did. A resumed run that
// makes it again only as it ends keeps it waiting, and records it so too, with what its
// members' logged results say they used. Its use was left out.
func TestPausedCompositeAtRunEndKeepsItsUse(t *testing.T) {
	st := &gateStore{Store: memory.New()}
	m0 := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{AgentResult: map[string]any{"m0": true}, TokensUsed: troupe.Ptr(int64(100)), CostDollars: troupe.Ptr(0.1)}, nil
	})
	ask := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		_, err := d.Ask(ctx, troupe.Question{Prompt: "which?"})
		return nil, err
	})
	boom := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		select {
		case <-st.recorded(troupe.KindDispatchFailed, "team"):
		case <-st.recorded(troupe.KindDispatchFailed, "m1"):
		case <-ctx.Done():
		}
		return nil, &troupe.AgentError{Code: troupe.CodeAgentError, Message: "broken"}
	})
	team := flow.Sequential(flow.SequentialConfig{}, flow.Named("m0", m0), flow.Named("m1", ask))
	cfg := engine.Config{Registry: agents(t, "team", team, "boom", boom), Planner: group(2, "team", "boom"), Policy: troupe.ErrorPolicy{OnError: troupe.FailFast}}
	cfg.Store = st
	id, ref := runToEnd(t, cfg, troupe.Request{Query: "q"})
	want := finalResult(t, ref, "team")
	if want.Status != troupe.StatusCancelled || want.TokensUsed == nil || *want.TokensUsed != 100 {
		t.Fatalf("uninterrupted: team ended %s with tokens %v; want cancelled with m0's 100", want.Status, want.TokensUsed)
	}
	if agg := aggregation(t, ref); agg.TotalTokensUsed == nil || *agg.TotalTokensUsed != 100 {
		t.Errorf("uninterrupted: the run's total tokens are %v, want m0's 100", agg.TotalTokensUsed)
	}

	evs := resumeFrom(t, st, id, cfg, recordedAs(troupe.KindDispatchFailed, "boom"))
	got := finalResult(t, evs, "team")
	if got.Status != want.Status || got.TokensUsed == nil || *got.TokensUsed != 100 {
		t.Errorf("resumed: team ended %s (%v) with tokens %v; want %s with 100, as without the crash", got.Status, got.Errors, got.TokensUsed, want.Status)
	}
	if agg := aggregation(t, evs); agg.TotalTokensUsed == nil || *agg.TotalTokensUsed != 100 {
		t.Errorf("resumed: the run's total tokens are %v, want m0's 100", agg.TotalTokensUsed)
	}
}

// A first_success group one branch of which paused for a human (there is no one to ask) before
// another won reports the paused branch, what it used and a warning of its pause, in its
// result. Resumed, the group takes the winner from its log before it runs any branch again
// and, the question moot, takes the paused branch's result from the log too: it reports what
// it did without the crash. It left the paused branch out, and what it used with it.
func TestResumedFirstSuccessReportsPausedBranch(t *testing.T) {
	st := &gateStore{Store: memory.New()}
	ask := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		_, err := d.Ask(ctx, troupe.Question{Prompt: "which?"})
		return &troupe.Result{TokensUsed: troupe.Ptr(int64(100))}, err // what it used before it asked
	})
	win := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		<-st.recorded(troupe.KindDispatchFailed, "ask")
		return &troupe.Result{AgentResult: map[string]any{"won": true}, TokensUsed: troupe.Ptr(int64(10))}, nil
	})
	team := flow.Parallel(flow.ParallelConfig{Strategy: flow.FirstSuccess}, flow.Named("ask", ask), flow.Named("win", win))
	cfg := engine.Config{Registry: agents(t, "team", team), Planner: group(1, "team")}
	cfg.Store = st
	id, ref := runToEnd(t, cfg, troupe.Request{Query: "q"})
	want := finalResult(t, ref, "team")
	if want.Status != troupe.StatusCompleted || want.TokensUsed == nil || *want.TokensUsed != 110 || len(want.Warnings) != 1 {
		t.Fatalf("uninterrupted: team ended %s with tokens %v, warnings %q; want completed with 110 and a warning of ask's pause",
			want.Status, want.TokensUsed, want.Warnings)
	}

	evs := resumeFrom(t, st, id, cfg, recordedAs(troupe.KindDispatchCompleted, "win"))
	got := finalResult(t, evs, "team")
	if got.Status != want.Status || got.TokensUsed == nil || *got.TokensUsed != 110 || !slices.Equal(got.Warnings, want.Warnings) {
		t.Errorf("resumed: team ended %s with tokens %v, warnings %q; want %s with 110, warnings %q, as without the crash",
			got.Status, got.TokensUsed, got.Warnings, want.Status, want.Warnings)
	}
}

// A collect_all group's member still running when the run fails (fail_fast) is cancelled with
// it, which is no failure of the group's: the group completes without a warning. A resumed run
// that makes the group again only once it is ending (the failure, run again, comes first)
// cancels that member too, the log showing it started, and the group reports what it did. (A
// run that refused such a member in the moment between its failure and its cancelling the
// composite reported it failed, "not started"; the property test found that window.)
func TestResumedEndingRunCancelsStartedMember(t *testing.T) {
	st := &gateStore{Store: memory.New()}
	var resumed atomic.Pointer[gateStore]
	done0 := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{AgentResult: map[string]any{"s0": true}}, nil
	})
	done := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		<-st.recorded(troupe.KindDispatchStarted, "x1")
		return &troupe.Result{AgentResult: map[string]any{"x0": true}}, nil
	})
	running := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	pair := flow.Parallel(flow.ParallelConfig{}, flow.Named("x0", done), flow.Named("x1", running))
	seq := flow.Sequential(flow.SequentialConfig{}, flow.Named("s0", done0), flow.Named("pair", pair))
	team := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		if cut := resumed.Load(); cut != nil {
			<-cut.recorded(troupe.KindDispatchFailed, "boom") // the failure, run again, first
		}
		return seq.Run(ctx, d)
	})
	boom := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		if resumed.Load() == nil {
			<-st.recorded(troupe.KindDispatchCompleted, "x0")
		}
		return nil, &troupe.AgentError{Code: troupe.CodeAgentError, Message: "broken"}
	})
	cfg := engine.Config{Registry: agents(t, "team", team, "boom", boom), Planner: group(2, "team", "boom"), Policy: troupe.ErrorPolicy{OnError: troupe.FailFast}}
	cfg.Store = st
	id, ref := runToEnd(t, cfg, troupe.Request{Query: "q"})
	want := finalResult(t, ref, "team")
	if want.Status != troupe.StatusCompleted || len(want.Warnings) != 0 {
		t.Fatalf("uninterrupted: team ended %s with warnings %q; want completed without any (x1 was cancelled)", want.Status, want.Warnings)
	}

	evs := resumeFrom(t, st, id, cfg, recordedAs(troupe.KindDispatchCompleted, "x0"), resumed.Store)
	if got := finalResult(t, evs, "team"); got.Status != want.Status || len(got.Warnings) != 0 {
		t.Errorf("resumed: team ended %s (%v) with warnings %q; want %s without any, as without the crash", got.Status, got.Errors, got.Warnings, want.Status)
	}
}

// A first_success group whose winner a resumed run takes from its log reports, as it did
// without the crash, a branch the run refused for its budget before the win: a slot freed when
// another branch failed, the group asked for the branch, and the run, its token budget spent,
// refused it; the winner completed after. The log shows nothing of the refusal. The resumed
// group, cancelled by the recorded win before it asked for any branch, left it out, and its
// "not started" warning with it.
func TestResumedFirstSuccessReportsBranchRefusedBeforeWin(t *testing.T) {
	st := &gateStore{Store: memory.New()}
	spender := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		<-st.recorded(troupe.KindDispatchStarted, "lose")
		<-st.recorded(troupe.KindDispatchStarted, "win")
		return &troupe.Result{AgentResult: map[string]any{"spent": true}, TokensUsed: troupe.Ptr(int64(150))}, nil
	})
	lose := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		<-st.recorded(troupe.KindDispatchCompleted, "spender")
		return nil, &troupe.AgentError{Code: troupe.CodeAgentError, Message: "lost"}
	})
	win := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		<-st.recorded(troupe.KindBudgetExhausted, "") // late's refusal found the budget spent
		return &troupe.Result{AgentResult: map[string]any{"won": true}}, nil
	})
	late := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{AgentResult: map[string]any{"late": true}}, nil
	})
	team := flow.Parallel(flow.ParallelConfig{Strategy: flow.FirstSuccess, MaxConcurrent: 2},
		flow.Named("lose", lose), flow.Named("win", win), flow.Named("late", late))
	cfg := engine.Config{Registry: agents(t, "spender", spender, "team", team), Planner: group(2, "spender", "team"), Store: st}
	id, ref := runToEnd(t, cfg, troupe.Request{Query: "q", Budget: troupe.Budget{MaxTokens: 100}})
	want := finalResult(t, ref, "team")
	if !slices.ContainsFunc(want.Warnings, func(w string) bool { return strings.HasPrefix(w, "late: failed: not started") }) {
		t.Fatalf("uninterrupted: team's warnings %q name no refusal of late", want.Warnings)
	}

	evs := resumeFrom(t, st, id, cfg, recordedAs(troupe.KindDispatchCompleted, "win"))
	if got := finalResult(t, evs, "team"); !slices.Equal(got.Warnings, want.Warnings) {
		t.Errorf("resumed: team's warnings\n%q\nwant, as without the crash,\n%q", got.Warnings, want.Warnings)
	}
}

// A group a resumed run makes again as it ends reports, as it did without the crash, a branch
// the run refused for its budget before it failed: a slot freed when a branch completed, the
// group asked for the branch and the run, its token budget spent, refused it; then another
// planned dispatch failed the run (fail_fast). The log shows nothing of the refusal, and the
// resumed run, failed at once by the failure it holds, cancelled the branch instead: the
// group's result lost the "not started" warning.
func TestResumedEndingGroupReportsBranchRefusedBeforeFailure(t *testing.T) {
	st := &gateStore{Store: memory.New()}
	spender := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		<-st.recorded(troupe.KindDispatchStarted, "first")
		<-st.recorded(troupe.KindDispatchStarted, "slow")
		return &troupe.Result{AgentResult: map[string]any{"spent": true}, TokensUsed: troupe.Ptr(int64(150))}, nil
	})
	boom := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		<-st.recorded(troupe.KindBudgetExhausted, "") // late's refusal found the budget spent
		return nil, &troupe.AgentError{Code: troupe.CodeAgentError, Message: "broken"}
	})
	first := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		<-st.recorded(troupe.KindDispatchCompleted, "spender")
		return &troupe.Result{AgentResult: map[string]any{"first": true}}, nil
	})
	slow := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	late := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{AgentResult: map[string]any{"late": true}}, nil
	})
	team := flow.Parallel(flow.ParallelConfig{MaxConcurrent: 2}, flow.Named("first", first), flow.Named("slow", slow), flow.Named("late", late))
	cfg := engine.Config{Registry: agents(t, "spender", spender, "boom", boom, "team", team), Planner: group(3, "spender", "boom", "team"),
		Store: st, Policy: troupe.ErrorPolicy{OnError: troupe.FailFast}}
	id, ref := runToEnd(t, cfg, troupe.Request{Query: "q", Budget: troupe.Budget{MaxTokens: 100}})
	want := finalResult(t, ref, "team")
	if !slices.ContainsFunc(want.Warnings, func(w string) bool { return strings.HasPrefix(w, "late: failed: not started") }) {
		t.Fatalf("uninterrupted: team's warnings %q name no refusal of late", want.Warnings)
	}

	evs := resumeFrom(t, st, id, cfg, recordedAs(troupe.KindDispatchFailed, "boom"))
	if got := finalResult(t, evs, "team"); got.Status != want.Status || !slices.Equal(got.Warnings, want.Warnings) {
		t.Errorf("resumed: team ended %s with warnings\n%q\nwant %s, as without the crash, with\n%q", got.Status, got.Warnings, want.Status, want.Warnings)
	}
}

// Of two branches of a first_success group that completed at one instant, the one that won is
// the one the log recorded first, when a resumed run takes both from it: the winner's
// completion let the other go, a collect_all group that completed all the same, its finished
// member's result in hand, at that very instant. The resumed group took the first in agent
// order, and reported the wrong winner's result. (Time here is synctest's, which stands still
// while the agents run, so every result completes at one instant.)
func TestResumedFirstSuccessTieGoesToFirstRecorded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &gateStore{Store: memory.New()}
		x := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
			return &troupe.Result{AgentResult: map[string]any{"by": "x"}}, nil
		})
		y := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		})
		win := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
			<-st.recorded(troupe.KindDispatchCompleted, "x")
			return &troupe.Result{AgentResult: map[string]any{"by": "win"}}, nil
		})
		all := flow.Parallel(flow.ParallelConfig{}, flow.Named("x", x), flow.Named("y", y))
		team := flow.Parallel(flow.ParallelConfig{Strategy: flow.FirstSuccess}, flow.Named("all", all), flow.Named("win", win))
		cfg := engine.Config{Registry: agents(t, "team", team), Planner: group(1, "team"), Store: st}
		id, ref := runToEnd(t, cfg, troupe.Request{Query: "q"})
		if want := finalResult(t, ref, "team"); want.AgentResult["by"] != "win" {
			t.Fatalf("uninterrupted: team's result %v, want win's", want.AgentResult)
		}

		evs := resumeFrom(t, st, id, cfg, recordedAs(troupe.KindDispatchCompleted, "all"))
		if got := finalResult(t, evs, "team"); got.AgentResult["by"] != "win" {
			t.Errorf("resumed: team's result %v, want win's, as without the crash", got.AgentResult)
		}
	})
}

// A branch of a first_success group that paused for a human before another branch won is
// reported as it paused, in the group's warnings and usage, when a resumed run makes the
// winner again: the log shows the pause before the win, as it was without the crash. It was
// reported cancelled by the win, its pause and what it used lost, when the resumed run made
// it again too and the win cancelled it before it got back to asking. (Since session 28 the
// resumed run, with no one to answer, takes the paused branch from the log as it ended.)
func TestResumedFirstSuccessKeepsPauseBeforeLiveWin(t *testing.T) {
	st := &gateStore{Store: memory.New()}
	spend := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{AgentResult: map[string]any{"spent": true}, TokensUsed: troupe.Ptr(int64(10))}, nil
	})
	ask := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		_, err := d.Ask(ctx, troupe.Question{Prompt: "which way?"})
		return nil, err // paused: there is no one to ask
	})
	win := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		<-st.recorded(troupe.KindDispatchFailed, "seq") // it paused
		return &troupe.Result{AgentResult: map[string]any{"won": true}}, nil
	})
	seq := flow.Sequential(flow.SequentialConfig{}, flow.Named("spend", spend), flow.Named("ask", ask))
	team := flow.Parallel(flow.ParallelConfig{Strategy: flow.FirstSuccess}, flow.Named("seq", seq), flow.Named("win", win))
	cfg := engine.Config{Registry: agents(t, "team", team), Planner: group(1, "team"), Store: st}
	id, ref := runToEnd(t, cfg, troupe.Request{Query: "q"})
	want := finalResult(t, ref, "team")
	if want.Status != troupe.StatusCompleted || len(want.Warnings) == 0 || want.TokensUsed == nil {
		t.Fatalf("uninterrupted: team ended %s with warnings %q and tokens %d; want completed, warning of seq's pause, with spend's", want.Status, want.Warnings, tokensOf(want))
	}

	evs := resumeFrom(t, st, id, cfg, recordedAs(troupe.KindDispatchFailed, "seq"))
	got := finalResult(t, evs, "team")
	if got.Status != want.Status || !slices.Equal(got.Warnings, want.Warnings) || got.TokensUsed == nil || *got.TokensUsed != *want.TokensUsed {
		t.Errorf("resumed: team ended %s with warnings %q and tokens %d; want %s with %q and %d, as without the crash",
			got.Status, got.Warnings, tokensOf(got), want.Status, want.Warnings, *want.TokensUsed)
	}
}

// A branch of a first_success group that paused for a human let its slot go then, and the
// group asked for the next branch, which the run refused for its budget; a branch made again
// by a resumed run won after. The resumed group reports that refusal, as it did without the
// crash, though the log shows nothing of it: the branch's place in the group's order comes from
// the pause the log records. The resumed group, its win live, left the refused branch out.
// (The paused branch is no longer made again, as the resumed run cannot answer it: the
// group asks for late at once, and the run refuses it as win, made again, wins; a refusal is
// reported as one, not as a branch the win cancelled, whichever comes first.)
func TestResumedFirstSuccessReportsBranchRefusedAfterPause(t *testing.T) {
	// late is refused in the moment between seq's pause, which frees its slot, and win's
	// result, which stops the group; nothing is recorded of a refusal, so win cannot wait for
	// it, and now and then (under -race, on a busy machine) win gets there first and the group
	// never asks for late. The uninterrupted run is made again until it shows the refusal;
	// on a machine so loaded that twenty tries never do, there is nothing to compare.
	for range 20 {
		if branchRefusedAfterPause(t) {
			return
		}
	}
	t.Skip("in twenty uninterrupted runs, win's result always stopped the group before it asked for late")
}

// branchRefusedAfterPause runs TestResumedFirstSuccessReportsBranchRefusedAfterPause once; it
// reports false, comparing nothing, if the uninterrupted run's group never asked for late.
func branchRefusedAfterPause(t *testing.T) bool {
	t.Helper()
	st := &gateStore{Store: memory.New()}
	spender := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		<-st.recorded(troupe.KindHumanAsked, "ask")
		// win takes the group's second slot while the budget lasts; started after the budget
		// was spent, it would be refused too, and the group would only wait for the answer.
		<-st.recorded(troupe.KindDispatchStarted, "win")
		return &troupe.Result{AgentResult: map[string]any{"spent": true}, TokensUsed: troupe.Ptr(int64(150))}, nil
	})
	ask := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		_, err := d.Ask(ctx, troupe.Question{Prompt: "which way?"})
		<-st.recorded(troupe.KindDispatchCompleted, "spender") // it pauses once the budget is spent
		return nil, err
	})
	win := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		<-st.recorded(troupe.KindDispatchFailed, "seq") // seq paused, and its slot went to late
		return &troupe.Result{AgentResult: map[string]any{"won": true}}, nil
	})
	late := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{AgentResult: map[string]any{"late": true}}, nil
	})
	seq := flow.Sequential(flow.SequentialConfig{}, flow.Named("ask", ask))
	team := flow.Parallel(flow.ParallelConfig{Strategy: flow.FirstSuccess, MaxConcurrent: 2},
		flow.Named("seq", seq), flow.Named("win", win), flow.Named("late", late))
	cfg := engine.Config{Registry: agents(t, "spender", spender, "team", team), Planner: group(2, "spender", "team"), Store: st}
	id, ref := runToEnd(t, cfg, troupe.Request{Query: "q", Budget: troupe.Budget{MaxTokens: 100}})
	want := finalResult(t, ref, "team")
	if !slices.ContainsFunc(want.Warnings, func(w string) bool { return strings.HasPrefix(w, "late: failed: not started") }) {
		return false
	}

	evs := resumeFrom(t, st, id, cfg, recordedAs(troupe.KindDispatchFailed, "seq"))
	if got := finalResult(t, evs, "team"); !slices.Equal(got.Warnings, want.Warnings) {
		t.Errorf("resumed: team's warnings\n%q\nwant, as without the crash,\n%q", got.Warnings, want.Warnings)
	}
	return true
}

// A first_success group another branch of which won while one waited for a human, whose own
// result a guardrail then blocked, leaves the question open: the group did not complete, so
// its dispatch waits for the answer, and the run pauses, as it did without the crash. Resumed
// from a log that holds the win, the group reports the waiting branch as the log shows it
// paused, not asking again; the question held nothing then, and the blocked group failed the
// run at once, ahead of the pause.
func TestResumedFirstSuccessBlockedKeepsQuestionOpen(t *testing.T) {
	st := &gateStore{Store: memory.New()}
	ask, win := askAndWinAfter(st)
	team := flow.Parallel(flow.ParallelConfig{Strategy: flow.FirstSuccess}, flow.Named("ask", ask), flow.Named("win", win))
	block := troupe.GuardrailFuncs{ID: "block", After: func(_ context.Context, d *troupe.Dispatch, _ *troupe.Result) troupe.Verdict {
		return troupe.Verdict{Block: d.TargetAgent == "team", Reason: "not this one"}
	}}
	cfg := engine.Config{Registry: agents(t, "team", team), Planner: group(1, "team"), Store: st, Guardrails: []troupe.Guardrail{block}}
	id, ref := runToEnd(t, cfg, troupe.Request{Query: "q"})
	if last := troupetest.Last(ref); last.Kind != troupe.KindRunPaused {
		t.Fatalf("uninterrupted: the run ended with %s, want run_paused for the open question", last.Kind)
	}

	cut := logUpTo(t, st, id, recordedAs(troupe.KindDispatchCompleted, "win"))
	cfg.Store = cut
	r, err := newEngine(t, cfg).Resume(t.Context(), id, engine.ResumeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r.Wait(t.Context())
	evs, _ := cut.Events(t.Context(), id, 0)
	if last := troupetest.Last(evs); last.Kind != troupe.KindRunPaused {
		t.Errorf("resumed: the run ended with %s, want run_paused for the open question, as without the crash", last.Kind)
	}
}

// A first_success group one branch of which waits for a human while another, a group running
// members, completes as the run fails (its finished member's result in hand) wins all the same:
// the question is moot, and the group completes, as without the crash. Resumed from a log that
// ends with the failure, the run made the group again only to wait for the answer it cannot
// get, and it ended cancelled: a composite with a waiting member was taken for one waiting,
// though another of its members ran members of its own.
func TestResumedEndingGroupRunsBesideWaitingBranch(t *testing.T) {
	st := &gateStore{Store: memory.New()}
	ask := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		_, err := d.Ask(ctx, troupe.Question{Prompt: "which way?"})
		return nil, err // paused: there is no one to ask
	})
	done := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		<-st.recorded(troupe.KindDispatchFailed, "ask") // it paused
		return &troupe.Result{AgentResult: map[string]any{"done": true}}, nil
	})
	slow := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	boom := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		<-st.recorded(troupe.KindDispatchCompleted, "done")
		return nil, &troupe.AgentError{Code: troupe.CodeAgentError, Message: "broken"}
	})
	grp := flow.Parallel(flow.ParallelConfig{}, flow.Named("done", done), flow.Named("slow", slow))
	team := flow.Parallel(flow.ParallelConfig{Strategy: flow.FirstSuccess}, flow.Named("ask", ask), flow.Named("grp", grp))
	cfg := engine.Config{Registry: agents(t, "team", team, "boom", boom), Planner: group(2, "team", "boom"), Store: st,
		Policy: troupe.ErrorPolicy{OnError: troupe.FailFast}}
	id, ref := runToEnd(t, cfg, troupe.Request{Query: "q"})
	want := finalResult(t, ref, "team")
	if want.Status != troupe.StatusCompleted {
		t.Fatalf("uninterrupted: team ended %s, want completed with grp's result", want.Status)
	}

	evs := resumeFrom(t, st, id, cfg, recordedAs(troupe.KindDispatchFailed, "boom"))
	if got := finalResult(t, evs, "team"); got.Status != want.Status {
		t.Errorf("resumed: team ended %s (%v), want %s, as without the crash", got.Status, got.Errors, want.Status)
	}
}

// A member waiting for a human in a group a resumed run makes again as it ends (another member
// runs members of its own, which the group runs to take) waits still, and the group reports
// what the log shows it used when it paused: the run's totals count it, as they did without
// the crash. It was reported with nothing used, and the group's use fell short.
func TestResumedEndingGroupKeepsWaitingMemberUse(t *testing.T) {
	st := &gateStore{Store: memory.New()}
	s0 := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{AgentResult: map[string]any{"s0": true}, TokensUsed: troupe.Ptr(int64(100))}, nil
	})
	ask := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		_, err := d.Ask(ctx, troupe.Question{Prompt: "which way?"})
		return nil, err // paused: there is no one to ask
	})
	quick := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{AgentResult: map[string]any{"quick": true}, TokensUsed: troupe.Ptr(int64(10))}, nil
	})
	slow := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	boom := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		<-st.recorded(troupe.KindDispatchFailed, "waiter") // it paused
		<-st.recorded(troupe.KindDispatchStarted, "slow")
		<-st.recorded(troupe.KindDispatchCompleted, "quick")
		return nil, &troupe.AgentError{Code: troupe.CodeAgentError, Message: "broken"}
	})
	waiter := flow.Sequential(flow.SequentialConfig{}, flow.Named("s0", s0), flow.Named("ask", ask))
	runner := flow.Parallel(flow.ParallelConfig{}, flow.Named("quick", quick), flow.Named("slow", slow))
	team := flow.Parallel(flow.ParallelConfig{}, flow.Named("waiter", waiter), flow.Named("runner", runner))
	cfg := engine.Config{Registry: agents(t, "team", team, "boom", boom), Planner: group(2, "team", "boom"), Store: st,
		Policy: troupe.ErrorPolicy{OnError: troupe.FailFast}}
	id, ref := runToEnd(t, cfg, troupe.Request{Query: "q"})
	want := finalResult(t, ref, "team")
	if want.TokensUsed == nil || *want.TokensUsed != 110 {
		t.Fatalf("uninterrupted: team ended %s with tokens %d, want 110, s0's and quick's", want.Status, tokensOf(want))
	}

	evs := resumeFrom(t, st, id, cfg, recordedAs(troupe.KindDispatchFailed, "boom"))
	if got := finalResult(t, evs, "team"); got.Status != want.Status || got.TokensUsed == nil || *got.TokensUsed != 110 {
		t.Errorf("resumed: team ended %s with tokens %d, want %s with 110, as without the crash", got.Status, tokensOf(got), want.Status)
	}
}

// tokensOf is the tokens res reports using, or -1 for none.
func tokensOf(res *troupe.Result) int64 {
	if res.TokensUsed == nil {
		return -1
	}
	return *res.TokensUsed
}

// What a composite's members used stays counted against the budgets while the composite waits
// for a human: it was spent. A member another composite asks to start once the budget is
// spent so is refused, as a run resumed from the log (which counts what the waiting
// composite's members' logged results used) refuses it. The waiting composite's use dropped
// out of the budget as it paused, and the member started. (Time is synctest's, so that p
// finishes only once the waiting composite is handed back paused.)
func TestPausedCompositeUseStaysCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &gateStore{Store: memory.New()}
		s0 := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
			return &troupe.Result{AgentResult: map[string]any{"s0": true}, TokensUsed: troupe.Ptr(int64(60))}, nil
		})
		ask := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
			_, err := d.Ask(ctx, troupe.Question{Prompt: "which way?"})
			return nil, err // paused: there is no one to ask
		})
		p := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
			<-st.recorded(troupe.KindDispatchFailed, "ask")
			synctest.Wait() // waiter is handed back, paused
			return &troupe.Result{AgentResult: map[string]any{"p": true}, TokensUsed: troupe.Ptr(int64(50))}, nil
		})
		var qRuns atomic.Int32
		q := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
			qRuns.Add(1)
			return &troupe.Result{AgentResult: map[string]any{"q": true}}, nil
		})
		waiter := flow.Sequential(flow.SequentialConfig{}, flow.Named("s0", s0), flow.Named("ask", ask))
		other := flow.Sequential(flow.SequentialConfig{}, flow.Named("p", p), flow.Named("q", q))
		cfg := engine.Config{Registry: agents(t, "waiter", waiter, "other", other), Planner: group(2, "waiter", "other"), Store: st}
		runToEnd(t, cfg, troupe.Request{Query: "q", Budget: troupe.Budget{MaxTokens: 100}})
		if n := qRuns.Load(); n != 0 {
			t.Errorf("q ran %d times, though s0's 60 tokens and p's 50 spent the budget of 100 before it was asked for", n)
		}
	})
}

// A composite abandoned past its timeout (its member ignores its context) leaves no member of
// its own running in the log: the composite records them ended, cancelled with it, before its
// own timeout. Before, the terminal log held their starts unanswered, and a run resumed from
// it cut before its end recorded them cancelled where the run that was not stopped had not
// (TestResumeProperty, seed 20240607, case 342 timed).
func TestAbandonedCompositeEndsItsMembers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		stuck := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
			<-ctx.Done()
			tm := time.NewTimer(time.Second) // it works on, whatever its context says
			<-tm.C
			return nil, ctx.Err()
		})
		inner := flow.Sequential(flow.SequentialConfig{}, flow.Named("stuck", stuck))
		team := flow.Sequential(flow.SequentialConfig{OnError: flow.ContinueOnError},
			flow.Named("inner", inner, troupe.WithTimeout(100*time.Millisecond)))
		st := memory.New()
		eng := newEngine(t, engine.Config{Registry: agents(t, "team", team), Planner: chain("team"), Store: st})
		r, err := eng.Start(t.Context(), troupe.Request{Query: "q"})
		if err != nil {
			t.Fatal(err)
		}
		r.Wait(t.Context())
		evs, _ := st.Events(t.Context(), r.ID(), 0)
		troupetest.CheckLog(t, evs)
		var ends []string
		for _, ev := range evs {
			if res, ok := ev.Data.(*troupe.Result); ok && ev.Parent != "" {
				ends = append(ends, res.AgentName+" "+string(res.Status))
			}
		}
		if want := []string{"stuck cancelled", "inner timeout"}; !slices.Equal(ends, want) {
			t.Errorf("nested dispatches ended %q, want %q", ends, want)
		}
	})
}

// A composite whose timeout cut it short while a member waited for a human ended waiting, and
// its group went on (here, to a branch that won). Resumed from a log that stops before the
// group's own result, with no one to ask, the run makes the group again, which takes that
// composite's result from the log, as it ended: made again, the composite, its waiting member
// refused as waiting still and its other member's result taken at once, ran a third member,
// late, its timer having started again, which the run that made the log never started.
func TestResumedCompositeEndedWaitingIsNotMadeAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var lateRuns atomic.Int32
		asker := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
			if _, err := d.Ask(ctx, troupe.Question{Prompt: "which way?"}); err != nil {
				return nil, err
			}
			return &troupe.Result{AgentResult: map[string]any{"asker": true}}, nil
		})
		slow := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
			<-ctx.Done() // the inner timer cuts it short
			return nil, ctx.Err()
		})
		late := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
			lateRuns.Add(1)
			return &troupe.Result{AgentResult: map[string]any{"late": true}}, nil
		})
		winner := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
			tm := time.NewTimer(50 * time.Millisecond)
			defer tm.Stop()
			select {
			case <-tm.C:
				return &troupe.Result{AgentResult: map[string]any{"won": true}, CostDollars: troupe.Ptr(0.01)}, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		})
		inner := flow.Parallel(flow.ParallelConfig{MaxConcurrent: 1},
			flow.Named("asker", asker), flow.Named("slow", slow), flow.Named("late", late))
		team := flow.Parallel(flow.ParallelConfig{Strategy: flow.FirstSuccess, MaxConcurrent: 1},
			flow.Named("inner", inner, troupe.WithTimeout(100*time.Millisecond)), flow.Named("winner", winner))
		reg := agents(t, "team", team)
		st := memory.New()
		eng := newEngine(t, engine.Config{Registry: reg, Planner: chain("team"), Store: st})
		r, err := eng.Start(t.Context(), troupe.Request{Query: "q"})
		if err != nil {
			t.Fatal(err)
		}
		r.Wait(t.Context())
		ref, _ := st.Events(t.Context(), r.ID(), 0)
		if o := outcome(t, ref); o.Status != troupe.RunCompleted || lateRuns.Load() != 0 {
			t.Fatalf("uninterrupted: %s, late ran %d times; want completed, late never started", o.Status, lateRuns.Load())
		}
		innerEnd := func(evs []troupe.Event) *troupe.Result {
			var last *troupe.Result
			for _, ev := range evs {
				if res, ok := ev.Data.(*troupe.Result); ok && res.AgentName == "inner" {
					last = res
				}
			}
			return last
		}
		if res := innerEnd(ref); res == nil || res.Status != troupe.StatusTimeout {
			t.Fatalf("uninterrupted: inner ended %+v, want timed out", res)
		}

		cut := logUpTo(t, st, r.ID(), startedTo("winner"))
		eng2 := newEngine(t, engine.Config{Registry: reg, Planner: chain("team"), Store: cut})
		r2, err := eng2.Resume(t.Context(), r.ID(), engine.ResumeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		r2.Wait(t.Context())
		evs, _ := cut.Events(t.Context(), r.ID(), 0)
		troupetest.CheckLog(t, evs)
		if o := outcome(t, evs); o.Status != troupe.RunCompleted || len(o.Questions) != 0 {
			t.Errorf("resumed: %s with questions %v, want completed with none (the win makes the question moot)", o.Status, o.Questions)
		}
		if n := lateRuns.Load(); n != 0 {
			t.Errorf("resumed: late ran %d times; the run that made the log never started it", n)
		}
		if got, want := innerEnd(evs), innerEnd(ref); got == nil || got.Status != want.Status || got.DispatchID != want.DispatchID {
			t.Errorf("resumed: inner ended %+v, want as logged: %+v", got, want)
		}
		if got, want := finalResult(t, evs, "team"), finalResult(t, ref, "team"); !slices.Equal(got.Warnings, want.Warnings) || got.Status != want.Status {
			t.Errorf("resumed: team ended %s warning %q, want %s warning %q", got.Status, got.Warnings, want.Status, want.Warnings)
		}
	})
}

// A first_success group nested in a collect_all team, whose result a guardrail blocked after a
// branch won while another waited for a human, failed for the block, not for the wait: the
// team completed by its other member, the question moot. Resumed from a log cut after the
// group's failure, with no one to ask, the group is made again (its members taken from the
// log: the win, blocked again), and the team completes, as it did. Taken from the log as ended
// waiting, the group paused the team, and the run paused for a question the run that made the
// log never waited on.
func TestResumedGroupBlockedWhileBranchWaitedIsMadeAgain(t *testing.T) {
	st := &gateStore{Store: memory.New()}
	ask, win := askAndWinAfter(st)
	other := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		<-st.recorded(troupe.KindDispatchFailed, "grp") // after the block, so the cut falls between
		return &troupe.Result{AgentResult: map[string]any{"other": true}}, nil
	})
	grp := flow.Parallel(flow.ParallelConfig{Strategy: flow.FirstSuccess}, flow.Named("ask", ask), flow.Named("win", win))
	team := flow.Parallel(flow.ParallelConfig{}, flow.Named("grp", grp), flow.Named("other", other))
	block := troupe.GuardrailFuncs{ID: "block", After: func(_ context.Context, d *troupe.Dispatch, _ *troupe.Result) troupe.Verdict {
		return troupe.Verdict{Block: d.TargetAgent == "grp", Reason: "not this one"}
	}}
	cfg := engine.Config{Registry: agents(t, "team", team), Planner: group(1, "team"), Store: st, Guardrails: []troupe.Guardrail{block}}
	id, ref := runToEnd(t, cfg, troupe.Request{Query: "q"})
	if o := outcome(t, ref); o.Status != troupe.RunCompleted {
		t.Fatalf("uninterrupted: the run ended %s, want completed (the team completes by other)", o.Status)
	}

	evs := resumeFrom(t, st, id, cfg, recordedAs(troupe.KindDispatchFailed, "grp"))
	if o := outcome(t, evs); o.Status != troupe.RunCompleted {
		t.Errorf("resumed: the run ended %s with questions %v, want completed, as without the crash", o.Status, o.Questions)
	}
}

// A composite left waiting for a human when the run failed reports what its members reported
// using, a cost of $0 included: the run that made the log recorded $0 for it, and a run
// resumed from a log cut before its end recorded no cost at all, a cost unknown.
func TestWaitingCompositeAtRunEndReportsZeroCost(t *testing.T) {
	st := &gateStore{Store: memory.New()}
	free := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{AgentResult: map[string]any{"free": true}, CostDollars: troupe.Ptr(0.0), TokensUsed: troupe.Ptr[int64](0)}, nil
	})
	ask, _ := askAndWinAfter(st)
	boom := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		<-st.recorded(troupe.KindDispatchFailed, "ask")
		return nil, &troupe.AgentError{Code: troupe.CodeAgentError, Message: "broken"}
	})
	team := flow.Sequential(flow.SequentialConfig{}, flow.Named("free", free), flow.Named("ask", ask))
	cfg := engine.Config{Registry: agents(t, "team", team, "boom", boom), Planner: group(2, "team", "boom"), Store: st,
		Policy: troupe.ErrorPolicy{OnError: troupe.FailFast}}
	id, ref := runToEnd(t, cfg, troupe.Request{Query: "q"})
	want := finalResult(t, ref, "team")
	if want.CostDollars == nil || *want.CostDollars != 0 || want.TokensUsed == nil || *want.TokensUsed != 0 {
		t.Fatalf("uninterrupted: team ended %s reporting cost %v, tokens %v; want $0 and 0", want.Status, want.CostDollars, want.TokensUsed)
	}

	evs := resumeFrom(t, st, id, cfg, recordedAs(troupe.KindDispatchFailed, "boom"))
	got := finalResult(t, evs, "team")
	if got.CostDollars == nil || *got.CostDollars != 0 || got.TokensUsed == nil || *got.TokensUsed != 0 {
		t.Errorf("resumed: team ended %s reporting cost %v, tokens %v; want $0 and 0, as without the crash", got.Status, got.CostDollars, got.TokensUsed)
	}
}

// A run holds back new dispatches while a question it has no one to ask is open. When the
// question turns moot (the first_success group it was asked in won), the held dispatches start
// then, as a run resumed from a log cut there starts them at once; they waited for the next
// planned dispatch to finish, and the two runs found the budget spent at different points.
func TestMootQuestionReleasesHeldDispatches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &gateStore{Store: memory.New()}
		ask, _ := askAndWinAfter(st)
		slow := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
			<-st.recorded(troupe.KindHumanAsked, "ask") // it frees its slot while the run holds back
			return &troupe.Result{AgentResult: map[string]any{"slow": true}}, nil
		})
		win := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
			<-st.recorded(troupe.KindDispatchCompleted, "slow")
			return &troupe.Result{AgentResult: map[string]any{"won": true}}, nil
		})
		tail := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
			tm := time.NewTimer(time.Minute) // on the bubble's clock, within team's deadline: passes once all else is blocked
			defer tm.Stop()
			select {
			case <-st.recorded(troupe.KindDispatchStarted, "next"):
				return &troupe.Result{AgentResult: map[string]any{"next_started": true}}, nil
			case <-tm.C:
				return &troupe.Result{AgentResult: map[string]any{"next_started": false}}, nil
			}
		})
		next := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
			return &troupe.Result{AgentResult: map[string]any{"next": true}}, nil
		})
		grp := flow.Parallel(flow.ParallelConfig{Strategy: flow.FirstSuccess}, flow.Named("ask", ask), flow.Named("win", win))
		team := flow.Sequential(flow.SequentialConfig{}, flow.Named("grp", grp), flow.Named("tail", tail))
		cfg := engine.Config{Registry: agents(t, "team", team, "slow", slow, "next", next), Planner: group(2, "team", "slow", "next"), Store: st}
		_, evs := runToEnd(t, cfg, troupe.Request{Query: "q"})
		if o := outcome(t, evs); o.Status != troupe.RunCompleted {
			t.Fatalf("run ended %s, want completed", o.Status)
		}
		var saw any
		for _, ev := range evs {
			if res, ok := ev.Data.(*troupe.Result); ok && res.AgentName == "tail" {
				saw = res.AgentResult["next_started"]
			}
		}
		if saw != true {
			t.Errorf("tail saw next started: %v; want true, next started once grp's win made the question moot", saw)
		}
	})
}

// heldExecutor is the local executor with the jobs hold picks (it is asked of each job, in the
// order the engine hands them over) held back until release is closed, or, with a bound, until
// that much time has passed: a test's way to have a job start only once something else
// happened. The goroutine holding a job back is the scope's, and its Wait waits for it.
type heldExecutor struct {
	*local.Executor
	hold    func(j troupe.Job) bool
	release <-chan struct{}
	bound   time.Duration // 0: none
}

func (e heldExecutor) Scope(ctx context.Context) troupe.Scope {
	return &heldScope{Scope: e.Executor.Scope(ctx), e: e}
}

type heldScope struct {
	troupe.Scope
	e    heldExecutor
	held sync.WaitGroup
}

func (s *heldScope) Go(j troupe.Job, delay time.Duration, deadline time.Time) {
	if !s.e.hold(j) {
		s.Scope.Go(j, delay, deadline)
		return
	}
	s.held.Go(func() {
		var bound <-chan time.Time
		if s.e.bound > 0 {
			t := time.NewTimer(s.e.bound)
			defer t.Stop()
			bound = t.C
		}
		select {
		case <-s.e.release:
		case <-bound:
		}
		s.Scope.Go(j, delay, deadline)
	})
}

func (s *heldScope) Wait() {
	s.held.Wait()
	s.Scope.Wait()
}

// after returns a hold that picks the jobs is picks, all but the first skip of them.
func after(skip int32, is func(troupe.Job) bool) func(troupe.Job) bool {
	var n atomic.Int32
	return func(j troupe.Job) bool { return is(j) && n.Add(1) > skip }
}

// A composite whose member paused for a human, made again by a run resumed with the answer,
// runs to take its finished members from the log even when the run is already ending as it
// starts (another dispatch, given its own answer, failed the run at once): a collect_all group
// with a completed member completes with that member's result and use. Which of the two
// happens first is the goroutines' order; the composite was cancelled before it ran when the
// failure came first, since the answers given to the resumed run were not yet counted when
// it looked for composites in the midst of their members, and it ended as if still waiting.
func TestResumedAnsweredCompositeRunsAsTheRunEnds(t *testing.T) {
	boom := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		if _, err := d.Ask(ctx, troupe.Question{Prompt: "go?"}); err != nil {
			return nil, err // paused: there is no one to ask
		}
		return nil, &troupe.AgentError{Code: troupe.CodeAgentError, Message: "broken"}
	})
	m0 := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{AgentResult: map[string]any{"m0": true}, TokensUsed: troupe.Ptr(int64(100))}, nil
	})
	ask := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		if _, err := d.Ask(ctx, troupe.Question{Prompt: "which way?"}); err != nil {
			return nil, err
		}
		return &troupe.Result{AgentResult: map[string]any{"ask": true}, TokensUsed: troupe.Ptr(int64(10))}, nil
	})
	team := flow.Parallel(flow.ParallelConfig{MaxConcurrent: 1}, flow.Named("m0", m0), flow.Named("ask", ask))
	st := memory.New()
	cfg := engine.Config{Registry: agents(t, "boom", boom, "team", team), Planner: group(2, "boom", "team"), Store: st,
		Policy: troupe.ErrorPolicy{OnError: troupe.FailFast}}
	id, paused := runToEnd(t, cfg, troupe.Request{Query: "q"})
	var answers []troupe.Answer
	for _, ev := range paused {
		if q, ok := ev.Data.(*troupe.Question); ok && ev.Kind == troupe.KindHumanAsked {
			answers = append(answers, troupe.Answer{QuestionID: q.ID, Text: "yes", Approved: true})
		}
	}
	if len(answers) != 2 {
		t.Fatalf("the run asked %d questions before it paused, want 2 (boom's and ask's)", len(answers))
	}

	for _, held := range []bool{false, true} {
		cut := &gateStore{Store: logUpTo(t, st, id, recordedAs(troupe.KindRunPaused, ""))}
		c := cfg
		c.Store = cut
		if held {
			// team starts only once boom's failure has failed the run.
			c.Executor = heldExecutor{Executor: local.New(local.Config{}), release: cut.recorded(troupe.KindDispatchFailed, "boom"),
				hold: after(1, func(troupe.Job) bool { return true })} // every job after boom's
		}
		r, err := newEngine(t, c).Resume(t.Context(), id, engine.ResumeOptions{Answers: answers})
		if err != nil {
			t.Fatal(err)
		}
		r.Wait(t.Context())
		evs, _ := cut.Events(t.Context(), id, 0)
		troupetest.CheckFinishedLog(t, evs)
		got := finalResult(t, evs, "team")
		if got.Status != troupe.StatusCompleted || tokensOf(got) != 100 {
			t.Errorf("held until the run failed: %v: team ended %s (%v) with tokens %d, want completed with m0's 100", held, got.Status, got.Errors, tokensOf(got))
		}
	}
}

// A member's requires_human reaches the run's review through its composite's result: the run
// pauses on the composite's review, and resumed with the answer it takes the composite's
// result as the human saw it, approved, or fails it, rejected, without running a member again.
func TestCompositeMemberReviewPausesTheRun(t *testing.T) {
	var runs atomic.Int32
	draft := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		runs.Add(1)
		return &troupe.Result{AgentResult: map[string]any{"draft": "v1"}, RequiresHuman: true, TokensUsed: troupe.Ptr(int64(50))}, nil
	})
	team := flow.Sequential(flow.SequentialConfig{}, flow.Named("draft", draft))
	st := memory.New()
	cfg := engine.Config{Registry: agents(t, "team", team), Planner: group(1, "team"), Store: st}
	id, paused := runToEnd(t, cfg, troupe.Request{Query: "q"})
	out := outcomeOf(paused)
	if out == nil || out.Status != troupe.RunPaused || len(out.Questions) != 1 || out.Questions[0].Kind != troupe.QuestionReview || out.Questions[0].Agent != "team" {
		t.Fatalf("the run ended with %+v; want paused on a review of team's result", out)
	}
	for _, approved := range []bool{true, false} {
		c := cfg
		c.Store = logUpTo(t, st, id, recordedAs(troupe.KindRunPaused, ""))
		r, err := newEngine(t, c).Resume(t.Context(), id, engine.ResumeOptions{Answers: []troupe.Answer{{QuestionID: out.Questions[0].ID, Approved: approved}}})
		if err != nil {
			t.Fatal(err)
		}
		r.Wait(t.Context())
		evs, _ := c.Store.Events(t.Context(), id, 0)
		troupetest.CheckFinishedLog(t, evs)
		got := finalResult(t, evs, "team")
		switch {
		case approved && (got.Status != troupe.StatusCompleted || got.AgentResult["draft"] != "v1" || tokensOf(got) != 50):
			t.Errorf("approved: team ended %s with %v and %d tokens; want completed with the draft and its 50", got.Status, got.AgentResult, tokensOf(got))
		case !approved && (got.Status != troupe.StatusFailed || len(got.Errors) == 0 || got.Errors[len(got.Errors)-1].Code != troupe.CodeHumanRejected):
			t.Errorf("rejected: team ended %s (%v); want failed, rejected by a human", got.Status, got.Errors)
		}
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("the member ran %d times; want once (the resumed runs take the result under review)", n)
	}
}

// What the members of a composite under review used stays counted while the review waits, in
// a run resumed from a log that stops there as in the run that made it: a member another
// composite runs then, crossing the token budget with them, spends it, and the next one is
// refused. The resumed run counted nothing of the composite's until its review ended, and
// started the member the uninterrupted run refused.
func TestResumedReviewCountsItsMembersUse(t *testing.T) {
	st := &gateStore{Store: memory.New()}
	var lateRan atomic.Int32
	draft := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{AgentResult: map[string]any{"draft": "v1"}, RequiresHuman: true, TokensUsed: troupe.Ptr(int64(100))}, nil
	})
	early := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		<-st.recorded(troupe.KindHumanAsked, "team") // team is under review by now
		return &troupe.Result{AgentResult: map[string]any{"early": true}, TokensUsed: troupe.Ptr(int64(100))}, nil
	})
	late := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		lateRan.Add(1)
		return &troupe.Result{AgentResult: map[string]any{"late": true}}, nil
	})
	team := flow.Sequential(flow.SequentialConfig{}, flow.Named("draft", draft))
	other := flow.Sequential(flow.SequentialConfig{OnError: flow.ContinueOnError}, flow.Named("early", early), flow.Named("late", late))
	cfg := engine.Config{Registry: agents(t, "team", team, "other", other), Planner: group(2, "team", "other"), Store: st}
	req := troupe.Request{Query: "q", Budget: troupe.Budget{MaxTokens: 150}}
	id, _ := runToEnd(t, cfg, req)
	if n := lateRan.Load(); n != 0 {
		t.Fatalf("uninterrupted: late ran %d times; want it refused, the budget spent by team's 100 and early's 100", n)
	}
	evs := resumeFrom(t, st, id, cfg, recordedAs(troupe.KindHumanAsked, "team"))
	if n := lateRan.Load(); n != 0 {
		t.Errorf("resumed: late ran %d times; want it refused, as without the crash (%d events)", n, len(evs))
	}
}

// A first_success group's branch that is a composite, one of whose members waits for a human
// (there is no one to ask) while another runs, is cancelled when another branch wins, and
// reports what its cancelled member used; the group's result counts it. Resumed from a log
// that holds that member's cancellation and not the composite's, the group takes its winner
// from the log and makes the waiting composite again, cancelled as the win cancelled it, to
// take its finished member from the log and end as it did. It was passed over, as a branch
// waiting for an answer, and what its member used was left out of the group's result and of
// the run's totals (the property test's seed 30, case 2117).
func TestResumedFirstSuccessCountsWaitingBranchUse(t *testing.T) {
	st := &gateStore{Store: memory.New()}
	s0 := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{AgentResult: map[string]any{"s0": true}, TokensUsed: troupe.Ptr(int64(100))}, nil
	})
	block := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	ask := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		_, err := d.Ask(ctx, troupe.Question{Prompt: "which way?"})
		return nil, err // paused: there is no one to ask
	})
	win := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		<-st.recorded(troupe.KindDispatchFailed, "ask")
		<-st.recorded(troupe.KindDispatchStarted, "block")
		return &troupe.Result{AgentResult: map[string]any{"won": true}, TokensUsed: troupe.Ptr(int64(10))}, nil
	})
	slow := flow.Sequential(flow.SequentialConfig{}, flow.Named("s0", s0), flow.Named("block", block))
	inner := flow.Parallel(flow.ParallelConfig{Strategy: flow.FirstSuccess}, flow.Named("ask", ask), flow.Named("slow", slow))
	team := flow.Parallel(flow.ParallelConfig{Strategy: flow.FirstSuccess}, flow.Named("inner", inner), flow.Named("win", win))
	cfg := engine.Config{Registry: agents(t, "team", team), Planner: group(1, "team")}
	cfg.Store = st
	id, ref := runToEnd(t, cfg, troupe.Request{Query: "q"})
	want := finalResult(t, ref, "team")
	if want.Status != troupe.StatusCompleted || want.TokensUsed == nil || *want.TokensUsed != 110 {
		t.Fatalf("uninterrupted: team ended %s with tokens %v; want completed with s0's 100 and win's 10", want.Status, want.TokensUsed)
	}
	wantInner := finalNested(t, ref, "inner")

	evs := resumeFrom(t, st, id, cfg, recordedAs(troupe.KindDispatchFailed, "slow"))
	got := finalResult(t, evs, "team")
	if got.Status != want.Status || got.TokensUsed == nil || *got.TokensUsed != 110 {
		t.Errorf("resumed: team ended %s with tokens %v; want %s with 110, as without the crash", got.Status, got.TokensUsed, want.Status)
	}
	if agg := aggregation(t, evs); agg.TotalTokensUsed == nil || *agg.TotalTokensUsed != 110 {
		t.Errorf("resumed: the run's total tokens are %v, want 110", agg.TotalTokensUsed)
	}
	if gotInner := finalNested(t, evs, "inner"); gotInner.Status != wantInner.Status || !slices.Equal(messages(gotInner.Errors), messages(wantInner.Errors)) {
		t.Errorf("resumed: inner ended %s (%v); want %s (%v), as without the crash", gotInner.Status, gotInner.Errors, wantInner.Status, wantInner.Errors)
	}
	if t.Failed() {
		t.Logf("uninterrupted:\n%s\nresumed:\n%s", dumpLog(ref), dumpLog(evs))
	}
}

// finalNested is the last result the log holds of a dispatch to agent nested in a composite.
func finalNested(t *testing.T, evs []troupe.Event, agent string) *troupe.Result {
	t.Helper()
	var last *troupe.Result
	for _, ev := range evs {
		if res, ok := ev.Data.(*troupe.Result); ok && ev.Parent != "" && res.AgentName == agent {
			last = res
		}
	}
	if last == nil {
		t.Fatalf("the log holds no result of %s", agent)
	}
	return last
}

// messages are errs' messages.
func messages(errs []troupe.ErrorInfo) []string {
	out := make([]string, len(errs))
	for i, e := range errs {
		out[i] = e.Message
	}
	return out
}
