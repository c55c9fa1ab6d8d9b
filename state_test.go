package troupe_test

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/troupehq/troupe"
)

// fullState is an orchestrator state with every field, and every field of what it holds, set.
func fullState() troupe.OrchestratorState {
	at := time.Date(2025, 12, 30, 9, 0, 0, 0, time.UTC)
	nested := func() map[string]any {
		return map[string]any{"n": 1.0, "list": []any{"x", map[string]any{"deep": true}}, "m": map[string]any{"k": "v"},
			"strs": []string{"a"}, "tags": map[string]string{"t": "u"}, "rows": []map[string]any{{"r": 1}}}
	}
	d := &troupe.Dispatch{
		DispatchID: troupe.NewDispatchID(1), SessionID: "s", QueryID: "q", TargetAgent: "a", DispatchReason: "r",
		Priority: troupe.PriorityHigh, Query: "why?", ParsedQuery: nested(), RAGContext: nested(),
		ExecutionMode: troupe.Parallel, UpstreamResults: []troupe.UpstreamResult{{Agent: "u", Result: nested(), DispatchID: "d",
			Confidence: troupe.Ptr(0.5), Summary: "s", Handoff: nested()}},
		DependsOn: []string{"u"}, TimeoutSeconds: troupe.Ptr(3.0), MaxCostDollars: troupe.Ptr(1.0), DispatchedAt: at,
		UserContext: nested(), OptimizedPrompts: map[string]string{"Sig": "p"}, CollectSignals: true, SignalSignature: troupe.Ptr("Sig"),
	}
	res := &troupe.Result{
		DispatchID: d.DispatchID, SessionID: "s", QueryID: "q", AgentName: "a", Status: troupe.StatusCompleted,
		AgentResult: nested(), AnalysisSummary: troupe.Ptr("sum"), Confidence: troupe.Ptr(0.9),
		Errors:   []troupe.ErrorInfo{{Code: "C", Message: "m", Details: nested(), Extra: nested()}},
		Warnings: []string{"w"}, NextAgent: troupe.Ptr("b"), RequiresHuman: true, Handoff: nested(),
		ExecutionTimeMS: 5, TokensUsed: troupe.Ptr[int64](7), ModelUsed: troupe.Ptr("m"), StartedAt: at, CompletedAt: at,
		SpanID: troupe.Ptr("sp"), TraceID: troupe.Ptr("tr"),
		TrainingSignals: []troupe.TrainingSignal{{Signature: "S", Input: nested(), Output: nested(), Quality: troupe.Ptr(1.0), Metadata: nested()}},
		SignalQuality:   troupe.Ptr(0.8), CostDollars: troupe.Ptr(0.1), Annotations: nested(),
	}
	return troupe.OrchestratorState{
		RunID: "run", SessionID: "s", QueryID: "q", ExecutionPlan: [][]string{{"a"}, {"b", "c"}}, CurrentStage: 1,
		DispatchedAgents: map[string]*troupe.Dispatch{"a": d}, CompletedAgents: map[string]*troupe.Result{"a": res},
		FailedAgents: map[string]*troupe.Result{"b": res}, StartedAt: at, UpdatedAt: at, TotalExecutionTimeMS: 3,
		Errors: []troupe.ErrorInfo{{Code: "C", Details: nested(), Extra: nested()}}, Warnings: []string{"w"},
		Status: troupe.RunCompleted, SessionState: nested(),
		Aggregation: &troupe.Aggregation{
			AgentsExecuted: []string{"a"}, ExecutionOrder: []string{"a"}, CombinedResults: nested(), OverallConfidence: 0.5,
			Synthesis: "s", KeyInsights: []string{"k"}, ConflictsDetected: []troupe.Conflict{{Field: "f",
				Values: []troupe.ConflictValue{{Agent: "a", Value: nested(), Confidence: troupe.Ptr(0.3)}}, Resolved: nested(), Winner: "a", Reason: "r"}},
			ConsistencyScore: 0.5, TotalExecutionTimeMS: 3, TotalTokensUsed: troupe.Ptr[int64](9), TotalCostDollars: troupe.Ptr(0.2),
			ResolutionStrategy: "s", Resolved: nested(), Warnings: []string{"w"},
		},
	}
}

// shared lists the pointers, maps and slices that a and b (equal values) have in common.
func shared(path string, a, b reflect.Value) []string {
	var out []string
	switch a.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice:
		if a.IsNil() || b.IsNil() {
			return nil
		}
		if a.UnsafePointer() == b.UnsafePointer() && (a.Kind() != reflect.Slice || a.Cap() > 0) {
			out = append(out, path)
		}
	}
	switch a.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !a.IsNil() && !b.IsNil() {
			out = append(out, shared(path, a.Elem(), b.Elem())...)
		}
	case reflect.Struct:
		for i := range a.NumField() {
			if a.Type().Field(i).IsExported() {
				out = append(out, shared(path+"."+a.Type().Field(i).Name, a.Field(i), b.Field(i))...)
			}
		}
	case reflect.Slice:
		for i := range min(a.Len(), b.Len()) {
			out = append(out, shared(fmt.Sprintf("%s[%d]", path, i), a.Index(i), b.Index(i))...)
		}
	case reflect.Map:
		for _, k := range a.MapKeys() {
			if bv := b.MapIndex(k); bv.IsValid() {
				out = append(out, shared(fmt.Sprintf("%s[%v]", path, k), a.MapIndex(k), bv)...)
			}
		}
	}
	return out
}

// Clone copies every field, and shares no map, slice or pointer with the original: modifying
// the copy changes nothing of what engines hand it out from.
func TestOrchestratorStateClone(t *testing.T) {
	s := fullState()
	if len(shared("state", reflect.ValueOf(s), reflect.ValueOf(s))) == 0 {
		t.Fatal("shared finds nothing shared between the state and itself")
	}
	c := s.Clone()
	if diff := cmp.Diff(s, c, cmpopts.IgnoreUnexported(troupe.Dispatch{})); diff != "" {
		t.Errorf("clone differs (-original +clone):\n%s", diff)
	}
	if got := shared("state", reflect.ValueOf(s), reflect.ValueOf(c)); len(got) > 0 {
		t.Errorf("the clone shares %v", got)
	}
	var zero troupe.OrchestratorState
	if diff := cmp.Diff(zero, zero.Clone()); diff != "" {
		t.Errorf("clone of the zero state (-want +got):\n%s", diff)
	}
	if (*troupe.Result)(nil).Clone() != nil || (*troupe.Dispatch)(nil).Clone() != nil || (*troupe.Aggregation)(nil).Clone() != nil {
		t.Error("a nil clones to non-nil")
	}
}

// A dispatch's clone is not bound to the run its original is bound to.
func TestDispatchCloneUnbound(t *testing.T) {
	d := troupe.NewDispatch()
	d.Bind(stateOnly{})
	if _, ok := d.Clone().State("k"); ok {
		t.Error("the clone reads the original's run")
	}
}

type stateOnly struct{ troupe.DispatchRuntime }

func (stateOnly) State(string) (any, bool) { return 1, true }
