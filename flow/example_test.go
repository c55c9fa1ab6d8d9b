package flow_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/engine"
	"github.com/troupehq/troupe/flow"
)

func ExampleSequential() {
	analyzer := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{AgentResult: map[string]any{"pages": strings.Fields(d.Query)[2:]}}, nil
	})
	generator := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		// The query starts with the analyzer's handoff.
		fmt.Println(strings.Split(d.Query, "\n")[3])
		return &troupe.Result{AgentResult: map[string]any{"files": len(d.UpstreamResults[0].Result["pages"].([]string))}}, nil
	})
	seq := flow.Sequential(flow.SequentialConfig{}, flow.Named("analyzer", analyzer), flow.Named("generator", generator))
	d := troupe.NewDispatch()
	d.Query = "Build a login page"
	res, err := seq.Run(context.Background(), d)
	fmt.Println(res.AgentResult["files"], err)
	// Output:
	// - pages: ["login","page"]
	// 2 <nil>
}

func ExampleParallel() {
	coder := func(answer string) troupe.Agent {
		return troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
			return &troupe.Result{AgentResult: map[string]any{"output": answer}}, nil
		})
	}
	vote := flow.Parallel(flow.ParallelConfig{Strategy: flow.MajorityVote, Answer: func(r *troupe.Result) string { return r.AgentResult["output"].(string) }},
		flow.Named("python", coder("1 2 Fizz")), flow.Named("haskell", coder("1 2 Buzz")), flow.Named("rust", coder("1 2 Fizz")))
	out, err := vote.Execute(context.Background(), troupe.NewDispatch())
	fmt.Println(out.Vote.Answer, out.Vote.Voters[out.Vote.Answer], err)
	// Output: 1 2 Fizz [python rust] <nil>
}

func ExampleLoop() {
	practice := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		cycle := d.UserContext["loop_cycle"].(int)
		return &troupe.Result{AgentResult: map[string]any{"mastery_score": 0.3 * float64(cycle)}}, nil
	})
	loop := flow.Loop(flow.LoopConfig{MaxIterations: 5, Until: func(it flow.Iteration) bool {
		return it.Result.AgentResult["mastery_score"].(float64) >= 0.85
	}}, flow.Named("learning_cycle", practice))
	out, err := loop.Execute(context.Background(), troupe.NewDispatch())
	fmt.Println(out.Cycles, out.Reason, err)
	// Output: 3 mastered <nil>
}

func ExampleAsTool() {
	sql := flow.AsTool("sql_expert", troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{AgentResult: map[string]any{"sql": "SELECT * FROM " + d.ParsedQuery["table"].(string)}}, nil
	}), troupe.Describe("Writes SQL for a table"))
	coordinator := troupe.NewDispatch()
	coordinator.TargetAgent = "coordinator"
	out, err := sql.Call(context.Background(), coordinator, json.RawMessage(`{"task": "list sales", "table": "sales"}`))
	fmt.Println(sql.Info().Name, string(out), err)

	// An agent that calls itself through its own tool is a cycle.
	var self troupe.Tool
	self = flow.AsTool("coordinator", troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		_, err := self.Call(ctx, d, json.RawMessage(`{"task": "again"}`))
		return nil, err
	}))
	_, err = self.Call(context.Background(), coordinator, json.RawMessage(`{"task": "start"}`))
	var cycle *troupe.CircularDependencyError
	fmt.Println(errors.As(err, &cycle), strings.Join(cycle.Cycle, " → "))
	// Output:
	// delegate_to_sql_expert {"sql":"SELECT * FROM sales"} <nil>
	// true coordinator → coordinator
}

// Composites nest: a loop of a sequence whose first step is a parallel group. Registered with
// an engine, the loop is one planned agent; every member it runs appears in the run's log as a
// nested dispatch under its parent.
func Example() {
	// Two proposers score the topic; their scores grow with the loop's cycle.
	proposer := func(step float64) troupe.Agent {
		return troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
			cycle := d.UserContext["loop_cycle"].(int)
			return &troupe.Result{AgentResult: map[string]any{"score": step * float64(cycle)}}, nil
		})
	}
	// The judge keeps the best score of the group that ran before it.
	judge := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		best := 0.0
		for _, b := range d.UpstreamResults[len(d.UpstreamResults)-1].Result["branches"].(map[string]any) {
			best = max(best, b.(map[string]any)["score"].(float64))
		}
		return &troupe.Result{AgentResult: map[string]any{"best": best}}, nil
	})
	ideas := flow.Parallel(flow.ParallelConfig{}, flow.Named("cautious", proposer(0.2)), flow.Named("bold", proposer(0.45)))
	cycle := flow.Sequential(flow.SequentialConfig{}, flow.Named("ideas", ideas), flow.Named("judge", judge, troupe.Writes("best")))
	mastery := flow.Loop(flow.LoopConfig{MaxIterations: 5, Until: func(it flow.Iteration) bool {
		best, _ := it.State("best")
		return best.(float64) >= 0.9
	}}, flow.Named("cycle", cycle, troupe.Writes("best")))

	eng, err := engine.New(engine.Config{Registry: troupe.NewRegistry().MustAdd("mastery", mastery, troupe.Writes("best"))})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer eng.Close(context.Background())
	nested := map[string]int{}
	for ev, err := range eng.Run(context.Background(), troupe.Request{Query: "practise fractions"}) {
		if err != nil {
			fmt.Println(err)
			return
		}
		switch {
		case ev.Kind == troupe.KindDispatchStarted && ev.Parent != "":
			nested[ev.Agent]++
		case ev.Kind == troupe.KindDispatchCompleted && ev.Parent == "":
			r := ev.Data.(*troupe.Result).AgentResult
			fmt.Println(r["escalation_reason"], "after", r["total_cycles"], "cycles, best", r["best"])
		case ev.Kind == troupe.KindRunCompleted:
			fmt.Println("nested dispatches:", nested)
		}
	}
	// Output:
	// mastered after 2 cycles, best 0.9
	// nested dispatches: map[bold:2 cautious:2 cycle:2 ideas:2 judge:2]
}

func ExampleHandoff_Prompt() {
	h := flow.Handoff{
		TaskSummary: "Login page needs: email field, password field",
		KeyOutputs:  []string{"requirements.md written", "2 components identified"},
		SourceAgent: "analyzer",
		Timestamp:   time.Date(2025, 12, 3, 13, 30, 0, 0, time.UTC),
		Status:      troupe.StatusCompleted,
	}
	fmt.Println(h.Prompt())
	// Output:
	// === Context from Previous Agent ===
	// Task: Login page needs: email field, password field
	// Key Outputs:
	// - requirements.md written
	// - 2 components identified
	// Metadata: Agent analyzer completed at 2025-12-03T13:30:00Z with status completed
	// ===================================
}

func ExampleParallel_firstSuccess() {
	mirror := func(name string, up bool) *troupe.AgentSpec {
		return flow.Named(name, troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
			if !up {
				<-ctx.Done() // a mirror that never answers: cancelled once another succeeds
				return nil, ctx.Err()
			}
			return &troupe.Result{AgentResult: map[string]any{"from": name}}, nil
		}))
	}
	fetch := flow.Parallel(flow.ParallelConfig{Strategy: flow.FirstSuccess}, mirror("eu", false), mirror("us", true), mirror("asia", false))
	res, err := fetch.Run(context.Background(), troupe.NewDispatch())
	fmt.Println(res.AgentResult["from"], err)
	// Output: us <nil>
}
