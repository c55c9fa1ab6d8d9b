package flow_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/flow"
)

// sqlExpert writes a query for the table named in its task.
var sqlExpert = troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
	table := d.ParsedQuery["table"].(string)
	return &troupe.Result{AgentResult: map[string]any{"sql": fmt.Sprintf("SELECT month, SUM(amount) FROM %s GROUP BY month", table), "rows": []any{3.0, 5.0, 8.0}}}, nil
})

// pythonExpert plots the rows it is given.
var pythonExpert = troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
	rows := d.ParsedQuery["rows"].([]any)
	var bars []string
	for _, r := range rows {
		bars = append(bars, strings.Repeat("#", int(r.(float64))))
	}
	return &troupe.Result{AgentResult: map[string]any{"plot": strings.Join(bars, "\n")}}, nil
})

// coordinator delegates: data questions to the SQL expert, plots of its rows to the Python
// expert, choosing by the words of its query.
func coordinator(tools ...troupe.Tool) troupe.Agent {
	byName := map[string]troupe.Tool{}
	for _, t := range tools {
		byName[t.Info().Name] = t
	}
	return troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		out := map[string]any{"delegated": []any{}}
		var rows []any
		if strings.Contains(d.Query, "database") {
			raw, err := byName["delegate_to_sql_expert"].Call(ctx, d, json.RawMessage(`{"task": "monthly sales", "table": "sales"}`))
			if err != nil {
				return nil, err
			}
			var r map[string]any
			if err := json.Unmarshal(raw, &r); err != nil {
				return nil, err
			}
			out["sql"], rows = r["sql"], r["rows"].([]any)
			out["delegated"] = append(out["delegated"].([]any), "sql_expert")
		}
		if strings.Contains(d.Query, "plot") {
			args, _ := json.Marshal(map[string]any{"task": "bar chart", "rows": rows})
			raw, err := byName["delegate_to_python_expert"].Call(ctx, d, args)
			if err != nil {
				return nil, err
			}
			var r map[string]any
			json.Unmarshal(raw, &r)
			out["plot"] = r["plot"]
			out["delegated"] = append(out["delegated"].([]any), "python_expert")
		}
		return &troupe.Result{AgentResult: out}, nil
	})
}

// 002's example: a coordinator delegating to SQL and Python experts as tools.
func TestCoordinatorDelegatesToExperts(t *testing.T) {
	sqlTool := flow.AsTool("sql_expert", sqlExpert, troupe.Describe("Writes and runs SQL"))
	pyTool := flow.AsTool("python_expert", pythonExpert)
	if got := sqlTool.Info(); got.Name != "delegate_to_sql_expert" || got.Description != "Writes and runs SQL" || len(got.InputSchema) == 0 {
		t.Errorf("info = %+v", got)
	}
	d := troupe.NewDispatch()
	d.TargetAgent, d.Query = "coordinator", "Analyze database and plot results"
	res, err := coordinator(sqlTool, pyTool).Run(t.Context(), d)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"delegated": []any{"sql_expert", "python_expert"},
		"sql": "SELECT month, SUM(amount) FROM sales GROUP BY month", "plot": "###\n#####\n########"}
	if diff := cmp.Diff(want, res.AgentResult); diff != "" {
		t.Errorf("coordinator result (-want +got):\n%s", diff)
	}
}

// delegator calls each of its tools in turn and returns what they returned.
func delegator(name string, tools ...*troupe.Tool) troupe.Agent {
	return troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		out := map[string]any{"agent": name, "stack": strings.Join(flow.CallStack(ctx), ">")}
		for _, t := range tools {
			raw, err := (*t).Call(ctx, d, json.RawMessage(`{"task": "help `+name+`"}`))
			if err != nil {
				return nil, err
			}
			out[(*t).Info().Name] = json.RawMessage(raw)
		}
		return &troupe.Result{AgentResult: out}, nil
	})
}

// 002: A has B as a tool, B has A; A calls B calls A.
func TestCircularDependency(t *testing.T) {
	var toolA, toolB troupe.Tool
	toolA = flow.AsTool("A", delegator("A", &toolB))
	toolB = flow.AsTool("B", delegator("B", &toolA))
	_, err := toolA.Call(t.Context(), nil, json.RawMessage(`{"task": "start"}`))
	var cycle *troupe.CircularDependencyError
	if !errors.As(err, &cycle) {
		t.Fatalf("err = %v, want a CircularDependencyError", err)
	}
	if diff := cmp.Diff([]string{"A", "B", "A"}, cycle.Cycle); diff != "" {
		t.Errorf("cycle (-want +got):\n%s", diff)
	}
	if !strings.Contains(err.Error(), "A → B → A") {
		t.Errorf("error %q does not name the cycle", err)
	}
	if info := troupe.ErrorInfoOf(err); info.Code != troupe.CodeCircularDependency || info.Recoverable {
		t.Errorf("ErrorInfoOf = %+v, want CIRCULAR_DEPENDENCY, not recoverable", info)
	}

	// A tool wrapping a sequence whose second member calls the tool again: the member that
	// made the call is on the stack, so the cycle names it.
	var review troupe.Tool
	review = flow.AsTool("review", flow.Sequential(flow.SequentialConfig{},
		flow.Named("lint", delegator("lint")), flow.Named("second_opinion", delegator("second_opinion", &review))))
	_, err = review.Call(t.Context(), nil, json.RawMessage(`{"task": "start"}`))
	if !errors.As(err, &cycle) || strings.Join(cycle.Cycle, " ") != "review second_opinion review" {
		t.Errorf("through a composite: err = %v, want the cycle review → second_opinion → review", err)
	}

	// Called from a dispatch of A, the caller is the bottom of the stack.
	d := troupe.NewDispatch()
	d.TargetAgent = "A"
	_, err = toolB.Call(t.Context(), d, json.RawMessage(`{"task": "start"}`))
	if !errors.As(err, &cycle) || strings.Join(cycle.Cycle, " ") != "A B A" {
		t.Errorf("from A's dispatch: err = %v", err)
	}
}

// chain builds A → B → … → the last, each calling the next as a tool.
func chain(names []string, opts ...troupe.Option) troupe.Tool {
	var next *troupe.Tool
	var first troupe.Tool
	for i := len(names) - 1; i >= 0; i-- {
		var tools []*troupe.Tool
		if next != nil {
			tools = append(tools, next)
		}
		tool := flow.AsTool(names[i], delegator(names[i], tools...), opts...)
		next, first = &tool, tool
	}
	return first
}

func TestMaxDepth(t *testing.T) {
	six := []string{"A", "B", "C", "D", "E", "F"}
	t.Run("6 deep fails at the default 5", func(t *testing.T) {
		_, err := chain(six).Call(t.Context(), nil, json.RawMessage(`{"task": "go"}`))
		var deep *troupe.MaxDepthExceededError
		if !errors.As(err, &deep) {
			t.Fatalf("err = %v, want MaxDepthExceededError", err)
		}
		if deep.MaxDepth != 5 || strings.Join(deep.Stack, "") != "ABCDEF" {
			t.Errorf("error = %+v", deep)
		}
		if info := troupe.ErrorInfoOf(err); info.Code != troupe.CodeMaxDepthExceeded {
			t.Errorf("ErrorInfoOf = %+v, want MAX_DEPTH_EXCEEDED", info)
		}
	})
	t.Run("5 deep is allowed", func(t *testing.T) {
		if _, err := chain(six[:5]).Call(t.Context(), nil, json.RawMessage(`{"task": "go"}`)); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("a negative depth is a configuration error", func(t *testing.T) {
		_, err := chain(six[:1], troupe.MaxDepth(-1)).Call(t.Context(), nil, json.RawMessage(`{"task": "go"}`))
		if err == nil || !strings.HasPrefix(err.Error(), "flow: delegate_to_A: ") || !strings.Contains(err.Error(), "negative max depth -1") {
			t.Errorf("err = %v, want the bad configuration named", err)
		}
	})
	// MaxNesting bounds every nesting, so a MaxDepth above it could never be honoured: it is
	// refused, not silently capped.
	t.Run("a depth above MaxNesting is a configuration error", func(t *testing.T) {
		_, err := chain(six[:1], troupe.MaxDepth(flow.MaxNesting+1)).Call(t.Context(), nil, json.RawMessage(`{"task": "go"}`))
		if err == nil || !strings.HasPrefix(err.Error(), "flow: delegate_to_A: ") || !strings.Contains(err.Error(), "max depth 65 is above flow.MaxNesting (64)") {
			t.Errorf("err = %v, want the bad configuration named", err)
		}
	})
	t.Run("depth MaxNesting is honoured to the last level", func(t *testing.T) {
		names := make([]string, flow.MaxNesting)
		for i := range names {
			names[i] = fmt.Sprintf("n%d", i)
		}
		if _, err := chain(names, troupe.MaxDepth(flow.MaxNesting)).Call(t.Context(), nil, json.RawMessage(`{"task": "go"}`)); err != nil {
			t.Fatalf("%d deep: %v", flow.MaxNesting, err)
		}
		deeper := append(names, "last")
		_, err := chain(deeper, troupe.MaxDepth(flow.MaxNesting)).Call(t.Context(), nil, json.RawMessage(`{"task": "go"}`))
		var deep *troupe.MaxDepthExceededError
		if !errors.As(err, &deep) || deep.MaxDepth != flow.MaxNesting || len(deep.Stack) != flow.MaxNesting+1 {
			t.Errorf("err = %v, want MaxDepthExceededError at %d", err, flow.MaxNesting)
		}
	})
	t.Run("depth 10 allows 6", func(t *testing.T) {
		raw, err := chain(six, troupe.MaxDepth(10)).Call(t.Context(), nil, json.RawMessage(`{"task": "go"}`))
		if err != nil {
			t.Fatal(err)
		}
		// Follow the nesting down to F, which saw the whole stack.
		var r map[string]any
		json.Unmarshal(raw, &r)
		for _, n := range six[1:] {
			r = r["delegate_to_"+n].(map[string]any)
		}
		if r["agent"] != "F" || r["stack"] != "A>B>C>D>E>F" {
			t.Errorf("innermost = %v", r)
		}
	})
}

func TestAgentToolErrors(t *testing.T) {
	failing := flow.AsTool("rag", troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		return nil, &troupe.AgentError{Code: troupe.CodeRAGEmpty, Message: "no content", FallbackAction: "suggest related topics"}
	}))
	_, err := failing.Call(t.Context(), nil, json.RawMessage(`{"task": "x"}`))
	var ae *troupe.AgentError
	if !errors.As(err, &ae) || ae.Code != troupe.CodeRAGEmpty || ae.FallbackAction != "suggest related topics" {
		t.Errorf("err = %v, want the agent's contract", err)
	}
	for _, args := range []string{`[1]`, `null`, `{`} {
		_, err := failing.Call(t.Context(), nil, json.RawMessage(args))
		if !errors.As(err, &ae) || ae.Code != troupe.CodeInvalidInput || !strings.Contains(err.Error(), "arguments must be a JSON object") {
			t.Errorf("args %s: err = %v", args, err)
		}
	}
	typed := flow.AsTool("typed", sqlExpert, troupe.InputSchema(json.RawMessage(`{"type":"object","required":["table"],"properties":{"table":{"type":"string"}}}`)))
	if string(typed.Info().InputSchema) == "" {
		t.Error("no schema in info")
	}
	_, err = typed.Call(t.Context(), nil, json.RawMessage(`{"task": "x", "table": 7}`))
	if !errors.As(err, &ae) || ae.Code != troupe.CodeInvalidInput || !strings.Contains(err.Error(), "/table: got number, want string") {
		t.Errorf("schema violation: err = %v", err)
	}
}

// spender is an agent that spends tokens and cost of its own and calls each of its tools. With
// own it opens a flow.Usage for the calls and adds it to its result, as an LLM agent does;
// without, its tools add to its caller's.
func spender(tokens int64, cost float64, own bool, tools ...troupe.Tool) troupe.Agent {
	return troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		var u *flow.Usage
		if own {
			ctx, u = flow.WithUsage(ctx)
		}
		out := map[string]any{"spent": tokens}
		for _, t := range tools {
			raw, err := t.Call(ctx, d, json.RawMessage(`{"task": "spend"}`))
			if err != nil {
				return nil, err
			}
			out[t.Info().Name] = json.RawMessage(raw)
		}
		res := &troupe.Result{AgentResult: out, TokensUsed: troupe.Ptr(tokens), CostDollars: troupe.Ptr(cost)}
		u.AddTo(res)
		return res, nil
	})
}

// What an agent called through AsTool spends reaches the Usage of the caller's context exactly
// once, however the tools nest and whoever opens a Usage on the way, and also when it fails;
// the tool's answer is the agent's agent_result alone.
func TestAgentToolUsage(t *testing.T) {
	leaf := func() troupe.Tool { return flow.AsTool("leaf", spender(100, 0.25, false)) }
	failing := flow.AsTool("failing", troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{TokensUsed: troupe.Ptr[int64](40), CostDollars: troupe.Ptr(0.125)},
			&troupe.AgentError{Code: troupe.CodeAgentError, Message: "gave up after spending"}
	}))
	silent := flow.AsTool("silent", troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{AgentResult: map[string]any{"free": true}}, nil
	}))
	tests := []struct {
		name    string
		tool    troupe.Tool
		tokens  int64
		cost    float64
		wantErr bool
		answer  string
	}{
		{name: "one agent", tool: leaf(), tokens: 100, cost: 0.25, answer: `{"spent":100}`},
		{name: "a failed agent's spending counts", tool: failing, tokens: 40, cost: 0.125, wantErr: true},
		{name: "an agent reporting nothing adds nothing", tool: silent, answer: `{"free":true}`},
		{name: "nested, the middle agent opens no usage", tool: flow.AsTool("mid", spender(10, 0.5, false, leaf())),
			tokens: 110, cost: 0.75, answer: `{"delegate_to_leaf":{"spent":100},"spent":10}`},
		{name: "nested, the middle agent opens its own usage", tool: flow.AsTool("mid", spender(10, 0.5, true, leaf())),
			tokens: 110, cost: 0.75, answer: `{"delegate_to_leaf":{"spent":100},"spent":10}`},
		{name: "three deep, mixed", tool: flow.AsTool("top", spender(1, 0.0625, true, flow.AsTool("mid", spender(10, 0.5, false, leaf())))),
			tokens: 111, cost: 0.8125, answer: `{"delegate_to_mid":{"delegate_to_leaf":{"spent":100},"spent":10},"spent":1}`},
		{name: "two calls from one agent", tool: flow.AsTool("mid", spender(10, 0.5, true, leaf(), relay(leaf()))),
			tokens: 210, cost: 1, answer: `{"delegate_to_leaf":{"spent":100},"delegate_to_relay":{"delegate_to_leaf":{"spent":100},"spent":0},"spent":10}`},
		{name: "a composite: its members' results and their tools", tool: flow.AsTool("team", flow.Sequential(flow.SequentialConfig{},
			flow.Named("x", spender(3, 0.5, false, leaf())), flow.Named("y", spender(4, 0.5, false)))),
			tokens: 107, cost: 1.25, answer: `{"delegate_to_leaf":{"spent":100},"spent":4}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, u := flow.WithUsage(t.Context())
			raw, err := tt.tool.Call(ctx, nil, json.RawMessage(`{"task": "go"}`))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error: %v", err, tt.wantErr)
			}
			if u.Tokens() != tt.tokens || u.Cost() != tt.cost {
				t.Errorf("usage: %d tokens $%v; want %d and $%v", u.Tokens(), u.Cost(), tt.tokens, tt.cost)
			}
			if tt.answer != "" && string(raw) != tt.answer {
				t.Errorf("answer %s, want %s", raw, tt.answer)
			}
		})
	}
}

// relay is an agent tool whose agent spends nothing itself and calls t.
func relay(t troupe.Tool) troupe.Tool {
	return flow.AsTool("relay", spender(0, 0, false, t))
}

// AddTo adds to a result what was recorded, and nothing when nothing was; a nil Usage — a
// context with none — is safe to add to and read.
func TestUsageAddTo(t *testing.T) {
	_, u := flow.WithUsage(t.Context())
	res := &troupe.Result{}
	u.AddTo(res)
	if res.TokensUsed != nil || res.CostDollars != nil {
		t.Errorf("nothing recorded, yet the result has tokens %v cost %v", res.TokensUsed, res.CostDollars)
	}
	u.Add(7, 0.5)
	u.Add(0, 0.25)
	res = &troupe.Result{TokensUsed: troupe.Ptr[int64](3)}
	u.AddTo(res)
	if *res.TokensUsed != 10 || res.CostDollars == nil || *res.CostDollars != 0.75 {
		t.Errorf("result: tokens %d cost %v; want 10 and 0.75", *res.TokensUsed, res.CostDollars)
	}

	none := flow.UsageFrom(t.Context())
	if none != nil {
		t.Fatalf("UsageFrom of a bare context = %v, want nil", none)
	}
	none.Add(5, 1)
	none.AddTo(res)
	if none.Tokens() != 0 || none.Cost() != 0 || *res.TokensUsed != 10 {
		t.Error("a nil Usage recorded something")
	}
	// A tool called with no Usage in its context runs as before.
	if raw, err := flow.AsTool("leaf", spender(100, 0.25, false)).Call(t.Context(), nil, json.RawMessage(`{"task": "go"}`)); err != nil || string(raw) != `{"spent":100}` {
		t.Errorf("without a usage: %s, %v", raw, err)
	}
}

// Calls made at once — a parallel group's members, say — add to one Usage safely (run with
// -race) and lose nothing.
func TestUsageConcurrentCalls(t *testing.T) {
	tool := flow.AsTool("leaf", spender(100, 0.25, false))
	ctx, u := flow.WithUsage(t.Context())
	const n = 16
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			_, err := tool.Call(ctx, nil, json.RawMessage(`{"task": "go"}`))
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if u.Tokens() != n*100 || u.Cost() != n*0.25 {
		t.Errorf("usage: %d tokens $%v; want %d and $%v", u.Tokens(), u.Cost(), n*100, n*0.25)
	}
}

// An agent that calls agent tools itself opens a Usage, calls them with its context and adds
// the Usage to its result, so what they spent is counted with what it spent.
func ExampleWithUsage() {
	researcher := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{AgentResult: map[string]any{"finding": "42"}, TokensUsed: troupe.Ptr[int64](150)}, nil
	})
	tool := flow.AsTool("researcher", researcher)
	lead := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		ctx, u := flow.WithUsage(ctx)
		raw, err := tool.Call(ctx, d, json.RawMessage(`{"task": "find the answer"}`))
		if err != nil {
			return nil, err
		}
		res := &troupe.Result{AgentResult: map[string]any{"answer": json.RawMessage(raw)}, TokensUsed: troupe.Ptr[int64](33)}
		u.AddTo(res)
		return res, nil
	})
	res, err := lead.Run(context.Background(), troupe.NewDispatch())
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(*res.TokensUsed)
	// Output: 183
}

// A member of a composite that calls its own composite as a tool is a cycle: the composite,
// planned by the engine, is on no tool call stack, but it encloses the call. The cycle is
// found before the composite runs again (lint runs once).
func TestCycleThroughAnEnclosingComposite(t *testing.T) {
	var lintRuns atomic.Int32
	lint := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		lintRuns.Add(1)
		return &troupe.Result{AgentResult: map[string]any{"lint": "ok"}}, nil
	})
	var again troupe.Tool
	team := flow.Sequential(flow.SequentialConfig{}, flow.Named("lint", lint), flow.Named("reviewer", delegator("reviewer", &again)))
	again = flow.AsTool("team", team)
	d := troupe.NewDispatch()
	d.TargetAgent = "team" // as the engine dispatches the composite it planned
	_, err := team.Run(t.Context(), d)
	var cycle *troupe.CircularDependencyError
	if !errors.As(err, &cycle) {
		t.Fatalf("err = %v, want a CircularDependencyError", err)
	}
	if diff := cmp.Diff([]string{"team", "reviewer", "team"}, cycle.Cycle); diff != "" {
		t.Errorf("cycle (-want +got):\n%s", diff)
	}
	if n := lintRuns.Load(); n != 1 {
		t.Errorf("lint ran %d times, want once: the cycle is found before team runs again", n)
	}
}

// A composite that runs itself through Go code — a member calling its own composite's Run, no
// tool call in between — is stopped at MaxNesting levels with a MaxDepthExceededError, not
// left to nest until the goroutine's stack overflows, which no recover catches and which ends
// the process.
func TestCompositeRunningItselfIsBounded(t *testing.T) {
	const giveUp = 10 * flow.MaxNesting // the test's own bound, so that unbounded nesting fails it
	var seq *flow.SequentialAgent
	var depth atomic.Int32
	again := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		if depth.Add(1) >= giveUp {
			return &troupe.Result{AgentResult: map[string]any{"depth": giveUp}}, nil
		}
		return seq.Run(ctx, d)
	})
	seq = flow.Sequential(flow.SequentialConfig{}, flow.Named("again", again))
	d := troupe.NewDispatch()
	d.TargetAgent = "planner" // the planned agent, at the bottom
	_, err := seq.Run(t.Context(), d)
	var deep *troupe.MaxDepthExceededError
	if !errors.As(err, &deep) || deep.MaxDepth != flow.MaxNesting || len(deep.Stack) != flow.MaxNesting+1 {
		t.Fatalf("err = %v; want a MaxDepthExceededError at %d levels", err, flow.MaxNesting)
	}
	if n := depth.Load(); n != flow.MaxNesting-1 {
		t.Errorf("the member ran %d times nested, want %d", n, flow.MaxNesting-1)
	}
}
