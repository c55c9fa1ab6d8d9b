package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/troupehq/troupe"
)

// replayIndex is what a resumed run knows from its log: which events are already recorded
// (so they are not appended twice), the routing decisions made (so a router is not asked,
// nor paid, twice, and a task goes where it went), the dispatches made and the results of
// finished ones (so they are not run twice), the answers humans gave, and the plan (which
// must come out the same).
type replayIndex struct {
	keys      map[string]bool
	decisions map[string]*troupe.RoutingDecision // by the id of the dispatch each led to
	targets   map[string]string                  // agent of each recorded dispatch, by id
	results   map[string]*troupe.Result
	resultAt  map[string]int // place in the log of each recorded result, by dispatch id
	startAt   map[string]int // place in the log of each recorded dispatch_started, by dispatch id
	answers   map[string]troupe.Answer
	asked     map[string]bool
	reviews   map[string]*troupe.Question // reviews asked with the result under review, by dispatch id
	plan      *troupe.Plan
	questions []loggedQuestion // in log order

	// Dispatches of the plan that the log shows waiting for a human's answer it does not
	// hold, when the resumed run has no one to ask either: the run that made the log was
	// pausing, and started nothing new until they were done with (waits). Each leaves the set
	// when it completes again (asking again, most often, which pauses this run too).
	awaiting map[string]bool

	// The budget the log records as spent (budget_exhausted), and where: from there on the run
	// that made the log started nothing new, so neither does the resumed run, whose own
	// accounts (looking at the clock later than the run that made the log) might say otherwise.
	budgetWhy string
	budgetAt  int
	// endAt is where the log holds the result whose completion ended the resumed run (it
	// failed, or its caller's cancellation was found there), plus one; 0 while it goes on, or
	// when it ended otherwise. Guarded by the run's mu.
	endAt int

	// How long the log shows the run active before this resume: from each run_initialized or
	// run_resumed to the last event before the next resume. The time budget counts it, and not
	// the time the run lay crashed or paused for a human, so a resumed run does not start its
	// budget's clock again from nothing.
	activeBefore time.Duration
	// firstAt is when the run first started: its run_initialized event's time.
	firstAt time.Time

	// Dispatches the run made again whose results the log holds, not yet applied: they are
	// applied in the order the log recorded them (take), which is the order they finished in.
	held  []*call
	taken int // how many take returned

	// Reviews the run asks again whose answers it holds run one after another, in the order
	// the run makes them again (queueReview, reviewed): each finishes at once, and two
	// finishing together would be recorded in no set order, which decides what a budget
	// crossed between them refuses. reviewOn is the one running.
	reviewOn   *call
	reviewNext []*call
	// afterReviews are dispatches a transition made while such a review was queued or
	// running (a fallback of one rejected, a dispatch the log shows started): they start once
	// the last of those reviews is recorded, as new dispatches of the plan do (waits), not
	// beside them, where what they do at once (ask, and pause the run) would come before or
	// after a review's result in no set order.
	afterReviews []*call

	// The dispatches of the plan the log shows started, in log order, with their steps, for
	// closing at the run's end those the log holds no result of and this run did not make
	// again (open); made removes one this run made again.
	started []loggedStart
	made    map[string]bool

	// Dispatches nested in composites, and their finished results, by dispatch id: a
	// composite run again takes a member's recorded result — completed, failed, timed out or
	// cancelled — when its input is unchanged (troupe.Recorder). A member that stopped to wait
	// for a human has no result here: it runs again to get its answer.
	nestedDispatch map[string]*troupe.Dispatch
	nestedResult   map[string]*troupe.Result
	nestedParent   map[string]string // the dispatch each nested one was made for, by id
	// The dispatches the log shows nested ones made for: composites that ran members.
	enclosing map[string]bool
	// Composites (planned or nested) the log shows running members when it stops: started,
	// unfinished, and not waiting for a human's answer (see ranMembers). Read-only once built.
	running map[string]bool
	// Nested composites the log shows unfinished when it stops, running members (running) or
	// with one waiting for a human: a first_success group taking its winner from the log
	// makes them again, cancelled, to end as the win ended them (RanMembers). Read-only once
	// built.
	unfinished map[string]bool
	// Questions asked by nested dispatches that the log, read so far, holds no answer to, with
	// the nested dispatch that asked and the ones it is nested in: a member finishing with one
	// of them open paused for a human rather than failed.
	nestedAsking map[string][]string
	// Nested dispatches the log shows started and not finished: one made again under its id
	// is not recorded as started a second time (its first start is still open).
	nestedOpen    map[string]bool
	nestedStarted []string // the ids nestedOpen has held, in log order

	// Where the log first shows a nested dispatch let go as the run's caller cancelled it, and
	// why (-1: nowhere): the run was being cancelled from there on, though the composite
	// holding it recorded nothing of it before the process died.
	nestedCancelAt    int
	nestedCancelCause string

	// nestedPaused are the results of nested dispatches that stopped to wait for a human, by
	// id (not in nestedResult: they run again), for a first_success group whose winner makes
	// the question moot (pausedResult).
	nestedPaused   map[string]*troupe.Result
	nestedPausedAt map[string]int // where the log holds each of nestedPaused, for precharge's order
	// noHuman: the resumed run has no one to ask, so a dispatch the log shows waiting for an
	// answer waits still (waitingNested); one with a human is answered as it asks again.
	noHuman bool
	// nestedResultAt is where the log holds each of nestedResult, for precharge's order.
	nestedResultAt map[string]int
	// doneLive are the nested dispatches the resumed run made again that completed, while a
	// planned dispatch they are part of is awaiting (completedNested). Guarded by the run's mu.
	doneLive map[string]bool
	// precharged are the nested results whose use a planned dispatch made again counted when
	// it was made (precharge), which Recorded does not count again. Guarded by the run's mu.
	precharged map[string]bool
}

// eventKey identifies an event that a resumed run would produce again; "" means the kind is
// never deduplicated (progress, warnings, terminal events, and nested events: a composite
// resumed takes its finished members' results from the log, with no new events, and records
// what the members it runs again do this time, all but the start of one the log shows still
// running, which recorded keeps from being recorded twice).
func eventKey(ev *troupe.Event) string {
	if ev.Parent != "" {
		return ""
	}
	switch ev.Kind {
	case troupe.KindRunInitialized, troupe.KindPlanCreated, troupe.KindBudgetExhausted, troupe.KindRunAggregated:
		return string(ev.Kind)
	case troupe.KindRouteDecided, troupe.KindDispatchStarted, troupe.KindDispatchCompleted,
		troupe.KindDispatchFailed, troupe.KindStateDelta, troupe.KindRetryScheduled:
		return string(ev.Kind) + "/" + ev.DispatchID
	case troupe.KindHumanAsked:
		if q, ok := ev.Data.(*troupe.Question); ok {
			return string(ev.Kind) + "/" + q.ID
		}
	case troupe.KindHumanAnswered:
		if a, ok := ev.Data.(*troupe.Answer); ok {
			return string(ev.Kind) + "/" + a.QuestionID
		}
	}
	return ""
}

func newReplayIndex(events []troupe.Event) (*replayIndex, *troupe.RunStart, error) {
	x := &replayIndex{keys: map[string]bool{}, decisions: map[string]*troupe.RoutingDecision{}, targets: map[string]string{},
		results: map[string]*troupe.Result{}, resultAt: map[string]int{}, startAt: map[string]int{},
		answers: map[string]troupe.Answer{}, asked: map[string]bool{}, nestedCancelAt: -1}
	var start *troupe.RunStart
	var segStart, segLast time.Time // the active stretch being read: its first and last events
	for i := range events {
		ev := &events[i]
		if ev.Stage.Terminal() {
			return nil, nil, fmt.Errorf("engine: resume %s: %w (it ended %s at event %d)", ev.RunID, troupe.ErrRunFinished, ev.Stage, ev.Seq)
		}
		if ev.Parent == "" && (ev.Kind == troupe.KindRunInitialized || ev.Kind == troupe.KindRunResumed) {
			x.activeBefore += activeSpan(segStart, segLast)
			segStart = ev.Time
		}
		if ev.Time.After(segLast) {
			segLast = ev.Time
		}
		if ev.Parent != "" {
			// A nested event: its results are the composite's business, not the plan's; the
			// composite asks for them when it runs its members again.
			x.indexNested(ev, i)
			continue
		}
		if k := eventKey(ev); k != "" {
			x.keys[k] = true
		}
		switch d := ev.Data.(type) {
		case *troupe.RunStart:
			if ev.Kind == troupe.KindRunInitialized {
				start, x.firstAt = d, ev.Time
			}
		case *troupe.Plan:
			x.plan = d
		case *troupe.RoutingDecision:
			if ev.Kind == troupe.KindRouteDecided {
				x.decisions[ev.DispatchID] = d
			}
		case *troupe.Dispatch:
			if ev.Kind == troupe.KindDispatchStarted {
				x.targets[d.DispatchID] = d.TargetAgent
				x.startAt[d.DispatchID] = i
				x.started = append(x.started, loggedStart{d, ev.Step})
			}
		case *troupe.Result:
			x.results[d.DispatchID] = d
			x.resultAt[d.DispatchID] = i
		case *troupe.Question:
			x.askedNested(d)
			x.asked[d.ID] = true
			x.questions = append(x.questions, loggedQuestion{d, ev.Step})
			if d.Kind == troupe.QuestionReview && d.Result != nil && d.DispatchID != "" {
				if x.reviews == nil {
					x.reviews = map[string]*troupe.Question{}
				}
				x.reviews[d.DispatchID] = d
			}
		case *troupe.Answer:
			delete(x.nestedAsking, d.QuestionID)
			x.answers[d.QuestionID] = *d
		case *troupe.Warning:
			if ev.Kind == troupe.KindBudgetExhausted && x.budgetWhy == "" {
				x.budgetWhy, x.budgetAt = strings.TrimSuffix(d.Message, budgetSpentSuffix), i
			}
		}
	}
	if start == nil {
		return nil, nil, fmt.Errorf("engine: resume: the log has no run_initialized event")
	}
	x.activeBefore += activeSpan(segStart, segLast)
	return x, start, nil
}

// findRunning fills x.running: the composites the log shows in the midst of running members.
func (x *replayIndex) findRunning() {
	if len(x.enclosing) == 0 {
		return
	}
	waiting := map[string]bool{} // dispatches waiting for an answer, and those they are nested in
	for _, q := range x.questions {
		if _, ok := x.answers[q.q.ID]; ok || x.moot(q.q) {
			continue // nothing waits for it
		}
		for id, n := q.q.DispatchID, 0; id != "" && n <= len(x.nestedParent); id, n = x.nestedParent[id], n+1 {
			waiting[id] = true
		}
	}
	x.running, x.unfinished = map[string]bool{}, map[string]bool{}
	for id := range x.nestedOpen {
		if x.enclosing[id] {
			x.unfinished[id] = true
			if !waiting[id] {
				x.running[id] = true
			}
		}
	}
	for _, st := range x.started {
		id := st.d.DispatchID
		if _, done := x.results[id]; !done && x.enclosing[id] && !waiting[id] {
			x.running[id] = true
		}
	}
	// A composite one of whose members waits for an answer while another runs members of its
	// own runs members too: the running one may end it all the same (a first_success group
	// whose running branch completes as the run ends, making the question moot), as it did in
	// the run that made the log. Made again as the resumed run ends, it runs to take them, and
	// the waiting member waits still (AdmitDispatch), rather than the whole composite waiting.
	for id := range x.nestedOpen {
		if !x.running[id] {
			continue
		}
		for p, n := x.nestedParent[id], 0; p != "" && n <= len(x.nestedParent); p, n = x.nestedParent[p], n+1 {
			if _, done := x.results[p]; done || x.nestedResult[p] != nil {
				break
			}
			x.running[p] = true
		}
	}
}

// activeSpan is the time from an active stretch's first event to its last; 0 for none, or for
// a clock that went back.
func activeSpan(first, last time.Time) time.Duration {
	if first.IsZero() || !last.After(first) {
		return 0
	}
	return last.Sub(first)
}

func (x *replayIndex) indexNested(ev *troupe.Event, at int) {
	if res, ok := ev.Data.(*troupe.Result); ok && x.nestedCancelAt < 0 {
		if cause, ok := runCancelCause(res); ok {
			x.nestedCancelAt, x.nestedCancelCause = at, cause
		}
	}
	switch d := ev.Data.(type) {
	case *troupe.Dispatch:
		if x.nestedDispatch == nil {
			x.nestedDispatch = map[string]*troupe.Dispatch{}
			x.nestedParent = map[string]string{}
		}
		x.nestedDispatch[d.DispatchID] = d
		x.nestedParent[d.DispatchID] = ev.Parent
		if x.enclosing == nil {
			x.enclosing = map[string]bool{}
		}
		x.enclosing[ev.Parent] = true
		if ev.Kind == troupe.KindDispatchStarted {
			if x.nestedOpen == nil {
				x.nestedOpen = map[string]bool{}
			}
			if !x.nestedOpen[d.DispatchID] {
				x.nestedStarted = append(x.nestedStarted, d.DispatchID)
			}
			x.nestedOpen[d.DispatchID] = true
			// Run again (it had paused for a human): what it did before is superseded.
			delete(x.nestedResult, d.DispatchID)
			delete(x.nestedPaused, d.DispatchID)
		}
	case *troupe.Result:
		delete(x.nestedOpen, d.DispatchID)
		if d.Status != troupe.StatusCompleted && x.pausedNested(d.DispatchID) {
			// It stopped to wait for a human, not finished: it runs again to get the answer.
			// One that completed all the same (a first_success group another branch of which
			// won while one asked) finished: the question is moot, and the result stands.
			delete(x.nestedResult, d.DispatchID)
			if x.nestedPaused == nil {
				x.nestedPaused = map[string]*troupe.Result{}
			}
			x.nestedPaused[d.DispatchID] = d
			if x.nestedPausedAt == nil {
				x.nestedPausedAt = map[string]int{}
			}
			x.nestedPausedAt[d.DispatchID] = at
			return
		}
		if x.nestedResult == nil {
			x.nestedResult = map[string]*troupe.Result{}
			x.nestedResultAt = map[string]int{}
		}
		x.nestedResult[d.DispatchID] = d
		x.nestedResultAt[d.DispatchID] = at
	}
}

// precharge counts toward the run's budgets, as c's members' live use, what the dispatches
// nested in c, a planned dispatch the resumed run makes again, used according to the log's
// finished results, and the results of those that stopped to wait for a human (what they
// used then was spent, and the run that made the log counted it as they stopped), in log
// order. They finished before the run that made the log stopped, and
// so before anything this run does anew: counted then, they were spent when any dispatch this
// run runs again finished, as in the run that made the log, whichever goroutine gets there
// first now (c's composite taking them through Recorded, or another dispatch finishing at
// once). Recorded does not count them again. Called under the run's mu.
func (x *replayIndex) precharge(c *call) {
	if x == nil || !x.enclosing[c.d.DispatchID] {
		return
	}
	type logged struct {
		res *troupe.Result
		at  int
	}
	var under []logged
	for _, results := range []struct {
		byID map[string]*troupe.Result
		at   map[string]int
	}{{x.nestedResult, x.nestedResultAt}, {x.nestedPaused, x.nestedPausedAt}} {
		for id, res := range results.byID {
			for p, n := x.nestedParent[id], 0; p != "" && n <= len(x.nestedParent); p, n = x.nestedParent[p], n+1 {
				if p == c.d.DispatchID {
					under = append(under, logged{res, results.at[id]})
					break
				}
			}
		}
	}
	slices.SortFunc(under, func(a, b logged) int { return a.at - b.at })
	for _, l := range under {
		if x.precharged == nil {
			x.precharged = map[string]bool{}
		}
		x.precharged[l.res.DispatchID] = true
		c.chargeNestedLocked(l.res, x.nestedParent[l.res.DispatchID])
	}
}

// ranMembers says whether the log stops with dispatch id, a composite, running members of its
// own (it is unfinished and waits for no answer). x.running is read-only by then: an agent's
// goroutine may ask.
func (x *replayIndex) ranMembers(id string) bool {
	return x != nil && x.running[id]
}

// unfinishedComposite says whether the log stops with nested dispatch id, a composite,
// unfinished: running members of its own, or with one waiting for a human. x.unfinished is
// read-only by then.
func (x *replayIndex) unfinishedComposite(id string) bool {
	return x != nil && x.unfinished[id]
}

// nestedLogged says whether the log shows nested dispatch id started. The index is read-only
// by then: an agent's goroutine may ask.
func (x *replayIndex) nestedLogged(id string) bool {
	if x == nil {
		return false
	}
	_, ok := x.nestedDispatch[id]
	return ok
}

// endedWaiting returns the result the log holds of the nested dispatch d that ended waiting
// for answers the resumed run has neither the answers to nor anyone to ask (waitingNested),
// with those questions; or nil.
func (x *replayIndex) endedWaiting(d *troupe.Dispatch) ([]troupe.Question, *troupe.Result) {
	if x == nil {
		return nil, nil
	}
	qs := x.waitingNested(d.DispatchID)
	if len(qs) == 0 {
		return nil, nil
	}
	if res, ok := x.paused(d); ok && endedPaused(res) {
		return qs, res
	}
	return nil, nil
}

// endedPaused says whether res, a nested result the log holds, ended for its wait for a human
// (its error is, or wraps, troupe.ErrPaused: a composite cut short as a member waited), not for
// something else while a member of it waited (a guardrail blocking a group another branch of
// which won): made again, the latter ends as it ended only by running again.
func endedPaused(res *troupe.Result) bool {
	return slices.ContainsFunc(res.Errors, func(e troupe.ErrorInfo) bool { return strings.Contains(e.Message, troupe.ErrPaused.Error()) })
}

// askedNested notes q, a question the log records, as open when a nested dispatch asked it.
func (x *replayIndex) askedNested(q *troupe.Question) {
	var chain []string
	for id := q.DispatchID; len(chain) <= len(x.nestedParent); id = x.nestedParent[id] {
		if _, ok := x.nestedDispatch[id]; !ok {
			break
		}
		chain = append(chain, id)
	}
	if chain == nil {
		return
	}
	if x.nestedAsking == nil {
		x.nestedAsking = map[string][]string{}
	}
	x.nestedAsking[q.ID] = chain
}

// moot says whether q, a question the log records, was asked by a nested dispatch that, or
// one it is nested in, completed all the same (see indexNested): no answer changes what it
// did, and the run that made the log did not wait for one (call.dropMootLocked).
func (x *replayIndex) moot(q *troupe.Question) bool {
	for id, n := q.DispatchID, 0; id != "" && n <= len(x.nestedParent); id, n = x.nestedParent[id], n+1 {
		if res := x.nestedResult[id]; res != nil && res.Status == troupe.StatusCompleted {
			return true
		}
	}
	return false
}

// completedNested notes that nested dispatch id, made again by the resumed run in planned
// dispatch c, completed, and releases c from awaiting once every question of the log it
// waited for is moot by then (see moot): it completed though it had asked (a first_success
// group taking its recorded winner, say). Called under the run's mu.
func (x *replayIndex) completedNested(planned, id string) {
	if x == nil || !x.awaiting[planned] {
		return
	}
	if x.doneLive == nil {
		x.doneLive = map[string]bool{}
	}
	x.doneLive[id] = true
	for _, a := range x.questions {
		if _, ok := x.answers[a.q.ID]; ok || x.moot(a.q) {
			continue
		}
		under, done := false, false
		for at, n := a.q.DispatchID, 0; at != "" && n <= len(x.nestedParent)+1; at, n = x.nestedParent[at], n+1 {
			done = done || x.doneLive[at]
			if at == planned {
				under = true
				break
			}
		}
		if under && !done {
			return // it waits for this one still
		}
	}
	delete(x.awaiting, planned)
}

// waitingNested returns the questions the log shows nested dispatch id, or one nested in it,
// asked and the resumed run, with no one to ask (noHuman), holds no answer to, in log order.
// The index is read-only by then.
func (x *replayIndex) waitingNested(id string) []troupe.Question {
	if x == nil || !x.noHuman {
		return nil
	}
	var out []troupe.Question
	for _, q := range x.questions {
		if _, ok := x.answers[q.q.ID]; ok || !slices.Contains(x.nestedAsking[q.q.ID], id) || x.moot(q.q) {
			continue
		}
		out = append(out, *q.q)
	}
	return out
}

// waitingUnder returns the questions the log shows asked by dispatches nested in id, a
// planned dispatch, that the resumed run, with no one to ask (noHuman), holds no answer to, in
// log order.
func (x *replayIndex) waitingUnder(id string) []troupe.Question {
	if x == nil || !x.noHuman {
		return nil
	}
	var out []troupe.Question
	for _, q := range x.questions {
		chain := x.nestedAsking[q.q.ID]
		if _, ok := x.answers[q.q.ID]; ok || len(chain) == 0 || x.nestedParent[chain[len(chain)-1]] != id || x.moot(q.q) {
			continue
		}
		out = append(out, *q.q)
	}
	return out
}

// pausedNested says whether nested dispatch id, or one nested in it, asked a question the log
// read so far holds no answer to: finishing now, it paused for a human.
func (x *replayIndex) pausedNested(id string) bool {
	for _, chain := range x.nestedAsking {
		if slices.Contains(chain, id) {
			return true
		}
	}
	return false
}

// nested returns the recorded result of the nested dispatch d, finished however it finished,
// when the log holds the same dispatch: same id, agent and input (see troupe.Recorder).
func (x *replayIndex) nested(d *troupe.Dispatch) (*troupe.Result, bool) {
	if x == nil {
		return nil, false
	}
	return x.matching(d, x.nestedResult[d.DispatchID])
}

// paused returns the recorded result of the nested dispatch d that stopped to wait for a
// human, when the log holds the same dispatch (see nested).
func (x *replayIndex) paused(d *troupe.Dispatch) (*troupe.Result, bool) {
	if x == nil {
		return nil, false
	}
	return x.matching(d, x.nestedPaused[d.DispatchID])
}

// matching returns res, a recorded result of a nested dispatch, if the log holds the dispatch
// d: same id, agent and input.
func (x *replayIndex) matching(d *troupe.Dispatch, res *troupe.Result) (*troupe.Result, bool) {
	if res == nil {
		return nil, false
	}
	was, ok := x.nestedDispatch[d.DispatchID]
	if !ok || res.AgentName != d.TargetAgent {
		return nil, false
	}
	a, err1 := json.Marshal(inputOf(was))
	b, err2 := json.Marshal(inputOf(d))
	if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
		return nil, false
	}
	return res, true
}

// dispatchInput is what a dispatch asks of its agent, compared through its JSON encoding so a
// dispatch decoded from a durable log compares equal to the one a composite builds again. An
// empty map or list is left out as a nil one is: a dispatch's JSON writes parsed_query,
// upstream_results and depends_on as {} and [] when they are nil, and leaves out an empty
// rag_context or user_context, so the decoded dispatch holds empty ones where the dispatch
// built again holds nil.
type dispatchInput struct {
	Agent       string                  `json:"agent"`
	Query       string                  `json:"query"`
	ParsedQuery map[string]any          `json:"parsed_query,omitempty"`
	RAGContext  map[string]any          `json:"rag_context,omitempty"`
	UserContext map[string]any          `json:"user_context,omitempty"`
	Upstream    []troupe.UpstreamResult `json:"upstream_results,omitempty"`
	DependsOn   []string                `json:"depends_on,omitempty"`
	Mode        troupe.ExecutionMode    `json:"execution_mode"`
}

func inputOf(d *troupe.Dispatch) dispatchInput {
	mode := d.ExecutionMode
	if mode == "" {
		mode = troupe.Sequential // as a dispatch's JSON writes it
	}
	return dispatchInput{Agent: d.TargetAgent, Query: d.Query, ParsedQuery: d.ParsedQuery, RAGContext: d.RAGContext,
		UserContext: d.UserContext, Upstream: d.UpstreamResults, DependsOn: d.DependsOn, Mode: mode}
}

func (x *replayIndex) recorded(ev *troupe.Event) bool {
	if ev.Parent != "" {
		// A nested dispatch the log shows running when the run stopped, made again: its
		// start is recorded, once (its result will be).
		if ev.Kind == troupe.KindDispatchStarted && x.nestedOpen[ev.DispatchID] {
			delete(x.nestedOpen, ev.DispatchID)
			return true
		}
		return false
	}
	k := eventKey(ev)
	return k != "" && x.keys[k]
}

// decision returns the routing decision the log recorded for the task whose first dispatch
// is id.
func (x *replayIndex) decision(id string) (*troupe.RoutingDecision, bool) {
	if x == nil {
		return nil, false
	}
	d, ok := x.decisions[id]
	return d, ok
}

// diverged says how dispatch id to agent differs from what the log recorded under that id (a
// dispatch, or its result, to another agent), or "" if it does not.
func (x *replayIndex) diverged(id, agent string) string {
	if x == nil {
		return ""
	}
	if was, ok := x.targets[id]; ok && was != agent {
		return fmt.Sprintf("dispatch %s went to %s in the log but would now go to %s", id, was, agent)
	}
	if res, ok := x.results[id]; ok && res.AgentName != agent {
		return fmt.Sprintf("the log records a result of %s for dispatch %s, which would now go to %s", res.AgentName, id, agent)
	}
	return ""
}

// target is the agent the log records dispatch id as started to, if it does.
func (x *replayIndex) target(id string) (string, bool) {
	if x == nil {
		return "", false
	}
	agent, ok := x.targets[id]
	return agent, ok
}

func (x *replayIndex) result(id string) (*troupe.Result, bool) {
	if x == nil {
		return nil, false
	}
	r, ok := x.results[id]
	return r, ok
}

// loggedStart is a dispatch of the plan the log records as started, and its step.
type loggedStart struct {
	d    *troupe.Dispatch
	step int
}

// remade notes that the run made dispatch id again, if the log shows it started.
func (x *replayIndex) remade(id string) {
	if _, ok := x.startAt[id]; !ok {
		return
	}
	if x.made == nil {
		x.made = map[string]bool{}
	}
	x.made[id] = true
}

// open returns the dispatches the log shows started, holding no result of them, that the run
// did not make again: ending before it reached them (cancelled before its first step, say), it
// must still record how they ended, or the finished log would leave them running.
func (x *replayIndex) open() []loggedStart {
	var out []loggedStart
	for _, s := range x.started {
		if _, done := x.results[s.d.DispatchID]; !done && !x.made[s.d.DispatchID] {
			out = append(out, s)
		}
	}
	return out
}

// cancelledBefore returns why the run was being cancelled, if the log shows a nested dispatch
// let go for that before position at (the place of a result it holds; -1: anywhere).
func (x *replayIndex) cancelledBefore(at int) (string, bool) {
	if x == nil || x.nestedCancelAt < 0 || at >= 0 && x.nestedCancelAt > at {
		return "", false
	}
	return x.nestedCancelCause, true
}

// hold keeps c, a dispatch whose result the log holds, until take applies it.
func (x *replayIndex) hold(c *call) { x.held = append(x.held, c) }

// take removes and returns the held dispatch whose result the log recorded first, or nil.
func (x *replayIndex) take() *call {
	if x == nil || len(x.held) == 0 {
		return nil
	}
	first := 0
	for i, c := range x.held {
		if x.resultAt[c.d.DispatchID] < x.resultAt[x.held[first].d.DispatchID] {
			first = i
		}
	}
	c := x.held[first]
	x.held = append(x.held[:first], x.held[first+1:]...)
	x.taken++
	return c
}

// waits says whether dispatch id must wait for a held result the log recorded before the
// dispatch: the run that made the log started it only once that result was in. A dispatch the
// log does not hold started after every result it holds, and, if the log shows dispatches
// waiting for a human (awaiting), after they were done with: a pausing run starts nothing
// new. With nothing in flight (inflight), none of those will run again to ask, and nothing
// waits for them any more. It starts after the reviews made again with their answers, too.
func (x *replayIndex) waits(id string, inflight int) bool {
	at, logged := x.startAt[id]
	if !logged && x.budgetWhy != "" {
		// The run that made the log never started it: the budget was spent by then. It is
		// skipped once the results recorded before the budget ran out are in, as it was.
		at = x.budgetAt
		logged = true
	} else if !logged && len(x.awaiting) > 0 {
		if inflight > 0 {
			return true
		}
		clear(x.awaiting)
	}
	if !logged && x.reviewOn != nil {
		// A review made again with its answer is recorded first (queueReview): it finishes
		// at once, and a dispatch starting beside it would ask, or fail the run, before or
		// after its result freed a place or spent a budget, in no set order.
		return true
	}
	if len(x.held) == 0 {
		return false
	}
	if !logged {
		return true
	}
	for _, c := range x.held {
		if x.resultAt[c.d.DispatchID] < at {
			return true
		}
	}
	return false
}

// logged says whether the log holds the dispatch id's start (with decision, its routing
// decision): what the run that made the log did, which no budget refuses on resume.
func (x *replayIndex) logged(id string, decision bool) bool {
	if decision {
		_, ok := x.decisions[id]
		return ok
	}
	_, ok := x.startAt[id]
	return ok
}

// await records the dispatches of the plan that wait for answers to questions the log holds
// none to (see awaiting): the run that made the log was pausing on them. A run with a human to
// ask has no pause to reproduce: its questions are answered as they are asked again.
func (x *replayIndex) await() {
	for _, a := range x.questions {
		q := a.q
		if _, ok := x.answers[q.ID]; ok {
			continue
		}
		if x.moot(q) {
			continue
		}
		id := q.DispatchID
		for range len(x.nestedParent) + 1 { // a nested dispatch's question: the planned one it is part of
			if _, ok := x.targets[id]; ok {
				break
			}
			id = x.nestedParent[id]
		}
		if _, planned := x.targets[id]; !planned {
			continue
		}
		if _, done := x.results[id]; done {
			continue
		}
		if x.awaiting == nil {
			x.awaiting = map[string]bool{}
		}
		x.awaiting[id] = true
	}
}

// answerEvent is the event that records a, an answer given on resume, naming the dispatch,
// agent and step its question's event named.
func (x *replayIndex) answerEvent(a *troupe.Answer) troupe.Event {
	ev := troupe.Event{Stage: troupe.StageExecute, Kind: troupe.KindHumanAnswered, Data: a}
	for _, q := range x.questions {
		if q.q.ID == a.QuestionID {
			ev.Step, ev.DispatchID, ev.Agent = q.step, q.q.DispatchID, q.q.Agent
			break
		}
	}
	return ev
}

// loggedQuestion is a question the log records, and the step of the dispatch that asked it.
type loggedQuestion struct {
	q    *troupe.Question
	step int
}

// settled says dispatch id is done with (it completed, or asked again and paused): nothing new
// waits for it.
func (x *replayIndex) settled(id string) {
	if len(x.awaiting) > 0 {
		delete(x.awaiting, id)
	}
}

// review returns the review a paused run asked of dispatch id's result, with that result.
func (x *replayIndex) review(id string) (*troupe.Question, bool) {
	if x == nil {
		return nil, false
	}
	q, ok := x.reviews[id]
	return q, ok
}

// questionOrdinal is n of a question id "<dispatch id>-q<n>" that dispatch id asked, or 1.
func questionOrdinal(qid, dispatchID string) int32 {
	s, ok := strings.CutPrefix(qid, dispatchID+"-q")
	n, err := strconv.Atoi(s)
	if !ok || err != nil || n < 1 {
		return 1
	}
	return int32(n)
}

// queueReview reports whether review c, whose answer the run holds, must wait for another
// such review to finish (reviewed starts it then).
func (x *replayIndex) queueReview(c *call) bool {
	if x.reviewOn == nil {
		x.reviewOn = c
		return false
	}
	x.reviewNext = append(x.reviewNext, c)
	return true
}

// reviewed notes that c finished (or will never start) and returns the review queued to start
// after it, or nil. Once the last has finished, the dispatches held for them are let go
// (release).
func (x *replayIndex) reviewed(c *call) *call {
	if x == nil || x.reviewOn != c {
		return nil
	}
	x.reviewOn = nil
	if len(x.reviewNext) == 0 {
		return nil
	}
	x.reviewOn = x.reviewNext[0]
	x.reviewNext = x.reviewNext[1:]
	return x.reviewOn
}

// holdForReviews says whether c, a dispatch about to start, must wait for the answered
// reviews queued or running (see afterReviews), and keeps it then.
func (x *replayIndex) holdForReviews(c *call) bool {
	if x == nil || x.reviewOn == nil || c.reviewing {
		return false
	}
	x.afterReviews = append(x.afterReviews, c)
	return true
}

// release returns the dispatches held for the answered reviews once none is queued or running.
func (x *replayIndex) release() []*call {
	if x == nil || x.reviewOn != nil || len(x.afterReviews) == 0 {
		return nil
	}
	out := x.afterReviews
	x.afterReviews = nil
	return out
}

func (x *replayIndex) answer(qid string) (troupe.Answer, bool) {
	if x == nil {
		return troupe.Answer{}, false
	}
	a, ok := x.answers[qid]
	return a, ok
}

// checkPlan verifies that planning again gave the recorded plan: same request, same catalog,
// same planner must give the same plan, or the recorded results may not fit it.
func (x *replayIndex) checkPlan(p *troupe.Plan) error {
	if x.plan == nil {
		return nil
	}
	a, err1 := json.Marshal(x.plan.ExecutionPlan())
	b, err2 := json.Marshal(p.ExecutionPlan())
	if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
		return fmt.Errorf("engine: resume: the plan is now %s but the log recorded %s; the registry or planner changed", b, a)
	}
	return nil
}

// ResumeOptions are what a resumed run gets that its log cannot hold.
type ResumeOptions struct {
	// Answers to questions the run paused on (by Question.ID).
	Answers []troupe.Answer
	// Human answers further questions; nil is the engine's handler.
	Human troupe.HumanHandler
	// Guardrails of the run (they are not recorded in the log).
	Guardrails []troupe.Guardrail
}

// Resume continues a run from its log: a run that paused for a human, or one whose process
// stopped mid-way. Recorded routing decisions are taken instead of asking the router again,
// recorded dispatch results instead of dispatching again, in the order the log recorded them,
// recorded events are not appended again, and the plan, and every dispatch already recorded,
// must come out as recorded. A budget the log records as spent stays spent: nothing the run
// had not started by then starts. The time budget counts the time the log shows the run
// active (from its start, or each resume, to the last event recorded before the next), not
// the time it lay stopped or waited for a human, plus the time since this resume. A run whose log shows it waiting for a human's answer it
// still lacks, with no one to ask now either, starts nothing new until the dispatches waiting
// have asked again (and paused it) or finished, as the run that made the log did. A run that
// reached a terminal stage cannot be resumed (troupe.ErrRunFinished). A ctx already done
// resumes nothing: Resume returns its error and the log is left as it was, still resumable.
//
// A run whose caller cancelled it, and whose process died before it recorded run_cancelled,
// ends cancelled when resumed, for the same cause, once it reaches the first dispatch its log
// shows cancelled by that (seen by its result's details; a composite's member counts), as the
// run would have without the crash; a crash before any such dispatch was recorded leaves no trace of the cancellation,
// and the run resumes as any other. A resumed run that ends before making again a dispatch
// its log shows started and unfinished records that dispatch cancelled, so no finished log
// leaves a dispatch running.
//
// A composite made again takes its finished members' results from the log (troupe.Recorder),
// and what they used counts against the budgets; a member the log shows started is made again
// whatever the budgets say now, one it does not show is not started once the log records a
// budget spent, and a composite the log shows in the midst of running members runs even when
// the resumed run is already ending (cancelled, it takes its members' results and ends as they
// let it, as it did when the run that made the log cancelled it). A nested dispatch the log
// shows ended for want of answers the resumed run can neither give nor ask for is taken as it
// ended, not made again to wait again (one that ended for something else while a question of
// it was open is made again).
//
// A dispatch or member made again gets its whole timeout: its timer starts when it is made
// again, not when the log shows it first started (the time the process lay dead is no
// agent's).
//
// A dispatch the log shows started but not finished runs again under its id: a run stopped
// by a crash, or by Engine.Shutdown, resumes so. An engine shut down resumes nothing
// (troupe.ErrShutdown). One engine
// refuses to resume a run it already has live; two processes sharing a durable store do not
// know of each other, so whoever resumes runs after a crash must make sure only one of them
// resumes a given run (a lease or a lock of the deployment's), or that dispatch runs twice.
func (e *Engine) Resume(ctx context.Context, runID string, opts ResumeOptions) (*Run, error) {
	if e.shut.Load() {
		return nil, fmt.Errorf("engine: resume %s: %w", runID, troupe.ErrShutdown)
	}
	if err := ctx.Err(); err != nil {
		// A run resumed only to be cancelled at once would end before taking what its log
		// holds, with an outcome that does not say what the log says.
		return nil, fmt.Errorf("engine: resume %s: %w", runID, err)
	}
	events, err := e.store.Events(ctx, runID, 0)
	if err != nil {
		return nil, fmt.Errorf("engine: resume %s: %w", runID, err)
	}
	if len(events) == 0 {
		return nil, fmt.Errorf("engine: resume %s: %w", runID, troupe.ErrRunNotFound)
	}
	x, start, err := newReplayIndex(events)
	if err != nil {
		return nil, err
	}
	for i, a := range opts.Answers {
		switch {
		case !x.asked[a.QuestionID]:
			return nil, fmt.Errorf("engine: resume %s: answer to %q: the run never asked that question", runID, a.QuestionID)
		case x.keys["human_answered/"+a.QuestionID]:
			return nil, fmt.Errorf("engine: resume %s: question %q is already answered", runID, a.QuestionID)
		case slices.ContainsFunc(opts.Answers[:i], func(b troupe.Answer) bool { return b.QuestionID == a.QuestionID }):
			return nil, fmt.Errorf("engine: resume %s: question %q is answered twice", runID, a.QuestionID)
		}
		x.answers[a.QuestionID] = a
	}
	// Once the answers are in: a composite whose members' questions this resume answers does
	// not wait, and made again as the run ends it runs to take its finished members from the
	// log, as one made again before would (in no set order with what ends the run).
	x.findRunning()
	if start.Request == nil {
		return nil, fmt.Errorf("engine: resume %s: run_initialized has no request", runID)
	}
	req := *start.Request
	req.Seed, req.RunID = start.Seed, runID
	req.Human, req.Guardrails = opts.Human, opts.Guardrails
	if req.Human == nil && e.human == nil {
		x.noHuman = true
		x.await()
	}
	r, err := e.newRun(ctx, req, x)
	if err != nil {
		return nil, err
	}
	last := events[len(events)-1].Seq
	r.seq, r.firstSeq = last, last
	r.begin(opts.Answers)
	return r, nil
}
