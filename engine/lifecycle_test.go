package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"go.uber.org/goleak"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/engine"
	"github.com/troupehq/troupe/executor/local"
	"github.com/troupehq/troupe/store/memory"
	"github.com/troupehq/troupe/troupetest"
)

// Cancelling the caller's context ends the run CANCELLED and stops every dispatch.
func TestCancelStopsEveryDispatch(t *testing.T) {
	g := newGate()
	var names []string
	var pairs []any
	for i := range 5 {
		n := fmt.Sprint("w", i)
		names = append(names, n)
		pairs = append(pairs, n, g.agent())
	}
	eng := newEngine(t, engine.Config{Registry: agents(t, pairs...), Planner: group(5, names...)})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var evs []troupe.Event
	for ev, err := range eng.Run(ctx, troupe.Request{Query: "q"}) {
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
		if len(troupetest.Find(evs, troupe.KindDispatchStarted, "")) == 5 && ev.Kind == troupe.KindDispatchStarted {
			for range 5 {
				<-g.entered
			}
			cancel()
		}
	}
	troupetest.CheckLog(t, evs)
	if last := troupetest.Last(evs); last.Kind != troupe.KindRunCancelled {
		t.Fatalf("last event %s, want run_cancelled", last.Kind)
	}
	for name, rs := range results(evs) {
		if rs[0].Status != troupe.StatusCancelled {
			t.Errorf("%s ended %s, want cancelled", name, rs[0].Status)
		}
	}
	if g.in != 0 {
		t.Errorf("%d agents still running after the run ended", g.in)
	}
}

// Breaking out of the event loop cancels the run and leaves no goroutine behind.
func TestBreakLeavesNoGoroutine(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	g := newGate()
	eng, err := engine.New(engine.Config{Registry: agents(t, "a", g.agent(), "b", g.agent()), Planner: group(2, "a", "b"), Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for ev := range eng.Run(t.Context(), troupe.Request{Query: "q"}) {
		if ev.Kind == troupe.KindDispatchStarted {
			n++
			if n == 2 {
				<-g.entered
				<-g.entered
				break
			}
		}
	}
	if g.in != 0 {
		t.Errorf("%d agents still inside after break", g.in)
	}
}

// Goroutines are gone after a completed, a cancelled and a timed-out run.
func TestNoGoroutineLeft(t *testing.T) {
	for _, end := range []string{"completed", "cancelled", "timed out"} {
		t.Run(end, func(t *testing.T) {
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			release := make(chan struct{})
			var step troupetest.Step
			switch end {
			case "completed":
				step = troupetest.OK(nil)
			case "cancelled":
				step = troupetest.Block(release, false)
			case "timed out":
				step = troupetest.Block(release, true) // ignores its context
			}
			exec := local.New(local.Config{})
			eng, err := engine.New(engine.Config{Registry: agents(t, "a", opt(troupetest.NewScript(step), troupe.WithTimeout(20*time.Millisecond))),
				Planner: chain("a"), Executor: exec, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			for ev, err := range eng.Run(ctx, troupe.Request{Query: "q"}) {
				if err != nil {
					t.Fatal(err)
				}
				if end == "cancelled" && ev.Kind == troupe.KindDispatchStarted {
					cancel()
				}
			}
			if end == "timed out" && exec.Stragglers() != 1 {
				t.Errorf("stragglers %d, want 1 (the agent that ignores its context)", exec.Stragglers())
			}
			close(release)
			if err := eng.Close(t.Context()); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A panicking agent yields a failed result with the panic and the stack; the process lives.
func TestPanicBecomesFailedResult(t *testing.T) {
	boom := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) { panic("boom") })
	eng := newEngine(t, engine.Config{Registry: agents(t, "boom", boom), Planner: chain("boom")})
	evs := run(t, eng, troupe.Request{Query: "q"})
	r := results(evs)["boom"][0]
	if r.Status != troupe.StatusFailed || r.Errors[0].Code != troupe.CodePanic {
		t.Fatalf("result %+v", r)
	}
	if stack, _ := r.Errors[0].Details["stack"].(string); !strings.Contains(stack, "lifecycle_test.go") {
		t.Errorf("stack does not show the panicking agent:\n%s", stack)
	}
	if !strings.Contains(r.Errors[0].Message, "boom") {
		t.Errorf("message %q", r.Errors[0].Message)
	}
}

// panicGuard is a guardrail whose dispatch check panics.
type panicGuard struct{}

func (panicGuard) Name() string { return "panicky" }
func (panicGuard) CheckDispatch(context.Context, *troupe.Dispatch) troupe.Verdict {
	panic("guard exploded")
}
func (panicGuard) CheckResult(context.Context, *troupe.Dispatch, *troupe.Result) troupe.Verdict {
	return troupe.Verdict{}
}

// A guardrail that panics before the agent runs fails that dispatch as a panicking agent does;
// the agent is not called and the process lives.
func TestGuardrailPanicBecomesFailedResult(t *testing.T) {
	var called atomic.Bool
	a := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		called.Store(true)
		return &troupe.Result{AgentResult: map[string]any{"ok": true}}, nil
	})
	eng := newEngine(t, engine.Config{Registry: agents(t, "a", a), Planner: chain("a")})
	evs := run(t, eng, troupe.Request{Query: "q", Guardrails: []troupe.Guardrail{panicGuard{}}})
	r := results(evs)["a"][0]
	if r.Status != troupe.StatusFailed || len(r.Errors) == 0 || r.Errors[0].Code != troupe.CodePanic {
		t.Fatalf("result %+v", r)
	}
	if !strings.Contains(r.Errors[0].Message, "guard exploded") {
		t.Errorf("message %q", r.Errors[0].Message)
	}
	if called.Load() {
		t.Error("the agent ran although its guardrail panicked")
	}
}

// A group's dispatches run concurrently, at most the stage's cap at once.
func TestGroupCap(t *testing.T) {
	g := newGate()
	var names []string
	var pairs []any
	for i := range 12 {
		n := fmt.Sprint("w", i)
		names = append(names, n)
		pairs = append(pairs, n, g.agent())
	}
	eng := newEngine(t, engine.Config{Registry: agents(t, pairs...), Planner: group(3, names...)})
	r, err := eng.Start(t.Context(), troupe.Request{Query: "q"})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		<-g.entered
	}
	close(g.release)
	if _, err := r.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	if g.peak != 3 {
		t.Errorf("peak concurrency %d, want 3", g.peak)
	}
}

type lifecycleAgent struct {
	name         string
	mu           *sync.Mutex
	log          *[]string
	fail         bool
	failTeardown bool
}

func (a lifecycleAgent) Run(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
	a.record("run")
	return &troupe.Result{AgentResult: map[string]any{"ok": true}}, nil
}
func (a lifecycleAgent) Setup(context.Context) error {
	a.record("setup")
	if a.fail {
		return errors.New("no connection")
	}
	return nil
}
func (a lifecycleAgent) Teardown(context.Context) error {
	a.record("teardown")
	if a.failTeardown {
		return errors.New("connection already closed")
	}
	return nil
}
func (a lifecycleAgent) record(what string) {
	a.mu.Lock()
	*a.log = append(*a.log, a.name+" "+what)
	a.mu.Unlock()
}

// An agent the plan does not name — a router's choice for a task planned without an agent, as
// seed 003's coordinator plans them — is set up when first dispatched, once however many
// dispatches it gets, and torn down with the run.
func TestSetupOfRoutedAgent(t *testing.T) {
	var mu sync.Mutex
	var log []string
	quiz := lifecycleAgent{name: "quiz", mu: &mu, log: &log}
	p := &troupe.Plan{Stages: []troupe.PlanStage{{Tasks: []troupe.Task{{ID: "t1"}, {ID: "t2"}}, MaxConcurrency: 2}}}
	router := troupe.RouterFunc(func(context.Context, troupe.RouteInput, troupe.Context) (troupe.RoutingDecision, error) {
		return troupe.RoutingDecision{Target: "quiz", Reason: "quiz me"}, nil
	})
	eng := newEngine(t, engine.Config{Registry: agents(t, "quiz", quiz), Planner: staticPlan(p), Router: router})
	evs := run(t, eng, troupe.Request{Query: "quiz me"})
	if out := outcome(t, evs); out.Status != troupe.RunCompleted {
		t.Fatalf("outcome %+v", out)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"quiz setup", "quiz run", "quiz run", "quiz teardown"}; !cmp.Equal(log, want) {
		t.Errorf("lifecycle %v, want %v", log, want)
	}
}

// Setup runs at INITIALIZE; teardown runs on every terminal path, in reverse order.
func TestSetupAndTeardown(t *testing.T) {
	for _, end := range []string{"completed", "failed", "cancelled", "setup fails"} {
		t.Run(end, func(t *testing.T) {
			var mu sync.Mutex
			var log []string
			a := lifecycleAgent{name: "a", mu: &mu, log: &log}
			b := lifecycleAgent{name: "b", mu: &mu, log: &log, fail: end == "setup fails"}
			var third troupe.Agent = troupetest.NewScript()
			if end == "failed" {
				third = troupetest.NewScript(troupetest.Fail("X", false))
			}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			if end == "cancelled" {
				third = troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
					cancel()
					<-ctx.Done()
					return nil, ctx.Err()
				})
			}
			eng := newEngine(t, engine.Config{Registry: agents(t, "a", a, "b", b, "c", third), Planner: chain("a", "b", "c")})
			evs, err := troupetest.Collect(eng.Run(ctx, troupe.Request{Query: "q"}))
			if err != nil {
				t.Fatal(err)
			}
			want := []string{"a setup", "b setup", "a run", "b run", "b teardown", "a teardown"}
			if end == "setup fails" {
				want = []string{"a setup", "b setup", "a teardown"}
				if last := troupetest.Last(evs); last.Stage != troupe.StageFailed || !strings.Contains(last.Data.(*troupe.Outcome).Error.Message, "no connection") {
					t.Errorf("last event %s %+v", last.Kind, last.Data)
				}
			}
			if diff := cmp.Diff(want, log); diff != "" {
				t.Errorf("lifecycle (-want +got):\n%s", diff)
			}
			start := evs[0].Data.(*troupe.RunStart)
			if end != "setup fails" && !cmp.Equal(start.Setup, []string{"a", "b"}) {
				t.Errorf("run_initialized says set up %v", start.Setup)
			}
		})
	}
}

// slowThenAfter returns a test clock, an agent that takes two minutes of it, and a script to
// run after it.
func slowThenAfter() (*troupetest.Clock, troupe.Agent, *troupetest.Script) {
	clock := troupetest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	slow := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		clock.Advance(2 * time.Minute)
		return &troupe.Result{AgentResult: map[string]any{"ok": true}}, nil
	})
	return clock, slow, troupetest.NewScript()
}

// The time budget stops new dispatches once spent, and says so.
func TestTimeBudget(t *testing.T) {
	clock, slow, after := slowThenAfter()
	eng := newEngine(t, engine.Config{Registry: agents(t, "slow", slow, "after", after), Planner: chain("slow", "after"),
		Executor: local.New(local.Config{Clock: clock.Now}), Policy: troupe.ErrorPolicy{MinSuccessRate: troupe.Ptr(0.5)}})
	evs := run(t, eng, troupe.Request{Query: "q", Budget: troupe.Budget{TimeSeconds: 60}})
	hits := troupetest.Find(evs, troupe.KindBudgetExhausted, "")
	if len(hits) != 1 || !strings.Contains(hits[0].Data.(*troupe.Warning).Message, "time budget of 1m0s spent") {
		t.Fatalf("budget events %+v", hits)
	}
	if after.Calls() != 0 {
		t.Errorf("a dispatch started after the budget was spent")
	}
	if out := outcome(t, evs); out.Status != troupe.RunCompleted || !cmp.Equal(out.Skipped, []string{"after"}) {
		t.Errorf("outcome %+v, want completed (1 of 2 meets min_success_rate 0.5) with after skipped", out)
	}
}

// A time budget the planner read from the query (the plan's criteria, as seed 000's parsed
// time_budget_seconds gives it) binds as the request's own does.
func TestTimeBudgetFromPlanCriteria(t *testing.T) {
	clock, slow, after := slowThenAfter()
	p := chainPlan([]string{"slow", "after"})
	p.Criteria = &troupe.SelectionCriteria{TimeBudgetSeconds: troupe.Ptr(60.0)}
	eng := newEngine(t, engine.Config{Registry: agents(t, "slow", slow, "after", after), Planner: staticPlan(p),
		Executor: local.New(local.Config{Clock: clock.Now}), Policy: troupe.ErrorPolicy{MinSuccessRate: troupe.Ptr(0.5)}})
	evs := run(t, eng, troupe.Request{Query: "q"})
	if hits := troupetest.Find(evs, troupe.KindBudgetExhausted, ""); len(hits) != 1 {
		t.Fatalf("budget events %+v, want one", hits)
	}
	if after.Calls() != 0 {
		t.Errorf("a dispatch started after the plan's time budget was spent")
	}
}

// A request whose dispatches seed 000 would refuse is refused at INITIALIZE, saying why.
func TestInvalidRequestFieldsRefused(t *testing.T) {
	eng := newEngine(t, engine.Config{Registry: agents(t, "a", troupetest.NewScript()), Planner: chain("a")})
	for _, tc := range []struct {
		req  troupe.Request
		want string
	}{
		{troupe.Request{Query: "q", Priority: "urgent"}, `field "priority": "urgent" is not one of low, medium, high, critical`},
		{troupe.Request{Query: "q", Timeouts: map[string]float64{"a": -1}}, `field "timeouts.a": want a positive, finite number of seconds, got -1`},
		{troupe.Request{Query: "q", Timeouts: map[string]float64{"a": math.Inf(1)}}, `field "timeouts.a": want a positive, finite number of seconds, got +Inf`},
		{troupe.Request{Query: "q", Budget: troupe.Budget{MaxCostDollars: -1}, Policy: &troupe.ErrorPolicy{OnError: "explode"}},
			`field "policy.on_error": `},
		{troupe.Request{Query: "q", Budget: troupe.Budget{MaxCostDollars: -1}}, `field "budget.max_cost_dollars": want a finite number, 0 or more, got -1`},
	} {
		_, err := eng.Start(t.Context(), tc.req)
		var oe *troupe.OrchestrationError
		if !errors.As(err, &oe) || oe.Stage != troupe.StageInitialize || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Start(%+v): %v, want an INITIALIZE error saying %q", tc.req, err, tc.want)
		}
	}
}

// The cost budget stops new dispatches once spent; each dispatch is told what is left.
func TestCostBudget(t *testing.T) {
	var seen []float64
	var mu sync.Mutex
	spend := troupe.AgentFunc(func(_ context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		mu.Lock()
		seen = append(seen, *d.MaxCostDollars)
		mu.Unlock()
		return &troupe.Result{AgentResult: map[string]any{"ok": true}, CostDollars: troupe.Ptr(0.4)}, nil
	})
	eng := newEngine(t, engine.Config{Registry: agents(t, "a", spend, "b", spend, "c", spend, "d", spend), Planner: chain("a", "b", "c", "d")})
	evs := run(t, eng, troupe.Request{Query: "q", Budget: troupe.Budget{MaxCostDollars: 1}})
	if !cmp.Equal(seen, []float64{1, 0.6, 0.2}) { // $0.2 left, not a float's $0.19999999999999996
		t.Errorf("max_cost_dollars seen %v", seen)
	}
	if len(troupetest.Find(evs, troupe.KindBudgetExhausted, "")) != 1 {
		t.Errorf("no budget_exhausted event")
	}
	if out := outcome(t, evs); !cmp.Equal(out.Skipped, []string{"d"}) {
		t.Errorf("skipped %v, want d", out.Skipped)
	}
}

// Costs that add up to the budget spend it in whatever order they come: float64 sums of
// $0.01, $0.02 and $0.04 are $0.07 in four orders and a hair under it in two ($0.02, $0.04,
// $0.01 among them), so a run counting in floats let d start in some orders, and a resumed
// run, counting what its log holds first, could decide otherwise than the run that made the
// log.
func TestCostBudgetSpentInAnyOrder(t *testing.T) {
	costs := []float64{0.01, 0.02, 0.04}
	for _, order := range [][3]int{{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}} {
		spender := func(c float64) troupe.Agent {
			return troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
				return &troupe.Result{AgentResult: map[string]any{"ok": true}, CostDollars: troupe.Ptr(c)}, nil
			})
		}
		ok := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
			return &troupe.Result{AgentResult: map[string]any{"ok": true}}, nil
		})
		reg := agents(t, "a", spender(costs[order[0]]), "b", spender(costs[order[1]]), "c", spender(costs[order[2]]), "d", ok)
		eng := newEngine(t, engine.Config{Registry: reg, Planner: chain("a", "b", "c", "d")})
		evs := run(t, eng, troupe.Request{Query: "q", Budget: troupe.Budget{MaxCostDollars: 0.07}})
		out := outcome(t, evs)
		if !cmp.Equal(out.Skipped, []string{"d"}) || out.Budget != "cost budget of $0.0700 spent ($0.0700)" {
			t.Errorf("costs %v, %v, %v: skipped %v, budget %q; want d skipped, $0.07 spent",
				costs[order[0]], costs[order[1]], costs[order[2]], out.Skipped, out.Budget)
		}
	}
}

// Declared writes go to session state (recorded as state_delta); declared reads that are
// absent fail the agent with STATE_MISSING (seed 003).
func TestSessionState(t *testing.T) {
	writer := troupetest.NewScript(troupetest.OK(map[string]any{"learner_level": "beginner", "other": 1}))
	var got any
	reader := troupe.AgentFunc(func(_ context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		got, _ = d.State("learner_level")
		return &troupe.Result{AgentResult: map[string]any{"ok": true}}, nil
	})
	reg := agents(t, "diagnostic", opt(writer, troupe.Writes("learner_level")), "tutor", opt(reader, troupe.Reads("learner_level")))
	t.Run("written then read", func(t *testing.T) {
		eng := newEngine(t, engine.Config{Registry: reg, Planner: chain("diagnostic", "tutor")})
		evs := run(t, eng, troupe.Request{Query: "q"})
		deltas := troupetest.Find(evs, troupe.KindStateDelta, "diagnostic")
		if len(deltas) != 1 || !cmp.Equal(deltas[0].Data.(*troupe.StateDelta).Set, map[string]any{"learner_level": "beginner"}) {
			t.Errorf("state deltas %+v", deltas)
		}
		if got != "beginner" {
			t.Errorf("tutor read %v", got)
		}
	})
	t.Run("read before written", func(t *testing.T) {
		eng := newEngine(t, engine.Config{Registry: reg, Planner: chain("tutor")})
		evs := run(t, eng, troupe.Request{Query: "q"})
		r := results(evs)["tutor"][0]
		if r.Status != troupe.StatusFailed || r.Errors[0].Code != troupe.CodeStateMissing || r.Errors[0].FallbackAction == "" {
			t.Errorf("result %+v, want STATE_MISSING with a fallback action", r)
		}
	})
}

// Agents' progress events appear in the run's stream, between their start and finish.
func TestProgressEvents(t *testing.T) {
	a := troupe.AgentFunc(func(_ context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		for i := range 3 {
			d.Progress("replicate_done", map[string]any{"i": i})
		}
		return &troupe.Result{AgentResult: map[string]any{"ok": true}}, nil
	})
	eng := newEngine(t, engine.Config{Registry: agents(t, "a", a), Planner: chain("a")})
	evs := run(t, eng, troupe.Request{Query: "q"})
	kinds := troupetest.Kinds(evs)
	want := []troupe.Kind{troupe.KindDispatchStarted, troupe.KindAgentProgress, troupe.KindAgentProgress, troupe.KindAgentProgress, troupe.KindDispatchCompleted}
	if diff := cmp.Diff(want, kinds[3:8]); diff != "" {
		t.Errorf("kinds (-want +got):\n%s", diff)
	}
	if p := evs[4].Data.(*troupe.Progress); p.Kind != "replicate_done" {
		t.Errorf("progress %+v", p)
	}
}

// Guardrails, per agent and per run: a check before can block; a check after can annotate or block.
func TestGuardrails(t *testing.T) {
	pii := troupe.GuardrailFuncs{ID: "pii", After: func(_ context.Context, _ *troupe.Dispatch, r *troupe.Result) troupe.Verdict {
		if _, ok := r.AgentResult["email"]; ok {
			return troupe.Verdict{Block: true, Reason: "result contains an email address"}
		}
		return troupe.Verdict{Annotations: map[string]any{"checked": true}, Warnings: []string{"pii checked"}}
	}}
	noProd := troupe.GuardrailFuncs{ID: "no-prod", Before: func(_ context.Context, d *troupe.Dispatch) troupe.Verdict {
		if d.TargetAgent == "deployer" {
			return troupe.Verdict{Block: true, Reason: "deployments need a change ticket"}
		}
		return troupe.Verdict{}
	}}
	leaky := troupetest.NewScript(troupetest.OK(map[string]any{"email": "a@b.c"}))
	reg := agents(t, "clean", opt(troupetest.NewScript(), troupe.Guard(pii)), "leaky", opt(leaky, troupe.Guard(pii)), "deployer", troupetest.NewScript())
	eng := newEngine(t, engine.Config{Registry: reg, Planner: group(3, "clean", "leaky", "deployer"), Policy: troupe.ErrorPolicy{OnError: troupe.Continue, MinSuccessRate: troupe.Ptr(0.3)}})
	evs := run(t, eng, troupe.Request{Query: "q", Guardrails: []troupe.Guardrail{noProd}})
	rs := results(evs)
	if c := rs["clean"][0]; c.Status != troupe.StatusCompleted || c.Annotations["pii"] == nil || !cmp.Equal(c.Warnings, []string{"pii checked"}) {
		t.Errorf("clean %+v", c)
	}
	if l := rs["leaky"][0]; l.Status != troupe.StatusFailed || l.Errors[0].Code != troupe.CodeBlocked {
		t.Errorf("leaky %+v", l)
	}
	if d := rs["deployer"][0]; d.Status != troupe.StatusFailed || !strings.Contains(d.Errors[0].Message, "change ticket") {
		t.Errorf("deployer %+v", d)
	}
}

// A guardrail's before-dispatch warnings and annotations are carried onto the dispatch's
// result, as its after-result ones are, whether the agent then ran or the dispatch was blocked.
func TestGuardrailBeforeDispatchNotes(t *testing.T) {
	notes := troupe.GuardrailFuncs{ID: "audit",
		Before: func(context.Context, *troupe.Dispatch) troupe.Verdict {
			return troupe.Verdict{Warnings: []string{"before"}, Annotations: map[string]any{"seen": true}}
		},
		After: func(context.Context, *troupe.Dispatch, *troupe.Result) troupe.Verdict {
			return troupe.Verdict{Warnings: []string{"after"}, Annotations: map[string]any{"checked": true}}
		}}
	gate := troupe.GuardrailFuncs{ID: "gate", Before: func(_ context.Context, d *troupe.Dispatch) troupe.Verdict {
		if d.TargetAgent == "blocked" {
			return troupe.Verdict{Block: true, Reason: "closed", Warnings: []string{"gate closed"}, Annotations: map[string]any{"rule": 7}}
		}
		return troupe.Verdict{}
	}}
	shared := &troupe.Result{AgentResult: map[string]any{"ok": true}, Warnings: []string{"agent"}, Annotations: map[string]any{"own": 1}}
	agent := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) { return shared, nil })
	eng := newEngine(t, engine.Config{Registry: agents(t, "open", agent, "blocked", agent), Planner: group(2, "open", "blocked"),
		Policy: troupe.ErrorPolicy{OnError: troupe.Continue}})
	evs := run(t, eng, troupe.Request{Query: "q", Guardrails: []troupe.Guardrail{notes, gate}})
	rs := results(evs)
	open := rs["open"][0]
	if !cmp.Equal(open.Warnings, []string{"before", "agent", "after"}) ||
		!cmp.Equal(open.Annotations, map[string]any{"own": 1, "audit": map[string]any{"seen": true, "checked": true}}) {
		t.Errorf("open's result: warnings %v, annotations %v", open.Warnings, open.Annotations)
	}
	blocked := rs["blocked"][0]
	if blocked.Status != troupe.StatusFailed || !cmp.Equal(blocked.Warnings, []string{"before", "gate closed"}) ||
		!cmp.Equal(blocked.Annotations, map[string]any{"audit": map[string]any{"seen": true}, "gate": map[string]any{"rule": 7}}) {
		t.Errorf("blocked's result: %s, warnings %v, annotations %v", blocked.Status, blocked.Warnings, blocked.Annotations)
	}
	if !cmp.Equal(shared.Annotations, map[string]any{"own": 1}) || !cmp.Equal(shared.Warnings, []string{"agent"}) {
		t.Errorf("the agent's own result was written into: %+v", shared)
	}
}

// The orchestrator state (seed 000) can be read mid-run and at the end.
func TestOrchestratorState(t *testing.T) {
	g := newGate()
	eng := newEngine(t, engine.Config{Registry: agents(t, "a", troupetest.NewScript(), "b", g.agent()), Planner: chain("a", "b")})
	r, err := eng.Start(t.Context(), troupe.Request{Query: "q", SessionID: "sess_xyz", QueryID: "qry_789"})
	if err != nil {
		t.Fatal(err)
	}
	<-g.entered
	mid := r.State()
	if mid.Status != troupe.RunExecuting || mid.CurrentStage != 1 || len(mid.CompletedAgents) != 1 || mid.DispatchedAgents["b"] == nil {
		t.Errorf("mid-run state %+v", mid)
	}
	close(g.release)
	end, err := r.Wait(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if end.Status != troupe.RunCompleted || end.SessionID != "sess_xyz" || end.QueryID != "qry_789" || len(end.CompletedAgents) != 2 ||
		!cmp.Equal(end.ExecutionPlan, [][]string{{"a"}, {"b"}}) || end.Aggregation == nil {
		t.Errorf("final state %+v", end)
	}
}

// An agent planned in two tasks shows its latest dispatch in DispatchedAgents, the one whose
// result CompletedAgents holds, and not the first.
func TestOrchestratorStateHoldsTheLatestDispatch(t *testing.T) {
	p := &troupe.Plan{Stages: []troupe.PlanStage{
		{Tasks: []troupe.Task{{ID: "first", Agent: "a"}}},
		{Tasks: []troupe.Task{{ID: "second", Agent: "a", DependsOn: []string{"first"}}}},
	}}
	eng := newEngine(t, engine.Config{Registry: agents(t, "a", troupetest.NewScript()), Planner: staticPlan(p)})
	r, err := eng.Start(t.Context(), troupe.Request{Query: "q"})
	if err != nil {
		t.Fatal(err)
	}
	st, err := r.Wait(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	d, res := st.DispatchedAgents["a"], st.CompletedAgents["a"]
	if d == nil || res == nil || d.DispatchID != res.DispatchID {
		t.Fatalf("DispatchedAgents[a] = %v, CompletedAgents[a] = %v: want the same, latest, dispatch", d, res)
	}
	log, err := eng.Store().Events(t.Context(), r.ID(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if evs := troupetest.Find(log, troupe.KindDispatchStarted, "a"); len(evs) != 2 || evs[1].DispatchID != d.DispatchID {
		t.Errorf("DispatchedAgents[a] is %s, want the second of the dispatches %v", d.DispatchID, evs)
	}
}

// The state a run hands out is a copy: modifying its results, dispatches, maps and
// aggregation changes neither the run (its next State, its Aggregation) nor its log.
func TestOrchestratorStateIsACopy(t *testing.T) {
	writer := troupetest.NewScript(troupetest.OK(map[string]any{"level": "beginner", "nested": map[string]any{"k": "v"}}))
	reg := agents(t, "a", opt(writer, troupe.Writes("level")), "b", troupetest.NewScript(troupetest.Fail(troupe.CodeAgentError, false)))
	eng := newEngine(t, engine.Config{Registry: reg, Planner: chain("a", "b"), Policy: troupe.ErrorPolicy{OnError: troupe.Continue}})
	r, err := eng.Start(t.Context(), troupe.Request{Query: "q", ParsedQuery: map[string]any{"intent": "x"}})
	if err != nil {
		t.Fatal(err)
	}
	before, _ := r.Wait(t.Context())
	before = before.Clone()
	logBefore, _ := eng.Store().Events(t.Context(), r.ID(), 0)
	logJSON, _ := json.Marshal(logBefore)

	// The snapshot's own maps and slices are the caller's.
	st := r.State()
	delete(st.CompletedAgents, "a")
	st.FailedAgents["c"] = nil
	st.DispatchedAgents = nil
	st.SessionState["level"] = "changed"
	st.Errors[0] = troupe.ErrorInfo{Message: "changed"}
	st.Errors = append(st.Errors, troupe.ErrorInfo{})
	st.Warnings = append(st.Warnings, "changed")
	st.ExecutionPlan[0][0] = "changed"

	// A deep copy may be modified through and through.
	c := r.State().Clone()
	a := c.CompletedAgents["a"]
	a.Status, a.AgentResult["level"] = troupe.StatusFailed, "expert"
	a.AgentResult["nested"].(map[string]any)["k"] = "changed"
	*a.Confidence = 0
	c.FailedAgents["b"].Errors[0].Message = "changed"
	c.DispatchedAgents["a"].ParsedQuery["intent"] = "changed"
	c.DispatchedAgents["a"].TargetAgent = "changed"
	c.Aggregation.CombinedResults["a"] = "changed"
	c.Aggregation.AgentsExecuted[0] = "changed"
	agg := r.Aggregation().Clone()
	agg.CombinedResults["a"] = "changed"

	if diff := cmp.Diff(before, r.State(), cmpopts.IgnoreUnexported(troupe.Dispatch{})); diff != "" {
		t.Errorf("modifying a snapshot or a copy changed the run's state (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(before.Aggregation, r.Aggregation()); diff != "" {
		t.Errorf("modifying a copy changed the run's aggregation (-before +after):\n%s", diff)
	}
	logAfter, _ := eng.Store().Events(t.Context(), r.ID(), 0)
	if after, _ := json.Marshal(logAfter); string(after) != string(logJSON) {
		t.Errorf("modifying a copy changed the log:\n%s\nwas\n%s", after, logJSON)
	}
}

// A fixed engine seed gives each run its own seed (and ids), reproducibly across engines.
func TestEngineSeedSequence(t *testing.T) {
	ids := func() []string {
		eng := newEngine(t, engine.Config{Registry: agents(t, "a", troupetest.NewScript()), Planner: chain("a"), Seed: 9})
		var out []string
		for range 3 {
			evs := run(t, eng, troupe.Request{Query: "q"})
			if troupetest.Last(evs).Kind != troupe.KindRunCompleted {
				t.Fatalf("run ended %s", troupetest.Last(evs).Kind)
			}
			out = append(out, evs[0].RunID)
		}
		return out
	}
	first := ids()
	if first[0] == first[1] || first[1] == first[2] {
		t.Errorf("runs share ids: %v", first)
	}
	if again := ids(); !cmp.Equal(first, again) {
		t.Errorf("a new engine with the same seed gave %v, then %v", first, again)
	}
}

// ctxSetupAgent's Setup waits for its context; cancel, if set, is called first: the caller
// cancels the run while the agent is being set up.
type ctxSetupAgent struct {
	lifecycleAgent
	cancel context.CancelFunc
}

func (a ctxSetupAgent) Setup(ctx context.Context) error {
	a.record("setup")
	a.cancel()
	<-ctx.Done()
	return ctx.Err()
}

// A run cancelled during INITIALIZE, whose agent's Setup gives up with its context, ends
// CANCELLED, as one cancelled at any other stage does: the setup did not fail, the caller
// stopped the run. The agents set up before it are torn down.
func TestCancelDuringSetup(t *testing.T) {
	var mu sync.Mutex
	var log []string
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	a := lifecycleAgent{name: "a", mu: &mu, log: &log}
	b := ctxSetupAgent{lifecycleAgent{name: "b", mu: &mu, log: &log}, cancel}
	eng := newEngine(t, engine.Config{Registry: agents(t, "a", a, "b", b), Planner: chain("a", "b")})
	evs, err := troupetest.Collect(eng.Run(ctx, troupe.Request{Query: "q"}))
	if err != nil {
		t.Fatal(err)
	}
	troupetest.CheckLog(t, evs)
	if last := troupetest.Last(evs); last.Kind != troupe.KindRunCancelled {
		t.Errorf("run ended %s %+v, want run_cancelled", last.Kind, last.Data)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"a setup", "b setup", "a teardown"}; !cmp.Equal(log, want) {
		t.Errorf("lifecycle %v, want %v", log, want)
	}
}

// flakySetupAgent's first Setup fails, as a service not up yet does; later ones succeed.
type flakySetupAgent struct {
	lifecycleAgent
	setups *atomic.Int32
}

func (a flakySetupAgent) Setup(context.Context) error {
	a.record("setup")
	if a.setups.Add(1) == 1 {
		return errors.New("connection refused")
	}
	return nil
}

// An agent set up when first dispatched whose Setup fails fails that dispatch, recoverably;
// the retry the error policy then makes sets the agent up again rather than failing at once
// with the first attempt's error, and the agent is torn down once, with the run.
func TestLateSetupFailureIsRetried(t *testing.T) {
	var mu sync.Mutex
	var log []string
	svc := flakySetupAgent{lifecycleAgent{name: "svc", mu: &mu, log: &log}, new(atomic.Int32)}
	p := &troupe.Plan{Stages: []troupe.PlanStage{{Tasks: []troupe.Task{{ID: "t1"}}}}}
	router := troupe.RouterFunc(func(context.Context, troupe.RouteInput, troupe.Context) (troupe.RoutingDecision, error) {
		return troupe.RoutingDecision{Target: "svc", Reason: "routed"}, nil
	})
	eng := newEngine(t, engine.Config{Registry: agents(t, "svc", svc), Planner: staticPlan(p), Router: router,
		Policy: troupe.ErrorPolicy{OnError: troupe.Retry, Retry: troupe.RetryPolicy{MaxAttempts: 2, Initial: time.Millisecond}}})
	evs := run(t, eng, troupe.Request{Query: "q"})
	if out := outcome(t, evs); out.Status != troupe.RunCompleted {
		t.Errorf("outcome %+v, want completed by the retry", out)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"svc setup", "svc setup", "svc run", "svc teardown"}; !cmp.Equal(log, want) {
		t.Errorf("lifecycle %v, want %v", log, want)
	}
}

// When an agent's setup fails, the agents already set up are torn down at once; a teardown
// that fails then is a warning of the run, as on any other terminal path, not lost.
func TestTeardownWarningAfterSetupFailure(t *testing.T) {
	var mu sync.Mutex
	var log []string
	a := lifecycleAgent{name: "a", mu: &mu, log: &log, failTeardown: true}
	b := lifecycleAgent{name: "b", mu: &mu, log: &log, fail: true}
	eng := newEngine(t, engine.Config{Registry: agents(t, "a", a, "b", b), Planner: chain("a", "b")})
	r, err := eng.Start(t.Context(), troupe.Request{Query: "q"})
	if err != nil {
		t.Fatal(err)
	}
	st, err := r.Wait(t.Context())
	if err == nil || st.Status != troupe.RunFailed {
		t.Fatalf("status %s, error %v; want failed on b's setup", st.Status, err)
	}
	if diff := cmp.Diff([]string{"a setup", "b setup", "a teardown"}, log); diff != "" {
		t.Errorf("lifecycle (-want +got):\n%s", diff)
	}
	if !slices.ContainsFunc(st.Warnings, func(w string) bool {
		return strings.Contains(w, "teardown of a") && strings.Contains(w, "connection already closed")
	}) {
		t.Errorf("warnings %q do not say a's teardown failed", st.Warnings)
	}
}

// What a guardrail said of a dispatch before it ran stays on its result when the dispatch
// runs out of time, as it does on a completed or failed one: the timeout result, made when
// the deadline passes, carries the before-dispatch warnings and annotations.
func TestGuardrailNotesSurviveATimeout(t *testing.T) {
	audit := troupe.GuardrailFuncs{ID: "audit", Before: func(context.Context, *troupe.Dispatch) troupe.Verdict {
		return troupe.Verdict{Warnings: []string{"query holds an e-mail address"}, Annotations: map[string]any{"pii": "email"}}
	}}
	release := make(chan struct{})
	defer close(release)
	stuck := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		<-release // ignores its context: the deadline alone ends the dispatch
		return &troupe.Result{AgentResult: map[string]any{"late": true}}, nil
	})
	reg := troupe.NewRegistry()
	if err := reg.Add("stuck", stuck, troupe.WithTimeout(50*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	eng := newEngine(t, engine.Config{Registry: reg, Planner: chain("stuck"), Policy: troupe.ErrorPolicy{OnTimeout: troupe.TimeoutSkip}})
	evs := run(t, eng, troupe.Request{Query: "mail me at a@b.example", Guardrails: []troupe.Guardrail{audit}})
	r := results(evs)["stuck"][0]
	if r.Status != troupe.StatusTimeout {
		t.Fatalf("status %s, want timeout", r.Status)
	}
	if !cmp.Equal(r.Warnings, []string{"query holds an e-mail address"}) || !cmp.Equal(r.Annotations, map[string]any{"audit": map[string]any{"pii": "email"}}) {
		t.Errorf("timeout result: warnings %q, annotations %v; want the guardrail's", r.Warnings, r.Annotations)
	}
}

// A new run given the id of a run its store holds is refused at the start, saying so, and its
// events are not the old run's: Run yields the error alone. So is a run whose generated id an
// engine with the same seed made before against the same store.
func TestStartRefusesARecordedRunID(t *testing.T) {
	reg := agents(t, "a", troupe.AgentFunc(func(_ context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{AgentResult: map[string]any{"query": d.Query}, Confidence: troupe.Ptr(1.0)}, nil
	}))
	st := memory.New()
	eng := newEngine(t, engine.Config{Registry: reg, Planner: chain("a"), Store: st})
	run(t, eng, troupe.Request{Query: "first", RunID: "run_fixed"})
	var evs []troupe.Event
	var gotErr error
	for ev, err := range eng.Run(t.Context(), troupe.Request{Query: "second", RunID: "run_fixed"}) {
		if err != nil {
			gotErr = err
			break
		}
		evs = append(evs, ev)
	}
	var oe *troupe.OrchestrationError
	if len(evs) != 0 || !errors.Is(gotErr, troupe.ErrRunExists) || !errors.As(gotErr, &oe) || oe.Stage != troupe.StageInitialize ||
		!strings.Contains(gotErr.Error(), "run run_fixed is in the store already (7 events, the last run_completed)") {
		t.Errorf("second run with the id: %d events, error %v; want no event and an INITIALIZE error matching ErrRunExists that says what the store holds", len(evs), gotErr)
	}
	if logged, _ := st.Events(t.Context(), "run_fixed", 0); len(logged) != 7 {
		t.Errorf("the store holds %d events of run_fixed, want the first run's 7", len(logged))
	}

	// Two engines of one seed make the same ids: the second's first run is refused, not
	// mixed into the first's log.
	seeded := func() *engine.Engine {
		return newEngine(t, engine.Config{Registry: reg, Planner: chain("a"), Store: st, Seed: 99})
	}
	first := run(t, seeded(), troupe.Request{Query: "q"})
	_, err := seeded().Start(t.Context(), troupe.Request{Query: "q"})
	if !errors.Is(err, troupe.ErrRunExists) || !strings.Contains(err.Error(), first[0].RunID) {
		t.Errorf("a second engine of the same seed: %v; want ErrRunExists naming %s", err, first[0].RunID)
	}
}

// The request's criteria hold whichever planner plans it: the answer is held to its
// confidence threshold (by the default planner, which plans every agent, and by a planner that
// records no criteria in its plan), and the default planner leaves out its excluded agents.
func TestRequestCriteriaHold(t *testing.T) {
	reg := agents(t, "a", troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{AgentResult: map[string]any{"x": 1}, Confidence: troupe.Ptr(0.8)}, nil
	}), "b", troupe.AgentFunc(noop))
	onlyA := troupe.PlannerFunc(func(*troupe.Request, troupe.Catalog) (*troupe.Plan, error) {
		return &troupe.Plan{Stages: []troupe.PlanStage{{Tasks: []troupe.Task{{ID: "a", Agent: "a", Reason: "only a"}}}}}, nil
	})
	crit := &troupe.SelectionCriteria{IntentType: "x", ConfidenceThreshold: troupe.Ptr(0.9), ExcludedAgents: []string{"b"}}
	for name, p := range map[string]troupe.Planner{"default": nil, "no criteria in its plan": onlyA} {
		t.Run(name, func(t *testing.T) {
			evs := run(t, newEngine(t, engine.Config{Registry: reg, Planner: p}), troupe.Request{Query: "q", Criteria: crit})
			if n := len(troupetest.Find(evs, troupe.KindDispatchStarted, "b")); n != 0 {
				t.Errorf("excluded agent b dispatched %d times", n)
			}
			agg := troupetest.Find(evs, troupe.KindRunAggregated, "")[0].Data.(*troupe.Aggregation)
			const want = "overall confidence 0.80 is under the confidence threshold 0.90"
			if !slices.ContainsFunc(agg.Warnings, func(w string) bool { return strings.HasPrefix(w, want) }) {
				t.Errorf("warnings %q, want one beginning %q", agg.Warnings, want)
			}
		})
	}
}

// The aggregation's totals are what the run spent, as its budgets counted it: the attempts a
// retry superseded and a failed primary a fallback replaced count with the final results.
func TestAggregationTotalsCountEveryAttempt(t *testing.T) {
	var n atomic.Int32
	flaky := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		res := &troupe.Result{TokensUsed: troupe.Ptr[int64](10), CostDollars: troupe.Ptr(0.01)}
		if n.Add(1) <= 2 {
			return res, &troupe.AgentError{Code: "UPSTREAM", Message: "try again", Recoverable: true}
		}
		res.AgentResult, res.Confidence = map[string]any{"x": 1}, troupe.Ptr(0.9)
		return res, nil
	})
	broken := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{TokensUsed: troupe.Ptr[int64](7), CostDollars: troupe.Ptr(0.5)}, &troupe.AgentError{Code: "DOWN", Message: "down"}
	})
	stand := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{AgentResult: map[string]any{"y": 1}, TokensUsed: troupe.Ptr[int64](3), CostDollars: troupe.Ptr(0.25)}, nil
	})
	for _, tc := range []struct {
		name   string
		pol    troupe.ErrorPolicy
		plan   troupe.Planner
		tokens int64
		cost   float64
	}{
		{"retried", troupe.ErrorPolicy{OnError: troupe.Retry, Retry: troupe.RetryPolicy{MaxAttempts: 3, Initial: time.Microsecond}}, chain("flaky"), 30, 0.03},
		{"fallen back", troupe.ErrorPolicy{OnError: troupe.Fallback, FallbackAgents: map[string][]string{"broken": {"stand"}}}, chain("broken"), 10, 0.75},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n.Store(0)
			eng := newEngine(t, engine.Config{Registry: agents(t, "flaky", flaky, "broken", broken, "stand", stand), Planner: tc.plan, Policy: tc.pol})
			evs := run(t, eng, troupe.Request{Query: "q"})
			agg := troupetest.Find(evs, troupe.KindRunAggregated, "")[0].Data.(*troupe.Aggregation)
			if agg.TotalTokensUsed == nil || *agg.TotalTokensUsed != tc.tokens || agg.TotalCostDollars == nil || math.Abs(*agg.TotalCostDollars-tc.cost) > 1e-9 {
				t.Errorf("totals %v tokens, $%v; want %d tokens, $%v", ptrText(agg.TotalTokensUsed), ptrText(agg.TotalCostDollars), tc.tokens, tc.cost)
			}
		})
	}
}

func ptrText[T any](p *T) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprint(*p)
}

// Two agents of one stage that write different values to a session state key: the write of
// the one later in the plan stands, whichever finished last (here the earlier one finishes
// last), and the run warns as the stage ends, naming both in plan order with their values.
// Equal writes are no conflict.
func TestSameStageWritesWarn(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    string
		warn string
	}{
		{"different", "B", `a and b, in one stage, wrote different values to session state "k" ("A", "B"): b's, the last in the plan, stands`},
		{"equal", "A", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bDone := make(chan struct{})
			a := troupe.AgentFunc(func(ctx context.Context, _ *troupe.Dispatch) (*troupe.Result, error) {
				<-bDone
				return &troupe.Result{AgentResult: map[string]any{"k": "A"}, Confidence: troupe.Ptr(0.9)}, nil
			})
			b := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
				defer close(bDone)
				return &troupe.Result{AgentResult: map[string]any{"k": tc.b}, Confidence: troupe.Ptr(0.9)}, nil
			})
			reg := agents(t, "a", opt(a, troupe.Writes("k")), "b", opt(b, troupe.Writes("k")))
			r, err := newEngine(t, engine.Config{Registry: reg, Planner: group(0, "a", "b")}).Start(t.Context(), troupe.Request{Query: "q"})
			if err != nil {
				t.Fatal(err)
			}
			st, err := r.Wait(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if got := st.SessionState["k"]; got != tc.b {
				t.Errorf("session state k = %v, want b's %q: b is later in the plan", got, tc.b)
			}
			var warned []string
			for _, w := range st.Aggregation.Warnings {
				if strings.Contains(w, "in one stage") {
					warned = append(warned, w)
				}
			}
			if want := slices.DeleteFunc([]string{tc.warn}, func(s string) bool { return s == "" }); !slices.Equal(warned, want) {
				t.Errorf("warnings %q, want %q", warned, want)
			}
		})
	}
}

// A reader that fails for a state key its declared writer completed without says so: the
// fault is the writer's.
func TestStateMissingNamesSilentWriter(t *testing.T) {
	w := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{AgentResult: map[string]any{"other": 1}}, nil
	})
	reg := agents(t, "w", opt(w, troupe.Writes("k")), "r", opt(troupe.AgentFunc(noop), troupe.Reads("k")))
	evs := run(t, newEngine(t, engine.Config{Registry: reg, Planner: chain("w", "r"), Policy: troupe.ErrorPolicy{OnError: troupe.Continue}}), troupe.Request{Query: "q"})
	rs := results(evs)["r"]
	const want = "session state lacks [k], which r reads (w completed without k, which it declares it writes)"
	if len(rs) != 1 || len(rs[0].Errors) == 0 || rs[0].Errors[0].Code != troupe.CodeStateMissing || rs[0].Errors[0].Message != want {
		t.Fatalf("r's results %+v; want STATE_MISSING %q", rs, want)
	}
}
