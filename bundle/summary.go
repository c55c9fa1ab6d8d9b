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
	// Present transforms every value before it is written into the bundle (replicate data,
	// consensus and disagreement values, category names) — redaction, typically. Statistics are
	// computed on the values as given. It must be a pure function returning JSON values; nil
	// writes values unchanged.
	Present func(any) any
}

func (o *Options) present(v any) any {
	if o.Present == nil {
		return v
	}
	return o.Present(v)
}

func (o *Options) root() *node {
	if o.Schema == nil {
		return nil
	}
	return o.Schema.root
}

// field is one leaf path and what each replicate holds there.
type field struct {
	path string
	n    *node
	vals []any
	has  []bool
}

// Summarize computes the statistics of a set of replicates, capped by opts.Limits' MaxFields
// and MaxDiffs (MaxBytes applies to a whole bundle: see Build). It is pure and deterministic.
func Summarize(in []Input, opts Options) Summary {
	lim := opts.Limits.WithDefaults()
	root := opts.root()
	kc := keyCache{}
	fields := flatten(in, root, kc)

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

	s := Summary{
		Consensus:     map[string]any{},
		Disagreements: []Disagreement{},
		Distributions: map[string]Distribution{},
	}
	raw := matrix(in, root, kc)
	s.Confidence = round(confidence(raw, valid))
	s.PairwiseDistance = roundMatrix(raw)

	var om Omitted
	for _, f := range fields {
		if v, ok := consensusOf(f, valid); ok {
			if len(s.Consensus) < lim.MaxFields {
				s.Consensus[f.path] = opts.present(v)
			} else {
				om.Consensus++
			}
		}
		if d, ok := distributionOf(f, valid, &opts); ok {
			if len(s.Distributions) < lim.MaxFields {
				s.Distributions[f.path] = d
			} else {
				om.Distributions++
			}
		}
		if d, ok := disagreementOf(f, withData, in, &opts); ok {
			s.Disagreements = append(s.Disagreements, d)
		}
	}
	// Most distant first; ties by field path, so the order is total.
	slices.SortFunc(s.Disagreements, func(a, b Disagreement) int {
		if c := cmp.Compare(b.Distance, a.Distance); c != 0 {
			return c
		}
		return strings.Compare(a.Field, b.Field)
	})
	if len(s.Disagreements) > lim.MaxDiffs {
		om.Disagreements = len(s.Disagreements) - lim.MaxDiffs
		s.Disagreements = s.Disagreements[:lim.MaxDiffs:lim.MaxDiffs]
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
	return roundMatrix(matrix(in, root, keyCache{}))
}

func roundMatrix(m [][]float64) [][]float64 {
	for _, row := range m {
		for j := range row {
			row[j] = round(row[j])
		}
	}
	return m
}

func matrix(in []Input, root *node, kc keyCache) [][]float64 {
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

// flatten lists the leaf paths of every replicate's data, sorted by path.
func flatten(in []Input, root *node, kc keyCache) []*field {
	byPath := map[string]*field{}
	var fields []*field
	for i := range in {
		if in[i].Data == nil {
			continue
		}
		walk(in[i].Data, "", root, 0, kc, func(path string, v any, n *node) {
			f, ok := byPath[path]
			if !ok {
				f = &field{path: path, n: n, vals: make([]any, len(in)), has: make([]bool, len(in))}
				byPath[path] = f
				fields = append(fields, f)
			}
			f.vals[i], f.has[i] = v, true
		})
	}
	slices.SortFunc(fields, func(a, b *field) int { return strings.Compare(a.path, b.path) })
	return fields
}

// walk calls leaf for every leaf of v: scalars, arrays compared as sets, empty containers, and
// whatever lies deeper than maxDepth.
func walk(v any, path string, n *node, depth int, kc keyCache, leaf func(string, any, *node)) {
	if n == nil {
		n = defaultNode
	}
	if depth > maxDepth {
		leaf(path, v, n)
		return
	}
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 0 {
			leaf(path, v, n)
			return
		}
		for _, k := range kc.sorted(x) {
			walk(x[k], childPath(path, k), n.prop(k), depth+1, kc, leaf)
		}
	case []any:
		if len(x) == 0 || isSet(x, x, n) {
			leaf(path, v, n)
			return
		}
		it := n.item()
		for i, e := range x {
			walk(e, path+"["+strconv.Itoa(i)+"]", it, depth+1, kc, leaf)
		}
	default:
		leaf(path, v, n)
	}
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

func consensusOf(f *field, valid []int) (any, bool) {
	if len(valid) < 2 {
		return nil, false
	}
	first := valid[0]
	for _, i := range valid {
		if !f.has[i] || (i != first && dist(f.vals[first], f.vals[i], f.n, 0, nil) != 0) {
			return nil, false
		}
	}
	return f.vals[first], true
}

func disagreementOf(f *field, withData []int, in []Input, opts *Options) (Disagreement, bool) {
	if len(withData) < 2 {
		return Disagreement{}, false
	}
	var sum float64
	pairs := 0
	for a := range withData {
		for b := a + 1; b < len(withData); b++ {
			i, j := withData[a], withData[b]
			pairs++
			switch {
			case f.has[i] && f.has[j]:
				sum += dist(f.vals[i], f.vals[j], f.n, 0, nil)
			case f.has[i] || f.has[j]:
				sum++
			}
		}
	}
	if sum == 0 {
		return Disagreement{}, false
	}
	d := Disagreement{Field: f.path, Distance: round(sum / float64(pairs)),
		Values: make([]any, 0, len(withData)), Replicates: make([]string, 0, len(withData))}
	for _, i := range withData {
		if f.has[i] {
			d.Values = append(d.Values, opts.present(f.vals[i]))
			d.Replicates = append(d.Replicates, in[i].ID)
		} else {
			d.Missing = append(d.Missing, in[i].ID)
		}
	}
	return d, true
}

func distributionOf(f *field, valid []int, opts *Options) (Distribution, bool) {
	var buf [8]float64
	nums := buf[:0]
	var counts map[string]int
	count := func(v any) {
		if counts == nil {
			counts = map[string]int{}
		}
		counts[categoryName(v, opts)]++
	}
	var d Distribution
	var first any
	unanimous := true
	for _, i := range valid {
		if !f.has[i] {
			continue
		}
		v := f.vals[i]
		d.N++
		if d.N == 1 {
			first = v
		} else if unanimous && dist(first, v, f.n, 0, nil) != 0 {
			unanimous = false
		}
		if x, ok := number(v); ok && f.n.mode != "categorical" {
			if !math.IsNaN(x) && !math.IsInf(x, 0) {
				nums = append(nums, x)
			}
			continue
		}
		if arr, ok := v.([]any); ok {
			for j, e := range arr {
				if indexOf(arr[:j], e) < 0 { // each element once per replicate
					count(e)
				}
			}
			continue
		}
		count(v)
	}
	if len(nums) > 0 {
		mean, sd, lo, hi := describe(nums)
		d.Mean, d.Stdev, d.Min, d.Max = &mean, &sd, &lo, &hi
	}
	// Counts of values every valid replicate agrees on say nothing the consensus does not.
	if len(counts) > 0 && !unanimous {
		d.Counts = counts
	}
	return d, d.Mean != nil || d.Counts != nil
}

func categoryName(v any, opts *Options) string {
	v = opts.present(v)
	if s, ok := v.(string); ok {
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
	return round(mean), round(sd), lo, hi
}
