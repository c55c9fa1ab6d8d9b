package engine_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/engine"
	"github.com/troupehq/troupe/store/memory"
	"github.com/troupehq/troupe/troupetest"
)

// asker asks which topic to teach and returns it.
func asker(calls *atomic.Int64) troupe.Agent {
	return troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		calls.Add(1)
		a, err := d.Ask(ctx, troupe.Question{Prompt: "Which topic?", Options: []string{"fractions", "decimals"}})
		if err != nil {
			return nil, err
		}
		return &troupe.Result{AgentResult: map[string]any{"topic": a.Text}}, nil
	})
}

func TestHumanHandlerAnswers(t *testing.T) {
	var calls atomic.Int64
	var asked troupe.Question
	h := troupe.HumanFunc(func(_ context.Context, q troupe.Question) (troupe.Answer, error) {
		asked = q
		return troupe.Answer{Text: "fractions"}, nil
	})
	eng := newEngine(t, engine.Config{Registry: agents(t, "tutor", asker(&calls)), Planner: chain("tutor")})
	evs := run(t, eng, troupe.Request{Query: "teach me", Human: h})
	if got := results(evs)["tutor"][0].AgentResult["topic"]; got != "fractions" {
		t.Errorf("topic %v", got)
	}
	if asked.ID == "" || asked.Agent != "tutor" || asked.Kind != troupe.QuestionAsk {
		t.Errorf("question %+v", asked)
	}
	kinds := troupetest.Kinds(troupetest.Find(evs, troupe.KindHumanAsked, ""))
	kinds = append(kinds, troupetest.Kinds(troupetest.Find(evs, troupe.KindHumanAnswered, ""))...)
	if !cmp.Equal(kinds, []troupe.Kind{troupe.KindHumanAsked, troupe.KindHumanAnswered}) {
		t.Errorf("human events %v", kinds)
	}
}

// With no handler the run pauses, records what was asked, and resumes with the answer: the
// agent runs again and gets the recorded answer; what finished before is not run again.
func TestPauseAndResume(t *testing.T) {
	var calls atomic.Int64
	before := troupetest.NewScript()
	store := memory.New()
	reg := agents(t, "diagnostic", before, "tutor", asker(&calls))
	eng := newEngine(t, engine.Config{Registry: reg, Planner: chain("diagnostic", "tutor"), Store: store})
	r, err := eng.Start(t.Context(), troupe.Request{Query: "teach me"})
	if err != nil {
		t.Fatal(err)
	}
	st, err := r.Wait(t.Context())
	if !errors.Is(err, troupe.ErrPaused) || st.Status != troupe.RunPaused {
		t.Fatalf("Wait: %v, status %s; want paused", err, st.Status)
	}
	evs, _ := store.Events(t.Context(), r.ID(), 0)
	last := troupetest.Last(evs)
	out := last.Data.(*troupe.Outcome)
	if last.Kind != troupe.KindRunPaused || len(out.Questions) != 1 || out.Questions[0].Prompt != "Which topic?" {
		t.Fatalf("last event %s %+v", last.Kind, out)
	}
	q := out.Questions[0]

	all := resumeWith(t, eng, store, r.ID(), troupe.Answer{QuestionID: q.ID, Text: "decimals"})
	if got := results(all)["tutor"]; len(got) != 1 || got[0].AgentResult["topic"] != "decimals" {
		t.Errorf("tutor results %+v", got)
	}
	if before.Calls() != 1 {
		t.Errorf("diagnostic ran %d times, want once", before.Calls())
	}
	if calls.Load() != 2 {
		t.Errorf("tutor ran %d times, want twice (asked, then answered)", calls.Load())
	}
	if n := len(troupetest.Find(all, troupe.KindDispatchStarted, "tutor")); n != 1 {
		t.Errorf("tutor's dispatch recorded %d times, want once", n)
	}
	if _, err := eng.Resume(t.Context(), r.ID(), engine.ResumeOptions{}); !errors.Is(err, troupe.ErrRunFinished) {
		t.Errorf("resuming a finished run: %v", err)
	}
}

// A result that requires a human is reviewed: approved stands, rejected fails.
func TestRequiresHumanReview(t *testing.T) {
	needsReview := troupetest.NewScript(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{AgentResult: map[string]any{"deploy": "model-v7"}, RequiresHuman: true, AnalysisSummary: troupe.Ptr("ready to deploy")}, nil
	})
	for _, approve := range []bool{true, false} {
		var q troupe.Question
		h := troupe.HumanFunc(func(_ context.Context, got troupe.Question) (troupe.Answer, error) {
			q = got
			return troupe.Answer{Approved: approve, Text: "looks risky"}, nil
		})
		eng := newEngine(t, engine.Config{Registry: agents(t, "deployer", needsReview), Planner: chain("deployer")})
		evs := run(t, eng, troupe.Request{Query: "q", Human: h})
		r := results(evs)["deployer"][0]
		if q.Kind != troupe.QuestionReview {
			t.Errorf("question %+v, want a review", q)
		}
		if approve && r.Status != troupe.StatusCompleted {
			t.Errorf("approved result %+v", r)
		}
		if !approve && (r.Status != troupe.StatusFailed || r.Errors[0].Code != troupe.CodeHumanRejected) {
			t.Errorf("rejected result %+v", r)
		}
	}
}

// A call that asked a human and then timed out does not leave the run paused on its question.
func TestTimedOutQuestionDoesNotPause(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	asksThenHangs := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		_, _ = d.Ask(ctx, troupe.Question{Prompt: "which?"}) // no handler: the run would pause
		<-release                                            // ignores ctx: only the deadline ends it
		return nil, errors.New("late")
	})
	eng := newEngine(t, engine.Config{Registry: agents(t, "a", opt(asksThenHangs, troupe.WithTimeout(20*time.Millisecond))), Planner: chain("a"),
		Policy: troupe.ErrorPolicy{OnError: troupe.Continue}})
	evs := run(t, eng, troupe.Request{Query: "q"})
	if last := troupetest.Last(evs); last.Kind == troupe.KindRunPaused {
		t.Fatalf("run paused on the question of a call that timed out")
	}
	if r := results(evs)["a"][0]; r.Status != troupe.StatusTimeout {
		t.Errorf("status %s, want timeout", r.Status)
	}
}

// resumeWith resumes a paused run with answers, waits for it, and returns its whole log, checked.
func resumeWith(t *testing.T, eng *engine.Engine, store *memory.Store, runID string, answers ...troupe.Answer) []troupe.Event {
	t.Helper()
	resumed, err := eng.Resume(t.Context(), runID, engine.ResumeOptions{Answers: answers})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := resumed.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	all, _ := store.Events(t.Context(), runID, 0)
	troupetest.CheckLog(t, all)
	return all
}

// deployer returns a new version each time it runs, asking for review of each.
func deployer(calls *atomic.Int64) troupe.Agent {
	return troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		n := calls.Add(1)
		return &troupe.Result{AgentResult: map[string]any{"deploy": fmt.Sprintf("model-v%d", n)}, RequiresHuman: true}, nil
	})
}

// A run paused on a review is resumed with that review's result: the answer applies to what
// the human was shown, and the agent does not run again to make another result.
func TestReviewPauseResumeKeepsResult(t *testing.T) {
	var calls atomic.Int64
	store := memory.New()
	eng := newEngine(t, engine.Config{Registry: agents(t, "deployer", deployer(&calls)), Planner: chain("deployer"), Store: store})
	r, err := eng.Start(t.Context(), troupe.Request{Query: "ship it"})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := r.Wait(t.Context()); !errors.Is(err, troupe.ErrPaused) || st.Status != troupe.RunPaused {
		t.Fatalf("Wait: %v, status %s; want paused", err, st.Status)
	}
	evs, _ := store.Events(t.Context(), r.ID(), 0)
	q := troupetest.Last(evs).Data.(*troupe.Outcome).Questions[0]
	if q.Kind != troupe.QuestionReview || q.Result == nil || q.Result.AgentResult["deploy"] != "model-v1" {
		t.Fatalf("review question %+v", q)
	}

	all := resumeWith(t, eng, store, r.ID(), troupe.Answer{QuestionID: q.ID, Approved: true})
	got := results(all)["deployer"]
	if len(got) != 1 || got[0].Status != troupe.StatusCompleted || got[0].AgentResult["deploy"] != "model-v1" {
		t.Errorf("deployer results %+v, want the reviewed model-v1 completed", got)
	}
	if calls.Load() != 1 {
		t.Errorf("deployer ran %d times, want once", calls.Load())
	}
	if n := len(troupetest.Find(all, troupe.KindHumanAsked, "deployer")); n != 1 {
		t.Errorf("review asked %d times in the log, want once", n)
	}
}

// A human's review does not count against the agent's timeout: the agent returned in time.
func TestReviewOutlastsAgentTimeout(t *testing.T) {
	var calls atomic.Int64
	h := troupe.HumanFunc(func(ctx context.Context, q troupe.Question) (troupe.Answer, error) {
		select {
		case <-time.After(150 * time.Millisecond): // three times the agent's timeout
		case <-ctx.Done():
			return troupe.Answer{}, ctx.Err()
		}
		return troupe.Answer{Approved: true}, nil
	})
	eng := newEngine(t, engine.Config{Registry: agents(t, "deployer", opt(deployer(&calls), troupe.WithTimeout(50*time.Millisecond))), Planner: chain("deployer")})
	evs := run(t, eng, troupe.Request{Query: "ship it", Human: h})
	if r := results(evs)["deployer"][0]; r.Status != troupe.StatusCompleted {
		t.Errorf("status %s %+v, want completed after a slow approval", r.Status, r.Errors)
	}
	if last := troupetest.Last(evs); last.Kind != troupe.KindRunCompleted {
		t.Errorf("run ended %s", last.Kind)
	}
}

// A panic in a result guardrail or in the human-input handler fails that dispatch with the
// panic and its stack, as an agent's panic does; the process and the run go on.
func TestPanicAfterAgentFailsDispatch(t *testing.T) {
	ok := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{AgentResult: map[string]any{"ok": true}, RequiresHuman: true}, nil
	})
	cases := map[string]troupe.Request{
		"guardrail pii": {Query: "q", Human: troupe.HumanFunc(func(context.Context, troupe.Question) (troupe.Answer, error) {
			return troupe.Answer{Approved: true}, nil
		}), Guardrails: []troupe.Guardrail{troupe.GuardrailFuncs{ID: "pii", After: func(context.Context, *troupe.Dispatch, *troupe.Result) troupe.Verdict {
			var m map[string]int
			m["x"]++
			return troupe.Verdict{}
		}}}},
		"the human-input handler": {Query: "q", Human: troupe.HumanFunc(func(context.Context, troupe.Question) (troupe.Answer, error) {
			panic("terminal closed")
		})},
	}
	for who, req := range cases {
		t.Run(who, func(t *testing.T) {
			eng := newEngine(t, engine.Config{Registry: agents(t, "a", ok, "b", troupetest.NewScript()), Planner: chain("a", "b"),
				Policy: troupe.ErrorPolicy{OnError: troupe.Continue}})
			evs := run(t, eng, troupe.Request(req))
			r := results(evs)["a"][0]
			if r.Status != troupe.StatusFailed || len(r.Errors) == 0 || r.Errors[len(r.Errors)-1].Code != troupe.CodePanic {
				t.Fatalf("result %+v, want failed with %s", r, troupe.CodePanic)
			}
			e := r.Errors[len(r.Errors)-1]
			if !strings.HasPrefix(e.Message, who+" panicked") || e.Details["stack"] == "" {
				t.Errorf("error %+v", e)
			}
			if got := results(evs)["b"]; len(got) != 1 { // b meets the same guardrail: only that it ran counts here
				t.Errorf("the run did not go on to b: %d results", len(got))
			}
		})
	}
}

// A handler that panics answering an agent's question fails the dispatch with code PANIC,
// the panic and its stack, naming the handler: the agent that asked did not panic.
func TestHandlerPanicAnsweringAQuestionNamesTheHandler(t *testing.T) {
	var calls atomic.Int64
	h := troupe.HumanFunc(func(context.Context, troupe.Question) (troupe.Answer, error) { panic("terminal closed") })
	eng := newEngine(t, engine.Config{Registry: agents(t, "tutor", asker(&calls)), Planner: chain("tutor"), Human: h})
	evs := run(t, eng, troupe.Request{Query: "teach me"})
	r := results(evs)["tutor"][0]
	if r.Status != troupe.StatusFailed || len(r.Errors) == 0 {
		t.Fatalf("result %+v, want failed", r)
	}
	e := r.Errors[0]
	if e.Code != troupe.CodePanic || e.Details["stack"] == "" || !strings.Contains(e.Message, "the human-input handler panicked answering ") ||
		!strings.HasSuffix(e.Message, ": terminal closed") || strings.Contains(e.Message, "agent panicked") {
		t.Errorf("error %+v, want code %s naming the handler, with the stack", e, troupe.CodePanic)
	}
}

// A paused run's outcome lists as skipped only the planned agents never dispatched: not the
// agent whose question it waits on, which was dispatched and will be again on resume.
func TestPausedOutcomeSkipsOnlyUndispatched(t *testing.T) {
	var calls atomic.Int64
	eng := newEngine(t, engine.Config{Registry: agents(t, "first", troupetest.NewScript(), "tutor", asker(&calls), "later", troupetest.NewScript()),
		Planner: chain("first", "tutor", "later")})
	evs := run(t, eng, troupe.Request{Query: "teach me"})
	out := outcome(t, evs)
	if out.Status != troupe.RunPaused || !cmp.Equal(out.Skipped, []string{"later"}) || len(out.Failed) != 0 {
		t.Errorf("paused outcome %+v, want only later skipped and nothing failed", out)
	}
}

// A result under a human's review is in flight: State, read while the review goes on (and
// rejects the result), does not show it completed, nor read it as the review changes it.
func TestStateDuringReview(t *testing.T) {
	needsReview := troupetest.NewScript(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{AgentResult: map[string]any{"deploy": "v7"}, RequiresHuman: true}, nil
	})
	asked := make(chan struct{})
	h := troupe.HumanFunc(func(context.Context, troupe.Question) (troupe.Answer, error) {
		close(asked)
		return troupe.Answer{Approved: false, Text: "no"}, nil
	})
	eng := newEngine(t, engine.Config{Registry: agents(t, "deployer", needsReview), Planner: chain("deployer")})
	r, err := eng.Start(t.Context(), troupe.Request{Query: "q", Human: h})
	if err != nil {
		t.Fatal(err)
	}
	<-asked
	for ended := false; !ended; runtime.Gosched() {
		select {
		case <-r.Done():
			ended = true
		default:
		}
		if _, ok := r.State().CompletedAgents["deployer"]; ok { // read as the review rejects it
			t.Fatal("a result under review shows as completed")
		}
	}
	if st, _ := r.Wait(t.Context()); st.FailedAgents["deployer"].Errors[0].Code != troupe.CodeHumanRejected {
		t.Errorf("final state %+v, want deployer rejected", st.FailedAgents["deployer"])
	}
}

// A run paused for a question its agent asked shows the agent dispatched and waiting, not
// failed: its state agrees with the run_paused outcome, whose Failed is empty.
func TestPausedAskerIsNotFailedInState(t *testing.T) {
	var calls atomic.Int64
	eng := newEngine(t, engine.Config{Registry: agents(t, "tutor", asker(&calls)), Planner: chain("tutor")})
	r, err := eng.Start(t.Context(), troupe.Request{Query: "teach me"})
	if err != nil {
		t.Fatal(err)
	}
	st, err := r.Wait(t.Context())
	if !errors.Is(err, troupe.ErrPaused) {
		t.Fatalf("Wait: %v, want paused", err)
	}
	if st.Status != troupe.RunPaused || st.DispatchedAgents["tutor"] == nil {
		t.Errorf("state: status %s, dispatched %v; want paused with tutor dispatched", st.Status, slices.Sorted(maps.Keys(st.DispatchedAgents)))
	}
	if res, ok := st.FailedAgents["tutor"]; ok {
		t.Errorf("FailedAgents holds the waiting tutor: %+v", res)
	}
	if len(st.CompletedAgents) != 0 {
		t.Errorf("CompletedAgents = %v, want none", slices.Sorted(maps.Keys(st.CompletedAgents)))
	}
}

// A question is answered once: a resume that brings two answers to the same question is
// refused, as one that answers a question the log already holds an answer to is, rather than
// recording both and leaving the log to say which one the run went by.
func TestResumeRefusesTwoAnswersToOneQuestion(t *testing.T) {
	var calls atomic.Int64
	store := memory.New()
	eng := newEngine(t, engine.Config{Registry: agents(t, "tutor", asker(&calls)), Planner: chain("tutor"), Store: store})
	r, err := eng.Start(t.Context(), troupe.Request{Query: "teach me"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Wait(t.Context()); !errors.Is(err, troupe.ErrPaused) {
		t.Fatalf("Wait: %v, want paused", err)
	}
	evs, _ := store.Events(t.Context(), r.ID(), 0)
	q := troupetest.Last(evs).Data.(*troupe.Outcome).Questions[0]
	_, err = eng.Resume(t.Context(), r.ID(), engine.ResumeOptions{Answers: []troupe.Answer{
		{QuestionID: q.ID, Text: "decimals"}, {QuestionID: q.ID, Text: "fractions"}}})
	if err == nil || !strings.Contains(err.Error(), "answered twice") {
		t.Errorf("Resume with two answers to %s: %v, want a refusal", q.ID, err)
	}
	if after, _ := store.Events(t.Context(), r.ID(), 0); len(after) != len(evs) {
		t.Errorf("the refused resume appended %d events", len(after)-len(evs))
	}
	// The run can still be resumed with one answer.
	all := resumeWith(t, eng, store, r.ID(), troupe.Answer{QuestionID: q.ID, Text: "decimals"})
	if n := len(troupetest.Find(all, troupe.KindHumanAnswered, "")); n != 1 {
		t.Errorf("%d answers recorded, want 1", n)
	}
}

// A resumed run's state says when it first started, and its total execution time, in the state
// and the aggregation, counts its active stretches before the resume too, not the pause.
func TestResumedRunCountsItsWholeActiveTime(t *testing.T) {
	const nap = 40 * time.Millisecond
	sleepy := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		time.Sleep(nap)
		return &troupe.Result{AgentResult: map[string]any{"ok": true}}, nil
	})
	var calls atomic.Int64
	store := memory.New()
	eng := newEngine(t, engine.Config{Registry: agents(t, "pre", sleepy, "tutor", asker(&calls), "post", sleepy),
		Planner: chain("pre", "tutor", "post"), Store: store})
	r, err := eng.Start(t.Context(), troupe.Request{Query: "teach me"})
	if err != nil {
		t.Fatal(err)
	}
	first, err := r.Wait(t.Context())
	if !errors.Is(err, troupe.ErrPaused) {
		t.Fatalf("Wait: %v, want paused", err)
	}
	evs, _ := store.Events(t.Context(), r.ID(), 0)
	q := troupetest.Last(evs).Data.(*troupe.Outcome).Questions[0]
	time.Sleep(nap) // the pause, which the total leaves out
	r2, err := eng.Resume(t.Context(), r.ID(), engine.ResumeOptions{Answers: []troupe.Answer{{QuestionID: q.ID, Text: "fractions"}}})
	if err != nil {
		t.Fatal(err)
	}
	st, err := r2.Wait(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if !st.StartedAt.Equal(first.StartedAt) || !st.StartedAt.Equal(evs[0].Time) {
		t.Errorf("resumed StartedAt %v, want the run's first start %v", st.StartedAt, first.StartedAt)
	}
	if min := (2 * nap).Milliseconds(); st.TotalExecutionTimeMS < min || st.Aggregation.TotalExecutionTimeMS < min {
		t.Errorf("total execution time %d ms (aggregation %d ms), want at least %d: pre and post each took %v",
			st.TotalExecutionTimeMS, st.Aggregation.TotalExecutionTimeMS, min, nap)
	}
	if wall := st.UpdatedAt.Sub(st.StartedAt).Milliseconds(); st.TotalExecutionTimeMS >= wall {
		t.Errorf("total execution time %d ms counts the pause: %d ms from first start to end", st.TotalExecutionTimeMS, wall)
	}
}

// Reviews a resumed run holds the answers to finish one after another, in the order the run
// makes them again, each recorded before the next starts: what they used crosses a budget at
// one point, and a dispatch waiting for a place in their stage is refused or admitted the
// same way on every resume from one log with one set of answers. Two reviews finishing at
// once were recorded in no set order: the cheaper first, the waiting dispatch started in the
// place it left; the dearer first, the budget was spent and it was skipped.
func TestResumedReviewsFinishInOrder(t *testing.T) {
	reviewed := func(cost float64) troupe.Agent {
		return troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
			return &troupe.Result{AgentResult: map[string]any{"ok": true}, RequiresHuman: true, CostDollars: troupe.Ptr(cost)}, nil
		})
	}
	var lateRan atomic.Int32
	late := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		lateRan.Add(1)
		return &troupe.Result{AgentResult: map[string]any{"late": true}}, nil
	})
	st := memory.New()
	cfg := engine.Config{Registry: agents(t, "dear", reviewed(0.1), "cheap", reviewed(0.05), "late", late), Planner: group(2, "dear", "cheap", "late"), Store: st}
	r, err := newEngine(t, cfg).Start(t.Context(), troupe.Request{Query: "q", Budget: troupe.Budget{MaxCostDollars: 0.1}})
	if err != nil {
		t.Fatal(err)
	}
	r.Wait(t.Context())
	paused, _ := st.Events(t.Context(), r.ID(), 0)
	out := outcomeOf(paused)
	if out == nil || out.Status != troupe.RunPaused || len(out.Questions) != 2 {
		t.Fatalf("the run ended with %+v; want paused on the two reviews", out)
	}
	var answers []troupe.Answer
	for _, q := range out.Questions {
		answers = append(answers, troupe.Answer{QuestionID: q.ID, Approved: true})
	}
	for i := range 20 {
		c := cfg
		c.Store = logUpTo(t, st, r.ID(), recordedAs(troupe.KindRunPaused, ""))
		lateRan.Store(0)
		r2, err := newEngine(t, c).Resume(t.Context(), r.ID(), engine.ResumeOptions{Answers: answers})
		if err != nil {
			t.Fatal(err)
		}
		r2.Wait(t.Context())
		evs, _ := c.Store.Events(t.Context(), r.ID(), 0)
		troupetest.CheckFinishedLog(t, evs)
		out2 := outcomeOf(evs)
		var order []string
		for _, ev := range evs {
			if ev.Kind == troupe.KindDispatchCompleted {
				order = append(order, ev.Agent)
			}
		}
		if !slices.Equal(order, []string{"dear", "cheap"}) || lateRan.Load() != 0 || !slices.Equal(out2.Skipped, []string{"late"}) || out2.Budget == "" {
			t.Fatalf("resume %d: completed %v, late ran %d times, skipped %v (budget %q); want dear then cheap, and late skipped for the budget dear spent",
				i, order, lateRan.Load(), out2.Skipped, out2.Budget)
		}
	}
}

// outcomeOf is the outcome the log's last event carries, or nil.
func outcomeOf(evs []troupe.Event) *troupe.Outcome {
	if len(evs) == 0 {
		return nil
	}
	o, _ := evs[len(evs)-1].Data.(*troupe.Outcome)
	return o
}

// A dispatch a resumed run starts anew waits for the reviews it makes again with their
// answers to be recorded: they finish at once, and the dispatch, asking a question at once,
// set the run pausing before or after a review's result freed the place the next dispatch of
// the stage starts in, in no set order. Every resume from one log with one answer now records
// the review, then starts both dispatches, then pauses on the question.
func TestResumedReviewRecordedBeforeNewDispatches(t *testing.T) {
	st := &gateStore{Store: memory.New()}
	first := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		<-st.recorded(troupe.KindHumanAsked, "rev") // the run is pausing: nothing new starts
		return &troupe.Result{AgentResult: map[string]any{"first": true}}, nil
	})
	rev := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{AgentResult: map[string]any{"ok": true}, RequiresHuman: true}, nil
	})
	asker := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		if _, err := d.Ask(ctx, troupe.Question{Prompt: "which way?"}); err != nil {
			return nil, err
		}
		return &troupe.Result{AgentResult: map[string]any{"asked": true}}, nil
	})
	late := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{AgentResult: map[string]any{"late": true}}, nil
	})
	cfg := engine.Config{Registry: agents(t, "first", first, "rev", rev, "asker", asker, "late", late),
		Planner: group(2, "first", "rev", "asker", "late"), Store: st}
	id, paused := runToEnd(t, cfg, troupe.Request{Query: "q"})
	out := outcomeOf(paused)
	if out == nil || out.Status != troupe.RunPaused || len(out.Questions) != 1 || out.Questions[0].Agent != "rev" {
		t.Fatalf("the run ended with %+v; want paused on rev's review alone", out)
	}
	answers := []troupe.Answer{{QuestionID: out.Questions[0].ID, Approved: true}}
	for i := range 20 {
		c := cfg
		c.Store = logUpTo(t, st, id, recordedAs(troupe.KindRunPaused, ""))
		r, err := newEngine(t, c).Resume(t.Context(), id, engine.ResumeOptions{Answers: answers})
		if err != nil {
			t.Fatal(err)
		}
		r.Wait(t.Context())
		evs, _ := c.Store.Events(t.Context(), id, 0)
		troupetest.CheckFinishedLog(t, evs)
		var seen []string
		for _, ev := range evs[len(paused):] {
			switch {
			case ev.Kind == troupe.KindDispatchCompleted && ev.Agent == "rev", ev.Kind == troupe.KindDispatchStarted, ev.Kind == troupe.KindRunPaused:
				seen = append(seen, string(ev.Kind)+" "+ev.Agent)
			}
		}
		want := []string{"dispatch_completed rev", "dispatch_started asker", "dispatch_started late", "run_paused "}
		if !slices.Equal(seen, want) {
			t.Fatalf("resume %d recorded %q; want %q", i, seen, want)
		}
	}
}
