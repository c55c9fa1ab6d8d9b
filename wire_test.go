package troupe_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/troupehq/troupe"
)

// jsonMembers encodes v and returns its top-level members decoded.
func jsonMembers(t *testing.T, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("Marshal: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("Unmarshal %s: %v", b, err)
	}
	return m
}

// Seed 000's pydantic models reject null for a list (upstream_results, depends_on, errors,
// warnings, training_signals) and for a required dict (parsed_query); a nil one goes out empty.
func TestWireEncodesNilAsEmpty(t *testing.T) {
	tests := []struct {
		name string
		v    any
		want map[string]any
	}{
		{"zero dispatch", &troupe.Dispatch{}, map[string]any{
			"parsed_query": map[string]any{}, "upstream_results": []any{}, "depends_on": []any{},
			"priority": "medium", "execution_mode": "sequential",
		}},
		{"dispatch with its own priority and mode", &troupe.Dispatch{Priority: troupe.PriorityCritical, ExecutionMode: troupe.Parallel}, map[string]any{
			"priority": "critical", "execution_mode": "parallel",
		}},
		{"new dispatch, by pointer", troupe.NewDispatch(), map[string]any{
			"parsed_query": map[string]any{}, "upstream_results": []any{}, "depends_on": []any{},
		}},
		{"dispatch with values", &troupe.Dispatch{
			ParsedQuery:     map[string]any{"intent": "causal"},
			UpstreamResults: []troupe.UpstreamResult{{Agent: "causal_impact", Result: map[string]any{"effect": -0.12}}},
			DependsOn:       []string{"causal_impact"},
		}, map[string]any{
			"parsed_query":     map[string]any{"intent": "causal"},
			"upstream_results": []any{map[string]any{"agent": "causal_impact", "result": map[string]any{"effect": -0.12}}},
			"depends_on":       []any{"causal_impact"},
		}},
		{"zero result", troupe.Result{}, map[string]any{
			"errors": []any{}, "warnings": []any{}, "training_signals": []any{},
		}},
		{"result with values", &troupe.Result{
			Errors:          []troupe.ErrorInfo{{Code: troupe.CodeTimeout, Message: "slow"}},
			Warnings:        []string{"small sample"},
			TrainingSignals: []troupe.TrainingSignal{{Signature: "Sig"}},
		}, map[string]any{
			"errors":           []any{map[string]any{"code": "TIMEOUT", "message": "slow", "recoverable": false}},
			"warnings":         []any{"small sample"},
			"training_signals": []any{map[string]any{"signature": "Sig"}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := jsonMembers(t, tt.v)
			got := make(map[string]any, len(tt.want))
			for k := range tt.want {
				got[k] = m[k]
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("members (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("a nil result is null", func(t *testing.T) {
		b, err := json.Marshal((*troupe.Result)(nil))
		if err != nil || string(b) != "null" {
			t.Errorf("Marshal(nil) = %s, %v; want null", b, err)
		}
	})
}

// Seed 000 types a response's errors as List[Dict[str, Any]]: any dict is an error, and none of
// its members may be lost on the way through troupe.
func TestErrorInfoKeepsEveryMember(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want troupe.ErrorInfo
	}{
		{
			name: "seed 003 shape",
			in:   `{"code":"TIMEOUT","message":"slow","recoverable":true,"fallback_action":"retry","details":{"after":2}}`,
			want: troupe.ErrorInfo{Code: "TIMEOUT", Message: "slow", Recoverable: true, FallbackAction: "retry", Details: map[string]any{"after": 2.0}},
		},
		{
			name: "python exception dict",
			in:   `{"error":"ValueError: no rows for Midwest","node":"estimate","retryable":true}`,
			want: troupe.ErrorInfo{Message: "ValueError: no rows for Midwest", Extra: map[string]any{
				"error": "ValueError: no rows for Midwest", "node": "estimate", "retryable": true,
			}},
		},
		{
			name: "message wins over error",
			in:   `{"message":"m","error":"e"}`,
			want: troupe.ErrorInfo{Message: "m", Extra: map[string]any{"error": "e"}},
		},
		{
			name: "error that is not a string",
			in:   `{"error":{"type":"ValueError"}}`,
			want: troupe.ErrorInfo{Extra: map[string]any{"error": map[string]any{"type": "ValueError"}}},
		},
		{
			name: "known keys with values their fields cannot hold",
			in:   `{"code":404,"message":null,"recoverable":"yes","details":"see logs","error":"not found"}`,
			want: troupe.ErrorInfo{Extra: map[string]any{
				"code": 404.0, "message": nil, "recoverable": "yes", "details": "see logs", "error": "not found",
			}},
		},
		{
			name: "keys match exactly",
			in:   `{"Message":"m","CODE":"c"}`,
			want: troupe.ErrorInfo{Extra: map[string]any{"Message": "m", "CODE": "c"}},
		},
		{
			name: "empty dict",
			in:   `{}`,
			want: troupe.ErrorInfo{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got troupe.ErrorInfo
			if err := json.Unmarshal([]byte(tt.in), &got); err != nil {
				t.Fatalf("Unmarshal: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("decoded (-want +got):\n%s", diff)
			}
			var in map[string]any
			if err := json.Unmarshal([]byte(tt.in), &in); err != nil {
				t.Fatal(err)
			}
			out := jsonMembers(t, got)
			for k, v := range in {
				if diff := cmp.Diff(v, out[k]); diff != "" {
					t.Errorf("member %q after a round trip (-in +out):\n%s", k, diff)
				}
			}
			again, b := roundTrip(t, got)
			if diff := cmp.Diff(got, again); diff != "" {
				t.Errorf("decoded again from %s (-first +second):\n%s", b, diff)
			}
		})
	}

	t.Run("a field set after decoding wins over what it could not hold", func(t *testing.T) {
		var e troupe.ErrorInfo
		if err := json.Unmarshal([]byte(`{"code":404}`), &e); err != nil {
			t.Fatal(err)
		}
		e.Code = troupe.CodeAgentError
		if got := jsonMembers(t, e)["code"]; got != troupe.CodeAgentError {
			t.Errorf("code = %v, want %s", got, troupe.CodeAgentError)
		}
	})

	t.Run("without extra members the encoding is unchanged", func(t *testing.T) {
		b, err := json.Marshal(troupe.ErrorInfo{Code: troupe.CodeTimeout, Message: "slow", Recoverable: true})
		if want := `{"code":"TIMEOUT","message":"slow","recoverable":true}`; err != nil || string(b) != want {
			t.Errorf("Marshal = %s, %v; want %s", b, err, want)
		}
	})

	t.Run("in a seed 000 response", func(t *testing.T) {
		doc := `{"dispatch_id":"d","session_id":"s","query_id":"q","agent_name":"causal_impact","status":"failed",` +
			`"execution_time_ms":5,"started_at":"2025-12-30T09:00:00Z","completed_at":"2025-12-30T09:00:01Z",` +
			`"errors":[{"error":"ValueError: no rows for Midwest","node":"estimate","retryable":true}]}`
		r, err := troupe.DecodeResult([]byte(doc), seedRegistry(t))
		if err != nil {
			t.Fatalf("DecodeResult: %v", err)
		}
		want := []troupe.ErrorInfo{{Message: "ValueError: no rows for Midwest", Extra: map[string]any{
			"error": "ValueError: no rows for Midwest", "node": "estimate", "retryable": true,
		}}}
		if diff := cmp.Diff(want, r.Errors); diff != "" {
			t.Errorf("errors (-want +got):\n%s", diff)
		}
	})

	t.Run("an entry that is not a dict names the field", func(t *testing.T) {
		for _, member := range []string{`"errors":["boom"]`, `"errors":[5]`, `"errors":[["code"]]`} {
			t.Run(member, func(t *testing.T) {
				_, err := decodeResultRaw(t, seedRegistry(t), "", member)
				p := problemFor(err, "errors")
				if p == nil {
					t.Fatalf("error does not name field errors: %v", err)
				}
				// In JSON's terms (an object, a dict in seed 000's Python), not Go's.
				if !strings.HasPrefix(p.Problem, "expected an object, got JSON ") || strings.Contains(p.Problem, "troupe.") {
					t.Errorf("problem = %q, want it to say an object was expected, in JSON's terms", p.Problem)
				}
			})
		}
	})
}

// roundTrip encodes v and decodes it again, failing the test on an error; it returns what it
// decoded and the encoding.
func roundTrip[T any](t *testing.T, v T) (T, []byte) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var got T
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("Unmarshal(%s): %v", b, err)
	}
	return got, b
}

// Seed 000's ParallelExecutionGroup is {group_id, agents, shared_resources, max_concurrency}: a
// plan's stage says which agents it holds under those names, and reads one back.
func TestPlanStageIsSeed000Group(t *testing.T) {
	stage := troupe.PlanStage{
		GroupID: "group_2",
		Tasks: []troupe.Task{
			{ID: "gap_analyzer", Agent: "gap_analyzer", Reason: "r", Priority: 0.85, DependsOn: []string{"causal_impact"}},
			{ID: "route", Reason: "routed at run time"},
		},
		SharedResources: []string{"effect"},
		MaxConcurrency:  10,
	}
	want := map[string]any{
		"group_id": "group_2", "agents": []any{"gap_analyzer", "?route"},
		"shared_resources": []any{"effect"}, "max_concurrency": 10.0,
	}
	for _, v := range []any{stage, &stage, troupe.Plan{Stages: []troupe.PlanStage{stage}}} {
		m := jsonMembers(t, v)
		if p, ok := v.(troupe.Plan); ok {
			m = jsonMembers(t, p)["stages"].([]any)[0].(map[string]any)
		}
		got := map[string]any{}
		for k := range want {
			got[k] = m[k]
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%T: seed 000 members (-want +got):\n%s", v, diff)
		}
	}
	if again, b := roundTrip(t, stage); !cmp.Equal(stage, again) {
		t.Errorf("round trip of %s (-want +got):\n%s", b, cmp.Diff(stage, again))
	}

	var group troupe.PlanStage
	seed := `{"group_id":"group_1","agents":["gap_analyzer","heterogeneous_optimizer"],"shared_resources":["sales"],"max_concurrency":10}`
	if err := json.Unmarshal([]byte(seed), &group); err != nil {
		t.Fatal(err)
	}
	wantGroup := troupe.PlanStage{GroupID: "group_1", SharedResources: []string{"sales"}, MaxConcurrency: 10, Tasks: []troupe.Task{
		{ID: "gap_analyzer", Agent: "gap_analyzer"}, {ID: "heterogeneous_optimizer", Agent: "heterogeneous_optimizer"},
	}}
	if diff := cmp.Diff(wantGroup, group); diff != "" {
		t.Errorf("seed 000 group decoded (-want +got):\n%s", diff)
	}
}
