package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/engine"
	"github.com/troupehq/troupe/troupetest"
)

// partialOutput is the output schema of the agent that reports partial results below.
var partialOutput = json.RawMessage(`{
	"type": "object",
	"required": ["rows_scanned"],
	"properties": {"rows_scanned": {"type": "integer"}, "score": {"type": "number"}}
}`)

// A partial result is agent output like any other: under on_timeout use_partial it becomes the
// agent's contribution, so it is checked as a completed result is, against the agent's output
// schema and for numbers JSON cannot encode. One that fails is recorded as invalid, never
// silently accepted: the dispatch stays a timeout, its result says why the partial was
// refused, and aggregation does not combine it. Both ways a dispatch times out are covered:
// the agent saying so, and the engine's deadline.
func TestInvalidPartialNotUsed(t *testing.T) {
	cases := []struct {
		name    string
		partial map[string]any
		used    bool
		why     []string // what the refusal must say
	}{
		{"valid", map[string]any{"rows_scanned": 40, "score": 0.5}, true, nil},
		{"fails its schema", map[string]any{"rows_scanned": "forty"}, false, []string{"schema", "/rows_scanned"}},
		{"non-finite", map[string]any{"rows_scanned": 40, "score": math.NaN()}, false, []string{"agent_result.score", "NaN"}},
	}
	for _, way := range []string{"agent-reported", "deadline"} {
		for _, tc := range cases {
			t.Run(way+"/"+tc.name, func(t *testing.T) {
				release := make(chan struct{})
				defer close(release)
				slow := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
					d.Partial(tc.partial)
					if way == "agent-reported" {
						return nil, fmt.Errorf("scan: %w", troupe.ErrTimeout)
					}
					<-release // ignores ctx: the deadline records the timeout
					return &troupe.Result{AgentResult: map[string]any{"rows_scanned": 100}}, nil
				})
				after := troupetest.NewScript()
				eng := newEngine(t, engine.Config{
					Registry: agents(t, "slow", opt(slow, troupe.WithTimeout(50*time.Millisecond), troupe.OutputSchema(partialOutput)), "after", after),
					Planner:  chain("slow", "after"), Policy: troupe.ErrorPolicy{OnTimeout: troupe.TimeoutUsePartial}})
				evs := run(t, eng, troupe.Request{Query: "q"})
				if out := outcome(t, evs); out.Status != troupe.RunCompleted {
					t.Fatalf("run %s (%+v), want completed", out.Status, out.Error)
				}
				r := results(evs)["slow"][0]
				if r.Status != troupe.StatusTimeout || r.Errors[0].Code != troupe.CodeTimeout {
					t.Errorf("slow's result %s %+v, want a timeout", r.Status, r.Errors)
				}
				if _, err := json.Marshal(r); err != nil {
					t.Errorf("slow's result cannot be logged: %v", err)
				}
				var refusal *troupe.ErrorInfo
				for i := range r.Errors {
					if r.Errors[i].Code == troupe.CodeInvalidOutput {
						refusal = &r.Errors[i]
					}
				}
				switch {
				case tc.used && refusal != nil:
					t.Errorf("a valid partial result is refused: %+v", *refusal)
				case !tc.used && refusal == nil:
					t.Errorf("an invalid partial result is not recorded as invalid: errors %+v", r.Errors)
				case refusal != nil:
					text := refusal.Message + fmt.Sprint(refusal.Details)
					for _, w := range tc.why {
						if !strings.Contains(text, w) {
							t.Errorf("the refusal %q (details %v) does not say %q", refusal.Message, refusal.Details, w)
						}
					}
				}
				aggs := troupetest.Find(evs, troupe.KindRunAggregated, "")
				if len(aggs) != 1 {
					t.Fatalf("%d run_aggregated events, want 1", len(aggs))
				}
				if _, used := aggs[0].Data.(*troupe.Aggregation).CombinedResults["slow"]; used != tc.used {
					t.Errorf("partial result combined: %v, want %v", used, tc.used)
				}
				if after.Calls() != 1 {
					t.Errorf("next agent ran %d times, want 1", after.Calls())
				}
			})
		}
	}
}

// A partial result the policy used counts as the agent's success everywhere: in the run's
// tally and outcome, and in its state, which lists the agent as completed, not failed.
func TestUsedPartialStateCompleted(t *testing.T) {
	slow := troupe.AgentFunc(func(_ context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		d.Partial(map[string]any{"rows_scanned": 40})
		return nil, troupe.ErrTimeout
	})
	eng := newEngine(t, engine.Config{Registry: agents(t, "slow", slow, "after", troupetest.NewScript()), Planner: chain("slow", "after"),
		Policy: troupe.ErrorPolicy{OnTimeout: troupe.TimeoutUsePartial, AllowPartialResults: troupe.Ptr(false)}})
	r, err := eng.Start(t.Context(), troupe.Request{Query: "q"})
	if err != nil {
		t.Fatal(err)
	}
	st, err := r.Wait(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	// allow_partial_results false: the run completes only if the partial counts as a success.
	if st.Status != troupe.RunCompleted {
		t.Fatalf("run %s, want completed", st.Status)
	}
	if res, ok := st.FailedAgents["slow"]; ok {
		t.Errorf("slow, whose partial result was used, is listed as failed: %s %+v", res.Status, res.Errors)
	}
	if res := st.CompletedAgents["slow"]; res == nil || res.AgentResult["rows_scanned"] != 40 {
		t.Errorf("slow is not listed as completed with its partial result: %+v", res)
	}
}
