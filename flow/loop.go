package flow

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/internal/stray"
)

// DefaultMaxIterations bounds a loop whose config names no bound (seed 003's MasteryLoop
// default).
const DefaultMaxIterations = 5

// Escalation reasons (seed 003's MasteryLoop recommendation).
const (
	ReasonMastered         = "mastered"          // the condition held
	ReasonNeedsRemediation = "needs_remediation" // max iterations reached without it
)

// LoopConfig configures a loop (seed 003's LoopAgent). The zero value runs the agent five
// times; zero never means forever.
type LoopConfig struct {
	// MaxIterations bounds the cycles; 0 means DefaultMaxIterations.
	MaxIterations int
	// Until is the escalation condition, checked after every completed cycle; when it returns
	// true the loop stops. Nil runs MaxIterations cycles.
	Until func(Iteration) bool
	// MetReason and ExhaustedReason name why the loop stopped; "" means ReasonMastered and
	// ReasonNeedsRemediation.
	MetReason, ExhaustedReason string
}

// Iteration is what the escalation condition sees after a cycle.
type Iteration struct {
	Cycle  int            // 1-based
	Result *troupe.Result // the cycle's result
	st     view
}

// State reads session state as the loop sees it after the cycle: the enclosing dispatch's
// state plus every write of the loop's cycles so far.
func (it Iteration) State(key string) (any, bool) { return it.st.get(key) }

// LoopAgent repeats an agent until a condition over its result or session state holds, or a
// bound is reached (seed 003's MasteryLoop). It is a troupe.Agent and safe for concurrent use;
// build it with Loop.
type LoopAgent struct {
	cfg    LoopConfig
	agent  []*troupe.AgentSpec
	lazy   lazy
	strays stray.Tracker // cycles abandoned past their timeout; Teardown waits for them
}

// Loop returns a loop over agent (build it with Named).
func Loop(cfg LoopConfig, agent *troupe.AgentSpec) *LoopAgent {
	return &LoopAgent{cfg: cfg, agent: []*troupe.AgentSpec{agent}}
}

// LoopOutcome is what a loop did (seed 003's MasteryLoop output).
type LoopOutcome struct {
	Final        *troupe.Result   // the last cycle's result
	Results      []*troupe.Result // every cycle's, in order
	Cycles       int              // total cycles run
	Escalated    bool             // the loop ended by escalation (seed 003: the condition held or max iterations was reached)
	ConditionMet bool             // the condition held
	Reason       string           // why: MetReason or ExhaustedReason ("" when a cycle failed)
	State        map[string]any   // the loop's session state writes
}

// Execute runs the loop on behalf of d (its own dispatch; troupe.NewDispatch() outside a run).
// Each cycle's dispatch carries user_context "loop_cycle" (1-based) and, in upstream_results,
// the loop's own upstream results followed by every earlier cycle's result, the last one the
// previous cycle's; session state accumulates across cycles. A failed cycle ends
// the loop with a *StepError (which unwraps to seed 003's *troupe.AgentError); a cycle that pauses
// for a human ends it with that error (wrapping troupe.ErrPaused), so the run pauses.
func (l *LoopAgent) Execute(ctx context.Context, d *troupe.Dispatch) (*LoopOutcome, error) {
	ms, err := l.lazy.get("loop", l.agent)
	if err != nil {
		return nil, err
	}
	if l.cfg.MaxIterations < 0 {
		return nil, fmt.Errorf("flow: loop: negative MaxIterations %d", l.cfg.MaxIterations)
	}
	if d == nil {
		d = troupe.NewDispatch()
	}
	limit := bound(l.cfg.MaxIterations, DefaultMaxIterations)
	f := frameOf(d, &l.strays)
	st := over(d)
	out := &LoopOutcome{}
	upstream := d.UpstreamResults[:len(d.UpstreamResults):len(d.UpstreamResults)]
	for cycle := 1; cycle <= limit; cycle++ {
		user := make(map[string]any, len(d.UserContext)+1)
		maps.Copy(user, d.UserContext)
		user["loop_cycle"] = cycle
		in := input{id: childID(d.DispatchID, saltIteration, uint64(cycle)), query: d.Query, parsed: d.ParsedQuery, upstream: upstream,
			mode: troupe.Sequential, user: user, reason: fmt.Sprintf("cycle %d of at most %d of a loop", cycle, limit)}
		res, cause := f.run(ctx, &ms[0], in, st)
		out.Results = append(out.Results, res)
		out.Final, out.Cycles = res, cycle
		if res.Status != troupe.StatusCompleted {
			out.State = st.snapshot()
			if errors.Is(cause, troupe.ErrPaused) {
				return out, cause
			}
			return out, &StepError{Step: cycle, Agent: res.AgentName, Result: res, Cause: cause,
				Err: errorOf(fmt.Sprintf("flow: loop: cycle %d", cycle), res)}
		}
		if l.cfg.Until != nil && l.cfg.Until(Iteration{Cycle: cycle, Result: res, st: st}) {
			out.Escalated, out.ConditionMet, out.Reason = true, true, or(l.cfg.MetReason, ReasonMastered)
			out.State = st.snapshot()
			return out, nil
		}
		upstream = append(upstream[:len(upstream):len(upstream)], troupe.UpstreamResult{Agent: res.AgentName, Result: res.AgentResult,
			DispatchID: res.DispatchID, Confidence: res.Confidence, Summary: res.Summary(), Handoff: res.Handoff})
	}
	out.Escalated, out.Reason = true, or(l.cfg.ExhaustedReason, ReasonNeedsRemediation)
	out.State = st.snapshot()
	return out, nil
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// Run runs the loop as an agent. Its agent_result is the last cycle's plus "total_cycles",
// "escalated", "condition_met" and "escalation_reason"; tokens and cost are every cycle's.
//
// Its confidence is the last completed cycle's, nil when that one reports none — not the
// minimum over the cycles that a sequence or a parallel group reports. Those answer with what
// all their counted members produced, so their answer is no surer than the least sure of
// them; a loop answers with its last cycle's output alone, which replaced the earlier ones'
// (each cycle sees the previous ones in its upstream_results and refines them). An early,
// unsure attempt is what the loop ran on to fix, and its confidence vouches for nothing the
// loop returns: the minimum would report a loop that went from 0.3 to 0.95 and stopped
// because it had mastered the task as 0.3, below the very result that stopped it. A cycle that
// failed answers nothing, so a loop ended by one reports the confidence of the cycle before it
// (nil when there is none), with the *StepError.
func (l *LoopAgent) Run(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
	out, err := l.Execute(ctx, d)
	if out == nil {
		return nil, err
	}
	res := &troupe.Result{AgentResult: maps.Clone(out.Final.AgentResult)}
	if res.AgentResult == nil {
		res.AgentResult = map[string]any{}
	}
	res.AgentResult["total_cycles"] = out.Cycles
	res.AgentResult["escalated"] = out.Escalated
	res.AgentResult["condition_met"] = out.ConditionMet
	res.AgentResult["escalation_reason"] = out.Reason
	res.AnalysisSummary, res.Handoff = out.Final.AnalysisSummary, out.Final.Handoff
	for _, r := range out.Results {
		res.Warnings = append(res.Warnings, r.Warnings...)
		if r.Status == troupe.StatusCompleted {
			res.Confidence = r.Confidence
		}
	}
	reviewed(res, out.Results, func(int) bool { return true })
	usage(res, out.Results)
	return res, err
}
