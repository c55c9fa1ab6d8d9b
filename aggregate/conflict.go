package aggregate

import (
	"cmp"
	"maps"
	"slices"
	"strings"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/internal/jsonvalue"
)

// flat is one completed result with its agent_result flattened into dotted paths.
type flat struct {
	r *troupe.Result
	// leaves maps each leaf path to its value; interior maps each path of a non-empty nested
	// object to that object, so it can be compared with another result's leaf at that path.
	leaves, interior map[string]any
}

// value returns the result's value at path, as a leaf or as a nested object.
func (f flat) value(path string) (any, bool) {
	if v, ok := f.leaves[path]; ok {
		return v, true
	}
	v, ok := f.interior[path]
	return v, ok
}

func flatten(r *troupe.Result) flat {
	f := flat{r: r, leaves: make(map[string]any, len(r.AgentResult)), interior: map[string]any{}}
	f.walk("", r.AgentResult, 0)
	return f
}

func (f flat) walk(prefix string, m map[string]any, depth int) {
	for _, k := range sortedKeys(m) {
		p := k
		if prefix != "" {
			p = prefix + "." + k
		}
		v := m[k]
		if _, ok := f.value(p); ok {
			// A literal dotted key naming a path already seen: the first in sorted order wins
			// there, but a path below it that only this spelling holds is still the result's,
			// as collect finds it (DetectConflicts may report a conflict there).
			if sub, ok := object(v); ok && depth < jsonvalue.MaxDepth {
				f.walk(p, sub, depth+1)
			}
			continue
		}
		if sub, ok := object(v); ok && depth < jsonvalue.MaxDepth {
			f.interior[p] = sub
			f.walk(p, sub, depth+1)
			continue
		}
		f.leaves[p] = v
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// completed returns the non-nil completed results, in order.
func completed(results []*troupe.Result) []*troupe.Result {
	out := make([]*troupe.Result, 0, len(results))
	for _, r := range results {
		if r.Succeeded() {
			out = append(out, r)
		}
	}
	return out
}

// leaf is one path of one result's agent_result: a leaf value, or a non-empty nested object
// (which only counts when another result has a leaf at the same path).
type leaf struct {
	path   string
	value  any
	rank   uint64 // lengths of the keys that spell path, packed most significant first
	holder int32  // index of the result
	object bool
	top    bool // a key of the agent_result itself, not of an object nested in it
	// inexact: rank does not hold every key's length (a key 8 or more levels deep, or one
	// longer than 255 bytes), so a tie in rank does not say which spelling comes first.
	inexact bool
}

// collect flattens every result into one slice sorted by path and holder, keeping one entry
// per (path, holder). Where a literal dotted key and nested keys spell the same path, the
// spelling whose keys come first in sorted key order wins, as a walk over sorted keys would
// find it; comparing packed key lengths gives that order without sorting any map's keys.
//
// When tops is not nil, collect also appends every result's top-level keys to it, sorted,
// result after result (len(AgentResult) keys each), sparing synthesis a walk of its own.
//
// bad is the index of the first result holding a NaN or an infinity (as jsonvalue.Finite
// finds them), or -1: the walk that flattens a result looks at every value anyway, so
// Combine needs no walk of its own to refuse one.
func collect(rs []*troupe.Result, tops []string) (ls []leaf, _ []string, bad int) {
	n := 0
	for _, r := range rs {
		n += len(r.AgentResult)
	}
	ls = make([]leaf, 0, n)
	bad = -1
	for i, r := range rs {
		from := len(ls)
		nonFinite := false
		ls = walkLeaves(ls, int32(i), "", r.AgentResult, 0, 0, false, &nonFinite)
		if nonFinite && bad < 0 {
			bad = i
		}
		if tops != nil {
			t := len(tops)
			for _, l := range ls[from:] {
				if l.top {
					tops = append(tops, l.path)
				}
			}
			slices.Sort(tops[t:])
		}
	}
	slices.SortFunc(ls, func(a, b leaf) int {
		if c := strings.Compare(a.path, b.path); c != 0 {
			return c
		}
		if a.holder != b.holder {
			return int(a.holder) - int(b.holder)
		}
		return cmp.Compare(a.rank, b.rank)
	})
	out := ls[:0]
	for i, l := range ls {
		if i > 0 && l.path == ls[i-1].path && l.holder == ls[i-1].holder {
			if kept := &out[len(out)-1]; l.inexact || kept.inexact {
				spelledFirst(kept, rs[l.holder].AgentResult)
			}
			continue
		}
		out = append(out, l)
	}
	return out, tops, bad
}

// spelledFirst sets l, one of several spellings of a path in m, to the one a walk over m's
// keys in sorted order finds first: where the packed key lengths cannot tell, the keys are
// compared themselves. Of two keys that both begin a spelling of the path, one is a prefix of
// the other, so sorted order takes the shorter, as rank does.
func spelledFirst(l *leaf, m map[string]any) {
	path := l.path
	for depth := 0; depth <= jsonvalue.MaxDepth; depth++ {
		var next map[string]any
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if k == path {
				if sub, ok := object(m[k]); ok {
					l.value, l.object = sub, true
				} else {
					l.value, l.object = m[k], false
				}
				return
			}
			if sub, ok := object(m[k]); ok && strings.HasPrefix(path, k+".") {
				next, path = sub, path[len(k)+1:]
				break
			}
		}
		if next == nil {
			return
		}
		m = next
	}
}

// object returns v as the JSON object it encodes to, when that has members: v itself for a
// map[string]any; for an object Go code built of another type (a vote tally's map[string]int),
// the map[string]any jsonvalue.AsObject makes of it, so that it is walked as the same object
// decoded from a recorded log is, and compared the same.
func object(v any) (map[string]any, bool) {
	switch x := v.(type) {
	case map[string]any:
		return x, len(x) > 0
	case string, bool, nil, float64, int, int64, []any:
		return nil, false
	}
	m, ok := jsonvalue.AsObject(v)
	return m, ok && len(m) > 0
}

func walkLeaves(ls []leaf, holder int32, prefix string, m map[string]any, depth int, rank uint64, inexact bool, nonFinite *bool) []leaf {
	for k, v := range m {
		p := k
		if prefix != "" {
			p = prefix + "." + k
		}
		r, in := rank, inexact || depth >= 8 || len(k) > 255
		if depth < 8 {
			r |= uint64(min(len(k), 255)) << (56 - 8*depth)
		}
		if sub, ok := object(v); ok && depth < jsonvalue.MaxDepth {
			ls = append(ls, leaf{path: p, holder: holder, value: sub, object: true, top: depth == 0, rank: r, inexact: in})
			ls = walkLeaves(ls, holder, p, sub, depth+1, r, in, nonFinite)
			continue
		}
		switch v.(type) {
		case string, bool, nil, int, int64:
		default:
			// A value in m is at depth+1 as jsonvalue counts, m itself being at depth.
			if !jsonvalue.FiniteAt(v, depth+1) {
				*nonFinite = true
			}
		}
		ls = append(ls, leaf{path: p, holder: holder, value: v, top: depth == 0, rank: r, inexact: in})
	}
	return ls
}

// groups calls f for every path held by two or more results: at least one leaf there, and
// any other holders' leaves or nested objects, in holder order.
func groups(ls []leaf, f func(g []leaf)) {
	for i := 0; i < len(ls); {
		j, leaves := i, 0
		for ; j < len(ls) && ls[j].path == ls[i].path; j++ {
			if !ls[j].object {
				leaves++
			}
		}
		if leaves > 0 && j-i >= 2 {
			f(ls[i:j])
		}
		i = j
	}
}

// conflictsIn returns the conflicts among the shared paths of ls and how many paths are shared.
//
// A path under a conflicting one is part of that conflict, not another: resolving the parent
// chooses one agent's whole value there, children included. So it is neither listed nor
// counted as shared, and a disagreement is counted once.
func conflictsIn(rs []*troupe.Result, ls []leaf) (out []troupe.Conflict, shared int) {
	out = []troupe.Conflict{}
	var conflicted map[string]bool // paths in conflict, once there is one
	groups(ls, func(g []leaf) {
		if conflicted != nil {
			for i, ch := range []byte(g[0].path) {
				if ch == '.' && conflicted[g[0].path[:i]] {
					return
				}
			}
		}
		shared++
		differ := false
		for _, l := range g[1:] {
			if !jsonvalue.Equal(g[0].value, l.value) {
				differ = true
				break
			}
		}
		if !differ {
			return
		}
		c := troupe.Conflict{Field: g[0].path, Values: make([]troupe.ConflictValue, len(g))}
		for j, l := range g {
			r := rs[l.holder]
			c.Values[j] = troupe.ConflictValue{Agent: r.AgentName, Value: l.value, Confidence: copyPtr(r.Confidence)}
		}
		out = append(out, c)
		if conflicted == nil {
			conflicted = make(map[string]bool)
		}
		conflicted[c.Field] = true
	})
	return out, shared
}

func copyPtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// DetectConflicts returns the fields on which completed results disagree: every dotted path
// held by two or more of them whose values are not all JSON-equal (see the package doc), with
// each holder's agent, value and confidence in the order the results were given. Conflicts
// are sorted by path and unresolved; pass them to Resolve. Results that are nil or not
// completed are ignored. The result is never nil.
func DetectConflicts(results []*troupe.Result) []troupe.Conflict {
	rs := completed(results)
	ls, _, _ := collect(rs, nil)
	cs, _ := conflictsIn(rs, ls)
	return cs
}

// ConsistencyScore returns how consistent the completed results are, in [0, 1]:
// 1 − (conflicting paths / paths held by two or more results), and 1.0 when no path is
// shared. A conflict counts only if its field is one of those shared paths, so conflicts
// computed from other results cannot push the score out of range. As in Combine, a path under
// a conflicting one is part of that conflict: it is counted neither as shared nor as
// conflicting, so ConsistencyScore(rs, DetectConflicts(rs)) is Combine's consistency_score
// when no agent completed more than once. (Combine keeps only an agent's last completed
// result; ConsistencyScore and DetectConflicts take every completed result given, so an agent
// that changed its answer between two of them is in conflict with itself.)
func ConsistencyScore(results []*troupe.Result, conflicts []troupe.Conflict) float64 {
	rs := completed(results)
	var paths []string
	ls, _, _ := collect(rs, nil)
	groups(ls, func(g []leaf) { paths = append(paths, g[0].path) })
	return consistency(paths, conflicts)
}

// consistency scores conflicts against the shared paths (sorted, distinct).
func consistency(paths []string, conflicts []troupe.Conflict) float64 {
	if len(paths) == 0 {
		return 1
	}
	var hit []string
	for _, c := range conflicts {
		if _, ok := slices.BinarySearch(paths, c.Field); ok {
			hit = append(hit, c.Field)
		}
	}
	slices.Sort(hit)
	hit = slices.Compact(hit)
	if len(hit) == 0 {
		return 1
	}
	// A path under a conflicting one is part of that conflict, not a path of its own. The
	// shortest conflicting path is under none, so shared is at least 1.
	under := func(p string) bool {
		for i := 0; i < len(p); i++ {
			if p[i] == '.' {
				if _, ok := slices.BinarySearch(hit, p[:i]); ok {
					return true
				}
			}
		}
		return false
	}
	shared, conflicting := 0, 0
	for _, p := range paths {
		if !under(p) {
			shared++
		}
	}
	for _, h := range hit {
		if !under(h) {
			conflicting++
		}
	}
	return 1 - float64(conflicting)/float64(shared)
}
