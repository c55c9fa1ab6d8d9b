package memory_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/store/memory"
	"github.com/troupehq/troupe/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) troupe.Store { return memory.New() })
}

func TestConformanceSmallBound(t *testing.T) {
	// The suite reads each run it ends before it ends another, so it must pass with a bound of one.
	storetest.Run(t, func(t *testing.T) troupe.Store { return memory.New(memory.Config{MaxFinishedRuns: 1}) })
}

var t0 = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

func event(run string, seq int64, stage troupe.Stage) troupe.Event {
	kind := troupe.KindWarning
	switch stage {
	case troupe.StageComplete:
		kind = troupe.KindRunCompleted
	case troupe.StageFailed:
		kind = troupe.KindRunFailed
	case troupe.StageCancelled:
		kind = troupe.KindRunCancelled
	case troupe.StagePaused:
		kind = troupe.KindRunPaused
	}
	return troupe.Event{RunID: run, Seq: seq, Time: t0.Add(time.Duration(seq) * time.Second), Stage: stage, Kind: kind,
		Data: &troupe.Warning{Message: fmt.Sprintf("%s#%d", run, seq)}}
}

// start appends the first event of run.
func start(t *testing.T, s *memory.Store, run string) {
	t.Helper()
	if err := s.Append(t.Context(), event(run, 1, troupe.StageInitialize)); err != nil {
		t.Fatal(err)
	}
}

// end appends the next event of run, in stage.
func end(t *testing.T, s *memory.Store, run string, stage troupe.Stage) {
	t.Helper()
	evs, err := s.Events(t.Context(), run, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Append(t.Context(), event(run, int64(len(evs))+1, stage)); err != nil {
		t.Fatal(err)
	}
}

// known reports which of runs the store still has.
func known(t *testing.T, s *memory.Store, runs ...string) []string {
	t.Helper()
	var out []string
	for _, r := range runs {
		_, err := s.Events(t.Context(), r, 0)
		switch {
		case err == nil:
			out = append(out, r)
		case !errors.Is(err, troupe.ErrRunNotFound):
			t.Fatalf("Events(%q) = %v", r, err)
		}
	}
	return out
}

func TestMaxFinishedRuns(t *testing.T) {
	type step struct {
		run   string
		stage troupe.Stage // 0: start the run
	}
	tests := []struct {
		name  string
		max   int
		steps []step
		want  []string // runs kept, sorted
	}{
		{
			name: "oldest finished dropped first",
			max:  2,
			steps: []step{
				{"f1", 0}, {"f2", 0}, {"f3", 0},
				{"f1", troupe.StageComplete}, {"f2", troupe.StageFailed}, {"f3", troupe.StageCancelled},
			},
			want: []string{"f2", "f3"},
		},
		{
			name: "order of finishing, not of starting",
			max:  2,
			steps: []step{
				{"f1", 0}, {"f2", 0}, {"f3", 0},
				{"f2", troupe.StageComplete}, {"f1", troupe.StageComplete}, {"f3", troupe.StageComplete},
			},
			want: []string{"f1", "f3"},
		},
		{
			name: "live and paused runs never dropped",
			max:  1,
			steps: []step{
				{"live1", 0}, {"p", 0}, {"f1", 0}, {"f2", 0}, {"live2", 0},
				{"p", troupe.StagePaused}, {"live1", troupe.StageExecute},
				{"f1", troupe.StageComplete}, {"f2", troupe.StageComplete},
				{"live3", 0}, {"live2", troupe.StageAggregate},
			},
			want: []string{"f2", "live1", "live2", "live3", "p"},
		},
		{
			name: "a paused run that finishes later counts from then",
			max:  1,
			steps: []step{
				{"p", 0}, {"f", 0},
				{"p", troupe.StagePaused}, {"f", troupe.StageComplete}, {"p", troupe.StageInitialize}, {"p", troupe.StageComplete},
			},
			want: []string{"p"},
		},
		{
			// Nothing should follow a terminal event, but the store accepts it; the run is
			// still one finished run, not two.
			name: "a run with two terminal events counts once",
			max:  2,
			steps: []step{
				{"a", 0}, {"b", 0},
				{"a", troupe.StageComplete}, {"b", troupe.StageComplete}, {"b", troupe.StageFailed},
			},
			want: []string{"a", "b"},
		},
		{
			name:  "within the bound nothing is dropped",
			max:   3,
			steps: []step{{"f1", 0}, {"f2", 0}, {"f1", troupe.StageComplete}, {"f2", troupe.StageComplete}},
			want:  []string{"f1", "f2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := memory.New(memory.Config{MaxFinishedRuns: tt.max})
			var runs []string
			for _, st := range tt.steps {
				if st.stage == 0 {
					start(t, s, st.run)
					runs = append(runs, st.run)
				} else {
					end(t, s, st.run, st.stage)
				}
			}
			if diff := cmp.Diff(tt.want, s.Runs()); diff != "" {
				t.Errorf("Runs() (-want +got):\n%s", diff)
			}
			slices.Sort(runs)
			if diff := cmp.Diff(tt.want, known(t, s, runs...)); diff != "" {
				t.Errorf("runs Events knows (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMaxFinishedRunsDefault(t *testing.T) {
	for _, tc := range []struct {
		name string
		new  func() *memory.Store
	}{
		{"New()", func() *memory.Store { return memory.New() }},
		{"zero Config", func() *memory.Store { return memory.New(memory.Config{}) }},
		{"negative", func() *memory.Store { return memory.New(memory.Config{MaxFinishedRuns: -3}) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.new()
			const bound = 100 // Config's documented default
			start(t, s, "live")
			for i := range bound + 2 {
				run := fmt.Sprintf("run-%04d", i)
				start(t, s, run)
				end(t, s, run, troupe.StageComplete)
			}
			if got := len(s.Runs()); got != bound+1 {
				t.Errorf("%d runs kept, want %d finished and one live", got, bound+1)
			}
			last := fmt.Sprintf("run-%04d", bound+1)
			if diff := cmp.Diff([]string{"live", "run-0002", last}, known(t, s, "live", "run-0000", "run-0001", "run-0002", last)); diff != "" {
				t.Errorf("runs kept (-want +got):\n%s", diff)
			}
		})
	}
}

// TestEventsView: what Events returns is a view no later append changes, whether the log
// grows in place (reserved) or moves.
func TestEventsView(t *testing.T) {
	for _, reserve := range []int{0, 100} {
		t.Run(fmt.Sprint("reserve=", reserve), func(t *testing.T) {
			s := memory.New()
			if reserve > 0 {
				s.Reserve("run", reserve)
			}
			var appended []troupe.Event
			add := func(n int) {
				for range n {
					ev := event("run", int64(len(appended))+1, troupe.StageExecute)
					if err := s.Append(t.Context(), ev); err != nil {
						t.Fatal(err)
					}
					appended = append(appended, ev)
				}
			}
			add(3)
			all, err := s.Events(t.Context(), "run", 0)
			if err != nil {
				t.Fatal(err)
			}
			tail, err := s.Events(t.Context(), "run", 1)
			if err != nil {
				t.Fatal(err)
			}
			wantAll, wantTail := slices.Clone(all), slices.Clone(tail)

			add(40)
			if diff := cmp.Diff(wantAll, all); diff != "" {
				t.Errorf("view of Events(0) changed by later appends (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(wantTail, tail); diff != "" {
				t.Errorf("view of Events(1) changed by later appends (-want +got):\n%s", diff)
			}
			// A caller appending to its view does not write into the log.
			_ = append(all, event("run", 99, troupe.StageFailed))
			_ = append(tail, event("run", 99, troupe.StageFailed))
			got, err := s.Events(t.Context(), "run", 0)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(appended, got); diff != "" {
				t.Errorf("log (-want +got):\n%s", diff)
			}
			// Payloads are shared, not copied.
			for i := range got {
				if got[i].Data != appended[i].Data {
					t.Errorf("event %d: payload %p is not the one appended (%p)", i+1, got[i].Data, appended[i].Data)
				}
			}
		})
	}
}

func TestReserve(t *testing.T) {
	const n = 64
	ctx := context.Background()
	logs := func(prefix string) [][]troupe.Event {
		out := make([][]troupe.Event, 2) // AllocsPerRun's warm-up run and the measured one
		for i := range out {
			for seq := int64(1); seq <= n; seq++ {
				out[i] = append(out[i], event(fmt.Sprintf("%s-%d", prefix, i), seq, troupe.StageExecute))
			}
		}
		return out
	}
	appendAll := func(s *memory.Store, logs [][]troupe.Event) float64 {
		i := 0
		return testing.AllocsPerRun(1, func() {
			for _, ev := range logs[i] {
				if err := s.Append(ctx, ev); err != nil {
					panic(err)
				}
			}
			i++
		})
	}

	s := memory.New()
	reserved := logs("reserved")
	for _, l := range reserved {
		s.Reserve(l[0].RunID, n)
	}
	if allocs := appendAll(s, reserved); allocs != 0 {
		t.Errorf("appending %d events to a reserved log allocated %v times, want 0", n, allocs)
	}
	if allocs := appendAll(s, logs("unreserved")); allocs == 0 {
		t.Errorf("appending %d events to an unreserved log did not allocate: the test measures nothing", n)
	}

	t.Run("keeps events", func(t *testing.T) {
		s := memory.New()
		want := []troupe.Event{event("run", 1, troupe.StageInitialize), event("run", 2, troupe.StageExecute)}
		if err := s.Append(t.Context(), want...); err != nil {
			t.Fatal(err)
		}
		s.Reserve("run", 1000)
		s.Reserve("run", 0)
		s.Reserve("run", -1)
		next := event("run", 3, troupe.StageExecute)
		if err := s.Append(t.Context(), next); err != nil {
			t.Fatal(err)
		}
		got, err := s.Events(t.Context(), "run", 0)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(append(want, next), got); diff != "" {
			t.Errorf("log (-want +got):\n%s", diff)
		}
		if err := s.Append(t.Context(), event("run", 3, troupe.StageExecute)); !errors.Is(err, troupe.ErrSeqConflict) {
			t.Errorf("a repeat after Reserve: Append = %v, want ErrSeqConflict", err)
		}
	})

	t.Run("concurrent", func(t *testing.T) {
		s := memory.New()
		start(t, s, "run")
		var wg sync.WaitGroup
		wg.Go(func() {
			for seq := int64(2); seq <= 200; seq++ {
				if err := s.Append(t.Context(), event("run", seq, troupe.StageExecute)); err != nil {
					t.Error(err)
					return
				}
			}
		})
		wg.Go(func() {
			for i := range 200 {
				s.Reserve("run", i%17)
			}
		})
		wg.Go(func() {
			for range 200 {
				evs, err := s.Events(t.Context(), "run", 0)
				if err != nil {
					t.Error(err)
					return
				}
				for i, ev := range evs {
					if ev.Seq != int64(i)+1 {
						t.Errorf("event %d has seq %d", i, ev.Seq)
						return
					}
				}
			}
		})
		wg.Wait()
	})
}

func TestRuns(t *testing.T) {
	s := memory.New()
	if got := s.Runs(); len(got) != 0 {
		t.Errorf("empty store: Runs() = %v", got)
	}
	for _, r := range []string{"c", "a", "b"} {
		start(t, s, r)
	}
	if diff := cmp.Diff([]string{"a", "b", "c"}, s.Runs()); diff != "" {
		t.Errorf("Runs() (-want +got):\n%s", diff)
	}
}

// TestEventsRoundTrip: the log keeps events in a compact form; every field comes back as
// appended, including what the compact form holds apart (a nested event's parent and Context,
// a kind or status troupe does not define, a step beyond int32, a Context other than the
// first event's or none), whether appended one at a time, in one run's batch, or across runs.
func TestEventsRoundTrip(t *testing.T) {
	run := troupe.NewContext("trace", "")
	child := run.Child()
	big := 1 << 40
	if int(int32(big)) == big {
		big = 0 // a 32-bit platform has no step beyond int32
	}
	evs := []troupe.Event{
		{Stage: troupe.StageInitialize, Kind: troupe.KindRunInitialized, Context: &run, Data: &troupe.RunStart{Seed: 7}},
		{Stage: troupe.StageRoute, Kind: troupe.KindRouteDecided, Step: 1, DispatchID: "disp_a", Agent: "a", Context: &run},
		{Stage: troupe.StageExecute, Kind: troupe.KindDispatchCompleted, Step: 1, DispatchID: "disp_a", Agent: "a", Status: troupe.StatusCompleted, Context: &run, Data: &troupe.Result{AgentName: "a"}},
		{Stage: troupe.StageExecute, Kind: troupe.KindAgentProgress, Step: 1, DispatchID: "disp_b", Parent: "disp_a", Agent: "b", Context: &child},
		{Stage: troupe.StageExecute, Kind: "custom_kind", Step: 2, Context: &run},
		{Stage: troupe.StageExecute, Kind: troupe.KindDispatchFailed, Step: 2, Status: "odd_status", Context: &run},
		{Stage: troupe.StageExecute, Kind: troupe.KindWarning, Step: big, Context: &run},
		{Stage: troupe.StageExecute, Kind: troupe.KindWarning, Context: nil},
		{Stage: troupe.Stage(42), Kind: "", Context: &run},
		{Stage: troupe.StageComplete, Kind: troupe.KindRunCompleted, Status: troupe.StatusCompleted, Context: &run},
	}
	// Times the log keeps in nanoseconds (UTC, time.Local, with a monotonic reading) and
	// those it keeps whole (zero, another location, beyond Unix nanoseconds).
	times := []time.Time{t0, time.Now(), {}, t0.In(time.FixedZone("X", 3600)),
		time.Date(2300, 1, 1, 0, 0, 0, 7, time.UTC), t0.Local().Add(time.Nanosecond)}
	for i := range evs {
		evs[i].RunID, evs[i].Seq = "run", int64(i)+1
		evs[i].Time = times[i%len(times)].Add(time.Duration(i) * time.Millisecond)
	}
	check := func(t *testing.T, s *memory.Store) {
		t.Helper()
		got, err := s.Events(t.Context(), "run", 0)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(evs, got, cmp.AllowUnexported(troupe.Context{})); diff != "" {
			t.Errorf("events (-appended +read):\n%s", diff)
		}
		for i := range got {
			if got[i].Context != evs[i].Context || got[i].Data != evs[i].Data {
				t.Errorf("event %d: Context or payload is a copy, not the pointer appended", i+1)
			}
			// cmp compares times with Equal; the location must survive too, and only the
			// monotonic reading may be lost.
			if want := evs[i].Time.Round(0); got[i].Time != want {
				t.Errorf("event %d: time %v (%v), want %v (%v)", i+1, got[i].Time, got[i].Time.Location(), want, want.Location())
			}
		}
		// EventsInto in steps of three reads the same.
		var stepped []troupe.Event
		buf := make([]troupe.Event, 3)
		for {
			n, err := s.EventsInto("run", int64(len(stepped)), buf)
			if err != nil {
				t.Fatal(err)
			}
			stepped = append(stepped, buf[:n]...)
			if n < len(buf) {
				break
			}
		}
		if diff := cmp.Diff(evs, stepped, cmp.AllowUnexported(troupe.Context{})); diff != "" {
			t.Errorf("EventsInto in steps (-appended +read):\n%s", diff)
		}
	}
	t.Run("one at a time", func(t *testing.T) {
		s := memory.New()
		for _, ev := range evs {
			if err := s.Append(t.Context(), ev); err != nil {
				t.Fatal(err)
			}
		}
		check(t, s)
	})
	t.Run("one batch", func(t *testing.T) {
		s := memory.New()
		s.Reserve("run", 4)
		if err := s.Append(t.Context(), evs...); err != nil {
			t.Fatal(err)
		}
		check(t, s)
	})
	t.Run("batch across runs", func(t *testing.T) {
		s := memory.New()
		var mixed []troupe.Event
		for _, ev := range evs {
			other := event("other", ev.Seq, troupe.StageExecute)
			mixed = append(mixed, ev, other)
		}
		if err := s.Append(t.Context(), mixed...); err != nil {
			t.Fatal(err)
		}
		check(t, s)
	})
	if _, err := memory.New().EventsInto("ghost", 0, make([]troupe.Event, 1)); !errors.Is(err, troupe.ErrRunNotFound) {
		t.Errorf("EventsInto of an unknown run = %v, want ErrRunNotFound", err)
	}
}
