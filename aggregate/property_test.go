package aggregate_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/aggregate"
	"github.com/troupehq/troupe/internal/jsonvalue"
)

// randomValue draws a JSON-shaped value from a small set, so agents often agree and often
// disagree, with nested objects, literal dotted keys and numbers of different Go types.
func randomValue(rng *rand.Rand, depth int) any {
	switch rng.IntN(7) {
	case 0:
		return float64(rng.IntN(3))
	case 1:
		return int64(rng.IntN(3))
	case 2:
		return []string{"x", "y"}[rng.IntN(2)]
	case 3:
		return rng.IntN(2) == 0
	case 4:
		return nil
	}
	if depth > 2 {
		return "leaf"
	}
	m := map[string]any{}
	for range rng.IntN(3) {
		m[[]string{"a", "b", "a.b"}[rng.IntN(3)]] = randomValue(rng, depth+1)
	}
	return m
}

// randomResults draws one to five results of distinct agents, most completed, some with a
// confidence, each completing at its own time.
func randomResults(rng *rand.Rand) []*troupe.Result {
	var rs []*troupe.Result
	for i, at := range rng.Perm(1 + rng.IntN(5)) {
		ar := map[string]any{}
		for range 1 + rng.IntN(4) {
			ar[[]string{"a", "b", "c", "a.b"}[rng.IntN(4)]] = randomValue(rng, 0)
		}
		mods := []mod{doneAt(at)}
		if rng.IntN(4) > 0 {
			mods = append(mods, conf(float64(rng.IntN(11))/10))
		}
		if rng.IntN(6) == 0 {
			mods = append(mods, status(troupe.StatusFailed))
		}
		rs = append(rs, result(fmt.Sprint("agent", i), ar, mods...))
	}
	return rs
}

// Seed 000's aggregation rules over random results: overall confidence is the minimum of the
// completed results' confidences, consistency is in [0, 1] and agrees with ConsistencyScore
// over DetectConflicts, and nothing but the execution order depends on the order the results
// come in — which fields conflict, the consistency, the confidence, and each conflict's winner
// unless the strategy's own tie-break (earliest, latest, first group) decides.
func TestCombineProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(0xa66, 0x000))
	strategies := []aggregate.Strategy{aggregate.HighestConfidence, aggregate.MostRecent, aggregate.WeightedVote}
	for n := range 3000 {
		rs := randomResults(rng)
		perm := slices.Clone(rs)
		rng.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
		for _, s := range strategies {
			a, err := aggregate.Combine(rs, aggregate.Options{Strategy: s})
			if err != nil {
				t.Fatalf("%d: Combine: %v", n, err)
			}
			b, err := aggregate.Combine(perm, aggregate.Options{Strategy: s})
			if err != nil {
				t.Fatalf("%d: Combine (shuffled): %v", n, err)
			}
			report := func(format string, args ...any) {
				in, _ := json.Marshal(rs)
				t.Fatalf("%d %s: %s\nresults: %s", n, s, fmt.Sprintf(format, args...), in)
			}

			var confs []float64
			for _, r := range rs {
				if r.Succeeded() && r.Confidence != nil {
					confs = append(confs, *r.Confidence)
				}
			}
			if want := aggregate.CombineConfidence(confs); a.OverallConfidence != want || (len(confs) > 0 && want != slices.Min(confs)) {
				report("overall confidence %v, want the minimum of %v", a.OverallConfidence, confs)
			}
			if !(a.ConsistencyScore >= 0 && a.ConsistencyScore <= 1) {
				report("consistency %v outside [0, 1]", a.ConsistencyScore)
			}
			if got := aggregate.ConsistencyScore(rs, aggregate.DetectConflicts(rs)); got != a.ConsistencyScore {
				report("ConsistencyScore(DetectConflicts) = %v, Combine says %v", got, a.ConsistencyScore)
			}
			if a.OverallConfidence != b.OverallConfidence || a.ConsistencyScore != b.ConsistencyScore {
				report("confidence %v / %v and consistency %v / %v change with the order of the results",
					a.OverallConfidence, b.OverallConfidence, a.ConsistencyScore, b.ConsistencyScore)
			}
			if len(a.ConflictsDetected) != len(b.ConflictsDetected) {
				report("%d conflicts, %d with the results shuffled", len(a.ConflictsDetected), len(b.ConflictsDetected))
			}
			for i, ca := range a.ConflictsDetected {
				cb := b.ConflictsDetected[i]
				if ca.Field != cb.Field {
					report("conflict %d is on %s, on %s with the results shuffled", i, ca.Field, cb.Field)
				}
				if ca.Winner != cb.Winner && !tie(s, ca, rs, ca.Winner, cb.Winner) {
					report("%s: %s wins (%s), %s with the results shuffled (%s)", ca.Field, ca.Winner, ca.Reason, cb.Winner, cb.Reason)
				}
			}
			again, _ := aggregate.Combine(rs, aggregate.Options{Strategy: s})
			if x, y := mustJSON(t, a), mustJSON(t, again); !bytes.Equal(x, y) {
				report("two aggregations differ:\n%s\n%s", x, y)
			}
		}
	}
}

// tie reports whether agents x and y tie under s in conflict c, so that either may win.
func tie(s aggregate.Strategy, c troupe.Conflict, rs []*troupe.Result, x, y string) bool {
	value := func(agent string) troupe.ConflictValue {
		i := slices.IndexFunc(c.Values, func(v troupe.ConflictValue) bool { return v.Agent == agent })
		return c.Values[i]
	}
	confidence := func(v troupe.ConflictValue, missing float64) float64 {
		if v.Confidence == nil {
			return missing
		}
		return *v.Confidence
	}
	switch s {
	case aggregate.HighestConfidence:
		return confidence(value(x), 0) == confidence(value(y), 0)
	case aggregate.MostRecent:
		at := func(agent string) int64 {
			i := slices.IndexFunc(rs, func(r *troupe.Result) bool { return r.AgentName == agent })
			return rs[i].CompletedAt.UnixNano()
		}
		return at(x) == at(y)
	}
	// weighted_vote: the groups of x's and y's values weigh the same and hold the same
	// highest confidence, or x and y are in one group with the same confidence.
	group := func(agent string) (weight, top float64) {
		for _, v := range c.Values {
			if jsonvalue.Equal(v.Value, value(agent).Value) {
				weight += confidence(v, 0.5)
				top = max(top, confidence(v, 0.5))
			}
		}
		return weight, top
	}
	wx, tx := group(x)
	wy, ty := group(y)
	if jsonvalue.Equal(value(x).Value, value(y).Value) {
		return confidence(value(x), 0.5) == confidence(value(y), 0.5)
	}
	return wx-wy < 1e-9 && wy-wx < 1e-9 && tx == ty
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
