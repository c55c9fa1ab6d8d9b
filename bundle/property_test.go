package bundle_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/troupehq/troupe/bundle"
	"github.com/troupehq/troupe/redact"
)

// jsonValue generates JSON values as encoding/json decodes them, with a bias to small key and
// value sets so that replicates share fields and sometimes agree.
func jsonValue(depth int) *rapid.Generator[any] {
	return rapid.Custom(func(t *rapid.T) any {
		kinds := 6
		if depth <= 0 {
			kinds = 4
		}
		switch rapid.IntRange(0, kinds-1).Draw(t, "kind") {
		case 0:
			return rapid.SampledFrom([]float64{0, 1, -1, 0.5, 2, 100, -3.25, 1e300, -1e300, 5e-324}).Draw(t, "num")
		case 1:
			return rapid.SampledFrom([]string{"", "a", "b", "go", "no", "a b c", "A B"}).Draw(t, "str")
		case 2:
			return rapid.Bool().Draw(t, "bool")
		case 3:
			return nil
		case 4:
			return rapid.SliceOfN(jsonValue(depth-1), 0, 4).Draw(t, "arr")
		default:
			m := map[string]any{}
			for _, k := range rapid.SliceOfN(rapid.SampledFrom([]string{"a", "b", "c", "x.y", ""}), 0, 4).Draw(t, "keys") {
				m[k] = jsonValue(depth-1).Draw(t, "val")
			}
			return m
		}
	})
}

var propSchema = []string{
	"",
	`{"properties":{"a":{"minimum":-1,"maximum":1,"x-weight":3},"b":{"x-distance":"text"},
	  "c":{"x-distance":"sequence","items":{"x-distance":"categorical"}},"x.y":{"uniqueItems":true,"x-weight":0}}}`,
}

func schemaFor(t *rapid.T) *bundle.Schema {
	s := rapid.SampledFrom(propSchema).Draw(t, "schema")
	if s == "" {
		return nil
	}
	sc, err := bundle.CompileSchema([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func TestDistanceProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		sc := schemaFor(t)
		a := jsonValue(3).Draw(t, "a")
		b := jsonValue(3).Draw(t, "b")
		ab, ba := bundle.Distance(a, b, sc), bundle.Distance(b, a, sc)
		if ab != ba {
			t.Fatalf("not symmetric: d(a,b) = %v, d(b,a) = %v", ab, ba)
		}
		if !(ab >= 0 && ab <= 1) {
			t.Fatalf("d(a,b) = %v outside [0,1]", ab)
		}
		if d := bundle.Distance(a, a, sc); d != 0 {
			t.Fatalf("d(a,a) = %v", d)
		}
		// An identical copy (as it would come back from JSON) is at distance 0 too.
		j, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		var c any
		if err := json.Unmarshal(j, &c); err != nil {
			t.Fatal(err)
		}
		if d := bundle.Distance(a, c, sc); d != 0 {
			t.Fatalf("d(a, copy of a) = %v", d)
		}
	})
}

func replicates(t *rapid.T) []bundle.Input {
	n := rapid.IntRange(0, 6).Draw(t, "k")
	in := make([]bundle.Input, n)
	for i := range in {
		in[i] = bundle.Input{ID: fmt.Sprintf("r%d", i+1), Seed: int64(i)}
		if rapid.IntRange(0, 9).Draw(t, "has data") > 0 {
			m := map[string]any{}
			for _, k := range rapid.SliceOfN(rapid.SampledFrom([]string{"a", "b", "c", "x.y"}), 0, 4).Draw(t, "keys") {
				m[k] = jsonValue(3).Draw(t, "val")
			}
			in[i].Data = m
			if rapid.IntRange(0, 5).Draw(t, "not an object") == 0 {
				in[i].Data = jsonValue(3).Draw(t, "data")
			}
		} else {
			in[i].Status = "failed"
		}
		if rapid.IntRange(0, 4).Draw(t, "invalid") == 0 {
			in[i].Errors = []string{"at /a: invalid"}
		}
	}
	return in
}

func TestSummaryProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		sc := schemaFor(t)
		in := replicates(t)
		s := bundle.Summarize(in, bundle.Options{Schema: sc})
		if !(s.Confidence >= 0 && s.Confidence <= 1) {
			t.Fatalf("confidence %v outside [0,1]", s.Confidence)
		}
		valid := 0
		for i := range in {
			if in[i].Valid() {
				valid++
			}
		}
		if valid < 2 && (s.Confidence != 0 || len(s.Consensus) != 0) {
			t.Fatalf("%d valid replicates: confidence %v, consensus %v", valid, s.Confidence, s.Consensus)
		}
		m := s.PairwiseDistance
		// The summary's matrix (built while walking the fields) is exactly Matrix's and
		// Distance's.
		if want := bundle.Matrix(in, sc); !cmp.Equal(m, want) {
			t.Fatalf("summary matrix %v, Matrix %v", m, want)
		}
		for i := range in {
			for j := range in {
				if i != j && in[i].Data != nil && in[j].Data != nil {
					if d := bundle.Distance(in[i].Data, in[j].Data, sc); math.Round(d*1e6)/1e6 != m[i][j] {
						t.Fatalf("m[%d][%d] = %v, Distance %v", i, j, m[i][j], d)
					}
				}
			}
		}
		for i := range m {
			if m[i][i] != 0 {
				t.Fatalf("m[%d][%d] = %v", i, i, m[i][i])
			}
			for j := range m {
				if m[i][j] != m[j][i] || m[i][j] < 0 || m[i][j] > 1 {
					t.Fatalf("m[%d][%d] = %v, m[%d][%d] = %v", i, j, m[i][j], j, i, m[j][i])
				}
			}
		}
		for _, d := range s.Disagreements {
			if len(d.Values) != len(d.Replicates) || d.Distance <= 0 || d.Distance > 1 {
				t.Fatalf("disagreement %+v", d)
			}
		}
	})
}

func TestTruncationNeverExceedsCaps(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := replicates(t)
		lim := bundle.Limits{
			MaxFields: rapid.IntRange(0, 5).Draw(t, "max_fields"),
			MaxDiffs:  rapid.IntRange(0, 5).Draw(t, "max_diffs"),
			MaxBytes:  rapid.IntRange(0, 4000).Draw(t, "max_bytes"),
		}
		diff := rapid.Bool().Draw(t, "diff")
		b, out, err := bundle.Build(bundle.Meta{Task: "t"}, in, bundle.Options{Limits: lim, DiffEncode: diff})
		if errors.Is(err, bundle.ErrTooLarge) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		lim = lim.WithDefaults()
		s := b.Summary
		if len(out) > lim.MaxBytes || len(s.Consensus) > lim.MaxFields || len(s.Distributions) > lim.MaxFields || len(s.Disagreements) > lim.MaxDiffs {
			t.Fatalf("caps %+v exceeded: %d bytes, %d consensus, %d distributions, %d disagreements",
				lim, len(out), len(s.Consensus), len(s.Distributions), len(s.Disagreements))
		}
		if s.Truncated != (s.Omitted != nil) || (s.Omitted != nil && *s.Omitted == bundle.Omitted{}) {
			t.Fatalf("truncated %v with omitted %+v", s.Truncated, s.Omitted)
		}
		// What the bytes say is what Build returned.
		var back bundle.Bundle
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatal(err)
		}
		for i := range b.Replicates {
			if b.Replicates[i].DataOmitted {
				continue
			}
			got, err := back.Data(i)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := json.Marshal(in[i].Data)
			gotJSON, _ := json.Marshal(got)
			if !cmp.Equal(string(want), string(gotJSON)) {
				t.Fatalf("replicate %d reads back %s, want %s", i, gotJSON, want)
			}
		}
	})
}

func TestDiffRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a := jsonValue(3).Draw(t, "a")
		b := jsonValue(3).Draw(t, "b")
		got, err := bundle.Patch(a, bundle.Diff(a, b))
		if err != nil {
			t.Fatal(err)
		}
		wj, _ := json.Marshal(b)
		gj, _ := json.Marshal(got)
		if string(wj) != string(gj) {
			t.Fatalf("Patch(a, Diff(a, b)) = %s, want %s", gj, wj)
		}
	})
}

// The fuzzer feeds arbitrary JSON arrays; each element is a replicate's data.
func FuzzBundle(f *testing.F) {
	f.Add([]byte(`[{"score":0.6,"verdict":"go"},{"score":0.8,"verdict":"go"},{"score":"x"}]`), 2000)
	f.Add([]byte(`[{"a":{"b":[1,2,{"c":null}]}},{"a":{"b":[1,3]}},{}]`), 300)
	f.Add([]byte(`[[1,2],"x",null,{"":{"":1e308}},{"":{"":-1e308}}]`), 0)
	f.Add([]byte(`[{"a@b.co":{"x":"jane@example.com"}},{"a@b":{"co":["jane@example.com"]}},{"k":"a@b.co"}]`), 0)
	f.Fuzz(func(t *testing.T, data []byte, maxBytes int) {
		var reps []any
		if json.Unmarshal(data, &reps) != nil || len(reps) > 16 {
			return
		}
		in := make([]bundle.Input, len(reps))
		for i, r := range reps {
			in[i] = bundle.Input{ID: fmt.Sprintf("r%d", i+1), Data: r}
			if i%3 == 2 {
				in[i].Errors = []string{"invalid"}
			}
		}
		lim := bundle.Limits{MaxFields: 8, MaxDiffs: 4, MaxBytes: max(0, maxBytes%100000)}
		b, out, err := bundle.Build(bundle.Meta{Task: "fuzz"}, in, bundle.Options{Limits: lim, DiffEncode: maxBytes%2 == 0})
		if errors.Is(err, bundle.ErrTooLarge) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(out) > lim.WithDefaults().MaxBytes || !json.Valid(out) {
			t.Fatalf("%d bytes over %d, or invalid JSON", len(out), lim.WithDefaults().MaxBytes)
		}
		if c := b.Summary.Confidence; !(c >= 0 && c <= 1) {
			t.Fatalf("confidence %v", c)
		}
		if m := bundle.Matrix(in, nil); !cmp.Equal(b.Summary.PairwiseDistance, m) {
			t.Fatalf("summary matrix %v, Matrix %v", b.Summary.PairwiseDistance, m)
		}
		_, again, err := bundle.Build(bundle.Meta{Task: "fuzz"}, in, bundle.Options{Limits: lim, DiffEncode: maxBytes%2 == 0})
		if err != nil || string(again) != string(out) {
			t.Fatalf("not reproducible: %v", err)
		}
		// Redacted, no string anywhere in the bundle — key or value, data or statistics —
		// holds an address.
		_, red, err := bundle.Build(bundle.Meta{Task: "fuzz"}, in, bundle.Options{Limits: lim, DiffEncode: maxBytes%2 == 0, Present: redactor.ValueAt})
		if errors.Is(err, bundle.ErrTooLarge) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		var back any
		if err := json.Unmarshal(red, &back); err != nil {
			t.Fatal(err)
		}
		if s, found := findString(back, email.MatchString); found {
			t.Fatalf("redacted bundle holds %q", s)
		}
	})
}

var (
	redactor = redact.MustNew(redact.Config{})
	email    = regexp.MustCompile(`[A-Za-z0-9._%+\-]+@[A-Za-z0-9.\-]+\.[A-Za-z]{2,}`)
)

// findString returns the first string in v, key or value, for which match is true.
func findString(v any, match func(string) bool) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, match(x)
	case map[string]any:
		for k, e := range x {
			if match(k) {
				return k, true
			}
			if s, ok := findString(e, match); ok {
				return s, true
			}
		}
	case []any:
		for _, e := range x {
			if s, ok := findString(e, match); ok {
				return s, true
			}
		}
	}
	return "", false
}
