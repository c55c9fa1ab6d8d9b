package bundle_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/troupehq/troupe/bundle"
)

func obj(s string) any {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		panic(err)
	}
	return v
}

func inputs(data ...string) []bundle.Input {
	in := make([]bundle.Input, len(data))
	for i, d := range data {
		in[i] = bundle.Input{ID: "r" + string(rune('1'+i)), Seed: int64(11 + i), Data: obj(d)}
	}
	return in
}

func f(x float64) *float64 { return &x }

func mustSchema(t *testing.T, s string) *bundle.Schema {
	t.Helper()
	sc, err := bundle.CompileSchema([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// Every summary below is worked out by hand; the comments show the arithmetic.
func TestSummarizeHandComputed(t *testing.T) {
	bounded := `{"type":"object","properties":{"score":{"type":"number","minimum":0,"maximum":1}}}`
	nested := `{"type":"object","properties":{
		"risk":{"type":"object","x-weight":2,"properties":{"level":{"type":"string"},"score":{"type":"number","minimum":0,"maximum":10}}},
		"note":{"type":"string"}}}`
	tests := []struct {
		name   string
		schema string
		in     []bundle.Input
		want   bundle.Summary
	}{{
		// Relative difference: |0.6−0.8|/0.8 = 0.25, |0.6−0.7|/0.7 = 0.142857, |0.8−0.7|/0.8 = 0.125.
		// Confidence 1 − (0.25+0.142857+0.125)/3 = 0.827381. Mean 0.7, stdev √(0.02/3) = 0.08165.
		name: "numbers, relative",
		in:   inputs(`{"score":0.6}`, `{"score":0.8}`, `{"score":0.7}`),
		want: bundle.Summary{
			Consensus: map[string]any{},
			Disagreements: []bundle.Disagreement{{Field: "score", Values: []any{0.6, 0.8, 0.7},
				Replicates: []string{"r1", "r2", "r3"}, Distance: 0.172619}},
			PairwiseDistance: [][]float64{{0, 0.25, 0.142857}, {0.25, 0, 0.125}, {0.142857, 0.125, 0}},
			Distributions:    map[string]bundle.Distribution{"score": {N: 3, Mean: f(0.7), Stdev: f(0.08165), Min: f(0.6), Max: f(0.8)}},
			Confidence:       0.827381,
		},
	}, {
		// With minimum 0 and maximum 1 the range is 1: distances 0.2, 0.1, 0.1; confidence 1 − 0.4/3.
		name:   "numbers, schema bounds",
		schema: bounded,
		in:     inputs(`{"score":0.6}`, `{"score":0.8}`, `{"score":0.7}`),
		want: bundle.Summary{
			Consensus: map[string]any{},
			Disagreements: []bundle.Disagreement{{Field: "score", Values: []any{0.6, 0.8, 0.7},
				Replicates: []string{"r1", "r2", "r3"}, Distance: 0.133333}},
			PairwiseDistance: [][]float64{{0, 0.2, 0.1}, {0.2, 0, 0.1}, {0.1, 0.1, 0}},
			Distributions:    map[string]bundle.Distribution{"score": {N: 3, Mean: f(0.7), Stdev: f(0.08165), Min: f(0.6), Max: f(0.8)}},
			Confidence:       0.866667,
		},
	}, {
		// A disagreement flag: r3 differs from both; mean distance 2/3.
		name: "categories",
		in:   inputs(`{"verdict":"go","ok":true}`, `{"verdict":"go","ok":true}`, `{"verdict":"no","ok":true}`),
		want: bundle.Summary{
			Consensus: map[string]any{"ok": true},
			Disagreements: []bundle.Disagreement{{Field: "verdict", Values: []any{"go", "go", "no"},
				Replicates: []string{"r1", "r2", "r3"}, Distance: 0.666667}},
			// Objects average their fields: verdict 1, ok 0 → 0.5.
			PairwiseDistance: [][]float64{{0, 0, 0.5}, {0, 0, 0.5}, {0.5, 0.5, 0}},
			Distributions:    map[string]bundle.Distribution{"verdict": {N: 3, Counts: map[string]int{"go": 2, "no": 1}}},
			Confidence:       0.666667,
		},
	}, {
		// Jaccard: {a,b} vs {b,c} share 1 of 3 → 2/3; {a,b} vs {b,a} → 0.
		name: "sets",
		in:   inputs(`{"tags":["a","b"]}`, `{"tags":["b","c"]}`, `{"tags":["b","a"]}`),
		want: bundle.Summary{
			Consensus: map[string]any{},
			Disagreements: []bundle.Disagreement{{Field: "tags", Values: []any{[]any{"a", "b"}, []any{"b", "c"}, []any{"b", "a"}},
				Replicates: []string{"r1", "r2", "r3"}, Distance: 0.444444}},
			PairwiseDistance: [][]float64{{0, 0.666667, 0}, {0.666667, 0, 0.666667}, {0, 0.666667, 0}},
			Distributions:    map[string]bundle.Distribution{"tags": {N: 3, Counts: map[string]int{"a": 2, "b": 3, "c": 1}}},
			Confidence:       0.555556,
		},
	}, {
		// risk (weight 2) = mean(level 0, score |7−9|/10 = 0.2) = 0.1; note and steps (weight
		// 1 each; steps is a sequence of objects, compared position by position, equal in all
		// three) = 0 → r1–r2 = (2·0.1 + 0 + 0)/4 = 0.05. r3 lacks note (1) and has risk.score 7
		// (risk 0): r1–r3 = 1/4; r2–r3 = (2·0.1 + 1)/4 = 0.3.
		name:   "nested objects with weights and a missing field",
		schema: nested,
		in: inputs(`{"risk":{"level":"high","score":7},"note":"x","steps":[{"n":1}]}`,
			`{"risk":{"level":"high","score":9},"note":"x","steps":[{"n":1}]}`,
			`{"risk":{"level":"high","score":7},"steps":[{"n":1}]}`),
		want: bundle.Summary{
			Consensus: map[string]any{"risk.level": "high", "steps[0].n": 1.0},
			Disagreements: []bundle.Disagreement{
				// note: r1–r2 0, r1–r3 1, r2–r3 1 → 2/3. risk.score: 0.2, 0, 0.2 → 0.133333.
				{Field: "note", Values: []any{"x", "x"}, Replicates: []string{"r1", "r2"}, Missing: []string{"r3"}, Distance: 0.666667},
				{Field: "risk.score", Values: []any{7.0, 9.0, 7.0}, Replicates: []string{"r1", "r2", "r3"}, Distance: 0.133333},
			},
			PairwiseDistance: [][]float64{{0, 0.05, 0.25}, {0.05, 0, 0.3}, {0.25, 0.3, 0}},
			Distributions: map[string]bundle.Distribution{
				"risk.score": {N: 3, Mean: f(7.666667), Stdev: f(0.942809), Min: f(7), Max: f(9)},
				"steps[0].n": {N: 3, Mean: f(1), Stdev: f(0), Min: f(1), Max: f(1)},
			},
			// 1 − (0.05 + 0.25 + 0.3)/3
			Confidence: 0.8,
		},
	}, {
		// r3 is invalid: out of consensus, confidence and distributions, in disagreements.
		// r1–r2: mean(score 0.25, verdict 0) = 0.125 → confidence 0.875; r3 differs in kind (1).
		name: "one invalid replicate",
		in: func() []bundle.Input {
			in := inputs(`{"score":0.6,"verdict":"go"}`, `{"score":0.8,"verdict":"go"}`, `{"score":"high","verdict":"no"}`)
			in[2].Errors = []string{"at /score: got string, want number"}
			return in
		}(),
		want: bundle.Summary{
			Consensus: map[string]any{"verdict": "go"},
			Disagreements: []bundle.Disagreement{
				// score: 0.25, 1, 1 → 0.75; verdict: 0, 1, 1 → 2/3.
				{Field: "score", Values: []any{0.6, 0.8, "high"}, Replicates: []string{"r1", "r2", "r3"}, Distance: 0.75},
				{Field: "verdict", Values: []any{"go", "go", "no"}, Replicates: []string{"r1", "r2", "r3"}, Distance: 0.666667},
			},
			PairwiseDistance: [][]float64{{0, 0.125, 1}, {0.125, 0, 1}, {1, 1, 0}},
			Distributions:    map[string]bundle.Distribution{"score": {N: 2, Mean: f(0.7), Stdev: f(0.1), Min: f(0.6), Max: f(0.8)}},
			Confidence:       0.875,
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var opts bundle.Options
			if tt.schema != "" {
				opts.Schema = mustSchema(t, tt.schema)
			}
			got := bundle.Summarize(tt.in, opts)
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateApprox(0, 1e-6)); diff != "" {
				t.Errorf("summary (-want +got):\n%s", diff)
			}
		})
	}
}

// Small quantities (probabilities, rates) keep their statistics: six decimals alone would give
// values of 1e-7 and 3e-7 a mean and deviation of 0, a mean below their minimum.
func TestSmallNumbersDistribution(t *testing.T) {
	s := bundle.Summarize(inputs(`{"p":1e-7}`, `{"p":3e-7}`, `{"p":0.000123456789}`), bundle.Options{})
	// Mean (1e-7 + 3e-7 + 1.23456789e-4)/3 = 4.12856e-5; deviation √(Σ(x−mean)²/3) = 5.81039e-5.
	want := bundle.Distribution{N: 3, Mean: f(4.12856e-5), Stdev: f(5.81039e-5), Min: f(1e-7), Max: f(0.000123456789)}
	if diff := cmp.Diff(want, s.Distributions["p"]); diff != "" {
		t.Errorf("distribution (-want +got):\n%s", diff)
	}
	s = bundle.Summarize(inputs(`{"p":1e-7}`, `{"p":3e-7}`), bundle.Options{})
	want = bundle.Distribution{N: 2, Mean: f(2e-7), Stdev: f(1e-7), Min: f(1e-7), Max: f(3e-7)}
	if diff := cmp.Diff(want, s.Distributions["p"]); diff != "" {
		t.Errorf("distribution (-want +got):\n%s", diff)
	}
}

func TestDistanceKinds(t *testing.T) {
	sc := mustSchema(t, `{"properties":{
		"t":{"x-distance":"text"},
		"c":{"x-distance":"categorical"},
		"s":{"x-distance":"sequence"},
		"u":{"uniqueItems":true},
		"ignored":{"x-weight":0}}}`)
	tests := []struct {
		a, b string
		want float64
	}{
		{`{"t":"The cat sat"}`, `{"t":"the dog sat"}`, 0.5},         // {the,cat,sat} vs {the,dog,sat}: 1 − 2/4
		{`{"c":1}`, `{"c":1.5}`, 1},                                 // categorical numbers: a flag
		{`{"s":["a","b"]}`, `{"s":["b","a"]}`, 1},                   // both positions differ
		{`{"s":["a","b"]}`, `{"s":["a"]}`, 0.5},                     // one missing position of two
		{`{"u":[{"a":1},{"b":2}]}`, `{"u":[{"b":2},{"a":1}]}`, 0},   // uniqueItems: a set of objects
		{`{"ignored":1,"x":1}`, `{"ignored":2,"x":1}`, 0},           // weight 0 does not count
		{`{"x":0}`, `{"x":-0.0}`, 0},                                // equal numbers
		{`{"x":1}`, `{"x":-1}`, 1},                                  // |1−(−1)|/1 = 2, clamped
		{`{"x":"1"}`, `{"x":1}`, 1},                                 // kinds differ
		{`{"x":null}`, `{"x":null}`, 0},                             //
		{`{}`, `{}`, 0},                                             //
		{`{"x":[]}`, `{"x":[]}`, 0},                                 //
		{`{"x":[1,[2]]}`, `{"x":[1,[3]]}`, 0.5},                     // a sequence: [2] vs [3] → Jaccard 1
		{`{"a":1}`, `{"b":1}`, 1},                                   // each key missing on one side
		{`[{"a":1}]`, `{"a":1}`, 1},                                 // array vs object
		{`{"x":100,"y":"same"}`, `{"x":50,"y":"same"}`, 0.25},       // (0.5 + 0)/2
		{`{"x":true}`, `{"x":false}`, 1},                            //
		{`{"x":["a","b","c","d"]}`, `{"x":["a","b","c","e"]}`, 0.4}, // 1 − 3/5
	}
	for _, tt := range tests {
		a, b := obj(tt.a), obj(tt.b)
		if got := bundle.Distance(a, b, sc); got < tt.want-1e-9 || got > tt.want+1e-9 {
			t.Errorf("Distance(%s, %s) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestSchemaErrors(t *testing.T) {
	for _, tt := range []struct{ schema, want string }{
		{`{"properties":{"a":{"x-weight":-1}}}`, "#/properties/a/x-weight"},
		{`{"properties":{"a":{"x-distance":"cosine"}}}`, "#/properties/a/x-distance"},
		{`{"$ref":"http://example.com/other.json"}`, "only the schema's own document"},
		{`{"type":`, "bundle: schema"},
		{`{"type":"nothing"}`, "bundle: schema"},
	} {
		_, err := bundle.CompileSchema([]byte(tt.schema))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("CompileSchema(%s) = %v, want an error mentioning %q", tt.schema, err, tt.want)
		}
	}
}

func TestValidate(t *testing.T) {
	sc := mustSchema(t, `{"type":"object","required":["score","verdict"],
		"properties":{"score":{"type":"number","minimum":0,"maximum":1},"verdict":{"enum":["go","no"]}}}`)
	if errs := sc.Validate(obj(`{"score":0.5,"verdict":"go"}`)); errs != nil {
		t.Errorf("valid data: %v", errs)
	}
	errs := sc.Validate(obj(`{"score":1.5,"verdict":"maybe"}`))
	if len(errs) != 2 || !strings.HasPrefix(errs[0], "at /score: ") || !strings.HasPrefix(errs[1], "at /verdict: ") {
		t.Errorf("errors = %q, want one at /score and one at /verdict", errs)
	}
	if errs := sc.Validate(obj(`{"score":0.5}`)); len(errs) != 1 || !strings.Contains(errs[0], "verdict") {
		t.Errorf("missing verdict: %q", errs)
	}
	var none *bundle.Schema
	if errs := none.Validate(obj(`[1]`)); errs != nil {
		t.Errorf("nil schema: %v", errs)
	}
}

// A violation found through a $ref is reported as what it is, not as the reference's own
// "validation failed": schemas generated from typed models (Pydantic's $defs) are made of refs.
func TestValidateThroughRef(t *testing.T) {
	sc := mustSchema(t, `{"type":"object","$defs":{"score":{"type":"number","minimum":0,"maximum":1},
		"risk":{"type":"object","properties":{"score":{"$ref":"#/$defs/score"}}}},
		"properties":{"score":{"$ref":"#/$defs/score"},"risk":{"$ref":"#/$defs/risk"}}}`)
	got := sc.Validate(obj(`{"score":"high","risk":{"score":1.5}}`))
	want := []string{"at /risk/score: maximum: got 1.5, want 1", "at /score: got string, want number"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}

// The bundle's cost is the replicates' costs added up, not rounded as statistics are: a cheap
// model's fractions of a cent add up to what was spent, not to $0.
func TestBuildCostIsTheReplicatesSum(t *testing.T) {
	in := inputs(`{"x":1}`, `{"x":1}`, `{"x":1}`)
	var want float64
	for i := range in {
		in[i].Usage = bundle.Usage{Tokens: 1, CostDollars: 4e-7}
		want += 4e-7
	}
	b, _, err := bundle.Build(bundle.Meta{Task: "t"}, in, bundle.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := b.Meta.Usage.CostDollars; got != want {
		t.Errorf("meta.usage.cost_dollars = %v, want %v, the sum of the replicates' costs", got, want)
	}
}

func TestBuild(t *testing.T) {
	in := inputs(`{"score":0.6,"verdict":"go","notes":{"a":"same","b":"same"}}`,
		`{"score":0.8,"verdict":"go","notes":{"a":"same","b":"same"}}`)
	in = append(in, bundle.Input{ID: "r3", Seed: 47, Status: "timeout", Errors: []string{"timed out after 2s"}})
	in[0].Usage = bundle.Usage{Tokens: 100, CostDollars: 0.01}
	in[1].Usage = bundle.Usage{Tokens: 120, CostDollars: 0.02}
	meta := bundle.Meta{Task: "feasibility", KMax: 3, Model: "m@1", SchemaVersion: "feasibility.v1", Epsilon: 0.2}
	b, out, err := bundle.Build(meta, in, bundle.Options{})
	if err != nil {
		t.Fatal(err)
	}
	wantMeta := bundle.Meta{Task: "feasibility", K: 3, KMax: 3, Model: "m@1", Seeds: []int64{11, 12, 47},
		SchemaVersion: "feasibility.v1", Epsilon: 0.2,
		Usage: bundle.Usage{Tokens: 220, CostDollars: 0.03, PerReplicate: []bundle.ReplicateUsage{
			{ID: "r1", Tokens: 100, CostDollars: 0.01}, {ID: "r2", Tokens: 120, CostDollars: 0.02}, {ID: "r3"}}}}
	if diff := cmp.Diff(wantMeta, b.Meta); diff != "" {
		t.Errorf("meta (-want +got):\n%s", diff)
	}
	if r := b.Replicates[2]; r.Status != "timeout" || r.Quality.Valid || r.Data != nil || r.Quality.Errors[0] != "timed out after 2s" {
		t.Errorf("timed-out replicate = %+v", r)
	}
	// 004's contract: the top-level members and the summary's members, by name.
	var top map[string]json.RawMessage
	if err := json.Unmarshal(out, &top); err != nil {
		t.Fatal(err)
	}
	shape := map[string]map[string]any{}
	for _, k := range []string{"meta", "summary"} {
		var m map[string]any
		if err := json.Unmarshal(top[k], &m); err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		shape[k] = m
	}
	for _, k := range []string{"consensus", "disagreements", "pairwise_distance", "distributions", "confidence", "truncated"} {
		if _, ok := shape["summary"][k]; !ok {
			t.Errorf("summary has no %q: %s", k, out)
		}
	}
	for _, k := range []string{"task", "k", "model", "seeds", "schema_version", "usage"} {
		if _, ok := shape["meta"][k]; !ok {
			t.Errorf("meta has no %q: %s", k, out)
		}
	}
	// Reproducible: the same inputs give the same bytes.
	for range 5 {
		_, again, err := bundle.Build(meta, in, bundle.Options{})
		if err != nil || string(again) != string(out) {
			t.Fatalf("second build differs (%v):\n%s\n%s", err, out, again)
		}
	}
}

// An invalid replicate's quality says why: one that failed with data and no errors of its own
// did not "produce no data".
func TestBuildQualityReason(t *testing.T) {
	in := inputs(`{"a":1}`, `{"a":2}`)
	in[1].Status = "failed"
	in = append(in, bundle.Input{ID: "r3", Seed: 47})
	b, _, err := bundle.Build(bundle.Meta{}, in, bundle.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []bundle.Quality{{Valid: true}, {Errors: []string{"replicate ended failed"}}, {Errors: []string{"replicate produced no data"}}}
	for i, r := range b.Replicates {
		if diff := cmp.Diff(want[i], r.Quality); diff != "" {
			t.Errorf("%s quality (-want +got):\n%s", r.ID, diff)
		}
	}
}

// Degenerate replicates build a bundle that says what they are: none, one, all alike, all
// failed, empty documents. A number JSON cannot hold (NaN, an infinity) makes its replicate
// invalid, saying where, rather than making the whole bundle impossible to encode.
func TestBuildDegenerateReplicates(t *testing.T) {
	inf := math.Inf(1)
	for _, tc := range []struct {
		name       string
		in         []bundle.Input
		consensus  map[string]any
		confidence float64
		quality    []bundle.Quality
		data       []any
		cost       float64
	}{
		{"none", nil, map[string]any{}, 0, []bundle.Quality{}, []any{}, 0},
		{"one: nothing to agree with", inputs(`{"x":1}`), map[string]any{}, 0, []bundle.Quality{{Valid: true}}, []any{obj(`{"x":1}`)}, 0},
		{"all identical", inputs(`{"x":1,"y":"a"}`, `{"x":1,"y":"a"}`, `{"x":1,"y":"a"}`), map[string]any{"x": 1.0, "y": "a"}, 1,
			[]bundle.Quality{{Valid: true}, {Valid: true}, {Valid: true}}, []any{obj(`{"x":1,"y":"a"}`), obj(`{"x":1,"y":"a"}`), obj(`{"x":1,"y":"a"}`)}, 0},
		{"all failed", []bundle.Input{{ID: "r1", Status: "failed", Errors: []string{"boom"}}, {ID: "r2", Status: "timeout"}}, map[string]any{}, 0,
			[]bundle.Quality{{Errors: []string{"boom"}}, {Errors: []string{"replicate produced no data"}}}, []any{nil, nil}, 0},
		{"empty objects", inputs(`{}`, `{}`), map[string]any{"": map[string]any{}}, 1,
			[]bundle.Quality{{Valid: true}, {Valid: true}}, []any{map[string]any{}, map[string]any{}}, 0},
		{"NaN and infinities in the data", []bundle.Input{
			{ID: "r1", Data: map[string]any{"x": math.NaN(), "y": 1.0}},
			{ID: "r2", Data: map[string]any{"x": 1.0, "y": []any{-inf}}},
			{ID: "r3", Data: map[string]any{"x": 1.0, "y": 1.0}},
		}, map[string]any{}, 0, []bundle.Quality{
			{Errors: []string{`data.x is NaN, which JSON cannot encode (kept as the text "NaN")`}},
			{Errors: []string{`data.y[0] is -Inf, which JSON cannot encode (kept as the text "-Inf")`}},
			{Valid: true},
		}, []any{obj(`{"x":"NaN","y":1}`), obj(`{"x":1,"y":["-Inf"]}`), obj(`{"x":1,"y":1}`)}, 0},
		{"a cost JSON cannot hold", []bundle.Input{
			{ID: "r1", Data: obj(`{"x":1}`), Usage: bundle.Usage{CostDollars: inf}},
			{ID: "r2", Data: obj(`{"x":1}`), Usage: bundle.Usage{CostDollars: 0.5}},
		}, map[string]any{}, 0, []bundle.Quality{
			{Errors: []string{"usage cost_dollars is +Inf, which JSON cannot encode (counted as 0)"}},
			{Valid: true},
		}, []any{obj(`{"x":1}`), obj(`{"x":1}`)}, 0.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := fmt.Sprint(tc.in)
			b, out, err := bundle.Build(bundle.Meta{Task: "t"}, tc.in, bundle.Options{})
			if err != nil {
				t.Fatalf("Build: %v", err)
			}
			var decoded bundle.Bundle
			if err := json.Unmarshal(out, &decoded); err != nil {
				t.Fatalf("the encoding does not decode: %v", err)
			}
			quality, data := []bundle.Quality{}, []any{}
			for _, r := range decoded.Replicates {
				quality, data = append(quality, r.Quality), append(data, r.Data)
			}
			got := []any{decoded.Summary.Consensus, decoded.Summary.Confidence, quality, data, decoded.Meta.Usage.CostDollars}
			want := []any{tc.consensus, tc.confidence, tc.quality, tc.data, tc.cost}
			if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("consensus, confidence, qualities, data, cost (-want +got):\n%s", diff)
			}
			if len(b.Summary.PairwiseDistance) != len(tc.in) {
				t.Errorf("pairwise distances %v for %d replicates", b.Summary.PairwiseDistance, len(tc.in))
			}
			if after := fmt.Sprint(tc.in); after != before {
				t.Errorf("Build modified its input: %s, now %s", before, after)
			}
		})
	}
}

func TestBuildRejects(t *testing.T) {
	if _, _, err := bundle.Build(bundle.Meta{}, []bundle.Input{{ID: "r1"}, {ID: "r1"}}, bundle.Options{}); err == nil || !strings.Contains(err.Error(), `"r1" appears twice`) {
		t.Errorf("duplicate ids: %v", err)
	}
	if _, _, err := bundle.Build(bundle.Meta{}, []bundle.Input{{}}, bundle.Options{}); err == nil || !strings.Contains(err.Error(), "replicate 0 has no id") {
		t.Errorf("no id: %v", err)
	}
	var le *bundle.LimitError
	if _, _, err := bundle.Build(bundle.Meta{}, nil, bundle.Options{Limits: bundle.Limits{MaxDiffs: -1}}); !errors.As(err, &le) || le.Field != "max_diffs" {
		t.Errorf("negative cap: %v", err)
	}
	if _, _, err := bundle.Build(bundle.Meta{Task: strings.Repeat("x", 200)}, inputs(`{"a":1}`), bundle.Options{Limits: bundle.Limits{MaxBytes: 100}}); !errors.Is(err, bundle.ErrTooLarge) {
		t.Errorf("tiny max_bytes: %v", err)
	}
}

func TestCapsTruncate(t *testing.T) {
	in := inputs(`{"a":1,"b":2,"c":"x","d":"y","e":[1,2]}`, `{"a":2,"b":3,"c":"z","d":"y","e":[1,2]}`)
	b, _, err := bundle.Build(bundle.Meta{}, in, bundle.Options{Limits: bundle.Limits{MaxFields: 1, MaxDiffs: 1}})
	if err != nil {
		t.Fatal(err)
	}
	s := b.Summary
	// Consensus: d, e → keep d. Distributions: a, b, c (c disagrees) → keep a.
	// Disagreements: a (|1−2|/2 = 0.5), b (1/3), c (1) → keep c.
	want := &bundle.Omitted{Consensus: 1, Distributions: 2, Disagreements: 2}
	if !s.Truncated || !cmp.Equal(s.Omitted, want) || len(s.Disagreements) != 1 || s.Disagreements[0].Field != "c" {
		t.Errorf("truncated %v omitted %+v disagreements %+v", s.Truncated, s.Omitted, s.Disagreements)
	}
	if _, ok := s.Consensus["d"]; !ok || len(s.Consensus) != 1 {
		t.Errorf("consensus %v, want d only", s.Consensus)
	}
}

func TestMaxBytesDropsInOrder(t *testing.T) {
	doc := func(v int) string {
		var sb strings.Builder
		sb.WriteString(`{`)
		for i := range 40 {
			if i > 0 {
				sb.WriteString(",")
			}
			sb.WriteString(`"field_` + string(rune('a'+i%26)) + string(rune('a'+i/26)) + `":`)
			if i%4 == 0 {
				sb.WriteString(`"` + strings.Repeat("v", 20) + string(rune('a'+v)) + `"`)
			} else {
				sb.WriteString(`"same value"`)
			}
		}
		sb.WriteString(`}`)
		return sb.String()
	}
	in := inputs(doc(0), doc(1), doc(2))
	_, full, err := bundle.Build(bundle.Meta{}, in, bundle.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, max := range []int{len(full), len(full) - 1, len(full) / 2, len(full) / 4, 900} {
		b, out, err := bundle.Build(bundle.Meta{}, in, bundle.Options{Limits: bundle.Limits{MaxBytes: max}})
		if err != nil {
			t.Fatalf("max_bytes %d: %v", max, err)
		}
		if len(out) > max {
			t.Errorf("max_bytes %d: %d bytes", max, len(out))
		}
		if max < len(full) && !b.Summary.Truncated && b.Replicates[1].Base == "" {
			t.Errorf("max_bytes %d: neither diff-encoded nor truncated", max)
		}
		// Every replicate that kept its data reads back exactly.
		for i := range b.Replicates {
			if b.Replicates[i].DataOmitted {
				continue
			}
			got, err := b.Data(i)
			if err != nil || !cmp.Equal(got, in[i].Data) {
				t.Errorf("max_bytes %d: replicate %d reads back %v (%v)", max, i, got, err)
			}
		}
	}
}

func TestDiffPatch(t *testing.T) {
	base := obj(`{"a":1,"b":{"c":[1,2],"d":"x","e/f~":true},"g":null}`)
	v := obj(`{"a":1,"b":{"c":[1,3],"e/f~":false,"h":{}},"i":"new"}`)
	ops := bundle.Diff(base, v)
	want := []bundle.Op{
		{Op: "replace", Path: "/b/c", Value: []any{1.0, 3.0}},
		{Op: "remove", Path: "/b/d"},
		{Op: "replace", Path: "/b/e~1f~0", Value: false},
		{Op: "add", Path: "/b/h", Value: map[string]any{}},
		{Op: "remove", Path: "/g"},
		{Op: "add", Path: "/i", Value: "new"},
	}
	if diff := cmp.Diff(want, ops); diff != "" {
		t.Errorf("diff (-want +got):\n%s", diff)
	}
	got, err := bundle.Patch(base, ops)
	if err != nil || !cmp.Equal(got, v) {
		t.Errorf("Patch = %v, %v; want %v", got, err, v)
	}
	if _, err := bundle.Patch(base, []bundle.Op{{Op: "remove", Path: "/nope/x"}}); err == nil || !strings.Contains(err.Error(), `operation 0 (remove "/nope/x"): no member "nope"`) {
		t.Errorf("bad patch: %v", err)
	}
	if _, err := bundle.Patch(base, []bundle.Op{{Op: "move", Path: "/a"}}); err == nil || !strings.Contains(err.Error(), "unsupported op") {
		t.Errorf("move: %v", err)
	}
	// RFC 6902: add and replace carry "value" even when it is null; remove carries none.
	enc, err := json.Marshal(bundle.Diff(obj(`{"a":1,"b":2}`), obj(`{"a":null,"c":null}`)))
	if want := `[{"op":"replace","path":"/a","value":null},{"op":"remove","path":"/b"},{"op":"add","path":"/c","value":null}]`; err != nil || string(enc) != want {
		t.Errorf("encoded patch %s (%v), want %s", enc, err, want)
	}
}

func TestPresentRedactsOutputOnly(t *testing.T) {
	in := inputs(`{"k":"secret-1","same":"secret-1","user":{"ssn":"123","tags":["secret-a","b"]},"secret.key":1,"steps":[{"n":"secret-s"}]}`,
		`{"k":"secret-2","same":"secret-1","user":{"ssn":"123","tags":["secret-b","b"]},"secret.key":1,"steps":[{"n":"secret-s"}]}`,
		`{"k":"secret-3"}`)
	in[2].Errors = []string{"at /k: 'secret-3' is not allowed"}
	var mu sync.Mutex
	paths := map[string]bool{}
	hide := func(path []string, v any) any {
		mu.Lock()
		paths[strings.Join(path, "/")] = true
		mu.Unlock()
		if strings.Join(path, ".") == "user.ssn" {
			return "HIDDEN" // a redaction by field path
		}
		b, _ := json.Marshal(v)
		s := strings.ReplaceAll(string(b), "secret", "XXX")
		var out any
		_ = json.Unmarshal([]byte(s), &out)
		return out
	}
	b, out, err := bundle.Build(bundle.Meta{}, in, bundle.Options{Present: hide})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "secret") {
		t.Errorf("bundle leaks: %s", out)
	}
	// Statistics saw the real values: k disagrees, same agrees. Values taken out of the
	// documents are presented with their paths, so the field path rule hides user.ssn.
	s := b.Summary
	// k 1, same 0, user (ssn 0 + tags 1 − 1/3)/2, secret.key 0, steps 0 → (1 + 1/3)/5.
	if s.PairwiseDistance[0][1] != 0.266667 {
		t.Errorf("distance %v, want 0.266667: computed on the raw values", s.PairwiseDistance[0][1])
	}
	if s.Consensus["same"] != "XXX-1" || s.Consensus["user.ssn"] != "HIDDEN" || s.Consensus[`["XXX.key"]`] != 1.0 || s.Consensus["steps[0].n"] != "XXX-s" {
		t.Errorf("consensus %v", s.Consensus)
	}
	if got := b.Replicates[2].Quality.Errors; !cmp.Equal(got, []string{"at /k: 'XXX-3' is not allowed"}) {
		t.Errorf("quality errors %q", got)
	}
	for _, p := range []string{"", "k", "same", "user/ssn", "user/tags", "secret.key", "steps/n"} {
		if !paths[p] {
			t.Errorf("Present never saw path %q (saw %v)", p, paths)
		}
	}
}

// seed004 is seed 004's "minimal contract" example, its comments replaced by data.
const seed004 = `{
  "meta": { "task": "feasibility", "k": 3, "model": "provider:model@ver", "seeds": [11, 23, 47] },
  "replicates": [
    { "id": "r1", "data": {"threshold": 0.6, "score": 0.5}, "quality": { "valid": true } },
    { "id": "r2", "data": {"threshold": 0.8, "score": 0.7}, "quality": { "valid": true } },
    { "id": "r3", "data": {"threshold": "high"}, "quality": { "valid": false, "errors": ["missing X"] } }
  ],
  "summary": {
    "consensus": { },
    "disagreements": [ { "field": "threshold", "values": [0.6, 0.8] } ],
    "pairwise_distance": [[0,0.18,0.22],[0.18,0,0.27],[0.22,0.27,0]],
    "distributions": { "score": { "mean": 0.63, "stdev": 0.12 } },
    "confidence": 0.74,
    "truncated": false
  }
}`

// Every member of seed 004's example is in a bundle of the same replicates, where the example
// has it and with the same JSON type (what a bundle adds beyond it is documented on the types).
func TestSeed004Shape(t *testing.T) {
	in := inputs(`{"threshold":0.6,"score":0.5}`, `{"threshold":0.8,"score":0.7}`, `{"threshold":"high"}`)
	in[0].Seed, in[1].Seed, in[2].Seed = 11, 23, 47
	in[2].Errors = []string{"missing X"}
	_, out, err := bundle.Build(bundle.Meta{Task: "feasibility", KMax: 3, Model: "provider:model@ver"}, in, bundle.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got, want any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(seed004), &want); err != nil {
		t.Fatal(err)
	}
	kind := func(v any) string {
		switch v.(type) {
		case map[string]any:
			return "object"
		case []any:
			return "array"
		case float64:
			return "number"
		case string:
			return "string"
		case bool:
			return "boolean"
		}
		return "null"
	}
	var walk func(path string, w, g any)
	walk = func(path string, w, g any) {
		if kind(w) != kind(g) {
			t.Errorf("%s: seed 004 has a %s, the bundle a %s (%v)", path, kind(w), kind(g), g)
			return
		}
		switch w := w.(type) {
		case map[string]any:
			if strings.HasSuffix(path, ".data") || strings.HasSuffix(path, ".consensus") {
				return // the replicates' own data
			}
			gm := g.(map[string]any)
			for k, wv := range w {
				gv, ok := gm[k]
				if !ok {
					t.Errorf("%s: no member %q (bundle has %v)", path, k, gm)
					continue
				}
				walk(path+"."+k, wv, gv)
			}
		case []any:
			ga := g.([]any)
			if len(ga) == 0 && len(w) > 0 {
				t.Errorf("%s: empty, seed 004 has %d elements", path, len(w))
				return
			}
			for i := range min(len(w), len(ga)) {
				walk(fmt.Sprintf("%s[%d]", path, i), w[i], ga[i])
			}
		}
	}
	walk("bundle", want, got)
	// The same figures where the example's are not placeholders.
	g := got.(map[string]any)
	if m := g["meta"].(map[string]any); m["k"] != 3.0 || fmt.Sprint(m["seeds"]) != "[11 23 47]" || m["model"] != "provider:model@ver" {
		t.Errorf("meta %v", m)
	}
	if q := g["replicates"].([]any)[2].(map[string]any)["quality"]; fmt.Sprint(q) != "map[errors:[missing X] valid:false]" {
		t.Errorf("r3 quality %v", q)
	}
}
