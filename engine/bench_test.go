package engine_test

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
	"testing"
	"time"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/engine"
	"github.com/troupehq/troupe/store/memory"
)

// noop is a do-nothing agent; it returns one shared result (the engine copies it).
var noopResult = &troupe.Result{AgentResult: map[string]any{"ok": true}, Confidence: troupe.Ptr(1.0)}

func noop(context.Context, *troupe.Dispatch) (*troupe.Result, error) { return noopResult, nil }

// staticPlan returns a planner that always hands out p (plans are read-only to the engine).
func staticPlan(p *troupe.Plan) troupe.Planner {
	return troupe.PlannerFunc(func(*troupe.Request, troupe.Catalog) (*troupe.Plan, error) { return p, nil })
}

func chainPlan(names []string) *troupe.Plan {
	p := &troupe.Plan{}
	for i, n := range names {
		t := troupe.Task{ID: n, Agent: n, Reason: "step", Priority: 1}
		if i > 0 {
			t.DependsOn = []string{names[i-1]}
		}
		p.Stages = append(p.Stages, troupe.PlanStage{Tasks: []troupe.Task{t}, MaxConcurrency: 1})
	}
	return p
}

func groupPlan(names []string, limit int) *troupe.Plan {
	st := troupe.PlanStage{MaxConcurrency: limit}
	for _, n := range names {
		st.Tasks = append(st.Tasks, troupe.Task{ID: n, Agent: n, Reason: "fan-out", Priority: 1})
	}
	return &troupe.Plan{Stages: []troupe.PlanStage{st}}
}

func registry(tb testing.TB, n int, a troupe.Agent) (*troupe.Registry, []string) {
	reg := troupe.NewRegistry()
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("agent_%04d", i)
		if err := reg.Add(names[i], a); err != nil {
			tb.Fatal(err)
		}
	}
	return reg, names
}

func runAll(b *testing.B, eng *engine.Engine) {
	ctx := context.Background()
	for b.Loop() {
		n := 0
		for ev, err := range eng.Run(ctx, troupe.Request{Query: "bench"}) {
			if err != nil {
				b.Fatal(err)
			}
			if ev.Kind == troupe.KindRunFailed {
				b.Fatalf("run failed: %+v", ev.Data)
			}
			n++
		}
		if n == 0 {
			b.Fatal("no events")
		}
	}
}

// BenchmarkChain10: 10 no-op agents in sequence, events on, memory store.
func BenchmarkChain10(b *testing.B) {
	reg, names := registry(b, 10, troupe.AgentFunc(noop))
	eng, err := engine.New(engine.Config{Registry: reg, Planner: staticPlan(chainPlan(names))})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	runAll(b, eng)
}

// BenchmarkChain10KeepOne is Chain10 with a memory store that keeps one finished run instead of
// a hundred: the difference is what the store's retention costs (the garbage collector marks
// every kept log on every cycle). Peers' in-memory benchmarks that delete their session after
// each run compare with this one.
func BenchmarkChain10KeepOne(b *testing.B) {
	reg, names := registry(b, 10, troupe.AgentFunc(noop))
	eng, err := engine.New(engine.Config{Registry: reg, Planner: staticPlan(chainPlan(names)),
		Store: memory.New(memory.Config{MaxFinishedRuns: 1})})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	runAll(b, eng)
}

// BenchmarkChain10Floor is the floor: ten function calls each on a fresh goroutine, handed
// over by channel — what a hand-rolled chain with per-step timeouts costs at least.
func BenchmarkChain10Floor(b *testing.B) {
	b.ReportAllocs()
	ctx := context.Background()
	for b.Loop() {
		for range 10 {
			ch := make(chan *troupe.Result, 1)
			go func() { r, _ := noop(ctx, nil); ch <- r }()
			<-ch
		}
	}
}

// BenchmarkFanOut100: 100 no-op agents in one group, uncapped, plus aggregation.
func BenchmarkFanOut100(b *testing.B) {
	reg, names := registry(b, 100, troupe.AgentFunc(noop))
	eng, err := engine.New(engine.Config{Registry: reg, Planner: staticPlan(groupPlan(names, 100))})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	runAll(b, eng)
}

// BenchmarkFanOut100Floor: 100 goroutines and a WaitGroup.
func BenchmarkFanOut100Floor(b *testing.B) {
	b.ReportAllocs()
	ctx := context.Background()
	for b.Loop() {
		var wg sync.WaitGroup
		res := make([]*troupe.Result, 100)
		for i := range 100 {
			wg.Go(func() { res[i], _ = noop(ctx, nil) })
		}
		wg.Wait()
	}
}

// sleeper is an agent that sleeps for d, as the floor's goroutines do.
func sleeper(d time.Duration) troupe.Agent {
	return troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		time.Sleep(d)
		return noopResult, nil
	})
}

// waiter is an agent that waits for d or its context, whichever ends first: what an agent
// that honours cancellation does (a timer, a channel and a select more than sleeper).
func waiter(d time.Duration) troupe.Agent {
	return troupe.AgentFunc(func(ctx context.Context, _ *troupe.Dispatch) (*troupe.Result, error) {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return noopResult, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
}

// BenchmarkIOFanOut1000: 1,000 agents that each sleep 10 ms, uncapped, then capped at 50; and
// uncapped again with agents that wait on a timer or their context (its floor is
// BenchmarkIOFanOut1000Floor/waiting).
func BenchmarkIOFanOut1000(b *testing.B) {
	for _, bc := range []struct {
		name  string
		limit int
		agent troupe.Agent
	}{
		{"uncapped", 1000, sleeper(10 * time.Millisecond)},
		{"cap50", 50, sleeper(10 * time.Millisecond)},
		{"uncapped-waiting", 1000, waiter(10 * time.Millisecond)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			reg, names := registry(b, 1000, bc.agent)
			eng, err := engine.New(engine.Config{Registry: reg, Planner: staticPlan(groupPlan(names, bc.limit))})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			runAll(b, eng)
		})
	}
}

// BenchmarkIOFanOut1000Floor: 1,000 goroutines each sleeping 10 ms; and each waiting 10 ms on
// a timer or a context, as the waiting agents do.
func BenchmarkIOFanOut1000Floor(b *testing.B) {
	b.Run("sleeping", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var wg sync.WaitGroup
			for range 1000 {
				wg.Go(func() { time.Sleep(10 * time.Millisecond) })
			}
			wg.Wait()
		}
	})
	b.Run("waiting", func(b *testing.B) {
		b.ReportAllocs()
		ctx := context.Background()
		for b.Loop() {
			var wg sync.WaitGroup
			for range 1000 {
				wg.Go(func() {
					t := time.NewTimer(10 * time.Millisecond)
					defer t.Stop()
					select {
					case <-t.C:
					case <-ctx.Done():
					}
				})
			}
			wg.Wait()
		}
	})
}

// BenchmarkBlockedRunMemory starts 10,000 runs that each block inside their first agent and
// reports the memory they hold, per run (heap in use plus goroutine stacks, after GC).
func BenchmarkBlockedRunMemory(b *testing.B) {
	const runs = 10000
	for b.Loop() {
		release := make(chan struct{})
		var entered sync.WaitGroup
		entered.Add(runs)
		blocker := troupe.AgentFunc(func(ctx context.Context, _ *troupe.Dispatch) (*troupe.Result, error) {
			entered.Done()
			select {
			case <-release:
				return noopResult, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		})
		reg, names := registry(b, 1, blocker)
		eng, err := engine.New(engine.Config{Registry: reg, Planner: staticPlan(chainPlan(names))})
		if err != nil {
			b.Fatal(err)
		}
		handles := make([]*engine.Run, runs)
		before, heapBefore, stackBefore := memInUse()
		ctx := context.Background()
		for i := range handles {
			if handles[i], err = eng.Start(ctx, troupe.Request{Query: "blocked"}); err != nil {
				b.Fatal(err)
			}
		}
		entered.Wait()
		after, heapAfter, stackAfter := memInUse()
		b.ReportMetric(float64(after-before)/runs, "B/blocked-run")
		b.ReportMetric(float64(heapAfter-heapBefore)/runs, "heap-B/run")
		b.ReportMetric(float64(stackAfter-stackBefore)/runs, "stack-B/run")
		close(release)
		for _, h := range handles {
			if _, err := h.Wait(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkBlockedGoroutineFloor: the floor, one bare goroutine blocked on a channel per "run".
func BenchmarkBlockedGoroutineFloor(b *testing.B) {
	const runs = 10000
	for b.Loop() {
		release := make(chan struct{})
		started := make(chan struct{}, runs)
		before, heapBefore, stackBefore := memInUse()
		for range runs {
			go func() { started <- struct{}{}; <-release }()
		}
		for range runs {
			<-started
		}
		after, heapAfter, stackAfter := memInUse()
		b.ReportMetric(float64(after-before)/runs, "B/blocked-run")
		b.ReportMetric(float64(heapAfter-heapBefore)/runs, "heap-B/run")
		b.ReportMetric(float64(stackAfter-stackBefore)/runs, "stack-B/run")
		close(release) // the goroutines return at once
	}
}

// memInUse returns heap plus stack in use, and each, after collecting garbage (which also
// shrinks goroutine stacks that use less than a quarter of theirs).
func memInUse() (total, heap, stack uint64) {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse + m.StackInuse, m.HeapInuse, m.StackInuse
}

// BenchmarkChain10Detached is Chain10 without a watcher: Start, then Wait.
func BenchmarkChain10Detached(b *testing.B) {
	reg, names := registry(b, 10, troupe.AgentFunc(noop))
	eng, err := engine.New(engine.Config{Registry: reg, Planner: staticPlan(chainPlan(names))})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	ctx := context.Background()
	for b.Loop() {
		r, err := eng.Start(ctx, troupe.Request{Query: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := r.Wait(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFinishedRunRetained reports what the default memory store keeps per finished
// Chain10 run (heap in use after GC, per run, over 100 runs): the log and its payloads, which
// the garbage collector marks on every cycle while the store keeps them.
func BenchmarkFinishedRunRetained(b *testing.B) {
	reg, names := registry(b, 10, troupe.AgentFunc(noop))
	ctx := context.Background()
	for b.Loop() {
		eng, err := engine.New(engine.Config{Registry: reg, Planner: staticPlan(chainPlan(names))})
		if err != nil {
			b.Fatal(err)
		}
		run := func() {
			r, err := eng.Start(ctx, troupe.Request{Query: "bench"})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := r.Wait(ctx); err != nil {
				b.Fatal(err)
			}
		}
		run() // the engine's and store's own first allocations
		_, before, _ := memInUse()
		var objBefore, objAfter runtime.MemStats
		runtime.ReadMemStats(&objBefore)
		for range 100 {
			run()
		}
		_, after, _ := memInUse()
		runtime.ReadMemStats(&objAfter)
		runtime.KeepAlive(eng)
		b.ReportMetric((float64(after)-float64(before))/100, "B/finished-run")
		b.ReportMetric((float64(objAfter.HeapObjects)-float64(objBefore.HeapObjects))/100, "objects/finished-run")
	}
}

// BenchmarkChain10CollectorAt400 is Chain10 with the collector's target at 400% of the live
// heap instead of Go's default 100% (debug.SetGCPercent, restored after), measured beside
// Chain10 in one process: the difference is what the garbage collector costs the chain at the
// default — collections four times as often, each with its write barriers on and its mark
// worker holding a P. It is a diagnostic, not a figure troupe claims: troupe, a library, leaves
// GOGC to the program.
func BenchmarkChain10CollectorAt400(b *testing.B) {
	reg, names := registry(b, 10, troupe.AgentFunc(noop))
	eng, err := engine.New(engine.Config{Registry: reg, Planner: staticPlan(chainPlan(names))})
	if err != nil {
		b.Fatal(err)
	}
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	b.ReportAllocs()
	runAll(b, eng)
}
