// Package stray counts the goroutines a composite has abandoned: a member or replicate that
// ran past its deadline without returning was left running so that the run could go on, and
// whoever owns it — the composite's Teardown — must still wait for it before it is gone.
package stray

import (
	"context"
	"sync"
	"time"
)

// Grace is how long a goroutine past its deadline (or cancelled) has to return before it is
// abandoned: one that honours its context returns well within it, and what it returned is
// recorded as it is.
const Grace = 250 * time.Millisecond

// Tracker counts abandoned goroutines and says when none is left: a sync.WaitGroup whose
// wait can end with a context, and whose count can be read. The zero value is ready; it is
// safe for concurrent use.
type Tracker struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed when n drops to 0
}

// Add counts one more goroutine.
func (t *Tracker) Add() {
	t.mu.Lock()
	if t.n == 0 {
		t.idle = make(chan struct{})
	}
	t.n++
	t.mu.Unlock()
}

// Done counts one goroutine fewer; it panics when none is counted.
func (t *Tracker) Done() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.n == 0 {
		panic("stray: Done without Add")
	}
	if t.n--; t.n == 0 {
		close(t.idle)
	}
}

// Count returns the goroutines counted now.
func (t *Tracker) Count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.n
}

// Wait waits until no goroutine is counted, returning nil, or until ctx ends, returning its
// cause and how many goroutines were still counted then.
func (t *Tracker) Wait(ctx context.Context) (left int, err error) {
	t.mu.Lock()
	n, idle := t.n, t.idle
	t.mu.Unlock()
	if n == 0 {
		return 0, nil
	}
	select {
	case <-idle:
		return 0, nil
	case <-ctx.Done():
		if n = t.Count(); n == 0 {
			return 0, nil // the last one returned as ctx ended
		}
		return n, context.Cause(ctx)
	}
}
