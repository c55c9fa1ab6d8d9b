package bundle

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/troupehq/troupe/internal/jsonvalue"
)

// ErrTooLarge is returned by Build when even a bundle stripped of everything the caps may drop
// is larger than max_bytes.
var ErrTooLarge = errors.New("bundle: max_bytes is too small for the bundle's skeleton")

// Build assembles the Evidence Bundle of the replicates in, in order, and its JSON encoding.
// meta supplies what the replicates cannot (task, k_max, model, schema version, epsilon, early
// stop); Build sets K, Seeds and Usage from in. The encoding never exceeds opts.Limits.MaxBytes:
// when it would, Build diff-encodes the replicates, then halves distributions, consensus and
// disagreements, then drops replicate data from the last replicate back, counting what it left
// out in Summary.Omitted. Build is pure: the same arguments give the same bytes.
func Build(meta Meta, in []Input, opts Options) (*Bundle, []byte, error) {
	if err := opts.Limits.Validate(); err != nil {
		return nil, nil, err
	}
	lim := opts.Limits.WithDefaults()
	seen := make(map[string]bool, len(in))
	for i := range in {
		switch id := in[i].ID; {
		case id == "":
			return nil, nil, fmt.Errorf("bundle: replicate %d has no id", i)
		case seen[id]:
			return nil, nil, fmt.Errorf("bundle: replicate id %q appears twice", id)
		default:
			seen[id] = true
		}
	}

	in = encodable(in)
	b := &Bundle{Meta: meta, Replicates: make([]Replicate, len(in)), Summary: Summarize(in, opts)}
	b.Meta.K = len(in)
	b.Meta.Seeds = make([]int64, len(in))
	b.Meta.Usage = Usage{PerReplicate: make([]ReplicateUsage, len(in))}
	for i := range in {
		r := &in[i]
		b.Meta.Seeds[i] = r.Seed
		b.Meta.Usage.Tokens += r.Usage.Tokens
		b.Meta.Usage.CostDollars += r.Usage.CostDollars
		b.Meta.Usage.PerReplicate[i] = ReplicateUsage{ID: r.ID, Tokens: r.Usage.Tokens, CostDollars: r.Usage.CostDollars}
		status := r.Status
		if status == "" {
			status = "completed"
		}
		q := Quality{Valid: r.Valid()}
		if len(r.Errors) > 0 {
			// Errors quote the data (a schema's "'x' does not match pattern"): presented too.
			q.Errors = make([]string, len(r.Errors))
			for j, e := range r.Errors {
				q.Errors[j] = opts.presentText(e)
			}
		}
		if !q.Valid && len(q.Errors) == 0 {
			if r.Data != nil {
				q.Errors = []string{"replicate ended " + status}
			} else {
				q.Errors = []string{"replicate produced no data"}
			}
		}
		var data any
		if r.Data != nil {
			data = opts.present(nil, r.Data)
		}
		b.Replicates[i] = Replicate{ID: r.ID, Seed: r.Seed, Status: status, Data: data, Quality: q}
	}

	diffed := false
	if opts.DiffEncode {
		if err := diffEncode(b); err != nil {
			return nil, nil, err
		}
		diffed = true
	}
	out, err := json.Marshal(b)
	if err != nil {
		return nil, nil, fmt.Errorf("bundle: encode: %w", err)
	}
	for len(out) > lim.MaxBytes {
		if !shrink(b, &diffed) {
			return nil, nil, fmt.Errorf("%w: %d bytes without data or statistics, max_bytes %d", ErrTooLarge, len(out), lim.MaxBytes)
		}
		if err := diffEncodeIf(b, diffed); err != nil {
			return nil, nil, err
		}
		if out, err = json.Marshal(b); err != nil {
			return nil, nil, fmt.Errorf("bundle: encode: %w", err)
		}
	}
	return b, out, nil
}

// encodable returns in with every replicate that holds a NaN or an infinity — in its data or its
// usage's cost; JSON has no such number, so no bundle could be encoded with it — made invalid,
// saying where it was: its data keeps each such number as its text, its cost counts as 0. The
// other replicates are as they were; in itself is not modified.
func encodable(in []Input) []Input {
	var out []Input
	for i := range in {
		path, text := jsonvalue.NonFinite(in[i].Data, "data")
		cost := in[i].Usage.CostDollars
		badCost := math.IsNaN(cost) || math.IsInf(cost, 0)
		if text == "" && !badCost {
			continue
		}
		if out == nil {
			out = slices.Clone(in)
		}
		r := &out[i]
		r.Errors = slices.Clip(r.Errors)
		if text != "" {
			r.Data = jsonvalue.Encodable(r.Data)
			r.Errors = append(r.Errors, fmt.Sprintf("%s is %s, which JSON cannot encode (kept as the text %q)", path, text, text))
		}
		if badCost {
			r.Usage.CostDollars = 0
			r.Errors = append(r.Errors, fmt.Sprintf("usage cost_dollars is %v, which JSON cannot encode (counted as 0)", cost))
		}
	}
	if out == nil {
		return in
	}
	return out
}

// shrink drops the next thing the caps allow, lossless first; false when nothing is left.
func shrink(b *Bundle, diffed *bool) bool {
	s := &b.Summary
	om := s.Omitted
	if om == nil {
		om = &Omitted{}
	}
	mark := func() { s.Truncated, s.Omitted = true, om }
	switch {
	case !*diffed:
		*diffed = true
		return true
	case len(s.Distributions) > 0:
		om.Distributions += halve(s.Distributions)
	case len(s.Consensus) > 0:
		om.Consensus += halve(s.Consensus)
	case len(s.Disagreements) > 0:
		keep := len(s.Disagreements) / 2
		om.Disagreements += len(s.Disagreements) - keep
		s.Disagreements = s.Disagreements[:keep]
	default:
		// Data of the last replicate that has some; a base goes only when nothing depends on it.
		for i := len(b.Replicates) - 1; i >= 0; i-- {
			r := &b.Replicates[i]
			if (r.Data == nil && r.Base == "") || (r.Base == "" && isBase(b, r.ID)) {
				continue
			}
			r.Data, r.Base, r.Delta, r.DataOmitted = nil, "", nil, true
			om.ReplicateData++
			mark()
			return true
		}
		for i := len(b.Replicates) - 1; i >= 0; i-- {
			if r := &b.Replicates[i]; r.Data != nil {
				r.Data, r.DataOmitted = nil, true
				om.ReplicateData++
				mark()
				return true
			}
		}
		return false
	}
	mark()
	return true
}

func isBase(b *Bundle, id string) bool {
	for _, r := range b.Replicates {
		if r.Base == id {
			return true
		}
	}
	return false
}

// halve drops the later half of m's keys in sorted order and returns how many it dropped.
func halve[V any](m map[string]V) int {
	keys := slices.Sorted(maps.Keys(m))
	keep := len(keys) / 2
	for _, k := range keys[keep:] {
		delete(m, k)
	}
	return len(keys) - keep
}

func diffEncodeIf(b *Bundle, diffed bool) error {
	if !diffed {
		return nil
	}
	for _, r := range b.Replicates {
		if r.Base != "" {
			return nil // already encoded
		}
	}
	return diffEncode(b)
}

// diffEncode writes each replicate with data as a patch against the first valid replicate with
// data (or the first with data), where the patch is the shorter encoding.
func diffEncode(b *Bundle) error {
	base := -1
	for i, r := range b.Replicates {
		if r.Data != nil && (base < 0 || r.Quality.Valid && !b.Replicates[base].Quality.Valid) {
			base = i
		}
	}
	if base < 0 {
		return nil
	}
	bd := b.Replicates[base].Data
	for i := range b.Replicates {
		r := &b.Replicates[i]
		if i == base || r.Data == nil {
			continue
		}
		ops := Diff(bd, r.Data)
		full, err := json.Marshal(r.Data)
		if err != nil {
			return fmt.Errorf("bundle: encode replicate %s: %w", r.ID, err)
		}
		delta, err := json.Marshal(ops)
		if err != nil {
			return fmt.Errorf("bundle: encode replicate %s: %w", r.ID, err)
		}
		if len(delta)+len(`,"base":""`)+len(b.Replicates[base].ID) < len(full) {
			r.Data, r.Base, r.Delta = nil, b.Replicates[base].ID, ops
		}
	}
	return nil
}
