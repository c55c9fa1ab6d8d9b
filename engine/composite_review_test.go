package engine_test

import (
	"context"
	"testing"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/engine"
	"github.com/troupehq/troupe/flow"
	"github.com/troupehq/troupe/store/memory"
	"github.com/troupehq/troupe/troupetest"
)

func TestCompositeReviewThroughConfigHandler(t *testing.T) {
	draft := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{AgentResult: map[string]any{"draft": "v1"}, RequiresHuman: true, TokensUsed: troupe.Ptr(int64(7))}, nil
	})
	other := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{AgentResult: map[string]any{"other": 1}}, nil
	})
	for _, tc := range []struct {
		name     string
		approve  bool
		policy   troupe.ErrorPolicy
		status   troupe.RunStatus
		teamStat troupe.Status
		spare    int
	}{
		{"approved", true, troupe.ErrorPolicy{}, troupe.RunCompleted, troupe.StatusCompleted, 0},
		{"rejected, fail_fast", false, troupe.ErrorPolicy{}, troupe.RunFailed, troupe.StatusFailed, 0},
		{"rejected, continue", false, troupe.ErrorPolicy{OnError: troupe.Continue}, troupe.RunFailed /* min_success_rate: 0 of 1 */, troupe.StatusFailed, 0},
		{"rejected, fallback", false, troupe.ErrorPolicy{OnError: troupe.Fallback, Retry: troupe.RetryPolicy{MaxAttempts: 1}, FallbackAgents: map[string][]string{"team": {"spare"}}},
			troupe.RunCompleted, troupe.StatusFailed, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var qs []troupe.Question
			h := troupe.HumanFunc(func(_ context.Context, q troupe.Question) (troupe.Answer, error) {
				qs = append(qs, q)
				return troupe.Answer{QuestionID: q.ID, Approved: tc.approve, Text: "no"}, nil
			})
			spare := troupetest.NewScript()
			team := flow.Sequential(flow.SequentialConfig{}, flow.Named("other", other), flow.Named("draft", draft))
			eng := newEngine(t, engine.Config{Registry: agents(t, "team", team, "spare", spare), Planner: chain("team"), Human: h, Policy: tc.policy})
			evs := run(t, eng, troupe.Request{Query: "q"})
			if len(qs) != 1 {
				t.Fatalf("asked %d questions; want one review", len(qs))
			}
			q := qs[0]
			if q.Kind != troupe.QuestionReview || q.Agent != "team" || q.Result == nil || q.Result.AgentName != "team" ||
				q.Result.AgentResult["draft"] != "v1" || q.Result.AgentResult["other"] != 1 || !q.Result.RequiresHuman {
				t.Errorf("review question %+v (result %+v); want team's merged result", q, q.Result)
			}
			if d, _ := q.Data.(map[string]any); d["draft"] != "v1" || d["other"] != 1 {
				t.Errorf("review data %v; want the composite's agent_result", q.Data)
			}
			if out := outcome(t, evs); out.Status != tc.status {
				t.Errorf("run %s (%+v); want %s", out.Status, out.Error, tc.status)
			}
			rs := results(evs)["team"]
			got := rs[len(rs)-1]
			if got.Status != tc.teamStat {
				t.Errorf("team %s %v; want %s", got.Status, got.Errors, tc.teamStat)
			}
			if !tc.approve && got.Errors[len(got.Errors)-1].Code != troupe.CodeHumanRejected {
				t.Errorf("team errors %v; want HUMAN_REJECTED last", got.Errors)
			}
			if spare.Calls() != tc.spare {
				t.Errorf("spare ran %d times; want %d", spare.Calls(), tc.spare)
			}
			if tc.approve && tokensOf(got) != 7 {
				t.Errorf("tokens %d", tokensOf(got))
			}
		})
	}
}

// No handler: the run pauses on a review of the composite's result; resumed with a rejection,
// the fallback policy applies.
func TestCompositeReviewPauseThenRejectFallsBack(t *testing.T) {
	draft := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{AgentResult: map[string]any{"draft": "v1"}, RequiresHuman: true}, nil
	})
	team := flow.Parallel(flow.ParallelConfig{}, flow.Named("a", troupetest.NewScript()),
		flow.Named("s", flow.Sequential(flow.SequentialConfig{}, flow.Named("draft", draft))))
	spare := troupetest.NewScript()
	st := memory.New()
	pol := troupe.ErrorPolicy{OnError: troupe.Fallback, Retry: troupe.RetryPolicy{MaxAttempts: 1}, FallbackAgents: map[string][]string{"team": {"spare"}}}
	cfg := engine.Config{Registry: agents(t, "team", team, "spare", spare), Planner: chain("team"), Store: st, Policy: pol}
	id, paused := runToEnd(t, cfg, troupe.Request{Query: "q"})
	out := outcomeOf(paused)
	if out == nil || out.Status != troupe.RunPaused || len(out.Questions) != 1 {
		t.Fatalf("ended %+v; want paused on one review", out)
	}
	q := out.Questions[0]
	br, _ := q.Result.AgentResult["branches"].(map[string]any)
	if q.Kind != troupe.QuestionReview || q.Agent != "team" || q.Result == nil || q.Result.AgentName != "team" || br["s"] == nil {
		t.Errorf("question %+v, result %+v; want a review of team's collect_all result", q, q.Result)
	}
	r, err := newEngine(t, cfg).Resume(t.Context(), id, engine.ResumeOptions{Answers: []troupe.Answer{{QuestionID: q.ID, Approved: false}}})
	if err != nil {
		t.Fatal(err)
	}
	r.Wait(t.Context())
	evs, _ := st.Events(t.Context(), id, 0)
	troupetest.CheckFinishedLog(t, evs)
	if o := outcome(t, evs); o.Status != troupe.RunCompleted {
		t.Errorf("resumed run %s (%+v); want completed by the fallback", o.Status, o.Error)
	}
	if spare.Calls() != 1 {
		t.Errorf("spare ran %d times; want once", spare.Calls())
	}
	got := finalResult(t, evs, "team")
	if got.Status != troupe.StatusFailed || got.Errors[len(got.Errors)-1].Code != troupe.CodeHumanRejected {
		t.Errorf("team %s %v; want failed HUMAN_REJECTED", got.Status, got.Errors)
	}
}
