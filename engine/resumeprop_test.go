package engine_test

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/engine"
	"github.com/troupehq/troupe/flow"
	"github.com/troupehq/troupe/store/memory"
	"github.com/troupehq/troupe/troupetest"
)

// propCase is one generated run: a plan, an error policy, and scripted agents whose every
// dispatch does what its id says (succeed, fail, time out, ask a human, ask for review), after
// a time its id says too.
type propCase struct {
	seed    uint64
	plan    *troupe.Plan
	pol     troupe.ErrorPolicy
	agents  []string        // planned agents, then the fallback pool
	writes  map[string]bool // agents that write session state k
	human   bool            // a handler answers questions; otherwise the run pauses on them
	budget  troupe.Budget   // cost and tokens (the time budget's clock starts again on resume)
	maxDisp int
	router  bool // a router decides, naming a fallback and charging for its decisions
	guard   bool // a guardrail blocks some results and warns of others
	// cancelAt, when not 0, is the virtual time at which the run's caller cancels it: in the
	// segment running then, or before the first segment to start after it.
	cancelAt time.Duration
	// comps are the agents built as composites of scripted members, by name (composed).
	comps map[string]*compSpec
}

func (c *propCase) String() string {
	var b strings.Builder
	for i, st := range c.plan.Stages {
		fmt.Fprintf(&b, "stage %d (cap %d):", i+1, st.MaxConcurrency)
		for _, tk := range st.Tasks {
			fmt.Fprintf(&b, " %s→%s%v", tk.ID, tk.Agent, tk.DependsOn)
		}
		b.WriteString("; ")
	}
	fmt.Fprintf(&b, "policy %+v; human %v; budget %+v; max dispatches %d; router %v; guard %v; cancel at %v", c.pol, c.human, c.budget, c.maxDisp, c.router, c.guard, c.cancelAt)
	for _, a := range slices.Sorted(maps.Keys(c.comps)) {
		fmt.Fprintf(&b, "; %s = %v", a, c.comps[a])
	}
	return b.String()
}

func genCase(rng *rand.Rand) *propCase {
	c := &propCase{seed: rng.Uint64() | 1, plan: &troupe.Plan{}, writes: map[string]bool{}, human: rng.IntN(3) > 0, router: rng.IntN(3) == 0}
	c.budget.MaxCostDollars = []float64{0, 0.3, 0.8}[rng.IntN(3)]
	c.budget.MaxTokens = []int64{0, 400, 1200}[rng.IntN(3)]
	c.maxDisp = []int{0, 0, 5, 9}[rng.IntN(4)]
	c.guard = rng.IntN(3) == 0
	if rng.IntN(3) == 0 {
		c.pol.OnWarning = troupe.WarnLogOnly
	}
	n := 0
	var earlier []string // task ids of earlier stages
	for range 1 + rng.IntN(4) {
		st := troupe.PlanStage{}
		var ids []string
		for range 1 + rng.IntN(4) {
			agent := fmt.Sprintf("a%d", n)
			id := agent
			if rng.IntN(2) == 0 {
				id = fmt.Sprintf("task%d", n) // depends_on by task id, not agent name
			}
			tk := troupe.Task{ID: id, Agent: agent, Reason: "planned " + id, Priority: 1}
			if c.router && rng.IntN(3) == 0 {
				tk.Agent = "" // the router places it
			}
			for _, dep := range earlier {
				if rng.IntN(3) == 0 {
					tk.DependsOn = append(tk.DependsOn, dep)
				}
			}
			st.Tasks = append(st.Tasks, tk)
			ids = append(ids, id)
			c.agents = append(c.agents, agent)
			if rng.IntN(3) == 0 {
				c.writes[agent] = true
			}
			n++
		}
		if rng.IntN(2) == 0 {
			st.MaxConcurrency = 1 + rng.IntN(len(st.Tasks))
		}
		earlier = append(earlier, ids...)
		c.plan.Stages = append(c.plan.Stages, st)
	}
	planned := slices.Clone(c.agents)
	for i := range 3 {
		c.agents = append(c.agents, fmt.Sprintf("fb%d", i))
	}
	c.pol.OnError = []troupe.ErrorAction{troupe.FailFast, troupe.Continue, troupe.Retry, troupe.Fallback}[rng.IntN(4)]
	c.pol.OnTimeout = []troupe.TimeoutAction{troupe.TimeoutSkip, troupe.TimeoutUsePartial, troupe.TimeoutFailFast}[rng.IntN(3)]
	c.pol.Retry = troupe.RetryPolicy{MaxAttempts: 1 + rng.IntN(3), Initial: time.Microsecond, Max: time.Microsecond, Multiplier: 1, Jitter: float64(rng.IntN(2)) / 2}
	if rng.IntN(2) == 0 {
		c.pol.FallbackAgents = map[string][]string{}
		for _, a := range planned {
			if rng.IntN(2) == 0 {
				continue
			}
			for range 1 + rng.IntN(2) {
				fb := c.agents[rng.IntN(len(c.agents))]
				if fb != a && !slices.Contains(c.pol.FallbackAgents[a], fb) {
					c.pol.FallbackAgents[a] = append(c.pol.FallbackAgents[a], fb)
				}
			}
		}
	}
	if rng.IntN(5) == 0 {
		c.pol.EnableFallback = troupe.Ptr(false)
	}
	if rng.IntN(3) == 0 {
		c.pol.AllowPartialResults = troupe.Ptr(rng.IntN(2) == 0)
	}
	if rng.IntN(2) == 0 {
		c.pol.MinSuccessRate = troupe.Ptr([]float64{0, 0.5, 0.75, 1}[rng.IntN(4)])
	}
	// A quarter of the runs are cancelled by their caller at a time their seed picks (from the
	// seed, not rng, so the cases generated before this was added stay as they were).
	if h := hash64(c.seed, "/cancel"); h%4 == 0 {
		c.cancelAt = 1 + time.Duration(h>>8)%(1500*time.Millisecond)
	}
	return c
}

// compSpec is a composite agent of a case: a sequence or a parallel group of scripted members
// (or, one level down, of another such composite), whose every nested dispatch does what its
// id says, as a planned one does.
type compSpec struct {
	par      bool
	onError  flow.ErrorMode // a sequence's
	strategy flow.Strategy  // a group's: CollectAll or FirstSuccess
	limit    int            // a group's MaxConcurrent; 0 runs every branch at once
	members  []compMember
}

type compMember struct {
	name   string
	writes bool      // it declares writes of k (a group's branches writing it conflict)
	sub    *compSpec // a composite member; nil for a scripted agent
}

func (s *compSpec) String() string {
	var b strings.Builder
	if s.par {
		fmt.Fprintf(&b, "parallel(%s, cap %d", s.strategy, s.limit)
	} else {
		fmt.Fprintf(&b, "sequential(on error %d", s.onError)
	}
	for _, m := range s.members {
		fmt.Fprintf(&b, ", %s", m.name)
		if m.writes {
			b.WriteString(" writes k")
		}
		if m.sub != nil {
			fmt.Fprintf(&b, " = %v", m.sub)
		}
	}
	b.WriteString(")")
	return b.String()
}

// composed is c with some of its agents — a third, and at least one planned — built as
// composites (compSpec). Its choices come from c's seed, not from the generator, so c itself,
// and every case generated after it, stay as they were before composites were added.
func (c *propCase) composed() *propCase {
	v := *c
	v.comps = map[string]*compSpec{}
	var planned []string
	for _, a := range c.agents {
		h := hash64(c.seed, "/composite/", a)
		if !strings.HasPrefix(a, "fb") {
			planned = append(planned, a)
		}
		if h%3 == 0 {
			v.comps[a] = genComp(h>>2, 0)
		}
	}
	if !slices.ContainsFunc(planned, func(a string) bool { return v.comps[a] != nil }) {
		a := planned[hash64(c.seed, "/composite")%uint64(len(planned))]
		v.comps[a] = genComp(hash64(c.seed, "/composite/", a)>>2, 0)
	}
	return &v
}

// genComp makes a composite of 2–3 members from h; at depth 0 a member may be a composite.
func genComp(h uint64, depth int) *compSpec {
	s := &compSpec{par: h&1 == 1}
	h >>= 1
	if s.par {
		s.strategy = []flow.Strategy{flow.CollectAll, flow.CollectAll, flow.FirstSuccess}[h%3]
		h /= 3
		s.limit = int(h % 3)
		h /= 3
	} else {
		s.onError = flow.ErrorMode(h % 2)
		h /= 2
	}
	n := 2 + int(h%2)
	h /= 2
	for i := range n {
		m := compMember{name: fmt.Sprintf("m%d", i), writes: h%3 == 0}
		h /= 3
		if depth == 0 && h%5 == 0 {
			m.sub = genComp(hash64(h, "/", i), depth+1)
		}
		h /= 5
		s.members = append(s.members, m)
	}
	return s
}

// behaviour is what one dispatch does.
type behaviour struct {
	kind   string // ok, fail, fatal, timeout, partial, ask, review, cancelled
	dur    time.Duration
	cost   float64 // reported by a result
	tokens int64
}

func hash64(parts ...any) uint64 {
	h := fnv.New64a()
	fmt.Fprint(h, parts...)
	return h.Sum64()
}

func (c *propCase) behaviour(id string) behaviour {
	h := hash64(c.seed, "/", id)
	b := behaviour{dur: time.Millisecond + time.Duration(h>>20)%time.Second, cost: float64((h>>8)%4) * 0.05, tokens: int64((h>>12)%4) * 100}
	switch p := h % 100; {
	case p < 40:
		b.kind = "ok"
	case p < 55:
		b.kind = "fail"
	case p < 63:
		b.kind = "fatal"
	case p < 70:
		b.kind = "partial"
	case p < 75:
		b.kind = "timeout"
	case p < 84:
		b.kind = "ask"
	case p < 93:
		b.kind = "review"
	default:
		b.kind = "cancelled"
	}
	return b
}

// answer is a human's answer to q. Reviews a paused run waits for are approved: resumed, they
// all finish at the moment the run resumes, in no set order, and a rejection would fail one
// while another finishes or not.
func (c *propCase) answer(q troupe.Question) troupe.Answer {
	return troupe.Answer{QuestionID: q.ID, Text: "answer to " + q.ID, Approved: !c.human || hash64(c.seed, "/", q.ID)%4 != 0}
}

// world is what the agents of one flow of a case (its runs, stops and resumptions) share: which
// dispatches ran in which segment (a segment is the life of one engine: a start or a resume,
// up to its end, pause or crash), and a virtual clock that runs on across segments, so that an
// agent run again after a stop finishes when it would have without the stop, and the flow
// keeps the uninterrupted order of completions.
type world struct {
	c  *propCase
	mu sync.Mutex
	// The segment now running, when it began, and the virtual time it began at.
	seg      int
	segStart time.Time
	segV     time.Duration
	vstart   map[string]time.Duration // virtual time each dispatch first ran at
	answered map[string]time.Duration // virtual time each dispatch's question was first answered at
	calls    map[string][]int         // segments each dispatch ran in
	// Segments (after the first) at whose very start a dispatch run again finished at once (the
	// process died recording its result), and segments that began with dispatches waiting for
	// answers to questions the log holds, which no one gave (they ask again).
	finishedAtStart, waitingAtStart map[int]bool
}

// raced says whether, in one segment, a dispatch run again finished at the very moment the
// segment began while dispatches waiting for a human were made again: two things at one
// virtual instant, in no set order, which the run that was not stopped did one after the other.
func (w *world) raced() bool {
	for seg := range w.finishedAtStart {
		if w.waitingAtStart[seg] {
			return true
		}
	}
	return false
}

func newWorld(c *propCase) *world {
	return &world{c: c, segStart: time.Now(), vstart: map[string]time.Duration{}, answered: map[string]time.Duration{}, calls: map[string][]int{},
		finishedAtStart: map[int]bool{}, waitingAtStart: map[int]bool{}}
}

func (w *world) nextSegment() {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Now()
	w.segV += now.Sub(w.segStart)
	w.segStart = now
	w.seg++
}

// now is the world's virtual time.
func (w *world) now() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return time.Since(w.segStart) + w.segV
}

// callerCtx is the context a segment's run is started or resumed with: cancelled at the case's
// cancelAt, if that falls in the segment. (A caller that cancelled the run in a process that
// then died is gone: the run's resumer does not cancel it again.) The caller stops it once the
// segment is over.
func (w *world) callerCtx(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	left := w.c.cancelAt - w.now()
	if w.c.cancelAt == 0 || left <= 0 {
		return ctx, cancel
	}
	tm := time.AfterFunc(left, cancel)
	return ctx, func() { tm.Stop(); cancel() }
}

// markedCancelled says whether the log holds a dispatch result the engine marked as cancelled
// by the run's caller (Resume documents the mark).
func markedCancelled(evs []troupe.Event) bool {
	for _, ev := range evs {
		if res, ok := ev.Data.(*troupe.Result); ok {
			for _, e := range res.Errors {
				if _, ok := e.Details["run_cancelled"]; ok {
					return true
				}
			}
		}
	}
	return false
}

func (w *world) agent() troupe.Agent {
	return troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		id := d.DispatchID
		w.mu.Lock()
		w.calls[id] = append(w.calls[id], w.seg)
		v := time.Since(w.segStart) + w.segV
		vs, seen := w.vstart[id]
		if !seen {
			w.vstart[id], vs = v, v
		}
		w.mu.Unlock()
		b := w.c.behaviour(id)
		if b.kind == "ask" {
			if _, err := d.Ask(ctx, troupe.Question{Prompt: "which way?"}); err != nil {
				return nil, err
			}
			// It works once it has the answer: one answered when a paused run resumes does
			// not finish at the very moment the reviews resumed with it do.
			w.mu.Lock()
			if _, seen := w.answered[id]; !seen {
				w.answered[id] = time.Since(w.segStart) + w.segV
			}
			vs, v = w.answered[id], time.Since(w.segStart)+w.segV
			w.mu.Unlock()
		}
		if b.kind == "partial" {
			d.Partial(map[string]any{"partial": id})
		}
		if wait := vs + b.dur - v; wait <= 0 && seen && w.seg > 0 {
			w.mu.Lock()
			if v == w.segV {
				w.finishedAtStart[w.seg] = true
			}
			w.mu.Unlock()
		} else if wait > 0 {
			// The work takes its time on the bubble's fake clock: nothing is waited for.
			tm := time.NewTimer(wait)
			select {
			case <-tm.C:
			case <-ctx.Done():
				tm.Stop()
				return nil, ctx.Err()
			}
		}
		var res *troupe.Result
		switch b.kind {
		case "fail":
			return nil, &troupe.AgentError{Code: troupe.CodeAgentError, Message: "flaky " + id, Recoverable: true}
		case "fatal":
			return nil, &troupe.AgentError{Code: troupe.CodeAgentError, Message: "broken " + id}
		case "partial", "timeout":
			return nil, &troupe.AgentError{Code: troupe.CodeTimeout, Message: "out of time " + id, Recoverable: true}
		case "cancelled":
			res = &troupe.Result{Status: troupe.StatusCancelled, Errors: []troupe.ErrorInfo{{Code: troupe.CodeCancelled, Message: "remote task cancelled"}}}
		case "review":
			res = &troupe.Result{AgentResult: map[string]any{"k": id, "by": d.TargetAgent}, RequiresHuman: true, Confidence: troupe.Ptr(0.8)}
		default:
			res = &troupe.Result{AgentResult: map[string]any{"k": id, "by": d.TargetAgent}, Confidence: troupe.Ptr(0.9)}
		}
		if b.cost > 0 {
			res.CostDollars = troupe.Ptr(b.cost)
		}
		if b.tokens > 0 {
			res.TokensUsed = troupe.Ptr(b.tokens)
		}
		return res, nil
	})
}

// composite builds s of the world's scripted agents.
func (w *world) composite(s *compSpec) troupe.Agent {
	var specs []*troupe.AgentSpec
	for _, m := range s.members {
		a := w.agent()
		if m.sub != nil {
			a = w.composite(m.sub)
		}
		var opts []troupe.Option
		if m.writes {
			opts = append(opts, troupe.Writes("k"))
		}
		specs = append(specs, flow.Named(m.name, a, opts...))
	}
	var a troupe.Agent
	if s.par {
		a = flow.Parallel(flow.ParallelConfig{Strategy: s.strategy, MaxConcurrent: s.limit}, specs...)
	} else {
		a = flow.Sequential(flow.SequentialConfig{OnError: s.onError}, specs...)
	}
	// Its runs are counted as its members' are (checkRanOnce).
	return troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		w.mu.Lock()
		w.calls[d.DispatchID] = append(w.calls[d.DispatchID], w.seg)
		w.mu.Unlock()
		return a.Run(ctx, d)
	})
}

// route decides a task of a case with a router: the planned agent or, for a task that names
// none, one its id picks; a fallback its id picks; and a price.
func (c *propCase) route(_ context.Context, in troupe.RouteInput, _ troupe.Context) (troupe.RoutingDecision, error) {
	h := hash64(c.seed, "/route/", in.Task.ID)
	d := troupe.RoutingDecision{Target: in.Task.Agent, Reason: "routed " + in.Task.ID, CostDollars: troupe.Ptr(0.01), TokensUsed: troupe.Ptr(int64(10))}
	if d.Target == "" {
		d.Target = c.agents[h%uint64(len(c.agents))]
	}
	if h%3 == 0 {
		d.Fallback = c.agents[(h>>8)%uint64(len(c.agents))]
	}
	return d, nil
}

// guardrail blocks or warns of a dispatch's result, as its id says. It checks results, not
// dispatches: a dispatch blocked before it runs is blocked at the moment it starts, which
// others of its group share, and which of two failures at one moment fails the run first is
// not set; and a warning of a dispatch about to run is kept only by one that ran, not by one
// a resumed run makes again and cancels at once, having taken the failure that ends the run
// from its log.
func (c *propCase) guardrail() troupe.Guardrail {
	return troupe.GuardrailFuncs{ID: "prop",
		After: func(_ context.Context, d *troupe.Dispatch, _ *troupe.Result) troupe.Verdict {
			switch h := hash64(c.seed, "/guard/", d.DispatchID); {
			case h%10 == 0:
				return troupe.Verdict{Block: true, Reason: "not this one"}
			case h%5 == 0:
				return troupe.Verdict{Warnings: []string{"check " + d.DispatchID}, Annotations: map[string]any{"checked": true}}
			}
			return troupe.Verdict{}
		}}
}

func (w *world) registry(t *testing.T) *troupe.Registry {
	reg := troupe.NewRegistry()
	for _, a := range w.c.agents {
		var opts []troupe.Option
		if w.c.writes[a] {
			opts = append(opts, troupe.Writes("k"))
		}
		agent := w.agent()
		if s := w.c.comps[a]; s != nil {
			agent = w.composite(s)
		}
		if err := reg.Add(a, agent, opts...); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

// propFlow is what driving a case to its end left: the log, and which dispatches had results in
// the log at the end of each segment.
type propFlow struct {
	log       []troupe.Event
	resultsAt []map[string]bool
	crashed   bool
	// lostCancel: the run's caller cancelled it and its process died before recording anything
	// of that, so the resumed run rightly ends otherwise than the run that was not stopped.
	lostCancel bool
}

const propRunID = "run_prop"

// drive runs the case to a terminal event: it starts it, resumes it after each pause with the
// answers to its questions, and, when crashAt > 0, makes the store refuse every append once
// crashAt events are recorded (the process dies) and resumes the run in a new engine.
func drive(t *testing.T, w *world, crashAt int) propFlow {
	t.Helper()
	ctx := t.Context()
	mem := memory.New()
	var f propFlow
	human := troupe.HumanHandler(nil)
	if w.c.human {
		human = troupe.HumanFunc(func(_ context.Context, q troupe.Question) (troupe.Answer, error) { return w.c.answer(q), nil })
	}
	for seg := 0; ; seg++ {
		if seg > 30 {
			t.Fatalf("the run did not end within %d segments", seg)
		}
		if seg > 0 {
			w.nextSegment()
		}
		before, _ := mem.Events(ctx, propRunID, 0)
		var store troupe.Store = mem
		var crashing *crashingStore
		if crashAt > 0 && !f.crashed {
			crashing = &crashingStore{Store: mem, n: crashAt - len(before)}
			store = crashing
		}
		cfg := engine.Config{Registry: w.registry(t), Planner: staticPlan(w.c.plan), Store: store, Policy: w.c.pol, Human: human, MaxDispatches: w.c.maxDisp}
		if w.c.router {
			cfg.Router = troupe.RouterFunc(w.c.route)
		}
		if w.c.guard {
			cfg.Guardrails = []troupe.Guardrail{w.c.guardrail()}
		}
		eng, err := engine.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		var r *engine.Run
		runCtx, stop := w.callerCtx(ctx)
		if len(before) == 0 {
			r, err = eng.Start(runCtx, troupe.Request{Query: "q", RunID: propRunID, Seed: w.c.seed, Budget: w.c.budget})
		} else {
			answers := openAnswers(w.c, before)
			if waiting(before, answers) {
				w.mu.Lock()
				w.waitingAtStart[seg] = true
				w.mu.Unlock()
			}
			r, err = eng.Resume(runCtx, propRunID, engine.ResumeOptions{Answers: answers})
		}
		if err != nil {
			t.Fatalf("segment %d: %v", seg, err)
		}
		_, werr := r.Wait(ctx)
		cancelled := runCtx.Err() != nil
		stop()
		if err := eng.Close(ctx); err != nil {
			t.Fatal(err)
		}
		evs, _ := mem.Events(ctx, propRunID, 0)
		got := map[string]bool{}
		for _, ev := range evs {
			if res, ok := ev.Data.(*troupe.Result); ok && ev.Parent == "" {
				got[res.DispatchID] = true
			}
		}
		nested, _ := nestedEnds(evs)
		for id, e := range nested {
			if !e.Paused {
				got[id] = true
			}
		}
		f.resultsAt = append(f.resultsAt, got)
		switch last := troupetest.Last(evs); {
		case crashing != nil && errors.Is(werr, errCrash):
			f.crashed = true
			// The caller cancelled the run, and the process died before the log held any
			// trace of it: the resumed run cannot know, and goes on.
			f.lostCancel = cancelled && !markedCancelled(evs)
		case last.Stage.Terminal():
			f.log = evs
			return f
		case last.Kind == troupe.KindRunPaused:
		default:
			t.Fatalf("segment %d ended with %s (%v)", seg, last.Kind, werr)
		}
	}
}

// openAnswers answers the questions of the run's pauses that the log holds no answer to.
func openAnswers(c *propCase, evs []troupe.Event) []troupe.Answer {
	answered := map[string]bool{}
	for _, ev := range evs {
		if a, ok := ev.Data.(*troupe.Answer); ok {
			answered[a.QuestionID] = true
		}
	}
	var out []troupe.Answer
	for _, ev := range evs {
		if o, ok := ev.Data.(*troupe.Outcome); ok && ev.Kind == troupe.KindRunPaused {
			for _, q := range o.Questions {
				if !answered[q.ID] {
					answered[q.ID] = true
					out = append(out, c.answer(q))
				}
			}
		}
	}
	return out
}

// waiting says whether the log holds questions that neither it nor answers answers.
func waiting(evs []troupe.Event, answers []troupe.Answer) bool {
	open := map[string]bool{}
	for _, ev := range evs {
		switch d := ev.Data.(type) {
		case *troupe.Question:
			open[d.ID] = true
		case *troupe.Answer:
			delete(open, d.QuestionID)
		}
	}
	for _, a := range answers {
		delete(open, a.QuestionID)
	}
	return len(open) > 0
}

// runSummary is what a run's log says it decided and how it ended.
type runSummary struct {
	Plan       *troupe.Plan
	Decisions  map[string]troupe.RoutingDecision // by dispatch id
	Dispatches map[string]string                 // agent, by dispatch id
	Results    map[string]troupe.Status          // by dispatch id
	Outcome    *troupe.Outcome
	Agg        *troupe.Aggregation
	Nested     map[string]nestedEnd // how each nested dispatch last ended, by id
}

// nestedEnd is how a dispatch nested in a composite last ended in a log.
type nestedEnd struct {
	Agent, Parent string
	Status        troupe.Status
	// Paused: it stopped to wait for an answer the log did not hold then (it runs again to
	// get it), rather than finished.
	Paused bool
}

// nestedEnds returns how each nested dispatch of a log last ended, and what is wrong with
// their records: a nested dispatch started again while its first start is open (a dispatch
// that paused for a human, and so ended, is started again when it runs again).
func nestedEnds(evs []troupe.Event) (map[string]nestedEnd, []string) {
	out := map[string]nestedEnd{}
	var problems []string
	parent := map[string]string{}
	open := map[string]bool{}
	asking := map[string]string{} // open questions: the dispatch that asked each, by id
	for _, ev := range evs {
		switch d := ev.Data.(type) {
		case *troupe.Question:
			asking[d.ID] = d.DispatchID
		case *troupe.Answer:
			delete(asking, d.QuestionID)
		}
		if ev.Parent == "" {
			continue
		}
		switch d := ev.Data.(type) {
		case *troupe.Dispatch:
			if ev.Kind != troupe.KindDispatchStarted {
				continue
			}
			if open[d.DispatchID] {
				problems = append(problems, fmt.Sprintf("nested dispatch %s started again at event %d while it ran", d.DispatchID, ev.Seq))
			}
			open[d.DispatchID], parent[d.DispatchID] = true, ev.Parent
		case *troupe.Result:
			delete(open, d.DispatchID)
			paused := false
			for _, by := range asking {
				for x := by; x != "" && !paused; x = parent[x] {
					paused = x == d.DispatchID
				}
			}
			out[d.DispatchID] = nestedEnd{Agent: d.AgentName, Parent: ev.Parent, Status: d.Status, Paused: paused}
		}
	}
	return out, problems
}

func summarize(t *testing.T, evs []troupe.Event) runSummary {
	t.Helper()
	s := runSummary{Decisions: map[string]troupe.RoutingDecision{}, Dispatches: map[string]string{}, Results: map[string]troupe.Status{}}
	var problems []string
	s.Nested, problems = nestedEnds(evs)
	for _, p := range problems {
		t.Error(p)
	}
	for _, ev := range evs {
		if ev.Parent != "" {
			continue // in s.Nested
		}
		switch d := ev.Data.(type) {
		case *troupe.Plan:
			s.Plan = d
		case *troupe.RoutingDecision:
			s.Decisions[ev.DispatchID] = *d
		case *troupe.Dispatch:
			if _, dup := s.Dispatches[d.DispatchID]; dup {
				t.Errorf("dispatch %s started twice in the log", d.DispatchID)
			}
			s.Dispatches[d.DispatchID] = d.TargetAgent
		case *troupe.Result:
			s.Results[d.DispatchID] = d.Status
		case *troupe.Outcome:
			if ev.Stage.Terminal() {
				s.Outcome = d
			}
		case *troupe.Aggregation:
			s.Agg = d
		}
	}
	return s
}

// checkRanOnce checks that no dispatch ran twice in one segment, nor again after a segment
// whose log held its result.
func checkRanOnce(t *testing.T, w *world, f propFlow) {
	t.Helper()
	for id, segs := range w.calls {
		for i, s := range segs {
			if i > 0 && segs[i-1] == s {
				t.Errorf("dispatch %s ran twice in segment %d", id, s)
			}
			for prev := 0; prev < s; prev++ {
				if f.resultsAt[prev][id] {
					t.Errorf("dispatch %s ran in segment %d although the log held its result at the end of segment %d", id, s, prev)
				}
			}
		}
	}
}

// A run stopped at any point (its process dies: the store refuses every append from a random
// event on) and resumed from its log ends as the run that was not stopped: the same plan,
// routing decisions, dispatches, results, outcome and aggregation; both logs pass
// troupetest.CheckLog; and no dispatch runs twice in one process, nor again once the log holds
// its result (one in flight when the process died runs again, under its id, as Resume says).
// A quarter of the runs are cancelled by their caller at a virtual time, in whichever segment
// is running then: a run stopped after that resumes to end cancelled too, once the log shows a
// dispatch cancelled by it (only a stop that left no such trace is let differ). Cancelling the
// run is otherwise no stop to resume from: the run records run_cancelled, and a finished run
// cannot be resumed.
//
// Cases are generated from a fixed seed: plans of 1–4 stages of 1–4 tasks with depends_on
// (some placed by a router), every error policy (fail_fast, continue, retry, fallback agents,
// on_timeout, allow_partial_results, min_success_rate), cost, token and dispatch budgets, and
// agents that succeed, fail, time out, ask a human or ask for review, as their dispatch id says.
// A run with no human handler pauses on its questions and is resumed with their answers, in
// both the stopped and the uninterrupted run. Time is synctest's, and an agent run again after
// a stop finishes when it would have without it (world), so both runs see the same order of
// events.
//
// Each case runs a second time composed: some of its agents are flow.Sequential and
// flow.Parallel (collect_all, first_success) composites of 2–3 scripted members, some of them
// composites again, every member doing what its nested dispatch id says. Then every nested
// dispatch must end in the resumed log as it last ended in the uninterrupted one (finished,
// or paused for a human), none may start again while it runs, and none may run again once the
// log holds its finished result; what is left undecided is listed at undecided.
func TestResumeProperty(t *testing.T) {
	cases := 400
	if testing.Short() {
		cases = 100
	}
	rng := rand.New(rand.NewPCG(20240607, 1))
	for i := range cases {
		c := genCase(rng)
		t.Run(fmt.Sprint("case ", i), func(t *testing.T) { checkResume(t, c, rand.New(rand.NewPCG(c.seed, 2))) })
		// The same case with some of its agents composites of scripted members: their
		// members' events are nested in the log, and a resumed composite takes its finished
		// members' results from it.
		t.Run(fmt.Sprint("case ", i, " composed"), func(t *testing.T) { checkResume(t, c.composed(), rand.New(rand.NewPCG(c.seed, 3))) })
	}
}

// checkResume runs c uninterrupted, then crashed at events crashRNG picks and resumed, and
// compares (see TestResumeProperty).
func checkResume(t *testing.T, c *propCase, crashRNG *rand.Rand) {
	const crashes = 3
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(c)
		ref := drive(t, w, 0)
		troupetest.CheckLog(t, ref.log)
		checkRanOnce(t, w, ref)
		want := summarize(t, ref.log)
		opts := []cmp.Option{cmpopts.IgnoreFields(troupe.Aggregation{}, "TotalExecutionTimeMS")}
		if !c.human {
			// Reviews a paused run waits for all finish at the moment it resumes, in no
			// set order.
			opts = append(opts, cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".ExecutionOrder" },
				cmpopts.SortSlices(func(a, b string) bool { return a < b })))
		}
		for range crashes {
			at := 1 + crashRNG.IntN(len(ref.log))
			w := newWorld(c)
			f := drive(t, w, at)
			troupetest.CheckLog(t, f.log)
			checkRanOnce(t, w, f)
			if f.lostCancel {
				continue
			}
			want, got := want, summarize(t, f.log)
			if c.comps != nil {
				want, got = undecided(want, w.raced()), undecided(got, w.raced())
			}
			if diff := cmp.Diff(want, got, opts...); diff != "" {
				t.Errorf("crash after %d events (crashed: %v): the resumed run differs (-uninterrupted +resumed):\n%s\nresumed log:\n%s", at, f.crashed, diff, dumpLog(f.log))
			}
		}
		if t.Failed() {
			t.Logf("case: %v", c)
			t.Logf("uninterrupted log:\n%s", dumpLog(ref.log))
		}
	})
}

// undecided is s without what a run with composites leaves undecided on resume:
//
//   - A FirstSuccess group whose branch paused for a human before another branch won: resumed,
//     the group takes the winner's result from the log before it runs any branch again, and the
//     win makes the question moot, so the paused branch is not asked again, and the group's
//     result has no warning of its pause, which the run that was not stopped gave it.
//   - With raced (world.raced), a composite waiting for a human is made again at the moment a
//     dispatch run again finishes, in no set order: it asks again and pauses before that
//     dispatch fails the run, or is cancelled by the failure first. Either way it ends
//     cancelled, but its members' statuses (paused, or cancelled) and what its result reports
//     using (nothing, as a paused dispatch ended by the run; its members' use, as a cancelled
//     composite) depend on which came first.
func undecided(s runSummary, raced bool) runSummary {
	if s.Agg != nil {
		agg := *s.Agg
		agg.Warnings = slices.DeleteFunc(slices.Clone(agg.Warnings), func(w string) bool {
			agent, rest, _ := strings.Cut(w, ": ")
			member, rest, _ := strings.Cut(rest, ": ")
			return agent != "" && member != "" && strings.HasPrefix(rest, "failed: troupe: run paused for human input")
		})
		if raced {
			agg.TotalTokensUsed, agg.TotalCostDollars = nil, nil
		}
		s.Agg = &agg
	}
	if raced {
		nested := maps.Clone(s.Nested)
		for id, e := range nested {
			if e.Paused || e.Status == troupe.StatusCancelled {
				e.Status, e.Paused = "", false
				nested[id] = e
			}
		}
		s.Nested = nested
	}
	return s
}

// dumpLog renders a log one event a line, for failure messages.
func dumpLog(evs []troupe.Event) string {
	var b strings.Builder
	for _, ev := range evs {
		fmt.Fprintf(&b, "%3d %-18s %-8s %s %s", ev.Seq, ev.Kind, ev.Agent, ev.DispatchID, ev.Status)
		if ev.Parent != "" {
			fmt.Fprintf(&b, " (in %s)", ev.Parent)
		}
		switch d := ev.Data.(type) {
		case *troupe.Result:
			if len(d.Errors) > 0 {
				fmt.Fprintf(&b, " %v", d.Errors[0].Message)
			}
		case *troupe.Question:
			fmt.Fprintf(&b, " %s", d.ID)
		case *troupe.Outcome:
			fmt.Fprintf(&b, " %+v", *d)
		}
		b.WriteString("\n")
	}
	return b.String()
}
