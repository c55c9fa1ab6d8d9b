package aggregate

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/internal/jsonvalue"
)

// Strategy is how Resolve chooses one value among conflicting ones: seed 000's
// resolution_strategy. The zero value "" means HighestConfidence. Like any string it is safe
// for concurrent use.
type Strategy string

// Seed 000's resolution strategies; the package doc gives their rules and tie-breaks.
const (
	// HighestConfidence chooses the value of the most confident agent.
	HighestConfidence Strategy = "highest_confidence"
	// MostRecent chooses the value of the result that completed last.
	MostRecent Strategy = "most_recent"
	// WeightedVote chooses the value with the largest sum of confidences behind it.
	WeightedVote Strategy = "weighted_vote"
)

// ErrUnknownStrategy: a Strategy is none of HighestConfidence, MostRecent, WeightedVote or "".
var ErrUnknownStrategy = errors.New("aggregate: unknown resolution strategy")

// Validate returns nil for a known strategy or "", and an error matching ErrUnknownStrategy
// otherwise.
func (s Strategy) Validate() error {
	_, err := s.normalize()
	return err
}

func (s Strategy) normalize() (Strategy, error) {
	switch s {
	case "":
		return HighestConfidence, nil
	case HighestConfidence, MostRecent, WeightedVote:
		return s, nil
	}
	return "", fmt.Errorf("%w %q (want highest_confidence, most_recent or weighted_vote)", ErrUnknownStrategy, string(s))
}

// tieEpsilon: weights closer than this are a tie, so that 0.1+0.2 and 0.3 do not differ by
// the order in which confidences were summed.
const tieEpsilon = 1e-9

// Resolve chooses a value for each conflict by strategy s and returns field path → chosen
// value, and a copy of conflicts with Resolved, Winner and Reason filled in (the input is not
// modified). results are needed only by MostRecent, for each agent's completion time: the
// k-th value of an agent in a conflict is matched to the k-th of that agent's completed
// results holding the field. An unknown strategy, a conflict without values, or (for
// MostRecent) an agent without a completed result is an error. The map is never nil.
func Resolve(conflicts []troupe.Conflict, s Strategy, results []*troupe.Result) (map[string]any, []troupe.Conflict, error) {
	s, err := s.normalize()
	if err != nil {
		return nil, nil, err
	}
	var times *completionTimes
	if s == MostRecent {
		times = newCompletionTimes(results)
	}
	resolved := make(map[string]any, len(conflicts))
	out := make([]troupe.Conflict, len(conflicts))
	for i, c := range conflicts {
		c.Values = append([]troupe.ConflictValue(nil), c.Values...)
		if len(c.Values) == 0 {
			return nil, nil, fmt.Errorf("aggregate: conflict %q has no values", c.Field)
		}
		var w int
		var reason string
		switch {
		case len(c.Values) == 1:
			w, reason = 0, "only "+c.Values[0].Agent+" reported a value"
		case s == HighestConfidence:
			w, reason = highestConfidence(c.Values)
		case s == MostRecent:
			w, reason, err = mostRecent(c, times)
		default:
			w, reason = weightedVote(c.Values)
		}
		if err != nil {
			return nil, nil, err
		}
		c.Resolved, c.Winner, c.Reason = c.Values[w].Value, c.Values[w].Agent, reason
		resolved[c.Field] = c.Resolved
		out[i] = c
	}
	return resolved, out, nil
}

func confidenceOr(v troupe.ConflictValue, missing float64) float64 {
	if v.Confidence == nil {
		return missing
	}
	return *v.Confidence
}

func highestConfidence(vs []troupe.ConflictValue) (int, string) {
	conf := func(i int) float64 { return confidenceOr(vs[i], 0) }
	w := 0
	for i := range vs {
		if conf(i) > conf(w) {
			w = i
		}
	}
	var tied []string
	r := -1
	for i := range vs {
		switch {
		case i == w:
		case conf(i) == conf(w):
			tied = append(tied, vs[i].Agent)
		case r < 0 || conf(i) > conf(r):
			r = i
		}
	}
	var reason string
	if len(tied) > 0 {
		reason = fmt.Sprintf("highest confidence tied at %s between %s; the earliest result, %s, wins",
			fixed(conf(w)), list(append([]string{vs[w].Agent}, tied...)), vs[w].Agent)
	} else {
		a, b := pair(conf(w), conf(r))
		reason = fmt.Sprintf("highest confidence %s (%s) vs %s (%s)", a, vs[w].Agent, b, vs[r].Agent)
	}
	return w, reason + missingNote(vs, "0")
}

// missingNote names the agents that reported no confidence and what they counted as.
func missingNote(vs []troupe.ConflictValue, countedAs string) string {
	var missing []string
	for _, v := range vs {
		if v.Confidence == nil {
			missing = append(missing, v.Agent)
		}
	}
	if len(missing) == 0 {
		return ""
	}
	return fmt.Sprintf("; no confidence from %s, counted as %s", list(missing), countedAs)
}

// group is the agents whose values are equal, for WeightedVote.
type group struct {
	members []int // indexes into the conflict's values, in order
	weight  float64
	top     float64 // highest single confidence in the group
	best    int     // the member with the highest confidence, earliest on a tie
}

// beats reports whether g wins over h: heavier, then higher single confidence; otherwise the
// earlier group (the caller scans in order) keeps its place.
func (g group) beats(h group) bool {
	if d := g.weight - h.weight; d > tieEpsilon || d < -tieEpsilon {
		return d > 0
	}
	return g.top > h.top+tieEpsilon
}

func weightedVote(vs []troupe.ConflictValue) (int, string) {
	var gs []group
	for i, v := range vs {
		c := confidenceOr(v, 0.5)
		j := 0
		for j < len(gs) && !jsonvalue.Equal(vs[gs[j].members[0]].Value, v.Value) {
			j++
		}
		if j == len(gs) {
			gs = append(gs, group{top: c, best: i})
		}
		g := &gs[j]
		g.members = append(g.members, i)
		g.weight += c
		if c > g.top {
			g.top, g.best = c, i
		}
	}
	w := 0
	for j := range gs {
		if gs[j].beats(gs[w]) {
			w = j
		}
	}
	r := -1
	for j := range gs {
		if j != w && (r < 0 || gs[j].beats(gs[r])) {
			r = j
		}
	}
	agents := func(g group) string {
		names := make([]string, len(g.members))
		for k, m := range g.members {
			names[k] = vs[m].Agent
		}
		return strings.Join(names, ", ")
	}
	win := gs[w]
	var reason string
	switch {
	case r < 0:
		reason = fmt.Sprintf("weighted vote %s (%s), unopposed", fixed(win.weight), agents(win))
	case win.beats(gs[r]) && win.weight-gs[r].weight > tieEpsilon:
		a, b := pair(win.weight, gs[r].weight)
		reason = fmt.Sprintf("weighted vote %s (%s) vs %s (%s)", a, agents(win), b, agents(gs[r]))
	case win.beats(gs[r]):
		run := gs[r]
		a, b := pair(win.top, run.top)
		reason = fmt.Sprintf("weighted vote tied: %s (%s) vs %s (%s); the highest single confidence decides: %s (%s) vs %s (%s)",
			fixed(win.weight), agents(win), fixed(run.weight), agents(run), a, vs[win.best].Agent, b, vs[run.best].Agent)
	default:
		run := gs[r]
		reason = fmt.Sprintf("weighted vote tied: %s (%s) vs %s (%s), and so is the highest single confidence, %s; the earliest group wins",
			fixed(win.weight), agents(win), fixed(run.weight), agents(run), fixed(win.top))
	}
	return win.best, reason + missingNote(vs, "0.5")
}

func mostRecent(c troupe.Conflict, times *completionTimes) (int, string, error) {
	seen := map[string]int{}
	at := make([]time.Time, len(c.Values))
	for i, v := range c.Values {
		t, err := times.lookup(c.Field, v.Agent, seen[v.Agent])
		if err != nil {
			return 0, "", err
		}
		seen[v.Agent]++
		at[i] = t
	}
	w := 0
	for i := range at {
		if !at[i].Before(at[w]) { // later in the given order wins a tie
			w = i
		}
	}
	var tied []string
	r := -1
	for i := range at {
		switch {
		case i == w:
		case at[i].Equal(at[w]):
			tied = append(tied, c.Values[i].Agent)
		case r < 0 || at[i].After(at[r]):
			r = i
		}
	}
	if len(tied) > 0 {
		return w, fmt.Sprintf("most recent: %s completed at the same time (%s); the later result, %s, wins",
			list(append(tied, c.Values[w].Agent)), stamp(at[w]), c.Values[w].Agent), nil
	}
	if at[r].IsZero() {
		return w, fmt.Sprintf("most recent: %s completed at %s; %s has no completion time",
			c.Values[w].Agent, stamp(at[w]), c.Values[r].Agent), nil
	}
	return w, fmt.Sprintf("most recent: %s completed at %s, %s after %s (%s)",
		c.Values[w].Agent, stamp(at[w]), at[w].Sub(at[r]), c.Values[r].Agent, stamp(at[r])), nil
}

// completionTimes finds when the result behind a conflict value completed.
type completionTimes struct {
	byAgent map[string][]*troupe.Result // completed results per agent, in order
	flat    map[*troupe.Result]flat     // flattened on demand, for agents that completed twice
}

func newCompletionTimes(results []*troupe.Result) *completionTimes {
	ct := &completionTimes{byAgent: map[string][]*troupe.Result{}, flat: map[*troupe.Result]flat{}}
	for _, r := range completed(results) {
		ct.byAgent[r.AgentName] = append(ct.byAgent[r.AgentName], r)
	}
	return ct
}

// lookup returns the completion time of agent's k-th completed result holding field.
func (ct *completionTimes) lookup(field, agent string, k int) (time.Time, error) {
	rs := ct.byAgent[agent]
	switch len(rs) {
	case 0:
		return time.Time{}, fmt.Errorf("aggregate: most_recent: conflict %q: no completed result for agent %q", field, agent)
	case 1:
		return rs[0].CompletedAt, nil
	}
	var holding []*troupe.Result
	for _, r := range rs {
		f, ok := ct.flat[r]
		if !ok {
			f = flatten(r)
			ct.flat[r] = f
		}
		if _, ok := f.value(field); ok {
			holding = append(holding, r)
		}
	}
	switch {
	case len(holding) == 0:
		return time.Time{}, fmt.Errorf("aggregate: most_recent: conflict %q: no completed result of agent %q holds the field", field, agent)
	case k >= len(holding):
		k = len(holding) - 1
	}
	return holding[k].CompletedAt, nil
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "an unrecorded time"
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func fixed(x float64) string { return strconv.FormatFloat(x, 'f', 2, 64) }

// pair formats two numbers with two decimals, or with as many more as it takes to tell them
// apart, so a reason never reads "0.80 vs 0.80" for different numbers.
func pair(a, b float64) (string, string) {
	for prec := 2; prec <= 6; prec++ {
		sa, sb := strconv.FormatFloat(a, 'f', prec, 64), strconv.FormatFloat(b, 'f', prec, 64)
		if sa != sb || a == b {
			return sa, sb
		}
	}
	return strconv.FormatFloat(a, 'g', -1, 64), strconv.FormatFloat(b, 'g', -1, 64)
}

// list joins names as "a", "a and b", "a, b and c".
func list(names []string) string {
	var b strings.Builder
	writeList(&b, names)
	return b.String()
}

// writeList writes names as "a", "a and b", "a, b and c".
func writeList(b *strings.Builder, names []string) {
	for i, n := range names {
		switch {
		case i == 0:
		case i == len(names)-1:
			b.WriteString(" and ")
		default:
			b.WriteString(", ")
		}
		b.WriteString(n)
	}
}
