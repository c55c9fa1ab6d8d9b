package engine_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/engine"
	"github.com/troupehq/troupe/executor/local"
	"github.com/troupehq/troupe/flow"
	"github.com/troupehq/troupe/store/memory"
	"github.com/troupehq/troupe/troupetest"
)

// A run that ends failed or cancelled while a dispatch waits for a human (its agent asked, or
// its result is under review, and there is no handler) records how that dispatch ended: a
// terminal log answers every dispatch it started (troupetest.CheckLog), and the outcome counts
// the dispatch as failed, not as neither failed nor skipped. Found by TestResumeProperty.
func TestTerminalRunAnswersPausedDispatches(t *testing.T) {
	asker := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		_, err := d.Ask(ctx, troupe.Question{Prompt: "which?"})
		return nil, err // ErrPaused: there is no handler
	})
	reviewed := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{AgentResult: map[string]any{"deploy": "v1"}, RequiresHuman: true}, nil
	})
	for _, waiting := range []string{"asks", "review"} {
		for _, end := range []troupe.RunStatus{troupe.RunFailed, troupe.RunCancelled} {
			t.Run(fmt.Sprintf("%s, run %s", waiting, end), func(t *testing.T) {
				st := &gateStore{Store: memory.New()}
				var r *engine.Run
				started := make(chan struct{})
				other := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
					<-st.recorded(troupe.KindHumanAsked, "") // the run is pausing
					if end == troupe.RunFailed {
						return nil, &troupe.AgentError{Code: troupe.CodeAgentError, Message: "broken"}
					}
					<-started
					r.Cancel()
					<-ctx.Done()
					return nil, ctx.Err()
				})
				waiter := asker
				if waiting == "review" {
					waiter = reviewed
				}
				eng := newEngine(t, engine.Config{Registry: agents(t, "waiter", waiter, "other", other), Planner: group(2, "waiter", "other"), Store: st})
				var err error
				if r, err = eng.Start(t.Context(), troupe.Request{Query: "q"}); err != nil {
					t.Fatal(err)
				}
				close(started)
				if _, err := r.Wait(t.Context()); err == nil || errors.Is(err, troupe.ErrPaused) {
					t.Fatalf("Wait: %v, want the run %s", err, end)
				}
				evs, _ := st.Events(t.Context(), r.ID(), 0)
				troupetest.CheckLog(t, evs)
				out := outcome(t, evs)
				if out.Status != end || len(out.Questions) != 0 {
					t.Errorf("outcome %+v, want %s with no open question", out, end)
				}
				got := results(evs)["waiter"]
				if len(got) != 1 || got[0].Status != troupe.StatusCancelled || got[0].Errors[0].Code != troupe.CodeCancelled {
					t.Fatalf("waiter's results %+v, want one, cancelled", got)
				}
				if !slices.Contains(out.Failed, "waiter") {
					t.Errorf("outcome lists failed %v, want waiter among them", out.Failed)
				}
			})
		}
	}
}

// An agent that answers "cancelled" while the run goes on fails its dispatch, and fail_fast
// fails the run on it. A run resumed from a log that holds that result does the same: it does
// not take the result for one the run's own cancellation made (which it skips) and go on
// without the agent. Found by TestResumeProperty.
func TestResumeReplaysAgentReportedCancelUnderFailFast(t *testing.T) {
	cancelled := func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{Status: troupe.StatusCancelled, Errors: []troupe.ErrorInfo{{Code: troupe.CodeCancelled, Message: "the service cancelled the task"}}}, nil
	}
	for _, pol := range []troupe.ErrorPolicy{{}, {OnError: troupe.Retry}} {
		t.Run(string(pol.Error()), func(t *testing.T) {
			a, b := troupetest.NewScript(cancelled), troupetest.NewScript()
			reg := agents(t, "a", a, "b", b)
			first := newEngine(t, engine.Config{Registry: reg, Planner: chain("a", "b"), Policy: pol})
			evs := run(t, first, troupe.Request{Query: "q", RunID: "run_cancel"})
			if out := outcome(t, evs); out.Status != troupe.RunFailed || out.Error.Code != troupe.CodeCancelled {
				t.Fatalf("uninterrupted run ended %+v, want failed on a's cancellation", out)
			}
			// The process died once a's result was recorded.
			mem := logUpTo(t, first.Store(), "run_cancel", func(ev troupe.Event) bool { return ev.Kind == troupe.KindDispatchFailed })
			r, err := newEngine(t, engine.Config{Registry: reg, Planner: chain("a", "b"), Store: mem, Policy: pol}).Resume(t.Context(), "run_cancel", engine.ResumeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			st, _ := r.Wait(t.Context())
			all, _ := mem.Events(t.Context(), "run_cancel", 0)
			troupetest.CheckLog(t, all)
			if out := outcome(t, all); st.Status != troupe.RunFailed || out.Error.Code != troupe.CodeCancelled {
				t.Errorf("resumed run ended %s (%+v), want failed on a's cancellation as uninterrupted", st.Status, out.Error)
			}
			if a.Calls() != 1 || b.Calls() != 0 {
				t.Errorf("a ran %d times, b %d; want 1 and 0", a.Calls(), b.Calls())
			}
		})
	}
}

// gateStore lets agents wait until an event is in the log: recorded(kind, agent) is closed once
// an event of that kind for that agent (any agent: "") has been appended.
type gateStore struct {
	troupe.Store
	mu    sync.Mutex
	gates map[string]chan struct{}
}

func (s *gateStore) gateLocked(kind troupe.Kind, agent string) chan struct{} {
	if s.gates == nil {
		s.gates = map[string]chan struct{}{}
	}
	k := string(kind) + "/" + agent
	if s.gates[k] == nil {
		s.gates[k] = make(chan struct{})
	}
	return s.gates[k]
}

func (s *gateStore) recorded(kind troupe.Kind, agent string) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gateLocked(kind, agent)
}

func (s *gateStore) Append(ctx context.Context, evs ...troupe.Event) error {
	if err := s.Store.Append(ctx, evs...); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ev := range evs {
		for _, agent := range []string{"", ev.Agent} {
			if ch := s.gateLocked(ev.Kind, agent); !isClosed(ch) {
				close(ch)
			}
		}
	}
	return nil
}

// A failure recorded while the run waits for a human is handled by the error policy then, as it
// is when a resumed run takes it from the log: a run resumed from its log cut after any event
// makes the dispatches the uninterrupted run made, no more. Here a waits for a human (there is
// no handler), b then fails and is retried, and c then fails the run. Found by
// TestResumeProperty: the uninterrupted run left b's retry for after the pause, the resumed run
// (not pausing when it takes b's failure from the log) made it at once.
func TestFailureWhilePausingIsHandledAsOnResume(t *testing.T) {
	pol := troupe.ErrorPolicy{OnError: troupe.Retry, Retry: troupe.RetryPolicy{MaxAttempts: 2, Initial: time.Microsecond}}
	setup := func(t *testing.T, st *gateStore) engine.Config {
		a := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
			_, err := d.Ask(ctx, troupe.Question{Prompt: "which?"})
			return nil, err
		})
		b := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
			if strings.HasPrefix(d.DispatchReason, "retry") {
				<-ctx.Done() // still running when c fails the run
				return nil, ctx.Err()
			}
			<-st.recorded(troupe.KindHumanAsked, "a")
			return nil, &troupe.AgentError{Code: troupe.CodeAgentError, Message: "flaky", Recoverable: true}
		})
		c := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
			<-st.recorded(troupe.KindDispatchFailed, "b")
			return nil, &troupe.AgentError{Code: troupe.CodeAgentError, Message: "broken"}
		})
		return engine.Config{Registry: agents(t, "a", a, "b", b, "c", c), Planner: group(3, "a", "b", "c"), Store: st, Policy: pol}
	}
	st := &gateStore{Store: memory.New()}
	want := run(t, newEngine(t, setup(t, st)), troupe.Request{Query: "q", RunID: "run_pausing"})
	if out := outcome(t, want); out.Status != troupe.RunFailed {
		t.Fatalf("uninterrupted run ended %+v, want failed by c", out)
	}
	for k := 1; k < len(want)-1; k++ {
		t.Run(fmt.Sprint("cut after ", k), func(t *testing.T) {
			st := &gateStore{Store: memory.New()}
			if err := st.Append(t.Context(), want[:k]...); err != nil {
				t.Fatal(err)
			}
			r, err := newEngine(t, setup(t, st)).Resume(t.Context(), "run_pausing", engine.ResumeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			_, _ = r.Wait(t.Context())
			got, _ := st.Events(t.Context(), "run_pausing", 0)
			troupetest.CheckLog(t, got)
			if diff := cmp.Diff(dispatchOutcomes(want), dispatchOutcomes(got)); diff != "" {
				t.Errorf("dispatches and their ends (-uninterrupted +resumed):\n%s", diff)
			}
			if o := outcome(t, got); o.Status != troupe.RunFailed {
				t.Errorf("resumed run ended %s, want failed", o.Status)
			}
		})
	}
}

// dispatchOutcomes is, by dispatch id, the agent of each dispatch the log started and the
// status of its result.
func dispatchOutcomes(evs []troupe.Event) map[string]string {
	out := map[string]string{}
	for _, ev := range evs {
		switch d := ev.Data.(type) {
		case *troupe.Dispatch:
			out[d.DispatchID] = d.TargetAgent
		case *troupe.Result:
			if ev.Parent == "" {
				out[d.DispatchID] += " " + string(d.Status)
			}
		}
	}
	return out
}

// A run waiting for a human starts no new dispatch until it has paused and been resumed with
// the answer; a run resumed from its log cut while it was waiting so (the question asked, the
// pause not yet recorded) and still with no one to ask does the same, rather than starting
// the plan's next dispatch before it asks again. Here a asks, b finishes once a has asked,
// and c (cap 2) waits for a free slot. Found by TestResumeProperty.
func TestResumeOfPausingRunStartsNothingNew(t *testing.T) {
	var cCalls atomic.Int32
	setup := func(t *testing.T, st *gateStore) engine.Config {
		a := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
			ans, err := d.Ask(ctx, troupe.Question{Prompt: "which?"})
			if err != nil {
				return nil, err
			}
			return &troupe.Result{AgentResult: map[string]any{"answer": ans.Text}}, nil
		})
		b := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
			<-st.recorded(troupe.KindHumanAsked, "a")
			return &troupe.Result{AgentResult: map[string]any{"ok": true}}, nil
		})
		c := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
			cCalls.Add(1)
			return &troupe.Result{AgentResult: map[string]any{"ok": true}}, nil
		})
		return engine.Config{Registry: agents(t, "a", a, "b", b, "c", c), Planner: group(2, "a", "b", "c"), Store: st}
	}
	st := &gateStore{Store: memory.New()}
	want := run(t, newEngine(t, setup(t, st)), troupe.Request{Query: "q", RunID: "run_wait"})
	if last := troupetest.Last(want); last.Kind != troupe.KindRunPaused || len(troupetest.Find(want, troupe.KindDispatchStarted, "c")) != 0 {
		t.Fatalf("uninterrupted run ended %s having started c %d times; want paused before c", last.Kind, len(troupetest.Find(want, troupe.KindDispatchStarted, "c")))
	}
	cut := slices.IndexFunc(want, func(ev troupe.Event) bool { return ev.Kind == troupe.KindDispatchCompleted && ev.Agent == "b" }) + 1
	for k := cut; k < len(want); k++ {
		t.Run(fmt.Sprint("cut after ", k), func(t *testing.T) {
			cCalls.Store(0)
			st := &gateStore{Store: memory.New()}
			if err := st.Append(t.Context(), want[:k]...); err != nil {
				t.Fatal(err)
			}
			eng := newEngine(t, setup(t, st))
			r, err := eng.Resume(t.Context(), "run_wait", engine.ResumeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := r.Wait(t.Context()); !errors.Is(err, troupe.ErrPaused) {
				t.Fatalf("resumed run: %v, want paused again on a's question", err)
			}
			got, _ := st.Events(t.Context(), "run_wait", 0)
			troupetest.CheckLog(t, got)
			if n := len(troupetest.Find(got, troupe.KindDispatchStarted, "c")); n != 0 || cCalls.Load() != 0 {
				t.Errorf("c started %d times in the log and ran %d times before the run paused; want neither", n, cCalls.Load())
			}
			// Answered, the run goes on to c.
			q := troupetest.Last(got).Data.(*troupe.Outcome).Questions[0]
			r, err = eng.Resume(t.Context(), "run_wait", engine.ResumeOptions{Answers: []troupe.Answer{{QuestionID: q.ID, Text: "this"}}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := r.Wait(t.Context()); err != nil {
				t.Fatalf("answered run: %v", err)
			}
			if cCalls.Load() != 1 {
				t.Errorf("c ran %d times once answered, want 1", cCalls.Load())
			}
		})
	}
}

// A resumed run whose log records the budget spent takes that budget, not one it works out
// later, and skips what the run that made the log skipped, at the same point: here the
// dispatch limit (2) keeps c from starting as a and b start. Resumed from a log cut once a's
// result is in, the run that looked at c only after taking a's result from the log found the
// cost budget spent (a cost all of it) and said so, or, a having failed the run, never looked
// at c and said no budget was spent. Found by TestResumeProperty.
func TestResumeKeepsTheRecordedBudget(t *testing.T) {
	cases := []struct {
		name   string
		policy troupe.ErrorPolicy
		aFails bool
		status troupe.RunStatus
	}{
		{"another budget spent later", troupe.ErrorPolicy{OnError: troupe.Continue}, false, troupe.RunCompleted},
		{"the run fails first", troupe.ErrorPolicy{}, true, troupe.RunFailed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			setup := func(t *testing.T, st *gateStore) engine.Config {
				a := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
					<-st.recorded(troupe.KindBudgetExhausted, "")
					if tc.aFails {
						return nil, &troupe.AgentError{Code: troupe.CodeAgentError, Message: "broken"}
					}
					return &troupe.Result{AgentResult: map[string]any{"ok": true}, CostDollars: troupe.Ptr(0.5)}, nil
				})
				b := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
					select {
					case <-st.recorded(troupe.KindDispatchCompleted, "a"):
					case <-st.recorded(troupe.KindDispatchFailed, "a"):
					}
					select {
					case <-ctx.Done():
						return nil, ctx.Err()
					default:
						return &troupe.Result{AgentResult: map[string]any{"ok": true}}, nil
					}
				})
				return engine.Config{Registry: agents(t, "a", a, "b", b, "c", troupetest.NewScript()), Planner: group(3, "a", "b", "c"),
					Store: st, Policy: tc.policy, MaxDispatches: 2}
			}
			req := troupe.Request{Query: "q", RunID: "run_budget", Budget: troupe.Budget{MaxCostDollars: 0.5}}
			st := &gateStore{Store: memory.New()}
			r, err := newEngine(t, setup(t, st)).Start(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = r.Wait(t.Context())
			want, _ := st.Events(t.Context(), "run_budget", 0)
			troupetest.CheckLog(t, want)
			wantOut := outcome(t, want)
			if wantOut.Status != tc.status || wantOut.Budget != "dispatch limit of 2 reached" {
				t.Fatalf("uninterrupted run ended %+v, want %s with the dispatch limit reached", wantOut, tc.status)
			}
			from := slices.IndexFunc(want, func(ev troupe.Event) bool {
				return ev.Agent == "a" && ev.Data != nil && ev.Kind != troupe.KindRouteDecided && ev.Kind != troupe.KindDispatchStarted
			})
			for k := from + 1; k < len(want); k++ {
				t.Run(fmt.Sprint("cut after ", k), func(t *testing.T) {
					st := &gateStore{Store: memory.New()}
					if err := st.Append(t.Context(), want[:k]...); err != nil {
						t.Fatal(err)
					}
					r, err := newEngine(t, setup(t, st)).Resume(t.Context(), "run_budget", engine.ResumeOptions{})
					if err != nil {
						t.Fatal(err)
					}
					_, _ = r.Wait(t.Context())
					got, _ := st.Events(t.Context(), "run_budget", 0)
					troupetest.CheckLog(t, got)
					if out := outcome(t, got); out.Status != wantOut.Status || out.Budget != wantOut.Budget || !slices.Equal(out.Skipped, wantOut.Skipped) {
						t.Errorf("resumed run ended %s, budget %q, skipped %v; want %s, %q, %v", out.Status, out.Budget, out.Skipped, wantOut.Status, wantOut.Budget, wantOut.Skipped)
					}
				})
			}
		})
	}
}

// The answers a paused run is resumed with are recorded as the answers a handler gives are:
// each human_answered event names the dispatch and agent that asked, and the step, as its
// human_asked event does (the log says which dispatch an answer is for without a lookup).
func TestResumeAnswersNameTheirDispatch(t *testing.T) {
	var calls atomic.Int64
	store := memory.New()
	eng := newEngine(t, engine.Config{Registry: agents(t, "first", troupetest.NewScript(), "tutor", asker(&calls)), Planner: chain("first", "tutor"), Store: store})
	r, err := eng.Start(t.Context(), troupe.Request{Query: "teach me"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Wait(t.Context()); !errors.Is(err, troupe.ErrPaused) {
		t.Fatalf("Wait: %v, want paused", err)
	}
	evs, _ := store.Events(t.Context(), r.ID(), 0)
	q := troupetest.Last(evs).Data.(*troupe.Outcome).Questions[0]
	all := resumeWith(t, eng, store, r.ID(), troupe.Answer{QuestionID: q.ID, Text: "decimals"})
	asked, answered := troupetest.Find(all, troupe.KindHumanAsked, ""), troupetest.Find(all, troupe.KindHumanAnswered, "")
	if len(asked) != 1 || len(answered) != 1 {
		t.Fatalf("%d questions and %d answers recorded, want 1 and 1", len(asked), len(answered))
	}
	if a, q := answered[0], asked[0]; a.DispatchID != q.DispatchID || a.Agent != q.Agent || a.Step != q.Step || a.DispatchID == "" {
		t.Errorf("human_answered names dispatch %q, agent %q, step %d; want %q, %q, %d as human_asked", a.DispatchID, a.Agent, a.Step, q.DispatchID, q.Agent, q.Step)
	}
}

// A retry the run that made the log refused because a budget was spent is refused by the
// resumed run too, though its own time budget's clock, started again on resume, is not
// spent: the log records the budget spent, and nothing the run had not started by then
// starts. Here a takes 70 s of a 60 s budget and fails; its retry is refused and the run fails.
func TestResumeRefusesARetryTheBudgetRefused(t *testing.T) {
	pol := troupe.ErrorPolicy{OnError: troupe.Retry, Retry: troupe.RetryPolicy{MaxAttempts: 3, Initial: time.Millisecond}}
	req := troupe.Request{Query: "q", RunID: "run_time", Budget: troupe.Budget{TimeSeconds: 60}}
	setup := func(t *testing.T, st troupe.Store) (engine.Config, *troupetest.Script) {
		clock := troupetest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		a := troupetest.NewScript(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
			clock.Advance(70 * time.Second)
			return nil, &troupe.AgentError{Code: troupe.CodeAgentError, Message: "flaky", Recoverable: true}
		})
		return engine.Config{Registry: agents(t, "a", a), Planner: chain("a"), Policy: pol, Store: st,
			Executor: local.New(local.Config{Clock: clock.Now})}, a
	}
	cfg, _ := setup(t, memory.New())
	want := run(t, newEngine(t, cfg), req)
	if out := outcome(t, want); out.Status != troupe.RunFailed || len(troupetest.Find(want, troupe.KindBudgetExhausted, "")) != 1 {
		t.Fatalf("uninterrupted run ended %+v; want failed, the time budget spent", out)
	}
	at := slices.IndexFunc(want, func(ev troupe.Event) bool { return ev.Kind == troupe.KindBudgetExhausted })
	for k := at + 1; k < len(want); k++ {
		t.Run(fmt.Sprint("cut after ", k), func(t *testing.T) {
			st := memory.New()
			if err := st.Append(t.Context(), want[:k]...); err != nil {
				t.Fatal(err)
			}
			cfg, a := setup(t, st)
			r, err := newEngine(t, cfg).Resume(t.Context(), "run_time", engine.ResumeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got, _ := r.Wait(t.Context())
			all, _ := st.Events(t.Context(), "run_time", 0)
			troupetest.CheckLog(t, all)
			if got.Status != troupe.RunFailed || a.Calls() != 0 || len(troupetest.Find(all, troupe.KindDispatchStarted, "a")) != 1 {
				t.Errorf("resumed run ended %s; a ran %d times and was dispatched %d times in the log; want failed, 0, 1",
					got.Status, a.Calls(), len(troupetest.Find(all, troupe.KindDispatchStarted, "a")))
			}
		})
	}
}

// A member of a composite that was running when the run's process died runs again on resume
// under its id, as a planned dispatch does, and the log records its start once: the start the
// log holds is still open, and a second would leave the first unanswered in a finished log
// (troupetest.CheckLog). A member whose completed result the log holds does not run again.
func TestResumeRecordsANestedStartOnce(t *testing.T) {
	composites := map[string]func(...*troupe.AgentSpec) troupe.Agent{
		"sequential": func(m ...*troupe.AgentSpec) troupe.Agent { return flow.Sequential(flow.SequentialConfig{}, m...) },
		"parallel": func(m ...*troupe.AgentSpec) troupe.Agent {
			return flow.Parallel(flow.ParallelConfig{MaxConcurrent: 1}, m...)
		},
	}
	for name, compose := range composites {
		t.Run(name, func(t *testing.T) {
			setup := func(t *testing.T) (*troupe.Registry, map[string]*troupetest.Script) {
				m := map[string]*troupetest.Script{"m1": troupetest.NewScript(troupetest.OK(map[string]any{"m1": true})),
					"m2": troupetest.NewScript(troupetest.OK(map[string]any{"m2": true}))}
				reg := troupe.NewRegistry()
				reg.MustAdd("team", compose(flow.Named("m1", m["m1"]), flow.Named("m2", m["m2"])))
				return reg, m
			}
			plan := chain("team")
			reg, _ := setup(t)
			first := newEngine(t, engine.Config{Registry: reg, Planner: plan})
			want := run(t, first, troupe.Request{Query: "q", RunID: "run_nested"})
			for k := 4; k < len(want)-1; k++ {
				t.Run(fmt.Sprint("cut after ", k), func(t *testing.T) {
					mem := memory.New()
					if err := mem.Append(t.Context(), want[:k]...); err != nil {
						t.Fatal(err)
					}
					reg, m := setup(t)
					r, err := newEngine(t, engine.Config{Registry: reg, Planner: plan, Store: mem}).Resume(t.Context(), "run_nested", engine.ResumeOptions{})
					if err != nil {
						t.Fatal(err)
					}
					if _, err := r.Wait(t.Context()); err != nil {
						t.Fatalf("resumed run: %v", err)
					}
					all, _ := mem.Events(t.Context(), "run_nested", 0)
					troupetest.CheckLog(t, all)
					done := results(want[:k])
					for n, s := range m {
						if ran := s.Calls(); ran != 1-min(len(done[n]), 1) {
							t.Errorf("%s ran %d times on resume; its result was in the log: %v", n, ran, len(done[n]) > 0)
						}
						if got := len(troupetest.Find(all, troupe.KindDispatchStarted, n)); got != 1 {
							t.Errorf("%s started %d times in the log, want 1", n, got)
						}
					}
				})
			}
		})
	}
}
