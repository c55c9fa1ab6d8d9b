package aggregate

import (
	"slices"

	"github.com/troupehq/troupe"
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
		if _, ok := f.value(p); ok {
			continue // a literal dotted key naming a path already seen: the first in sorted order wins
		}
		v := m[k]
		if sub, ok := v.(map[string]any); ok && len(sub) > 0 && depth < maxDepth {
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

func flattenAll(rs []*troupe.Result) []flat {
	fs := make([]flat, len(rs))
	for i, r := range rs {
		fs[i] = flatten(r)
	}
	return fs
}

// shared is one path held by two or more results.
type shared struct {
	path    string
	holders []int // indexes into the flattened results, in order
}

// sharedPaths returns, sorted by path, every leaf path held by two or more results. A result
// holds a path when it has a leaf there or a nested object that another result has a leaf for.
func sharedPaths(fs []flat) []shared {
	holders := map[string][]int{}
	for i, f := range fs {
		for p := range f.leaves {
			holders[p] = append(holders[p], i)
		}
	}
	var late []string // paths that gained an object holder, whose holders need sorting
	for i, f := range fs {
		for p := range f.interior {
			if hs, ok := holders[p]; ok {
				if len(hs) > 0 && hs[len(hs)-1] > i {
					late = append(late, p)
				}
				holders[p] = append(hs, i)
			}
		}
	}
	for _, p := range late {
		slices.Sort(holders[p])
	}
	var out []shared
	for _, p := range sortedKeys(holders) {
		if hs := holders[p]; len(hs) >= 2 {
			out = append(out, shared{path: p, holders: hs})
		}
	}
	return out
}

func conflictsIn(fs []flat, sh []shared) []troupe.Conflict {
	out := []troupe.Conflict{}
	for _, s := range sh {
		first, _ := fs[s.holders[0]].value(s.path)
		differ := false
		for _, h := range s.holders[1:] {
			if v, _ := fs[h].value(s.path); !equal(first, v) {
				differ = true
				break
			}
		}
		if !differ {
			continue
		}
		c := troupe.Conflict{Field: s.path, Values: make([]troupe.ConflictValue, len(s.holders))}
		for j, h := range s.holders {
			v, _ := fs[h].value(s.path)
			c.Values[j] = troupe.ConflictValue{Agent: fs[h].r.AgentName, Value: v, Confidence: copyPtr(fs[h].r.Confidence)}
		}
		out = append(out, c)
	}
	return out
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
	fs := flattenAll(completed(results))
	return conflictsIn(fs, sharedPaths(fs))
}

// ConsistencyScore returns how consistent the completed results are, in [0, 1]:
// 1 − (conflicting paths / paths held by two or more results), and 1.0 when no path is
// shared. A conflict counts only if its field is one of those shared paths, so conflicts
// computed from other results cannot push the score out of range.
func ConsistencyScore(results []*troupe.Result, conflicts []troupe.Conflict) float64 {
	fs := flattenAll(completed(results))
	return consistency(sharedPaths(fs), conflicts)
}

func consistency(sh []shared, conflicts []troupe.Conflict) float64 {
	if len(sh) == 0 {
		return 1
	}
	paths := make(map[string]bool, len(sh))
	for _, s := range sh {
		paths[s.path] = false
	}
	n := 0
	for _, c := range conflicts {
		if seen, ok := paths[c.Field]; ok && !seen {
			paths[c.Field] = true
			n++
		}
	}
	return 1 - float64(n)/float64(len(sh))
}
