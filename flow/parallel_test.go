package flow_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/flow"
)

// fizzbuzz is a coder: each implements FizzBuzz its own way; buggy swaps the divisors.
func fizzbuzz(style string, buggy bool) troupe.Agent {
	return troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		n := int(d.ParsedQuery["n"].(float64))
		three, five := 3, 5
		if buggy {
			three, five = 5, 3
		}
		var out []string
		for i := 1; i <= n; i++ {
			switch {
			case i%(three*five) == 0:
				out = append(out, "FizzBuzz")
			case i%three == 0:
				out = append(out, "Fizz")
			case i%five == 0:
				out = append(out, "Buzz")
			default:
				out = append(out, strconv.Itoa(i))
			}
		}
		return &troupe.Result{AgentResult: map[string]any{"output": strings.Join(out, " "), "language": style}}, nil
	})
}

func output(r *troupe.Result) string { return r.AgentResult["output"].(string) }

// 002's example: three coders implement FizzBuzz in parallel; the majority's answer wins.
func TestParallelMajorityVoteThreeCoders(t *testing.T) {
	group := flow.Parallel(flow.ParallelConfig{Strategy: flow.MajorityVote, Answer: output},
		flow.Named("python", fizzbuzz("python", false)),
		flow.Named("haskell", fizzbuzz("haskell", true)),
		flow.Named("rust", fizzbuzz("rust", false)))
	d := troupe.NewDispatch()
	d.Query, d.ParsedQuery = "Implement FizzBuzz", map[string]any{"n": 15.0}
	out, err := group.Execute(t.Context(), d)
	if err != nil {
		t.Fatal(err)
	}
	const right = "1 2 Fizz 4 Buzz Fizz 7 8 Fizz Buzz 11 Fizz 13 14 FizzBuzz"
	if out.Vote.Answer != right || out.Vote.Tie {
		t.Errorf("vote = %+v, want %q", out.Vote, right)
	}
	if diff := cmp.Diff([]string{"python", "rust"}, out.Vote.Voters[right]); diff != "" {
		t.Errorf("voters (-want +got):\n%s", diff)
	}
	for i, name := range []string{"python", "haskell", "rust"} {
		if out.Results[i].AgentName != name {
			t.Errorf("result %d is %s, want %s (agent order)", i, out.Results[i].AgentName, name)
		}
	}
	res, err := group.Run(t.Context(), d)
	if err != nil || res.AgentResult["answer"] != right || res.AgentResult["votes"].(map[string]int)[right] != 2 {
		t.Errorf("Run = %v, %v", res.AgentResult, err)
	}
}

func TestParallelMajorityVoteTieIsReported(t *testing.T) {
	group := flow.Parallel(flow.ParallelConfig{Strategy: flow.MajorityVote, Answer: output},
		flow.Named("right", fizzbuzz("go", false)), flow.Named("wrong", fizzbuzz("go", true)))
	d := troupe.NewDispatch()
	d.ParsedQuery = map[string]any{"n": 5.0}
	out, err := group.Execute(t.Context(), d)
	var tie *flow.TieError
	if !errors.As(err, &tie) || !out.Vote.Tie || out.Vote.Answer != "" || len(out.Vote.Tied) != 2 {
		t.Fatalf("err = %v, vote = %+v; want a reported tie", err, out.Vote)
	}
	var ae *troupe.AgentError
	if !errors.As(err, &ae) || ae.Code != flow.CodeVoteTie {
		t.Errorf("agent error = %v, want %s", ae, flow.CodeVoteTie)
	}
}

// Coders that write their code to session state: the outvoted coder's write does not count
// (it lost, as FirstSuccess's losers do), so a majority is not turned into a conflict; and a
// tie is reported as a tie even when the tied coders' writes conflict too.
func TestParallelMajorityVoteWrites(t *testing.T) {
	coder := func(name string, buggy bool) *troupe.AgentSpec {
		return flow.Named(name, troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
			res, err := fizzbuzz(name, buggy).Run(ctx, d)
			if err == nil {
				res.AgentResult["code"] = output(res)
			}
			return res, err
		}), troupe.Writes("code"))
	}
	d := troupe.NewDispatch()
	d.ParsedQuery = map[string]any{"n": 5.0}
	const right = "1 2 Fizz 4 Buzz"

	out, err := flow.Parallel(flow.ParallelConfig{Strategy: flow.MajorityVote, Answer: output},
		coder("python", false), coder("haskell", true), coder("rust", false)).Execute(t.Context(), d)
	if err != nil {
		t.Fatalf("a 2-1 majority: err = %v", err)
	}
	if diff := cmp.Diff(map[string]any{"code": right}, out.State); diff != "" || out.Conflicts != nil {
		t.Errorf("state (-want +got):\n%s\nconflicts %v", diff, out.Conflicts)
	}

	out, err = flow.Parallel(flow.ParallelConfig{Strategy: flow.MajorityVote, Answer: output},
		coder("python", false), coder("haskell", true)).Execute(t.Context(), d)
	var tie *flow.TieError
	var ce *flow.ConflictError
	if !errors.As(err, &tie) || !out.Vote.Tie {
		t.Errorf("a 1-1 tie: err = %v, want a TieError", err)
	}
	if !errors.As(err, &ce) || len(out.Conflicts) != 1 || out.State != nil {
		t.Errorf("a 1-1 tie: err = %v, conflicts %v, state %v; want the conflict on code reported too", err, out.Conflicts, out.State)
	}
	if info := troupe.ErrorInfoOf(err); info.Code != flow.CodeVoteTie {
		t.Errorf("code %s, want %s", info.Code, flow.CodeVoteTie)
	}
}

func TestParallelResultsInAgentOrder(t *testing.T) {
	// Branch i finishes only after branch i+1: completion order is the reverse of agent order.
	const n = 5
	done := make([]chan struct{}, n+1)
	for i := range done {
		done[i] = make(chan struct{})
	}
	close(done[n])
	var specs []*troupe.AgentSpec
	var order []string
	var mu = make(chan struct{}, 1)
	for i := range n {
		name := "a" + strconv.Itoa(i)
		specs = append(specs, flow.Named(name, troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
			<-done[i+1]
			mu <- struct{}{}
			order = append(order, name)
			<-mu
			defer close(done[i])
			if i == 2 {
				return nil, errors.New("branch 2 fails")
			}
			return &troupe.Result{AgentResult: map[string]any{"i": i}}, nil
		})))
	}
	out, err := flow.Parallel(flow.ParallelConfig{}, specs...).Execute(t.Context(), troupe.NewDispatch())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a4", "a3", "a2", "a1", "a0"}, order); diff != "" {
		t.Errorf("completion order (-want +got):\n%s", diff)
	}
	for i, r := range out.Results {
		if r.AgentName != "a"+strconv.Itoa(i) {
			t.Errorf("result %d is %s", i, r.AgentName)
		}
		if want := i != 2; r.Succeeded() != want {
			t.Errorf("result %d succeeded = %v, want %v: one failure does not touch the others", i, r.Succeeded(), want)
		}
	}
}

// TestParallelPausedErrorInAgentOrder: a group whose branches all pause for a human returns
// the first branch's pause, in agent order, whichever paused last: a run resumed from its log,
// whose branches pause in another order, reports the same error as the run that made it.
func TestParallelPausedErrorInAgentOrder(t *testing.T) {
	for _, strategy := range []flow.Strategy{flow.CollectAll, flow.FirstSuccess} {
		t.Run(strategy.String(), func(t *testing.T) {
			// a0 pauses first; a1 only once a0 has returned.
			a0Done := make(chan struct{})
			a0 := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
				defer close(a0Done)
				return nil, fmt.Errorf("%w: a0's question", troupe.ErrPaused)
			})
			a1 := troupe.AgentFunc(func(ctx context.Context, _ *troupe.Dispatch) (*troupe.Result, error) {
				<-a0Done
				return nil, fmt.Errorf("delegate: %w: a1's question", troupe.ErrPaused)
			})
			_, err := flow.Parallel(flow.ParallelConfig{Strategy: strategy}, flow.Named("a0", a0), flow.Named("a1", a1)).Execute(t.Context(), troupe.NewDispatch())
			if !errors.Is(err, troupe.ErrPaused) || !strings.Contains(err.Error(), "a0's question") {
				t.Errorf("err = %v; want a0's pause, the first branch's", err)
			}
		})
	}
}

// TestParallelResultNamesFailedBranches: a group that succeeds although a branch failed says
// so in its own result, not only in the branch's nested events.
func TestParallelResultNamesFailedBranches(t *testing.T) {
	good := flow.Named("good", troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{AgentResult: map[string]any{"ok": true}}, nil
	}))
	bad := flow.Named("bad", troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		return nil, errors.New("disk full")
	}))
	slow := flow.Named("slow", troupe.AgentFunc(func(ctx context.Context, _ *troupe.Dispatch) (*troupe.Result, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}), troupe.WithTimeout(10*time.Millisecond))
	res, err := flow.Parallel(flow.ParallelConfig{}, good, bad, slow).Run(t.Context(), troupe.NewDispatch())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"bad: failed: disk full", "slow: timeout"}
	if diff := cmp.Diff(want, res.Warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
}

func TestParallelFirstSuccessCancelsTheRest(t *testing.T) {
	var cancelled atomic.Int32
	started := make(chan struct{}, 4)
	blocker := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		started <- struct{}{}
		<-ctx.Done()
		cancelled.Add(1)
		return nil, ctx.Err()
	})
	fast := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		<-started // both blockers are running when it succeeds
		<-started
		return &troupe.Result{AgentResult: map[string]any{"answer": 42}}, nil
	})
	group := flow.Parallel(flow.ParallelConfig{Strategy: flow.FirstSuccess},
		flow.Named("slow1", blocker), flow.Named("fast", fast), flow.Named("slow2", blocker))
	out, err := group.Execute(t.Context(), troupe.NewDispatch())
	if err != nil {
		t.Fatal(err)
	}
	if out.Winner != 1 || cancelled.Load() != 2 {
		t.Fatalf("winner %d, %d cancelled; want 1 and 2", out.Winner, cancelled.Load())
	}
	for _, i := range []int{0, 2} {
		if r := out.Results[i]; r.Status != troupe.StatusCancelled || !strings.Contains(r.Errors[0].Message, "succeeded first") {
			t.Errorf("branch %d: %s %v", i, r.Status, r.Errors)
		}
	}
	res, err := group.Run(t.Context(), troupe.NewDispatch())
	if err != nil || res.AgentResult["answer"] != 42 || len(res.Warnings) != 0 {
		t.Errorf("Run = %+v, %v; want the answer, and no warning for the branches it cancelled", res, err)
	}

	t.Run("none succeeds", func(t *testing.T) {
		bad := flow.Named("bad", troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
			return nil, &troupe.AgentError{Code: troupe.CodeRAGEmpty, Message: "nothing"}
		}))
		_, err := flow.Parallel(flow.ParallelConfig{Strategy: flow.FirstSuccess}, bad).Execute(t.Context(), troupe.NewDispatch())
		var ae *troupe.AgentError
		if !errors.As(err, &ae) || ae.Code != troupe.CodeRAGEmpty {
			t.Errorf("err = %v, want the failure's code", err)
		}
		var se *flow.StepError
		if !errors.As(err, &se) || se.Agent != "bad" || se.Step != 1 || se.Cause == nil {
			t.Errorf("err = %v, want a StepError of branch 1 with the agent's error", err)
		}
	})
}

func TestParallelConcurrencyCap(t *testing.T) {
	var running, peak atomic.Int32
	started := make(chan struct{}, 10)
	gate := make(chan struct{})
	var specs []*troupe.AgentSpec
	for i := range 6 {
		specs = append(specs, flow.Named("b"+strconv.Itoa(i), troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
			n := running.Add(1)
			for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
			}
			started <- struct{}{}
			<-gate
			running.Add(-1)
			return &troupe.Result{AgentResult: map[string]any{"ok": true}}, nil
		})))
	}
	errc := make(chan error, 1)
	go func() {
		_, err := flow.Parallel(flow.ParallelConfig{MaxConcurrent: 2}, specs...).Execute(context.Background(), troupe.NewDispatch())
		errc <- err
	}()
	<-started
	<-started
	close(gate)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if p := peak.Load(); p != 2 {
		t.Errorf("peak concurrency %d, want 2", p)
	}
}

func TestParallelBranchesAreIsolatedAndConflictsReported(t *testing.T) {
	// Each branch writes its own key and "verdict"; it reads the other's key, which it must not see.
	branch := func(name, other, verdict string) *troupe.AgentSpec {
		return flow.Named(name, troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
			_, sawOther := d.State(other)
			topic, _ := d.State("topic")
			return &troupe.Result{AgentResult: map[string]any{name: true, "verdict": verdict, "saw_other": sawOther, "topic_seen": topic}}, nil
		}), troupe.Writes(name, "verdict"))
	}
	seed := flow.Named("seed", troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{AgentResult: map[string]any{"topic": "fractions"}}, nil
	}), troupe.Writes("topic"))

	t.Run("agreeing writes merge", func(t *testing.T) {
		group := flow.Parallel(flow.ParallelConfig{}, branch("a", "b", "pass"), branch("b", "a", "pass"))
		out, err := flow.Sequential(flow.SequentialConfig{}, seed, flow.Named("group", group, troupe.Writes("a", "b", "verdict"))).Execute(t.Context(), troupe.NewDispatch())
		if err != nil {
			t.Fatal(err)
		}
		br := out.Results[1].AgentResult["branches"].(map[string]any)
		for _, n := range []string{"a", "b"} {
			r := br[n].(map[string]any)
			if r["saw_other"] != false || r["topic_seen"] != "fractions" {
				t.Errorf("branch %s saw %v", n, r)
			}
		}
		if diff := cmp.Diff(map[string]any{"topic": "fractions", "a": true, "b": true, "verdict": "pass"}, out.State); diff != "" {
			t.Errorf("state (-want +got):\n%s", diff)
		}
	})
	t.Run("different values conflict", func(t *testing.T) {
		group := flow.Parallel(flow.ParallelConfig{}, branch("a", "b", "pass"), branch("b", "a", "fail"))
		out, err := group.Execute(t.Context(), troupe.NewDispatch())
		var ce *flow.ConflictError
		if !errors.As(err, &ce) {
			t.Fatalf("err = %v, want a ConflictError", err)
		}
		want := []flow.StateConflict{{Key: "verdict", Values: []flow.BranchValue{{Agent: "a", Value: "pass"}, {Agent: "b", Value: "fail"}}}}
		if diff := cmp.Diff(want, ce.Conflicts); diff != "" {
			t.Errorf("conflicts (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(map[string]any{"a": true, "b": true}, out.State); diff != "" {
			t.Errorf("merged state keeps the agreeing keys only (-want +got):\n%s", diff)
		}
		_, err = group.Run(t.Context(), troupe.NewDispatch())
		var ae *troupe.AgentError
		if !errors.As(err, &ae) || ae.Code != flow.CodeStateConflict || !strings.Contains(ae.Message, `"verdict" (a="pass", b="fail")`) {
			t.Errorf("Run error = %v", err)
		}
		if !errors.As(err, &ce) {
			t.Errorf("Run error %v is not a ConflictError", err)
		}
	})
}

func TestParallelBadConfig(t *testing.T) {
	a := flow.Named("a", fizzbuzz("go", false))
	for name, cfg := range map[string]flow.ParallelConfig{
		"vote without extractor": {Strategy: flow.MajorityVote},
		"unknown strategy":       {Strategy: 9},
		"negative cap":           {MaxConcurrent: -1},
	} {
		if _, err := flow.Parallel(cfg, a).Execute(t.Context(), troupe.NewDispatch()); err == nil || !strings.HasPrefix(err.Error(), "flow: parallel: ") {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}

// TestParallelFirstSuccessIsNotPausedByALoser: a branch that asks a human does not pause a
// FirstSuccess group another branch has won; the group returns the winner.
func TestParallelFirstSuccessIsNotPausedByALoser(t *testing.T) {
	asked := make(chan struct{})
	asker := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		defer close(asked)
		_, err := d.Ask(ctx, troupe.Question{Prompt: "which one?"}) // no run to ask through: paused
		return nil, err
	})
	winner := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		<-asked
		return &troupe.Result{AgentResult: map[string]any{"answer": 42}}, nil
	})
	out, err := flow.Parallel(flow.ParallelConfig{Strategy: flow.FirstSuccess}, flow.Named("asker", asker), flow.Named("winner", winner)).
		Execute(t.Context(), troupe.NewDispatch())
	if err != nil || out.Winner != 1 {
		t.Errorf("Execute = winner %d, %v; want the winner and no pause", out.Winner, err)
	}
}

// TestParallelShadowedStateWrite: under CollectAll and MajorityVote the group's agent_result
// keeps the strategy's own keys; a branch's state write to one of them is not lost silently.
func TestParallelShadowedStateWrite(t *testing.T) {
	says := func(out map[string]any) troupe.Agent {
		return troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
			return &troupe.Result{AgentResult: out}, nil
		})
	}
	answer := func(r *troupe.Result) string { return r.AgentResult["pick"].(string) }

	t.Run("majority vote", func(t *testing.T) {
		group := flow.Parallel(flow.ParallelConfig{Strategy: flow.MajorityVote, Answer: answer},
			flow.Named("v1", says(map[string]any{"pick": "blue", "answer": "mine"}), troupe.Writes("answer")),
			flow.Named("v2", says(map[string]any{"pick": "blue", "answer": "mine"}), troupe.Writes("answer")),
			flow.Named("v3", says(map[string]any{"pick": "red"})))
		res, err := group.Run(t.Context(), troupe.NewDispatch())
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]any{
			"answer": "blue",
			"votes":  map[string]int{"blue": 2, "red": 1},
			"voters": map[string][]string{"blue": {"v1", "v2"}, "red": {"v3"}},
		}
		if diff := cmp.Diff(want, res.AgentResult); diff != "" {
			t.Errorf("agent_result (-want +got):\n%s", diff)
		}
		wantWarn := []string{`v1, v2: state write "answer" = "mine" is shadowed by the majority_vote group's own "answer"`}
		if diff := cmp.Diff(wantWarn, res.Warnings); diff != "" {
			t.Errorf("warnings (-want +got):\n%s", diff)
		}
		out, err := group.Execute(t.Context(), troupe.NewDispatch())
		if err != nil || out.State["answer"] != "mine" {
			t.Errorf("Execute's State = %v, %v; want the branches' write kept", out.State, err)
		}
	})

	t.Run("collect all", func(t *testing.T) {
		group := flow.Parallel(flow.ParallelConfig{},
			flow.Named("a", says(map[string]any{"branches": 3.0, "x": 1.0}), troupe.Writes("branches", "x")),
			flow.Named("b", says(map[string]any{"y": 2.0})))
		res, err := group.Run(t.Context(), troupe.NewDispatch())
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]any{
			"x": 1.0,
			"branches": map[string]any{
				"a": map[string]any{"branches": 3.0, "x": 1.0},
				"b": map[string]any{"y": 2.0},
			},
		}
		if diff := cmp.Diff(want, res.AgentResult); diff != "" {
			t.Errorf("agent_result (-want +got):\n%s", diff)
		}
		wantWarn := []string{`a: state write "branches" = 3 is shadowed by the collect_all group's own "branches"`}
		if diff := cmp.Diff(wantWarn, res.Warnings); diff != "" {
			t.Errorf("warnings (-want +got):\n%s", diff)
		}
	})

	t.Run("no collision, no warning", func(t *testing.T) {
		res, err := flow.Parallel(flow.ParallelConfig{},
			flow.Named("a", says(map[string]any{"x": 1.0}), troupe.Writes("x"))).Run(t.Context(), troupe.NewDispatch())
		if err != nil || len(res.Warnings) != 0 {
			t.Errorf("Run = %v, %v; want no warning", res.Warnings, err)
		}
	})
}

// refusingRun is a run whose budget refuses the branch named late once proceed is closed.
type refusingRun struct {
	*runLog
	proceed chan struct{}
}

func (r *refusingRun) AdmitDispatch(d *troupe.Dispatch) (bool, error) {
	if d.TargetAgent == "late" {
		<-r.proceed
		return false, fmt.Errorf("%w: token budget of 100 spent (150)", troupe.ErrBudgetExhausted)
	}
	return false, nil
}

// A branch the run refuses for its budget as another branch wins is reported not started, as
// refused, whichever came first: it was reported cancelled by the win when the refusal came
// after it, and a resumed run, taking the win and the refusal in another order, reported the
// group otherwise than the run that made its log.
func TestFirstSuccessReportsRefusalAtWin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var lateRan atomic.Bool
		win := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
			return &troupe.Result{AgentResult: map[string]any{"won": true}}, nil
		})
		late := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
			lateRan.Store(true)
			return &troupe.Result{AgentResult: map[string]any{"late": true}}, nil
		})
		g := flow.Parallel(flow.ParallelConfig{Strategy: flow.FirstSuccess, MaxConcurrent: 2}, flow.Named("win", win), flow.Named("late", late))
		rt := &refusingRun{runLog: &runLog{}, proceed: make(chan struct{})}
		d := troupe.NewDispatch()
		d.DispatchID, d.TargetAgent, d.Query = "disp_00000000000000aa", "team", "q"
		d.Bind(rt)
		var out *flow.ParallelOutcome
		var err error
		done := make(chan struct{})
		go func() {
			defer close(done)
			out, err = g.Execute(t.Context(), d)
		}()
		synctest.Wait() // win has won; late waits to hear it is refused
		close(rt.proceed)
		<-done
		if err != nil || out.Winner != 0 {
			t.Fatalf("Execute: winner %d, %v; want win", out.Winner, err)
		}
		res := out.Results[1]
		if lateRan.Load() || res == nil || res.Status != troupe.StatusFailed || len(res.Errors) == 0 || res.Errors[0].Code != troupe.CodeBudget {
			t.Fatalf("late ran %v, reported %+v; want not started, refused for the budget", lateRan.Load(), res)
		}
	})
}

// TestParallelConfidence: a group reports the least confidence of the branches its answer
// rests on (seed 000's conservative rule, which the run's overall_confidence follows) —
// CollectAll's completed branches, MajorityVote's winning voters (every completed branch on a
// tie), FirstSuccess's winner — over those that report one; none when none does. Failed and
// outvoted branches never count.
func TestParallelConfidence(t *testing.T) {
	tests := []struct {
		name     string
		strategy flow.Strategy
		branches []*troupe.AgentSpec
		want     *float64
		err      bool
	}{
		{"collect all: the least sure branch", flow.CollectAll,
			[]*troupe.AgentSpec{sure("a", troupe.Ptr(0.9), "", false), sure("b", troupe.Ptr(0.4), "", false), sure("c", nil, "", false)}, troupe.Ptr(0.4), false},
		{"collect all: a failed branch's is ignored", flow.CollectAll,
			[]*troupe.AgentSpec{sure("a", troupe.Ptr(0.9), "", false), sure("bad", troupe.Ptr(0.1), "", true), sure("c", troupe.Ptr(0.7), "", false)}, troupe.Ptr(0.7), false},
		{"collect all: no branch reports one", flow.CollectAll,
			[]*troupe.AgentSpec{sure("a", nil, "", false), sure("b", nil, "", false)}, nil, false},
		{"majority vote: the winning voters, not the outvoted", flow.MajorityVote,
			[]*troupe.AgentSpec{sure("x", troupe.Ptr(0.9), "A", false), sure("y", troupe.Ptr(0.8), "A", false), sure("z", troupe.Ptr(0.1), "B", false)}, troupe.Ptr(0.8), false},
		{"majority vote: a failed branch's is ignored", flow.MajorityVote,
			[]*troupe.AgentSpec{sure("x", troupe.Ptr(0.9), "A", false), sure("y", nil, "A", false), sure("bad", troupe.Ptr(0.05), "A", true)}, troupe.Ptr(0.9), false},
		{"majority vote: no voter reports one", flow.MajorityVote,
			[]*troupe.AgentSpec{sure("x", nil, "A", false), sure("y", nil, "A", false), sure("z", troupe.Ptr(0.1), "B", false)}, nil, false},
		{"majority vote tied: every completed branch", flow.MajorityVote,
			[]*troupe.AgentSpec{sure("x", troupe.Ptr(0.9), "A", false), sure("z", troupe.Ptr(0.3), "B", false), sure("bad", troupe.Ptr(0.05), "C", true)}, troupe.Ptr(0.3), true},
		{"first success: the winner's", flow.FirstSuccess,
			[]*troupe.AgentSpec{sure("bad", troupe.Ptr(0.1), "", true), sure("w", troupe.Ptr(0.7), "", false)}, troupe.Ptr(0.7), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := flow.Parallel(flow.ParallelConfig{Strategy: tt.strategy, Answer: output}, tt.branches...).Run(t.Context(), troupe.NewDispatch())
			if (err != nil) != tt.err {
				t.Fatalf("err = %v, want an error: %v", err, tt.err)
			}
			if diff := cmp.Diff(tt.want, res.Confidence); diff != "" {
				t.Errorf("confidence (-want +got):\n%s", diff)
			}
		})
	}
}
