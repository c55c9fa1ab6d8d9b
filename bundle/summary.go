package bundle

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Default caps, used where Limits leaves a cap at zero.
const (
	DefaultMaxFields = 256
	DefaultMaxDiffs  = 20
	DefaultMaxBytes  = 64 << 10
)

// Limits caps a bundle: MaxFields entries each in consensus and distributions, MaxDiffs
// disagreements (the most distant), MaxBytes of encoded JSON for the whole bundle. Zero means
// the default; negative is an error. The zero value is the defaults.
type Limits struct {
	MaxFields int `json:"max_fields,omitempty"`
	MaxDiffs  int `json:"max_diffs,omitempty"`
	MaxBytes  int `json:"max_bytes,omitempty"`
}

// WithDefaults returns l with zero caps replaced by the defaults.
func (l Limits) WithDefaults() Limits {
	if l.MaxFields <= 0 {
		l.MaxFields = DefaultMaxFields
	}
	if l.MaxDiffs <= 0 {
		l.MaxDiffs = DefaultMaxDiffs
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	return l
}

// Validate reports a negative cap.
func (l Limits) Validate() error {
	for _, c := range [...]struct {
		name string
		v    int
	}{{"max_fields", l.MaxFields}, {"max_diffs", l.MaxDiffs}, {"max_bytes", l.MaxBytes}} {
		if c.v < 0 {
			return &LimitError{Field: c.name, Value: c.v}
		}
	}
	return nil
}

// LimitError reports an invalid cap.
type LimitError struct {
	Field string
	Value int
}

func (e *LimitError) Error() string {
	return "bundle: limits: " + e.Field + " is " + strconv.Itoa(e.Value) + ", want ≥ 0 (0 means the default)"
}

// Options are what Summarize and Build need beyond the replicates. The zero value uses no
// schema, the default limits, full encoding and no redaction.
type Options struct {
	// Schema annotates fields for the distances (see Schema); nil uses the defaults.
	Schema *Schema
	// Limits caps the bundle.
	Limits Limits
	// DiffEncode writes every replicate but the first valid one as a JSON Patch against it,
	// when that is shorter.
	DiffEncode bool
	// Present transforms everything taken from the replicates before it is written into the
	// bundle — replicate data, consensus, disagreement and distribution values and category
	// names, field paths, quality errors — redaction, typically (redact.Redactor.ValueAt fits).
	// Statistics are computed on the values as given. path is where v sits in a replicate's
	// data: its member names from the root, array positions left out, so that a redaction by
	// field path applies to a value taken out of its document; it is nil for a replicate's whole
	// data and for text about the data (field paths, errors), which must come back as a string.
	// Present must be a pure function returning JSON values; nil writes values unchanged.
	Present func(path []string, v any) any
}

func (o *Options) present(path []string, v any) any {
	if o.Present == nil {
		return v
	}
	return o.Present(path, v)
}

// presentText passes text about the data (a field path, an error) through Present.
func (o *Options) presentText(s string) string {
	if o.Present == nil {
		return s
	}
	if t, ok := o.Present(nil, s).(string); ok {
		return t
	}
	return s
}

// segments returns the member names of a field path ("a.b[0][\"x.y\"]" → a, b, x.y), array
// positions left out; nil when there is no Present to need them.
func (o *Options) segments(path string) []string {
	if o.Present == nil || path == "" {
		return nil
	}
	var segs []string
	for s := path; s != ""; {
		switch {
		case s[0] == '.':
			s = s[1:]
		case strings.HasPrefix(s, `["`):
			q, err := strconv.QuotedPrefix(s[1:])
			if err != nil { // not a path childPath writes; keep the rest as one name
				return append(segs, s)
			}
			k, _ := strconv.Unquote(q)
			segs = append(segs, k)
			s = strings.TrimPrefix(s[1+len(q):], "]")
		case s[0] == '[': // an array position
			if i := strings.IndexByte(s, ']'); i >= 0 {
				s = s[i+1:]
			} else {
				s = ""
			}
		default:
			i := strings.IndexAny(s, ".[")
			if i < 0 {
				i = len(s)
			}
			segs = append(segs, s[:i])
			s = s[i:]
		}
	}
	return segs
}

func (o *Options) root() *node {
	if o.Schema == nil {
		return nil
	}
	return o.Schema.root
}

// field is one leaf path and what each replicate holds there; pd[i*n+j] is the distance
// between replicates i and j there (1 when one of them lacks the field, 0 when both do).
type field struct {
	path string
	n    *node
	vals []any
	has  []bool
	pd   []float64
	// name and segs are path as presented and its member names, computed once when needed.
	name      string
	segs      []string
	presented bool
}

// present fills in f's name and segs from Options.Present, once.
func (o *Options) presentField(f *field) *field {
	if !f.presented {
		f.name, f.segs, f.presented = o.presentText(f.path), o.segments(f.path), true
	}
	return f
}

// Summarize computes the statistics of a set of replicates, capped by opts.Limits' MaxFields
// and MaxDiffs (MaxBytes applies to a whole bundle: see Build). It is pure and deterministic.
func Summarize(in []Input, opts Options) Summary {
	lim := opts.Limits.WithDefaults()
	root := opts.root()
	fields, raw := flatten(in, root)

	valid := make([]int, 0, len(in))
	withData := make([]int, 0, len(in))
	for i := range in {
		if in[i].Data != nil {
			withData = append(withData, i)
		}
		if in[i].Valid() {
			valid = append(valid, i)
		}
	}

	hint := min(len(fields), lim.MaxFields)
	s := Summary{
		Consensus:     make(map[string]any, hint),
		Distributions: make(map[string]Distribution, hint),
	}
	s.Confidence = round(confidence(raw, valid))
	s.PairwiseDistance = roundMatrix(raw)

	var om Omitted
	disagreements := make([]Disagreement, 0, len(fields))
	var sl slabs
	for _, f := range fields {
		pd := f.pd
		if v, ok := consensusOf(f, valid, pd); ok {
			if len(s.Consensus) < lim.MaxFields {
				pf := opts.presentField(f)
				s.Consensus[pf.name] = opts.present(pf.segs, v)
			} else {
				om.Consensus++
			}
		}
		if d, ok := distributionOf(f, valid, pd, &opts, &sl); ok {
			if len(s.Distributions) < lim.MaxFields {
				s.Distributions[opts.presentField(f).name] = d
			} else {
				om.Distributions++
			}
		}
		if d, ok := disagreementOf(f, withData, in, pd, &opts, &sl); ok {
			disagreements = append(disagreements, d)
		}
	}
	// Most distant first; ties by field path, so the order is total. Sorting indices moves
	// less than sorting the structs.
	order := make([]int, len(disagreements))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		da, db := &disagreements[a], &disagreements[b]
		if c := cmp.Compare(db.Distance, da.Distance); c != 0 {
			return c
		}
		return strings.Compare(da.Field, db.Field)
	})
	if len(order) > lim.MaxDiffs {
		om.Disagreements = len(order) - lim.MaxDiffs
		order = order[:lim.MaxDiffs]
	}
	s.Disagreements = make([]Disagreement, len(order))
	for i, j := range order {
		s.Disagreements[i] = disagreements[j]
	}
	if om != (Omitted{}) {
		s.Truncated = true
		s.Omitted = &om
	}
	return s
}

// Matrix returns the pairwise distances between the replicates' data (see Distance). A
// replicate without data is at distance 1 from every other.
func Matrix(in []Input, s *Schema) [][]float64 {
	var root *node
	if s != nil {
		root = s.root
	}
	return roundMatrix(matrix(in, root))
}

func roundMatrix(m [][]float64) [][]float64 {
	for _, row := range m {
		for j := range row {
			row[j] = round(row[j])
		}
	}
	return m
}

func matrix(in []Input, root *node) [][]float64 {
	kc := keyCache{}
	n := len(in)
	cells := make([]float64, n*n)
	m := make([][]float64, n)
	for i := range m {
		m[i] = cells[i*n : (i+1)*n : (i+1)*n]
	}
	for i := range n {
		for j := i + 1; j < n; j++ {
			d := 1.0
			if in[i].Data != nil && in[j].Data != nil {
				d = dist(in[i].Data, in[j].Data, root, 0, kc)
			}
			m[i][j], m[j][i] = d, d
		}
	}
	return m
}

// Confidence is 1 − the mean of m's distances between the valid replicates, clamped to [0, 1];
// 0 when fewer than two are valid.
func Confidence(m [][]float64, in []Input) float64 {
	var valid []int
	for i := range in {
		if in[i].Valid() {
			valid = append(valid, i)
		}
	}
	return round(confidence(m, valid))
}

func confidence(m [][]float64, valid []int) float64 {
	if len(valid) < 2 {
		return 0
	}
	var sum float64
	pairs := 0
	for a := range valid {
		for b := a + 1; b < len(valid); b++ {
			sum += m[valid[a]][valid[b]]
			pairs++
		}
	}
	return clamp01(1 - sum/float64(pairs))
}

// round keeps six decimals: enough for statistics, and shorter JSON.
func round(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) || math.Abs(x) > 1e12 {
		return x
	}
	return math.Round(x*1e6) / 1e6
}

// flatten lists the leaf paths of every replicate's data, sorted by path, and returns the
// pairwise distance matrix of the replicates' data. It walks all the replicates together, so
// each path is built once, each field's values are gathered on the way, and each leaf distance
// is computed once and serves both the field's statistics and the whole documents' distances
// (which come out the same, bit for bit, as Distance's: the same sums in the same order).
//
// A leaf is a scalar, an array compared as a set, an empty container, or whatever lies deeper
// than maxDepth. Where replicates differ in kind at a path, each is walked by its own kind (an
// object's members below the path, a scalar at it).
func flatten(in []Input, root *node) ([]*field, [][]float64) {
	n := len(in)
	fl := &flattener{n: n, kc: keyCache{}, withData: make([]bool, n)}
	vals := make([]any, n)
	has := make([]bool, n)
	some := false
	for i := range in {
		if in[i].Data != nil {
			vals[i], has[i], fl.withData[i], some = in[i].Data, true, true, true
		}
	}
	cells := make([]float64, n*n)
	m := make([][]float64, n)
	for i := range m {
		m[i] = cells[i*n : (i+1)*n : (i+1)*n]
		for j := range m[i] {
			if i != j {
				m[i][j] = 1 // a replicate without data is at distance 1 from every other
			}
		}
	}
	if some {
		top := fl.walk(vals, has, "", root, 0)
		for i := range n {
			for j := range n {
				if i != j && has[i] && has[j] {
					m[i][j] = top[i*n+j]
				}
			}
		}
	}
	slices.SortFunc(fl.fields, func(a, b *field) int { return strings.Compare(a.path, b.path) })
	return fl.fields, m
}

type flattener struct {
	n        int
	kc       keyCache
	withData []bool
	fields   []*field
	// Slabs: fields and their vectors are carved out of chunks, not allocated one by one.
	fslab []field
	vslab []any
	hslab []bool
	dslab []float64
}

const (
	kindLeaf = iota
	kindObject
	kindArray
)

func (fl *flattener) kind(v any, n *node, depth int) int {
	if depth > maxDepth {
		return kindLeaf
	}
	switch x := v.(type) {
	case map[string]any:
		if len(x) > 0 {
			return kindObject
		}
	case []any:
		if len(x) > 0 && !isSet(x, x, n) {
			return kindArray
		}
	}
	return kindLeaf
}

// emit records a leaf field and its pairwise distances.
func (fl *flattener) emit(path string, nd *node, vals []any, has []bool, depth int) *field {
	n := fl.n
	if len(fl.fslab) == 0 {
		fl.fslab = make([]field, 64)
		fl.vslab = make([]any, 64*n)
		fl.hslab = make([]bool, 64*n)
	}
	f := &fl.fslab[0]
	fl.fslab = fl.fslab[1:]
	f.path, f.n = path, nd
	f.vals, fl.vslab = fl.vslab[:n:n], fl.vslab[n:]
	f.has, fl.hslab = fl.hslab[:n:n], fl.hslab[n:]
	f.pd = fl.floats()
	copy(f.vals, vals)
	copy(f.has, has)
	for i := range n {
		for j := i + 1; j < n; j++ {
			if !fl.withData[i] || !fl.withData[j] {
				continue
			}
			var d float64
			switch {
			case has[i] && has[j]:
				d = dist(vals[i], vals[j], nd, depth, nil)
			case has[i] || has[j]:
				d = 1
			}
			f.pd[i*n+j], f.pd[j*n+i] = d, d
		}
	}
	fl.fields = append(fl.fields, f)
	return f
}

// floats returns a zeroed n×n matrix from the slab.
func (fl *flattener) floats() []float64 {
	nn := fl.n * fl.n
	if len(fl.dslab) < nn {
		fl.dslab = make([]float64, max(nn, 64*nn))
	}
	m := fl.dslab[:nn:nn]
	fl.dslab = fl.dslab[nn:]
	return m
}

// walk gathers the fields at and below path and returns the distances between the replicates'
// values at path, m[i*n+j], for the pairs that both have a value there.
func (fl *flattener) walk(vals []any, has []bool, path string, nd *node, depth int) []float64 {
	if nd == nil {
		nd = defaultNode
	}
	n := fl.n
	var kinds [3]int
	var buf [8]int
	kind := buf[:0]
	if n > len(buf) {
		kind = make([]int, 0, n)
	}
	for i := range vals {
		k := kindLeaf
		if has[i] {
			k = fl.kind(vals[i], nd, depth)
			kinds[k]++
		}
		kind = append(kind, k)
	}
	var leaf *field
	if kinds[kindLeaf] > 0 {
		lv, lh := fl.scratch()
		for i := range vals {
			if has[i] && kind[i] == kindLeaf {
				lv[i], lh[i] = vals[i], true
			}
		}
		leaf = fl.emit(path, nd, lv, lh, depth)
		if kinds[kindObject] == 0 && kinds[kindArray] == 0 {
			return leaf.pd // every pair here is a pair of leaves
		}
	}
	// Per pair of objects (or arrays): the weighted sum and total of their members' distances.
	var sum, total []float64
	if kinds[kindObject] > 1 || kinds[kindArray] > 1 {
		sum, total = fl.floats(), fl.floats()
	}
	if kinds[kindObject] > 0 {
		cv, ch := fl.scratch()
		for _, k := range fl.unionKeys(vals, kind) {
			for i := range vals {
				cv[i], ch[i] = nil, false
				if kind[i] == kindObject && has[i] {
					cv[i], ch[i] = vals[i].(map[string]any)[k]
				}
			}
			c := nd.prop(k)
			cm := fl.walk(cv, ch, childPath(path, k), c, depth+1)
			if kinds[kindObject] < 2 || c.weight == 0 {
				continue
			}
			for i := range n {
				for j := i + 1; j < n; j++ {
					if kind[i] != kindObject || kind[j] != kindObject || !has[i] || !has[j] || (!ch[i] && !ch[j]) {
						continue
					}
					d := 1.0
					if ch[i] && ch[j] {
						d = cm[i*n+j]
					}
					sum[i*n+j] += c.weight * d
					total[i*n+j] += c.weight
				}
			}
		}
	}
	longest := 0
	if kinds[kindArray] > 0 {
		cv, ch := fl.scratch()
		for i := range vals {
			if has[i] && kind[i] == kindArray {
				longest = max(longest, len(vals[i].([]any)))
			}
		}
		it := nd.item()
		for p := range longest {
			for i := range vals {
				cv[i], ch[i] = nil, false
				if has[i] && kind[i] == kindArray {
					if a := vals[i].([]any); p < len(a) {
						cv[i], ch[i] = a[p], true
					}
				}
			}
			cm := fl.walk(cv, ch, path+"["+strconv.Itoa(p)+"]", it, depth+1)
			if kinds[kindArray] < 2 {
				continue
			}
			for i := range n {
				for j := i + 1; j < n; j++ {
					if kind[i] != kindArray || kind[j] != kindArray || !has[i] || !has[j] || (!ch[i] && !ch[j]) {
						continue
					}
					if ch[i] && ch[j] {
						sum[i*n+j] += cm[i*n+j]
					} else {
						sum[i*n+j]++
					}
				}
			}
		}
	}
	m := fl.floats()
	for i := range n {
		for j := i + 1; j < n; j++ {
			if !has[i] || !has[j] {
				continue
			}
			var d float64
			switch ki, kj := kind[i], kind[j]; {
			case ki == kindLeaf && kj == kindLeaf:
				d = leaf.pd[i*n+j]
			case ki == kindObject && kj == kindObject:
				if t := total[i*n+j]; t != 0 {
					d = clamp01(sum[i*n+j] / t)
				}
			case ki == kindArray && kj == kindArray:
				l := max(len(vals[i].([]any)), len(vals[j].([]any)))
				d = clamp01(sum[i*n+j] / float64(l))
			default: // different kinds of value: compare them directly
				d = dist(vals[i], vals[j], nd, depth, fl.kc)
			}
			m[i*n+j], m[j*n+i] = d, d
		}
	}
	return m
}

func (fl *flattener) scratch() ([]any, []bool) {
	return make([]any, fl.n), make([]bool, fl.n)
}

// unionKeys returns the sorted union of the keys of the object replicates; when they all have
// the same keys (the usual case) that is one of their cached key lists.
func (fl *flattener) unionKeys(vals []any, kind []int) []string {
	var first []string
	same := true
	var all []string
	for i, v := range vals {
		if kind[i] != kindObject || v == nil {
			continue
		}
		ks := fl.kc.sorted(v.(map[string]any))
		switch {
		case first == nil:
			first = ks
		case same && !slices.Equal(first, ks):
			same = false
			all = append(all, first...)
			fallthrough
		case !same:
			all = append(all, ks...)
		}
	}
	if same {
		return first
	}
	slices.Sort(all)
	return slices.Compact(all)
}

func childPath(path, k string) string {
	if k == "" || strings.ContainsAny(k, ".[]\"") {
		return path + "[" + strconv.Quote(k) + "]"
	}
	if path == "" {
		return k
	}
	return path + "." + k
}

func consensusOf(f *field, valid []int, pd []float64) (any, bool) {
	if len(valid) < 2 {
		return nil, false
	}
	first := valid[0]
	for _, i := range valid {
		if !f.has[i] || (i != first && f.differ(first, i, pd)) {
			return nil, false
		}
	}
	return f.vals[first], true
}

// differ says whether replicates i and j hold different values at f: a distance above 0, or, in
// a "text" field, whose distance compares words without case or order, other text. Elsewhere a
// distance of 0 is the same value (a set's elements in another order are the same set).
func (f *field) differ(i, j int, pd []float64) bool {
	if pd[i*len(f.vals)+j] != 0 {
		return true
	}
	if f.n != nil && f.n.mode == "text" {
		a, aok := f.vals[i].(string)
		b, bok := f.vals[j].(string)
		return aok && bok && a != b
	}
	return false
}

// slabs hands out the small slices of a summary from shared chunks, to allocate less.
type slabs struct {
	vals  []any
	ids   []string
	stats []float64
}

func (s *slabs) values(n int) []any   { return carve(&s.vals, n) }
func (s *slabs) names(n int) []string { return carve(&s.ids, n) }
func (s *slabs) four() []float64      { return carve(&s.stats, 4)[:4] }

// carve returns an empty slice of capacity n cut from the front of *slab, refilled in chunks.
func carve[T any](slab *[]T, n int) []T {
	if len(*slab) < n {
		*slab = make([]T, max(n, 256))
	}
	v := (*slab)[:0:n]
	*slab = (*slab)[n:]
	return v
}

func disagreementOf(f *field, withData []int, in []Input, pd []float64, opts *Options, sl *slabs) (Disagreement, bool) {
	if len(withData) < 2 {
		return Disagreement{}, false
	}
	n := len(f.vals)
	var sum float64
	pairs, differ := 0, false
	for a := range withData {
		for b := a + 1; b < len(withData); b++ {
			sum += pd[withData[a]*n+withData[b]]
			pairs++
			differ = differ || f.differ(withData[a], withData[b], pd)
		}
	}
	if !differ {
		return Disagreement{}, false
	}
	pf := opts.presentField(f)
	d := Disagreement{Field: pf.name, Distance: round(sum / float64(pairs)),
		Values: sl.values(len(withData)), Replicates: sl.names(len(withData))}
	for _, i := range withData {
		if f.has[i] {
			d.Values = append(d.Values, opts.present(pf.segs, f.vals[i]))
			d.Replicates = append(d.Replicates, in[i].ID)
		} else {
			d.Missing = append(d.Missing, in[i].ID)
		}
	}
	return d, true
}

func distributionOf(f *field, valid []int, pd []float64, opts *Options, sl *slabs) (Distribution, bool) {
	var buf [8]float64
	nums := buf[:0]
	var d Distribution
	first, unanimous := -1, true
	categorical := false
	for _, i := range valid {
		if !f.has[i] {
			continue
		}
		d.N++
		if first < 0 {
			first = i
		} else if f.differ(first, i, pd) {
			unanimous = false
		}
		if x, ok := number(f.vals[i]); ok && f.n.mode != "categorical" {
			if !math.IsNaN(x) && !math.IsInf(x, 0) {
				nums = append(nums, x)
			}
			continue
		}
		categorical = true
	}
	if len(nums) > 0 {
		st := sl.four()
		st[0], st[1], st[2], st[3] = describe(nums)
		d.Mean, d.Stdev, d.Min, d.Max = &st[0], &st[1], &st[2], &st[3]
	}
	// Counts of values every valid replicate agrees on say nothing the consensus does not.
	if categorical && !unanimous {
		segs := opts.presentField(f).segs
		var cats []any // the values counted, as presented
		quote := false // a value of another kind than string shares the field, counted or not
		for _, i := range valid {
			if !f.has[i] {
				continue
			}
			v := f.vals[i]
			if arr, ok := v.([]any); ok {
				quote = quote || slices.ContainsFunc(arr, func(e any) bool { _, ok := e.(string); return !ok })
			} else if _, ok := v.(string); !ok {
				quote = true
			}
			if _, ok := number(v); ok && f.n.mode != "categorical" {
				continue
			}
			if arr, ok := v.([]any); ok {
				for j, e := range arr {
					if indexOf(arr[:j], e) < 0 { // each element once per replicate
						cats = append(cats, opts.present(segs, e))
					}
				}
				continue
			}
			cats = append(cats, opts.present(segs, v))
		}
		// Strings are named as they are, unless other kinds of values share the field: then by
		// their JSON text, so that "true" and true are two categories, not one, and the string
		// "3" beside the numbers 3 (averaged, not counted) is not read as one of them.
		d.Counts = make(map[string]int, len(cats))
		for _, v := range cats {
			d.Counts[categoryName(v, quote)]++
		}
	}
	return d, d.Mean != nil || d.Counts != nil
}

func categoryName(v any, quote bool) string {
	if s, ok := v.(string); ok && !quote {
		return s
	}
	return canonical(v, 0)
}

// describe returns the mean, population standard deviation, minimum and maximum, in two
// passes in slice order, so the figures are the same bits every time.
func describe(x []float64) (mean, sd, lo, hi float64) {
	lo, hi = x[0], x[0]
	n := float64(len(x))
	for _, v := range x {
		mean += v / n // divided first: a sum of large values would overflow
		lo, hi = min(lo, v), max(hi, v)
	}
	mean = min(max(mean, lo), hi)
	var scale float64 // deviations are scaled by the largest, so their squares cannot overflow
	for _, v := range x {
		scale = max(scale, math.Abs(v-mean))
	}
	if scale > 0 && !math.IsInf(scale, 0) {
		var ss float64
		for _, v := range x {
			r := (v - mean) / scale
			ss += r * r
		}
		sd = scale * math.Sqrt(ss/n)
	} else if math.IsInf(scale, 0) {
		sd = math.MaxFloat64
	}
	return roundStat(mean), roundStat(sd), lo, hi
}

// roundStat rounds a mean or deviation, which are in the data's units: six decimals as round
// does, but six significant digits below 0.001, where six decimals would keep three digits or
// fewer — and round a field of small quantities (probabilities, rates) to a mean of 0.
func roundStat(x float64) float64 {
	if a := math.Abs(x); a == 0 || !(a < 1e-3) {
		return round(x)
	}
	r, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 6, 64), 64)
	return r
}
