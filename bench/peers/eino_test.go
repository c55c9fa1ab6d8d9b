package peers

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cloudwego/eino/compose"
)

// einoNoop: an InvokableLambda that optionally runs pre(), bumps its counter
// and returns its input unchanged.
func einoNoop(ctr *atomic.Int64, pre func()) *compose.Lambda {
	return compose.InvokableLambda(func(_ context.Context, in string) (string, error) {
		if pre != nil {
			pre()
		}
		ctr.Add(1)
		return in, nil
	})
}

// einoChain: compose.NewChain with chainLen AppendLambda nodes, compiled once.
func einoChain(b *testing.B, ctr counters, pre0 func()) compose.Runnable[string, string] {
	ch := compose.NewChain[string, string]()
	for i := range chainLen {
		var pre func()
		if i == 0 {
			pre = pre0
		}
		ch.AppendLambda(einoNoop(&ctr[i], pre))
	}
	r, err := ch.Compile(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	return r
}

// einoFan: compose.NewParallel with n AddLambda branches, appended to a chain
// (START -> n lambdas -> END); output is map[outputKey]any.
func einoFan(b *testing.B, ctr counters, pre func()) compose.Runnable[string, map[string]any] {
	p := compose.NewParallel()
	for i := range ctr {
		p.AddLambda(fmt.Sprintf("k%d", i), einoNoop(&ctr[i], pre))
	}
	ch := compose.NewChain[string, map[string]any]().AppendParallel(p)
	r, err := ch.Compile(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	return r
}

func BenchmarkEinoChain10(b *testing.B) {
	ctr := newCounters(chainLen)
	r := einoChain(b, ctr, nil)
	ctx := context.Background()
	b.ReportAllocs()
	iters := int64(0)
	for b.Loop() {
		out, err := r.Invoke(ctx, "hi")
		if err != nil || out != "hi" {
			b.Fatalf("out=%q err=%v", out, err)
		}
		iters++
	}
	ctr.check(b, "EinoChain10", iters)
}

func runEinoFan(b *testing.B, n int, pre func(), name string) {
	ctr := newCounters(n)
	r := einoFan(b, ctr, pre)
	ctx := context.Background()
	b.ReportAllocs()
	iters := int64(0)
	for b.Loop() {
		out, err := r.Invoke(ctx, "hi")
		if err != nil || len(out) != n || out["k0"] != "hi" || out[fmt.Sprintf("k%d", n-1)] != "hi" {
			b.Fatalf("len(out)=%d err=%v", len(out), err)
		}
		iters++
	}
	ctr.check(b, name, iters)
}

func BenchmarkEinoFanOut100(b *testing.B) { runEinoFan(b, fanOut, nil, "EinoFanOut100") }

func BenchmarkEinoIOFanOut1000(b *testing.B) {
	runEinoFan(b, ioFanOut, func() { time.Sleep(10 * time.Millisecond) }, "EinoIOFanOut1000")
}

// BenchmarkEinoBlockedRun: 10,000 concurrent Invoke calls on the compiled 10-lambda chain;
// lambda 0 blocks on a channel. Invoke blocks, so each run gets its own goroutine.
func BenchmarkEinoBlockedRun(b *testing.B) {
	ctr := newCounters(chainLen)
	var entered atomic.Int64
	var release chan struct{}
	r := einoChain(b, ctr, func() {
		entered.Add(1)
		<-release
	})
	ctx := context.Background()
	iters := measureBlocked(b, &entered, &release, func(done func(error)) {
		go func() {
			out, err := r.Invoke(ctx, "hi")
			if err == nil && out != "hi" {
				err = fmt.Errorf("out=%q", out)
			}
			done(err)
		}()
	})
	ctr.check(b, "EinoBlockedRun", iters*blockedRuns)
}
