package engine_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/engine"
	"github.com/troupehq/troupe/store/memory"
	"github.com/troupehq/troupe/troupetest"
)

// The mark the engine adds to a result recorded while the run is cancelled never writes into
// the agent's own result (its Errors slice or a Details map it shares across calls), and a mark
// the agent made up is removed from what the log records, not from the agent's map.
func TestReviewMarkDoesNotWriteIntoAgentResult(t *testing.T) {
	details := map[string]any{"why": "upstream", "run_cancelled": "made up"}
	shared := &troupe.Result{Status: troupe.StatusCancelled, Errors: make([]troupe.ErrorInfo, 1, 4)}
	shared.Errors[0] = troupe.ErrorInfo{Code: troupe.CodeCancelled, Message: "remote task cancelled", Details: details}
	entered := make(chan struct{}, 2)
	a := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		entered <- struct{}{}
		if d.TargetAgent == "late" {
			<-ctx.Done()
		}
		return shared, nil
	})
	reg := agents(t, "early", a, "late", a)
	pol := troupe.ErrorPolicy{OnError: troupe.Continue}
	eng := newEngine(t, engine.Config{Registry: reg, Planner: staticPlan(&troupe.Plan{Stages: []troupe.PlanStage{stage(1, "early"), stage(1, "late")}}), Policy: pol})
	ctx, cancel := context.WithCancel(t.Context())
	r, err := eng.Start(ctx, troupe.Request{Query: "q"})
	if err != nil {
		t.Fatal(err)
	}
	<-entered
	<-entered
	cancel()
	r.Wait(t.Context())
	if len(details) != 2 || details["run_cancelled"] != "made up" || len(shared.Errors) != 1 || cap(shared.Errors) != 4 {
		t.Errorf("the agent's result was written into: %+v", shared.Errors)
	}
	if ext := shared.Errors[:2]; ext[1].Code != "" {
		t.Errorf("the engine appended into the agent's Errors backing array: %+v", ext[1])
	}
	evs, _ := eng.Store().Events(t.Context(), r.ID(), 0)
	res := results(evs)
	if e := res["early"][0].Errors[0]; e.Details["run_cancelled"] != nil || e.Details["why"] != "upstream" {
		t.Errorf("early, recorded before the cancel, keeps the made-up mark or loses its details: %v", e.Details)
	}
	if e := res["late"][0].Errors[0]; e.Details["run_cancelled"] == nil || e.Details["run_cancelled"] == "made up" {
		t.Errorf("late, recorded while cancelling, has details %v", e.Details)
	}
}

// The mark survives a JSON round trip of the log (a durable store): resumed from the decoded
// log cut after the first cancelled dispatch, the run ends cancelled with the same cause.
func TestReviewMarkSurvivesJSONLog(t *testing.T) {
	g := newGate()
	reg := agents(t, "a", g.agent(), "b", g.agent(), "c", troupetest.NewScript(troupetest.OK(map[string]any{"c": 1})))
	plan := &troupe.Plan{Stages: []troupe.PlanStage{stage(2, "a", "b"), stage(1, "c")}}
	pol := troupe.ErrorPolicy{OnError: troupe.FailFast}
	eng := newEngine(t, engine.Config{Registry: reg, Planner: staticPlan(plan), Policy: pol})
	ctx, cancel := context.WithCancelCause(t.Context())
	r, err := eng.Start(ctx, troupe.Request{Query: "q"})
	if err != nil {
		t.Fatal(err)
	}
	<-g.entered
	<-g.entered
	cancel(context.Canceled)
	r.Wait(t.Context())
	evs, _ := eng.Store().Events(t.Context(), r.ID(), 0)
	cut := memory.New()
	for _, ev := range evs {
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		var back troupe.Event
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if err := cut.Append(t.Context(), back); err != nil {
			t.Fatal(err)
		}
		if ev.Kind == troupe.KindDispatchFailed {
			break
		}
	}
	r2, err := newEngine(t, engine.Config{Registry: reg, Planner: staticPlan(plan), Policy: pol, Store: cut}).Resume(t.Context(), r.ID(), engine.ResumeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r2.Wait(t.Context())
	got, _ := cut.Events(t.Context(), r.ID(), 0)
	troupetest.CheckFinishedLog(t, got)
	if o, want := outcome(t, got), outcome(t, evs); o.Status != troupe.RunCancelled || o.Error == nil || o.Error.Message != want.Error.Message {
		t.Errorf("resumed from a JSON log: %s %+v, want %s %+v", o.Status, o.Error, want.Status, want.Error)
	}
}
