package aggregate_test

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/aggregate"
	"github.com/troupehq/troupe/internal/jsonvalue"
)

// seed000Results is seed 000's sequential example — causal_impact, then gap_analyzer, then
// explainer, for "What caused the drop in NRx for Kisqali in Midwest?" — with gap_analyzer
// disagreeing with causal_impact on the primary driver.
func seed000Results() []*troupe.Result {
	return []*troupe.Result{
		result("causal_impact", map[string]any{
			"brand":          "Kisqali",
			"region":         "Midwest",
			"primary_driver": "access restrictions",
			"effect":         map[string]any{"kpi": "NRx", "change_pct": -12.5},
			"key_insights":   []any{"Prior-auth denials rose 18% in Q3", "Effect concentrated in Ohio"},
		}, conf(0.85), summary("NRx fell 12.5% after prior-auth denials rose"), took(1200), tokens(900), cost(0.012), doneAt(2)),
		result("gap_analyzer", map[string]any{
			"brand":          "Kisqali",
			"region":         "Midwest",
			"primary_driver": "competitor launch",
			"effect":         map[string]any{"kpi": "NRx", "change_pct": json.Number("-12.5")},
			"opportunities":  []string{"Ohio payer outreach"},
			"key_insights":   []string{"Effect concentrated in Ohio", "Ohio payer outreach closes 40% of the gap"},
		}, conf(0.7), summary("The largest gap is Ohio payer access"), took(800), tokens(600), cost(0.008), doneAt(3)),
		result("explainer", map[string]any{
			"explanation": "NRx for Kisqali in the Midwest fell 12.5%, mostly from prior-auth denials in Ohio.",
		}, conf(0.9), took(500), tokens(400), doneAt(4)),
	}
}

// TestSeed000Aggregation is seed 000's testing requirement 4, Aggregation: results combined
// correctly, conflicts detected, confidence calculated correctly.
func TestSeed000Aggregation(t *testing.T) {
	t.Run("results combined correctly", func(t *testing.T) {
		rs := seed000Results()
		got, err := aggregate.Combine(rs, aggregate.Options{})
		if err != nil {
			t.Fatal(err)
		}
		driver := troupe.Conflict{
			Field: "primary_driver",
			Values: []troupe.ConflictValue{
				cv("causal_impact", "access restrictions", 0.85),
				cv("gap_analyzer", "competitor launch", 0.7),
			},
			Resolved: "access restrictions",
			Winner:   "causal_impact",
			Reason:   "highest confidence 0.85 (causal_impact) vs 0.70 (gap_analyzer)",
		}
		insights := troupe.Conflict{
			Field: "key_insights",
			Values: []troupe.ConflictValue{
				cv("causal_impact", rs[0].AgentResult["key_insights"], 0.85),
				cv("gap_analyzer", rs[1].AgentResult["key_insights"], 0.7),
			},
			Resolved: rs[0].AgentResult["key_insights"],
			Winner:   "causal_impact",
			Reason:   "highest confidence 0.85 (causal_impact) vs 0.70 (gap_analyzer)",
		}
		conflicting, shared := 2.0, 6.0 // variables: computed at run time, as Combine does
		want := &troupe.Aggregation{
			AgentsExecuted: []string{"causal_impact", "gap_analyzer", "explainer"},
			ExecutionOrder: []string{"causal_impact", "gap_analyzer", "explainer"},
			CombinedResults: map[string]any{
				"causal_impact": rs[0].AgentResult,
				"gap_analyzer":  rs[1].AgentResult,
				"explainer":     rs[2].AgentResult,
			},
			OverallConfidence: 0.7,
			Synthesis:         "NRx for Kisqali in the Midwest fell 12.5%, mostly from prior-auth denials in Ohio.",
			KeyInsights: []string{
				"NRx fell 12.5% after prior-auth denials rose",
				"Prior-auth denials rose 18% in Q3",
				"Effect concentrated in Ohio",
				"The largest gap is Ohio payer access",
				"Ohio payer outreach closes 40% of the gap",
			},
			ConflictsDetected: []troupe.Conflict{insights, driver},
			// shared: brand, region, primary_driver, effect.kpi, effect.change_pct, key_insights
			ConsistencyScore:     1 - conflicting/shared,
			TotalExecutionTimeMS: 2500,
			TotalTokensUsed:      troupe.Ptr[int64](1900),
			TotalCostDollars:     troupe.Ptr(0.02),
			ResolutionStrategy:   "highest_confidence",
			Resolved: map[string]any{
				"primary_driver": "access restrictions",
				"key_insights":   rs[0].AgentResult["key_insights"],
			},
			Warnings: []string{},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Combine (-want +got):\n%s", diff)
		}
	})

	t.Run("conflicts detected", func(t *testing.T) {
		tests := []struct {
			name    string
			results []*troupe.Result
			want    []string
		}{
			{"seed example", seed000Results(), []string{"key_insights", "primary_driver"}},
			{"agreement is no conflict", []*troupe.Result{
				result("causal_impact", map[string]any{"region": "Midwest", "effect": map[string]any{"change_pct": -12.5}}),
				result("gap_analyzer", map[string]any{"region": "Midwest", "effect": map[string]any{"change_pct": -12.5}}),
			}, []string{}},
			{"fields only one agent has are no conflict", []*troupe.Result{
				result("causal_impact", map[string]any{"ate": -0.12}),
				result("gap_analyzer", map[string]any{"gap": 0.4}),
			}, []string{}},
			{"one agent alone cannot conflict", seed000Results()[:1], []string{}},
			{"three-way", []*troupe.Result{
				result("a", map[string]any{"x": 1}),
				result("b", map[string]any{"x": 1}),
				result("c", map[string]any{"x": 2}),
			}, []string{"x"}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				got := []string{}
				for _, c := range aggregate.DetectConflicts(tt.results) {
					got = append(got, c.Field)
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("conflict fields (-want +got):\n%s", diff)
				}
			})
		}
	})

	t.Run("confidence calculated correctly", func(t *testing.T) {
		tests := []struct {
			name     string
			results  []*troupe.Result
			want     float64
			warnings []string
		}{
			{"minimum of all agents", seed000Results(), 0.7, []string{}},
			{"single agent", seed000Results()[2:], 0.9, []string{}},
			{"agents without confidence are left out and named", []*troupe.Result{
				result("a", map[string]any{"x": 1}, conf(0.6)),
				result("b", map[string]any{"y": 1}),
				result("c", map[string]any{"z": 1}, conf(0.8)),
			}, 0.6, []string{"overall_confidence leaves out b, which reported no confidence"}},
			{"no agent reported confidence", []*troupe.Result{
				result("a", map[string]any{"x": 1}),
			}, 0, []string{"no agent reported confidence"}},
			{"failed agents do not lower it", []*troupe.Result{
				result("a", map[string]any{"x": 1}, conf(0.8)),
				result("b", nil, conf(0.1), status(troupe.StatusFailed)),
			}, 0.8, []string{"b: failed: model unavailable"}},
			{"nothing completed", nil, 0, []string{"no agent completed", "no agent reported confidence"}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				got, err := aggregate.Combine(tt.results, aggregate.Options{})
				if err != nil {
					t.Fatal(err)
				}
				if got.OverallConfidence != tt.want {
					t.Errorf("overall_confidence = %v, want %v", got.OverallConfidence, tt.want)
				}
				if diff := cmp.Diff(tt.warnings, got.Warnings); diff != "" {
					t.Errorf("warnings (-want +got):\n%s", diff)
				}
			})
		}
	})
}

func TestCombineConfidence(t *testing.T) {
	tests := []struct {
		name string
		cs   []float64
		want float64
	}{
		{"empty", nil, 0},
		{"one", []float64{0.4}, 0.4},
		{"minimum", []float64{0.9, 0.3, 0.7}, 0.3},
		{"zero counts", []float64{0.9, 0}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := aggregate.CombineConfidence(tt.cs); got != tt.want {
				t.Errorf("CombineConfidence(%v) = %v, want %v", tt.cs, got, tt.want)
			}
		})
	}
}

func TestCombineExcludesFailedResults(t *testing.T) {
	rs := []*troupe.Result{
		result("causal_impact", map[string]any{"driver": "access", "ate": -0.12}, conf(0.8), summary("Access drove it"), took(100), tokens(10), cost(0.5)),
		// A failed agent's partial output must not combine, conflict or add insights.
		result("gap_analyzer", map[string]any{"driver": "competitor", "key_insights": []string{"bogus"}},
			conf(0.9), summary("Partial"), status(troupe.StatusFailed), took(200), tokens(20), cost(0.25)),
		result("explainer", nil, status(troupe.StatusTimeout), took(300)),
		result("experiment_designer", nil, status(troupe.StatusCancelled), took(400), tokens(40)),
	}
	got, err := aggregate.Combine(rs, aggregate.Options{ExecutionOrder: []string{"causal_impact", "gap_analyzer", "explainer"}})
	if err != nil {
		t.Fatal(err)
	}
	want := &troupe.Aggregation{
		AgentsExecuted:       []string{"causal_impact"},
		ExecutionOrder:       []string{"causal_impact", "gap_analyzer", "explainer"},
		CombinedResults:      map[string]any{"causal_impact": rs[0].AgentResult},
		OverallConfidence:    0.8,
		Synthesis:            "causal_impact: Access drove it.",
		KeyInsights:          []string{"Access drove it"},
		ConflictsDetected:    []troupe.Conflict{},
		ConsistencyScore:     1,
		TotalExecutionTimeMS: 1000, // time, tokens and cost were spent whether or not the agent completed
		TotalTokensUsed:      troupe.Ptr[int64](70),
		TotalCostDollars:     troupe.Ptr(0.75),
		ResolutionStrategy:   "highest_confidence",
		Resolved:             map[string]any{},
		Warnings: []string{
			"gap_analyzer: failed: model unavailable",
			"explainer: timeout",
			"experiment_designer: cancelled",
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Combine (-want +got):\n%s", diff)
	}
	if got := aggregate.DetectConflicts(rs); len(got) != 0 {
		t.Errorf("DetectConflicts counted a failed result: %v", got)
	}
}

func TestCombineOptionsAndEdges(t *testing.T) {
	tests := []struct {
		name  string
		rs    []*troupe.Result
		o     aggregate.Options
		check func(t *testing.T, a *troupe.Aggregation)
	}{
		{
			name: "wall-clock time overrides the sum",
			rs:   []*troupe.Result{result("a", map[string]any{"x": 1}, took(700)), result("b", map[string]any{"y": 1}, took(900))},
			o:    aggregate.Options{TotalExecutionTimeMS: 950},
			check: func(t *testing.T, a *troupe.Aggregation) {
				if a.TotalExecutionTimeMS != 950 {
					t.Errorf("total_execution_time_ms = %d, want 950", a.TotalExecutionTimeMS)
				}
			},
		},
		{
			name: "no tokens or cost reported stays nil",
			rs:   []*troupe.Result{result("a", map[string]any{"x": 1})},
			check: func(t *testing.T, a *troupe.Aggregation) {
				if a.TotalTokensUsed != nil || a.TotalCostDollars != nil {
					t.Errorf("tokens %v, cost %v; want nil, nil", a.TotalTokensUsed, a.TotalCostDollars)
				}
			},
		},
		{
			name: "an agent that completed twice contributes its last result",
			rs: []*troupe.Result{
				result("critic", map[string]any{"verdict": "revise"}, conf(0.4)),
				result("writer", map[string]any{"draft": 2}, conf(0.9)),
				result("critic", map[string]any{"verdict": "accept"}, conf(0.8)),
			},
			check: func(t *testing.T, a *troupe.Aggregation) {
				want := map[string]any{"critic": map[string]any{"verdict": "accept"}, "writer": map[string]any{"draft": 2}}
				if diff := cmp.Diff(want, a.CombinedResults); diff != "" {
					t.Errorf("combined_results (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff([]string{"writer", "critic"}, a.AgentsExecuted); diff != "" {
					t.Errorf("agents_executed (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff([]string{"critic", "writer", "critic"}, a.ExecutionOrder); diff != "" {
					t.Errorf("execution_order (-want +got):\n%s", diff)
				}
				if a.OverallConfidence != 0.8 || len(a.ConflictsDetected) != 0 {
					t.Errorf("confidence %v, conflicts %v; want 0.8, none", a.OverallConfidence, a.ConflictsDetected)
				}
				if diff := cmp.Diff([]string{"critic: completed again; the later result is combined"}, a.Warnings); diff != "" {
					t.Errorf("warnings (-want +got):\n%s", diff)
				}
			},
		},
		{
			name: "nil results are skipped and named",
			rs:   []*troupe.Result{nil, result("a", map[string]any{"x": 1}, conf(1))},
			check: func(t *testing.T, a *troupe.Aggregation) {
				if diff := cmp.Diff([]string{"result 0 is nil"}, a.Warnings); diff != "" {
					t.Errorf("warnings (-want +got):\n%s", diff)
				}
			},
		},
		{
			name: "completed without agent_result combines as an empty object",
			rs:   []*troupe.Result{result("a", nil, conf(1))},
			check: func(t *testing.T, a *troupe.Aggregation) {
				if diff := cmp.Diff(map[string]any{"a": map[string]any{}}, a.CombinedResults); diff != "" {
					t.Errorf("combined_results (-want +got):\n%s", diff)
				}
			},
		},
		{
			name: "strategy is recorded",
			rs:   seed000Results(),
			o:    aggregate.Options{Strategy: aggregate.MostRecent},
			check: func(t *testing.T, a *troupe.Aggregation) {
				if a.ResolutionStrategy != "most_recent" || a.Resolved["primary_driver"] != "competitor launch" {
					t.Errorf("strategy %q resolved %v", a.ResolutionStrategy, a.Resolved)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := aggregate.Combine(tt.rs, tt.o)
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, a)
		})
	}
}

func TestCombineErrors(t *testing.T) {
	tests := []struct {
		name string
		rs   []*troupe.Result
		o    aggregate.Options
		want error
	}{
		{"unknown strategy", seed000Results(), aggregate.Options{Strategy: "loudest"}, aggregate.ErrUnknownStrategy},
		{"confidence above 1", []*troupe.Result{result("a", map[string]any{"x": 1}, conf(1.5))}, aggregate.Options{}, troupe.ErrInvalidResult},
		{"confidence NaN", []*troupe.Result{result("a", map[string]any{"x": 1}, conf(math.NaN()))}, aggregate.Options{}, troupe.ErrInvalidResult},
		{"cost infinite", []*troupe.Result{result("a", map[string]any{"x": 1}, cost(math.Inf(1)))}, aggregate.Options{}, troupe.ErrInvalidResult},
		// Each is finite; their sum is not, and JSON could not encode it.
		{"costs adding up to infinity", []*troupe.Result{result("a", map[string]any{"x": 1}, cost(1e308)), result("b", nil, status(troupe.StatusFailed), cost(1e308))}, aggregate.Options{}, troupe.ErrInvalidResult},
		{"cost negative on a failed result", []*troupe.Result{result("a", nil, status(troupe.StatusFailed), cost(-1))}, aggregate.Options{}, troupe.ErrInvalidResult},
		// JSON has no NaN: the aggregation could not be encoded.
		{"NaN in agent_result", []*troupe.Result{result("a", map[string]any{"x": map[string]any{"y": []any{1, math.NaN()}}})}, aggregate.Options{}, troupe.ErrInvalidResult},
		{"infinity in agent_result", []*troupe.Result{result("a", map[string]any{"x": math.Inf(-1)})}, aggregate.Options{}, troupe.ErrInvalidResult},
		{"NaN in a later agent's result", []*troupe.Result{result("a", map[string]any{"x": 1}), result("b", map[string]any{"x": []float64{1, math.NaN()}})}, aggregate.Options{}, troupe.ErrInvalidResult},
		// Containers Go agents build results with encode as map[string]any and []any do.
		{"NaN in a typed map", []*troupe.Result{result("a", map[string]any{"scores": map[string]float64{"x": math.NaN()}})}, aggregate.Options{}, troupe.ErrInvalidResult},
		{"infinity in a matrix", []*troupe.Result{result("a", map[string]any{"m": [][]float64{{1}, {math.Inf(1)}}})}, aggregate.Options{}, troupe.ErrInvalidResult},
		// The walk that finds them keeps one spelling of a path per result; the other still counts.
		{"NaN in the spelling of a path not kept", []*troupe.Result{result("a", map[string]any{"x.y": 1, "x": map[string]any{"y": math.NaN()}})}, aggregate.Options{}, troupe.ErrInvalidResult},
		// Its later result is combined; the superseded one is still refused.
		{"NaN in a superseded result", []*troupe.Result{result("a", map[string]any{"x": math.NaN()}), result("a", map[string]any{"x": 1})}, aggregate.Options{}, troupe.ErrInvalidResult},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := aggregate.Combine(tt.rs, tt.o)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Combine error = %v, want %v", err, tt.want)
			}
			if a != nil {
				t.Errorf("Combine returned %+v with its error", a)
			}
			if !strings.HasPrefix(err.Error(), "aggregate: ") {
				t.Errorf("error %q does not start with the package name", err)
			}
		})
	}
}

// TestCombineNonFiniteNamesTheAgentAndPath: the error says whose result and where.
func TestCombineNonFiniteNamesTheAgentAndPath(t *testing.T) {
	rs := []*troupe.Result{result("a", map[string]any{"x": 1}), result("b", map[string]any{"x": 2, "m": map[string]any{"ci": []any{0.1, math.Inf(1)}}})}
	_, err := aggregate.Combine(rs, aggregate.Options{})
	if err == nil || !strings.Contains(err.Error(), "b: agent_result.m.ci[1] is +Inf") {
		t.Fatalf("Combine error = %v, want it to name b and agent_result.m.ci[1]", err)
	}
}

// TestCombineLooksAsDeepAsFinite: Combine refuses a NaN exactly where jsonvalue.Finite finds
// one, no deeper, so a result the engine accepted is one Combine accepts.
func TestCombineLooksAsDeepAsFinite(t *testing.T) {
	nest := func(levels int) map[string]any {
		var v any = math.NaN()
		for range levels {
			v = map[string]any{"k": v}
		}
		return v.(map[string]any)
	}
	for _, levels := range []int{jsonvalue.MaxDepth - 1, jsonvalue.MaxDepth, jsonvalue.MaxDepth + 1, jsonvalue.MaxDepth + 2} {
		m := nest(levels)
		_, err := aggregate.Combine([]*troupe.Result{result("a", m)}, aggregate.Options{})
		if finite := jsonvalue.Finite(m); finite != (err == nil) {
			t.Errorf("NaN %d maps down: Finite = %v, Combine error = %v", levels, finite, err)
		}
	}
}

func TestCombineEncodesEmptyListsAsArrays(t *testing.T) {
	a, err := aggregate.Combine(nil, aggregate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{`"agents_executed":[]`, `"execution_order":[]`, `"combined_results":{}`, `"key_insights":[]`, `"conflicts_detected":[]`} {
		if !strings.Contains(string(data), field) {
			t.Errorf("%s does not contain %s", data, field)
		}
	}
}

// TestCombineDeterministic builds the same results with maps filled in opposite orders and
// checks that Combine encodes to the same bytes every time, for every strategy.
func TestCombineDeterministic(t *testing.T) {
	build := func(reverse bool) []*troupe.Result {
		fill := func(kv ...any) map[string]any {
			m := map[string]any{}
			for i := range len(kv) / 2 {
				j := i
				if reverse {
					j = len(kv)/2 - 1 - i
				}
				m[kv[2*j].(string)] = kv[2*j+1]
			}
			return m
		}
		var rs []*troupe.Result
		for i, agent := range []string{"causal_impact", "gap_analyzer", "heterogeneous_optimizer", "explainer", "drift_monitor"} {
			ar := fill(
				"brand", "Kisqali",
				"driver", []string{"access", "competitor", "access", "supply", "competitor"}[i],
				"score", []any{1, 1.0, json.Number("2"), int64(2), 3}[i],
				"effect", fill("size", float64(i%2), "kpi", "NRx", "ci", []any{-0.2, float64(i)}),
				"segments", fill("ohio", fill("gap", i%3), "iowa", fill("gap", 0)),
				"key_insights", []any{"shared insight", agent + " insight"},
			)
			if agent == "explainer" {
				delete(ar, "segments")
			}
			rs = append(rs, result(agent, ar, conf(0.5+float64(i%3)/10), summary(agent+" summary"), doneAt(i%2), tokens(int64(10*i))))
		}
		rs = append(rs, result("gap_analyzer", nil, status(troupe.StatusTimeout)))
		return rs
	}
	for _, s := range []aggregate.Strategy{aggregate.HighestConfidence, aggregate.MostRecent, aggregate.WeightedVote} {
		t.Run(string(s), func(t *testing.T) {
			var first []byte
			for i := range 20 {
				a, err := aggregate.Combine(build(i%2 == 1), aggregate.Options{Strategy: s})
				if err != nil {
					t.Fatal(err)
				}
				data, err := json.Marshal(a)
				if err != nil {
					t.Fatal(err)
				}
				if first == nil {
					first = data
					continue
				}
				if diff := cmp.Diff(string(first), string(data)); diff != "" {
					t.Fatalf("run %d encodes differently (-first +this):\n%s", i, diff)
				}
			}
		})
	}
}

// Where a literal dotted key and nested keys spell one path, the nested spelling wins, as a
// walk over sorted keys finds it first; also deeper than the packed key lengths reach (8
// levels) and for keys longer than 255 bytes, where the keys themselves are compared.
func TestCombineDottedKeysBeyondRank(t *testing.T) {
	long := strings.Repeat("k", 300)
	deep := func(leafKey string, nested bool) map[string]any {
		// a.a.a.a.a.a.a.a (8 levels), then either {"k.z": "literal"} or {"k": {"z": "nested"}}.
		var m map[string]any
		if nested {
			m = map[string]any{leafKey: map[string]any{"z": "nested"}}
		} else {
			m = map[string]any{leafKey + ".z": "literal"}
		}
		return m
	}
	tests := []struct {
		name string
		ar   func() map[string]any
		path string
	}{
		{"9 levels deep", func() map[string]any {
			inner := deep("k", true)
			for k, v := range deep("k", false) {
				inner[k] = v
			}
			m := inner
			for range 8 {
				m = map[string]any{"a": m}
			}
			return m
		}, "a.a.a.a.a.a.a.a.k.z"},
		{"a 300-byte key", func() map[string]any {
			m := deep(long, true)
			for k, v := range deep(long, false) {
				m[k] = v
			}
			return m
		}, long + ".z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seen := map[string]bool{}
			for range 100 {
				rs := []*troupe.Result{result("a", tt.ar()), result("b", map[string]any{"other": 1})}
				// b agrees on nothing at the path; give it the literal's value there so that
				// the path is shared, and a conflict names a's value.
				rs[1].AgentResult = map[string]any{tt.path: "b's"}
				agg, err := aggregate.Combine(rs, aggregate.Options{})
				if err != nil {
					t.Fatal(err)
				}
				var got any
				for _, c := range agg.ConflictsDetected {
					if c.Field == tt.path {
						got = c.Values[0].Value
					}
				}
				if got != "nested" {
					t.Fatalf("a's value at %s = %v, want the nested spelling's", tt.path, got)
				}
				data, _ := json.Marshal(agg)
				seen[string(data)] = true
			}
			if len(seen) != 1 {
				t.Errorf("%d different encodings of one input", len(seen))
			}
		})
	}
}

// A conflict at a path holds the disagreements under it: the resolved values never say one
// thing at a path and another under it, and one disagreement is counted once.
func TestCombineParentConflictHoldsChildren(t *testing.T) {
	rs := []*troupe.Result{
		result("a", map[string]any{"y": map[string]any{"z": "p"}, "w": 1}, conf(0.5)),
		result("b", map[string]any{"y": map[string]any{"z": "q"}, "w": 1}, conf(0.6)),
		result("c", map[string]any{"y": "s", "w": 1}, conf(0.9)),
	}
	for _, s := range []aggregate.Strategy{aggregate.HighestConfidence, aggregate.MostRecent, aggregate.WeightedVote} {
		t.Run(string(s), func(t *testing.T) {
			agg, err := aggregate.Combine(rs, aggregate.Options{Strategy: s})
			if err != nil {
				t.Fatal(err)
			}
			if len(agg.ConflictsDetected) != 1 || agg.ConflictsDetected[0].Field != "y" {
				t.Fatalf("conflicts %+v, want one, at y", agg.ConflictsDetected)
			}
			if _, ok := agg.Resolved["y.z"]; ok || len(agg.Resolved) != 1 {
				t.Errorf("resolved %v, want y alone", agg.Resolved)
			}
			// Shared paths: y and w; y.z is part of y's conflict.
			if agg.ConsistencyScore != 0.5 {
				t.Errorf("consistency %v, want 0.5", agg.ConsistencyScore)
			}
		})
	}
}
