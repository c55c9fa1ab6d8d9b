package flow_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/troupehq/troupe"
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
