package engine_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/engine"
	"github.com/troupehq/troupe/flow"
	"github.com/troupehq/troupe/store/memory"
	"github.com/troupehq/troupe/troupetest"
)

// A composite resumed from a log that records one of its members failing takes that failure as
// recorded: the member, which would succeed if tried again, is not called, the composite comes
// to the outcome the run that made the log came to, and the log holds one result for the
// member's dispatch.
func TestResumeTakesARecordedMemberFailure(t *testing.T) {
	composites := map[string]func(...*troupe.AgentSpec) troupe.Agent{
		"sequential continue on error": func(m ...*troupe.AgentSpec) troupe.Agent {
			return flow.Sequential(flow.SequentialConfig{OnError: flow.ContinueOnError}, m...)
		},
		"parallel first success": func(m ...*troupe.AgentSpec) troupe.Agent {
			return flow.Parallel(flow.ParallelConfig{Strategy: flow.FirstSuccess, MaxConcurrent: 1}, m...)
		},
		"parallel collect all": func(m ...*troupe.AgentSpec) troupe.Agent {
			return flow.Parallel(flow.ParallelConfig{Strategy: flow.CollectAll, MaxConcurrent: 1}, m...)
		},
	}
	for name, compose := range composites {
		t.Run(name, func(t *testing.T) {
			// flaky fails the first time it is ever called, and succeeds after: the outage it
			// met is over by the time the run is resumed. Each engine gets agents of its own,
			// which count their calls afresh.
			var recovered atomic.Bool
			setup := func() (*troupe.Registry, *troupetest.Script) {
				flaky := troupetest.NewScript(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
					if recovered.Swap(true) {
						return troupetest.OK(map[string]any{"flaky": true})(ctx, d)
					}
					return troupetest.Fail("FLAKY", true)(ctx, d)
				})
				steady := troupetest.NewScript(troupetest.OK(map[string]any{"steady": true}))
				reg := troupe.NewRegistry()
				reg.MustAdd("team", compose(flow.Named("flaky", flaky), flow.Named("steady", steady)))
				return reg, flaky
			}
			plan := chain("team")
			reg, _ := setup()
			want := run(t, newEngine(t, engine.Config{Registry: reg, Planner: plan}), troupe.Request{Query: "q", RunID: "run_flaky"})
			failed := troupetest.Find(want, troupe.KindDispatchFailed, "flaky")
			if len(failed) != 1 || failed[0].Parent == "" {
				t.Fatalf("the uninterrupted run recorded %d nested failures of flaky, want 1", len(failed))
			}
			cut := 0
			for i, ev := range want {
				if ev.Seq == failed[0].Seq {
					cut = i + 1
				}
			}

			mem := memory.New()
			if err := mem.Append(t.Context(), want[:cut]...); err != nil {
				t.Fatal(err)
			}
			reg, flaky := setup()
			r, err := newEngine(t, engine.Config{Registry: reg, Planner: plan, Store: mem}).Resume(t.Context(), "run_flaky", engine.ResumeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := r.Wait(t.Context()); err != nil {
				t.Fatalf("resumed run: %v", err)
			}
			all, _ := mem.Events(t.Context(), "run_flaky", 0)
			troupetest.CheckFinishedLog(t, all)
			if n := flaky.Calls(); n != 0 {
				t.Errorf("flaky ran %d times on resume; its failure was in the log", n)
			}
			id := failed[0].DispatchID
			n := 0
			for _, ev := range all {
				if ev.DispatchID == id && (ev.Kind == troupe.KindDispatchCompleted || ev.Kind == troupe.KindDispatchFailed) {
					n++
				}
			}
			if n != 1 {
				t.Errorf("the log holds %d results of flaky's dispatch %s, want 1", n, id)
			}
			if got, want := teamResult(t, all), teamResult(t, want); got != want {
				t.Errorf("resumed team result:\n%s\nthe uninterrupted run's:\n%s", got, want)
			}
		})
	}
}

// teamResult is the planned team dispatch's result in evs, as JSON, without its timings.
func teamResult(t *testing.T, evs []troupe.Event) string {
	t.Helper()
	var rs []*troupe.Result
	for _, ev := range troupetest.Find(evs, troupe.KindDispatchCompleted, "team") {
		if ev.Parent == "" {
			rs = append(rs, ev.Data.(*troupe.Result))
		}
	}
	for _, ev := range troupetest.Find(evs, troupe.KindDispatchFailed, "team") {
		if ev.Parent == "" {
			rs = append(rs, ev.Data.(*troupe.Result))
		}
	}
	if len(rs) != 1 {
		t.Fatalf("the log holds %d results of team, want 1", len(rs))
	}
	b, err := json.Marshal(struct {
		Status   troupe.Status
		Result   map[string]any
		Errors   []troupe.ErrorInfo
		Warnings any
	}{rs[0].Status, rs[0].AgentResult, rs[0].Errors, rs[0].Warnings})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
