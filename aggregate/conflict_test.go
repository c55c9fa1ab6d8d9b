package aggregate_test

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/aggregate"
)

// TestDetectConflictsNumbers checks that values compare as JSON: numbers by value whatever
// their Go type, containers deeply.
func TestDetectConflictsNumbers(t *testing.T) {
	type named map[string]float64
	tests := []struct {
		name     string
		a, b     any
		conflict bool
	}{
		{"int and float64", 1, 1.0, false},
		{"int and json.Number", 1, json.Number("1"), false},
		{"float64 and json.Number", 1.0, json.Number("1"), false},
		{"json.Number spellings", json.Number("1.0"), json.Number("1e0"), false},
		{"int64 and uint8", int64(7), uint8(7), false},
		{"float32 and float64", float32(0.5), 0.5, false},
		{"json.Number decimal as encoding/json reads it", json.Number("0.1"), 0.1, false},
		{"big json.Number integer is exact", json.Number("9007199254740993"), int64(9007199254740993), false},
		{"big json.Number integer is not its float64 neighbour", json.Number("9007199254740993"), float64(9007199254740992), true},
		{"beyond 64 bits", json.Number("123456789012345678901234567890"), json.Number("1.2345678901234567890123456789e29"), true},
		{"beyond 64 bits equal", json.Number("123456789012345678901234567890"), json.Number("123456789012345678901234567890"), false},
		{"uint64 above int64", uint64(1 << 63), json.Number("9223372036854775808"), false},
		{"different numbers", 1, 1.5, true},
		{"negative zero", 0, -0.0, false},
		{"number and string", 1, "1", true},
		{"bool and string", true, "true", true},
		{"json.Number that is not a number compares as a string", json.Number("abc"), "abc", false},
		{"arrays of mixed numbers", []any{1, "a"}, []any{1.0, "a"}, false},
		{"typed and untyped slices", []string{"a", "b"}, []any{"a", "b"}, false},
		{"array order matters", []any{1, 2}, []any{2, 1}, true},
		{"array lengths", []any{1}, []any{1, 1}, true},
		{"maps in arrays", []any{map[string]any{"x": 1}}, []any{map[string]any{"x": json.Number("1")}}, false},
		{"typed map", named{"x": 1}, map[string]any{"x": 1}, false},
		{"nil slice is null", []any(nil), nil, false},
		{"empty slice is not null", []any{}, nil, true},
		{"pointer to value", troupe.Ptr(3), 3, false},
		{"struct by its JSON", time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC), "2025-01-02T03:04:05Z", false},
		{"bytes as base64", []byte("hi"), "aGk=", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := []*troupe.Result{
				result("a", map[string]any{"v": tt.a}),
				result("b", map[string]any{"v": tt.b}),
			}
			got := len(aggregate.DetectConflicts(rs)) > 0
			if got != tt.conflict {
				t.Errorf("conflict between %#v and %#v = %v, want %v", tt.a, tt.b, got, tt.conflict)
			}
		})
	}
}

func TestDetectConflictsPaths(t *testing.T) {
	ci := []any{-0.2, -0.05}
	tests := []struct {
		name    string
		results []*troupe.Result
		want    []troupe.Conflict
	}{
		{
			name: "nested paths are dotted, arrays are leaves",
			results: []*troupe.Result{
				result("causal_impact", map[string]any{"region": "Midwest", "effect": map[string]any{"size": -0.12, "ci": ci, "model": map[string]any{"name": "dml", "folds": 5}}}, conf(0.8)),
				result("gap_analyzer", map[string]any{"region": "Midwest", "effect": map[string]any{"size": -0.10, "ci": []any{-0.2, -0.05}, "model": map[string]any{"name": "dml", "folds": 10}}}),
			},
			want: []troupe.Conflict{
				{Field: "effect.model.folds", Values: []troupe.ConflictValue{cv("causal_impact", 5, 0.8), cv("gap_analyzer", 10, -1)}},
				{Field: "effect.size", Values: []troupe.ConflictValue{cv("causal_impact", -0.12, 0.8), cv("gap_analyzer", -0.10, -1)}},
			},
		},
		{
			// b and c also disagree on driver.name, but that is part of the conflict at
			// driver: resolving it takes one agent's whole value, name included.
			name: "a leaf against an object conflicts at that path, which holds the conflicts under it",
			results: []*troupe.Result{
				result("a", map[string]any{"driver": "weather"}),
				result("b", map[string]any{"driver": map[string]any{"name": "weather"}}),
				result("c", map[string]any{"driver": map[string]any{"name": "supply"}}),
			},
			want: []troupe.Conflict{
				{Field: "driver", Values: []troupe.ConflictValue{
					cv("a", "weather", -1), cv("b", map[string]any{"name": "weather"}, -1), cv("c", map[string]any{"name": "supply"}, -1),
				}},
			},
		},
		{
			name: "a path beside a conflicting one, sorted between it and its children, still conflicts",
			results: []*troupe.Result{
				result("a", map[string]any{"y": "s", "y-a": 1, "y_b": map[string]any{"z": 1}}),
				result("b", map[string]any{"y": map[string]any{"z": "q"}, "y-a": 2, "y_b": map[string]any{"z": 2}}),
			},
			want: []troupe.Conflict{
				{Field: "y", Values: []troupe.ConflictValue{cv("a", "s", -1), cv("b", map[string]any{"z": "q"}, -1)}},
				{Field: "y-a", Values: []troupe.ConflictValue{cv("a", 1, -1), cv("b", 2, -1)}},
				{Field: "y_b.z", Values: []troupe.ConflictValue{cv("a", 1, -1), cv("b", 2, -1)}},
			},
		},
		{
			name: "an empty object is a leaf",
			results: []*troupe.Result{
				result("a", map[string]any{"filters": map[string]any{}}),
				result("b", map[string]any{"filters": "none"}),
			},
			want: []troupe.Conflict{
				{Field: "filters", Values: []troupe.ConflictValue{cv("a", map[string]any{}, -1), cv("b", "none", -1)}},
			},
		},
		{
			name: "a dotted key and a nested key name the same path",
			results: []*troupe.Result{
				result("a", map[string]any{"x.y": 1}),
				result("b", map[string]any{"x": map[string]any{"y": 2}}),
			},
			want: []troupe.Conflict{
				{Field: "x.y", Values: []troupe.ConflictValue{cv("a", 1, -1), cv("b", 2, -1)}},
			},
		},
		{
			name: "values in the order results were given, conflicts sorted by path",
			results: []*troupe.Result{
				result("z", map[string]any{"b": 1, "a": 1}),
				result("y", map[string]any{"b": 2, "a": 1}),
				result("x", map[string]any{"b": 3, "a": 2}),
			},
			want: []troupe.Conflict{
				{Field: "a", Values: []troupe.ConflictValue{cv("z", 1, -1), cv("y", 1, -1), cv("x", 2, -1)}},
				{Field: "b", Values: []troupe.ConflictValue{cv("z", 1, -1), cv("y", 2, -1), cv("x", 3, -1)}},
			},
		},
		{
			name:    "no results",
			results: nil,
			want:    []troupe.Conflict{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := aggregate.DetectConflicts(tt.results)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("DetectConflicts (-want +got):\n%s", diff)
			}
		})
	}
}

func TestConsistencyScore(t *testing.T) {
	r := func(agent string, ar map[string]any) *troupe.Result { return result(agent, ar) }
	tests := []struct {
		name      string
		results   []*troupe.Result
		conflicts []troupe.Conflict // nil: DetectConflicts(results)
		want      float64
	}{
		{"nothing shared", []*troupe.Result{r("a", map[string]any{"x": 1}), r("b", map[string]any{"y": 2})}, nil, 1},
		{"no results", nil, nil, 1},
		{"all agree", []*troupe.Result{r("a", map[string]any{"x": 1, "y": 2}), r("b", map[string]any{"x": 1.0, "y": 2})}, nil, 1},
		{"all conflict", []*troupe.Result{r("a", map[string]any{"x": 1, "y": 2}), r("b", map[string]any{"x": 3, "y": 4})}, nil, 0},
		{"half conflict", []*troupe.Result{r("a", map[string]any{"x": 1, "y": 2}), r("b", map[string]any{"x": 1, "y": 4})}, nil, 0.5},
		{"nested", []*troupe.Result{
			r("a", map[string]any{"e": map[string]any{"x": 1, "y": 2, "z": 3, "w": 4}}),
			r("b", map[string]any{"e": map[string]any{"x": 1, "y": 2, "z": 3, "w": 5}}),
		}, nil, 0.75},
		{"failed results do not share", []*troupe.Result{
			r("a", map[string]any{"x": 1}),
			result("b", map[string]any{"x": 2}, status(troupe.StatusFailed)),
		}, nil, 1},
		{"conflicts on unshared fields do not count", []*troupe.Result{r("a", map[string]any{"x": 1}), r("b", map[string]any{"x": 1})},
			[]troupe.Conflict{{Field: "elsewhere"}, {Field: "other"}}, 1},
		{"a repeated conflict counts once", []*troupe.Result{r("a", map[string]any{"x": 1, "y": 1}), r("b", map[string]any{"x": 2, "y": 1})},
			[]troupe.Conflict{{Field: "x"}, {Field: "x"}, {Field: "x"}}, 0.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := tt.conflicts
			if cs == nil {
				cs = aggregate.DetectConflicts(tt.results)
			}
			if got := aggregate.ConsistencyScore(tt.results, cs); got != tt.want {
				t.Errorf("ConsistencyScore = %v, want %v", got, tt.want)
			}
		})
	}

	// The score stays in [0, 1] however many agents and conflicts there are.
	for agents := 1; agents <= 6; agents++ {
		for fields := 0; fields <= 5; fields++ {
			t.Run(fmt.Sprintf("bounds/%d agents %d fields", agents, fields), func(t *testing.T) {
				var rs []*troupe.Result
				for a := range agents {
					ar := map[string]any{}
					for f := range fields {
						ar[fmt.Sprint("f", f)] = (a * f) % 3
					}
					rs = append(rs, r(fmt.Sprint("agent", a), ar))
				}
				got := aggregate.ConsistencyScore(rs, aggregate.DetectConflicts(rs))
				if got < 0 || got > 1 {
					t.Errorf("ConsistencyScore = %v, outside [0, 1]", got)
				}
			})
		}
	}
}

func TestDetectConflictsMoreValues(t *testing.T) {
	type level int
	tests := []struct {
		name     string
		a, b     any
		conflict bool
	}{
		{"named int type", level(3), 3, false},
		{"named int type differs", level(3), 4, true},
		{"NaN equals NaN", nan(), nan(), false},
		{"NaN is not a number's equal", nan(), 1, true},
		{"infinity is no integer", inf(), json.Number("1" + strings.Repeat("0", 400)), true},
		{"huge integer against the float holding it exactly", json.Number("1180591620717411303424"), math.Ldexp(1, 70), false},
		{"huge integer against the nearest float", json.Number("1" + strings.Repeat("0", 30)), 1e30, true},
		{"map with int keys by JSON", map[int]string{1: "a"}, map[string]any{"1": "a"}, false},
		{"nil pointer is null", (*int)(nil), nil, false},
		{"unencodable values compare deeply", make(chan int), make(chan int), true},
		{"uint above int64", uint64(1<<63 + 1), uint64(1<<63 + 1), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := conflicts(tt.a, tt.b); got != tt.conflict {
				t.Errorf("conflict between %#v and %#v = %v, want %v", tt.a, tt.b, got, tt.conflict)
			}
		})
	}

	// The holders of a path stay in result order when an object comes before a leaf.
	got := aggregate.DetectConflicts([]*troupe.Result{
		result("a", map[string]any{"driver": map[string]any{"name": "weather"}}),
		result("b", map[string]any{"driver": "weather"}),
	})
	want := []troupe.Conflict{{Field: "driver", Values: []troupe.ConflictValue{
		cv("a", map[string]any{"name": "weather"}, -1), cv("b", "weather", -1),
	}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("DetectConflicts (-want +got):\n%s", diff)
	}
}

func nan() float64 { return math.NaN() }
func inf() float64 { return math.Inf(1) }

// ConsistencyScore is the score Combine reports: a path under a conflicting one is part of
// that conflict (DetectConflicts does not list it), so it is not counted as shared either.
func TestConsistencyScoreLeavesOutPathsUnderAConflict(t *testing.T) {
	r := func(agent string, ar map[string]any) *troupe.Result { return result(agent, ar, conf(0.5)) }
	score := func(conflicting, shared int) float64 { return 1 - float64(conflicting)/float64(shared) }
	obj := func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	tests := []struct {
		name      string
		results   []*troupe.Result
		conflicts []troupe.Conflict // nil: DetectConflicts(results)
		want      float64
	}{
		// Shared paths: y and w; y.z, held by a and b alike, is part of y's conflict.
		{"children agree under a conflicting parent", []*troupe.Result{
			r("a", obj("y", obj("z", "p"), "w", 1)),
			r("b", obj("y", obj("z", "p"), "w", 1)),
			r("c", obj("y", "s", "w", 1)),
		}, nil, 0.5},
		{"children differ under a conflicting parent", []*troupe.Result{
			r("a", obj("y", obj("z", "p"), "w", 1)),
			r("b", obj("y", obj("z", "q"), "w", 1)),
			r("c", obj("y", "s", "w", 1)),
		}, nil, 0.5},
		{"deeper children", []*troupe.Result{
			r("a", obj("y", obj("z", obj("u", 1, "v", 2)), "w", 1, "x", 1)),
			r("b", obj("y", obj("z", obj("u", 1, "v", 3)), "w", 1, "x", 1)),
			r("c", obj("y", 7, "w", 1, "x", 1)),
		}, nil, score(1, 3)},
		{"a nested conflict given beside its parent counts once", []*troupe.Result{
			r("a", obj("y", obj("z", "p"), "w", 1)),
			r("b", obj("y", obj("z", "q"), "w", 1)),
			r("c", obj("y", "s", "w", 1)),
		}, []troupe.Conflict{{Field: "y"}, {Field: "y.z"}}, 0.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := tt.conflicts
			if cs == nil {
				cs = aggregate.DetectConflicts(tt.results)
			}
			got := aggregate.ConsistencyScore(tt.results, cs)
			if got != tt.want {
				t.Errorf("ConsistencyScore = %v, want %v", got, tt.want)
			}
			agg, err := aggregate.Combine(tt.results, aggregate.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if agg.ConsistencyScore != tt.want {
				t.Errorf("Combine's consistency_score = %v, want %v", agg.ConsistencyScore, tt.want)
			}
		})
	}
}

// Objects Go code builds of other types than map[string]any (a vote tally's map[string]int,
// a struct) are compared field by field as the same objects decoded from JSON are: a run
// resumed from a durable log, which holds the decoded ones, aggregates as the run did.
func TestTypedObjectsAggregateAsDecodedOnes(t *testing.T) {
	type tally struct {
		Yes int `json:"yes"`
		No  int `json:"no"`
	}
	typed := []*troupe.Result{
		result("a", map[string]any{"votes": map[string]int{"yes": 1}, "voters": map[string][]string{"yes": {"m1"}}, "tally": tally{Yes: 2}}, conf(0.9)),
		result("b", map[string]any{"votes": map[string]int{"no": 1}, "voters": map[string][]string{"no": {"m2"}}, "tally": tally{Yes: 1, No: 1}}, conf(0.6)),
		result("c", map[string]any{"votes": map[string]int{"yes": 3}, "tally": map[string]float64{"yes": 2, "no": 0}}, conf(0.5)),
	}
	var decoded []*troupe.Result
	for _, r := range typed {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		var back troupe.Result
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		decoded = append(decoded, &back)
	}
	asJSON := func(rs []*troupe.Result) (string, any) {
		a, err := aggregate.Combine(rs, aggregate.Options{})
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		return string(b), v // v: the struct's members in any order
	}
	got, gotV := asJSON(typed)
	want, wantV := asJSON(decoded)
	if diff := cmp.Diff(wantV, gotV); diff != "" {
		t.Errorf("typed results aggregate to\n%s\nthe same decoded from JSON to\n%s\n(-decoded +typed):\n%s", got, want, diff)
	}
	// The tallies disagree on votes.yes (a 1, c 3) and tally.yes/tally.no, not on votes as a
	// whole, nor on voters, whose paths no two share.
	var fields []string
	for _, c := range aggregate.DetectConflicts(typed) {
		fields = append(fields, c.Field)
	}
	if w := []string{"tally.no", "tally.yes", "votes.yes"}; !slices.Equal(fields, w) {
		t.Errorf("conflicts at %q, want %q", fields, w)
	}
}
