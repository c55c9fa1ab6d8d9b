package engine_test

import (
	"context"
	"encoding/json"
	"maps"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/engine"
	"github.com/troupehq/troupe/flow"
	"github.com/troupehq/troupe/troupetest"
)

// planResults returns the results of the plan's dispatches by agent, leaving nested ones out.
func planResults(evs []troupe.Event) map[string][]*troupe.Result {
	out := map[string][]*troupe.Result{}
	for _, ev := range evs {
		if r, ok := ev.Data.(*troupe.Result); ok && ev.Parent == "" {
			out[r.AgentName] = append(out[r.AgentName], r)
		}
	}
	return out
}

var (
	tutorInput = json.RawMessage(`{
		"type": "object",
		"required": ["topic", "learner_level"],
		"properties": {
			"topic": {"type": "string", "minLength": 1},
			"learner_level": {"enum": ["beginner", "intermediate", "advanced"]},
			"specific_question": {"type": ["string", "null"]}
		}
	}`)
	tutorOutput = json.RawMessage(`{
		"type": "object",
		"required": ["explanation", "key_points", "next_action"],
		"properties": {
			"explanation": {"type": "string"},
			"key_points": {"type": "array", "items": {"type": "string"}},
			"next_action": {"enum": ["quiz", "continue_explaining", "ask_question"]}
		}
	}`)
)

// tutorAgent explains the topic for the learner's level; broken returns a next_action outside 003's
// enumeration and key points that are not strings.
func tutorAgent(broken bool, ran *atomic.Int32) troupe.Agent {
	return troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		ran.Add(1)
		topic, level := d.ParsedQuery["topic"].(string), d.ParsedQuery["learner_level"].(string)
		out := map[string]any{
			"explanation": "A " + level + " introduction to " + topic,
			"key_points":  []string{topic + " basics"},
			"next_action": "quiz",
		}
		if broken {
			out["next_action"], out["key_points"] = "dance", []any{topic, 3}
		}
		return &troupe.Result{AgentResult: out}, nil
	})
}

// 003's typed contracts: the engine checks the dispatch input before the agent runs and the
// agent_result after; violations follow 003's error contract and are recorded, never accepted.
func TestSchemaContracts(t *testing.T) {
	tests := []struct {
		name     string
		parsed   map[string]any
		broken   bool
		wantRan  int32
		wantCode string
		wantErrs []any
	}{
		{"valid", map[string]any{"topic": "fractions", "learner_level": "beginner"}, false, 1, "", nil},
		{"invalid input", map[string]any{"topic": "", "learner_level": "expert"}, false, 0, troupe.CodeInvalidInput, []any{
			map[string]any{"path": "/learner_level", "message": "value must be one of 'beginner', 'intermediate', 'advanced'"},
			map[string]any{"path": "/topic", "message": "minLength: got 0, want 1"},
		}},
		{"invalid output", map[string]any{"topic": "fractions", "learner_level": "beginner"}, true, 1, troupe.CodeInvalidOutput, []any{
			map[string]any{"path": "/key_points/1", "message": "got number, want string"},
			map[string]any{"path": "/next_action", "message": "value must be one of 'quiz', 'continue_explaining', 'ask_question'"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ran atomic.Int32
			reg := agents(t, "tutor", opt(tutorAgent(tt.broken, &ran), troupe.InputSchema(tutorInput), troupe.OutputSchema(tutorOutput)))
			eng := newEngine(t, engine.Config{Registry: reg, Planner: chain("tutor")})
			evs := run(t, eng, troupe.Request{Query: "explain fractions", ParsedQuery: tt.parsed})
			res := planResults(evs)["tutor"][0]
			if ran.Load() != tt.wantRan {
				t.Errorf("agent ran %d times, want %d", ran.Load(), tt.wantRan)
			}
			if tt.wantCode == "" {
				if res.Status != troupe.StatusCompleted {
					t.Fatalf("status %s: %+v", res.Status, res.Errors)
				}
				return
			}
			if res.Status != troupe.StatusFailed || len(res.Errors) != 1 || res.Errors[0].Code != tt.wantCode {
				t.Fatalf("result %s %+v, want failed %s", res.Status, res.Errors, tt.wantCode)
			}
			if diff := cmp.Diff(tt.wantErrs, res.Errors[0].Details["validation_errors"]); diff != "" {
				t.Errorf("validation errors (-want +got):\n%s", diff)
			}
			if tt.broken && res.AgentResult["next_action"] != "dance" {
				t.Errorf("the invalid output is not kept in the result: %v", res.AgentResult)
			}
			if tt.wantCode == troupe.CodeInvalidInput && res.Errors[0].FallbackAction != "ask the user to clarify" {
				t.Errorf("fallback %q", res.Errors[0].FallbackAction)
			}
			if o := outcome(t, evs); o.Status != troupe.RunFailed {
				t.Errorf("run %s, want failed (fail fast)", o.Status)
			}
		})
	}
}

func TestSchemaConfigErrors(t *testing.T) {
	a := troupetest.NewScript(troupetest.OK(map[string]any{"x": 1}))
	for name, o := range map[string]troupe.Option{
		"input":  troupe.InputSchema(json.RawMessage(`{"type": "objekt"}`)),
		"output": troupe.OutputSchema(json.RawMessage(`{`)),
	} {
		reg := troupe.NewRegistry().MustAdd("tutor", a, o)
		_, err := engine.New(engine.Config{Registry: reg})
		if err == nil || !strings.Contains(err.Error(), "engine: config: agent tutor: "+name+" schema: ") {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}

// 003's STATE_MISSING: tutor reads learner_level, which only diagnostic writes; the error says
// to run diagnostic first, and the coordinator's fallback does that.
func TestStateMissingRoutesToDiagnostic(t *testing.T) {
	var tutorRan atomic.Int32
	tut := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		tutorRan.Add(1)
		return &troupe.Result{AgentResult: map[string]any{"explanation": "x"}}, nil
	})
	diagnostic := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{AgentResult: map[string]any{"diagnostic_complete": true, "learner_level": "beginner"}}, nil
	})
	reg := agents(t,
		"tutor", opt(tut, troupe.Reads("learner_level")),
		"diagnostic", opt(diagnostic, troupe.Writes("diagnostic_complete", "learner_level")))
	pol := troupe.ErrorPolicy{OnError: troupe.Fallback, FallbackAgents: map[string][]string{"tutor": {"diagnostic"}}}
	eng := newEngine(t, engine.Config{Registry: reg, Planner: chain("tutor"), Policy: pol})
	evs := run(t, eng, troupe.Request{Query: "explain fractions"})
	rs := planResults(evs)
	miss := rs["tutor"][0]
	if miss.Status != troupe.StatusFailed || miss.Errors[0].Code != troupe.CodeStateMissing || miss.Errors[0].FallbackAction != "run diagnostic first" {
		t.Fatalf("tutor: %s %+v", miss.Status, miss.Errors)
	}
	if tutorRan.Load() != 0 {
		t.Error("tutor ran without its state")
	}
	if len(rs["diagnostic"]) != 1 || !rs["diagnostic"][0].Succeeded() {
		t.Fatalf("the fallback did not run diagnostic: %v", rs)
	}
	o := outcome(t, evs)
	if o.Status != troupe.RunCompleted || o.Fallback["tutor"] != "diagnostic" {
		t.Errorf("outcome %+v", o)
	}
	if got := troupetest.Find(evs, troupe.KindStateDelta, "diagnostic"); len(got) != 1 {
		t.Errorf("diagnostic's writes: %d state_delta events", len(got))
	}
}

func TestTokenBudget(t *testing.T) {
	spend := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{AgentResult: map[string]any{"ok": true}, TokensUsed: troupe.Ptr[int64](400)}, nil
	})
	reg := agents(t, "a", spend, "b", spend, "c", spend, "d", spend)
	eng := newEngine(t, engine.Config{Registry: reg, Planner: chain("a", "b", "c", "d")})
	evs := run(t, eng, troupe.Request{Query: "q", Budget: troupe.Budget{MaxTokens: 1000}})
	// 400, 800: under budget; c starts at 800 and brings it to 1,200; d never starts.
	if n := len(troupetest.Find(evs, troupe.KindDispatchStarted, "")); n != 3 {
		t.Errorf("%d dispatches, want 3", n)
	}
	w := troupetest.Find(evs, troupe.KindBudgetExhausted, "")
	if len(w) != 1 || !strings.Contains(w[0].Data.(*troupe.Warning).Message, "token budget of 1000 spent (1200)") {
		t.Fatalf("budget events: %v", w)
	}
	if o := outcome(t, evs); !cmp.Equal(o.Skipped, []string{"d"}) {
		t.Errorf("skipped %v", o.Skipped)
	}
	if _, err := eng.Start(t.Context(), troupe.Request{Query: "q", Budget: troupe.Budget{MaxTokens: -1}}); err == nil {
		t.Error("negative token budget accepted")
	}
	if _, err := engine.New(engine.Config{Registry: reg, MaxTokens: -1}); err == nil {
		t.Error("negative MaxTokens accepted")
	}

	// A composite's result carries its members' tokens; the run counts them once, not again
	// for the nested results: 600 of 1,000, so the next agent still starts.
	use := func(n int64) troupe.Agent {
		return troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
			return &troupe.Result{AgentResult: map[string]any{"ok": true}, TokensUsed: &n}, nil
		})
	}
	seq := flow.Sequential(flow.SequentialConfig{}, flow.Named("m1", use(300)), flow.Named("m2", use(300)))
	eng = newEngine(t, engine.Config{Registry: agents(t, "seq", seq, "next", use(1)), Planner: chain("seq", "next")})
	evs = run(t, eng, troupe.Request{Query: "q", Budget: troupe.Budget{MaxTokens: 1000}})
	if rs := planResults(evs); *rs["seq"][0].TokensUsed != 600 || len(rs["next"]) != 1 {
		t.Errorf("composite tokens %d, next ran %d times; want 600 and 1", *rs["seq"][0].TokensUsed, len(rs["next"]))
	}
}

// foldState rebuilds session state from a log: the request's initial state, then every
// state_delta of the plan's dispatches, in order. Nested deltas are a composite's own business:
// what of them reaches session state, the composite's declared writes record.
func foldState(evs []troupe.Event) map[string]any {
	var st map[string]any
	for _, ev := range evs {
		switch d := ev.Data.(type) {
		case *troupe.RunStart:
			st = maps.Clone(d.Request.State)
		case *troupe.StateDelta:
			if ev.Parent != "" {
				continue
			}
			if st == nil {
				st = map[string]any{}
			}
			maps.Copy(st, d.Set)
		}
	}
	return st
}

func TestSessionStateIsAFoldOverTheLog(t *testing.T) {
	diag := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{AgentResult: map[string]any{"learner_level": "beginner", "scratch": 1}}, nil
	})
	// A composite whose members write "explanation" and "draft"; it declares only explanation.
	writer := func(k, v string) troupe.Agent {
		return troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
			level, _ := d.State("learner_level")
			return &troupe.Result{AgentResult: map[string]any{k: v + " for a " + level.(string)}}, nil
		})
	}
	lesson := flow.Sequential(flow.SequentialConfig{},
		flow.Named("drafter", writer("draft", "draft"), troupe.Writes("draft")),
		flow.Named("explainer", writer("explanation", "lesson"), troupe.Writes("explanation")))
	reg := agents(t,
		"diagnostic", opt(diag, troupe.Writes("learner_level")),
		"lesson", opt(lesson, troupe.Reads("learner_level"), troupe.Writes("explanation")))
	eng := newEngine(t, engine.Config{Registry: reg, Planner: chain("diagnostic", "lesson")})
	r, err := eng.Start(t.Context(), troupe.Request{Query: "teach me", State: map[string]any{"topic": "fractions"}})
	if err != nil {
		t.Fatal(err)
	}
	<-r.Done()
	evs, err := eng.Store().Events(t.Context(), r.ID(), 0)
	if err != nil {
		t.Fatal(err)
	}
	troupetest.CheckLog(t, evs)
	want := map[string]any{"topic": "fractions", "learner_level": "beginner", "explanation": "lesson for a beginner"}
	if diff := cmp.Diff(want, r.State().SessionState); diff != "" {
		t.Errorf("run state (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(r.State().SessionState, foldState(evs)); diff != "" {
		t.Errorf("fold over the log differs from the run's state (-run +fold):\n%s", diff)
	}
	// At every point, too: the fold up to the lesson's start has no explanation yet.
	for i, ev := range evs {
		if ev.Kind == troupe.KindDispatchStarted && ev.Agent == "lesson" {
			if _, ok := foldState(evs[:i])["explanation"]; ok {
				t.Error("explanation in state before the lesson ran")
			}
		}
	}
	nested := 0
	for _, ev := range evs {
		if ev.Kind == troupe.KindStateDelta && ev.Parent != "" {
			nested++
		}
	}
	if nested != 2 {
		t.Errorf("%d nested state deltas, want 2 (drafter, explainer)", nested)
	}
}

// A member of a composite that asks a human pauses the run; resumed with the answer, the
// composite runs again, and takes the result its first member recorded before the pause
// instead of running that member twice. The nested events of the first attempt are not taken
// for the plan's: the composite's own dispatch is run, not answered from the log.
func TestResumeWithNestedEvents(t *testing.T) {
	var prepared atomic.Int32
	prep := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		prepared.Add(1)
		return &troupe.Result{AgentResult: map[string]any{"draft": "v1"}}, nil
	})
	approve := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		a, err := d.Ask(ctx, troupe.Question{Prompt: "publish the draft?"})
		if err != nil {
			return nil, err
		}
		return &troupe.Result{AgentResult: map[string]any{"published": a.Approved}}, nil
	})
	review := flow.Sequential(flow.SequentialConfig{}, flow.Named("prep", prep), flow.Named("approve", approve))
	reg := agents(t, "review", opt(review, troupe.Writes("published")))
	eng := newEngine(t, engine.Config{Registry: reg, Planner: chain("review")})
	evs := run(t, eng, troupe.Request{Query: "q", RunID: "run_nested"})
	o := outcome(t, evs)
	if o.Status != troupe.RunPaused || len(o.Questions) != 1 {
		t.Fatalf("outcome %+v, want paused on one question", o)
	}
	nestedDone := 0
	for _, ev := range evs {
		if ev.Kind == troupe.KindDispatchCompleted && ev.Parent != "" {
			nestedDone++
		}
	}
	if nestedDone != 1 || len(planResults(evs)["review"]) != 0 {
		t.Fatalf("before the pause: %d nested completions (want prep's), plan results %v", nestedDone, planResults(evs))
	}
	r, err := eng.Resume(t.Context(), "run_nested", engine.ResumeOptions{Answers: []troupe.Answer{{QuestionID: o.Questions[0].ID, Approved: true}}})
	if err != nil {
		t.Fatal(err)
	}
	<-r.Done()
	all, _ := eng.Store().Events(t.Context(), "run_nested", 0)
	troupetest.CheckLog(t, all)
	if k := troupetest.Last(all).Kind; k != troupe.KindRunCompleted {
		t.Fatalf("resumed run ended %s", k)
	}
	if got := r.State().SessionState["published"]; got != true {
		t.Errorf("published = %v", got)
	}
	if prepared.Load() != 1 {
		t.Errorf("prep ran %d times, want 1 (its recorded result is taken on resume)", prepared.Load())
	}
	if n := len(troupetest.Find(all, troupe.KindDispatchStarted, "prep")); n != 1 {
		t.Errorf("%d prep dispatches in the log, want 1", n)
	}
	// approve ran again (it had not finished), and its question kept its id.
	if n := len(troupetest.Find(all, troupe.KindDispatchStarted, "approve")); n != 2 {
		t.Errorf("%d approve dispatches in the log, want 2", n)
	}
	if diff := cmp.Diff(r.State().SessionState, foldState(all)); diff != "" {
		t.Errorf("fold over the resumed log (-run +fold):\n%s", diff)
	}
}

// Two members of a composite ask, each pausing the run in turn. On the second resume the first
// member's result comes from the log (it is neither run nor asked again), and the answer given
// goes to the second member's question: question ids belong to the nested dispatch that asked,
// so taking a member from the log shifts no other member's question.
func TestResumeNestedQuestionsKeepTheirIDs(t *testing.T) {
	var firstRuns atomic.Int32
	asker := func(name string, count *atomic.Int32) troupe.Agent {
		return troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
			if count != nil {
				count.Add(1)
			}
			a, err := d.Ask(ctx, troupe.Question{Prompt: name + "?"})
			if err != nil {
				return nil, err
			}
			return &troupe.Result{AgentResult: map[string]any{name: a.Text}}, nil
		})
	}
	seq := flow.Sequential(flow.SequentialConfig{}, flow.Named("first", asker("first", &firstRuns)), flow.Named("second", asker("second", nil)))
	reg := agents(t, "both", opt(seq, troupe.Writes("first", "second")))
	eng := newEngine(t, engine.Config{Registry: reg, Planner: chain("both")})
	evs := run(t, eng, troupe.Request{Query: "q", RunID: "run_two_questions"})
	paused := func(evs []troupe.Event) troupe.Question {
		t.Helper()
		o := outcome(t, evs)
		if o.Status != troupe.RunPaused || len(o.Questions) != 1 {
			t.Fatalf("outcome %+v, want paused on one question", o)
		}
		return o.Questions[0]
	}
	q1 := paused(evs)
	resume := func(a troupe.Answer) []troupe.Event {
		t.Helper()
		r, err := eng.Resume(t.Context(), "run_two_questions", engine.ResumeOptions{Answers: []troupe.Answer{a}})
		if err != nil {
			t.Fatal(err)
		}
		<-r.Done()
		all, _ := eng.Store().Events(t.Context(), "run_two_questions", 0)
		return all
	}
	q2 := paused(resume(troupe.Answer{QuestionID: q1.ID, Text: "one"}))
	if q1.Agent != "first" || q2.Agent != "second" || q1.ID == q2.ID || q1.DispatchID == q2.DispatchID {
		t.Fatalf("questions %+v and %+v: want one from each member, each named after its own dispatch", q1, q2)
	}
	all := resume(troupe.Answer{QuestionID: q2.ID, Text: "two"})
	troupetest.CheckLog(t, all)
	if k := troupetest.Last(all).Kind; k != troupe.KindRunCompleted {
		t.Fatalf("resumed run ended %s", k)
	}
	if n := firstRuns.Load(); n != 2 {
		t.Errorf("first ran %d times, want 2 (paused, then answered; then taken from the log)", n)
	}
	got := planResults(all)["both"][0].AgentResult
	if got["first"] != "one" || got["second"] != "two" {
		t.Errorf("composite result %v: each member must get its own answer", got)
	}
}

// A member whose input comes out differently when its composite runs again is run again: a
// recorded result is taken only for the very dispatch the log holds.
func TestResumeRunsMemberWithChangedInput(t *testing.T) {
	var firstCalls, secondCalls atomic.Int32
	counting := func(n *atomic.Int32) troupe.Agent {
		return troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
			n.Add(1)
			return &troupe.Result{AgentResult: map[string]any{"seen": d.Query}}, nil
		})
	}
	gate := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		if _, err := d.Ask(ctx, troupe.Question{Prompt: "go on?"}); err != nil {
			return nil, err
		}
		return &troupe.Result{AgentResult: map[string]any{"done": true}}, nil
	})
	note := "before" // outside the log: what the transform adds to each handoff
	seq := flow.Sequential(flow.SequentialConfig{Transform: func(h flow.Handoff) flow.Handoff {
		h.CustomFields = map[string]any{"note": note}
		return h
	}}, flow.Named("first", counting(&firstCalls)), flow.Named("second", counting(&secondCalls)), flow.Named("gate", gate))
	eng := newEngine(t, engine.Config{Registry: agents(t, "seq", seq), Planner: chain("seq")})
	o := outcome(t, run(t, eng, troupe.Request{Query: "q", RunID: "run_changed"}))
	if o.Status != troupe.RunPaused {
		t.Fatalf("outcome %+v, want paused", o)
	}
	note = "after" // second's handoff from first, and so its input, now differs
	r, err := eng.Resume(t.Context(), "run_changed", engine.ResumeOptions{Answers: []troupe.Answer{{QuestionID: o.Questions[0].ID, Approved: true}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	if f, s := firstCalls.Load(), secondCalls.Load(); f != 1 || s != 2 {
		t.Errorf("first ran %d times, second %d: want first taken from the log (same input) and second run again (its input changed)", f, s)
	}
}
