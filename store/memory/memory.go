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
	mu       sync.RWMutex
	events   []troupe.Event
	finished bool // a terminal event was appended: the run is in Store.finished, once
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
// run (the first is 1); otherwise nothing of the call is appended and the error wraps
// troupe.ErrSeqConflict.
func (s *Store) Append(ctx context.Context, events ...troupe.Event) error {
	switch {
	case len(events) == 1:
		return s.append1(&events[0])
	case len(events) == 0:
		return nil
	case oneRun(events):
		return s.appendRun(events) // the engine's case: one transition of one run
	}
	return s.appendBatch(events)
}

func oneRun(events []troupe.Event) bool {
	for i := 1; i < len(events); i++ {
		if events[i].RunID != events[0].RunID {
			return false
		}
	}
	return true
}

// appendRun appends a batch of one run's events under one lock, all or nothing.
func (s *Store) appendRun(events []troupe.Event) error {
	id := events[0].RunID
	l := s.log(id, events[0].Seq == 1)
	if l == nil {
		return fmt.Errorf("memory: append %s: seq %d, want 1: %w", id, events[0].Seq, troupe.ErrSeqConflict)
	}
	l.mu.Lock()
	want := int64(len(l.events)) + 1
	for i := range events {
		if events[i].Seq != want {
			l.mu.Unlock()
			return fmt.Errorf("memory: append %s: seq %d, want %d: %w", id, events[i].Seq, want, troupe.ErrSeqConflict)
		}
		want++
	}
	l.events = append(l.events, events...)
	retire := false
	for i := range events {
		if events[i].Stage.Terminal() && !l.finished {
			l.finished, retire = true, true
		}
	}
	l.mu.Unlock()
	if retire {
		s.retire(id)
	}
	return nil
}

func (s *Store) append1(ev *troupe.Event) error {
	l := s.log(ev.RunID, ev.Seq == 1)
	if l == nil {
		return fmt.Errorf("memory: append %s: seq %d, want 1: %w", ev.RunID, ev.Seq, troupe.ErrSeqConflict)
	}
	l.mu.Lock()
	if want := int64(len(l.events)) + 1; ev.Seq != want {
		l.mu.Unlock()
		return fmt.Errorf("memory: append %s: seq %d, want %d: %w", ev.RunID, ev.Seq, want, troupe.ErrSeqConflict)
	}
	l.events = append(l.events, *ev)
	retire := ev.Stage.Terminal() && !l.finished
	l.finished = l.finished || retire
	l.mu.Unlock()
	if retire {
		s.retire(ev.RunID)
	}
	return nil
}

// appendBatch checks the whole batch against its runs' logs, holding their locks (taken in
// run-id order, so batches cannot deadlock), and appends all of it or nothing.
func (s *Store) appendBatch(events []troupe.Event) error {
	var ids []string
	for i := range events {
		if !slices.Contains(ids, events[i].RunID) {
			ids = append(ids, events[i].RunID)
		}
	}
	slices.Sort(ids)
	logs := make([]*runLog, len(ids))
	next := make([]int64, len(ids))
	for k, id := range ids {
		first := slices.IndexFunc(events, func(ev troupe.Event) bool { return ev.RunID == id })
		logs[k] = s.log(id, events[first].Seq == 1)
	}
	for _, l := range logs {
		if l != nil {
			l.mu.Lock()
		}
	}
	defer func() {
		for _, l := range logs {
			if l != nil {
				l.mu.Unlock()
			}
		}
	}()
	for k, l := range logs {
		next[k] = 1
		if l != nil {
			next[k] = int64(len(l.events)) + 1
		}
	}
	for i := range events {
		k, _ := slices.BinarySearch(ids, events[i].RunID)
		if events[i].Seq != next[k] {
			return fmt.Errorf("memory: append %s: seq %d, want %d: %w", events[i].RunID, events[i].Seq, next[k], troupe.ErrSeqConflict)
		}
		next[k]++
	}
	var retire []string
	for i := range events {
		k, _ := slices.BinarySearch(ids, events[i].RunID)
		l := logs[k]
		l.events = append(l.events, events[i])
		if events[i].Stage.Terminal() && !l.finished {
			l.finished = true
			retire = append(retire, events[i].RunID)
		}
	}
	for _, id := range retire {
		s.retire(id) // takes s.mu while holding log locks: retire never takes a log lock
	}
	return nil
}

// Reserve makes room for n events of runID before its first append, so a run's log is
// allocated once (the engine calls it with an estimate from the plan). It is optional: a
// store without it works the same, only growing its slices as it goes.
func (s *Store) Reserve(runID string, n int) {
	l := s.log(runID, false)
	if l == nil {
		// A new log: allocate it at the reserved size at once, not at the default and again.
		v, _ := s.runs.LoadOrStore(runID, &runLog{events: make([]troupe.Event, 0, max(n, 1))})
		l = v.(*runLog)
	}
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
