package flow

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/internal/stray"
)

// ErrorMode says what a sequence does when one of its agents fails (seed 002's ErrorPolicy).
type ErrorMode uint8

// Error modes. The zero value is StopOnError.
const (
	// StopOnError ends the sequence at the first failure: the results up to it are returned
	// with a *StepError carrying the failure's context.
	StopOnError ErrorMode = iota
	// ContinueOnError goes on with the next agent; the failed result is kept and its handoff
	// (status failed) is passed on.
	ContinueOnError
)

// SequentialConfig configures a sequence (seed 002's SequentialConfig). The zero value stops on
// the first error and passes handoffs unchanged.
type SequentialConfig struct {
	// Transform, if set, modifies each handoff before it is given to the next agent (seed
	// 002's seqHandoffTransform / modifyHandoff). It must not keep or modify its argument's
	// slices and maps; return changed copies.
	Transform func(Handoff) Handoff
	// OnError is StopOnError or ContinueOnError.
	OnError ErrorMode
}

// SequentialAgent runs agents in order, handing each one's Handoff to the next (seed 002's
// executeSequential). It is a troupe.Agent, so it can be registered with an engine or nested
// in another composite. It is safe for concurrent use; build it with Sequential.
type SequentialAgent struct {
	cfg    SequentialConfig
	agents []*troupe.AgentSpec
	lazy   lazy
	strays stray.Tracker // members abandoned past their timeout; Teardown waits for them
}

// Sequential returns a sequence of agents (build each with Named). Problems with the agents —
// none, a nil one, a duplicate name, a bad schema — are reported by the first run.
func Sequential(cfg SequentialConfig, agents ...*troupe.AgentSpec) *SequentialAgent {
	return &SequentialAgent{cfg: cfg, agents: agents}
}

// SequenceOutcome is what a sequence did.
type SequenceOutcome struct {
	// Results holds one result per agent that ran, in order; with StopOnError the last one is
	// the failure.
	Results []*troupe.Result
	// Handoffs[i] is what Results[i]'s agent passed on, after the transform.
	Handoffs []Handoff
	// State is what the sequence's agents wrote to session state (their declared writes).
	State map[string]any
}

// StepError is the failure of one member that stopped a composite — a sequence's step under
// StopOnError, a loop's cycle, the first failed branch of a parallel group none of whose
// branches succeeded: which one, which agent, and its result. It unwraps to the seed 003
// *troupe.AgentError describing the failure and to the error the agent returned, so errors.As
// finds a member's typed error (a *troupe.CircularDependencyError, say) through any nesting of
// composites.
type StepError struct {
	Step   int // 1-based: the step, cycle or branch
	Agent  string
	Result *troupe.Result
	Err    *troupe.AgentError
	Cause  error // what the agent returned, if it returned an error
}

// Error is the seed 003 error's text: the composite, the step, the agent and its failure.
func (e *StepError) Error() string { return e.Err.Error() }

// Unwrap returns the agent error and the agent's own error, so errors.As finds either.
func (e *StepError) Unwrap() []error { return []error{e.Err, e.Cause} }

// Execute runs the sequence on behalf of d (the sequence's own dispatch; a plain
// troupe.NewDispatch() with a Query when called outside a run).
//
// A member that pauses for a human (troupe.ErrPaused) stops the sequence whatever OnError
// says, and Run returns that error so the run pauses.
//
// Each agent gets d's query with the previous handoff's Prompt() injected before it, and
// upstream_results extended with the results so far (each with its handoff). Session state
// reads see d's state plus the writes of the agents before.
func (s *SequentialAgent) Execute(ctx context.Context, d *troupe.Dispatch) (*SequenceOutcome, error) {
	out, _, err := s.execute(ctx, d)
	return out, err
}

// execute is Execute, also returning what the first step's agent returned as its error, if any.
func (s *SequentialAgent) execute(ctx context.Context, d *troupe.Dispatch) (_ *SequenceOutcome, firstCause, err error) {
	ms, err := s.lazy.get("sequential", s.agents)
	if err != nil {
		return nil, nil, err
	}
	if d == nil {
		d = troupe.NewDispatch()
	}
	f := frameOf(d, &s.strays)
	f.peers = ms
	st := over(d)
	out := &SequenceOutcome{}
	upstream := d.UpstreamResults[:len(d.UpstreamResults):len(d.UpstreamResults)]
	var prev *Handoff
	for i := range ms {
		m := &ms[i]
		in := input{id: childID(d.DispatchID, saltStep, uint64(i)), query: d.Query, parsed: d.ParsedQuery, upstream: upstream,
			mode: troupe.Sequential, reason: fmt.Sprintf("step %d of %d of a sequence", i+1, len(ms))}
		if prev != nil {
			in.query = prev.Prompt() + "\n\n" + d.Query
			in.reason += ", after " + prev.SourceAgent
		}
		dsp := f.dispatchOf(m, in)
		res, cause, taken := f.recorded(m, &dsp, st)
		if !taken {
			res, cause = f.runNew(ctx, m, &dsp, in, st)
		}
		h := NewHandoff(res)
		if s.cfg.Transform != nil {
			h = s.cfg.Transform(h)
		}
		out.Results = append(out.Results, res)
		out.Handoffs = append(out.Handoffs, h)
		if i == 0 {
			firstCause = cause
		}
		upstream = append(upstream, troupe.UpstreamResult{Agent: res.AgentName, Result: res.AgentResult, DispatchID: res.DispatchID,
			Confidence: res.Confidence, Summary: res.Summary(), Handoff: h.Map()})
		prev = &out.Handoffs[len(out.Handoffs)-1]
		// Cancelled, the sequence stops at the first step that did not complete, but for one
		// whose result a resumed run takes from its log and that failed before the sequence
		// was cancelled the first time: the sequence went on to the steps after it then,
		// whose results the log may hold too. One the log shows ended once the sequence's
		// context had (endedWithContext) stopped it then, and stops it again.
		stopped := ctx.Err() != nil && (!taken || endedWithContext(res))
		if res.Status != troupe.StatusCompleted && (s.cfg.OnError == StopOnError || stopped || errors.Is(cause, troupe.ErrPaused)) {
			out.State = st.snapshot()
			ae := errorOf(fmt.Sprintf("flow: sequential: step %d of %d", i+1, len(ms)), res)
			return out, firstCause, &StepError{Step: i + 1, Agent: res.AgentName, Result: res, Err: ae, Cause: cause}
		}
	}
	out.State = st.snapshot()
	return out, firstCause, nil
}

// Run runs the sequence as an agent. Its agent_result is the agent_results of the completed
// steps merged in order (a later step's field replaces an earlier one's: the sequence's
// blackboard), its analysis summary the last completed step's, its handoff the last step's,
// its tokens and cost the sum of the steps'. Its confidence is the minimum over the completed
// steps that report one, nil when none does (seed 000's conservative rule, which the run's
// overall_confidence follows): the answer rests on every step, so it is no surer than the
// least sure of them; a step that failed answers nothing and its confidence is left out. A
// failure under StopOnError returns that partial result with the *StepError; so does a
// sequence under ContinueOnError none of whose steps completed, with the first step's failure.
func (s *SequentialAgent) Run(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
	out, first, err := s.execute(ctx, d)
	if out == nil {
		return nil, err
	}
	res := &troupe.Result{}
	for _, r := range out.Results {
		if r.Status == troupe.StatusCompleted {
			if res.AgentResult == nil {
				res.AgentResult = make(map[string]any)
			}
			maps.Copy(res.AgentResult, r.AgentResult)
			res.AnalysisSummary = r.AnalysisSummary
		}
		res.Warnings = append(res.Warnings, r.Warnings...)
	}
	res.Confidence = leastConfidence(out.Results, func(int) bool { return true })
	reviewed(res, out.Results, func(int) bool { return true })
	if n := len(out.Handoffs); n > 0 {
		res.Handoff = out.Handoffs[n-1].Map()
	}
	usage(res, out.Results)
	if err != nil {
		se := err.(*StepError)
		if errors.Is(se.Cause, troupe.ErrPaused) {
			return res, se.Cause // the run pauses for a human; resumed, the sequence runs again
		}
		return res, se
	}
	if res.AgentResult == nil {
		// ContinueOnError, and no step completed: the error says which failed first, and how.
		r := out.Results[0]
		ae := errorOf(fmt.Sprintf("flow: sequential: every step failed; step 1 of %d", len(out.Results)), r)
		return res, &StepError{Step: 1, Agent: r.AgentName, Result: r, Err: ae, Cause: first}
	}
	warnUnfinished(res, out.Results)
	return res, nil
}
