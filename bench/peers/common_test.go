package peers

import (
	"runtime"
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
