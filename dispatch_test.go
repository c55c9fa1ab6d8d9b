package troupe_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/troupehq/troupe"
)

// seedAgents is seed 000's VALID_AGENTS.
var seedAgents = []string{
	"scope_definer", "data_preparer", "model_selector", "model_trainer",
	"feature_analyzer", "model_deployer", "observability_connector",
	"causal_impact", "gap_analyzer", "heterogeneous_optimizer",
	"experiment_designer", "drift_monitor", "health_score",
	"prediction_synthesizer", "resource_optimizer",
	"explainer", "feedback_learner",
}

var nopAgent = troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
	return &troupe.Result{AgentResult: map[string]any{"ok": true}}, nil
})

// seedRegistry registers seed 000's seventeen agents, so the registry plays VALID_AGENTS.
func seedRegistry(tb testing.TB) *troupe.Registry {
	tb.Helper()
	reg := troupe.NewRegistry()
	for _, name := range seedAgents {
		if err := reg.Add(name, nopAgent); err != nil {
			tb.Fatalf("Add(%q): %v", name, err)
		}
	}
	return reg
}

// problemFields lists the fields of every problem in err, sorted; nil when err has none.
func problemFields(err error) []string {
	var out []string
	var ves troupe.ValidationErrors
	var ve *troupe.ValidationError
	switch {
	case errors.As(err, &ves):
		for _, e := range ves {
			out = append(out, e.Field)
		}
	case errors.As(err, &ve):
		out = append(out, ve.Field)
	}
	slices.Sort(out)
	return out
}

// problemFor returns the problem of err about field, or nil.
func problemFor(err error, field string) *troupe.ValidationError {
	var ves troupe.ValidationErrors
	if errors.As(err, &ves) {
		for _, e := range ves {
			if e.Field == field {
				return e
			}
		}
		return nil
	}
	var ve *troupe.ValidationError
	if errors.As(err, &ve) && ve.Field == field {
		return ve
	}
	return nil
}

// checkProblems fails t unless err reports exactly the fields want (none when want is empty)
// and, when sentinel is set, matches it with errors.Is.
func checkProblems(t *testing.T, err error, want []string, sentinel error) {
	t.Helper()
	if len(want) == 0 {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("no error, want problems with %q", want)
	}
	want = slices.Sorted(slices.Values(want))
	if diff := cmp.Diff(want, problemFields(err)); diff != "" {
		t.Errorf("fields with problems (-want +got):\n%s\nerror: %v", diff, err)
	}
	if sentinel != nil && !errors.Is(err, sentinel) {
		t.Errorf("errors.Is(err, %v) = false; err: %v", sentinel, err)
	}
}

// dispatchOpts compares dispatches by their wire fields. Omitted-when-empty fields do not
// survive JSON as empty maps, which is the point of omitempty, so nil and empty are equal.
var dispatchOpts = cmp.Options{cmpopts.IgnoreUnexported(troupe.Dispatch{}), cmpopts.EquateEmpty()}

var decodeNow = time.Date(2025, 12, 30, 9, 0, 0, 0, time.UTC)

// dispatchDoc is seed 000's first sequential example as JSON, with a dispatch id that matches
// the seed's own regex (the seed's "disp_abc123" does not).
func dispatchDoc() map[string]any {
	return map[string]any{
		"dispatch_id":     "disp_abc123abc123abcd",
		"session_id":      "sess_xyz",
		"query_id":        "qry_789",
		"target_agent":    "causal_impact",
		"dispatch_reason": "Causal intent detected",
		"query":           "What caused the drop in NRx for Kisqali in Midwest?",
		"parsed_query": map[string]any{
			"intent":      "causal",
			"brands":      []any{"Kisqali"},
			"kpis":        []any{"NRx"},
			"regions":     []any{"Midwest"},
			"time_period": "recent",
		},
		"execution_mode":   "sequential",
		"upstream_results": []any{},
	}
}

func decodeDispatchDoc(t *testing.T, reg troupe.AgentSet, edit func(doc map[string]any)) (*troupe.Dispatch, error) {
	t.Helper()
	doc := dispatchDoc()
	if edit != nil {
		edit(doc)
	}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return troupe.DecodeDispatch(b, reg, decodeNow)
}

// decodeDispatchRaw decodes the seed example with extra raw JSON members spliced in, for
// values a map cannot express (wrong types are fine, but this keeps them literal).
func decodeDispatchRaw(t *testing.T, reg troupe.AgentSet, drop string, members ...string) (*troupe.Dispatch, error) {
	t.Helper()
	doc := dispatchDoc()
	delete(doc, drop)
	for _, m := range members {
		k, _, _ := strings.Cut(m, ":")
		delete(doc, strings.Trim(k, `"`))
	}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	if len(members) > 0 {
		b = append(b[:len(b)-1], ","+strings.Join(members, ",")+"}"...)
	}
	return troupe.DecodeDispatch(b, reg, decodeNow)
}

func TestSeed000DispatchValidation(t *testing.T) {
	reg := seedRegistry(t)

	t.Run("seed example is valid", func(t *testing.T) {
		d, err := decodeDispatchDoc(t, reg, nil)
		if err != nil {
			t.Fatalf("DecodeDispatch: %v", err)
		}
		if err := d.Validate(reg); err != nil {
			t.Errorf("Validate of decoded dispatch: %v", err)
		}
	})

	t.Run("required fields", func(t *testing.T) {
		for _, field := range []string{
			"dispatch_id", "session_id", "query_id", "target_agent", "dispatch_reason", "query", "parsed_query",
		} {
			t.Run("missing "+field, func(t *testing.T) {
				_, err := decodeDispatchDoc(t, reg, func(doc map[string]any) { delete(doc, field) })
				checkProblems(t, err, []string{field}, troupe.ErrInvalidDispatch)
				if p := problemFor(err, field); p != nil && p.Object != "dispatch" {
					t.Errorf("Object = %q, want dispatch", p.Object)
				}
			})
			t.Run("null "+field, func(t *testing.T) {
				_, err := decodeDispatchDoc(t, reg, func(doc map[string]any) { doc[field] = nil })
				checkProblems(t, err, []string{field}, troupe.ErrInvalidDispatch)
			})
			t.Run("empty "+field, func(t *testing.T) {
				if field == "parsed_query" {
					t.Skip("an empty parsed_query is a dict, which the seed allows")
				}
				// 000: pydantic's str accepts "" and validate_dispatch_request looks only at
				// target_agent (in VALID_AGENTS) and the id's regex.
				var want []string
				if field == "dispatch_id" || field == "target_agent" {
					want = []string{field}
				}
				_, err := decodeDispatchDoc(t, reg, func(doc map[string]any) { doc[field] = "" })
				checkProblems(t, err, want, troupe.ErrInvalidDispatch)
			})
		}
	})

	t.Run("Validate on a built dispatch", func(t *testing.T) {
		d := troupe.NewDispatch()
		checkProblems(t, d.Validate(reg), []string{
			"dispatch_id", "target_agent", "parsed_query", "dispatched_at",
		}, troupe.ErrInvalidDispatch)
	})

	t.Run("target agent", func(t *testing.T) {
		tests := []struct {
			name     string
			agents   troupe.AgentSet
			target   string
			want     []string
			sentinel error
		}{
			{"every seed agent is valid", reg, "", nil, nil},
			{"unknown agent", reg, "astrologer", []string{"target_agent"}, troupe.ErrUnknownAgent},
			{"case matters", reg, "Causal_Impact", []string{"target_agent"}, troupe.ErrUnknownAgent},
			{"nil agent set skips the check", nil, "astrologer", nil, nil},
			{"empty registry knows nobody", troupe.NewRegistry(), "causal_impact", []string{"target_agent"}, troupe.ErrUnknownAgent},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				targets := []string{tt.target}
				if tt.target == "" {
					targets = seedAgents
				}
				for _, target := range targets {
					_, err := decodeDispatchDoc(t, tt.agents, func(doc map[string]any) { doc["target_agent"] = target })
					checkProblems(t, err, tt.want, tt.sentinel)
					if tt.want != nil && err != nil && !strings.Contains(err.Error(), target) {
						t.Errorf("error %q does not name the agent %q", err, target)
					}
				}
			})
		}
	})

	t.Run("dependencies", func(t *testing.T) {
		tests := []struct {
			name      string
			dependsOn any
			want      []string
		}{
			{"absent", nil, nil},
			{"empty", []any{}, nil},
			{"known", []any{"causal_impact", "gap_analyzer"}, nil},
			{"one unknown", []any{"causal_impact", "oracle"}, []string{"depends_on[1]"}},
			{"two unknown", []any{"oracle", "causal_impact", ""}, []string{"depends_on[0]", "depends_on[2]"}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				d, err := decodeDispatchDoc(t, reg, func(doc map[string]any) {
					if tt.dependsOn != nil {
						doc["depends_on"] = tt.dependsOn
					}
				})
				var sentinel error
				if tt.want != nil {
					sentinel = troupe.ErrUnknownAgent
				}
				checkProblems(t, err, tt.want, sentinel)
				if err == nil && tt.dependsOn != nil && len(d.DependsOn) != len(tt.dependsOn.([]any)) {
					t.Errorf("DependsOn = %q", d.DependsOn)
				}
			})
		}
		// Without an agent set names are not checked, but "" names no agent whatever the set
		// (as for target_agent).
		t.Run("nil agent set", func(t *testing.T) {
			_, err := decodeDispatchDoc(t, nil, func(doc map[string]any) { doc["depends_on"] = []any{"oracle", ""} })
			checkProblems(t, err, []string{"depends_on[1]"}, troupe.ErrUnknownAgent)
		})
	})

	t.Run("timeout and cost must be positive", func(t *testing.T) {
		tests := []struct {
			field string
			value float64
			ok    bool
		}{
			{"timeout_seconds", 30, true},
			{"timeout_seconds", 0.001, true},
			{"timeout_seconds", 0, false},
			{"timeout_seconds", -1, false},
			{"max_cost_dollars", 0.25, true},
			{"max_cost_dollars", 0, false},
			{"max_cost_dollars", -5, false},
		}
		for _, tt := range tests {
			t.Run(fmt.Sprintf("%s=%v", tt.field, tt.value), func(t *testing.T) {
				_, err := decodeDispatchDoc(t, reg, func(doc map[string]any) { doc[tt.field] = tt.value })
				var want []string
				if !tt.ok {
					want = []string{tt.field}
				}
				checkProblems(t, err, want, troupe.ErrInvalidDispatch)
			})
		}
		// JSON cannot carry these; a Dispatch built in Go can.
		for _, v := range []float64{math.Inf(1), math.Inf(-1), math.NaN()} {
			t.Run(fmt.Sprint(v), func(t *testing.T) {
				d, err := decodeDispatchDoc(t, reg, func(map[string]any) {})
				if err != nil {
					t.Fatal(err)
				}
				d.TimeoutSeconds, d.MaxCostDollars = troupe.Ptr(v), troupe.Ptr(v)
				checkProblems(t, d.Validate(reg), []string{"timeout_seconds", "max_cost_dollars"}, troupe.ErrInvalidDispatch)
			})
		}
	})

	t.Run("dispatch_id pattern", func(t *testing.T) {
		tests := []struct {
			id string
			ok bool
		}{
			{"disp_0123456789abcdef", true},
			{"disp_aaaaaaaaaaaaaaaa", true},
			{"disp_0000000000000000", true},
			{troupe.NewDispatchID(42), true},
			{"disp_abc123", false}, // seed 000's own example is too short for its regex
			{"disp_0123456789ABCDEF", false},
			{"DISP_0123456789abcdef", false},
			{"disp-0123456789abcdef", false},
			{"disp_0123456789abcde", false},
			{"disp_0123456789abcdefa", false},
			{"disp_0123456789abcde_", false},
			{"disp_0123456789abcdé", false},
			{" disp_0123456789abcdef", false},
			{"disp_0123456789abcdef\n", false},
			{"dispatch_0123456789ab", false},
		}
		for _, tt := range tests {
			t.Run(fmt.Sprintf("%q", tt.id), func(t *testing.T) {
				if got := troupe.IsDispatchID(tt.id); got != tt.ok {
					t.Errorf("IsDispatchID = %v, want %v", got, tt.ok)
				}
				_, err := decodeDispatchDoc(t, reg, func(doc map[string]any) { doc["dispatch_id"] = tt.id })
				var want []string
				if !tt.ok {
					want = []string{"dispatch_id"}
				}
				checkProblems(t, err, want, troupe.ErrInvalidDispatch)
			})
		}
	})

	t.Run("enumerations", func(t *testing.T) {
		tests := []struct {
			field, value string
			ok           bool
		}{
			{"priority", "low", true},
			{"priority", "medium", true},
			{"priority", "high", true},
			{"priority", "critical", true},
			{"priority", "urgent", false},
			{"priority", "HIGH", false},
			{"priority", "", false},
			{"execution_mode", "sequential", true},
			{"execution_mode", "parallel", true},
			{"execution_mode", "concurrent", false},
			{"execution_mode", "", false},
		}
		for _, tt := range tests {
			t.Run(tt.field+"="+tt.value, func(t *testing.T) {
				_, err := decodeDispatchDoc(t, reg, func(doc map[string]any) { doc[tt.field] = tt.value })
				var want []string
				if !tt.ok {
					want = []string{tt.field}
				}
				checkProblems(t, err, want, troupe.ErrInvalidDispatch)
			})
		}
	})

	t.Run("defaults", func(t *testing.T) {
		given := time.Date(2025, 12, 18, 8, 30, 0, 0, time.UTC)
		tests := []struct {
			name string
			edit func(doc map[string]any)
			want func(d *troupe.Dispatch) // sets the expected non-default fields
		}{
			{
				name: "absent fields take seed defaults",
				edit: func(doc map[string]any) {
					delete(doc, "execution_mode")
					delete(doc, "upstream_results")
				},
				want: func(d *troupe.Dispatch) {},
			},
			{
				name: "given values win",
				edit: func(doc map[string]any) {
					doc["priority"] = "critical"
					doc["execution_mode"] = "parallel"
					doc["collect_signals"] = false
					doc["dispatched_at"] = given.Format(time.RFC3339)
				},
				want: func(d *troupe.Dispatch) {
					d.Priority = troupe.PriorityCritical
					d.ExecutionMode = troupe.Parallel
					d.CollectSignals = false
					d.DispatchedAt = given
				},
			},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				got, err := decodeDispatchDoc(t, reg, tt.edit)
				if err != nil {
					t.Fatalf("DecodeDispatch: %v", err)
				}
				want := &troupe.Dispatch{
					DispatchID:     "disp_abc123abc123abcd",
					SessionID:      "sess_xyz",
					QueryID:        "qry_789",
					TargetAgent:    "causal_impact",
					DispatchReason: "Causal intent detected",
					Priority:       troupe.PriorityMedium,
					Query:          "What caused the drop in NRx for Kisqali in Midwest?",
					ParsedQuery: map[string]any{
						"intent": "causal", "brands": []any{"Kisqali"}, "kpis": []any{"NRx"},
						"regions": []any{"Midwest"}, "time_period": "recent",
					},
					ExecutionMode:  troupe.Sequential,
					DispatchedAt:   decodeNow,
					CollectSignals: true,
				}
				tt.want(want)
				if diff := cmp.Diff(want, got, dispatchOpts); diff != "" {
					t.Errorf("decoded dispatch (-want +got):\n%s", diff)
				}
			})
		}
		t.Run("NewDispatch", func(t *testing.T) {
			d := troupe.NewDispatch()
			if d.Priority != troupe.PriorityMedium || d.ExecutionMode != troupe.Sequential || !d.CollectSignals {
				t.Errorf("NewDispatch() = priority %q, mode %q, collect_signals %v; want medium, sequential, true",
					d.Priority, d.ExecutionMode, d.CollectSignals)
			}
		})
	})

	t.Run("wrong JSON types name the field", func(t *testing.T) {
		tests := []struct {
			member string
			field  string
		}{
			{`"session_id":7`, "session_id"},
			{`"target_agent":["causal_impact"]`, "target_agent"},
			{`"priority":5`, "priority"},
			{`"parsed_query":"causal"`, "parsed_query"},
			{`"parsed_query":[1,2]`, "parsed_query"},
			{`"depends_on":"causal_impact"`, "depends_on"},
			{`"timeout_seconds":"30"`, "timeout_seconds"},
			{`"max_cost_dollars":true`, "max_cost_dollars"},
			{`"collect_signals":"yes"`, "collect_signals"},
			{`"upstream_results":{"agent":"x"}`, "upstream_results"},
			{`"upstream_results":[{"agent":5,"result":{}}]`, "upstream_results.agent"},
			{`"optimized_prompts":{"sig":1}`, "optimized_prompts"},
			{`"dispatched_at":5`, "dispatched_at"},
			{`"dispatched_at":"yesterday"`, "dispatched_at"},
			// Defaulted, not Optional: pydantic refuses None.
			{`"priority":null`, "priority"},
			{`"execution_mode":null`, "execution_mode"},
			{`"upstream_results":null`, "upstream_results"},
			{`"depends_on":null`, "depends_on"},
			{`"dispatched_at":null`, "dispatched_at"},
			{`"collect_signals":null`, "collect_signals"},
		}
		for _, tt := range tests {
			t.Run(tt.member, func(t *testing.T) {
				_, err := decodeDispatchRaw(t, reg, "", tt.member)
				if err == nil {
					t.Fatal("no error")
				}
				if problemFor(err, tt.field) == nil {
					t.Errorf("error does not name field %q: %#v", tt.field, err)
				}
			})
		}
	})

	t.Run("not an object", func(t *testing.T) {
		for _, in := range []string{``, `null`, `[]`, `"dispatch"`, `{`, `{"dispatch_id":}`} {
			t.Run(fmt.Sprintf("%q", in), func(t *testing.T) {
				_, err := troupe.DecodeDispatch([]byte(in), reg, decodeNow)
				var ve *troupe.ValidationError
				if !errors.As(err, &ve) {
					t.Fatalf("err = %v, want a *ValidationError", err)
				}
			})
		}
	})

	t.Run("every problem is reported", func(t *testing.T) {
		tests := []struct {
			name    string
			drop    string
			members []string
			want    []string
		}{
			{
				name:    "rule violations",
				drop:    "session_id",
				members: []string{`"priority":"urgent"`, `"timeout_seconds":-1`, `"max_cost_dollars":0`, `"depends_on":["oracle"]`, `"target_agent":"astrologer"`, `"dispatch_id":"disp_abc123"`},
				want:    []string{"session_id", "priority", "timeout_seconds", "max_cost_dollars", "depends_on[0]", "target_agent", "dispatch_id"},
			},
			{
				name:    "empty object",
				members: nil,
				drop:    "*",
				want:    []string{"dispatch_id", "session_id", "query_id", "target_agent", "dispatch_reason", "query", "parsed_query"},
			},
			{
				// DecodeDispatch promises to report missing fields and wrongly typed fields
				// together; a type error must not hide the other problems.
				name:    "wrong type and missing field",
				drop:    "query_id",
				members: []string{`"timeout_seconds":"30"`, `"priority":"urgent"`},
				want:    []string{"query_id", "timeout_seconds", "priority"},
			},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				var err error
				if tt.drop == "*" {
					_, err = troupe.DecodeDispatch([]byte(`{}`), reg, decodeNow)
				} else {
					_, err = decodeDispatchRaw(t, reg, tt.drop, tt.members...)
				}
				checkProblems(t, err, tt.want, nil)
			})
		}
	})
}

func TestDispatchJSONFieldNames(t *testing.T) {
	// Every field populated, so omitempty hides nothing: the key set is the wire contract.
	d := &troupe.Dispatch{
		DispatchID:       troupe.NewDispatchID(1),
		SessionID:        "s",
		QueryID:          "q",
		TargetAgent:      "gap_analyzer",
		DispatchReason:   "r",
		Priority:         troupe.PriorityHigh,
		Query:            "q?",
		ParsedQuery:      map[string]any{"intent": "causal"},
		RAGContext:       map[string]any{"docs": 1},
		ExecutionMode:    troupe.Parallel,
		UpstreamResults:  []troupe.UpstreamResult{{Agent: "causal_impact", Result: map[string]any{"x": 1}}},
		DependsOn:        []string{"causal_impact"},
		TimeoutSeconds:   troupe.Ptr(30.0),
		MaxCostDollars:   troupe.Ptr(1.5),
		DispatchedAt:     decodeNow,
		UserContext:      map[string]any{"role": "analyst"},
		OptimizedPrompts: map[string]string{"sig": "prompt"},
		CollectSignals:   true,
		SignalSignature:  troupe.Ptr("CausalSignature"),
	}
	want := []string{
		// identification
		"dispatch_id", "session_id", "query_id",
		// routing
		"target_agent", "dispatch_reason", "priority",
		// input data
		"query", "parsed_query", "rag_context",
		// execution context
		"execution_mode", "upstream_results", "depends_on",
		// constraints
		"timeout_seconds", "max_cost_dollars",
		// metadata
		"dispatched_at", "user_context",
		// DSPy context
		"optimized_prompts", "collect_signals", "signal_signature",
	}
	checkJSONKeys(t, d, want)
}

// checkJSONKeys fails t unless v marshals to an object with exactly the keys want.
func checkJSONKeys(t *testing.T, v any, want []string) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	got := slices.Sorted(maps.Keys(m))
	if diff := cmp.Diff(slices.Sorted(slices.Values(want)), got); diff != "" {
		t.Errorf("JSON keys (-want +got):\n%s", diff)
	}
}

func TestNewDispatchID(t *testing.T) {
	inputs := []uint64{0, 1, 35, 36, 37, 1 << 32, 1<<63 - 1, 1 << 63, ^uint64(0), ^uint64(0) - 1}
	for i := range uint64(2000) {
		inputs = append(inputs, i, i*0x9e3779b97f4a7c15)
	}
	seen := make(map[string]uint64)
	for _, x := range inputs {
		id := troupe.NewDispatchID(x)
		if !troupe.IsDispatchID(id) {
			t.Fatalf("NewDispatchID(%d) = %q does not match ^disp_[a-z0-9]{16}$", x, id)
		}
		if id != troupe.NewDispatchID(x) {
			t.Fatalf("NewDispatchID(%d) is not deterministic", x)
		}
		if prev, ok := seen[id]; ok && prev != x {
			t.Fatalf("NewDispatchID(%d) = NewDispatchID(%d) = %q", x, prev, id)
		}
		seen[id] = x
	}
}

// fakeRuntime is a DispatchRuntime whose behaviour each test sets.
type fakeRuntime struct {
	state    func(key string) (any, bool)
	progress func(kind string, data any)
	ask      func(ctx context.Context, q troupe.Question) (troupe.Answer, error)
	partial  func(result map[string]any)
}

func (f *fakeRuntime) State(key string) (any, bool)   { return f.state(key) }
func (f *fakeRuntime) Progress(kind string, data any) { f.progress(kind, data) }
func (f *fakeRuntime) Partial(result map[string]any)  { f.partial(result) }
func (f *fakeRuntime) Ask(ctx context.Context, q troupe.Question) (troupe.Answer, error) {
	return f.ask(ctx, q)
}

func TestDispatchRuntime(t *testing.T) {
	t.Run("inert without a run", func(t *testing.T) {
		d := troupe.NewDispatch()
		if v, ok := d.State("k"); ok || v != nil {
			t.Errorf("State = %v, %v; want nil, false", v, ok)
		}
		d.Progress("kind", 1)
		d.Partial(map[string]any{"x": 1})
		if _, err := d.Ask(t.Context(), troupe.Question{Prompt: "?"}); !errors.Is(err, troupe.ErrPaused) {
			t.Errorf("Ask error = %v, want ErrPaused", err)
		}
		if d.Runtime() != nil {
			t.Errorf("Runtime() = %v, want nil", d.Runtime())
		}
	})
	t.Run("Bind attaches a runtime", func(t *testing.T) {
		var progressed, partial []string
		rt := &fakeRuntime{
			state:    func(key string) (any, bool) { return "v:" + key, true },
			progress: func(kind string, data any) { progressed = append(progressed, kind) },
			ask: func(_ context.Context, q troupe.Question) (troupe.Answer, error) {
				return troupe.Answer{QuestionID: q.ID, Approved: true}, nil
			},
			partial: func(result map[string]any) { partial = append(partial, fmt.Sprint(result)) },
		}
		a := troupe.NewDispatch()
		a.Bind(rt)
		if a.Runtime() != rt {
			t.Fatalf("Runtime() = %v after Bind", a.Runtime())
		}
		if v, ok := a.State("k"); !ok || v != "v:k" {
			t.Errorf("State = %v, %v", v, ok)
		}
		a.Progress("replicate_done", nil)
		a.Partial(map[string]any{"n": 1})
		ans, err := a.Ask(t.Context(), troupe.Question{ID: "q1"})
		if err != nil || !ans.Approved || ans.QuestionID != "q1" {
			t.Errorf("Ask = %+v, %v", ans, err)
		}
		if diff := cmp.Diff([]string{"replicate_done"}, progressed); diff != "" {
			t.Errorf("progress (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"map[n:1]"}, partial); diff != "" {
			t.Errorf("partial (-want +got):\n%s", diff)
		}
	})
}

func TestDispatchTimeout(t *testing.T) {
	tests := []struct {
		name    string
		seconds *float64
		want    time.Duration
	}{
		{"none", nil, 0},
		{"whole", troupe.Ptr(30.0), 30 * time.Second},
		{"fraction", troupe.Ptr(0.25), 250 * time.Millisecond},
		// A valid timeout is a timeout: never read as none, nor as one already past.
		{"below a nanosecond", troupe.Ptr(1e-10), time.Nanosecond},
		{"beyond a Duration", troupe.Ptr(1e11), math.MaxInt64},
		{"infinite", troupe.Ptr(math.Inf(1)), math.MaxInt64},
		{"not positive", troupe.Ptr(-2.0), 0},
		{"NaN", troupe.Ptr(math.NaN()), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := &troupe.Dispatch{TimeoutSeconds: tt.seconds}
			if got := d.Timeout(); got != tt.want {
				t.Errorf("Timeout() = %v, want %v", got, tt.want)
			}
		})
	}
}

// dispatchCorpus is seed 000's examples made valid, then broken ones.
var dispatchCorpus = []string{
	// seed 000, sequential execution: dispatch_1 and dispatch_2
	`{"dispatch_id":"disp_abc123abc123abcd","session_id":"sess_xyz","query_id":"qry_789","target_agent":"causal_impact","dispatch_reason":"Causal intent detected","query":"What caused the drop in NRx for Kisqali in Midwest?","parsed_query":{"intent":"causal","brands":["Kisqali"],"kpis":["NRx"],"regions":["Midwest"],"time_period":"recent"},"execution_mode":"sequential","upstream_results":[]}`,
	`{"dispatch_id":"disp_def456def456def4","session_id":"sess_xyz","query_id":"qry_789","target_agent":"gap_analyzer","dispatch_reason":"Identify improvement opportunities","query":"What caused the drop in NRx for Kisqali in Midwest?","parsed_query":{},"execution_mode":"sequential","upstream_results":[{"agent":"causal_impact","result":{"effect":-0.12}}],"depends_on":["causal_impact"]}`,
	// seed 000, parallel execution
	`{"dispatch_id":"disp_1110000000000000","session_id":"s","query_id":"q","target_agent":"drift_monitor","dispatch_reason":"trend","query":"Show me market trends","parsed_query":{"intent":"trend"},"execution_mode":"parallel","priority":"high","timeout_seconds":30,"max_cost_dollars":0.5,"dispatched_at":"2025-12-30T10:00:00+01:00","user_context":{"role":"analyst"},"optimized_prompts":{"DriftSignature":"Be precise."},"collect_signals":false,"signal_signature":"DriftSignature","rag_context":{"docs":[]}}`,
	// broken: the seed's literal id, missing fields, wrong types, bad JSON
	`{"dispatch_id":"disp_abc123","session_id":"sess_xyz","query_id":"qry_789","target_agent":"causal_impact","dispatch_reason":"r","query":"q","parsed_query":{}}`,
	`{"dispatch_id":"disp_0123456789abcdef","target_agent":"oracle","depends_on":["x"],"timeout_seconds":0,"max_cost_dollars":-1,"priority":"urgent","execution_mode":"both"}`,
	`{"dispatch_id":"disp_0123456789abcdef","session_id":"s","query_id":"q","target_agent":"explainer","dispatch_reason":"r","query":"q","parsed_query":"causal"}`,
	`{"dispatch_id":"disp_0123456789abcdef","session_id":"s","query_id":"q","target_agent":"explainer","dispatch_reason":"r","query":"q","parsed_query":{},"dispatched_at":5}`,
	`{"DISPATCH_ID":"disp_0123456789abcdef","Session_Id":"s","query_id":"q","target_agent":"explainer","dispatch_reason":"r","query":"q","parsed_query":{},"rag_context":{},"upstream_results":[{"agent":"a","result":null,"handoff":{}}]}`,
	`{}`, `null`, `[]`, `""`, `{`, `{"timeout_seconds":1e400}`, "{\"query\":\"\xff\"}",
}

// The valid seeds must decode, or the fuzz target's round trip is never exercised on them.
func TestDecodeDispatchCorpus(t *testing.T) {
	reg := seedRegistry(t)
	for i, s := range dispatchCorpus[:3] {
		if _, err := troupe.DecodeDispatch([]byte(s), reg, decodeNow); err != nil {
			t.Errorf("seed %d: %v", i, err)
		}
	}
}

func FuzzDecodeDispatch(f *testing.F) {
	for _, s := range dispatchCorpus {
		f.Add([]byte(s))
	}
	reg := seedRegistry(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := troupe.DecodeDispatch(data, reg, decodeNow)
		if err != nil {
			var ve *troupe.ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("error is not a *ValidationError: %#v", err)
			}
			return
		}
		if d == nil {
			t.Fatal("nil dispatch and nil error")
		}
		if err := d.Validate(reg); err != nil {
			t.Fatalf("decoded without error but Validate fails: %v", err)
		}
		b, err := json.Marshal(d)
		if err != nil {
			t.Fatalf("Marshal: %v", err)
		}
		// A different now: dispatched_at must come from the encoding, not the default.
		again, err := troupe.DecodeDispatch(b, reg, decodeNow.Add(time.Hour))
		if err != nil {
			t.Fatalf("re-decoding %s: %v", b, err)
		}
		if diff := cmp.Diff(d, again, dispatchOpts); diff != "" {
			t.Fatalf("round trip through %s (-first +second):\n%s", b, diff)
		}
	})
}

// Seed 000 types an upstream result as a free dict: keys beyond UpstreamResult's fields are
// kept in Extra and written back, so a dispatch decoded and encoded again loses nothing.
func TestUpstreamResultKeepsOtherKeys(t *testing.T) {
	d, err := decodeDispatchRaw(t, nil, "",
		`"upstream_results":[{"agent":"causal_impact","result":{"effect":-0.12},"rank":2,"notes":{"by":"analyst"}},{"agent":"gap_analyzer","result":{}}]`)
	if err != nil {
		t.Fatal(err)
	}
	want := []troupe.UpstreamResult{
		{Agent: "causal_impact", Result: map[string]any{"effect": -0.12}, Extra: map[string]any{"rank": 2.0, "notes": map[string]any{"by": "analyst"}}},
		{Agent: "gap_analyzer", Result: map[string]any{}},
	}
	if diff := cmp.Diff(want, d.UpstreamResults); diff != "" {
		t.Fatalf("upstream results (-want +got):\n%s", diff)
	}
	b, err := json.Marshal(d.UpstreamResults)
	if err != nil {
		t.Fatal(err)
	}
	const wantJSON = `[{"agent":"causal_impact","notes":{"by":"analyst"},"rank":2,"result":{"effect":-0.12}},{"agent":"gap_analyzer","result":{}}]`
	if string(b) != wantJSON {
		t.Errorf("encoded\n%s\nwant\n%s", b, wantJSON)
	}
	// A field's own key is the field's, whatever Extra holds.
	b, err = json.Marshal(troupe.UpstreamResult{Agent: "a", Extra: map[string]any{"agent": "b", "x": 1}})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(b); got != `{"agent":"a","result":null,"x":1}` {
		t.Errorf("encoded %s", got)
	}
	// Also a field left out as empty: Extra does not speak for it, and what is written reads back.
	u := troupe.UpstreamResult{Agent: "a", Extra: map[string]any{"confidence": "high", "handoff": 1, "dispatch_id": false, "x": 1}}
	again, b := roundTrip(t, u)
	if got := string(b); got != `{"agent":"a","result":null,"x":1}` {
		t.Errorf("encoded %s", got)
	}
	if want := (troupe.UpstreamResult{Agent: "a", Extra: map[string]any{"x": 1.0}}); !cmp.Equal(want, again) {
		t.Errorf("read back (-want +got):\n%s", cmp.Diff(want, again))
	}
	c := d.Clone()
	c.UpstreamResults[0].Extra["rank"] = 3
	if d.UpstreamResults[0].Extra["rank"] != 2.0 {
		t.Error("Clone shares Extra")
	}
}

// Seed 000's models are pydantic models, whose member names are exact: a member named as a
// field only ignoring case is an extra member, ignored. encoding/json matched it to the field,
// so "Target_Agent" sent the dispatch to another agent than its target_agent, and "Priority"
// got a valid dispatch refused for a value no field of it holds. An upstream result keeps
// such a member as one of its other keys.
func TestDecodeDispatchMatchesNamesExactly(t *testing.T) {
	reg := seedRegistry(t)
	d, err := decodeDispatchRaw(t, reg, "", `"Target_Agent":"explainer"`, `"Priority":"urgent"`,
		`"upstream_results":[{"agent":"causal_impact","Agent":"gap_analyzer","result":{}}]`)
	if err != nil {
		t.Fatalf("DecodeDispatch: %v", err)
	}
	if d.TargetAgent != "causal_impact" || d.Priority != troupe.PriorityMedium {
		t.Errorf("target_agent %q, priority %q; want causal_impact and medium, the members spelled as the seed spells them", d.TargetAgent, d.Priority)
	}
	want := []troupe.UpstreamResult{{Agent: "causal_impact", Result: map[string]any{}, Extra: map[string]any{"Agent": "gap_analyzer"}}}
	if diff := cmp.Diff(want, d.UpstreamResults); diff != "" {
		t.Errorf("upstream results (-want +got):\n%s", diff)
	}
	// Alone, a member named only ignoring case fills nothing: the field is missing.
	_, err = decodeDispatchRaw(t, reg, "target_agent", `"TARGET_AGENT":"causal_impact"`)
	var ve troupe.ValidationErrors
	if !errors.As(err, &ve) || !containsProblem(ve, "target_agent", "required") {
		t.Errorf("with only TARGET_AGENT: %v; want target_agent required", err)
	}
}

// containsProblem says whether es reports problem for field.
func containsProblem(es troupe.ValidationErrors, field, problem string) bool {
	for _, e := range es {
		if e.Field == field && e.Problem == problem {
			return true
		}
	}
	return false
}
