package troupetest_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/troupetest"
)

// ev is one event of a test log; seqs and the run id are filled in by logOf.
type ev struct {
	stage troupe.Stage
	kind  troupe.Kind
	id    string // dispatch id
	trace string // "" means the run's
}

func logOf(evs ...ev) []troupe.Event {
	out := make([]troupe.Event, len(evs))
	for i, e := range evs {
		trace := e.trace
		if trace == "" {
			trace = "trace-1"
		}
		c := troupe.NewContext(trace, "")
		out[i] = troupe.Event{RunID: "run-1", Seq: int64(i + 1), Stage: e.stage, Kind: e.kind, DispatchID: e.id, Context: &c}
	}
	return out
}

var (
	initEv    = ev{stage: troupe.StageInitialize, kind: troupe.KindRunInitialized}
	planEv    = ev{stage: troupe.StagePlan, kind: troupe.KindPlanCreated}
	doneEv    = ev{stage: troupe.StageComplete, kind: troupe.KindRunCompleted}
	pausedEv  = ev{stage: troupe.StagePaused, kind: troupe.KindRunPaused}
	resumedEv = ev{stage: troupe.StageInitialize, kind: troupe.KindRunResumed}
)

func started(id string) ev {
	return ev{stage: troupe.StageExecute, kind: troupe.KindDispatchStarted, id: id}
}
func completed(id string) ev {
	return ev{stage: troupe.StageExecute, kind: troupe.KindDispatchCompleted, id: id}
}
func failed(id string) ev {
	return ev{stage: troupe.StageExecute, kind: troupe.KindDispatchFailed, id: id}
}

func TestLogProblems(t *testing.T) {
	tests := []struct {
		name string
		log  []troupe.Event
		want []string // a substring of each problem, in order; none means a clean log
	}{
		{"clean", logOf(initEv, planEv, started("d1"), started("d2"), failed("d2"), completed("d1"), doneEv), nil},
		{"paused with a dispatch waiting", logOf(initEv, started("d1"), pausedEv), nil},
		{"resumed after a pause", logOf(initEv, started("d1"), pausedEv, resumedEv, completed("d1"), doneEv), nil},
		{"cut short", logOf(initEv, started("d1")), nil},
		{"empty", nil, []string{"empty log"}},
		{"event after the terminal one", logOf(initEv, doneEv, planEv), []string{"follows terminal event 2"}},
		{"dispatch never answered", logOf(initEv, started("d1"), started("d2"), completed("d2"), doneEv),
			[]string{`dispatch "d1" started at event 2 has no dispatch_completed or dispatch_failed`}},
		{"dispatch answered twice", logOf(initEv, started("d1"), completed("d1"), failed("d1"), doneEv),
			[]string{`event 4 (dispatch_failed) answers dispatch "d1", which is not running`}},
		{"answer without a start", logOf(initEv, completed("d1"), doneEv),
			[]string{`event 2 (dispatch_completed) answers dispatch "d1", which is not running`}},
		// A dispatch that failed (a member that paused for a human) may be made again under its
		// id; one that completed may not: it would run finished work twice.
		{"failed dispatch made again", logOf(initEv, started("d1"), failed("d1"), started("d1"), completed("d1"), doneEv), nil},
		{"completed dispatch started again", logOf(initEv, started("d1"), completed("d1"), started("d1"), completed("d1"), doneEv),
			[]string{`event 4 starts dispatch "d1" again, completed at event 3`}},
		{"dispatch started twice", logOf(initEv, started("d1"), started("d1"), completed("d1"), doneEv),
			[]string{`event 3 starts dispatch "d1" again`}},
		// A terminal kind at another stage ends the run all the same, and is wrong.
		{"a run_failed at stage execute, then more", logOf(initEv, ev{stage: troupe.StageExecute, kind: troupe.KindRunFailed}, planEv, doneEv),
			[]string{"event 2 is run_failed at stage execute", "event 3 (plan_created) follows terminal event 2", "event 4 (run_completed) follows terminal event 2"}},
		{"a terminal stage with another kind", logOf(initEv, ev{stage: troupe.StageComplete, kind: troupe.KindRunFailed}),
			[]string{"event 2 is run_failed at stage complete"}},
		{"another trace id", logOf(initEv, ev{stage: troupe.StagePlan, kind: troupe.KindPlanCreated, trace: "trace-2"}, doneEv),
			[]string{`event 2 (plan_created) has trace id "trace-2", want the run's "trace-1"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := troupetest.LogProblems(tt.log)
			if len(got) != len(tt.want) {
				t.Fatalf("LogProblems = %q, want %d problems like %q", got, len(tt.want), tt.want)
			}
			for i, w := range tt.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("problem %d = %q, want it to say %q", i, got[i], w)
				}
			}
		})
	}
}

// A stopped run's log ends in exactly one terminal event, or in run_paused; CheckLog's own
// findings come first.
func TestFinishedLogProblems(t *testing.T) {
	failedEv := ev{stage: troupe.StageFailed, kind: troupe.KindRunFailed}
	cancelledEv := ev{stage: troupe.StageCancelled, kind: troupe.KindRunCancelled}
	tests := []struct {
		name string
		log  []troupe.Event
		want []string
	}{
		{"completed", logOf(initEv, planEv, started("d1"), completed("d1"), doneEv), nil},
		{"failed", logOf(initEv, started("d1"), failed("d1"), failedEv), nil},
		{"cancelled", logOf(initEv, cancelledEv), nil},
		{"paused with a dispatch waiting", logOf(initEv, started("d1"), pausedEv), nil},
		{"resumed then completed", logOf(initEv, started("d1"), pausedEv, resumedEv, completed("d1"), doneEv), nil},
		{"resumed then paused again", logOf(initEv, pausedEv, resumedEv, pausedEv), nil},
		{"cut short", logOf(initEv, started("d1")), []string{"log ends in event 2 (execute dispatch_started), want a terminal event"}},
		{"resumed and stopped", logOf(initEv, pausedEv, resumedEv), []string{"log ends in event 3 (initialize run_resumed)"}},
		{"two terminal events", logOf(initEv, doneEv, failedEv), []string{"event 3 (run_failed) follows terminal event 2"}},
		{"terminal stage, other kind", logOf(initEv, ev{stage: troupe.StageComplete, kind: troupe.KindRunAggregated}),
			[]string{"event 2 is run_aggregated at stage complete", "log ends in event 2 at stage complete with kind run_aggregated, want run_completed"}},
		{"empty", nil, []string{"empty log"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := troupetest.FinishedLogProblems(tt.log)
			if len(got) != len(tt.want) {
				t.Fatalf("FinishedLogProblems = %q, want %d problems like %q", got, len(tt.want), tt.want)
			}
			for i, w := range tt.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("problem %d = %q, want it to say %q", i, got[i], w)
				}
			}
			if len(tt.want) == 0 && len(troupetest.LogProblems(tt.log)) != 0 {
				t.Errorf("LogProblems finds problems in a finished log: %q", troupetest.LogProblems(tt.log))
			}
		})
	}
}

// A Script is safe for concurrent use: every call is counted and answered by its own step.
func TestScriptConcurrent(t *testing.T) {
	s := troupetest.NewScript(troupetest.Fail("boom", true), troupetest.OK(map[string]any{"n": 1.0}))
	const n = 64
	var wg sync.WaitGroup
	var mu sync.Mutex
	fails := 0
	for range n {
		wg.Go(func() {
			_, err := s.Run(context.Background(), &troupe.Dispatch{})
			if err != nil {
				mu.Lock()
				fails++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if s.Calls() != n || fails != 1 {
		t.Errorf("Calls() = %d with %d failures, want %d calls, 1 failure", s.Calls(), fails, n)
	}
}
