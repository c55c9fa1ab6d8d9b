package engine_test

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/engine"
	"github.com/troupehq/troupe/executor/local"
	"github.com/troupehq/troupe/flow"
	"github.com/troupehq/troupe/store/memory"
	"github.com/troupehq/troupe/troupetest"
)

// Two reviews a paused run waits on, answered on resume: r1's rejected, r2's approved. r1's
// fallback, fb, asks a question at once. The answered reviews are recorded one after another
// before anything new starts (README), so r2's result frees its place in the stage before fb
// can pause the run, and late starts there, on every resume. fb started beside r2's review,
// and pausing the run before r2's result was recorded (here: r2's review job held until fb
// asked) kept late from starting: late ran or not as goroutines fell (about 1 resume in 40
// unheld, under -cpu 1,2,4).
func TestRejectedReviewFallbackWaitsForQueuedReviews(t *testing.T) {
	reviewed := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{AgentResult: map[string]any{"ok": true}, RequiresHuman: true}, nil
	})
	asker := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		if _, err := d.Ask(ctx, troupe.Question{Prompt: "which way?"}); err != nil {
			return nil, err
		}
		return &troupe.Result{AgentResult: map[string]any{"asked": true}}, nil
	})
	var lateRan atomic.Int32
	late := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		lateRan.Add(1)
		return &troupe.Result{AgentResult: map[string]any{"late": true}}, nil
	})
	pol := troupe.ErrorPolicy{OnError: troupe.Fallback, FallbackAgents: map[string][]string{"r1": {"fb"}}}
	cfg := engine.Config{Registry: agents(t, "r1", reviewed, "r2", reviewed, "late", late, "fb", asker),
		Planner: group(2, "r1", "r2", "late"), Store: memory.New(), Policy: pol}
	id, paused := runToEnd(t, cfg, troupe.Request{Query: "q"})
	out := outcomeOf(paused)
	if out == nil || out.Status != troupe.RunPaused || len(out.Questions) != 2 {
		t.Fatalf("the run ended with %+v; want paused on the two reviews", out)
	}
	var answers []troupe.Answer
	for _, q := range out.Questions {
		answers = append(answers, troupe.Answer{QuestionID: q.ID, Approved: q.Agent != "r1"})
	}
	for _, held := range []bool{false, true} {
		cut := &gateStore{Store: logUpTo(t, cfg.Store, id, recordedAs(troupe.KindRunPaused, ""))}
		c := cfg
		c.Store = cut
		if held {
			// The review jobs after r1's (r2's) wait for fb's question, or 200 ms: with the
			// fix, fb cannot ask before r2's review is recorded.
			c.Executor = heldExecutor{Executor: local.New(local.Config{}), release: cut.recorded(troupe.KindHumanAsked, "fb"), bound: 200 * time.Millisecond,
				hold: after(1, func(j troupe.Job) bool { return fmt.Sprintf("%T", j) == "*engine.reviewJob" })}
		}
		lateRan.Store(0)
		r, err := newEngine(t, c).Resume(t.Context(), id, engine.ResumeOptions{Answers: answers})
		if err != nil {
			t.Fatal(err)
		}
		r.Wait(t.Context())
		evs, _ := cut.Events(t.Context(), id, 0)
		troupetest.CheckLog(t, evs)
		if got := finalResult(t, evs, "r2"); got.Status != troupe.StatusCompleted {
			t.Fatalf("held %v: r2 ended %s", held, got.Status)
		}
		if lateRan.Load() != 1 {
			t.Errorf("held %v: late ran %d times; want once, in the place r2's review freed before fb asked\n%s", held, lateRan.Load(), dumpLog(evs))
		}
	}
}

// A member the log shows paused for a human, which a run resumed with neither the answer nor
// anyone to ask refuses as waiting still (endedWaiting), is reported by its composite with the
// error it paused with then, not the runtime's refusal: a first_success group another branch
// of which wins warns of the paused sequence as it did without the crash ("…: wrapped: troupe:
// run paused …"), not "…: troupe: run paused …". Found by TestResumeProperty -prop.seed 27,
// case 1332 looped.
func TestResumedWaitingMemberKeepsItsPauseError(t *testing.T) {
	var gate atomic.Pointer[gateStore]
	m0 := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		if _, err := d.Ask(ctx, troupe.Question{Prompt: "which way?"}); err != nil {
			return nil, fmt.Errorf("wrapped: %w", err)
		}
		return &troupe.Result{AgentResult: map[string]any{"m0": true}}, nil
	})
	slow := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		<-gate.Load().recorded(troupe.KindDispatchFailed, "seq") // the sequence has paused
		return &troupe.Result{AgentResult: map[string]any{"slow": true}}, nil
	})
	seq := flow.Sequential(flow.SequentialConfig{}, flow.Named("m0", m0))
	team := flow.Parallel(flow.ParallelConfig{Strategy: flow.FirstSuccess}, flow.Named("seq", seq), flow.Named("slow", slow))
	st := &gateStore{Store: memory.New()}
	gate.Store(st)
	cfg := engine.Config{Registry: agents(t, "team", team), Planner: group(1, "team"), Store: st}
	id, ref := runToEnd(t, cfg, troupe.Request{Query: "q"})
	want := aggregation(t, ref).Warnings
	cut := &gateStore{Store: logUpTo(t, st, id, func(ev troupe.Event) bool { return ev.Kind == troupe.KindDispatchFailed && ev.Agent == "m0" })}
	gate.Store(cut)
	c := cfg
	c.Store = cut
	r, err := newEngine(t, c).Resume(t.Context(), id, engine.ResumeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r.Wait(t.Context())
	evs, _ := cut.Events(t.Context(), id, 0)
	troupetest.CheckFinishedLog(t, evs)
	if got := aggregation(t, evs).Warnings; !slices.Equal(got, want) {
		t.Errorf("resumed run warns %q; want %q, as without the crash", got, want)
	}
}
