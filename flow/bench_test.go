package flow_test

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/flow"
)

var echo = troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
	return &troupe.Result{AgentResult: map[string]any{"answer": d.Query}}, nil
})

var benchArgs = json.RawMessage(`{"task": "count the rows"}`)

func benchCaller() *troupe.Dispatch {
	d := troupe.NewDispatch()
	d.DispatchID, d.SessionID, d.QueryID, d.TargetAgent, d.Query = "disp_0000000000000001", "s", "q", "coordinator", "q"
	return d
}

// BenchmarkAgentTool is the overhead of one call to an agent through its tool: call stack
// checks, the nested dispatch and result, argument decoding and result encoding (seed 002
// promises ~100 ms; troupe's target is 10 µs).
func BenchmarkAgentTool(b *testing.B) {
	tool := flow.AsTool("sql_expert", echo)
	caller := benchCaller()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tool.Call(ctx, caller, benchArgs); err != nil {
			b.Fatal(err)
		}
	}
}

// discard is a runtime that records nested events nowhere: the cost of building them.
type discard struct{ n atomic.Uint64 }

func (*discard) State(string) (any, bool) { return nil, false }
func (*discard) Progress(string, any)     {}
func (*discard) Ask(context.Context, troupe.Question) (troupe.Answer, error) {
	return troupe.Answer{}, nil
}
func (*discard) Partial(map[string]any)           {}
func (*discard) Emit(troupe.Event)                {}
func (*discard) ExecutionContext() troupe.Context { return troupe.NewContext("trace", "") }
func (d *discard) NextChild() uint64              { return d.n.Add(1) }

// BenchmarkAgentToolInRun is BenchmarkAgentTool with a caller whose runtime records nested
// events (dispatch_started, dispatch_completed), as the engine's does.
func BenchmarkAgentToolInRun(b *testing.B) {
	tool := flow.AsTool("sql_expert", echo)
	caller := benchCaller()
	caller.Bind(&discard{})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tool.Call(ctx, caller, benchArgs); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAgentToolFloor calls the agent directly: what BenchmarkAgentTool adds is the rest.
func BenchmarkAgentToolFloor(b *testing.B) {
	caller := benchCaller()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := echo.Run(ctx, caller); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParallelFirstSuccess: 99 of 100 branches block on their context; the last succeeds
// once they all wait. success-to-return-ns is the time from the winner's return to Execute's
// (target: under 1 ms): cancelling the 99 and waiting for them.
func BenchmarkParallelFirstSuccess(b *testing.B) {
	const n = 100
	var blocked sync.WaitGroup
	var won atomic.Int64
	specs := make([]*troupe.AgentSpec, n)
	for i := range n - 1 {
		specs[i] = flow.Named("b"+strconv.Itoa(i), troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
			blocked.Done()
			<-ctx.Done()
			return nil, ctx.Err()
		}))
	}
	specs[n-1] = flow.Named("winner", troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		blocked.Wait()
		won.Store(time.Now().UnixNano())
		return &troupe.Result{AgentResult: map[string]any{"ok": true}}, nil
	}))
	group := flow.Parallel(flow.ParallelConfig{Strategy: flow.FirstSuccess, MaxConcurrent: n}, specs...)
	ctx := context.Background()
	var total time.Duration
	b.ReportAllocs()
	for b.Loop() {
		blocked.Add(n - 1)
		out, err := group.Execute(ctx, troupe.NewDispatch())
		end := time.Now()
		if err != nil || out.Winner != n-1 {
			b.Fatalf("winner %d, %v", out.Winner, err)
		}
		total += end.Sub(time.Unix(0, won.Load()))
	}
	b.ReportMetric(float64(total.Nanoseconds())/float64(b.N), "success-to-return-ns")
}
