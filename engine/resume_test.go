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
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/engine"
	"github.com/troupehq/troupe/store/memory"
	"github.com/troupehq/troupe/troupetest"
)

// crashingStore accepts n events, then fails every append: the process "dies" mid-run. The
// batch that would cross the limit is refused whole, as a store's batches are atomic.
type crashingStore struct {
	troupe.Store
	mu sync.Mutex
	n  int
}

var errCrash = errors.New("disk gone")

func (s *crashingStore) Append(ctx context.Context, evs ...troupe.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(evs) > s.n {
		s.n = 0
		return errCrash
	}
	s.n -= len(evs)
	return s.Store.Append(ctx, evs...)
}

// A run stopped mid-way continues from its log: recorded results are taken, not dispatched
// again, the plan and decisions come out the same, and no agent runs twice.
func TestResumeFromLog(t *testing.T) {
	names := []string{"a", "b", "c", "d", "e"}
	for crashAt := 3; crashAt <= 17; crashAt++ {
		t.Run(fmt.Sprint("crash after ", crashAt, " events"), func(t *testing.T) {
			scripts := map[string]*troupetest.Script{}
			var pairs []any
			for _, n := range names {
				scripts[n] = troupetest.NewScript(troupetest.OK(map[string]any{n: true}))
				pairs = append(pairs, n, scripts[n])
			}
			reg := agents(t, pairs...)
			mem := memory.New()
			crashing := &crashingStore{Store: mem, n: crashAt}
			planner := chain(names...)
			eng := newEngine(t, engine.Config{Registry: reg, Planner: planner, Store: crashing})
			_, err := troupetest.Collect(eng.Run(t.Context(), troupe.Request{Query: "q", RunID: "run_crash"}))
			if !errors.Is(err, errCrash) {
				t.Fatalf("run error %v, want the store's", err)
			}
			before, _ := mem.Events(t.Context(), "run_crash", 0)
			if len(before) == 0 {
				// The first batch was refused: the run was never recorded, so there is nothing
				// to resume — and nothing ran.
				if _, err := newEngine(t, engine.Config{Registry: reg, Planner: planner, Store: mem}).Resume(t.Context(), "run_crash", engine.ResumeOptions{}); !errors.Is(err, troupe.ErrRunNotFound) {
					t.Errorf("resuming an unrecorded run: %v", err)
				}
				for _, n := range names {
					if scripts[n].Calls() != 0 {
						t.Errorf("%s ran although its dispatch was never recorded", n)
					}
				}
				return
			}
			recorded := map[string]bool{} // agents whose result survived the crash
			for _, ev := range before {
				if ev.Kind == troupe.KindDispatchCompleted {
					recorded[ev.Agent] = true
				}
			}

			// A new engine over the surviving log, as after a restart.
			eng2 := newEngine(t, engine.Config{Registry: reg, Planner: planner, Store: mem})
			r, err := eng2.Resume(t.Context(), "run_crash", engine.ResumeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			resumedEvents, err := troupetest.Collect(r.Events(t.Context()))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := r.Wait(t.Context()); err != nil {
				t.Fatalf("resumed run: %v", err)
			}
			all, _ := mem.Events(t.Context(), "run_crash", 0)
			troupetest.CheckLog(t, all)
			if len(resumedEvents) != len(all)-len(before) {
				t.Errorf("the resumed run yielded %d events, the log grew by %d", len(resumedEvents), len(all)-len(before))
			}
			for _, n := range names {
				// A recorded result is never dispatched again. An agent that was running when
				// the log broke has no recorded result and runs again (at least once).
				want := 1
				if !recorded[n] && scripts[n].Calls() == 2 {
					want = 2
				}
				if c := scripts[n].Calls(); c != want {
					t.Errorf("%s ran %d times (result recorded before the crash: %v)", n, c, recorded[n])
				}
				if got := len(troupetest.Find(all, troupe.KindDispatchStarted, n)); got != 1 {
					t.Errorf("%s dispatched %d times in the log", n, got)
				}
				if got := len(troupetest.Find(all, troupe.KindRouteDecided, n)); got != 1 {
					t.Errorf("%s routed %d times in the log", n, got)
				}
			}
			if got := len(troupetest.Find(all, troupe.KindPlanCreated, "")); got != 1 {
				t.Errorf("%d plan events", got)
			}
			twice := 0
			for _, n := range names {
				if scripts[n].Calls() == 2 {
					twice++
				}
			}
			if twice > 1 {
				t.Errorf("%d agents ran twice; only the one in flight at the crash may", twice)
			}
			agg := troupetest.Find(all, troupe.KindRunAggregated, "")[0].Data.(*troupe.Aggregation)
			if !cmp.Equal(agg.AgentsExecuted, names) {
				t.Errorf("aggregated %v", agg.AgentsExecuted)
			}
		})
	}
}

// A resumed run whose plan comes out different is refused, not silently mixed.
func TestResumeRefusesDivergedPlan(t *testing.T) {
	mem := memory.New()
	reg := agents(t, "a", troupetest.NewScript(), "b", troupetest.NewScript())
	eng := newEngine(t, engine.Config{Registry: reg, Planner: chain("a", "b"), Store: &crashingStore{Store: mem, n: 4}})
	_, _ = troupetest.Collect(eng.Run(t.Context(), troupe.Request{Query: "q", RunID: "run_x"}))
	eng2 := newEngine(t, engine.Config{Registry: reg, Planner: chain("b", "a"), Store: mem})
	r, err := eng2.Resume(t.Context(), "run_x", engine.ResumeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Wait(t.Context()); err == nil || !strings.Contains(err.Error(), "plan") {
		t.Errorf("Wait: %v, want a plan divergence failure", err)
	}
}

// A transition bigger than one batch (a group of 40 starting at once) broken mid-way: the
// batch that failed is not recorded, none of its dispatches starts, and the run resumes.
func TestResumeAfterBrokenLargeTransition(t *testing.T) {
	var pairs []any
	var names []string
	scripts := map[string]*troupetest.Script{}
	for i := range 40 {
		n := fmt.Sprintf("w%02d", i)
		names = append(names, n)
		scripts[n] = troupetest.NewScript()
		pairs = append(pairs, n, scripts[n])
	}
	reg := agents(t, pairs...)
	mem := memory.New()
	eng := newEngine(t, engine.Config{Registry: reg, Planner: group(40, names...), Store: &crashingStore{Store: mem, n: 40}})
	if _, err := troupetest.Collect(eng.Run(t.Context(), troupe.Request{Query: "q", RunID: "run_big"})); !errors.Is(err, errCrash) {
		t.Fatalf("run error %v, want the store's", err)
	}
	before, _ := mem.Events(t.Context(), "run_big", 0)
	troupetest.CheckLog(t, before)
	started := len(troupetest.Find(before, troupe.KindDispatchStarted, ""))
	ran := 0
	for _, s := range scripts {
		ran += s.Calls()
	}
	if ran > started {
		t.Errorf("%d agents ran but only %d dispatches were recorded", ran, started)
	}
	r, err := newEngine(t, engine.Config{Registry: reg, Planner: group(40, names...), Store: mem}).Resume(t.Context(), "run_big", engine.ResumeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	all, _ := mem.Events(t.Context(), "run_big", 0)
	troupetest.CheckLog(t, all)
	if got := len(troupetest.Find(all, troupe.KindDispatchCompleted, "")); got != 40 {
		t.Errorf("%d completed, want 40", got)
	}
}

// logUpTo copies the events of run id in from into a new store, up to and including the first
// for which last is true: the log as a process that died just then left it.
func logUpTo(t *testing.T, from troupe.Store, id string, last func(troupe.Event) bool) *memory.Store {
	t.Helper()
	evs, err := from.Events(t.Context(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	to := memory.New()
	for _, ev := range evs {
		if err := to.Append(t.Context(), ev); err != nil {
			t.Fatal(err)
		}
		if last(ev) {
			return to
		}
	}
	t.Fatal("no event ends the copy")
	return nil
}

func startedTo(agent string) func(troupe.Event) bool {
	return func(ev troupe.Event) bool { return ev.Kind == troupe.KindDispatchStarted && ev.Agent == agent }
}

// A resumed run takes its recorded routing decisions: the router is not asked (nor paid)
// again, and the task goes to the agent its recorded dispatch went to, though the router
// would now say otherwise.
func TestResumeTakesRecordedDecisions(t *testing.T) {
	var calls atomic.Int32
	var target atomic.Value
	target.Store("x")
	model := troupe.RouterFunc(func(context.Context, troupe.RouteInput, troupe.Context) (troupe.RoutingDecision, error) {
		calls.Add(1)
		return troupe.RoutingDecision{Target: target.Load().(string), Reason: "the model said so", CostDollars: troupe.Ptr(0.25)}, nil
	})
	x, y := troupetest.NewScript(troupetest.OK(map[string]any{"who": "x"})), troupetest.NewScript()
	reg := agents(t, "x", x, "y", y)
	planner := staticPlan(&troupe.Plan{Stages: []troupe.PlanStage{{Tasks: []troupe.Task{{ID: "t1", Reason: "routed"}}}}})
	first := newEngine(t, engine.Config{Registry: reg, Planner: planner, Router: model})
	run(t, first, troupe.Request{Query: "q", RunID: "run_model"})
	mem := logUpTo(t, first.Store(), "run_model", startedTo("x")) // died while x ran

	target.Store("y")
	r, err := newEngine(t, engine.Config{Registry: reg, Planner: planner, Router: model, Store: mem}).Resume(t.Context(), "run_model", engine.ResumeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := r.Wait(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 1 || x.Calls() != 2 || y.Calls() != 0 {
		t.Errorf("router asked %d times, x ran %d, y %d; want 1, 2 (again after the crash), 0", calls.Load(), x.Calls(), y.Calls())
	}
	all, _ := mem.Events(t.Context(), "run_model", 0)
	troupetest.CheckLog(t, all)
	if res := results(all); len(res["x"]) != 1 || len(res["y"]) != 0 {
		t.Errorf("results by agent %v, want x's only", res)
	}
	if got := st.Aggregation.TotalCostDollars; got == nil || *got != 0.25 {
		t.Errorf("total cost %v, want the recorded decision's 0.25, counted once", got)
	}
}

// A resumed run whose dispatch would go to another agent than the one its log recorded under
// the same id fails, saying so, rather than crediting one agent with the other's result.
func TestResumeRefusesDivergedDispatch(t *testing.T) {
	reg := agents(t, "a", troupetest.NewScript(troupetest.Fail(troupe.CodeAgentError, true)), "b", troupetest.NewScript())
	fallback := troupe.ErrorPolicy{OnError: troupe.Fallback, FallbackAgents: map[string][]string{"a": {"b"}}, Retry: troupe.RetryPolicy{MaxAttempts: 1}}
	first := newEngine(t, engine.Config{Registry: reg, Planner: chain("a"), Policy: fallback})
	run(t, first, troupe.Request{Query: "q", RunID: "run_fb"})

	t.Run("dispatch recorded to another agent", func(t *testing.T) {
		// The policy changed: a's failure is now retried, and the retry would take the id
		// under which the log recorded the dispatch to b.
		mem := logUpTo(t, first.Store(), "run_fb", startedTo("b"))
		retry := troupe.ErrorPolicy{OnError: troupe.Retry, Retry: troupe.RetryPolicy{MaxAttempts: 2}}
		r, err := newEngine(t, engine.Config{Registry: reg, Planner: chain("a"), Policy: retry, Store: mem}).Resume(t.Context(), "run_fb", engine.ResumeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Wait(t.Context()); err == nil || !strings.Contains(err.Error(), "went to b in the log but would now go to a") {
			t.Errorf("Wait: %v, want a divergence failure naming b and a", err)
		}
	})
	t.Run("result recorded from another agent", func(t *testing.T) {
		mem := memory.New()
		evs, _ := first.Store().Events(t.Context(), "run_fb", 0)
		for _, ev := range evs {
			if ev.Kind == troupe.KindRunAggregated {
				break // died before aggregating
			}
			if res, ok := ev.Data.(*troupe.Result); ok && res.AgentName == "b" {
				forged := *res
				forged.AgentName = "c"
				ev.Data = &forged
			}
			if err := mem.Append(t.Context(), ev); err != nil {
				t.Fatal(err)
			}
		}
		r, err := newEngine(t, engine.Config{Registry: reg, Planner: chain("a"), Policy: fallback, Store: mem}).Resume(t.Context(), "run_fb", engine.ResumeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		st, err := r.Wait(t.Context())
		if err == nil || !strings.Contains(err.Error(), "records a result of c") || len(st.CompletedAgents) != 0 {
			t.Errorf("Wait: %v, completed %v; want a divergence failure and the forged result not taken", err, st.CompletedAgents)
		}
	})
}

// completionStore tells an agent waiting on recorded(x) when x's completion is in the log, so a
// test fixes the order in which a group's dispatches finish without sleeping.
type completionStore struct {
	troupe.Store
	mu   sync.Mutex
	done map[string]chan struct{}
}

func (s *completionStore) doneLocked(agent string) chan struct{} {
	if s.done == nil {
		s.done = map[string]chan struct{}{}
	}
	if s.done[agent] == nil {
		s.done[agent] = make(chan struct{})
	}
	return s.done[agent]
}

func (s *completionStore) recorded(agent string) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.doneLocked(agent)
}

func (s *completionStore) Append(ctx context.Context, evs ...troupe.Event) error {
	if err := s.Store.Append(ctx, evs...); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ev := range evs {
		if ev.Kind == troupe.KindDispatchCompleted && ev.Parent == "" {
			if ch := s.doneLocked(ev.Agent); !isClosed(ch) {
				close(ch)
			}
		}
	}
	return nil
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// stallStore holds up the append of agent's first failure until release is closed, closing
// stalled as it starts: results that come in meanwhile are recorded in one later transition.
type stallStore struct {
	*completionStore
	agent            string
	stalled, release chan struct{}
}

func (s *stallStore) Append(ctx context.Context, evs ...troupe.Event) error {
	for _, ev := range evs {
		if ev.Kind == troupe.KindDispatchFailed && ev.Agent == s.agent && !isClosed(s.stalled) {
			close(s.stalled)
			<-s.release
		}
	}
	return s.completionStore.Append(ctx, evs...)
}

// orderAgent is an agent that, if flaky, fails its first attempt; otherwise it waits for ready
// and returns the order of the upstream results it was given, or, with no ready, that and the
// k it read (an agent waiting for ready may be waiting for a transition, which holds the state).
// Each call counts in calls[name].
func orderAgent(calls map[string]*atomic.Int32, name string, flaky bool, ready func() <-chan struct{}) troupe.Agent {
	calls[name] = new(atomic.Int32)
	return troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		calls[name].Add(1)
		if flaky && !strings.HasPrefix(d.DispatchReason, "retry") {
			return nil, &troupe.AgentError{Code: troupe.CodeAgentError, Message: "flaky", Recoverable: true}
		}
		var k any
		if ready != nil {
			select {
			case <-ready():
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		} else {
			k, _ = d.State("k")
		}
		var upstream []any
		for _, u := range d.UpstreamResults {
			upstream = append(upstream, u.Agent)
		}
		return &troupe.Result{AgentResult: map[string]any{"k": "from " + name, "m": "from " + name, "seen_k": k, "upstream": upstream},
			Confidence: troupe.Ptr(0.9)}, nil
	})
}

func stage(limit int, names ...string) troupe.PlanStage {
	st := troupe.PlanStage{MaxConcurrency: limit}
	for _, n := range names {
		st.Tasks = append(st.Tasks, troupe.Task{ID: n, Agent: n, Reason: "r", Priority: 1})
	}
	return st
}

var retryOnce = troupe.ErrorPolicy{OnError: troupe.Retry, Retry: troupe.RetryPolicy{MaxAttempts: 2, Initial: time.Millisecond}}

// completionOrderRun is a run whose dispatches finish out of plan order: in the group {a, b} a
// finishes after b, and in the group {d, e, f} (cap 2) d finishes after f, which starts when e
// finishes. a and b write k, d, e and f write m. With flaky, b's first attempt fails and is
// retried.
func completionOrderRun(t *testing.T, st *completionStore, flaky bool) (engine.Config, map[string]*atomic.Int32) {
	calls := map[string]*atomic.Int32{}
	after := func(agent string) func() <-chan struct{} { return func() <-chan struct{} { return st.recorded(agent) } }
	reg := agents(t,
		"a", opt(orderAgent(calls, "a", false, after("b")), troupe.Writes("k")), "b", opt(orderAgent(calls, "b", flaky, nil), troupe.Writes("k")),
		"c", orderAgent(calls, "c", false, nil),
		"d", opt(orderAgent(calls, "d", false, after("f")), troupe.Writes("m")), "e", opt(orderAgent(calls, "e", false, nil), troupe.Writes("m")),
		"f", opt(orderAgent(calls, "f", false, nil), troupe.Writes("m")))
	plan := &troupe.Plan{Stages: []troupe.PlanStage{stage(2, "a", "b"), stage(1, "c"), stage(2, "d", "e", "f")}}
	return engine.Config{Registry: reg, Planner: staticPlan(plan), Store: st, Policy: retryOnce}, calls
}

// dispatchInputs is, by dispatch id, the agent and the upstream order each dispatch of the log
// recorded, and the upstream order its agent reports having been given.
func dispatchInputs(evs []troupe.Event) map[string][]any {
	in := map[string][]any{}
	for _, ev := range evs {
		switch d := ev.Data.(type) {
		case *troupe.Dispatch:
			var upstream []any
			for _, u := range d.UpstreamResults {
				upstream = append(upstream, u.Agent)
			}
			in[d.DispatchID] = append(in[d.DispatchID], d.TargetAgent, upstream)
		case *troupe.Result:
			if d.Status == troupe.StatusCompleted {
				in[d.DispatchID] = append(in[d.DispatchID], d.AgentResult["upstream"])
			}
		}
	}
	return in
}

// resumeEveryCut resumes run id, whose log is evs, from that log cut after each event from
// evs[from] on, with the agents setup makes, and checks that every resumed run comes out as
// the run that was not interrupted (want): the same dispatches, an agent run again only for a
// result the log lacks, and the same session state, upstream results and aggregation.
func resumeEveryCut(t *testing.T, id string, evs []troupe.Event, want troupe.OrchestratorState, from int,
	setup func(*testing.T, *completionStore) (engine.Config, map[string]*atomic.Int32)) {
	started := map[string]int{}
	for _, ev := range troupetest.Find(evs, troupe.KindDispatchStarted, "") {
		started[ev.Agent]++
	}
	for k := max(from, 1); k < len(evs); k++ {
		t.Run(fmt.Sprint("cut after ", k), func(t *testing.T) {
			st := &completionStore{Store: memory.New()}
			if err := st.Append(t.Context(), evs[:k]...); err != nil {
				t.Fatal(err)
			}
			recorded := results(evs[:k])
			cfg, calls := setup(t, st)
			r, err := newEngine(t, cfg).Resume(t.Context(), id, engine.ResumeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got, err := r.Wait(t.Context())
			if err != nil {
				t.Fatalf("resumed run: %v", err)
			}
			all, _ := st.Events(t.Context(), id, 0)
			troupetest.CheckLog(t, all)
			for n, c := range calls {
				if got, want := len(troupetest.Find(all, troupe.KindDispatchStarted, n)), started[n]; got != want {
					t.Errorf("%s dispatched %d times in the log, want %d", n, got, want)
				}
				if got, want := int(c.Load()), started[n]-len(recorded[n]); got != want {
					t.Errorf("%s ran %d times on resume, want %d", n, got, want)
				}
			}
			if diff := cmp.Diff(want.SessionState, got.SessionState); diff != "" {
				t.Errorf("session state (-uninterrupted +resumed):\n%s", diff)
			}
			if diff := cmp.Diff(dispatchInputs(evs), dispatchInputs(all)); diff != "" {
				t.Errorf("dispatches' upstream results (-uninterrupted +resumed):\n%s", diff)
			}
			if diff := cmp.Diff(want.Aggregation, got.Aggregation, cmpopts.IgnoreFields(troupe.Aggregation{}, "TotalExecutionTimeMS")); diff != "" {
				t.Errorf("aggregation (-uninterrupted +resumed):\n%s", diff)
			}
		})
	}
}

// A run resumed from its log cut after any event applies the recorded results in the order
// they were recorded, not in plan order: session state, every dispatch's upstream results and
// the aggregation come out as in the run that was not interrupted.
func TestResumeKeepsCompletionOrder(t *testing.T) {
	for _, flaky := range []bool{false, true} {
		t.Run(fmt.Sprint("flaky=", flaky), func(t *testing.T) {
			st := &completionStore{Store: memory.New()}
			cfg, _ := completionOrderRun(t, st, flaky)
			r, err := newEngine(t, cfg).Start(t.Context(), troupe.Request{Query: "q", RunID: "run_order"})
			if err != nil {
				t.Fatal(err)
			}
			want, err := r.Wait(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if got := want.Aggregation.ExecutionOrder; !cmp.Equal(got, []string{"b", "a", "c", "e", "f", "d"}) {
				t.Fatalf("the run to cut finished in the order %v, not the one the test sets", got)
			}
			evs, _ := st.Events(t.Context(), "run_order", 0)
			resumeEveryCut(t, "run_order", evs, want, 1, func(t *testing.T, st *completionStore) (engine.Config, map[string]*atomic.Int32) {
				return completionOrderRun(t, st, flaky)
			})
		})
	}
}

// Results recorded in one transition are all applied before the run goes on, as the run that
// recorded them did: in the group {x, y, z, w} (cap 3) x fails at once, and y and z finish while
// x's failure is being recorded, so the run records both (in either order) and only then
// starts w (given no upstream results: its group's are not upstream of it). x's retry
// finishes last.
func TestResumeKeepsCompletionBatches(t *testing.T) {
	setup := func(t *testing.T, st *completionStore, stalled chan struct{}) (engine.Config, map[string]*atomic.Int32) {
		calls := map[string]*atomic.Int32{}
		held := func() <-chan struct{} { return stalled }
		reg := agents(t,
			"x", opt(orderAgent(calls, "x", true, func() <-chan struct{} { return st.recorded("w") }), troupe.Writes("k")),
			"y", opt(orderAgent(calls, "y", false, held), troupe.Writes("k")), "z", opt(orderAgent(calls, "z", false, held), troupe.Writes("k")),
			"w", opt(orderAgent(calls, "w", false, nil), troupe.Writes("k")))
		plan := &troupe.Plan{Stages: []troupe.PlanStage{stage(3, "x", "y", "z", "w")}}
		return engine.Config{Registry: reg, Planner: staticPlan(plan), Store: st, Policy: retryOnce}, calls
	}
	var evs []troupe.Event
	var want troupe.OrchestratorState
	synctest.Test(t, func(t *testing.T) {
		st := &stallStore{completionStore: &completionStore{Store: memory.New()}, agent: "x", stalled: make(chan struct{}), release: make(chan struct{})}
		cfg, _ := setup(t, st.completionStore, st.stalled)
		cfg.Store = st
		r, err := newEngine(t, cfg).Start(t.Context(), troupe.Request{Query: "q", RunID: "run_batch"})
		if err != nil {
			t.Fatal(err)
		}
		<-st.stalled
		synctest.Wait() // y and z have finished, their results queued behind x's failure
		close(st.release)
		if want, err = r.Wait(t.Context()); err != nil {
			t.Fatal(err)
		}
		evs, _ = st.Events(t.Context(), "run_batch", 0)
	})
	order := want.Aggregation.ExecutionOrder
	if w := troupetest.Find(evs, troupe.KindDispatchStarted, "w"); len(order) != 4 || !cmp.Equal(order[2:], []string{"w", "x"}) ||
		len(w) != 1 || len(w[0].Data.(*troupe.Dispatch).UpstreamResults) != 0 {
		t.Fatalf("the run to cut finished in the order %v and gave w %v, not what the test sets", order, w)
	}
	// Cut once y's and z's results are in: cut before, they would run again, and finish as
	// they happen to then.
	from := slices.IndexFunc(evs, func(ev troupe.Event) bool { return ev.Kind == troupe.KindDispatchCompleted && ev.Agent == order[1] }) + 1
	resumeEveryCut(t, "run_batch", evs, want, from, func(t *testing.T, st *completionStore) (engine.Config, map[string]*atomic.Int32) {
		return setup(t, st, closedCh)
	})
}

var closedCh = func() chan struct{} { c := make(chan struct{}); close(c); return c }()
