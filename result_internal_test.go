package troupe

import (
	"math"
	"testing"
	"time"
)

// plainlyValid is a second statement of validate's rules, kept for the engine's stack frames;
// the two must never disagree, or a rule added to one would be silently skipped.
func FuzzResultFastPathAgrees(f *testing.F) {
	f.Add("disp_0000000000000001", "s", "q", "a", "completed", true, 0.5, int64(3), int64(1), int64(2), "", int64(0), 0.0)
	f.Add("", "s", "q", "a", "failed", false, 1.5, int64(-1), int64(2), int64(1), "ghost", int64(-4), -1.0)
	f.Add("disp_0000000000000001", "s", "q", "a", "timeout", true, 0.5, int64(3), int64(1), int64(2), "", int64(0), math.NaN())
	f.Add("disp_0000000000000001", "s", "q", "a", "timeout", true, 0.5, int64(3), int64(1), int64(2), "", int64(0), math.Inf(1))
	f.Fuzz(func(t *testing.T, id, session, query, agent, status string, withResult bool, conf float64, ms, start, end int64, next string, tokens int64, cost float64) {
		r := &Result{DispatchID: id, SessionID: session, QueryID: query, AgentName: agent, Status: Status(status),
			Confidence: &conf, ExecutionTimeMS: ms, StartedAt: time.Unix(start, 0), CompletedAt: time.Unix(end, 0),
			TokensUsed: &tokens, CostDollars: &cost}
		if withResult {
			r.AgentResult = map[string]any{"x": 1}
		} else {
			r.Errors = []ErrorInfo{{Code: CodeAgentError, Message: "m"}}
		}
		if next != "" {
			r.NextAgent = &next
		}
		agents := NewRegistry()
		agents.MustAdd("a", AgentFunc(nil))
		fast, full := r.plainlyValid(agents), r.validate(agents) == nil
		if fast != full {
			t.Fatalf("fast path says valid=%v, full validation says %v: %+v", fast, full, r)
		}
	})
}
