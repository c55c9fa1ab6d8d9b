// Package memory is troupe's in-memory Store: run logs kept in process memory, for tests,
// the CLI and single-process servers that need no durability.
package memory

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/troupehq/troupe"
)

// Config bounds a Store. The zero value keeps the 100 most recently finished runs.
type Config struct {
	// MaxFinishedRuns is how many runs that reached a terminal event are kept; when one more
	// finishes, the one that finished longest ago is dropped. Runs not finished (live or
	// paused) are never dropped. 0 means 100: a finished run's log with its payloads can
	// weigh hundreds of kilobytes, and the garbage collector marks all of it on every cycle.
	MaxFinishedRuns int
}

// Store keeps run logs in memory. The zero value is not usable; call New. A Store is safe for
// concurrent use; events it returns share payloads with what was appended, which the engine
// never modifies after appending.
type Store struct {
	max  int
	runs sync.Map // run id → *runLog; read on every append, so lock-free to read

	mu       sync.Mutex
	finished []string // finished run ids, oldest first
}

type runLog struct {
	mu     sync.RWMutex
	events []troupe.Event
}

// New returns an empty store bounded by cfg.
func New(cfg ...Config) *Store {
	s := &Store{max: 100}
	if len(cfg) > 0 && cfg[0].MaxFinishedRuns > 0 {
		s.max = cfg[0].MaxFinishedRuns
	}
	return s
}

func (s *Store) log(runID string, create bool) *runLog {
	if l, ok := s.runs.Load(runID); ok {
		return l.(*runLog)
	}
	if !create {
		return nil
	}
	l, _ := s.runs.LoadOrStore(runID, &runLog{events: make([]troupe.Event, 0, 8)})
	return l.(*runLog)
}

// Append adds events to their runs' logs. Each event's Seq must be one more than the last of its
// run (the first is 1); otherwise nothing of that event onward is appended and the error wraps
// troupe.ErrSeqConflict.
func (s *Store) Append(ctx context.Context, events ...troupe.Event) error {
	for i := range events {
		ev := &events[i]
		l := s.log(ev.RunID, ev.Seq == 1)
		if l == nil {
			return fmt.Errorf("memory: append %s seq %d: %w", ev.RunID, ev.Seq, troupe.ErrRunNotFound)
		}
		l.mu.Lock()
		if want := int64(len(l.events)) + 1; ev.Seq != want {
			l.mu.Unlock()
			return fmt.Errorf("memory: append %s: seq %d, want %d: %w", ev.RunID, ev.Seq, want, troupe.ErrSeqConflict)
		}
		l.events = append(l.events, *ev)
		l.mu.Unlock()
		if ev.Stage.Terminal() {
			s.retire(ev.RunID)
		}
	}
	return nil
}

// Reserve makes room for n events of runID before its first append, so a run's log is
// allocated once (the engine calls it with an estimate from the plan). It is optional: a
// store without it works the same, only growing its slices as it goes.
func (s *Store) Reserve(runID string, n int) {
	l := s.log(runID, true)
	l.mu.Lock()
	if cap(l.events)-len(l.events) < n {
		l.events = slices.Grow(l.events, n)
	}
	l.mu.Unlock()
}

// retire records that runID finished and drops the oldest finished runs beyond the bound.
func (s *Store) retire(runID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.finished = append(s.finished, runID)
	for len(s.finished) > s.max {
		s.runs.Delete(s.finished[0])
		s.finished[0] = ""
		s.finished = s.finished[1:]
	}
}

// Events returns the events of runID with Seq > after. The slice is a read-only view of the log
// (appends never write into it), so reading a live run's log costs no copy; neither the slice
// nor the payloads may be modified.
func (s *Store) Events(ctx context.Context, runID string, after int64) ([]troupe.Event, error) {
	l := s.log(runID, false)
	if l == nil {
		return nil, fmt.Errorf("memory: run %q: %w", runID, troupe.ErrRunNotFound)
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	if after < 0 {
		after = 0
	}
	if after >= int64(len(l.events)) {
		return nil, nil
	}
	n := int64(len(l.events))
	return l.events[after:n:n], nil
}

// Runs returns the ids of every run in the store, sorted.
func (s *Store) Runs() []string {
	var ids []string
	s.runs.Range(func(k, _ any) bool {
		ids = append(ids, k.(string))
		return true
	})
	slices.Sort(ids)
	return ids
}
