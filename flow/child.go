package flow

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/aggregate"
	"github.com/troupehq/troupe/internal/jsonvalue"
	"github.com/troupehq/troupe/internal/schema"
	"github.com/troupehq/troupe/internal/stray"
)

// Named returns the spec of a member of a composite: the agent, its name (which the composite's
// nested events, handoffs and results carry) and the usual registration options — Reads,
// Writes, WithTimeout, InputSchema, OutputSchema, MaxDepth, Guard — which the composite
// applies to its member as the engine does to a registered agent. Guardrails given to the
// engine or the request (troupe.Guarder) check members too, after the member's own.
func Named(name string, a troupe.Agent, opts ...troupe.Option) *troupe.AgentSpec {
	s := &troupe.AgentSpec{Name: name, Agent: a}
	for _, o := range opts {
		o(s)
	}
	return s
}

// MaxNesting bounds how deeply dispatches nest inside one another through composites and
// agent tools — counting the planned dispatch at the bottom — however they came to nest: a
// member that would be the MaxNesting+1th fails with a *troupe.MaxDepthExceededError before
// it starts. Real workflows nest a few levels; only a composite that runs itself goes deeper.
// It also bounds an agent tool's MaxDepth: AsTool with a larger one fails every call with a
// configuration error.
const MaxNesting = 64

// member is a composite's compiled member.
type member struct {
	spec    *troupe.AgentSpec
	in, out *schema.Schema
	// tool: the agent of an agent tool (AsTool), whose own tool calls' spending runNew folds
	// into its result (see foldToolUse).
	tool bool
}

// compile checks a composite's members once, at its first run.
func compile(what string, specs []*troupe.AgentSpec) ([]member, error) {
	if len(specs) == 0 {
		return nil, fmt.Errorf("flow: %s: no agents", what)
	}
	ms := make([]member, len(specs))
	seen := make(map[string]bool, len(specs))
	for i, s := range specs {
		switch {
		case s == nil:
			return nil, fmt.Errorf("flow: %s: agent %d is nil", what, i)
		case s.Name == "":
			return nil, fmt.Errorf("flow: %s: agent %d has no name", what, i)
		case s.Agent == nil:
			return nil, fmt.Errorf("flow: %s: agent %d (%s) is nil", what, i, s.Name)
		case seen[s.Name]:
			return nil, fmt.Errorf("flow: %s: agent name %q appears twice", what, s.Name)
		case s.Timeout < 0:
			return nil, fmt.Errorf("flow: %s: agent %s: negative timeout %v", what, s.Name, s.Timeout)
		case s.MaxDepth < 0:
			return nil, fmt.Errorf("flow: %s: agent %s: negative max depth %d", what, s.Name, s.MaxDepth)
		}
		seen[s.Name] = true
		m, err := compileOne(s)
		if err != nil {
			return nil, fmt.Errorf("flow: %s: %w", what, err)
		}
		ms[i] = m
	}
	return ms, nil
}

func compileOne(s *troupe.AgentSpec) (member, error) {
	in, out, err := schema.CompileAgent(s.Name, s.InputSchema, s.OutputSchema)
	return member{spec: s, in: in, out: out}, err
}

// lazy compiles members once and keeps the outcome.
type lazy struct {
	once    sync.Once
	members []member
	err     error
}

func (l *lazy) get(what string, specs []*troupe.AgentSpec) ([]member, error) {
	l.once.Do(func() { l.members, l.err = compile(what, specs) })
	return l.members, l.err
}

// reader reads session state.
type reader interface {
	get(key string) (any, bool)
}

// view is session state as a nested dispatch sees it: readable and writable.
type view interface {
	reader
	set(delta map[string]any)
}

// dispatchState reads the state an enclosing dispatch sees.
type dispatchState struct{ d *troupe.Dispatch }

func (s dispatchState) get(k string) (any, bool) { return s.d.State(k) }

// overlay keeps writes on top of what it reads below: a composite's writes over its dispatch's
// state, or one parallel branch's over the frozen state of its group.
type overlay struct {
	below  reader
	mu     sync.Mutex
	writes map[string]any
}

func over(d *troupe.Dispatch) *overlay { return &overlay{below: dispatchState{d}} }

func (v *overlay) get(k string) (any, bool) {
	v.mu.Lock()
	x, ok := v.writes[k]
	v.mu.Unlock()
	if ok {
		return x, true
	}
	return v.below.get(k)
}

func (v *overlay) set(delta map[string]any) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.writes == nil {
		v.writes = make(map[string]any, len(delta))
	}
	maps.Copy(v.writes, delta)
}

func (v *overlay) snapshot() map[string]any {
	v.mu.Lock()
	defer v.mu.Unlock()
	return maps.Clone(v.writes)
}

// frozen is what every branch of a parallel group reads beneath its own writes: the state as it
// was, each key captured the first time any branch reads it, so no branch sees another's writes
// nor a change made outside the group while it runs.
type frozen struct {
	below reader
	mu    sync.Mutex
	seen  map[string]frozenValue
}

type frozenValue struct {
	v  any
	ok bool
}

func (f *frozen) get(k string) (any, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if x, hit := f.seen[k]; hit {
		return x.v, x.ok
	}
	v, ok := f.below.get(k)
	if f.seen == nil {
		f.seen = make(map[string]frozenValue)
	}
	f.seen[k] = frozenValue{v, ok}
	return v, ok
}

// bound returns n, or def when n is 0 (a config's zero value is bounded, never unlimited).
func bound(n, def int) int {
	if n == 0 {
		return def
	}
	return n
}

// nested is the runtime of a dispatch a composite runs itself: state from its view, events to
// the enclosing runtime's Emitter with Parent set, questions to the enclosing runtime. Once cut
// is closed (the composite abandoned a member past its timeout), it reaches none of them: what
// the member does then belongs to no run. Its ids and execution context stay readable.
type nested struct {
	outer    troupe.DispatchRuntime // the enclosing dispatch's runtime; nil outside a run
	em       troupe.Emitter         // outer as an Emitter, or nil
	tc       troupe.Context         // this dispatch's execution context
	parentID string                 // the enclosing dispatch
	id       string
	agent    string
	st       view
	children atomic.Uint64
	asked    atomic.Uint64 // questions asked by this dispatch
	// enclosing names the agents whose dispatches enclose this one, outermost first: the
	// planned composite, the members and tool callers down to this dispatch's parent. An agent
	// tool refuses to call one of them (a cycle), however the nesting came about.
	enclosing []string
	cut       *cutoff // nil for a member without a timeout, which is never abandoned
	// running holds the dispatch_started events recorded through Emit, of dispatches nested
	// in this one at any depth, that no end has answered yet, in the order they started; kept
	// only when cut is set. A member abandoned past its timeout records nothing any more, so
	// its composite ends these for it (endRunning): else a terminal log would hold their
	// starts unanswered, and a run resumed from it would end them where this run did not.
	runningMu sync.Mutex
	running   []troupe.Event
}

// enclosingOf is the chain of agents whose dispatches enclose a dispatch nested in d, d's own
// agent last: d's enclosing chain when d is itself nested, then d's agent.
func enclosingOf(d *troupe.Dispatch) []string {
	chain := d.Enclosing()
	if d.TargetAgent == "" {
		return chain
	}
	return append(chain[:len(chain):len(chain)], d.TargetAgent)
}

// Enclosing names the agents whose dispatches enclose this one (troupe.Encloser).
func (n *nested) Enclosing() []string { return slices.Clip(n.enclosing) }

func (n *nested) State(key string) (any, bool) {
	if !n.cut.enter() {
		return nil, false
	}
	defer n.cut.leave()
	return n.st.get(key)
}

func (n *nested) Progress(kind string, data any) {
	if !n.cut.enter() {
		return
	}
	defer n.cut.leave()
	n.emit(troupe.Event{Kind: troupe.KindAgentProgress, DispatchID: n.id, Agent: n.agent, Data: &troupe.Progress{Kind: kind, Data: data}})
}

// Ask asks through the enclosing dispatch. The question belongs to this nested dispatch: its
// id is derived from this dispatch's id and how many it asked, so a resumed run, which may take
// other members' results from the log instead of running them (and asking what they asked),
// still matches each recorded answer to its question. A member abandoned past its timeout asks
// nobody; one that asked before it was abandoned is answered as the enclosing runtime answers
// (the question is not held under the cut's lock: a person may take long to answer).
func (n *nested) Ask(ctx context.Context, q troupe.Question) (troupe.Answer, error) {
	if !n.cut.enter() {
		return troupe.Answer{}, errAbandoned
	}
	n.cut.leave()
	if n.outer == nil {
		return troupe.Answer{}, fmt.Errorf("%w: dispatch is not attached to a run", troupe.ErrPaused)
	}
	if q.DispatchID == "" { // asked here, not by a dispatch nested in this one
		q.DispatchID, q.Agent = n.id, n.agent
		q.ID = n.id + "-q" + strconv.FormatUint(n.asked.Add(1), 10)
	}
	return n.outer.Ask(ctx, q)
}

// Admit asks the enclosing dispatch whether a composite nested in this one may start another
// member (troupe.Admitter): the run's budgets hold at every depth.
func (n *nested) Admit() error {
	if !n.cut.enter() {
		return errAbandoned
	}
	defer n.cut.leave()
	if a, ok := n.outer.(troupe.Admitter); ok {
		return a.Admit()
	}
	return nil
}

// AdmitDispatch asks the enclosing runtime whether the nested dispatch d may start
// (dispatchAdmitter), or, when it cannot say for d, whether any may (troupe.Admitter).
func (n *nested) AdmitDispatch(d *troupe.Dispatch) (resuming bool, err error) {
	if !n.cut.enter() {
		return false, errAbandoned
	}
	defer n.cut.leave()
	switch a := n.outer.(type) {
	case dispatchAdmitter:
		return a.AdmitDispatch(d)
	case troupe.Admitter:
		return false, a.Admit()
	}
	return false, nil
}

// dispatchAdmitter is troupe.Admitter asked of one nested dispatch: the engine's runtime in a
// resumed run admits a member its log shows started, which the run that made the log found
// within budget, whatever the budgets say now (it makes a planned dispatch its log shows
// started so too). With the run ending it admits only a member the log shows running members
// of its own, a composite, reporting resuming: that member runs though its context is done,
// to take its finished members' results from the log and end as they let it, as it did when
// the run that made the log cancelled it mid-way. One the log shows waiting for a human it
// refuses with an error wrapping troupe.ErrPaused: the member pauses, as it did then. Any
// member refused because the run failed or was cancelled, before its composite's context
// ended, it refuses with an error that is context.Canceled: the member is cancelled, as it
// would be a moment later.
type dispatchAdmitter interface {
	AdmitDispatch(d *troupe.Dispatch) (resuming bool, err error)
}

// admit asks whether member dispatch d may start: of the runtime, for d when it can say.
func (f *frame) admit(d *troupe.Dispatch) (resuming bool, err error) {
	if a, ok := f.outer.(dispatchAdmitter); ok {
		return a.AdmitDispatch(d)
	}
	return false, f.d.Admit()
}

// runningMembers is asked of the runtime whether a resumed run's log shows member dispatch d,
// a composite, unfinished when it stopped: running members of its own, or with one waiting
// for a human while others had finished. A group whose context has ended makes such a
// composite again, cancelled, to take its finished members from the log and end as they let
// it. It has no side effects, unlike dispatchAdmitter, which counts against budgets what it
// admits.
type runningMembers interface {
	RanMembers(d *troupe.Dispatch) bool
}

// ranMembers says whether the log shows member dispatch d, a composite, unfinished
// (runningMembers).
func (f *frame) ranMembers(d *troupe.Dispatch) bool {
	r, ok := f.outer.(runningMembers)
	return ok && r.RanMembers(d)
}

// pausedRecorder is asked of the runtime, by a first_success group whose winner it took from
// a resumed run's log, for the result the log holds of member dispatch d if d had stopped to
// wait for a human: the win made the question moot, and the group reports d as it did.
type pausedRecorder interface {
	PausedResult(d *troupe.Dispatch) (*troupe.Result, bool)
}

// pausedResult returns the result the log holds of member dispatch d, paused for a human.
func (f *frame) pausedResult(d *troupe.Dispatch) (*troupe.Result, bool) {
	if r, ok := f.outer.(pausedRecorder); ok {
		return loggedCopy(r.PausedResult(d))
	}
	return nil, false
}

// loggedCopy is a copy of res, a result the log holds, that a composite may change: the log's
// copy stays as recorded.
func loggedCopy(res *troupe.Result, ok bool) (*troupe.Result, bool) {
	if !ok {
		return nil, false
	}
	cp := *res
	cp.Errors, cp.Warnings = slices.Clip(cp.Errors), slices.Clip(cp.Warnings)
	return &cp, true
}

// pauseRecorder is asked of the runtime, by a first_success group another branch of which won
// and cancelled member dispatch d before d got back to asking the question it had stopped for,
// for the result a resumed run's log holds of d paused, if the run still has no answer to that
// question nor anyone to ask: d would have paused again at once, and it paused before the win
// the first time. What d used its live result counts: the runtime does not count it again.
type pauseRecorder interface {
	PausedAgain(d *troupe.Dispatch) (*troupe.Result, bool)
}

// pausedAgain returns the result the log holds of member dispatch d, paused for a human the run
// still cannot ask (pauseRecorder).
func (f *frame) pausedAgain(d *troupe.Dispatch) (*troupe.Result, bool) {
	if r, ok := f.outer.(pauseRecorder); ok {
		return loggedCopy(r.PausedAgain(d))
	}
	return nil, false
}

// PausedAgain passes the question on to the enclosing runtime (pauseRecorder).
func (n *nested) PausedAgain(d *troupe.Dispatch) (*troupe.Result, bool) {
	if !n.cut.enter() {
		return nil, false
	}
	defer n.cut.leave()
	if r, ok := n.outer.(pauseRecorder); ok {
		return r.PausedAgain(d)
	}
	return nil, false
}

// recordOrder is asked of the runtime, by a first_success group taking two completed branches
// from a resumed run's log that finished at one instant, where the log holds member dispatch
// d's result: the one recorded first won.
type recordOrder interface {
	RecordedAt(d *troupe.Dispatch) int
}

// recordedAt is where the log holds member dispatch d's result, or -1 when the runtime cannot
// say.
func (f *frame) recordedAt(d *troupe.Dispatch) int {
	if r, ok := f.outer.(recordOrder); ok {
		return r.RecordedAt(d)
	}
	return -1
}

// RecordedAt passes the question on to the enclosing runtime (recordOrder).
func (n *nested) RecordedAt(d *troupe.Dispatch) int {
	if !n.cut.enter() {
		return -1
	}
	defer n.cut.leave()
	if r, ok := n.outer.(recordOrder); ok {
		return r.RecordedAt(d)
	}
	return -1
}

// PausedResult passes the question on to the enclosing runtime (pausedRecorder).
func (n *nested) PausedResult(d *troupe.Dispatch) (*troupe.Result, bool) {
	if !n.cut.enter() {
		return nil, false
	}
	defer n.cut.leave()
	if r, ok := n.outer.(pausedRecorder); ok {
		return r.PausedResult(d)
	}
	return nil, false
}

// RanMembers passes the question on to the enclosing runtime (runningMembers).
func (n *nested) RanMembers(d *troupe.Dispatch) bool {
	if !n.cut.enter() {
		return false
	}
	defer n.cut.leave()
	r, ok := n.outer.(runningMembers)
	return ok && r.RanMembers(d)
}

// Recorded passes a composite nested in this one the results the run's log recorded for its
// members (troupe.Recorder).
func (n *nested) Recorded(d *troupe.Dispatch) (*troupe.Result, bool) {
	if !n.cut.enter() {
		return nil, false
	}
	defer n.cut.leave()
	if r, ok := n.outer.(troupe.Recorder); ok {
		return r.Recorded(d)
	}
	return nil, false
}

// RunGuardrails passes the run's guardrails on to composites nested in this one
// (troupe.Guarder).
func (n *nested) RunGuardrails() []troupe.Guardrail {
	if !n.cut.enter() {
		return nil
	}
	defer n.cut.leave()
	if g, ok := n.outer.(troupe.Guarder); ok {
		return g.RunGuardrails()
	}
	return nil
}

// Partial is dropped: a nested dispatch's partial result is not its composite's.
func (n *nested) Partial(map[string]any) {}

// Emit records an event of an agent nested in this one (a composite inside a composite).
func (n *nested) Emit(ev troupe.Event) {
	if !n.cut.enter() {
		return
	}
	defer n.cut.leave()
	if ev.Parent == "" {
		ev.Parent = n.id
	}
	if ev.Context == nil {
		c := n.tc.Child()
		ev.Context = &c
	}
	if n.em != nil {
		n.em.Emit(ev)
		if n.cut != nil {
			n.track(ev)
		}
	}
}

// track notes ev, an event of a dispatch nested in this one, in running.
func (n *nested) track(ev troupe.Event) {
	n.runningMu.Lock()
	defer n.runningMu.Unlock()
	switch ev.Kind {
	case troupe.KindDispatchStarted:
		n.running = append(n.running, ev)
	case troupe.KindDispatchCompleted, troupe.KindDispatchFailed:
		n.running = slices.DeleteFunc(n.running, func(s troupe.Event) bool { return s.DispatchID == ev.DispatchID })
	}
}

// endRunning records the dispatches nested in this one that are still running as cancelled
// with it, the last started first, once its composite abandoned it (its cut is closed, so
// none of them records anything more).
func (n *nested) endRunning(why string) {
	n.runningMu.Lock()
	running := n.running
	n.running = nil
	n.runningMu.Unlock()
	now := time.Now()
	for _, s := range slices.Backward(running) {
		d, _ := s.Data.(*troupe.Dispatch)
		if d == nil {
			continue
		}
		res := &troupe.Result{DispatchID: d.DispatchID, SessionID: d.SessionID, QueryID: d.QueryID, AgentName: d.TargetAgent,
			Status: troupe.StatusCancelled, StartedAt: d.DispatchedAt, CompletedAt: now, ExecutionTimeMS: max(now.Sub(d.DispatchedAt).Milliseconds(), 0),
			Errors: []troupe.ErrorInfo{{Code: troupe.CodeCancelled, Message: why}}}
		if t := n.TraceID(); t != "" {
			res.TraceID = &t
		}
		n.em.Emit(troupe.Event{Kind: troupe.KindDispatchFailed, DispatchID: d.DispatchID, Agent: d.TargetAgent, Parent: s.Parent,
			Context: s.Context, Status: res.Status, Data: res})
	}
}

func (n *nested) ExecutionContext() troupe.Context { return n.tc }

// TraceID gives a nested agent its run's trace id (troupe.Dispatch.TraceID), as the engine
// gives a planned one.
func (n *nested) TraceID() string {
	if n.em != nil {
		return n.tc.TraceID()
	}
	if t, ok := n.outer.(interface{ TraceID() string }); ok {
		return t.TraceID()
	}
	return ""
}

func (n *nested) NextChild() uint64 { return n.children.Add(1) - 1 }

// emit records one of this dispatch's own events: its context, the enclosing dispatch as parent.
// The composite records its member's dispatch events with it, whether or not cut is closed.
func (n *nested) emit(ev troupe.Event) {
	if n.em == nil {
		return
	}
	ev.Parent = n.parentID
	ev.Context = &n.tc
	n.em.Emit(ev)
}

// childID derives a nested dispatch's id from its parent's and its position, so a replayed run
// makes the same ids.
func childID(parent string, salt uint64, parts ...uint64) string {
	h := fnv.New64a()
	h.Write([]byte(parent))
	var b [8]byte
	for _, p := range append([]uint64{salt}, parts...) {
		for i := range b {
			b[i] = byte(p >> (8 * i))
		}
		h.Write(b[:])
	}
	return troupe.NewDispatchID(splitmix(h.Sum64()))
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// Salts keep the ids of different kinds of children of one dispatch apart.
const (
	saltStep uint64 = iota + 1
	saltBranch
	saltIteration
	saltTool
)

// input is what a composite gives one member's dispatch.
type input struct {
	id       string
	reason   string
	query    string
	parsed   map[string]any
	upstream []troupe.UpstreamResult
	mode     troupe.ExecutionMode
	user     map[string]any // replaces user_context when set
}

// frame is what a composite knows about its own dispatch, shared by its members' dispatches.
type frame struct {
	peers []member // the composite's members, which STATE_MISSING's fallback names writers among
	d     *troupe.Dispatch
	outer troupe.DispatchRuntime
	em    troupe.Emitter
	tc    troupe.Context
	// strays are the composite's members abandoned past their timeout, still running: its
	// Teardown waits for them.
	strays *stray.Tracker
}

func frameOf(d *troupe.Dispatch, strays *stray.Tracker) frame {
	f := frame{d: d, outer: d.Runtime(), strays: strays}
	if f.em = d.Emitter(); f.em != nil {
		f.tc = f.em.ExecutionContext()
	}
	return f
}

// run runs member m as a nested dispatch of f's: it builds the dispatch, checks declared state
// and the input schema, runs the agent (recovering a panic), builds and checks the result,
// applies its declared writes to st, and records it all as nested events. It also returns the
// error the agent (or the checks before it) returned, which the result holds only as text.
func (f *frame) run(ctx context.Context, m *member, in input, st view) (*troupe.Result, error) {
	d := f.dispatchOf(m, in)
	if res, err, ok := f.recorded(m, &d, st); ok {
		return res, err
	}
	return f.runNew(ctx, m, &d, in, st)
}

// dispatchOf builds the dispatch of member m for in.
func (f *frame) dispatchOf(m *member, in input) troupe.Dispatch {
	d := *f.d // the wire fields of the enclosing dispatch; the runtime is replaced by runNew
	d.DispatchID, d.TargetAgent, d.DispatchReason = in.id, m.spec.Name, in.reason
	d.Query, d.ParsedQuery, d.UpstreamResults = in.query, in.parsed, in.upstream
	d.ExecutionMode, d.DependsOn = in.mode, nil
	if in.user != nil {
		d.UserContext = in.user
	}
	d.DispatchedAt = time.Now()
	if d.SessionID == "" {
		d.SessionID = "local" // a composite called outside a run: its results still need ids
	}
	if d.QueryID == "" {
		d.QueryID = "local"
	}
	if m.spec.Timeout > 0 {
		s := m.spec.Timeout.Seconds()
		d.TimeoutSeconds = &s
	}
	return d
}

// recorded takes the result a resumed run's log holds for d, member m's dispatch, if it holds
// one (troupe.Recorder), with the error it stands for; ok is false when there is none.
func (f *frame) recorded(m *member, d *troupe.Dispatch, st view) (_ *troupe.Result, _ error, ok bool) {
	if rec, ok := f.d.Recorded(d); ok {
		// A resumed run: the log holds how this member finished for this very input —
		// completed, failed, timed out or cancelled — so that is taken, not earned (or tried)
		// again, and the composite comes to the outcome the run that made the log came to. Its
		// events are in the log already; a completed member's declared writes apply as they did.
		res := *rec // the log's copy stays as recorded
		res.Errors, res.Warnings = slices.Clip(res.Errors), slices.Clip(res.Warnings)
		if res.Status != troupe.StatusCompleted {
			return &res, recordedCause(&res), true
		}
		if delta := writes(m.spec, &res); delta != nil {
			st.set(delta)
		}
		return &res, nil, true
	}
	return nil, nil, false
}

// runNew runs member m's dispatch d, which the log (if any) holds no result of.
func (f *frame) runNew(ctx context.Context, m *member, dp *troupe.Dispatch, in input, st view) (*troupe.Result, error) {
	d := *dp
	enclosing := enclosingOf(f.d)
	if len(enclosing) >= MaxNesting {
		// A composite that runs itself, through Go code no tool call passes (a member calling
		// its own composite's Run), would nest until the goroutine's stack overflows, which no
		// recover catches and which ends the process.
		err := &troupe.MaxDepthExceededError{Stack: append(slices.Clip(enclosing), m.spec.Name), MaxDepth: MaxNesting}
		return result(ctx, m, &d, nil, err, time.Now()), err
	}
	resuming, err := f.admit(&d)
	if errors.Is(err, troupe.ErrPaused) {
		// The runtime holds it waiting for a human (see dispatchAdmitter): it pauses, as
		// it would asking, reporting what the log shows it used when it paused.
		if pr, ok := f.pausedAgain(&d); ok {
			return pr, recordedPauseOf(pr, err)
		}
		return result(ctx, m, &d, nil, err, time.Now()), err
	}
	if errors.Is(err, context.Canceled) {
		// The run is ending, and is yet to cancel the composite: the member is cancelled, as
		// it would be a moment later, and as the run that made a resumed run's log cancelled
		// one it shows started (see dispatchAdmitter).
		res := build(ctx, m, &d, nil, err, time.Now())
		res.Status = troupe.StatusCancelled
		res.Errors[len(res.Errors)-1] = troupe.ErrorInfo{Code: troupe.CodeCancelled, Message: err.Error(), Details: map[string]any{contextEndedKey: true}}
		return res, err
	}
	if err != nil {
		// The run's budget is spent: the member is not started (nor recorded as started).
		// It is reported so though its composite's context ended as the run refused it (a
		// first_success group's win, at that moment): refused, it was never cancelled, and
		// the group reports it as it reports one it asked for before it stopped (notStarted).
		return notStarted(context.WithoutCancel(ctx), m, &d, err)
	}
	rt := &nested{outer: f.outer, em: f.em, parentID: f.d.DispatchID, id: in.id, agent: m.spec.Name, st: st, enclosing: enclosing}
	if f.em != nil {
		rt.tc = f.tc.Child()
	}
	if m.spec.Timeout > 0 {
		rt.cut = new(cutoff)
	}
	d.Bind(rt)
	rt.emit(troupe.Event{Kind: troupe.KindDispatchStarted, DispatchID: in.id, Agent: m.spec.Name, Data: &d})

	start := time.Now()
	// The member's own guardrails, then its run's (the engine's and the request's), as the
	// engine checks a planned dispatch with both.
	guards := m.spec.Guardrails
	if run := f.d.RunGuardrails(); len(run) > 0 {
		guards = append(guards[:len(guards):len(guards)], run...)
	}
	pre, err := f.prepare(ctx, m, &d, st, guards, resuming)
	var out *troupe.Result
	gone, timedOut := false, false
	switch {
	case err != nil:
	case m.tool:
		out, gone, timedOut, err = f.invokeTool(ctx, m, &d, rt)
	case m.spec.Timeout > 0:
		// A timeout holds even against an agent that ignores its context: the member runs on
		// a goroutine of its own, which the composite leaves behind if it must.
		out, gone, timedOut, err = f.invokeTimed(ctx, m, &d, rt)
	default:
		out, err = invoke(ctx, m.spec.Agent, &d) // inline: no goroutine for a member without a timeout
	}
	var res *troupe.Result
	if timedOut {
		// Its timeout passed first: it timed out, though the composite's context may have
		// ended since (cancelled as it finished, or abandoned it), which the mark still says.
		res = build(context.WithoutCancel(ctx), m, &d, out, err, start)
		markEnded(ctx, res)
	} else {
		res = result(ctx, m, &d, out, err, start)
	}
	if gone && res.Status == troupe.StatusCancelled {
		// Cancelled rather than timed out, and it did not stop either.
		res.Errors[len(res.Errors)-1].Message += fmt.Sprintf("; %s did not stop within %v and was abandoned", m.spec.Name, abandonGrace)
		res.Errors[len(res.Errors)-1].Details = map[string]any{"abandoned": true}
	}
	if pre != nil {
		// What the member's guardrails said before it ran comes first.
		res.Warnings = append(slices.Clip(pre.Warnings), res.Warnings...)
		for _, g := range slices.Sorted(maps.Keys(pre.Annotations)) {
			res.Annotate(g, pre.Annotations[g].(map[string]any))
		}
	}
	if res.Status == troupe.StatusCompleted && len(guards) > 0 {
		checkResult(ctx, guards, &d, res)
	}
	if res.Status == troupe.StatusCompleted {
		if delta := writes(m.spec, res); delta != nil {
			st.set(delta)
			rt.emit(troupe.Event{Kind: troupe.KindStateDelta, DispatchID: in.id, Agent: m.spec.Name, Data: &troupe.StateDelta{Set: delta}})
		}
	}
	kind := troupe.KindDispatchCompleted
	if res.Status != troupe.StatusCompleted {
		kind = troupe.KindDispatchFailed
	}
	rt.emit(troupe.Event{Kind: kind, DispatchID: in.id, Agent: m.spec.Name, Status: res.Status, Data: res})
	return res, err
}

// prepare checks declared reads (003's STATE_MISSING), the input schema (INVALID_INPUT) and
// guards, the member's guardrails and its run's (BLOCKED), as the engine checks a planned
// dispatch. What guardrails noted of the dispatch, warnings and annotations, it returns in a
// result of its own (nil if none), for run to carry onto the member's.
func (f *frame) prepare(ctx context.Context, m *member, d *troupe.Dispatch, st view, guards []troupe.Guardrail, resuming bool) (notes *troupe.Result, err error) {
	if err := ctx.Err(); err != nil && !resuming { // see dispatchAdmitter
		return nil, context.Cause(ctx)
	}
	var missing []string
	for _, k := range m.spec.Reads {
		if _, ok := st.get(k); !ok {
			missing = append(missing, k)
		}
	}
	if missing != nil {
		return nil, &troupe.AgentError{Code: troupe.CodeStateMissing, Message: fmt.Sprintf("session state lacks %v, which %s reads", missing, m.spec.Name),
			FallbackAction: f.writersOf(m, missing)}
	}
	if m.in != nil {
		if err := m.in.Validate(d.ParsedQuery); err != nil {
			return nil, &troupe.AgentError{Code: troupe.CodeInvalidInput, Message: fmt.Sprintf("input of %s fails its schema", m.spec.Name),
				FallbackAction: "ask the user to clarify", Cause: err}
		}
	}
	for _, g := range guards {
		v, err := guardrail(g, func() troupe.Verdict { return g.CheckDispatch(ctx, d) })
		if err != nil {
			return notes, err
		}
		if len(v.Warnings) > 0 || len(v.Annotations) > 0 {
			if notes == nil {
				notes = &troupe.Result{}
			}
			notes.Warnings = append(notes.Warnings, v.Warnings...)
			if len(v.Annotations) > 0 {
				notes.Annotate(g.Name(), v.Annotations)
			}
		}
		if v.Block {
			return notes, fmt.Errorf("%w: %s: %s", troupe.ErrBlocked, g.Name(), v.Reason)
		}
	}
	return notes, nil
}

// checkResult runs guards, the member's guardrails and its run's, over its completed result,
// as the engine does over a planned one's: their warnings and annotations are attached, and a
// block (or a panicking guardrail) fails the result.
func checkResult(ctx context.Context, guards []troupe.Guardrail, d *troupe.Dispatch, res *troupe.Result) {
	for _, g := range guards {
		v, err := guardrail(g, func() troupe.Verdict { return g.CheckResult(ctx, d, res) })
		if err != nil {
			res.Status, res.Errors = troupe.StatusFailed, append(res.Errors, troupe.ErrorInfoOf(err))
			return
		}
		res.Warnings = append(res.Warnings, v.Warnings...)
		if len(v.Annotations) > 0 {
			res.Annotate(g.Name(), v.Annotations)
		}
		if v.Block {
			res.Status = troupe.StatusFailed
			res.Errors = append(res.Errors, troupe.ErrorInfo{Code: troupe.CodeBlocked, Message: fmt.Sprintf("%s blocked the result: %s", g.Name(), v.Reason)})
			return
		}
	}
}

// guardrail calls check, one of g's checks, turning a panic into an error with code PANIC that
// names g: a guardrail is user code, and the process goes on, as it does when an agent panics.
func guardrail(g troupe.Guardrail, check func() troupe.Verdict) (v troupe.Verdict, err error) {
	var pe *troupe.PanicError
	if errors.As(troupe.CallSafely(func() error { v = check(); return nil }), &pe) {
		return v, &troupe.AgentError{Code: troupe.CodePanic, Message: fmt.Sprintf("guardrail %s panicked: %v", g.Name(), pe.Value), Cause: pe,
			Details: troupe.ErrorInfoOf(pe).Details}
	}
	return v, nil
}

// writersOf is STATE_MISSING's fallback action: run the other members of the composite that
// declare writes of the missing keys (003: "run diagnostic first"), as the engine names the
// registered agents that do.
func (f *frame) writersOf(m *member, keys []string) string {
	var writers []string
	for _, p := range f.peers {
		if p.spec == m.spec {
			continue
		}
		for _, k := range keys {
			if slices.Contains(p.spec.Writes, k) && !slices.Contains(writers, p.spec.Name) {
				writers = append(writers, p.spec.Name)
			}
		}
	}
	if writers == nil {
		return "run the agent that writes it first"
	}
	return "run " + strings.Join(writers, ", ") + " first"
}

func invoke(ctx context.Context, a troupe.Agent, d *troupe.Dispatch) (out *troupe.Result, err error) {
	defer func() {
		if v := recover(); v != nil {
			out, err = nil, troupe.NewPanicError(v)
		}
	}()
	return a.Run(ctx, d)
}

// result builds a nested dispatch's response as the engine builds a planned one's. One that did
// not complete, made once ctx had ended, carries the contextEndedKey mark (see endedWithContext).
func result(ctx context.Context, m *member, d *troupe.Dispatch, out *troupe.Result, err error, start time.Time) *troupe.Result {
	res := build(ctx, m, d, out, err, start)
	markEnded(ctx, res)
	return res
}

// invokeTool runs m, an agent tool's agent, with a Usage of its own (foldToolUse), under its
// timeout if it has one.
func (f *frame) invokeTool(ctx context.Context, m *member, d *troupe.Dispatch, rt *nested) (out *troupe.Result, gone, timedOut bool, err error) {
	uctx, u := WithUsage(ctx)
	if m.spec.Timeout > 0 {
		out, gone, timedOut, err = f.invokeTimed(uctx, m, d, rt)
	} else {
		out, err = invoke(uctx, m.spec.Agent, d)
	}
	if !gone {
		out = foldToolUse(out, u)
	}
	return out, gone, timedOut, err
}

// foldToolUse adds to out, what an agent called through a tool returned, what the tools it
// called spent with no Usage of its own open (they added to u, which its tool opened for it):
// its result, recorded as a nested dispatch's, then counts what its own nested dispatches
// spent, as a composite's counts its members' — which the runtime's budgets take it to — and
// its caller gets each token once, through it. An agent that opened its own Usage added it to
// out already, and u holds nothing. What an abandoned call's tools spend later is lost with it.
func foldToolUse(out *troupe.Result, u *Usage) *troupe.Result {
	if u.Tokens() == 0 && u.Cost() == 0 && !u.RequiresHuman() {
		return out
	}
	if out == nil {
		out = &troupe.Result{} // what it used, beside its error
	} else {
		cp := *out // the agent's own result stays as it returned it
		out = &cp
	}
	u.AddTo(out)
	return out
}

// markEnded marks res, a member's result that did not complete, with contextEndedKey when ctx,
// its composite's context, has ended.
func markEnded(ctx context.Context, res *troupe.Result) {
	if res.Status != troupe.StatusCompleted && ctx.Err() != nil && len(res.Errors) > 0 {
		last := &res.Errors[len(res.Errors)-1]
		det := make(map[string]any, len(last.Details)+1)
		maps.Copy(det, last.Details)
		det[contextEndedKey] = true
		last.Details = det
	}
}

// contextEndedKey marks, in the details of the last error of a member's result that did not
// complete, that its composite's context had ended by then (the run was ending, or the
// composite was cancelled): the composite stopped there, as a cancelled sequence stops at the
// first step that does not complete. A composite a resumed run makes again runs with its
// context ended from the start, so it cannot tell from its own context whether a result it
// takes from the log ended it the first time, or failed while it still ran and went on to
// the steps after it (whose results the log may hold too); the mark tells it.
const contextEndedKey = "context_ended"

// endedWithContext says whether res, a member's result that did not complete, was made once
// its composite's context had ended (contextEndedKey).
func endedWithContext(res *troupe.Result) bool {
	for _, e := range res.Errors {
		if e.Details[contextEndedKey] == true {
			return true
		}
	}
	return false
}

// build is result without the mark.
func build(ctx context.Context, m *member, d *troupe.Dispatch, out *troupe.Result, err error, start time.Time) *troupe.Result {
	res := &troupe.Result{}
	if out != nil {
		*res = *out
		res.Errors, res.Warnings = slices.Clip(res.Errors), slices.Clip(res.Warnings)
	}
	end := time.Now()
	res.DispatchID, res.SessionID, res.QueryID, res.AgentName = d.DispatchID, d.SessionID, d.QueryID, d.TargetAgent
	res.StartedAt, res.CompletedAt, res.ExecutionTimeMS = start, end, end.Sub(start).Milliseconds()
	if t := d.TraceID(); res.TraceID == nil && t != "" {
		res.TraceID = &t
	}
	fail := func(s troupe.Status, info troupe.ErrorInfo) *troupe.Result {
		res.Status = s
		res.Errors = append(res.Errors, info)
		return res
	}
	switch {
	case err != nil && ctx.Err() != nil:
		return fail(troupe.StatusCancelled, troupe.ErrorInfo{Code: troupe.CodeCancelled, Message: context.Cause(ctx).Error()})
	case err != nil:
		info := troupe.ErrorInfoOf(err)
		if det := schema.Details(err); det != nil {
			info.Details = det
		}
		st := troupe.StatusFailed
		if info.Code == troupe.CodeTimeout {
			// Its own timeout (WithTimeout's), or one the agent reports — code TIMEOUT or an
			// error wrapping troupe.ErrTimeout — as the engine records a planned agent's.
			st = troupe.StatusTimeout
		}
		return fail(st, info)
	case out == nil:
		return fail(troupe.StatusFailed, troupe.ErrorInfo{Code: troupe.CodeInvalidOutput, Message: "agent returned neither a result nor an error"})
	}
	if res.Status == "" {
		res.Status = troupe.StatusCompleted
	}
	if verr := res.Validate(nil); verr != nil {
		// Recorded as invalid, never silently accepted: the agent's output stays in the result.
		return fail(troupe.StatusFailed, troupe.ErrorInfo{Code: troupe.CodeInvalidOutput, Message: verr.Error()})
	}
	if !jsonvalue.Finite(res.AgentResult) || res.Handoff != nil && !jsonvalue.Finite(res.Handoff) {
		// JSON cannot encode a NaN or an infinity: its nested events could not be logged or
		// sent. What the agent said is kept, each such number as its text, as the engine does.
		msg := jsonvalue.EncodeOutput(m.spec.Name, &res.AgentResult, &res.Handoff)
		return fail(troupe.StatusFailed, troupe.ErrorInfo{Code: troupe.CodeInvalidOutput, Message: msg})
	}
	if m.out != nil && res.Status == troupe.StatusCompleted {
		if verr := m.out.Validate(res.AgentResult); verr != nil {
			return fail(troupe.StatusFailed, troupe.ErrorInfo{Code: troupe.CodeInvalidOutput,
				Message: fmt.Sprintf("output of %s fails its schema: %v", m.spec.Name, verr), Details: schema.Details(verr)})
		}
	}
	return res
}

// writes returns the declared writes found in the result's agent_result.
func writes(s *troupe.AgentSpec, res *troupe.Result) map[string]any {
	var delta map[string]any
	for _, k := range s.Writes {
		if v, ok := res.AgentResult[k]; ok {
			if delta == nil {
				delta = make(map[string]any, len(s.Writes))
			}
			delta[k] = v
		}
	}
	return delta
}

// recordedCause is the error that a member's result that did not complete, taken from a
// resumed run's log, stands for (what run returns beside it): its last error, the one the
// member's own error became, as a *recordedError; nil when the result holds no error.
func recordedCause(res *troupe.Result) error {
	if len(res.Errors) == 0 {
		return nil
	}
	return &recordedError{res.Errors[len(res.Errors)-1]}
}

// recordedError is a member's error as its result recorded it. Its text is an *AgentError's
// with the recorded code and message, so a composite that wraps it reports what it reported
// when the member failed live (troupe.ErrorInfoOf strips the same prefix), and it unwraps to
// info.Err(): errors.As finds the *troupe.AgentError, errors.Is the code's sentinel
// (troupe.ErrTimeout for TIMEOUT, …).
type recordedError struct{ info troupe.ErrorInfo }

func (e *recordedError) Error() string {
	return "troupe: agent error " + e.info.Code + ": " + e.info.Message
}

func (e *recordedError) Unwrap() error { return e.info.Err() }

// recordedPauseOf is the error of res, a member's result a resumed run's log holds of its
// pause, that waits still (paused, the runtime's troupe.ErrPaused): it reads as the error the
// member paused with then (a tool's "flow: delegate_to_helper: …" wrapping), as recordedError
// does, so the composite reports the pause as it did, and it is troupe.ErrPaused still.
func recordedPauseOf(res *troupe.Result, paused error) error {
	if len(res.Errors) == 0 {
		return paused
	}
	return &recordedPause{recordedError{res.Errors[len(res.Errors)-1]}, paused}
}

type recordedPause struct {
	recordedError
	paused error
}

func (e *recordedPause) Unwrap() []error { return []error{e.info.Err(), e.paused} }

// errorOf turns a failed result into the error a composite reports: seed 003's contract, with
// the code, recoverability and fallback of the member's first error.
func errorOf(what string, res *troupe.Result) *troupe.AgentError {
	ae := &troupe.AgentError{Code: troupe.CodeAgentError, Message: fmt.Sprintf("%s: %s %s", what, res.AgentName, res.Status)}
	if len(res.Errors) > 0 {
		e := res.Errors[0]
		ae.Code, ae.Recoverable, ae.FallbackAction, ae.Details = e.Code, e.Recoverable, e.FallbackAction, e.Details
		// A member's AgentError was recorded with its Error() text; drop its "troupe: agent
		// error CODE: " prefix, which the composite's own error repeats.
		msg := strings.TrimPrefix(e.Message, "troupe: agent error "+e.Code+": ")
		ae.Message = fmt.Sprintf("%s: %s: %s", what, res.AgentName, msg)
	}
	if res.Status == troupe.StatusCancelled {
		ae.Code = troupe.CodeCancelled
	}
	return ae
}

// warnUnfinished adds to r, the result of a composite that succeeded anyway (ContinueOnError,
// CollectAll, a vote, a first success), a warning for each member that failed or timed out:
// "lint: failed: exit status 1", "slow: timeout" (with its message when it was abandoned past
// its timeout). The failure is then in the composite's own result, not only in the nested
// events. Branches cancelled because another won are not failures.
func warnUnfinished(r *troupe.Result, rs []*troupe.Result) {
	for _, x := range rs {
		if x == nil || x.Status == troupe.StatusCompleted || x.Status == troupe.StatusCancelled {
			continue
		}
		w := x.AgentName + ": " + string(x.Status)
		if len(x.Errors) > 0 && (x.Status == troupe.StatusFailed || x.Errors[0].Details["abandoned"] == true) {
			if m := strings.TrimSpace(x.Errors[0].Message); m != "" {
				w += ": " + m
			} else {
				w += ": " + x.Errors[0].Code
			}
		}
		r.Warnings = append(r.Warnings, w)
	}
}

// leastConfidence is seed 000's conservative rule (aggregate.CombineConfidence, the one the
// run's overall_confidence follows) over the results rs[i] with counted(i) true that completed
// and report a confidence: their minimum, or nil when none does. A composite's confidence is
// then never above its weakest counted member's, so a composite does not lift the run's
// overall_confidence above what its members vouch for, and a composite whose members report
// none reports none either: the run's aggregate then says so, rather than counting a 0. A
// member that did not complete is left out whatever confidence it carried: its result is not
// what the composite answers with.
func leastConfidence(rs []*troupe.Result, counted func(i int) bool) *float64 {
	var cs []float64
	for i, r := range rs {
		if r != nil && r.Status == troupe.StatusCompleted && r.Confidence != nil && counted(i) {
			cs = append(cs, *r.Confidence)
		}
	}
	if len(cs) == 0 {
		return nil
	}
	return troupe.Ptr(aggregate.CombineConfidence(cs))
}

// reviewed sets r's requires_human when a member's completed result it answers with (counted)
// asks for a human's review: the engine reviews the results of the dispatches it planned, so a
// member's request reaches the human through its composite's result.
func reviewed(r *troupe.Result, rs []*troupe.Result, counted func(i int) bool) {
	for i, x := range rs {
		if x != nil && x.RequiresHuman && x.Status == troupe.StatusCompleted && counted(i) {
			r.RequiresHuman = true
			return
		}
	}
}

// usage adds the tokens and cost of the members' results to r, so a composite's result
// accounts for what its members spent (the engine counts each planned result once).
func usage(r *troupe.Result, rs []*troupe.Result) {
	var tokens int64
	var cost float64
	var anyTokens, anyCost bool
	for _, x := range rs {
		if x == nil {
			continue
		}
		if x.TokensUsed != nil {
			tokens += *x.TokensUsed
			anyTokens = true
		}
		if x.CostDollars != nil {
			cost += *x.CostDollars
			anyCost = true
		}
	}
	if anyTokens {
		r.TokensUsed = &tokens
	}
	if anyCost {
		r.CostDollars = &cost
	}
}
