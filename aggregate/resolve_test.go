package aggregate_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/aggregate"
)

func TestResolve(t *testing.T) {
	conflict := func(vs ...troupe.ConflictValue) []troupe.Conflict {
		return []troupe.Conflict{{Field: "driver", Values: vs}}
	}
	at := func(agent string, sec int) *troupe.Result {
		return result(agent, map[string]any{"driver": agent}, doneAt(sec))
	}
	tests := []struct {
		name       string
		strategy   aggregate.Strategy
		conflicts  []troupe.Conflict
		results    []*troupe.Result
		wantValue  any
		wantWinner string
		wantReason string
	}{
		// highest_confidence
		{
			name: "highest confidence", strategy: aggregate.HighestConfidence,
			conflicts: conflict(cv("a", "access", 0.6), cv("b", "competitor", 0.9)),
			wantValue: "competitor", wantWinner: "b",
			wantReason: "highest confidence 0.90 (b) vs 0.60 (a)",
		},
		{
			name: "empty strategy is highest confidence", strategy: "",
			conflicts: conflict(cv("a", "access", 0.6), cv("b", "competitor", 0.9)),
			wantValue: "competitor", wantWinner: "b",
			wantReason: "highest confidence 0.90 (b) vs 0.60 (a)",
		},
		{
			name: "highest confidence tie goes to the earliest", strategy: aggregate.HighestConfidence,
			conflicts: conflict(cv("a", "access", 0.8), cv("b", "competitor", 0.8), cv("c", "supply", 0.3)),
			wantValue: "access", wantWinner: "a",
			wantReason: "highest confidence tied at 0.80 between a and b; the earliest result, a, wins",
		},
		{
			name: "missing confidence counts as 0", strategy: aggregate.HighestConfidence,
			conflicts: conflict(cv("a", "access", -1), cv("b", "competitor", 0.1)),
			wantValue: "competitor", wantWinner: "b",
			wantReason: "highest confidence 0.10 (b) vs 0.00 (a); no confidence from a, counted as 0",
		},
		{
			name: "close confidences get more digits", strategy: aggregate.HighestConfidence,
			conflicts: conflict(cv("a", "access", 0.801), cv("b", "competitor", 0.8)),
			wantValue: "access", wantWinner: "a",
			wantReason: "highest confidence 0.801 (a) vs 0.800 (b)",
		},
		// most_recent
		{
			name: "most recent", strategy: aggregate.MostRecent,
			conflicts: conflict(cv("a", "a", 0.9), cv("b", "b", 0.1)),
			results:   []*troupe.Result{at("a", 5), at("b", 7)},
			wantValue: "b", wantWinner: "b",
			wantReason: "most recent: b completed at 2025-03-04T10:00:07Z, 2s after a (2025-03-04T10:00:05Z)",
		},
		{
			name: "most recent tie goes to the later result", strategy: aggregate.MostRecent,
			conflicts: conflict(cv("a", "a", 0.9), cv("b", "b", 0.1), cv("c", "c", 0.1)),
			results:   []*troupe.Result{at("a", 7), at("b", 7), at("c", 3)},
			wantValue: "b", wantWinner: "b",
			wantReason: "most recent: a and b completed at the same time (2025-03-04T10:00:07Z); the later result, b, wins",
		},
		{
			name: "most recent matches an agent's repeated values to its results in order", strategy: aggregate.MostRecent,
			conflicts: aggregate.DetectConflicts([]*troupe.Result{at("critic", 1), result("writer", map[string]any{"driver": "w"}, doneAt(2)),
				result("critic", map[string]any{"other": 1}, doneAt(3)), result("critic", map[string]any{"driver": "late"}, doneAt(9))}),
			results: []*troupe.Result{at("critic", 1), result("writer", map[string]any{"driver": "w"}, doneAt(2)),
				result("critic", map[string]any{"other": 1}, doneAt(3)), result("critic", map[string]any{"driver": "late"}, doneAt(9))},
			wantValue: "late", wantWinner: "critic",
			wantReason: "most recent: critic completed at 2025-03-04T10:00:09Z, 7s after writer (2025-03-04T10:00:02Z)",
		},
		// weighted_vote
		{
			name: "weighted vote", strategy: aggregate.WeightedVote,
			conflicts: conflict(cv("a", "access", 0.7), cv("b", "competitor", 0.7), cv("c", "access", 0.7)),
			wantValue: "access", wantWinner: "a",
			wantReason: "weighted vote 1.40 (a, c) vs 0.70 (b)",
		},
		{
			name: "weighted vote beats a single higher confidence", strategy: aggregate.WeightedVote,
			conflicts: conflict(cv("a", "access", 0.5), cv("b", "competitor", 0.95), cv("c", "access", 0.6)),
			wantValue: "access", wantWinner: "c",
			wantReason: "weighted vote 1.10 (a, c) vs 0.95 (b)",
		},
		{
			name: "weighted vote groups numbers of different types", strategy: aggregate.WeightedVote,
			conflicts: conflict(cv("a", 1, 0.7), cv("b", json.Number("2"), 0.9), cv("c", 1.0, 0.7)),
			wantValue: 1, wantWinner: "a",
			wantReason: "weighted vote 1.40 (a, c) vs 0.90 (b)",
		},
		{
			name: "weighted vote tie goes to the highest single confidence", strategy: aggregate.WeightedVote,
			conflicts: conflict(cv("a", "access", 0.4), cv("b", "access", 0.6), cv("c", "competitor", 1)),
			wantValue: "competitor", wantWinner: "c",
			wantReason: "weighted vote tied: 1.00 (c) vs 1.00 (a, b); the highest single confidence decides: 1.00 (c) vs 0.60 (b)",
		},
		{
			name: "weighted vote ties within rounding", strategy: aggregate.WeightedVote,
			conflicts: conflict(cv("a", "x", 0.1), cv("b", "x", 0.2), cv("c", "y", 0.3)),
			wantValue: "y", wantWinner: "c",
			wantReason: "weighted vote tied: 0.30 (c) vs 0.30 (a, b); the highest single confidence decides: 0.30 (c) vs 0.20 (b)",
		},
		{
			name: "weighted vote full tie goes to the earliest group", strategy: aggregate.WeightedVote,
			conflicts: conflict(cv("a", "access", 0.5), cv("b", "competitor", 0.5)),
			wantValue: "access", wantWinner: "a",
			wantReason: "weighted vote tied: 0.50 (a) vs 0.50 (b), and so is the highest single confidence, 0.50; the earliest group wins",
		},
		{
			name: "weighted vote counts missing confidence as 0.5", strategy: aggregate.WeightedVote,
			conflicts: conflict(cv("a", "access", -1), cv("b", "competitor", 0.4)),
			wantValue: "access", wantWinner: "a",
			wantReason: "weighted vote 0.50 (a) vs 0.40 (b); no confidence from a, counted as 0.5",
		},
		{
			name: "a single value wins", strategy: aggregate.WeightedVote,
			conflicts: conflict(cv("a", "access", 0.2)),
			wantValue: "access", wantWinner: "a",
			wantReason: "only a reported a value",
		},
		{
			name: "equal values are unopposed", strategy: aggregate.WeightedVote,
			conflicts: conflict(cv("a", 1, 0.2), cv("b", 1.0, 0.3)),
			wantValue: 1.0, wantWinner: "b",
			wantReason: "weighted vote 0.50 (a, b), unopposed",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := cloneConflicts(tt.conflicts)
			resolved, got, err := aggregate.Resolve(tt.conflicts, tt.strategy, tt.results)
			if err != nil {
				t.Fatal(err)
			}
			want := cloneConflicts(tt.conflicts)
			want[0].Resolved, want[0].Winner, want[0].Reason = tt.wantValue, tt.wantWinner, tt.wantReason
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("resolved conflicts (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(map[string]any{"driver": tt.wantValue}, resolved); diff != "" {
				t.Errorf("resolved values (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tt.conflicts); diff != "" {
				t.Errorf("Resolve modified its input (-before +after):\n%s", diff)
			}
		})
	}
}

func cloneConflicts(cs []troupe.Conflict) []troupe.Conflict {
	out := make([]troupe.Conflict, len(cs))
	for i, c := range cs {
		c.Values = append([]troupe.ConflictValue(nil), c.Values...)
		out[i] = c
	}
	return out
}

func TestResolveErrors(t *testing.T) {
	tests := []struct {
		name      string
		strategy  aggregate.Strategy
		conflicts []troupe.Conflict
		results   []*troupe.Result
		is        error
	}{
		{name: "unknown strategy", strategy: "loudest", is: aggregate.ErrUnknownStrategy},
		{name: "conflict without values", strategy: aggregate.HighestConfidence, conflicts: []troupe.Conflict{{Field: "x"}}},
		{
			name: "most recent without the agent's result", strategy: aggregate.MostRecent,
			conflicts: []troupe.Conflict{{Field: "x", Values: []troupe.ConflictValue{cv("a", 1, 1), cv("b", 2, 1)}}},
			results:   []*troupe.Result{result("a", map[string]any{"x": 1}), result("b", map[string]any{"x": 2}, status(troupe.StatusFailed))},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := aggregate.Resolve(tt.conflicts, tt.strategy, tt.results)
			if err == nil {
				t.Fatal("Resolve succeeded, want an error")
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %v does not match %v", err, tt.is)
			}
		})
	}
}

func TestStrategyValidate(t *testing.T) {
	for _, s := range []aggregate.Strategy{"", aggregate.HighestConfidence, aggregate.MostRecent, aggregate.WeightedVote} {
		if err := s.Validate(); err != nil {
			t.Errorf("%q.Validate() = %v", s, err)
		}
	}
	if err := aggregate.Strategy("Highest_Confidence").Validate(); !errors.Is(err, aggregate.ErrUnknownStrategy) {
		t.Errorf("Validate of a misspelled strategy = %v, want ErrUnknownStrategy", err)
	}
}

// MostRecent finds an agent's result behind a conflict value wherever DetectConflicts found
// the value: a path that only a literal dotted key spells ("a.b" → "d", beside a nested
// a → b) is held by that result, so its completion time counts.
func TestResolveMostRecentFindsDottedPaths(t *testing.T) {
	x1 := result("x", map[string]any{"a": map[string]any{"b": map[string]any{"c": 1}}, "a.b": map[string]any{"d": 2}}, doneAt(1))
	x2 := result("x", map[string]any{"z": 1}, doneAt(5)) // x again, without the field
	y := result("y", map[string]any{"a.b.d": 3}, doneAt(3))
	results := []*troupe.Result{x1, x2, y}
	cs := aggregate.DetectConflicts(results)
	if len(cs) != 1 || cs[0].Field != "a.b.d" {
		t.Fatalf("DetectConflicts = %+v, want one conflict on a.b.d", cs)
	}
	resolved, out, err := aggregate.Resolve(cs, aggregate.MostRecent, results)
	if err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	// x's value came from x1 (completed at 1s), not x2 (5s), which does not hold the field.
	if out[0].Winner != "y" || resolved["a.b.d"] != 3 {
		t.Errorf("winner %s with %v (%s), want y with 3", out[0].Winner, resolved["a.b.d"], out[0].Reason)
	}
}
