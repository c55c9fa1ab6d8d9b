package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
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
	"github.com/troupehq/troupe/internal/stray"
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
	loop     bool           // a flow.Loop of its one member (looped cases only)
	onError  flow.ErrorMode // a sequence's
	strategy flow.Strategy  // a group's: CollectAll or FirstSuccess
	limit    int            // a group's MaxConcurrent; 0 runs every branch at once; a loop's MaxIterations
	members  []compMember
}

type compMember struct {
	name   string
	writes bool      // it declares writes of k (a group's branches writing it conflict)
	sub    *compSpec // a composite member; nil for a scripted agent
	// timeout is the member's flow.WithTimeout (looped cases only): one no member reaches
	// (noTimeout), or, for a scripted member, one its slower dispatches outlast.
	timeout time.Duration
	// tool: a scripted member that first calls a scripted agent through a flow.AsTool tool
	// (looped cases only), and counts what it used (toolCaller).
	tool bool
	// linger: a scripted member that ignores its context (timed cases only): once the context
	// ends it works on for this long, or until its work is done, before it returns.
	linger time.Duration
}

// noTimeout is a member timeout longer than any member runs: its member runs on a goroutine of
// its own, under a deadline, which never passes.
const noTimeout = time.Minute

func (s *compSpec) String() string {
	var b strings.Builder
	switch {
	case s.loop:
		fmt.Fprintf(&b, "loop(max %d", s.limit)
	case s.par:
		fmt.Fprintf(&b, "parallel(%s, cap %d", s.strategy, s.limit)
	default:
		fmt.Fprintf(&b, "sequential(on error %d", s.onError)
	}
	for _, m := range s.members {
		fmt.Fprintf(&b, ", %s", m.name)
		if m.writes {
			b.WriteString(" writes k")
		}
		if m.timeout > 0 {
			fmt.Fprintf(&b, " timeout %v", m.timeout)
		}
		if m.tool {
			b.WriteString(" calling a tool")
		}
		if m.linger > 0 {
			fmt.Fprintf(&b, " lingering %v", m.linger)
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
func (c *propCase) composed() *propCase { return c.withComps("/composite", 3, false, false) }

// looped is c composed as composed makes it, but of composites that may also be flow.Loop
// ones, and of members that may have a timeout (flow.WithTimeout), some of which their
// slower dispatches outlast. Its choices come from c's seed too, under salts of their own.
func (c *propCase) looped() *propCase { return c.withComps("/looped", 3, true, false) }

// timed is c composed as looped makes it, and more — half its agents composites: parallel
// groups that may take a majority vote (flow.MajorityVote), scripted members that ignore their
// context (linger), and composite and tool-calling members whose timeouts cut them short
// (deadlined). Its choices come from c's seed under salts of their own, so the composed and
// looped cases stay as they were before it was added.
func (c *propCase) timed() *propCase { return c.withComps("/timed", 2, true, true) }

// withComps is c with one in every agents of its agents, and at least one planned, built as
// composites by genComp(…, loops, timed), chosen by hashes of c's seed under salt.
func (c *propCase) withComps(salt string, every uint64, loops, timed bool) *propCase {
	v := *c
	v.comps = map[string]*compSpec{}
	var planned []string
	for _, a := range c.agents {
		h := hash64(c.seed, salt+"/", a)
		if !strings.HasPrefix(a, "fb") {
			planned = append(planned, a)
		}
		if h%every == 0 {
			v.comps[a] = genComp(h>>2, 0, loops, timed)
		}
	}
	if !slices.ContainsFunc(planned, func(a string) bool { return v.comps[a] != nil }) {
		a := planned[hash64(c.seed, salt)%uint64(len(planned))]
		v.comps[a] = genComp(hash64(c.seed, salt+"/", a)>>2, 0, loops, timed)
	}
	return &v
}

// genComp makes a composite of 2–3 members from h (a loop, of one); at depth 0 a member may be
// a composite. With ext, it may make a loop, and members with timeouts. With wild too, a
// group may take a majority vote, a scripted member may ignore its context, and a composite
// or tool-calling member may have a timeout it does not always finish within; those choices
// come from a hash of h of their own, so the choices ext makes stay as they were.
func genComp(h uint64, depth int, ext, wild bool) *compSpec {
	s := &compSpec{}
	x := hash64(h, "/wild")
	if ext {
		s.par, s.loop = h%3 == 1, h%3 == 2
		h /= 3
	} else {
		s.par = h&1 == 1
		h >>= 1
	}
	switch {
	case s.loop:
		s.limit = 1 + int(h%3)
		h /= 3
	case s.par:
		s.strategy = []flow.Strategy{flow.CollectAll, flow.CollectAll, flow.FirstSuccess}[h%3]
		h /= 3
		if wild && x%2 == 0 {
			s.strategy = flow.MajorityVote
		}
		s.limit = int(h % 3)
		h /= 3
	default:
		s.onError = flow.ErrorMode(h % 2)
		h /= 2
	}
	n := 2 + int(h%2)
	h /= 2
	if s.loop {
		n = 1
	}
	for i := range n {
		m := compMember{name: fmt.Sprintf("m%d", i), writes: h%3 == 0}
		h /= 3
		if depth == 0 && h%5 == 0 {
			m.sub = genComp(hash64(h, "/", i), depth+1, ext, wild)
		}
		h /= 5
		if ext {
			// A composite's time is its members', which no timeout of its own cuts short
			// identically in a resumed run (see timedOut): a composite member's timeout is
			// one it never reaches.
			switch t := h % 4; {
			case t == 1 || t == 2 && m.sub != nil:
				m.timeout = noTimeout
			case t == 2:
				// Of its own length, so that two members started at one instant do not time
				// out at one instant, in no set order.
				m.timeout = 100*time.Millisecond + time.Duration(hash64(h, "/timeout/", i)%uint64(500*time.Millisecond))
			}
			h /= 8
			m.tool = m.sub == nil && h%4 == 0
			h /= 4
			if m.tool && m.timeout > 0 {
				// Its time is its tool's and its own, which timedAgent does not model: a
				// timeout it never reaches.
				m.timeout = noTimeout
			}
		}
		if wild {
			y := hash64(x, "/", i)
			switch {
			case (m.sub != nil || m.tool) && y%3 != 0:
				// One the world keeps in the uninterrupted timeline itself (deadlined). Of
				// its own length, as a scripted member's.
				m.timeout = 150*time.Millisecond + time.Duration((y>>4)%uint64(700*time.Millisecond))
				if m.sub != nil {
					calm(m.sub)
				}
			case m.sub == nil && !m.tool && (y>>2)%3 == 0:
				m.linger = 50*time.Millisecond + time.Duration((y>>8)%uint64(600*time.Millisecond))
				if m.linger == stray.Grace {
					m.linger++ // not returning at the very moment its composite gives up on it
				}
			}
		}
		s.members = append(s.members, m)
	}
	return s
}

// calm makes s's members, at any depth, honour their context: a composite member the world cuts
// short at its timeout (deadlined) must return as soon as its context ends, or its composite
// would abandon it at a moment the world does not keep in the uninterrupted timeline.
func calm(s *compSpec) {
	for i := range s.members {
		s.members[i].linger = 0
		if s.members[i].sub != nil {
			calm(s.members[i].sub)
		}
	}
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
	// Virtual times at which a planned composite ended, not completed, at the very moment it
	// started (its first member refused for a spent budget, say), and how many did (see tied).
	failedAtOnce map[time.Duration]int
	// Virtual times at which members' timeouts cut them short, and how many (see tied).
	timedOutAt map[time.Duration]map[string]bool
	// Virtual times at which planned composites returned once the run was ending (their
	// context done), and how many (see tied).
	endedAt map[time.Duration]int
	// Segments resumed with answers (reviews approved, most often), and segments at whose very
	// start a planned composite started (see reviewRaced).
	answeredAtStart, composedAtStart map[int]bool
	// Segments at whose very start a planned composite made again returned (its members'
	// results all in the log or given as answers), whatever its result (see raced).
	returnedAtStart map[int]bool
	// The virtual time the segment's work ended at: the last return of a planned agent (the
	// run pauses then), or the moment the process died. The next segment begins then, not
	// once members that ignore their context and were left running have returned (the run's
	// teardown, or a dead process's, waits for them): a resumed run has none such of its own,
	// as a member it runs again ends itself where its composite gave up on it (lingering).
	segEnd  time.Duration
	crashed bool
	// lateDone: a member that ignores its context finished its work after its context ended
	// (its run or composite ending, or its own deadline passing, within the grace), or at
	// that very moment. A run resumed after a stop that knows the run is ending makes no
	// member again, so it cannot know the member would have finished (see lingering).
	lateDone bool
	// rewrapped: a member that ignores its context, run again by a resumed run whose
	// composite's timer started again with it, ended itself as abandoned when its composite
	// abandoned it in the run that was not stopped, but past the deadline of the timer that
	// started again: its composite, within the grace it gives, wraps that error as a timeout
	// of its own, and the abandonment its warning names is lost. (The member cannot instead
	// run on to be abandoned: its composite would abandon it later than in the run that was
	// not stopped, and what happened between would come in another order.)
	rewrapped bool
	// heldPastEnd: a member that ignores its context held its composite past the moment
	// the composite's context ended (another branch of its group won, say). A resumed run
	// that takes what ended that context from its log does not make the member again, and
	// its composite ends at once: before, not after, what the run did meanwhile (planned
	// dispatches finishing, failing the run, or spending its budget).
	heldPastEnd bool
	// pastDeadline: a deadlined member was made again, by a run resumed after the process
	// died, past the deadline of its first start (the process died as its timer passed,
	// before its result was recorded). Its context is done before it starts, and its
	// composite (flow) does not make again a member the log shows started and unfinished,
	// which its timer cut short in the run that was not stopped: left open, it runs again,
	// under a timer of its own started again, once the run pauses and the composite is
	// made again for the answer. The engine starts every timer again when it makes a
	// dispatch again; only the world keeps the first one.
	pastDeadline bool
	// The deadlined members (their vstart keys) that returned paused for a human since the
	// run last paused.
	pausedDeadlines map[string]bool
}

// unfaithful says whether the world could not keep the uninterrupted timeline (see rewrapped,
// pastDeadline and heldPastEnd).
func (w *world) unfaithful() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.rewrapped || w.pastDeadline || w.heldPastEnd
}

// reviewRaced says whether, in one segment, a planned composite started at the very moment
// the segment began, which resumed with answers: a review approved then completes at that
// moment, what its agent used counted against the budgets, while the composite asks the run
// to admit its first member, at one virtual instant, in no set order (a planned dispatch's
// admission is decided in order, a member's on the composite's goroutine). With the budgets
// crossed by that use (logged is where a run's log says so), the member is refused or not,
// in the run that was not stopped as in one that was.
func (w *world) reviewRaced(logged bool) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for seg := range w.composedAtStart {
		if w.answeredAtStart[seg] && logged {
			return true
		}
	}
	return false
}

// budgetLogged says whether a log records a budget spent.
func budgetLogged(evs []troupe.Event) bool {
	return slices.ContainsFunc(evs, func(ev troupe.Event) bool { return ev.Kind == troupe.KindBudgetExhausted })
}

// tied says whether two planned composites ended, not completed, at one virtual instant, at
// which they both started, or two members' timeouts cut them short at one instant (two
// dispatches of one composite started together: their members have the same timeouts): two
// failures at one moment, in no set order, of which the first fails the run (fail_fast) and
// has the other cancelled, in one run as in another. (A scripted dispatch fails after a time
// of its own, so two of those do not tie.) So too two planned composites the run's end
// cancelled at one instant: each then ends as its finished members let it (a collect_all
// group with a completed member completes), at that instant, in no set order, and the order
// their results are recorded in (the aggregation's execution order, which of their writes
// comes last) is that of two goroutines, in one run as in another.
func (w *world) tied() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, n := range w.failedAtOnce {
		if n > 1 {
			return true
		}
	}
	for _, ids := range w.timedOutAt {
		if len(ids) > 1 {
			return true
		}
	}
	for _, n := range w.endedAt {
		if n > 1 {
			return true
		}
	}
	return false
}

// raced says whether, in one segment, a dispatch run again finished at the very moment the
// segment began while dispatches waiting for a human were made again: two things at one
// virtual instant, in no set order, which the run that was not stopped did one after the other.
// So too a segment resumed with answers at whose start a planned composite made again
// returned at once: its result (blocked by a guardrail, say) may fail the run before or after
// another composite made again for its answer starts its member again.
func (w *world) raced() bool {
	for seg := range w.finishedAtStart {
		if w.waitingAtStart[seg] {
			return true
		}
	}
	for seg := range w.returnedAtStart {
		if w.answeredAtStart[seg] {
			return true
		}
	}
	return false
}

func newWorld(c *propCase) *world {
	return &world{c: c, segStart: time.Now(), vstart: map[string]time.Duration{}, answered: map[string]time.Duration{}, calls: map[string][]int{},
		finishedAtStart: map[int]bool{}, waitingAtStart: map[int]bool{}, failedAtOnce: map[time.Duration]int{}, timedOutAt: map[time.Duration]map[string]bool{},
		endedAt: map[time.Duration]int{}, answeredAtStart: map[int]bool{}, composedAtStart: map[int]bool{}, returnedAtStart: map[int]bool{}, pausedDeadlines: map[string]bool{}}
}

func (w *world) nextSegment() {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Now()
	w.segV = w.segEnd
	w.segStart = now
	w.seg++
	if !w.crashed {
		// The run paused: a deadlined member that paused for a human is made again, when
		// its answer comes, with its timer started again, in the run that was not stopped as
		// in one that was. (Not after the process died: one made again then, its result
		// not in the log, runs on with the timer of its first start.)
		for key := range w.pausedDeadlines {
			delete(w.vstart, key)
		}
		clear(w.pausedDeadlines)
	}
	w.crashed = false
}

// ended notes that a planned agent returned, or, with crash, that the process died: the
// segment's work ends then at the earliest.
func (w *world) ended(crash bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.crashed {
		return // nothing after the process died counts
	}
	w.crashed = crash
	w.segEnd = max(w.segEnd, time.Since(w.segStart)+w.segV)
}

// top is a, a planned agent, noting when it returns (segEnd).
func (w *world) top(a troupe.Agent) troupe.Agent {
	return owned(a, func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		defer w.ended(false)
		return a.Run(ctx, d)
	})
}

// diesAt is the store of a segment whose process dies once the store refuses an append: it
// notes the moment in w.
type diesAt struct {
	*crashingStore
	w *world
}

func (s diesAt) Append(ctx context.Context, evs ...troupe.Event) error {
	err := s.crashingStore.Append(ctx, evs...)
	if errors.Is(err, errCrash) {
		s.w.ended(true)
	}
	return err
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

func (w *world) agent() troupe.Agent { return w.timedAgent(0, 0) }

// timedAgent is the world's scripted agent as a member with timeout (flow.WithTimeout; 0 for
// none). A dispatch its timeout cuts short ends when its timeout passes after it started (or,
// one that asked, after it was answered), with the error its composite gives it then: it was
// cut short at that virtual time in the run that was not stopped, and a dispatch run again
// after a stop, whose composite's timer starts again with it, ends so then too, as every
// dispatch run again finishes when it would have without the stop (see timedOut).
//
// With linger, it ignores its context (see lingering).
func (w *world) timedAgent(timeout, linger time.Duration) troupe.Agent {
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
		if linger > 0 {
			wrap, err := w.lingering(ctx, d, b, vs, v, seen, timeout, linger)
			if err != nil {
				return nil, err
			}
			res, err := w.outcome(d, b)
			switch {
			case wrap && err != nil:
				err = timedOut(d.TargetAgent, timeout, err)
			case wrap:
				// A result its composite took for a timeout then, returned past that
				// timeout (kept for what it used).
				err = timedOut(d.TargetAgent, timeout, context.DeadlineExceeded)
			}
			return res, err
		}
		cut := timeout > 0 && b.dur > timeout
		if cut {
			b.dur = timeout
			w.mu.Lock()
			if w.timedOutAt[vs+timeout] == nil {
				w.timedOutAt[vs+timeout] = map[string]bool{}
			}
			w.timedOutAt[vs+timeout][id] = true
			w.mu.Unlock()
			if dl, ok := ctx.Deadline(); ok && !dl.After(time.Now().Add(vs+b.dur-v)) {
				// Its composite's timer passes then (it runs with its first start): the
				// composite cuts it short itself, as in the run that was not stopped.
				<-ctx.Done()
				return nil, ctx.Err()
			}
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
		if cut {
			return nil, timedOut(d.TargetAgent, timeout, context.DeadlineExceeded)
		}
		return w.outcome(d, b)
	})
}

// outcome is what dispatch d, having done its work, returns, as b says.
func (w *world) outcome(d *troupe.Dispatch, b behaviour) (*troupe.Result, error) {
	id := d.DispatchID
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
}

// lingering does dispatch d's work, begun at virtual time vs (now v), as an agent that ignores
// its context does: once the context ends it works on for linger, or until its work is done,
// and then returns (the error it returns then, or nil when its work got done, as in the run
// that was not stopped). A member's timeout is kept in the uninterrupted timeline, as
// timedAgent keeps it: when its composite's timer runs with its first start (the deadline
// of its context is then), the composite cuts it short, or abandons it once it has not
// returned within the grace it gives; when its timer started again with a run resumed after
// a stop, the member ends itself at those moments, with the error its composite gives then.
// With wrap, it ends with its work done past its timeout, within the grace, and the error its
// outcome gives is to be wrapped as its composite wrapped it in the run that was not stopped.
func (w *world) lingering(ctx context.Context, d *troupe.Dispatch, b behaviour, vs, v time.Duration, seen bool, timeout, linger time.Duration) (wrap bool, err error) {
	end, vd := vs+b.dur, time.Duration(1<<62)
	if timeout > 0 {
		vd = vs + timeout
	}
	dl, ok := ctx.Deadline()
	own := timeout > 0 && ok && !dl.After(time.Now().Add(vd-v))
	dlV := v + dl.Sub(time.Now()) // the virtual time of its context's deadline, with ok
	if wait := min(end, vd) - v; wait > 0 {
		tm := time.NewTimer(wait)
		select {
		case <-tm.C:
		case <-ctx.Done():
			tm.Stop()
		}
	}
	now := w.now()
	ret := end // the virtual time it returns at
	switch {
	case end <= vd && now >= end:
		// Done before its context ended or its timeout passed; or at the very moment its
		// context ended (its run failing, say), which of the two came first a race, in the
		// run that was not stopped as in one that was (see lateDone).
		if ctx.Err() != nil {
			w.mu.Lock()
			w.lateDone = true
			w.mu.Unlock()
		}
	case now >= vd:
		w.mu.Lock()
		if w.timedOutAt[vd] == nil {
			w.timedOutAt[vd] = map[string]bool{}
		}
		w.timedOutAt[vd][d.DispatchID] = true
		w.mu.Unlock()
		switch ret = min(end, vd+linger); {
		case own && ret == end:
			// Done within the grace its composite gives it, past its deadline: what ended
			// its composite's context meanwhile (its run failing, say) raced its result
			// (see lateDone).
			if ret > vd {
				w.mu.Lock()
				w.lateDone = true
				w.mu.Unlock()
			}
		case own:
			// Its composite turns this into a timeout, or has gone on without it. (Not
			// ctx.Err(): the deadline may be yet to reach ctx at this very instant.) Held
			// past its deadline, it is a timeout though its composite's context ended
			// meanwhile (its run failing, say), which a resumed run that ends before making
			// it again cannot know (see lateDone).
			err = context.DeadlineExceeded
			if ret > vd {
				w.mu.Lock()
				w.lateDone = true
				w.mu.Unlock()
			}
		case ret-vd > stray.Grace:
			ret, err = vd+stray.Grace, abandoned(d.TargetAgent, timeout)
			if ok && dlV <= ret {
				w.mu.Lock()
				w.rewrapped = true
				w.mu.Unlock()
			}
		case ret < end:
			err = timedOut(d.TargetAgent, timeout, context.DeadlineExceeded)
			if ok && dlV <= ret {
				// The composite's timer that started again has passed too: it wraps
				// what its member returns itself.
				err = context.DeadlineExceeded
			}
		case ok && dlV <= ret:
			// Done within the grace, past both timers: its composite wraps an error
			// it ends with as a timeout itself, as in the run that was not stopped.
		default:
			// Done within the grace its composite gave it in the run that was not
			// stopped, before the timer that started again passes: an error it ends
			// with is wrapped as its composite wrapped it then.
			wrap = true
		}
	default:
		// Its context ended (its run or its composite is ending) before its work was done.
		if ret = min(end, now+linger); ret > now {
			w.mu.Lock()
			w.heldPastEnd = true
			w.mu.Unlock()
		}
		if ret < end {
			err = ctx.Err()
		} else {
			w.mu.Lock()
			w.lateDone = true
			w.mu.Unlock()
		}
	}
	if ret <= v && seen && w.seg > 0 {
		w.mu.Lock()
		if v == w.segV {
			w.finishedAtStart[w.seg] = true
		}
		w.mu.Unlock()
	}
	if wait := ret - w.now(); wait > 0 { // the work takes its time, whatever its context says
		tm := time.NewTimer(wait)
		<-tm.C
	}
	return wrap, err
}

// abandoned is the error a composite gives a member it abandoned, still running stray.Grace
// after its timeout passed (flow's invokeTimed): what the world's member ends itself with then
// when its composite's timer started again with a resumed run (lingering).
func abandoned(agent string, timeout time.Duration) error {
	return &troupe.AgentError{Code: troupe.CodeTimeout, Recoverable: true,
		Message: fmt.Sprintf("%s did not finish within %v and was abandoned, still running %v after its context ended", agent, timeout, stray.Grace),
		Details: map[string]any{"abandoned": true}, Cause: context.DeadlineExceeded}
}

// toolCaller is a, a scripted agent, that first calls another scripted agent through an agent
// tool (flow.AsTool), as an agent choosing among its tools does, and adds what the call used
// to its own result. A call that pauses for a human pauses it; one that fails otherwise it
// goes on from, as an agent told a tool failed does, unless its own context has ended. It
// reports what the call used however it ends.
func (w *world) toolCaller(a troupe.Agent) troupe.Agent {
	tool := flow.AsTool("helper", w.agent())
	return troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		uctx, use := flow.WithUsage(ctx)
		_, err := tool.Call(uctx, d, []byte(`{"task":"help"}`))
		if errors.Is(err, troupe.ErrPaused) {
			return nil, err
		}
		var res *troupe.Result
		if err = ctx.Err(); err == nil { // else its run is ending: it stops
			res, err = a.Run(ctx, d)
		}
		if res == nil {
			res = &troupe.Result{} // what it used, beside its error
		}
		use.AddTo(res)
		return res, err
	})
}

// timedOut is the error a composite gives a member its timeout cut short (flow's invokeTimed).
// A planned dispatch's deadline, and a member's timeout, start again when a resumed run runs
// it again: a member the timeout cut short in the run that was not stopped would end later, or
// not time out at all, in a run stopped while it ran. The world's member ends itself with this
// error when its timeout passes in the uninterrupted timeline instead, at the very moment its
// composite's timer does in that run.
func timedOut(agent string, timeout time.Duration, cause error) error {
	return &troupe.AgentError{Code: troupe.CodeTimeout, Recoverable: true, Message: fmt.Sprintf("%s did not finish within %v", agent, timeout),
		Cause: cause}
}

// composite builds s of the world's scripted agents.
func (w *world) composite(s *compSpec) troupe.Agent {
	var specs []*troupe.AgentSpec
	for _, m := range s.members {
		deadline := (m.sub != nil || m.tool) && m.timeout > 0 && m.timeout != noTimeout
		timeout := m.timeout
		if deadline {
			timeout = 0 // it is kept around the tool call and its work (deadlined)
		}
		a := w.timedAgent(timeout, m.linger)
		switch {
		case m.sub != nil:
			a = w.composite(m.sub)
		case m.tool:
			a = w.toolCaller(a)
		}
		if deadline {
			a = w.deadlined(a, m.timeout)
		}
		var opts []troupe.Option
		if m.writes {
			opts = append(opts, troupe.Writes("k"))
		}
		if m.timeout > 0 {
			opts = append(opts, troupe.WithTimeout(m.timeout))
		}
		specs = append(specs, flow.Named(m.name, a, opts...))
	}
	var a troupe.Agent
	switch {
	case s.loop:
		// It stops early as its cycle's dispatch id says: the same in every run of the case.
		seed := w.c.seed
		until := func(it flow.Iteration) bool { return hash64(seed, "/until/", it.Result.DispatchID)%3 == 0 }
		a = flow.Loop(flow.LoopConfig{MaxIterations: s.limit, Until: until}, specs[0])
	case s.par:
		cfg := flow.ParallelConfig{Strategy: s.strategy, MaxConcurrent: s.limit}
		if s.strategy == flow.MajorityVote {
			// Each branch's answer is its dispatch id's: the same in every run of the case,
			// and two branches disagree as often as not.
			seed := w.c.seed
			cfg.Answer = func(r *troupe.Result) string { return []string{"yes", "no"}[hash64(seed, "/vote/", r.DispatchID)%2] }
		}
		a = flow.Parallel(cfg, specs...)
	default:
		a = flow.Sequential(flow.SequentialConfig{OnError: s.onError}, specs...)
	}
	// Its runs are counted as its members' are (checkRanOnce).
	return owned(a, func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		w.mu.Lock()
		w.calls[d.DispatchID] = append(w.calls[d.DispatchID], w.seg)
		w.mu.Unlock()
		return a.Run(ctx, d)
	})
}

// ownedAgent runs as its func says, and sets up and tears down as the composite it wraps: a
// wrapper hiding the composite's Teardown would leave the members it abandoned past their
// timeout with no owner to wait for them.
type ownedAgent struct {
	troupe.AgentFunc
	inner troupe.Agent
}

func owned(inner troupe.Agent, run troupe.AgentFunc) troupe.Agent {
	return ownedAgent{AgentFunc: run, inner: inner}
}

func (a ownedAgent) Setup(ctx context.Context) error {
	if s, ok := a.inner.(troupe.Setupper); ok {
		return s.Setup(ctx)
	}
	return nil
}

func (a ownedAgent) Teardown(ctx context.Context) error {
	if td, ok := a.inner.(troupe.Teardowner); ok {
		return td.Teardown(ctx)
	}
	return nil
}

// deadlined is a, a composite or tool-calling member, with a timeout (flow.WithTimeout) kept in
// the uninterrupted timeline, as timedAgent keeps a scripted member's: it passes timeout after
// the member first started (or, after a pause for a human, started again: the run that was not
// stopped starts its timer again then too). When its composite's timer runs with that start,
// the composite cuts it short; when the timer started again with a run resumed after a stop,
// the member runs under a deadline of its own at that moment, and ends itself with the error
// its composite gives it then. Its members honour their context (calm), so it returns as its
// context ends, within the grace its composite gives it.
func (w *world) deadlined(a troupe.Agent, timeout time.Duration) troupe.Agent {
	return owned(a, func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		key := "deadline/" + d.DispatchID
		w.mu.Lock()
		v := time.Since(w.segStart) + w.segV
		vs, seen := w.vstart[key]
		if !seen {
			w.vstart[key], vs = v, v
		}
		w.mu.Unlock()
		vd := vs + timeout
		at := time.Now().Add(vd - v)
		if !at.After(time.Now()) {
			w.mu.Lock()
			w.pastDeadline = true // see world.pastDeadline
			w.mu.Unlock()
		}
		rctx := ctx
		if dl, ok := ctx.Deadline(); !ok || dl.After(at) {
			var cancel context.CancelFunc
			rctx, cancel = context.WithDeadline(ctx, at)
			defer cancel()
		}
		res, err := a.Run(rctx, d)
		w.mu.Lock()
		defer w.mu.Unlock()
		if errors.Is(err, troupe.ErrPaused) {
			w.pausedDeadlines[key] = true // see nextSegment
		}
		if time.Since(w.segStart)+w.segV < vd {
			return res, err
		}
		if w.timedOutAt[vd] == nil {
			w.timedOutAt[vd] = map[string]bool{}
		}
		w.timedOutAt[vd][key] = true
		switch {
		case err != nil && rctx != ctx && ctx.Err() == nil:
			// As its composite wraps what its member returned (the message carries it).
			err = &troupe.AgentError{Code: troupe.CodeTimeout, Recoverable: true, Message: fmt.Sprintf("%s did not finish within %v", d.TargetAgent, timeout),
				Cause: err}
		case rctx != ctx && ctx.Err() == nil && rctx.Err() != nil:
			// A result past its deadline (a cancelled collect_all group whose finished
			// members let it complete): too late, as its composite takes it.
			err = &troupe.AgentError{Code: troupe.CodeTimeout, Recoverable: true, Message: fmt.Sprintf("%s did not finish within %v", d.TargetAgent, timeout),
				Cause: context.DeadlineExceeded}
		}
		return res, err
	})
}

// planned is a, a planned composite, noting when it ends, not completed, at the moment it
// started, and when it ends once the run is ending (tied).
func (w *world) planned(a troupe.Agent) troupe.Agent {
	return owned(a, func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		start := w.now()
		w.mu.Lock()
		if w.seg > 0 && start == w.segV {
			w.composedAtStart[w.seg] = true
		}
		w.mu.Unlock()
		res, err := a.Run(ctx, d)
		failed := err != nil && !errors.Is(err, troupe.ErrPaused) || err == nil && res != nil && res.Status != "" && res.Status != troupe.StatusCompleted
		end := w.now()
		w.mu.Lock()
		if failed && end == start {
			w.failedAtOnce[start]++
		}
		if w.seg > 0 && start == w.segV && end == start {
			w.returnedAtStart[w.seg] = true
		}
		if ctx.Err() != nil {
			w.endedAt[end]++
		}
		w.mu.Unlock()
		return res, err
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
			agent = w.planned(w.composite(s))
		}
		agent = w.top(agent)
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
// crashAt events are recorded (the process dies) and resumes the run in a new engine, from a
// JSON copy of the log.
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
		if evs, _ := mem.Events(ctx, propRunID, 0); crashAt > 0 && seg > 0 && len(evs) > 0 {
			// The run that crashed resumes from its log as a durable store gives it back,
			// through JSON; the run it is compared with, from the memory store's own events.
			mem = jsonCopy(t, mem, propRunID)
		}
		before, _ := mem.Events(ctx, propRunID, 0)
		var store troupe.Store = mem
		var crashing *crashingStore
		if crashAt > 0 && !f.crashed {
			crashing = &crashingStore{Store: mem, n: crashAt - len(before)}
			store = diesAt{crashing, w}
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
			w.mu.Lock()
			w.waitingAtStart[seg] = waiting(before, answers)
			w.answeredAtStart[seg] = len(answers) > 0
			w.mu.Unlock()
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
	// Compared as JSON holds it: the resumed run's log went through JSON (see drive), which
	// gives an int a composite reported as a float64, a []string as a []any.
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var back runSummary
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	return back
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
//
// And a third time looped: as composed, but of composites that may also be flow.Loop ones
// (1–3 cycles, stopping early as their cycle's dispatch id says), of members that first call a
// scripted agent through an agent tool (flow.AsTool; toolCaller), and of members that may have
// a timeout (flow.WithTimeout): one no member reaches, or one that cuts the slower scripted
// members short. A member run again after a stop gets its whole timeout again, as a planned
// dispatch gets its deadline again, so the world's member ends itself when its timeout passes
// in the uninterrupted timeline (timedAgent). Two failures at one virtual instant, in no set
// order, leave a crash unchecked (world.tied).
//
// More cases, or others: -prop.cases and -prop.seed.
func TestResumeProperty(t *testing.T) {
	cases := 400
	if testing.Short() {
		cases = 100
	}
	if *propCases > 0 {
		cases = *propCases
	}
	rng := rand.New(rand.NewPCG(*propSeed, 1))
	for i := range cases {
		c := genCase(rng)
		t.Run(fmt.Sprint("case ", i), func(t *testing.T) { checkResume(t, c, rand.New(rand.NewPCG(c.seed, 2))) })
		// The same case with some of its agents composites of scripted members: their
		// members' events are nested in the log, and a resumed composite takes its finished
		// members' results from it.
		t.Run(fmt.Sprint("case ", i, " composed"), func(t *testing.T) { checkResume(t, c.composed(), rand.New(rand.NewPCG(c.seed, 3))) })
		// Composed again, of loops too, and of members with timeouts.
		t.Run(fmt.Sprint("case ", i, " looped"), func(t *testing.T) { checkResume(t, c.looped(), rand.New(rand.NewPCG(c.seed, 4))) })
		// And again, of majority votes too, of members that ignore their context, and of
		// composite and tool-calling members whose timeouts cut them short.
		t.Run(fmt.Sprint("case ", i, " timed"), func(t *testing.T) { checkResume(t, c.timed(), rand.New(rand.NewPCG(c.seed, 5))) })
	}
}

// Searching further than the fixed cases: go test ./engine -run TestResumeProperty
// -prop.cases 5000 -prop.seed 7. A case that fails is then case N of that seed (run it alone
// with -run 'TestResumeProperty/^case_N_looped$' and -prop.cases N+1).
var (
	propCases = flag.Int("prop.cases", 0, "TestResumeProperty: cases to generate (0: 400, or 100 with -short)")
	propSeed  = flag.Uint64("prop.seed", 20240607, "TestResumeProperty: the seed its cases are generated from")
)

// checkResume runs c uninterrupted, then crashed at events crashRNG picks and resumed, and
// compares (see TestResumeProperty).
func checkResume(t *testing.T, c *propCase, crashRNG *rand.Rand) {
	const crashes = 3
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(c)
		ref := drive(t, w, 0)
		tied := w.tied() || w.reviewRaced(budgetLogged(ref.log)) || w.lateDone
		troupetest.CheckLog(t, ref.log)
		checkRanOnce(t, w, ref)
		want := summarize(t, ref.log)
		opts := []cmp.Option{cmpopts.IgnoreFields(troupe.Aggregation{}, "TotalExecutionTimeMS")}
		if !c.human {
			// Reviews a paused run waits for all finish at the moment it resumes, in no
			// set order.
			opts = append(opts, inAnyOrder)
		}
		for range crashes {
			at := 1 + crashRNG.IntN(len(ref.log))
			w := newWorld(c)
			f := drive(t, w, at)
			troupetest.CheckLog(t, f.log)
			checkRanOnce(t, w, f)
			if f.lostCancel || w.tied() || tied || w.reviewRaced(budgetLogged(ref.log) || budgetLogged(f.log)) || w.unfaithful() {
				continue // see world.tied, world.reviewRaced and world.unfaithful
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

// inAnyOrder compares the aggregation's execution order as a set.
var inAnyOrder = cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".ExecutionOrder" },
	cmpopts.SortSlices(func(a, b string) bool { return a < b }))

// undecided is s without what a run with composites leaves undecided on resume: with raced
// (world.raced), a composite waiting for a human is made again at the moment a dispatch run
// again finishes, in no set order: it asks again and pauses before that dispatch fails the
// run, or is cancelled by the failure first. Either way it ends cancelled, with what its
// members used, but its members' statuses (paused, or cancelled) depend on which came first.
//
// (A first_success group whose branch paused for a human before another branch won was
// undecided too, its result's warning of the pause kept or not, until a resumed group taking
// its winner from the log reported the paused branch as the log shows it: PausedResult.)
func undecided(s runSummary, raced bool) runSummary {
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
			if d.CostDollars != nil {
				fmt.Fprintf(&b, " $%v", *d.CostDollars)
			}
			if d.TokensUsed != nil {
				fmt.Fprintf(&b, " %dtok", *d.TokensUsed)
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
