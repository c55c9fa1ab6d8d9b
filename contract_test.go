package troupe_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/troupehq/troupe"
)

// randomFill sets every exported field of v, recursively, to a random JSON-shaped value: nil
// and empty lists and maps, absent optional fields, numbers, strings, nested objects.
func randomFill(rng *rand.Rand, v reflect.Value, depth int) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(fmt.Sprintf("s%d", rng.IntN(5)))
	case reflect.Bool:
		v.SetBool(rng.IntN(2) == 0)
	case reflect.Int, reflect.Int32, reflect.Int64:
		v.SetInt(int64(rng.IntN(1e6)))
	case reflect.Uint8, reflect.Uint64:
		v.SetUint(uint64(1 + rng.IntN(9))) // a Stage is 1-based
	case reflect.Float64:
		v.SetFloat(float64(rng.IntN(101)) / 100)
	case reflect.Pointer:
		if depth < 5 && rng.IntN(3) > 0 {
			p := reflect.New(v.Type().Elem())
			randomFill(rng, p.Elem(), depth+1)
			v.Set(p)
		}
	case reflect.Slice:
		if rng.IntN(4) > 0 {
			n := rng.IntN(3)
			s := reflect.MakeSlice(v.Type(), n, n)
			for i := range n {
				randomFill(rng, s.Index(i), depth+1)
			}
			v.Set(s)
		}
	case reflect.Array:
		for i := range v.Len() {
			randomFill(rng, v.Index(i), depth+1)
		}
	case reflect.Map:
		if rng.IntN(3) > 0 {
			m := reflect.MakeMap(v.Type())
			for range 1 + rng.IntN(3) {
				k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
				randomFill(rng, k, depth+1)
				randomFill(rng, e, depth+1)
				m.SetMapIndex(k, e)
			}
			v.Set(m)
		}
	case reflect.Interface:
		if v.Type().NumMethod() > 0 {
			return // a handler or guardrail: not on the wire
		}
		switch rng.IntN(5) {
		case 0:
			v.Set(reflect.ValueOf(fmt.Sprintf("v%d", rng.IntN(5))))
		case 1:
			v.Set(reflect.ValueOf(float64(rng.IntN(9))))
		case 2:
			v.Set(reflect.ValueOf(map[string]any{"k": []any{true, nil, "x"}}))
		case 3:
			v.Set(reflect.ValueOf([]any{"a", 1.5}))
		}
	case reflect.Struct:
		switch v.Type() {
		case reflect.TypeFor[time.Time]():
			v.Set(reflect.ValueOf(time.Date(2025, 12, 30, rng.IntN(24), rng.IntN(60), 0, rng.IntN(1e9), time.UTC)))
		case reflect.TypeFor[troupe.Context]():
			c := troupe.NewContext(fmt.Sprint("trace-", rng.IntN(9)), "")
			if rng.IntN(2) == 0 {
				c = c.WithMetadata("m", float64(rng.IntN(9))).Child()
			}
			v.Set(reflect.ValueOf(c))
		default:
			for i := range v.NumField() {
				if v.Type().Field(i).IsExported() {
					randomFill(rng, v.Field(i), depth+1)
				}
			}
		}
	}
}

// Every contract type survives a JSON round trip whatever its fields hold (seed 000's models,
// seed 001's decision and context, troupe's plan, events' payloads).
func TestContractsRoundTrip(t *testing.T) {
	types := []any{
		troupe.Dispatch{}, troupe.Result{}, troupe.UpstreamResult{}, troupe.ErrorInfo{}, troupe.TrainingSignal{},
		troupe.Aggregation{}, troupe.Conflict{}, troupe.OrchestratorState{}, troupe.SelectionCriteria{},
		troupe.ErrorPolicy{}, troupe.Plan{}, troupe.PlanStage{}, troupe.RoutingDecision{}, troupe.Request{},
		troupe.Outcome{}, troupe.RetryScheduled{}, troupe.Question{}, troupe.Answer{}, troupe.RunStart{},
	}
	// Human and Guardrails are not on the wire (json:"-"); omitempty cannot tell nil from empty.
	opts := cmp.Options{
		cmpopts.IgnoreUnexported(troupe.Dispatch{}),
		cmpopts.IgnoreFields(troupe.Request{}, "Human", "Guardrails"),
		cmpopts.EquateEmpty(),
		contextComparer,
	}
	rng := rand.New(rand.NewPCG(0xc0, 0x7ac7))
	for _, proto := range types {
		typ := reflect.TypeOf(proto)
		t.Run(typ.Name(), func(t *testing.T) {
			for i := range 100 {
				v := reflect.New(typ)
				randomFill(rng, v.Elem(), 0)
				b, err := json.Marshal(v.Interface())
				if err != nil {
					t.Fatalf("Marshal: %v", err)
				}
				got := reflect.New(typ)
				if err := json.Unmarshal(b, got.Interface()); err != nil {
					t.Fatalf("Unmarshal(%s): %v", b, err)
				}
				if diff := cmp.Diff(v.Interface(), got.Interface(), opts); diff != "" {
					t.Fatalf("value %d after a round trip through %s (-want +got):\n%s", i, b, diff)
				}
			}
		})
	}
}

// Seed 000's AgentResultAggregation, OrchestratorState and AgentSelectionCriteria, and seed
// 001's RoutingDecision, spelled as the seeds spell them (troupe's additions after).
func TestContractJSONFieldNames(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	full := func(v any) any {
		// Every optional field set: omitempty then hides nothing.
		for {
			p := reflect.New(reflect.TypeOf(v))
			randomFill(rng, p.Elem(), 0)
			if allSet(p.Elem()) {
				return p.Interface()
			}
		}
	}
	tests := []struct {
		v    any
		want []string
	}{
		{troupe.Aggregation{}, []string{
			"agents_executed", "execution_order", "combined_results", "overall_confidence", "synthesis",
			"key_insights", "conflicts_detected", "consistency_score", "total_execution_time_ms", "total_tokens_used",
			"total_cost_dollars", "resolution_strategy", "resolved", "warnings",
		}},
		{troupe.OrchestratorState{}, []string{
			"session_id", "query_id", "execution_plan", "current_stage", "dispatched_agents", "completed_agents",
			"failed_agents", "started_at", "updated_at", "total_execution_time_ms", "errors", "warnings", "status",
			"run_id", "session_state", "aggregation",
		}},
		{troupe.SelectionCriteria{}, []string{
			"intent_type", "entities", "complexity", "requires_ml", "requires_causal_inference",
			"requires_experimentation", "enable_discovery", "discovery_config", "time_budget_seconds",
			"confidence_threshold", "preferred_agents", "excluded_agents", "secondary_intents",
		}},
		{troupe.RoutingDecision{}, []string{"target", "reason", "metadata", "fallback", "tokens_used", "cost_dollars"}},
		{troupe.PlanStage{}, []string{"group_id", "agents", "shared_resources", "max_concurrency", "tasks"}},
	}
	for _, tt := range tests {
		t.Run(reflect.TypeOf(tt.v).Name(), func(t *testing.T) { checkJSONKeys(t, full(tt.v), tt.want) })
	}
}

// allSet reports whether every exported pointer, map, slice and string field of the struct v
// is set, so that omitempty leaves it in.
func allSet(v reflect.Value) bool {
	for i := range v.NumField() {
		f := v.Field(i)
		if !v.Type().Field(i).IsExported() {
			continue
		}
		switch f.Kind() {
		case reflect.Pointer, reflect.Interface:
			if f.IsNil() {
				return false
			}
		case reflect.Map, reflect.Slice, reflect.String:
			if f.Len() == 0 {
				return false
			}
		}
	}
	return true
}
