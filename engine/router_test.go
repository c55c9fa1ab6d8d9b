package engine_test

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/engine"
	"github.com/troupehq/troupe/examples/tutor"
	"github.com/troupehq/troupe/route"
	"github.com/troupehq/troupe/troupetest"
)

// Seed 003's coordinator runs in the engine: the plan has one task with no agent, and the router
// picks the specialist at ROUTE time from the message and the session state.
func TestCoordinatorRoutesAtRouteTime(t *testing.T) {
	cases := []struct {
		message string
		state   map[string]any
		want    string
	}{
		{"I want to learn fractions", nil, "diagnostic"},
		{"quiz me on fractions", nil, "quiz"},
		{"resume", map[string]any{"quiz_paused": true}, "quiz"},
		{"resume", map[string]any{"quiz_paused": false}, "tutor"},
		{"what's next for me?", nil, "pathplanner"},
		{"hmm", nil, "tutor"},
	}
	for _, tc := range cases {
		t.Run(tc.message, func(t *testing.T) {
			var pairs []any
			scripts := map[string]*troupetest.Script{}
			for _, n := range tutor.Agents() {
				scripts[n] = troupetest.NewScript()
				pairs = append(pairs, n, scripts[n])
			}
			coord := tutor.Coordinator()
			eng := newEngine(t, engine.Config{Registry: agents(t, pairs...), Planner: route.Planner(coord), Router: coord})
			evs := run(t, eng, troupe.Request{Query: tc.message, State: tc.state})
			routes := troupetest.Find(evs, troupe.KindRouteDecided, "")
			if len(routes) != 1 || routes[0].Agent != tc.want {
				t.Fatalf("routed to %v, want %s", routes, tc.want)
			}
			if d := routes[0].Data.(*troupe.RoutingDecision); strings.TrimSpace(d.Reason) == "" {
				t.Errorf("decision without a reason: %+v", d)
			}
			for n, s := range scripts {
				if want := map[bool]int{true: 1, false: 0}[n == tc.want]; s.Calls() != want {
					t.Errorf("%s ran %d times", n, s.Calls())
				}
			}
		})
	}
}

// A router that asks a model reports what deciding cost; the engine counts it toward the
// run's token budget and its totals, beside the results' own.
func TestRoutingUsageCounts(t *testing.T) {
	charging := troupe.RouterFunc(func(_ context.Context, in troupe.RouteInput, _ troupe.Context) (troupe.RoutingDecision, error) {
		return troupe.RoutingDecision{Target: in.Task.Agent, Reason: "asked a model", TokensUsed: troupe.Ptr[int64](40), CostDollars: troupe.Ptr(0.002)}, nil
	})
	worker := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{AgentResult: map[string]any{"ok": true}, Confidence: troupe.Ptr(1.0), TokensUsed: troupe.Ptr[int64](10)}, nil
	})
	t.Run("totals", func(t *testing.T) {
		eng := newEngine(t, engine.Config{Registry: agents(t, "a", worker, "b", worker), Planner: chain("a", "b"), Router: charging})
		evs := run(t, eng, troupe.Request{Query: "q"})
		agg := troupetest.Find(evs, troupe.KindRunAggregated, "")[0].Data.(*troupe.Aggregation)
		if agg.TotalTokensUsed == nil || *agg.TotalTokensUsed != 2*40+2*10 {
			t.Errorf("total tokens %v, want 100 (two decisions of 40, two results of 10)", agg.TotalTokensUsed)
		}
		if agg.TotalCostDollars == nil || math.Abs(*agg.TotalCostDollars-0.004) > 1e-12 {
			t.Errorf("total cost %v, want 0.004", agg.TotalCostDollars)
		}
	})
	t.Run("budget", func(t *testing.T) {
		// 40 for a's decision and 10 for its result leave b's decision (40 more) over 60.
		eng := newEngine(t, engine.Config{Registry: agents(t, "a", worker, "b", worker), Planner: chain("a", "b"), Router: charging})
		evs := run(t, eng, troupe.Request{Query: "q", Budget: troupe.Budget{MaxTokens: 60}})
		if got := troupetest.Find(evs, troupe.KindBudgetExhausted, ""); len(got) != 1 {
			t.Fatalf("%d budget events, want 1", len(got))
		}
		if o := outcome(t, evs); !slices.Equal(o.Skipped, []string{"b"}) {
			t.Errorf("skipped %v, want [b]: the routing's tokens count toward the budget", o.Skipped)
		}
	})
}

// Cancelling a run while its router waits on a model stops the routing, and the run ends
// cancelled, not failed for a routing error.
func TestCancelDuringRouting(t *testing.T) {
	entered := make(chan struct{})
	slow := troupe.RouterFunc(func(ctx context.Context, in troupe.RouteInput, _ troupe.Context) (troupe.RoutingDecision, error) {
		close(entered)
		<-ctx.Done() // a model call that honours its context
		return troupe.RoutingDecision{}, context.Cause(ctx)
	})
	a := troupetest.NewScript()
	eng := newEngine(t, engine.Config{Registry: agents(t, "a", a), Planner: chain("a"), Router: slow})
	ctx, cancel := context.WithCancelCause(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() {
		<-entered
		cancel(errors.New("user pressed Ctrl-C"))
	})
	r, err := eng.Start(ctx, troupe.Request{Query: "q"}) // the first stage is routed inside Start
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	st, err := r.Wait(context.Background())
	if st.Status != troupe.RunCancelled || !errors.Is(err, troupe.ErrCancelled) {
		t.Errorf("run ended %s (%v), want cancelled", st.Status, err)
	}
	if a.Calls() != 0 {
		t.Errorf("agent ran %d times after its routing was cancelled", a.Calls())
	}
}

// Once the budget is spent no task is routed any more: a router that asks a model is not paid
// for decisions no dispatch follows. The run that the budget made fail says so: code BUDGET,
// which budget, the agents it kept from running, and Wait's error matches ErrBudgetExhausted.
func TestBudgetStopsRouting(t *testing.T) {
	var asked atomic.Int32
	paid := troupe.RouterFunc(func(_ context.Context, in troupe.RouteInput, _ troupe.Context) (troupe.RoutingDecision, error) {
		asked.Add(1)
		return troupe.RoutingDecision{Target: in.Task.Agent, Reason: "asked a model", CostDollars: troupe.Ptr(0.1)}, nil
	})
	spend := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{AgentResult: map[string]any{"ok": true}, CostDollars: troupe.Ptr(1.0)}, nil
	})
	eng := newEngine(t, engine.Config{Registry: agents(t, "a", spend, "b", spend, "c", spend), Planner: chain("a", "b", "c"), Router: paid})
	r, err := eng.Start(t.Context(), troupe.Request{Query: "q", Budget: troupe.Budget{MaxCostDollars: 1}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Wait(t.Context())
	if asked.Load() != 1 {
		t.Errorf("router asked %d times, want once: a's result spent the budget", asked.Load())
	}
	if !errors.Is(err, troupe.ErrBudgetExhausted) {
		t.Errorf("Wait: %v, want it to match ErrBudgetExhausted", err)
	}
	evs, _ := eng.Store().Events(t.Context(), r.ID(), 0)
	out := outcome(t, evs)
	if out.Status != troupe.RunFailed || out.Error.Code != troupe.CodeBudget || !strings.Contains(out.Error.Message, "cost budget of $1.0000 spent") ||
		!strings.Contains(out.Error.Message, "b, c never ran") || !slices.Equal(out.Skipped, []string{"b", "c"}) || !strings.HasPrefix(out.Budget, "cost budget") {
		t.Errorf("outcome %+v (error %+v), want failed for the budget, saying which and what it skipped", out, out.Error)
	}
	if n := len(troupetest.Find(evs, troupe.KindRouteDecided, "")); n != 1 {
		t.Errorf("%d routing decisions recorded, want 1", n)
	}
}
