package engine_test

import (
	"context"
	"errors"
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

	resumed, err := eng.Resume(t.Context(), r.ID(), engine.ResumeOptions{Answers: []troupe.Answer{{QuestionID: q.ID, Text: "decimals"}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := resumed.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	all, _ := store.Events(t.Context(), r.ID(), 0)
	troupetest.CheckLog(t, all)
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
