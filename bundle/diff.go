package bundle

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/troupehq/troupe/internal/jsonvalue"
)

// Diff returns the JSON Patch (RFC 6902) that turns base into v: members removed, added or
// replaced, descending into objects present on both sides; arrays and scalars that differ are
// replaced whole. Equal values give no operations. Patch(base, Diff(base, v)) equals v.
func Diff(base, v any) []Op {
	var ops []Op
	diffAt(base, v, "", 0, &ops)
	return ops
}

func diffAt(a, b any, ptr string, depth int, ops *[]Op) {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if !aok || !bok || depth > maxDepth {
		if !equalJSON(a, b) {
			*ops = append(*ops, Op{Op: "replace", Path: ptr, Value: b})
		}
		return
	}
	for _, k := range unionKeys(am, bm) {
		av, inA := am[k]
		bv, inB := bm[k]
		p := ptr + "/" + escapePointer(k)
		switch {
		case !inB:
			*ops = append(*ops, Op{Op: "remove", Path: p})
		case !inA:
			*ops = append(*ops, Op{Op: "add", Path: p, Value: bv})
		default:
			diffAt(av, bv, p, depth+1, ops)
		}
	}
}

// Patch applies a JSON Patch of add, remove and replace operations to a copy of base and
// returns the result; base is not modified. An error names the operation that failed and why.
func Patch(base any, ops []Op) (any, error) {
	doc := jsonvalue.Clone(base)
	for i, op := range ops {
		var err error
		doc, err = apply(doc, op)
		if err != nil {
			return nil, fmt.Errorf("bundle: patch: operation %d (%s %q): %w", i, op.Op, op.Path, err)
		}
	}
	return doc, nil
}

func apply(doc any, op Op) (any, error) {
	switch op.Op {
	case "add", "remove", "replace":
	default:
		return nil, fmt.Errorf("unsupported op %q (want add, remove or replace)", op.Op)
	}
	if op.Path == "" {
		if op.Op == "remove" {
			return nil, nil
		}
		return jsonvalue.Clone(op.Value), nil
	}
	if !strings.HasPrefix(op.Path, "/") {
		return nil, fmt.Errorf("path does not start with /")
	}
	tokens := strings.Split(op.Path[1:], "/")
	for i, t := range tokens {
		tokens[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	parent := doc
	for i, t := range tokens[:len(tokens)-1] {
		switch x := parent.(type) {
		case map[string]any:
			c, ok := x[t]
			if !ok {
				return nil, fmt.Errorf("no member %q at /%s", t, strings.Join(tokens[:i], "/"))
			}
			parent = c
		case []any:
			n, err := strconv.Atoi(t)
			if err != nil || n < 0 || n >= len(x) {
				return nil, fmt.Errorf("no element %q at /%s", t, strings.Join(tokens[:i], "/"))
			}
			parent = x[n]
		default:
			return nil, fmt.Errorf("/%s is not a container", strings.Join(tokens[:i+1], "/"))
		}
	}
	last := tokens[len(tokens)-1]
	switch x := parent.(type) {
	case map[string]any:
		_, exists := x[last]
		if op.Op != "add" && !exists {
			return nil, fmt.Errorf("no member %q to %s", last, op.Op)
		}
		if op.Op == "remove" {
			delete(x, last)
		} else {
			x[last] = jsonvalue.Clone(op.Value)
		}
	case []any:
		n, err := strconv.Atoi(last)
		if err != nil || n < 0 || n >= len(x) || op.Op != "replace" {
			return nil, fmt.Errorf("only replace of an existing array element is supported")
		}
		x[n] = jsonvalue.Clone(op.Value)
	default:
		return nil, fmt.Errorf("parent of %q is not a container", last)
	}
	return doc, nil
}

// Data returns replicate i's data, reconstructing a diff-encoded replicate from its base. It
// returns nil for a replicate without data.
func (b *Bundle) Data(i int) (any, error) {
	if i < 0 || i >= len(b.Replicates) {
		return nil, fmt.Errorf("bundle: no replicate %d of %d", i, len(b.Replicates))
	}
	r := &b.Replicates[i]
	if r.Base == "" {
		return r.Data, nil
	}
	for j := range b.Replicates {
		if base := &b.Replicates[j]; base.ID == r.Base && base.Base == "" && base.Data != nil {
			return Patch(base.Data, r.Delta)
		}
	}
	return nil, fmt.Errorf("bundle: replicate %s: base %s has no data", r.ID, r.Base)
}
