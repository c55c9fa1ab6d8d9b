package aggregate

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/internal/jsonvalue"
)

// CombineConfidence combines agents' confidences by seed 000's conservative rule: the minimum,
// or 0.0 when there are none. A NaN among them makes the result NaN.
func CombineConfidence(cs []float64) float64 {
	if len(cs) == 0 {
		return 0
	}
	m := cs[0]
	for _, c := range cs[1:] {
		m = min(m, c)
	}
	return m
}

// Options configures Combine. The zero value resolves conflicts by highest confidence, takes
// the execution order from the order of the results and sums their execution times. Combine
// only reads it, so one Options may be shared by concurrent calls.
type Options struct {
	// Strategy resolves conflicts; "" means HighestConfidence.
	Strategy Strategy
	// ExecutionOrder is the order in which agents ran, as the engine saw it; empty means the
	// agent names of the results, in the order given.
	ExecutionOrder []string
	// TotalExecutionTimeMS is the run's wall-clock time; 0 or less means the sum of the
	// results' execution_time_ms, which overstates it when agents ran in parallel.
	TotalExecutionTimeMS int64
}

// Combine aggregates one run's results into seed 000's AgentResultAggregation, every field
// filled:
//
//   - agents_executed and combined_results (agent → agent_result) come from the completed
//     results; an agent that completed more than once contributes its last result;
//   - overall_confidence is CombineConfidence over the completed results that report one;
//   - synthesis, key_insights, conflicts_detected (resolved by o.Strategy), consistency_score
//     and resolved are Synthesis, KeyInsights, DetectConflicts + Resolve and ConsistencyScore
//     over those results;
//   - total_execution_time_ms, total_tokens_used and total_cost_dollars add up every result,
//     completed or not (nil when no result reports tokens or cost);
//   - warnings name each result that did not complete ("gap_analyzer: timeout"), superseded
//     results, and agents that reported no confidence.
//
// Slices and maps are never nil, so the JSON encoding is stable. Combine returns an error for
// an unknown strategy (matching ErrUnknownStrategy), and for a completed result's confidence
// outside [0, 1], a negative or non-finite cost, or costs whose sum overflows (matching
// troupe.ErrInvalidResult), which would make the aggregate out of seed 000's bounds or
// unencodable. Failed and nil results
// are never an error: they are what warnings are for.
func Combine(results []*troupe.Result, o Options) (*troupe.Aggregation, error) {
	s, err := o.Strategy.normalize()
	if err != nil {
		return nil, err
	}
	a := &troupe.Aggregation{
		AgentsExecuted:     make([]string, 0, len(results)),
		CombinedResults:    make(map[string]any, len(results)),
		KeyInsights:        []string{},
		ResolutionStrategy: string(s),
		Warnings:           []string{},
	}
	for _, r := range results {
		if r == nil {
			continue
		}
		if err := check(r); err != nil {
			return nil, err
		}
	}
	// An agent that completed more than once contributes its last result: walking backwards,
	// the first completed result of each agent is its last, and CombinedResults, which is
	// needed anyway, says which agents have one already.
	var supBuf [64]bool
	superseded := supBuf[:]
	if len(results) > len(supBuf) {
		superseded = make([]bool, len(results))
	}
	for i := len(results) - 1; i >= 0; i-- {
		r := results[i]
		if r == nil || !r.Succeeded() {
			continue
		}
		if _, ok := a.CombinedResults[r.AgentName]; ok {
			superseded[i] = true
			continue
		}
		ar := r.AgentResult
		if ar == nil {
			ar = map[string]any{}
		}
		a.CombinedResults[r.AgentName] = ar
	}

	// The execution order is the caller's, copied, or else the results' agents in order.
	order := len(o.ExecutionOrder) == 0
	if order {
		a.ExecutionOrder = make([]string, 0, len(results))
	} else {
		a.ExecutionOrder = slices.Clone(o.ExecutionOrder)
	}
	var keptBuf [16]*troupe.Result
	kept := keptBuf[:0]
	if len(results) > len(keptBuf) {
		kept = make([]*troupe.Result, 0, len(results))
	}
	var execTime, tokens int64
	var cost float64
	var haveTokens, haveCost bool
	for i, r := range results {
		if r == nil {
			a.Warnings = append(a.Warnings, fmt.Sprintf("result %d is nil", i))
			continue
		}
		if order {
			a.ExecutionOrder = append(a.ExecutionOrder, r.AgentName)
		}
		execTime += r.ExecutionTimeMS
		if r.TokensUsed != nil {
			tokens += *r.TokensUsed
			haveTokens = true
		}
		if r.CostDollars != nil {
			cost += *r.CostDollars
			haveCost = true
		}
		switch {
		case !r.Succeeded():
			a.Warnings = append(a.Warnings, notCompleted(r))
		case superseded[i]:
			a.Warnings = append(a.Warnings, r.AgentName+": completed again; the later result is combined")
		default:
			kept = append(kept, r)
		}
	}
	a.TotalExecutionTimeMS = execTime
	if o.TotalExecutionTimeMS > 0 {
		a.TotalExecutionTimeMS = o.TotalExecutionTimeMS
	}
	if haveTokens {
		t := tokens // escapes only when there is a total to point at
		a.TotalTokensUsed = &t
	}
	if math.IsInf(cost, 1) {
		// Each cost is finite (check), but their sum is not: JSON could not encode it.
		return nil, fmt.Errorf("aggregate: the results' cost_dollars add up to more than a float64 holds: %w", troupe.ErrInvalidResult)
	}
	if haveCost {
		c := cost
		a.TotalCostDollars = &c
	}

	var confident int // CombineConfidence over the kept results' confidences, without the slice
	var unconfident []string
	for _, r := range kept {
		a.AgentsExecuted = append(a.AgentsExecuted, r.AgentName)
		switch c := r.Confidence; {
		case c == nil:
			unconfident = append(unconfident, r.AgentName)
		case confident == 0:
			a.OverallConfidence = *c
			confident++
		default:
			a.OverallConfidence = min(a.OverallConfidence, *c)
			confident++
		}
	}
	switch {
	case len(kept) == 0:
		a.Warnings = append(a.Warnings, "no agent completed", "no agent reported confidence")
	case confident == 0:
		a.Warnings = append(a.Warnings, "no agent reported confidence")
	case len(unconfident) > 0:
		a.Warnings = append(a.Warnings, "overall_confidence leaves out "+list(unconfident)+", which reported no confidence")
	}

	var topBuf [16]string
	leaves, tops, bad := collect(kept, topBuf[:0])
	if bad >= 0 {
		return nil, nonFinite(kept[bad])
	}
	for i, r := range results {
		// A superseded result is not walked with the kept ones, but it is still refused.
		if superseded[i] && !jsonvalue.Finite(r.AgentResult) {
			return nil, nonFinite(r)
		}
	}
	conflicts, shared := conflictsIn(kept, leaves)
	a.Resolved, a.ConflictsDetected, err = Resolve(conflicts, s, kept)
	if err != nil {
		return nil, err
	}
	a.ConsistencyScore = 1
	if shared > 0 {
		// Every conflict found is on a distinct shared path.
		a.ConsistencyScore = 1 - float64(len(conflicts))/float64(shared)
	}
	a.Synthesis = synthesis(kept, tops)
	a.KeyInsights = keyInsights(kept)
	return a, nil
}

// check rejects what would make the aggregate break seed 000's bounds; a NaN or an infinity
// in a completed result's agent_result, which would make it fail to encode, collect finds.
func check(r *troupe.Result) error {
	if c := r.Confidence; r.Succeeded() && c != nil && !(*c >= 0 && *c <= 1) {
		return fmt.Errorf("aggregate: %s: confidence %v is outside [0, 1]: %w", r.AgentName, *c, troupe.ErrInvalidResult)
	}
	if c := r.CostDollars; c != nil && !(*c >= 0 && !math.IsInf(*c, 1)) {
		return fmt.Errorf("aggregate: %s: cost_dollars %v is not a finite non-negative number: %w", r.AgentName, *c, troupe.ErrInvalidResult)
	}
	return nil
}

// nonFinite is the error for a completed result holding a NaN or an infinity, which JSON
// cannot encode. collect finds them, in the walk that flattens the results.
func nonFinite(r *troupe.Result) error {
	path, text := jsonvalue.NonFinite(r.AgentResult, "agent_result")
	return fmt.Errorf("aggregate: %s: %s is %s, which JSON cannot encode: %w", r.AgentName, path, text, troupe.ErrInvalidResult)
}

// notCompleted names a result that was not combined, and why: "gap_analyzer: timeout",
// "causal_impact: failed: model unavailable".
func notCompleted(r *troupe.Result) string {
	status := string(r.Status)
	if status == "" {
		status = "no status"
	}
	w := r.AgentName + ": " + status
	if r.Status != troupe.StatusFailed {
		return w // the status says it all; a timeout's error only repeats it
	}
	var msgs []string
	for _, e := range r.Errors {
		if m := strings.TrimSpace(e.Message); m != "" {
			msgs = append(msgs, m)
		} else if e.Code != "" {
			msgs = append(msgs, e.Code)
		}
	}
	if len(msgs) > 0 {
		w += ": " + strings.Join(msgs, "; ")
	}
	return w
}
