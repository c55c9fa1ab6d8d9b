// Package memory is troupe's in-memory Store: run logs kept in process memory, for tests,
// the CLI and single-process servers that need no durability.
package memory

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"sync"
	"time"

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
//
// A log keeps each event in about half an Event's size: what every event of a run shares (its
// run id, and the Context nearly all of them point at) is kept once, its sequence number is its
// place, its kind and status are small indexes, and its time is Unix nanoseconds. Events are
// rebuilt as they are read. A time comes back as it was appended, in its location, without its
// monotonic clock reading (as from any durable store).
type Store struct {
	max int

	mu       sync.RWMutex
	runs     map[string]*Log
	finished []string // finished run ids, oldest first
}

// Log is one run's log. The store forgets a finished run once MaxFinishedRuns later runs have
// finished (Events then says ErrRunNotFound), but a *Log that Open returned before still reads
// the whole run: it is the log itself, freed by the garbage collector once the store and every
// holder have let go of it. Retirement bounds what the store keeps, not what the holder of a
// run (the engine's run handle, whose reader may be slow or come late) can read; a holder
// needs no Close.
//
// The zero value is an empty log that is in no store. A Log is safe for concurrent use.
type Log struct {
	mu       sync.RWMutex
	ctx      *troupe.Context // the first event's Context, which nearly every event shares
	entries  []entry         // entries[i] is the event with Seq i+1; nil until the first is made room for
	finished bool            // a terminal event was appended: the run is in Store.finished, once
}

// entry is an event as a log keeps it (72 bytes, an Event takes 168). What the common event
// cannot say this way is in odd.
type entry struct {
	unix     int64 // the time in Unix nanoseconds, in time.Local or UTC; or zeroTime, or oddTime
	dispatch string
	agent    string
	data     any
	odd      *oddFields
	step     int32
	stage    troupe.Stage
	kind     uint8 // index in kinds; 0: odd.kind
	status   uint8 // index in statuses; oddStatus: odd.status
	utc      bool  // unix is in UTC, not time.Local
}

// oddFields are an event's fields as appended, for an event a plain entry cannot hold: a nested
// event (its parent dispatch and its own Context), a kind or status troupe does not define, or
// a step beyond int32.
type oddFields struct {
	time   time.Time // when the entry's unix is oddTime
	parent string
	ctx    *troupe.Context
	kind   troupe.Kind
	status troupe.Status
	step   int
}

// kinds are the kinds an entry names by index, the most frequent first (index 0 is "odd").
var kinds = [...]troupe.Kind{"",
	troupe.KindDispatchStarted, troupe.KindDispatchCompleted, troupe.KindRouteDecided, troupe.KindAgentProgress,
	troupe.KindStateDelta, troupe.KindDispatchFailed, troupe.KindRetryScheduled, troupe.KindRunInitialized,
	troupe.KindPlanCreated, troupe.KindRunAggregated, troupe.KindRunCompleted, troupe.KindRunFailed,
	troupe.KindRunCancelled, troupe.KindRunPaused, troupe.KindRunResumed, troupe.KindHumanAsked,
	troupe.KindHumanAnswered, troupe.KindWarning, troupe.KindBudgetExhausted,
}

// statuses are the statuses an entry names by index; index 0 is none.
var statuses = [...]troupe.Status{"", troupe.StatusCompleted, troupe.StatusFailed, troupe.StatusTimeout, troupe.StatusCancelled}

const oddStatus = 255

// An entry's unix is one of these when its time is the zero Time, or is kept in odd (a time
// in another location than time.Local or UTC, or one Unix nanoseconds cannot express). A time
// recorded in nanoseconds loses its monotonic clock reading, as it would in any durable store.
const (
	zeroTime = math.MinInt64 + iota
	oddTime
)

// unixNanos says t in Unix nanoseconds and whether it is in UTC, if that says all of it but its
// monotonic reading.
func unixNanos(t time.Time) (unix int64, utc, ok bool) {
	if t.IsZero() {
		return zeroTime, false, true
	}
	loc := t.Location()
	// Unix nanoseconds reach from 1678 to 2262; keep well inside, where UnixNano is exact.
	if s := t.Unix(); loc != time.Local && loc != time.UTC || s <= -9e9 || s >= 9e9 {
		return oddTime, false, false
	}
	return t.UnixNano(), loc == time.UTC, true
}

func kindIndex(k troupe.Kind) uint8 {
	for i := 1; i < len(kinds); i++ {
		if kinds[i] == k {
			return uint8(i)
		}
	}
	return 0
}

func statusIndex(st troupe.Status) uint8 {
	for i := range statuses {
		if statuses[i] == st {
			return uint8(i)
		}
	}
	return oddStatus
}

// add appends ev, whose Seq the caller checked.
func (l *Log) add(ev *troupe.Event) {
	if len(l.entries) == 0 {
		l.ctx = ev.Context
	}
	unix, utc, plain := unixNanos(ev.Time)
	e := entry{unix: unix, utc: utc, dispatch: ev.DispatchID, agent: ev.Agent, data: ev.Data,
		step: int32(ev.Step), stage: ev.Stage, kind: kindIndex(ev.Kind), status: statusIndex(ev.Status)}
	if !plain || e.kind == 0 || e.status == oddStatus || int(e.step) != ev.Step || ev.Parent != "" || ev.Context != l.ctx {
		e.odd = &oddFields{time: ev.Time, parent: ev.Parent, ctx: ev.Context, kind: ev.Kind, status: ev.Status, step: ev.Step}
	}
	l.entries = append(l.entries, e)
}

// event rebuilds the event at index i.
func (l *Log) event(runID string, i int) troupe.Event {
	e := &l.entries[i]
	ev := troupe.Event{RunID: runID, Seq: int64(i) + 1, Stage: e.stage, Kind: kinds[e.kind],
		Step: int(e.step), DispatchID: e.dispatch, Agent: e.agent, Context: l.ctx, Data: e.data}
	switch e.unix {
	case zeroTime:
	case oddTime:
		ev.Time = e.odd.time
	default:
		ev.Time = time.Unix(0, e.unix)
		if e.utc {
			ev.Time = ev.Time.UTC()
		}
	}
	if e.status != oddStatus {
		ev.Status = statuses[e.status]
	}
	if o := e.odd; o != nil {
		ev.Parent, ev.Context, ev.Kind, ev.Status, ev.Step = o.parent, o.ctx, o.kind, o.status, o.step
	}
	return ev
}

// New returns an empty store bounded by cfg.
func New(cfg ...Config) *Store {
	s := &Store{max: 100, runs: make(map[string]*Log)}
	if len(cfg) > 0 && cfg[0].MaxFinishedRuns > 0 {
		s.max = cfg[0].MaxFinishedRuns
	}
	return s
}

func (s *Store) log(runID string, create bool) *Log {
	s.mu.RLock()
	l := s.runs[runID]
	s.mu.RUnlock()
	if l != nil || !create {
		return l
	}
	return s.create(runID, 8)
}

// create returns runID's log, making it with room for n events unless another caller just did.
func (s *Store) create(runID string, n int) *Log {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l := s.runs[runID]; l != nil {
		return l
	}
	l := &Log{}
	if n > 0 {
		l.entries = make([]entry, 0, n)
	}
	s.runs[runID] = l
	return l
}

// Open returns runID's log, making an empty one if the store has none, for a reader that must
// read the whole run even after the store has retired it (see Log). The engine opens a run's
// log when it makes the run, before its first event: a log opened later could already be
// retired. The store treats an opened log as any other: it finds the run by id, and drops it
// once MaxFinishedRuns later runs have finished.
func (s *Store) Open(runID string) *Log {
	if l := s.log(runID, false); l != nil {
		return l
	}
	return s.create(runID, 0) // no array yet: Reserve or the first append makes it at its size
}

// room makes room for n more entries. A log's first array, unless Reserve made it, has room for
// 8 at least.
func (l *Log) room(n int) {
	if l.entries == nil {
		l.entries = make([]entry, 0, max(n, 8))
		return
	}
	l.entries = slices.Grow(l.entries, n)
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

// appendRun appends a batch of one run's events under one lock, all or nothing. The batch is
// checked to count on by one before any log is made, so that under the lock only its first Seq
// can conflict: a log this call makes for a Seq 1 is empty and does not conflict, and one that
// does was another's and is not empty. A rejected batch leaves no log behind.
func (s *Store) appendRun(events []troupe.Event) error {
	id := events[0].RunID
	for i := 1; i < len(events); i++ {
		if want := events[i-1].Seq + 1; events[i].Seq != want {
			return fmt.Errorf("memory: append %s: seq %d, want %d: %w", id, events[i].Seq, want, troupe.ErrSeqConflict)
		}
	}
	l := s.log(id, events[0].Seq == 1)
	if l == nil {
		return fmt.Errorf("memory: append %s: seq %d, want 1: %w", id, events[0].Seq, troupe.ErrSeqConflict)
	}
	l.mu.Lock()
	if want := int64(len(l.entries)) + 1; events[0].Seq != want {
		l.mu.Unlock()
		return fmt.Errorf("memory: append %s: seq %d, want %d: %w", id, events[0].Seq, want, troupe.ErrSeqConflict)
	}
	l.room(len(events))
	retire := false
	for i := range events {
		l.add(&events[i])
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

// append1 appends one event. It makes a log only for a Seq 1, which conflicts only with a log
// that is not empty, so a rejected event leaves no log behind.
func (s *Store) append1(ev *troupe.Event) error {
	l := s.log(ev.RunID, ev.Seq == 1)
	if l == nil {
		return fmt.Errorf("memory: append %s: seq %d, want 1: %w", ev.RunID, ev.Seq, troupe.ErrSeqConflict)
	}
	l.mu.Lock()
	if want := int64(len(l.entries)) + 1; ev.Seq != want {
		l.mu.Unlock()
		return fmt.Errorf("memory: append %s: seq %d, want %d: %w", ev.RunID, ev.Seq, want, troupe.ErrSeqConflict)
	}
	l.room(1)
	l.add(ev)
	retire := ev.Stage.Terminal() && !l.finished
	l.finished = l.finished || retire
	l.mu.Unlock()
	if retire {
		s.retire(ev.RunID)
	}
	return nil
}

// appendBatch checks the whole batch against its runs' logs, holding their locks (taken in
// run-id order, so batches cannot deadlock), and appends all of it or nothing. It makes the
// logs of its new runs only once the rest of the batch is known good, so a rejected batch
// leaves no log behind.
func (s *Store) appendBatch(events []troupe.Event) error {
	var ids []string
	for i := range events {
		if !slices.Contains(ids, events[i].RunID) {
			ids = append(ids, events[i].RunID)
		}
	}
	slices.Sort(ids)
	// Each run's events in the batch must count on by one from its first, whatever its log holds.
	first := make([]int64, len(ids))
	count := make([]int, len(ids))
	for i := range events {
		k, _ := slices.BinarySearch(ids, events[i].RunID)
		if count[k] == 0 {
			first[k] = events[i].Seq
		} else if want := first[k] + int64(count[k]); events[i].Seq != want {
			return fmt.Errorf("memory: append %s: seq %d, want %d: %w", events[i].RunID, events[i].Seq, want, troupe.ErrSeqConflict)
		}
		count[k]++
	}
	logs := make([]*Log, len(ids))
	for {
		done, err := s.tryBatch(events, ids, first, count, logs)
		if done {
			return err
		}
		// Another writer made one of the new runs' logs meanwhile: check again against it.
	}
}

// tryBatch appends events, whose runs are ids with each run's first Seq in first and its number
// of events in count, to their logs, found anew into logs. Runs without a log must start at 1;
// their logs are made, and published, only once every other run is checked, under the locks of
// the others. It reports false, having changed nothing, if another writer made one of those
// logs before this call could.
func (s *Store) tryBatch(events []troupe.Event, ids []string, first []int64, count []int, logs []*Log) (done bool, err error) {
	s.mu.RLock()
	missing := false
	for k, id := range ids {
		logs[k] = s.runs[id]
		missing = missing || logs[k] == nil
	}
	s.mu.RUnlock()
	for k, l := range logs {
		if l == nil && first[k] != 1 {
			return true, fmt.Errorf("memory: append %s: seq %d, want 1: %w", ids[k], first[k], troupe.ErrSeqConflict)
		}
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
		if l != nil {
			if want := int64(len(l.entries)) + 1; first[k] != want {
				return true, fmt.Errorf("memory: append %s: seq %d, want %d: %w", ids[k], first[k], want, troupe.ErrSeqConflict)
			}
		}
	}
	if missing && !s.publish(ids, logs) {
		return false, nil
	}
	for k, l := range logs {
		l.room(count[k])
	}
	var retire []string
	for i := range events {
		k, _ := slices.BinarySearch(ids, events[i].RunID)
		l := logs[k]
		l.add(&events[i])
		if events[i].Stage.Terminal() && !l.finished {
			l.finished = true
			retire = append(retire, events[i].RunID)
		}
	}
	for _, id := range retire {
		s.retire(id) // takes s.mu while holding log locks: retire never takes a log lock
	}
	return true, nil
}

// publish makes a log for each run of ids whose logs entry is nil, locked, and puts them all
// in the store at once; or, if another writer made one of them meanwhile, none, and reports
// false. It takes s.mu while the caller holds other logs' locks, as retire does: nothing holding
// s.mu waits for a log lock. A new log is locked before any other writer can find it, so taking
// its lock out of run-id order cannot deadlock.
func (s *Store) publish(ids []string, logs []*Log) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, id := range ids {
		if logs[k] == nil && s.runs[id] != nil {
			return false
		}
	}
	for k, id := range ids {
		if logs[k] == nil {
			l := &Log{}
			l.mu.Lock()
			logs[k] = l
			s.runs[id] = l
		}
	}
	return true
}

// Reserve makes room for n events of runID before its first append, so a run's log is
// allocated once (the engine calls it with an estimate from the plan). It is optional: a
// store without it works the same, only growing its slices as it goes.
func (s *Store) Reserve(runID string, n int) {
	l := s.log(runID, false)
	if l == nil {
		// A new log: allocate it at the reserved size at once, not at the default and again.
		l = s.create(runID, n)
	}
	l.mu.Lock()
	switch {
	case l.entries == nil && n > 0:
		l.entries = make([]entry, 0, n) // an opened log's first array, at the reserved size
	case cap(l.entries)-len(l.entries) < n:
		l.entries = slices.Grow(l.entries, n)
	}
	l.mu.Unlock()
}

// retire records that runID finished and drops the oldest finished runs beyond the bound.
func (s *Store) retire(runID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.finished = append(s.finished, runID)
	for len(s.finished) > s.max {
		delete(s.runs, s.finished[0])
		s.finished[0] = ""
		s.finished = s.finished[1:]
	}
}

// Events returns the events of runID with Seq > after, in a new slice the caller owns.
func (s *Store) Events(ctx context.Context, runID string, after int64) ([]troupe.Event, error) {
	l, err := s.find(runID)
	if err != nil {
		return nil, err
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	after = max(after, 0)
	if after >= int64(len(l.entries)) {
		return nil, nil
	}
	out := make([]troupe.Event, int64(len(l.entries))-after)
	l.read(runID, after, out)
	return out, nil
}

// EventsInto is Events into dst, for a reader that reads a log in steps and would otherwise
// allocate a slice at every step: it copies the events of runID with Seq > after, as many as
// dst holds, and returns how many it copied. Fewer than len(dst) means it reached the log's end.
func (s *Store) EventsInto(runID string, after int64, dst []troupe.Event) (int, error) {
	l, err := s.find(runID)
	if err != nil {
		return 0, err
	}
	return l.EventsInto(runID, after, dst), nil
}

// EventsInto is Store.EventsInto on this log, which it reads whether or not the store still
// keeps it. runID is the run's id: a log does not keep it, its events get it from here.
func (l *Log) EventsInto(runID string, after int64, dst []troupe.Event) int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.read(runID, max(after, 0), dst)
}

// find returns the log of runID, or ErrRunNotFound.
func (s *Store) find(runID string) (*Log, error) {
	if l := s.log(runID, false); l != nil {
		return l, nil
	}
	return nil, fmt.Errorf("memory: run %q: %w", runID, troupe.ErrRunNotFound)
}

// read rebuilds the events with Seq > after into dst, as many as it holds, and says how many;
// the caller holds l.mu.
func (l *Log) read(runID string, after int64, dst []troupe.Event) int {
	n := 0
	for i := int(after); i < len(l.entries) && n < len(dst); i++ {
		dst[n] = l.event(runID, i)
		n++
	}
	return n
}

// Runs returns the ids of every run in the store, sorted.
func (s *Store) Runs() []string {
	s.mu.RLock()
	ids := slices.Collect(maps.Keys(s.runs))
	s.mu.RUnlock()
	slices.Sort(ids)
	return ids
}
