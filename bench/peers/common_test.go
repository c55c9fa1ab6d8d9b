package peers

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const (
	chainLen    = 10
	fanOut      = 100
	ioFanOut    = 1000
	blockedRuns = 10000
)

// memInUse: runtime.GC() twice, then HeapInuse+StackInuse.
func memInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse + ms.StackInuse
}

// counters counts per-step executions so each benchmark can prove the steps ran.
type counters []atomic.Int64

func newCounters(n int) counters { return make(counters, n) }

// check asserts every step ran at least min times.
func (c counters) check(b *testing.B, what string, min int64) {
	b.Helper()
	for i := range c {
		if got := c[i].Load(); got < min {
			b.Fatalf("%s: step %d ran %d times, want >= %d", what, i, got, min)
		}
	}
}

// waitAtLeast polls until v >= n.
func waitAtLeast(v *atomic.Int64, n int64) {
	for v.Load() < n {
		time.Sleep(200 * time.Microsecond)
	}
}

// measureBlocked starts blockedRuns runs, each with start, waits until every one has entered
// its blocking first step (counted by entered), and reports heap plus stacks in use per blocked
// run. Then it closes *release, which the blocking step waits on, and fails on any run's error.
// It returns how many rounds of blockedRuns it ran.
//
// start must begin one run on a goroutine of its own (both frameworks run on the caller's
// goroutine) and call done with the run's error when it ends. The goroutine is the caller's so
// that its stack holds the framework's frames and nothing of this harness: one more frame can
// tip a goroutine's stack into the next size.
func measureBlocked(b *testing.B, entered *atomic.Int64, release *chan struct{}, start func(done func(error))) int64 {
	b.ReportAllocs()
	var total float64
	iters := int64(0)
	for b.Loop() {
		*release = make(chan struct{})
		entered.Store(0)
		var wg sync.WaitGroup
		errs := make(chan error, blockedRuns)
		done := func(err error) {
			if err != nil {
				errs <- err
			}
			wg.Done()
		}
		before := memInUse()
		for range blockedRuns {
			wg.Add(1)
			start(done)
		}
		waitAtLeast(entered, blockedRuns)
		after := memInUse()
		total += (float64(after) - float64(before)) / blockedRuns
		close(*release)
		wg.Wait()
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
		iters++
	}
	b.ReportMetric(total/float64(iters), "B/blocked-run")
	return iters
}
