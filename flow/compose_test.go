package flow_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/engine"
	"github.com/troupehq/troupe/flow"
	"github.com/troupehq/troupe/troupetest"
)

// composite builds Loop(Sequential(Parallel(p1, p2), judge)): two proposers score the topic,
// the judge keeps the better score, the loop stops once a score reaches 0.9.
func composite(proposer func(name string) troupe.Agent) troupe.Agent {
	judge := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		branches := d.UpstreamResults[len(d.UpstreamResults)-1].Result["branches"].(map[string]any)
		best := 0.0
		for _, b := range branches {
			best = max(best, b.(map[string]any)["score"].(float64))
		}
		return &troupe.Result{AgentResult: map[string]any{"best": best}}, nil
	})
	group := flow.Parallel(flow.ParallelConfig{}, flow.Named("p1", proposer("p1")), flow.Named("p2", proposer("p2")))
	cycle := flow.Sequential(flow.SequentialConfig{}, flow.Named("ideas", group), flow.Named("judge", judge, troupe.Writes("best")))
	return flow.Loop(flow.LoopConfig{MaxIterations: 3, Until: func(it flow.Iteration) bool {
		b, _ := it.State("best")
		return b.(float64) >= 0.9
	}}, flow.Named("cycle", cycle, troupe.Writes("best")))
}

// scorer proposes a score that grows with the loop cycle: p2 reaches 0.9 on cycle 2.
func scorer(name string) troupe.Agent {
	return troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		cycle := d.UserContext["loop_cycle"].(int)
		step := map[string]float64{"p1": 0.2, "p2": 0.45}[name]
		d.Progress("scored", cycle)
		return &troupe.Result{AgentResult: map[string]any{"score": step * float64(cycle), "trace": d.TraceID()}}, nil
	})
}

func newEngine(t *testing.T, name string, a troupe.Agent) *engine.Engine {
	t.Helper()
	reg := troupe.NewRegistry().MustAdd(name, a, troupe.Writes("best", "total_cycles"))
	eng, err := engine.New(engine.Config{Registry: reg, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close(context.Background()) })
	return eng
}

type started struct{ id, parent, agent string }

// depth is how many contexts lie above c.
func depth(c *troupe.Context) int {
	n := 0
	for p := c.Parent(); p != nil; p = p.Parent() {
		n++
	}
	return n
}

func TestCompositionEmitsNestedEvents(t *testing.T) {
	eng := newEngine(t, "mastery", composite(scorer))
	evs, err := troupetest.Collect(eng.Run(t.Context(), troupe.Request{Query: "practise fractions"}))
	if err != nil {
		t.Fatal(err)
	}
	troupetest.CheckFinishedLog(t, evs)
	if k := troupetest.Last(evs).Kind; k != troupe.KindRunCompleted {
		t.Fatalf("run ended %s", k)
	}

	// Every dispatch, planned or nested, with its parent and the depth of its context.
	parentOf := map[string]string{}
	agentOf := map[string]string{}
	var nested []started
	for _, ev := range evs {
		if ev.Context.TraceID() != evs[0].Context.TraceID() {
			t.Errorf("event %d has trace %s", ev.Seq, ev.Context.TraceID())
		}
		if ev.Parent == "" {
			if ev.Kind == troupe.KindDispatchStarted {
				agentOf[ev.DispatchID] = ev.Agent
			}
			continue
		}
		if _, ok := agentOf[ev.Parent]; !ok {
			t.Errorf("event %d (%s of %s) names parent %s, which has not started", ev.Seq, ev.Kind, ev.Agent, ev.Parent)
		}
		if ev.Kind == troupe.KindDispatchStarted {
			parentOf[ev.DispatchID], agentOf[ev.DispatchID] = ev.Parent, ev.Agent
			nested = append(nested, started{ev.DispatchID, ev.Parent, ev.Agent})
			if !troupe.IsDispatchID(ev.DispatchID) {
				t.Errorf("nested dispatch id %q", ev.DispatchID)
			}
		}
		hops := 0
		for id := ev.DispatchID; parentOf[id] != ""; id = parentOf[id] {
			hops++
		}
		if got := depth(ev.Context); got != hops || ev.Stage != troupe.StageExecute {
			t.Errorf("event %d (%s of %s): context depth %d, stage %s; want %d, execute", ev.Seq, ev.Kind, ev.Agent, got, ev.Stage, hops)
		}
	}
	// The path from each nested dispatch up to the planned one, by agent name.
	var paths []string
	for _, s := range nested {
		p := s.agent
		for id := s.parent; id != ""; id = parentOf[id] {
			p = agentOf[id] + "/" + p
		}
		paths = append(paths, p)
	}
	sort.Strings(paths)
	want := []string{
		"mastery/cycle", "mastery/cycle",
		"mastery/cycle/ideas", "mastery/cycle/ideas",
		"mastery/cycle/ideas/p1", "mastery/cycle/ideas/p1",
		"mastery/cycle/ideas/p2", "mastery/cycle/ideas/p2",
		"mastery/cycle/judge", "mastery/cycle/judge",
	}
	if diff := cmp.Diff(want, paths); diff != "" {
		t.Errorf("nested dispatches (-want +got):\n%s", diff)
	}
	for _, ev := range troupetest.Find(evs, troupe.KindDispatchCompleted, "p1") {
		if got := ev.Data.(*troupe.Result).AgentResult["trace"]; got != evs[0].Context.TraceID() {
			t.Errorf("p1 saw trace id %q, want the run's %q", got, evs[0].Context.TraceID())
		}
	}
	if n := len(troupetest.Find(evs, troupe.KindAgentProgress, "p2")); n != 2 {
		t.Errorf("%d progress events of p2, want 2", n)
	}
	// Nested results are not plan results: the run has one, the loop's.
	var planned []*troupe.Result
	for _, ev := range evs {
		if r, ok := ev.Data.(*troupe.Result); ok && ev.Parent == "" {
			planned = append(planned, r)
		}
	}
	if len(planned) != 1 || planned[0].AgentResult["total_cycles"] != 2 || planned[0].AgentResult["escalation_reason"] != flow.ReasonMastered {
		t.Errorf("plan results: %v", planned)
	}

	// Ids derive from the parent's and the position: the same seed gives the same ids.
	again, err := troupetest.Collect(eng.Run(t.Context(), troupe.Request{Query: "practise fractions", Seed: evs[0].Data.(*troupe.RunStart).Seed, RunID: "again"}))
	if err != nil {
		t.Fatal(err)
	}
	ids := func(evs []troupe.Event) []string {
		var out []string
		for _, ev := range evs {
			if ev.Kind == troupe.KindDispatchStarted {
				out = append(out, ev.Parent+">"+ev.DispatchID+":"+ev.Agent)
			}
		}
		slices.Sort(out)
		return out
	}
	if diff := cmp.Diff(ids(evs), ids(again)); diff != "" {
		t.Errorf("replaying the seed gave other ids (-first +again):\n%s", diff)
	}
}

func TestCompositionCancelStopsEveryInnerAgent(t *testing.T) {
	var running, returned atomic.Int32
	in := make(chan struct{}, 8)
	blocker := func(name string) troupe.Agent {
		return troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
			running.Add(1)
			defer returned.Add(1)
			in <- struct{}{}
			<-ctx.Done()
			return nil, ctx.Err()
		})
	}
	eng := newEngine(t, "mastery", composite(blocker))
	r, err := eng.Start(context.Background(), troupe.Request{Query: "practise fractions"})
	if err != nil {
		t.Fatal(err)
	}
	<-in // both branches of the first cycle are blocked inside the loop's sequence's group
	<-in
	r.Cancel()
	<-r.Done()
	if running.Load() != 2 || returned.Load() != 2 {
		t.Errorf("%d agents ran, %d returned; want 2 and 2", running.Load(), returned.Load())
	}
	evs, err := eng.Store().Events(t.Context(), r.ID(), 0)
	if err != nil {
		t.Fatal(err)
	}
	troupetest.CheckFinishedLog(t, evs)
	if k := troupetest.Last(evs).Kind; k != troupe.KindRunCancelled {
		t.Errorf("run ended %s, want cancelled", k)
	}
	var cancelled []string
	for _, ev := range evs {
		if ev.Kind == troupe.KindDispatchFailed && ev.Parent != "" && ev.Status == troupe.StatusCancelled {
			cancelled = append(cancelled, ev.Agent)
		}
	}
	slices.Sort(cancelled)
	// Innermost first: the branches, then the group, the sequence step and the loop cycle.
	if diff := cmp.Diff([]string{"cycle", "ideas", "p1", "p2"}, cancelled); diff != "" {
		t.Errorf("nested dispatches recorded cancelled (-want +got):\n%s", diff)
	}
	if n := len(troupetest.Find(evs, troupe.KindDispatchStarted, "judge")); n != 0 {
		t.Errorf("judge started %d times after the cancel", n)
	}
}

// Agent tools called by an agent the engine runs: the delegated agents' dispatches are nested
// under the caller's, and a cycle fails the caller's dispatch with CIRCULAR_DEPENDENCY.
func TestAgentToolsInARun(t *testing.T) {
	sqlTool, pyTool := flow.AsTool("sql_expert", sqlExpert), flow.AsTool("python_expert", pythonExpert)
	eng := newEngine(t, "coordinator", coordinator(sqlTool, pyTool))
	evs, err := troupetest.Collect(eng.Run(t.Context(), troupe.Request{Query: "Analyze database and plot results"}))
	if err != nil {
		t.Fatal(err)
	}
	troupetest.CheckFinishedLog(t, evs)
	top := troupetest.Find(evs, troupe.KindDispatchStarted, "coordinator")[0].DispatchID
	var got []string
	for _, ev := range troupetest.Find(evs, troupe.KindDispatchCompleted, "") {
		if ev.Parent != "" {
			if ev.Parent != top || depth(ev.Context) != 1 {
				t.Errorf("%s: parent %s, context depth %d; want %s, 1", ev.Agent, ev.Parent, depth(ev.Context), top)
			}
			got = append(got, ev.Agent)
		}
	}
	if diff := cmp.Diff([]string{"sql_expert", "python_expert"}, got); diff != "" {
		t.Errorf("nested completions (-want +got):\n%s", diff)
	}

	var toolA, toolB troupe.Tool
	toolA = flow.AsTool("A", delegator("A", &toolB))
	toolB = flow.AsTool("B", delegator("B", &toolA))
	reg := troupe.NewRegistry().MustAdd("A", delegator("A", &toolB))
	cyc, err := engine.New(engine.Config{Registry: reg, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer cyc.Close(context.Background())
	evs, err = troupetest.Collect(cyc.Run(t.Context(), troupe.Request{Query: "q"}))
	if err != nil {
		t.Fatal(err)
	}
	var failed *troupe.Result
	for _, ev := range troupetest.Find(evs, troupe.KindDispatchFailed, "A") {
		if ev.Parent == "" {
			failed = ev.Data.(*troupe.Result)
		}
	}
	if failed == nil || failed.Errors[0].Code != troupe.CodeCircularDependency || failed.Errors[0].Recoverable {
		t.Fatalf("A's dispatch: %+v", failed)
	}
	if !strings.Contains(failed.Errors[0].Message, "A → B → A") {
		t.Errorf("message %q does not name the cycle", failed.Errors[0].Message)
	}
}

// The typed errors of agent tools reach the calling agent inside an engine run as they do in a
// direct call — errors.As finds them through every level of nesting — and the caller's
// dispatch records their seed 003 codes.
func TestTypedToolErrorsInARun(t *testing.T) {
	// probe is a planned agent that calls tool and keeps the error it gets back.
	probe := func(tool *troupe.Tool, got *error) troupe.Agent {
		return troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
			_, err := (*tool).Call(ctx, d, json.RawMessage(`{"task": "go"}`))
			*got = err
			return nil, err
		})
	}
	runProbe := func(t *testing.T, name string, a troupe.Agent) *troupe.Result {
		t.Helper()
		eng, err := engine.New(engine.Config{Registry: troupe.NewRegistry().MustAdd(name, a), Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		defer eng.Close(context.Background())
		evs, err := troupetest.Collect(eng.Run(t.Context(), troupe.Request{Query: "q"}))
		if err != nil {
			t.Fatal(err)
		}
		troupetest.CheckFinishedLog(t, evs)
		for _, ev := range troupetest.Find(evs, troupe.KindDispatchFailed, name) {
			if ev.Parent == "" {
				return ev.Data.(*troupe.Result)
			}
		}
		t.Fatalf("%s's planned dispatch did not fail", name)
		return nil
	}

	t.Run("cycle", func(t *testing.T) {
		var toolA, toolB troupe.Tool
		toolA = flow.AsTool("A", delegator("A", &toolB))
		toolB = flow.AsTool("B", delegator("B", &toolA))
		var got error
		res := runProbe(t, "A", probe(&toolB, &got))
		var cycle *troupe.CircularDependencyError
		if !errors.As(got, &cycle) || strings.Join(cycle.Cycle, " ") != "A B A" {
			t.Fatalf("A got %v, want a CircularDependencyError A → B → A", got)
		}
		if res.Errors[0].Code != troupe.CodeCircularDependency {
			t.Errorf("A's dispatch recorded %+v", res.Errors[0])
		}
	})
	t.Run("depth", func(t *testing.T) {
		tool := chain([]string{"B", "C", "D", "E", "F"}) // A, the planned agent, is the first of six
		var got error
		res := runProbe(t, "A", probe(&tool, &got))
		var deep *troupe.MaxDepthExceededError
		if !errors.As(got, &deep) || strings.Join(deep.Stack, "") != "ABCDEF" || deep.MaxDepth != troupe.DefaultMaxDepth {
			t.Fatalf("A got %v, want a MaxDepthExceededError A → … → F", got)
		}
		if res.Errors[0].Code != troupe.CodeMaxDepthExceeded {
			t.Errorf("A's dispatch recorded %+v", res.Errors[0])
		}
	})
}

// A nested dispatch's result carries its run's trace id, as a planned dispatch's does (seed
// 001), so a reader of any result in the log can correlate it with its run.
func TestNestedResultsCarryTheTraceID(t *testing.T) {
	eng := newEngine(t, "mastery", composite(scorer))
	evs, err := troupetest.Collect(eng.Run(t.Context(), troupe.Request{Query: "practise fractions"}))
	if err != nil {
		t.Fatal(err)
	}
	trace := evs[0].Context.TraceID()
	n := 0
	for _, ev := range troupetest.Find(evs, troupe.KindDispatchCompleted, "") {
		res := ev.Data.(*troupe.Result)
		if res.TraceID == nil || *res.TraceID != trace {
			t.Errorf("%s (parent %q): trace id %v, want %s", ev.Agent, ev.Parent, res.TraceID, trace)
		}
		n++
	}
	if n < 2 {
		t.Fatalf("%d completed dispatches", n)
	}
}

// A composite the engine runs counts in the run's overall_confidence by seed 000's
// conservative rule: a sequence whose draft is unsure makes the run unsure however sure its
// last step is, and a collect_all group counts, at its least sure branch, rather than being
// left out as an agent that reported none.
func TestCompositeConfidenceInARun(t *testing.T) {
	tests := []struct {
		name  string
		agent troupe.Agent
		want  float64
	}{
		{"sequence", flow.Sequential(flow.SequentialConfig{}, sure("draft", troupe.Ptr(0.2), "", false), sure("polish", troupe.Ptr(0.95), "", false)), 0.2},
		{"collect all", flow.Parallel(flow.ParallelConfig{}, sure("a", troupe.Ptr(0.9), "", false), sure("b", troupe.Ptr(0.4), "", false)), 0.4},
		{"majority vote", flow.Parallel(flow.ParallelConfig{Strategy: flow.MajorityVote, Answer: output},
			sure("x", troupe.Ptr(0.9), "A", false), sure("y", troupe.Ptr(0.6), "A", false), sure("z", troupe.Ptr(0.1), "B", false)), 0.6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eng := newEngine(t, "team", tt.agent)
			evs, err := troupetest.Collect(eng.Run(t.Context(), troupe.Request{Query: "q"}))
			if err != nil {
				t.Fatal(err)
			}
			aggs := troupetest.Find(evs, troupe.KindRunAggregated, "")
			if len(aggs) != 1 {
				t.Fatalf("%d aggregations, want 1", len(aggs))
			}
			agg := aggs[0].Data.(*troupe.Aggregation)
			if agg.OverallConfidence != tt.want {
				t.Errorf("overall_confidence %v, want %v", agg.OverallConfidence, tt.want)
			}
			// Under the default threshold (0.7) the run now says so, and it leaves no one out.
			var under bool
			for _, w := range agg.Warnings {
				under = under || strings.Contains(w, "under the confidence threshold")
				if strings.Contains(w, "no confidence") {
					t.Errorf("warning %q: the composite's confidence is left out", w)
				}
			}
			if !under {
				t.Errorf("warnings %q do not say the run is under its confidence threshold", agg.Warnings)
			}
		})
	}
}
