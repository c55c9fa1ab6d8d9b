package flow

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/internal/jsonvalue"
	"github.com/troupehq/troupe/internal/stray"
)

// Strategy is how a parallel group turns its branches' results into one (seed 002's
// AggregationStrategy).
type Strategy uint8

// Strategies. The zero value is CollectAll.
const (
	// CollectAll waits for every branch and returns all results.
	CollectAll Strategy = iota
	// FirstSuccess returns as soon as one branch completes; the others are cancelled.
	FirstSuccess
	// MajorityVote waits for every branch and picks the answer (ParallelConfig.Answer) given
	// by the most successful branches; a tie is reported as a *TieError, never broken silently.
	MajorityVote
)

// String is the strategy's name as a dispatch reason shows it: "collect_all", "first_success",
// "majority_vote".
func (s Strategy) String() string {
	switch s {
	case CollectAll:
		return "collect_all"
	case FirstSuccess:
		return "first_success"
	case MajorityVote:
		return "majority_vote"
	}
	return fmt.Sprintf("strategy(%d)", uint8(s))
}

// ownKeys are the keys the strategy writes into a group's agent_result beside the merged state.
func (s Strategy) ownKeys() []string {
	switch s {
	case CollectAll:
		return []string{"branches"}
	case MajorityVote:
		return []string{"answer", "votes", "voters"}
	}
	return nil
}

// Error codes a parallel group reports besides its branches' own (seed 003's error contract).
const (
	CodeStateConflict = "STATE_CONFLICT" // two branches wrote different values to one key
	CodeVoteTie       = "VOTE_TIE"       // no answer has more votes than every other
)

// DefaultMaxConcurrent is how many branches run at once when ParallelConfig.MaxConcurrent is 0.
const DefaultMaxConcurrent = 10

// ParallelConfig configures a parallel group (seed 002's ParallelConfig). The zero value
// collects all results, ten branches at a time.
type ParallelConfig struct {
	// Strategy is CollectAll, FirstSuccess or MajorityVote.
	Strategy Strategy
	// Answer extracts a branch's answer for MajorityVote (seed 002's MajorityVote extractor);
	// required with it. It is called for completed results only.
	Answer func(*troupe.Result) string
	// MaxConcurrent caps the branches running at once; 0 means DefaultMaxConcurrent. A branch
	// abandoned past its timeout (see WithTimeout) gives up its place when it is abandoned, as
	// the engine's stages do with a dispatch past its deadline: the group goes on, and a member
	// that ignores its context may still be running beside the branches started after it.
	MaxConcurrent int
}

// ParallelAgent runs agents concurrently on the same input (seed 002's executeParallel).
// Branches are isolated: each sees session state as it was when the group started plus its
// own writes, never another branch's. Their writes are merged afterwards; two branches writing
// different values to one key is a conflict, reported, not resolved by whoever wrote last.
// It is a troupe.Agent and safe for concurrent use; build it with Parallel.
type ParallelAgent struct {
	cfg    ParallelConfig
	agents []*troupe.AgentSpec
	lazy   lazy
	strays stray.Tracker // members abandoned past their timeout; Teardown waits for them
}

// Parallel returns a parallel group of agents (build each with Named). Configuration problems
// are reported by the first run.
func Parallel(cfg ParallelConfig, agents ...*troupe.AgentSpec) *ParallelAgent {
	return &ParallelAgent{cfg: cfg, agents: agents}
}

// ParallelOutcome is what a parallel group did.
type ParallelOutcome struct {
	// Results holds each branch's result in agent order, whatever order they finished in; nil
	// for a branch that never started (the group was cancelled, or another branch won first).
	Results []*troupe.Result
	// Winner is the index of the branch whose result FirstSuccess returned, or -1.
	Winner int
	// Vote is MajorityVote's tally; nil for the other strategies.
	Vote *Vote
	// State is the merged session state writes of the branches whose results count (all
	// completed ones; the winner's alone under FirstSuccess; under MajorityVote, the winning
	// answer's voters', or every completed branch's on a tie), without the conflicting keys.
	State map[string]any
	// Conflicts lists the keys branches wrote different values to.
	Conflicts []StateConflict
}

// Vote is the tally of a majority vote.
type Vote struct {
	Answer string              // the winning answer; "" on a tie
	Counts map[string]int      // answer → number of branches that gave it
	Voters map[string][]string // answer → those branches, in agent order
	Tie    bool                // two or more answers share the highest count
	Tied   []string            // those answers, sorted
}

// StateConflict is one session state key that branches wrote different values to.
type StateConflict struct {
	Key    string
	Values []BranchValue // every branch's value, in agent order
}

// BranchValue is one branch's write.
type BranchValue struct {
	Agent string
	Value any
}

// ConflictError reports branches' conflicting writes; it unwraps to a STATE_CONFLICT
// *troupe.AgentError.
type ConflictError struct {
	Conflicts []StateConflict
}

// Error names each conflicting key with every branch's value.
func (e *ConflictError) Error() string {
	parts := make([]string, len(e.Conflicts))
	for i, c := range e.Conflicts {
		var who []string
		for _, v := range c.Values {
			who = append(who, fmt.Sprintf("%s=%s", v.Agent, jsonText(v.Value)))
		}
		parts[i] = fmt.Sprintf("%q (%s)", c.Key, strings.Join(who, ", "))
	}
	return "flow: parallel: branches wrote different values to " + strings.Join(parts, "; ")
}

// Unwrap returns the seed 003 form of the error.
func (e *ConflictError) Unwrap() error {
	return &troupe.AgentError{Code: CodeStateConflict, Message: e.Error(), FallbackAction: "resolve the conflicting writes"}
}

// TieError reports a majority vote without a majority; it unwraps to a VOTE_TIE
// *troupe.AgentError.
type TieError struct {
	Vote *Vote
}

// Error names the tied answers and their vote count.
func (e *TieError) Error() string {
	return fmt.Sprintf("flow: parallel: majority vote tied between %q (%d votes each)", e.Vote.Tied, e.Vote.Counts[e.Vote.Tied[0]])
}

// Unwrap returns the seed 003 form of the error.
func (e *TieError) Unwrap() error {
	return &troupe.AgentError{Code: CodeVoteTie, Message: e.Error(), Recoverable: true, FallbackAction: "add a tie-breaking agent or retry"}
}

var errFirstSuccess = errors.New("flow: parallel: another branch succeeded first")

// Execute runs the group on behalf of d (its own dispatch; troupe.NewDispatch() outside a run).
// The returned outcome is never nil once the configuration is valid; the error is a
// *ConflictError, a *TieError (joined with a *ConflictError when the tied branches' writes
// conflict too), a *StepError for the first failed branch when none succeeded (a
// *troupe.AgentError when the group was cancelled), or a branch's error wrapping
// troupe.ErrPaused when it paused for a human (under FirstSuccess, only when no branch won). Each unwraps to seed 003's *troupe.AgentError.
func (p *ParallelAgent) Execute(ctx context.Context, d *troupe.Dispatch) (*ParallelOutcome, error) {
	out, _, err := p.execute(ctx, d)
	return out, err
}

// counting is what execute knows beside the outcome: which branches' results count — the
// answer rests on them, and the outcome's State is their writes — and which of them wrote each
// key of that State.
type counting struct {
	counted []bool // by branch, as ParallelOutcome.Results
	writers map[string][]string
}

// execute is Execute, also returning which branches count and which wrote each key of the
// outcome's State.
func (p *ParallelAgent) execute(ctx context.Context, d *troupe.Dispatch) (*ParallelOutcome, counting, error) {
	ms, err := p.lazy.get("parallel", p.agents)
	if err != nil {
		return nil, counting{}, err
	}
	if p.cfg.Strategy > MajorityVote {
		return nil, counting{}, fmt.Errorf("flow: parallel: unknown strategy %d", p.cfg.Strategy)
	}
	if p.cfg.Strategy == MajorityVote && p.cfg.Answer == nil {
		return nil, counting{}, errors.New("flow: parallel: MajorityVote needs an Answer extractor")
	}
	if p.cfg.MaxConcurrent < 0 {
		return nil, counting{}, fmt.Errorf("flow: parallel: negative MaxConcurrent %d", p.cfg.MaxConcurrent)
	}
	if d == nil {
		d = troupe.NewDispatch()
	}
	limit := bound(p.cfg.MaxConcurrent, DefaultMaxConcurrent)
	f := frameOf(d, &p.strays)
	f.peers = ms
	base := &frozen{below: dispatchState{d}}
	views := make([]*overlay, len(ms))
	causes := make([]error, len(ms)) // what each branch's agent returned
	out := &ParallelOutcome{Results: make([]*troupe.Result, len(ms)), Winner: -1}

	gctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex // guards out.Winner, paused and pausedAt
		paused   error      // the first branch's troupe.ErrPaused, in agent order
		pausedAt = -1       // which branch that is: the group's error does not depend on which paused last
		sem      = make(chan struct{}, limit)
	)
	upstream := d.UpstreamResults[:len(d.UpstreamResults):len(d.UpstreamResults)]
	inputOf := func(i int) input {
		return input{id: childID(d.DispatchID, saltBranch, uint64(i)), query: d.Query, parsed: d.ParsedQuery, upstream: upstream,
			mode: troupe.Parallel, reason: fmt.Sprintf("branch %d of %d of a parallel group (%s)", i+1, len(ms), p.cfg.Strategy)}
	}
	// A resumed run's group first takes the results its log holds, before it starts any
	// branch: they finished before whatever the others do now (a branch that paused for a
	// human and is run again to ask again, say), and a recorded winner wins before another
	// branch starts, as it did — of two, the one that completed first.
	taken := make([]bool, len(ms))
	winnerAt := -1 // where the log holds the winner's result, once asked
	for i := range ms {
		views[i] = &overlay{below: base}
		dsp := f.dispatchOf(&ms[i], inputOf(i))
		res, cause, ok := f.recorded(&ms[i], &dsp, views[i])
		if !ok {
			continue
		}
		out.Results[i], causes[i], taken[i] = res, cause, true
		if p.cfg.Strategy != FirstSuccess || res.Status != troupe.StatusCompleted {
			continue
		}
		if out.Winner < 0 || res.CompletedAt.Before(out.Results[out.Winner].CompletedAt) {
			out.Winner, winnerAt = i, -1
			continue
		}
		if res.CompletedAt.Equal(out.Results[out.Winner].CompletedAt) {
			// Two completed at one instant: the win cancelled the other, a composite that
			// completed all the same as it was let go (a collect_all group with a completed
			// member). The one the log recorded first won.
			if winnerAt < 0 {
				w := f.dispatchOf(&ms[out.Winner], inputOf(out.Winner))
				winnerAt = f.recordedAt(&w)
			}
			if at := f.recordedAt(&dsp); at >= 0 && at < winnerAt {
				out.Winner, winnerAt = i, at
			}
		}
	}
	if out.Winner >= 0 {
		cancel(errFirstSuccess)
	}
	launched := make([]bool, len(ms))
launch:
	for i := range ms {
		if taken[i] {
			continue
		}
		select {
		case sem <- struct{}{}:
		case <-gctx.Done():
			break launch
		}
		if gctx.Err() != nil {
			<-sem
			break
		}
		launched[i] = true
		in := inputOf(i)
		wg.Go(func() {
			defer func() { <-sem }()
			res, cause := f.run(gctx, &ms[i], in, views[i])
			if res.Status == troupe.StatusCancelled && context.Cause(gctx) == errFirstSuccess {
				// Cancelled by another branch's win, made again to ask what the log shows it
				// paused for, which no one can answer now: it would have paused again at
				// once, as it paused before that win the first time (the log holds its pause,
				// not the win). It is reported as it paused, as a branch the win cancels
				// before it starts is (below), whichever got there first this time.
				dsp := f.dispatchOf(&ms[i], in)
				if pr, ok := f.pausedAgain(&dsp); ok {
					res, cause = pr, recordedCause(pr)
				}
			}
			out.Results[i], causes[i] = res, cause // each goroutine writes its own elements; wg.Wait publishes them
			if errors.Is(cause, troupe.ErrPaused) {
				mu.Lock()
				if pausedAt < 0 || i < pausedAt {
					paused, pausedAt = cause, i
				}
				mu.Unlock()
			}
			if p.cfg.Strategy == FirstSuccess && res.Status == troupe.StatusCompleted {
				mu.Lock()
				if out.Winner < 0 {
					out.Winner = i
					cancel(errFirstSuccess)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if gctx.Err() != nil {
		// Cancelled before it started every branch: a group made again by a resumed run that
		// is ending, most often, or one whose winner it took from the log. The branches its
		// log shows finished ended as they did (taken above), and the others never start,
		// but for composites the log shows unfinished, running members or with one waiting
		// for a human, which take their finished members and end as they let them (a
		// sequence cancelled by the win reports what its finished steps used, as it did),
		// and for members the log shows waiting for a human, which wait still: the group
		// pauses, as it did (see dispatchAdmitter).
		refused := refusedBeforeStop(limit, out, taken, launched, ctx.Err() != nil, func(i int) error {
			dsp := f.dispatchOf(&ms[i], inputOf(i))
			return f.refusal(&dsp)
		}, func(i int) (time.Time, bool) {
			dsp := f.dispatchOf(&ms[i], inputOf(i))
			if pr, ok := f.pausedAgain(&dsp); ok {
				return pr.CompletedAt, true
			}
			return time.Time{}, false
		})
		for i := range ms {
			if taken[i] || launched[i] {
				continue
			}
			if refused[i] != nil {
				// The group asked for it before it stopped the first time, and the run,
				// its budget spent as the log shows, refused it then as it does now: it is
				// reported not started, as it was (its result made as the group made it
				// while its context was live).
				dsp := f.dispatchOf(&ms[i], inputOf(i))
				out.Results[i], causes[i] = notStarted(context.WithoutCancel(ctx), &ms[i], &dsp, refused[i])
				continue
			}
			dsp := f.dispatchOf(&ms[i], inputOf(i))
			if ctx.Err() == nil && !f.ranMembers(&dsp) {
				// A win taken from the log: nothing else is asked for, as it was not. A
				// branch that had paused for a human is reported as it paused, the question
				// moot, as the group reported it then.
				if res, ok := f.pausedResult(&dsp); ok && out.Winner >= 0 {
					out.Results[i], causes[i] = res, recordedCause(res)
				}
				continue
			}
			resuming, err := f.admit(&dsp)
			if errors.Is(err, troupe.ErrPaused) {
				// It waits still, reported as the log shows it paused, with what it used
				// then, as the group reported it then (see runNew).
				if pr, ok := f.pausedAgain(&dsp); ok {
					err = recordedPauseOf(pr, err)
					out.Results[i], causes[i] = pr, err
				}
				if pausedAt < 0 || i < pausedAt {
					paused, pausedAt = err, i
				}
			}
			if !resuming {
				continue
			}
			res, cause := f.runNew(gctx, &ms[i], &dsp, inputOf(i), views[i])
			out.Results[i], causes[i] = res, cause
			if p.cfg.Strategy == FirstSuccess && res.Status == troupe.StatusCompleted && out.Winner < 0 {
				out.Winner = i
			}
		}
	}

	if p.cfg.Strategy == MajorityVote {
		out.Vote = tally(ms, out.Results, p.cfg.Answer)
	}
	counted := make([]bool, len(ms))
	for i, r := range out.Results {
		counted[i] = r != nil && r.Status == troupe.StatusCompleted
		switch {
		case p.cfg.Strategy == FirstSuccess:
			counted[i] = counted[i] && i == out.Winner
		case out.Vote != nil && !out.Vote.Tie:
			// The outvoted branches lost, as FirstSuccess's losers do: their writes would
			// turn every majority short of unanimity into a conflict.
			counted[i] = counted[i] && slices.Contains(out.Vote.Voters[out.Vote.Answer], ms[i].spec.Name)
		}
	}
	c := counting{counted: counted}
	out.State, out.Conflicts, c.writers = merge(ms, views, counted)
	var conflict error
	if len(out.Conflicts) > 0 {
		conflict = &ConflictError{Conflicts: out.Conflicts}
	}
	switch {
	case paused != nil && out.Winner < 0:
		// The run pauses for a human; resumed, the group runs again. Under FirstSuccess a
		// winner makes the question moot: the group is done.
		return out, c, paused
	case !slices.Contains(counted, true):
		return out, c, noSuccess(ctx, out.Results, causes)
	case out.Vote != nil && out.Vote.Tie && conflict != nil:
		// The tie is reported, not hidden behind the tied branches' conflicting writes.
		return out, c, errors.Join(&TieError{Vote: out.Vote}, conflict)
	case out.Vote != nil && out.Vote.Tie:
		return out, c, &TieError{Vote: out.Vote}
	case conflict != nil:
		return out, c, conflict
	}
	return out, c, nil
}

// refusedBeforeStop returns, for a group a resumed run made again that stopped starting
// branches before it started them all (its context ended), the run's refusal of each branch
// the group asked it to start the first time before it stopped, and that the log shows
// neither started nor finished: the run refused it then, for a budget the log shows spent, and
// the group reported it not started (runNew), in its warnings too. The log does not show that
// refusal; the times of the branches' recorded results do. The group stopped the first time
// when its recorded winner completed, or when the first of its recorded branches ended
// because its context had (the run was ending), or, cancelled now or won by a branch made
// again with none such, after all of them. Branches start in agent order as slots free,
// branch i once i-limit+1 of those before it have finished: one the run refused (refusal,
// asked of branches neither taken from the log nor launched again) at the moment it was asked
// for; one made again, not completed, that the log shows paused for a human it still cannot
// ask (pausedAt) when it paused; one the log shows unfinished or not at all after every
// recorded result. Only recorded times are compared, so the answer is the same however the
// resumed run schedules its goroutines.
func refusedBeforeStop(limit int, out *ParallelOutcome, taken, launched []bool, cancelled bool, refusal func(i int) error, pausedAt func(i int) (time.Time, bool)) []error {
	refused := make([]error, len(out.Results))
	never := time.Unix(1<<62, 0) // later than any time a log records
	var stop time.Time
	for i, r := range out.Results {
		if taken[i] && (i == out.Winner || r.Status != troupe.StatusCompleted && endedWithContext(r)) && (stop.IsZero() || r.CompletedAt.Before(stop)) {
			stop = r.CompletedAt
		}
	}
	switch {
	case !stop.IsZero():
	case cancelled || out.Winner >= 0:
		// The group's own context has ended (the run is ending), or a branch made again won,
		// after every result of it the log holds: it stopped after all of them.
		stop = never
	default:
		return refused
	}
	// When each branch before i finished: the zero time for one refused as the group started,
	// never for one the log shows unfinished or not at all.
	var ends []time.Time
	for i, r := range out.Results {
		var at time.Time // when the group asked for branch i: the zero time as it started
		if i >= limit {
			slices.SortFunc(ends, time.Time.Compare)
			if at = ends[i-limit]; !at.Before(stop) {
				break // no slot freed for it before the group stopped
			}
		}
		end := never
		switch {
		case taken[i]:
			end = r.CompletedAt
		case launched[i]:
			if r != nil && r.Status == troupe.StatusCompleted {
				break // it finished with what it did now, after everything recorded
			}
			if at, ok := pausedAt(i); ok {
				end = at // it paused for a human the first time, and let its slot go then
			}
		default:
			if refused[i] = refusal(i); refused[i] != nil {
				end = at // refused at once, its slot freed
			}
		}
		ends = append(ends, end)
	}
	return refused
}

// refusal is the run's refusal of member dispatch d for a budget (see dispatchAdmitter), or
// nil when it admits d, or holds or cancels it rather than refusing it.
func (f *frame) refusal(d *troupe.Dispatch) error {
	resuming, err := f.admit(d)
	if err == nil || resuming || errors.Is(err, troupe.ErrPaused) || errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// notStarted is the result runNew makes of member m's dispatch d that the run refused (err):
// failed, not started.
func notStarted(ctx context.Context, m *member, d *troupe.Dispatch, err error) (*troupe.Result, error) {
	aerr := &troupe.AgentError{Code: troupe.CodeBudget, Message: "not started", Cause: err}
	return result(ctx, m, d, nil, aerr, time.Now()), aerr
}

// merge combines the branches' writes in agent order; keys with different values conflict.
// writers names, for each merged key, the branches that wrote it, in agent order.
func merge(ms []member, views []*overlay, counted []bool) (state map[string]any, conflicts []StateConflict, writers map[string][]string) {
	byKey := map[string][]BranchValue{}
	var keys []string
	for i, v := range views {
		if v == nil || !counted[i] {
			continue
		}
		for _, k := range slices.Sorted(maps.Keys(v.writes)) {
			if _, seen := byKey[k]; !seen {
				keys = append(keys, k)
			}
			byKey[k] = append(byKey[k], BranchValue{Agent: ms[i].spec.Name, Value: v.writes[k]})
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		vs := byKey[k]
		same := true
		for _, v := range vs[1:] {
			same = same && jsonvalue.Equal(vs[0].Value, v.Value)
		}
		if !same {
			conflicts = append(conflicts, StateConflict{Key: k, Values: vs})
			continue
		}
		if state == nil {
			state, writers = make(map[string]any), make(map[string][]string)
		}
		state[k] = vs[0].Value
		for _, v := range vs {
			writers[k] = append(writers[k], v.Agent)
		}
	}
	return state, conflicts, writers
}

func tally(ms []member, rs []*troupe.Result, answer func(*troupe.Result) string) *Vote {
	v := &Vote{Counts: map[string]int{}, Voters: map[string][]string{}}
	for i, r := range rs {
		if r == nil || r.Status != troupe.StatusCompleted {
			continue
		}
		a := answer(r)
		v.Counts[a]++
		v.Voters[a] = append(v.Voters[a], ms[i].spec.Name)
	}
	best := 0
	for a, n := range v.Counts {
		switch {
		case n > best:
			best, v.Tied = n, []string{a}
		case n == best:
			v.Tied = append(v.Tied, a)
		}
	}
	slices.Sort(v.Tied)
	switch len(v.Tied) {
	case 0:
	case 1:
		v.Answer, v.Tied = v.Tied[0], nil
	default:
		v.Tie = true
	}
	return v
}

func noSuccess(ctx context.Context, rs []*troupe.Result, causes []error) error {
	if ctx.Err() != nil {
		return &troupe.AgentError{Code: troupe.CodeCancelled, Message: "flow: parallel: cancelled: " + context.Cause(ctx).Error(), Cause: context.Cause(ctx)}
	}
	for i, r := range rs {
		if r != nil && r.Status != troupe.StatusCompleted {
			ae := errorOf("flow: parallel: no branch succeeded; first failure", r)
			ae.Recoverable = true
			return &StepError{Step: i + 1, Agent: r.AgentName, Result: r, Err: ae, Cause: causes[i]}
		}
	}
	return &troupe.AgentError{Code: troupe.CodeAgentError, Message: "flow: parallel: no branch succeeded"}
}

// Run runs the group as an agent. Its agent_result depends on the strategy:
//
//   - CollectAll: the merged state writes plus "branches", each completed branch's
//     agent_result by agent name;
//   - FirstSuccess: the winner's agent_result;
//   - MajorityVote: the merged state writes plus "answer", "votes" (answer → count) and
//     "voters" (answer → agents).
//
// The strategy's own keys always mean what they say here. A branch's state write to one of
// them is not silently lost: it stays in Execute's ParallelOutcome.State (under CollectAll, in
// the branch's own agent_result under "branches" too), and the result carries a warning naming
// the branches, the key and the value, e.g. `voter1, voter2: state write "answer" = "42" is
// shadowed by the majority_vote group's own "answer"`.
//
// Its confidence follows seed 000's conservative rule, which the run's overall_confidence
// follows too: the minimum over the branches whose results the answer rests on that report
// one, nil when none does —
//
//   - CollectAll: every completed branch;
//   - FirstSuccess: the winner (its confidence, as its agent_result);
//   - MajorityVote: the winning answer's voters; on a tie, every completed branch, as the
//     merged state is.
//
// A branch that failed, was cancelled or was outvoted answers nothing, and its confidence is
// left out.
//
// Tokens and cost are the sum of every branch's. Conflicts, ties and a group without a
// success return the partial result with Execute's error.
func (p *ParallelAgent) Run(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
	out, c, err := p.execute(ctx, d)
	if out == nil {
		return nil, err
	}
	res := &troupe.Result{}
	for _, k := range p.cfg.Strategy.ownKeys() {
		if v, ok := out.State[k]; ok {
			res.Warnings = append(res.Warnings, fmt.Sprintf("%s: state write %q = %s is shadowed by the %s group's own %q",
				strings.Join(c.writers[k], ", "), k, truncate(jsonText(v), 80), p.cfg.Strategy, k))
		}
	}
	switch p.cfg.Strategy {
	case FirstSuccess:
		if out.Winner >= 0 {
			w := out.Results[out.Winner]
			res.AgentResult, res.AnalysisSummary, res.Handoff = maps.Clone(w.AgentResult), w.AnalysisSummary, w.Handoff
		}
	case CollectAll:
		res.AgentResult = maps.Clone(out.State)
		branches := map[string]any{}
		for _, r := range out.Results {
			if r != nil && r.Status == troupe.StatusCompleted {
				branches[r.AgentName] = r.AgentResult
			}
		}
		if res.AgentResult == nil {
			res.AgentResult = map[string]any{}
		}
		res.AgentResult["branches"] = branches
	case MajorityVote:
		res.AgentResult = maps.Clone(out.State)
		if res.AgentResult == nil {
			res.AgentResult = map[string]any{}
		}
		res.AgentResult["answer"] = out.Vote.Answer
		res.AgentResult["votes"] = out.Vote.Counts
		res.AgentResult["voters"] = out.Vote.Voters
	}
	res.Confidence = leastConfidence(out.Results, func(i int) bool { return c.counted[i] })
	reviewed(res, out.Results, func(i int) bool { return c.counted[i] })
	for _, r := range out.Results {
		if r != nil {
			res.Warnings = append(res.Warnings, r.Warnings...)
		}
	}
	usage(res, out.Results)
	if err == nil {
		warnUnfinished(res, out.Results)
	}
	return res, err
}
