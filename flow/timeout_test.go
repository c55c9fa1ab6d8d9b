package flow_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/flow"
)

// runLog is the runtime of a composite's dispatch in a run: it records the nested events and
// questions that reach it, and holds session state.
type runLog struct {
	state map[string]any // never written: read from any goroutine
	n     atomic.Uint64
	mu    sync.Mutex
	evs   []troupe.Event
	asked []troupe.Question
}

func (r *runLog) State(k string) (any, bool) { v, ok := r.state[k]; return v, ok }
func (r *runLog) Progress(string, any)       {}
func (r *runLog) Partial(map[string]any)     {}
func (r *runLog) Ask(_ context.Context, q troupe.Question) (troupe.Answer, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asked = append(r.asked, q)
	return troupe.Answer{QuestionID: q.ID, Text: "yes"}, nil
}
func (r *runLog) Emit(ev troupe.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evs = append(r.evs, ev)
}
func (r *runLog) ExecutionContext() troupe.Context { return troupe.NewContext("trace", "") }
func (r *runLog) NextChild() uint64                { return r.n.Add(1) - 1 }

func (r *runLog) events() []troupe.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.evs)
}

func (r *runLog) questions() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.asked)
}

// inRun returns a composite's dispatch bound to a runLog whose state holds a topic.
func inRun() (*troupe.Dispatch, *runLog) {
	log := &runLog{state: map[string]any{"topic": "fractions"}}
	d := troupe.NewDispatch()
	d.DispatchID, d.TargetAgent, d.Query = "disp_00000000000000aa", "team", "q"
	d.Bind(log)
	return d, log
}

// lateCalls is what a member saw of its runtime after it was abandoned.
type lateCalls struct {
	seen     bool  // it read session state
	ask, adm error // its question's, its admission's
}

func callLate(d *troupe.Dispatch) lateCalls {
	d.Progress("late", map[string]any{"n": 1})
	_, seen := d.State("topic")
	_, ask := d.Ask(context.Background(), troupe.Question{Prompt: "still there?"})
	return lateCalls{seen: seen, ask: ask, adm: d.Admit()}
}

// release is a channel a member blocks on, ignoring its context, closed by whoever comes
// first: the test, or a watchdog after a time no composite should take (a composite that waits
// for its member then fails its test instead of hanging it).
type release struct {
	ch    chan struct{}
	once  sync.Once
	watch *time.Timer
}

func newRelease(watchdog time.Duration) *release {
	r := &release{ch: make(chan struct{})}
	r.watch = time.AfterFunc(watchdog, r.close)
	return r
}

func (r *release) close() { r.once.Do(func() { close(r.ch) }) }

// free releases the member and stops the watchdog.
func (r *release) free() {
	r.close()
	r.watch.Stop()
}

// failedEvent is the dispatch_failed event of agent in evs, and the index of the last event
// of its dispatch.
func failedEvent(t *testing.T, evs []troupe.Event, agent string) (*troupe.Result, int) {
	t.Helper()
	var res *troupe.Result
	var id string
	last := -1
	for i, ev := range evs {
		if ev.Agent != agent {
			continue
		}
		if ev.Kind == troupe.KindDispatchFailed {
			res, id = ev.Data.(*troupe.Result), ev.DispatchID
		}
		if ev.DispatchID == id || id == "" {
			last = i
		}
	}
	if res == nil {
		t.Fatalf("no dispatch_failed event of %s in %d events", agent, len(evs))
	}
	return res, last
}

// TestTimeoutHoldsAgainstAMemberThatIgnoresIt: a member with WithTimeout(50ms) that ignores
// its context (it blocks on a channel the test holds) no longer holds its composite: once its
// deadline and the grace have passed, the composite records it as timed out and abandoned and
// goes on. Teardown waits for it — not while it is blocked, and once it returns — and what it
// does after it was abandoned reaches nothing. The bubble, and goleak after it, find no
// goroutine left.
func TestTimeoutHoldsAgainstAMemberThatIgnoresIt(t *testing.T) {
	const timeout = 50 * time.Millisecond
	next := flow.Named("next", troupe.AgentFunc(plain))
	tests := []struct {
		name   string
		others []string // members that must complete besides the stuck one
		// run runs a composite with a as its member "stuck" under timeout, and returns it
		// and what it says of that member: its warnings, or its error.
		run func(t *testing.T, a troupe.Agent, d *troupe.Dispatch) (troupe.Teardowner, string)
	}{
		{"sequential", []string{"next"}, func(t *testing.T, a troupe.Agent, d *troupe.Dispatch) (troupe.Teardowner, string) {
			seq := flow.Sequential(flow.SequentialConfig{OnError: flow.ContinueOnError}, flow.Named("stuck", a, troupe.WithTimeout(timeout)), next)
			res, err := seq.Run(t.Context(), d)
			if err != nil {
				t.Errorf("Run = %v", err)
			}
			return seq, strings.Join(res.Warnings, "\n")
		}},
		{"sequential stops", nil, func(t *testing.T, a troupe.Agent, d *troupe.Dispatch) (troupe.Teardowner, string) {
			seq := flow.Sequential(flow.SequentialConfig{}, flow.Named("stuck", a, troupe.WithTimeout(timeout)), next)
			_, err := seq.Run(t.Context(), d)
			var ae *troupe.AgentError
			if !errors.As(err, &ae) || ae.Code != troupe.CodeTimeout {
				t.Errorf("Run = %v, want a TIMEOUT error", err)
			}
			return seq, fmt.Sprint(err)
		}},
		{"parallel", []string{"next"}, func(t *testing.T, a troupe.Agent, d *troupe.Dispatch) (troupe.Teardowner, string) {
			group := flow.Parallel(flow.ParallelConfig{}, flow.Named("stuck", a, troupe.WithTimeout(timeout)), next)
			res, err := group.Run(t.Context(), d)
			if err != nil {
				t.Errorf("Run = %v", err)
			}
			if b := res.AgentResult["branches"].(map[string]any); len(b) != 1 || b["next"] == nil {
				t.Errorf("branches %v, want next's alone", b)
			}
			return group, strings.Join(res.Warnings, "\n")
		}},
		{"loop", nil, func(t *testing.T, a troupe.Agent, d *troupe.Dispatch) (troupe.Teardowner, string) {
			loop := flow.Loop(flow.LoopConfig{MaxIterations: 3}, flow.Named("stuck", a, troupe.WithTimeout(timeout)))
			_, err := loop.Run(t.Context(), d)
			var se *flow.StepError
			if !errors.As(err, &se) || se.Step != 1 || se.Err.Code != troupe.CodeTimeout {
				t.Errorf("Run = %v, want cycle 1's TIMEOUT", err)
			}
			return loop, fmt.Sprint(err)
		}},
		{"tool", nil, func(t *testing.T, a troupe.Agent, d *troupe.Dispatch) (troupe.Teardowner, string) {
			tool := flow.AsTool("stuck", a, troupe.WithTimeout(timeout))
			_, err := tool.Call(t.Context(), d, []byte(`{"task": "x"}`))
			var ae *troupe.AgentError
			if !errors.As(err, &ae) || ae.Code != troupe.CodeTimeout {
				t.Errorf("Call = %v, want a TIMEOUT error", err)
			}
			td, ok := tool.(troupe.Teardowner)
			if !ok {
				t.Fatal("the tool is not a troupe.Teardowner")
			}
			return td, fmt.Sprint(err)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rel := newRelease(time.Hour)
				defer rel.free()
				late := make(chan lateCalls, 1)
				stuck := troupe.AgentFunc(func(_ context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
					<-rel.ch // ignores its context
					select {
					case late <- callLate(d):
					default: // a later call (the old code's loop went on once freed)
					}
					return &troupe.Result{AgentResult: map[string]any{"late": true}}, nil
				})
				d, log := inRun()
				start := time.Now()
				td, said := tt.run(t, stuck, d)
				if took := time.Since(start); took < timeout || took > timeout+time.Second {
					t.Errorf("returned after %v; want the timeout (%v) and a short grace", took, timeout)
				}
				const want = "stuck did not finish within 50ms and was abandoned"
				if !strings.Contains(said, want) {
					t.Errorf("the composite says %q; want %q in it", said, want)
				}
				evs := log.events()
				res, _ := failedEvent(t, evs, "stuck")
				if res.Status != troupe.StatusTimeout || len(res.Errors) != 1 || res.Errors[0].Code != troupe.CodeTimeout ||
					!strings.Contains(res.Errors[0].Message, want) || res.Errors[0].Details["abandoned"] != true || res.AgentResult != nil {
					t.Errorf("stuck's result: %s %+v %v", res.Status, res.Errors, res.AgentResult)
				}
				for _, o := range tt.others {
					if !slices.ContainsFunc(evs, func(ev troupe.Event) bool { return ev.Agent == o && ev.Kind == troupe.KindDispatchCompleted }) {
						t.Errorf("%s did not complete", o)
					}
				}

				// Teardown waits for the abandoned member: not while it is blocked...
				ctx, cancel := context.WithCancel(t.Context())
				cancel()
				if err := td.Teardown(ctx); err == nil || !strings.Contains(err.Error(), "1 abandoned members still running") {
					t.Errorf("Teardown with stuck still running = %v", err)
				}
				// ...and once it returns; what it did then reached nothing.
				rel.free()
				if err := td.Teardown(t.Context()); err != nil {
					t.Errorf("Teardown = %v", err)
				}
				select {
				case l := <-late:
					if l.seen || !errors.Is(l.ask, troupe.ErrTimeout) || !errors.Is(l.adm, troupe.ErrTimeout) {
						t.Errorf("after it was abandoned, stuck read state: %v, asked: %v, was admitted: %v", l.seen, l.ask, l.adm)
					}
				default:
					t.Error("Teardown returned before stuck did")
				}
				if got := log.events(); len(got) != len(evs) || log.questions() != 0 {
					t.Errorf("after stuck was abandoned: %d more events, %d questions", len(got)-len(evs), log.questions())
				}
			})
		})
	}
}

// TestMemberReturningWithinTheGraceIsNotAbandoned: a member that returns soon after its
// deadline (as one that honours its context does) has its own result recorded, and leaves
// nothing for Teardown to wait for.
func TestMemberReturningWithinTheGraceIsNotAbandoned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		slow := flow.Named("slow", troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
			<-ctx.Done()
			time.Sleep(100 * time.Millisecond) // cleaning up
			return nil, errors.New("interrupted")
		}), troupe.WithTimeout(50*time.Millisecond))
		seq := flow.Sequential(flow.SequentialConfig{}, slow)
		start := time.Now()
		out, err := seq.Execute(t.Context(), troupe.NewDispatch())
		if took := time.Since(start); took != 150*time.Millisecond {
			t.Errorf("returned after %v, want 150ms: when slow returned", took)
		}
		r := out.Results[0]
		if err == nil || r.Status != troupe.StatusTimeout || r.Errors[0].Details["abandoned"] != nil ||
			!strings.Contains(r.Errors[0].Message, "did not finish within 50ms: interrupted") {
			t.Errorf("slow: %v, %s %+v", err, r.Status, r.Errors)
		}
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if err := seq.Teardown(ctx); err != nil {
			t.Errorf("Teardown with nothing abandoned = %v", err)
		}
	})
}

// TestFirstSuccessAbandonsALoserThatIgnoresCancellation: a timed branch cancelled because
// another won, and which ignores its context, is abandoned once the grace has passed, as
// cancelled, not timed out: its own deadline is an hour away.
func TestFirstSuccessAbandonsALoserThatIgnoresCancellation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rel := newRelease(time.Hour)
		defer rel.free()
		stuck := flow.Named("stuck", troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
			<-rel.ch
			return &troupe.Result{AgentResult: map[string]any{"ok": true}}, nil
		}), troupe.WithTimeout(time.Hour))
		win := flow.Named("win", troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
			time.Sleep(10 * time.Millisecond)
			return &troupe.Result{AgentResult: map[string]any{"ok": true}}, nil
		}))
		group := flow.Parallel(flow.ParallelConfig{Strategy: flow.FirstSuccess}, stuck, win)
		start := time.Now()
		out, err := group.Execute(t.Context(), troupe.NewDispatch())
		if took := time.Since(start); took > time.Second {
			t.Errorf("returned after %v", took)
		}
		if err != nil || out.Winner != 1 {
			t.Fatalf("winner %d, %v", out.Winner, err)
		}
		r := out.Results[0]
		if r.Status != troupe.StatusCancelled || r.Errors[0].Details["abandoned"] != true || !strings.Contains(r.Errors[0].Message, "stuck did not stop") {
			t.Errorf("stuck: %s %+v", r.Status, r.Errors)
		}
		rel.free()
		if err := group.Teardown(t.Context()); err != nil {
			t.Errorf("Teardown = %v", err)
		}
	})
}

// TestAbandonedCompositeMemberReachesNothing: an abandoned member that is itself a composite
// keeps running its own members, whose events, state reads and questions go through the
// abandoned member's runtime: none reaches the run. The outer Teardown waits for it, then tears
// it down.
func TestAbandonedCompositeMemberReachesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rel := newRelease(time.Hour)
		defer rel.free()
		late := make(chan lateCalls, 1)
		inner := flow.Sequential(flow.SequentialConfig{},
			flow.Named("deep", troupe.AgentFunc(func(_ context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
				<-rel.ch
				late <- callLate(d)
				return &troupe.Result{AgentResult: map[string]any{"ok": true}}, nil
			})),
			flow.Named("after", troupe.AgentFunc(plain)))
		j := &journal{}
		outer := flow.Sequential(flow.SequentialConfig{}, flow.Named("inner", inner, troupe.WithTimeout(50*time.Millisecond)),
			flow.Named("res", newResource("res", j)))
		if err := outer.Setup(t.Context()); err != nil {
			t.Fatal(err)
		}
		d, log := inRun()
		_, err := outer.Run(t.Context(), d)
		var ae *troupe.AgentError
		if !errors.As(err, &ae) || ae.Code != troupe.CodeTimeout {
			t.Fatalf("Run = %v, want inner's TIMEOUT", err)
		}
		evs := log.events()
		if _, last := failedEvent(t, evs, "inner"); last != len(evs)-1 {
			t.Errorf("events after inner's dispatch_failed: %+v", evs[last+1:])
		}
		rel.free()
		if err := outer.Teardown(t.Context()); err != nil {
			t.Fatal(err)
		}
		l := <-late
		if l.seen || !errors.Is(l.ask, troupe.ErrTimeout) || !errors.Is(l.adm, troupe.ErrTimeout) {
			t.Errorf("deep, inside the abandoned inner: read state %v, asked: %v, admitted: %v", l.seen, l.ask, l.adm)
		}
		if got := log.events(); len(got) != len(evs) || log.questions() != 0 {
			t.Errorf("after inner was abandoned: %d more events (%+v), %d questions", len(got)-len(evs), got[len(evs):], log.questions())
		}
		if want := []string{"res setup", "res teardown"}; !slices.Equal(j.all(), want) {
			t.Errorf("lifecycle %q, want %q", j.all(), want)
		}
	})
}

// TestAbandonmentCutsOffAMemberMidCall: a member that keeps reporting progress and reading
// state, ignoring its context, while it is abandoned: nothing it reports is recorded after its
// dispatch_failed (the race detector watches the handover), and nothing once the composite
// has returned. Real time: a member that never blocks would stop a synctest bubble's clock.
func TestAbandonmentCutsOffAMemberMidCall(t *testing.T) {
	rel := newRelease(10 * time.Second)
	defer rel.free()
	var after atomic.Int64 // state reads that succeeded after the composite returned
	var returned atomic.Bool
	busy := flow.Named("busy", troupe.AgentFunc(func(_ context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		for {
			select {
			case <-rel.ch:
				return &troupe.Result{AgentResult: map[string]any{"ok": true}}, nil
			default:
			}
			d.Progress("tick", nil)
			late := returned.Load() // before the read: a read that began before Run returned may succeed
			if _, ok := d.State("topic"); ok && late {
				after.Add(1)
			}
			runtime.Gosched()
		}
	}), troupe.WithTimeout(5*time.Millisecond))
	group := flow.Parallel(flow.ParallelConfig{}, busy, flow.Named("calm", troupe.AgentFunc(plain)))
	d, log := inRun()
	_, err := group.Run(t.Context(), d)
	returned.Store(true)
	if err != nil {
		t.Fatal(err)
	}
	evs := log.events()
	res, last := failedEvent(t, evs, "busy")
	if res.Status != troupe.StatusTimeout || res.Errors[0].Details["abandoned"] != true {
		t.Errorf("busy: %s %+v", res.Status, res.Errors)
	}
	if evs[last].Kind != troupe.KindDispatchFailed {
		t.Errorf("busy's last event is %s, after its dispatch_failed", evs[last].Kind)
	}
	rel.free()
	if err := group.Teardown(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := log.events(); len(got) != len(evs) || after.Load() != 0 {
		t.Errorf("after the group returned: %d more events, %d state reads", len(got)-len(evs), after.Load())
	}
}

// TestAbandonedMemberInARun: in a run, a composite whose member ignores its timeout completes
// its dispatch without it, and the engine's teardown of the composite, at the end of the run,
// waits for the abandoned member. Nothing the member does after it was abandoned is in the
// run's log.
func TestAbandonedMemberInARun(t *testing.T) {
	rel := newRelease(10 * time.Second)
	defer rel.free()
	late := make(chan lateCalls, 1)
	stuck := flow.Named("stuck", troupe.AgentFunc(func(_ context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		<-rel.ch
		late <- callLate(d)
		return &troupe.Result{AgentResult: map[string]any{"best": 1.0}}, nil
	}), troupe.WithTimeout(20*time.Millisecond), troupe.Writes("best"))
	team := flow.Sequential(flow.SequentialConfig{OnError: flow.ContinueOnError}, stuck,
		flow.Named("next", troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
			return &troupe.Result{AgentResult: map[string]any{"best": 0.5}}, nil
		}), troupe.Writes("best")))
	eng := newEngine(t, "team", team)
	var evs []troupe.Event
	for ev, err := range eng.Run(t.Context(), troupe.Request{Query: "q"}) {
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
		if ev.Kind == troupe.KindDispatchCompleted && ev.Agent == "team" {
			rel.free() // the composite is done with it: the run's teardown waits for it now
		}
	}
	if k := evs[len(evs)-1].Kind; k != troupe.KindRunCompleted {
		t.Fatalf("run ended %s", k)
	}
	res, last := failedEvent(t, evs, "stuck")
	if res.Status != troupe.StatusTimeout || res.Errors[0].Details["abandoned"] != true {
		t.Errorf("stuck: %s %+v", res.Status, res.Errors)
	}
	if evs[last].Kind != troupe.KindDispatchFailed {
		t.Errorf("stuck's event %s came after its dispatch_failed", evs[last].Kind)
	}
	select {
	case l := <-late: // the run's teardown waited for it
		if l.seen || !errors.Is(l.ask, troupe.ErrTimeout) || !errors.Is(l.adm, troupe.ErrTimeout) {
			t.Errorf("after it was abandoned, stuck read state: %v, asked: %v, was admitted: %v", l.seen, l.ask, l.adm)
		}
	default:
		t.Error("the run ended before the abandoned member returned")
	}
}
