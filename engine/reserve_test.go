package engine_test

import (
	"context"
	"sync"
	"testing"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/engine"
	"github.com/troupehq/troupe/store/memory"
)

// reservingStore is a memory store that records what the engine reserves ahead of appends.
type reservingStore struct {
	*memory.Store
	mu       sync.Mutex
	reserved []int // each Reserve's n, in order
	lenAt    []int // how many events the log held at each Reserve
}

func (s *reservingStore) Reserve(runID string, n int) {
	evs, _ := s.Store.Events(context.Background(), runID, 0)
	s.mu.Lock()
	s.reserved, s.lenAt = append(s.reserved, n), append(s.lenAt, len(evs))
	s.mu.Unlock()
	s.Store.Reserve(runID, n)
}

// The engine reserves room for a run's whole log of the common shape before the events come,
// so the store never grows a log's array (copying all it holds): a chain reserves its first
// transition and then the rest, a group wider than one batch of events all of it at once.
func TestReservationsCoverTheLog(t *testing.T) {
	for _, tc := range []struct {
		name  string
		n     int
		plan  func([]string) *troupe.Plan
		first int // what the first reservation covers
	}{
		{"chain of 10", 10, chainPlan, 4},
		{"group of 3", 3, func(n []string) *troupe.Plan { return groupPlan(n, 3) }, 8},
		{"group of 100", 100, func(n []string) *troupe.Plan { return groupPlan(n, 100) }, 304},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg, names := registry(t, tc.n, troupe.AgentFunc(noop))
			st := &reservingStore{Store: memory.New()}
			eng, err := engine.New(engine.Config{Registry: reg, Store: st, Planner: staticPlan(tc.plan(names))})
			if err != nil {
				t.Fatal(err)
			}
			var events int
			for _, err := range eng.Run(t.Context(), troupe.Request{Query: "reserve"}) {
				if err != nil {
					t.Fatal(err)
				}
				events++
			}
			st.mu.Lock()
			defer st.mu.Unlock()
			if len(st.reserved) == 0 || st.reserved[0] != tc.first || st.lenAt[0] != 0 {
				t.Fatalf("reservations %v at log lengths %v; want %d first, on an empty log", st.reserved, st.lenAt, tc.first)
			}
			// Each reservation is room beyond what the log holds; together they must reach
			// the whole log, or an append grows it.
			room := 0
			for i, n := range st.reserved {
				room = max(room, st.lenAt[i]+n)
			}
			if room < events {
				t.Errorf("reservations %v at log lengths %v leave room for %d events; the run recorded %d", st.reserved, st.lenAt, room, events)
			}
		})
	}
}
