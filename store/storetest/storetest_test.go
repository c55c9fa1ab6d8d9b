package storetest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/store/storetest"
)

// jsonStore is the suite's reference store: it keeps each event as JSON, as a durable store
// does, gives times back in another zone at microsecond precision, as PostgreSQL does, applies
// a batch whole or not at all and honours a done context. The suite must pass against it: that
// is what shows the suite asks for the contract and not for the memory store's habits.
type jsonStore struct {
	mu   sync.Mutex
	runs map[string][][]byte
}

var zone = time.FixedZone("UTC+5:30", 5*3600+1800)

func (s *jsonStore) Append(ctx context.Context, events ...troupe.Event) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("jsonstore: append: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	next := map[string]int64{}
	encoded := make([][]byte, len(events))
	for i, ev := range events {
		n, ok := next[ev.RunID]
		if !ok {
			n = int64(len(s.runs[ev.RunID])) + 1
		}
		if ev.Seq != n {
			return fmt.Errorf("jsonstore: append %s: seq %d, want %d: %w", ev.RunID, ev.Seq, n, troupe.ErrSeqConflict)
		}
		next[ev.RunID] = n + 1
		b, err := json.Marshal(ev)
		if err != nil {
			return fmt.Errorf("jsonstore: append %s#%d: %w", ev.RunID, ev.Seq, err)
		}
		encoded[i] = b
	}
	for i, ev := range events {
		s.runs[ev.RunID] = append(s.runs[ev.RunID], encoded[i])
	}
	return nil
}

func (s *jsonStore) Events(ctx context.Context, runID string, after int64) ([]troupe.Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("jsonstore: events: %w", err)
	}
	s.mu.Lock()
	log, ok := s.runs[runID]
	s.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("jsonstore: run %q: %w", runID, troupe.ErrRunNotFound)
	}
	after = max(after, 0)
	if after >= int64(len(log)) {
		return nil, nil
	}
	out := make([]troupe.Event, 0, int64(len(log))-after)
	for _, b := range log[after:] {
		var ev troupe.Event
		if err := json.Unmarshal(b, &ev); err != nil {
			return nil, fmt.Errorf("jsonstore: run %q: %w", runID, err)
		}
		ev.Time = ev.Time.Truncate(time.Microsecond).In(zone)
		out = append(out, ev)
	}
	return out, nil
}

func TestReferenceStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) troupe.Store { return &jsonStore{runs: map[string][][]byte{}} })
}
