package troupe_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/troupehq/troupe"
)

// eventOpts equates nil and empty: a nil list goes out as [] (seed 000's models reject null for
// a list) and comes back empty.
var eventOpts = cmp.Options{cmpopts.IgnoreUnexported(troupe.Dispatch{}), contextComparer, cmpopts.EquateEmpty()}

func TestEventJSONRoundTrip(t *testing.T) {
	at := time.Date(2025, 12, 30, 9, 0, 0, 123456789, time.UTC)
	ctx := troupe.NewContext("trace-7", "demo").WithMetadata("tenant", "acme")
	criteria := &troupe.SelectionCriteria{
		IntentType: "causal", Entities: map[string][]string{"brands": {"Kisqali"}},
		RequiresCausalInference: true, ConfidenceThreshold: troupe.Ptr(0.8), PreferredAgents: []string{"causal_impact"},
	}
	question := &troupe.Question{
		ID: "q1", Kind: troupe.QuestionReview, DispatchID: troupe.NewDispatchID(3), Agent: "explainer",
		Prompt: "Approve?", Options: []string{"yes", "no"}, Data: map[string]any{"draft": "text"},
	}
	result := &troupe.Result{
		DispatchID: troupe.NewDispatchID(2), SessionID: "s", QueryID: "q", AgentName: "causal_impact",
		Status: troupe.StatusCompleted, AgentResult: map[string]any{"effect": -0.12},
		Confidence: troupe.Ptr(0.8), Errors: []troupe.ErrorInfo{}, Warnings: []string{"w"},
		ExecutionTimeMS: 15, StartedAt: at, CompletedAt: at.Add(15 * time.Millisecond),
		TrainingSignals: []troupe.TrainingSignal{{Signature: "S", Quality: troupe.Ptr(1.0)}},
	}
	failed := &troupe.Result{
		DispatchID: troupe.NewDispatchID(4), SessionID: "s", QueryID: "q", AgentName: "gap_analyzer",
		Status: troupe.StatusTimeout, Errors: []troupe.ErrorInfo{{Code: troupe.CodeTimeout, Message: "slow", Recoverable: true}},
		ExecutionTimeMS: 30000, StartedAt: at, CompletedAt: at.Add(30 * time.Second),
	}
	outcome := &troupe.Outcome{
		Status: troupe.RunFailed, Error: &troupe.ErrorInfo{Code: troupe.CodeAgentError, Message: "m", Details: map[string]any{"k": "v"}},
		Fallback: map[string]string{"causal_impact": "explainer"}, Failed: []string{"gap_analyzer"}, Skipped: []string{"explainer"},
	}

	tests := []struct {
		kind troupe.Kind
		data any
	}{
		{troupe.KindRunInitialized, &troupe.RunStart{
			Request: &troupe.Request{
				RunID: "run-1", SessionID: "s", QueryID: "q", Query: "why?",
				ParsedQuery: map[string]any{"intent": "causal"}, Criteria: criteria,
				Context: ctx, Policy: &troupe.ErrorPolicy{OnError: troupe.Retry, EnableFallback: troupe.Ptr(false)},
				Budget: troupe.Budget{TimeSeconds: 60, MaxCostDollars: 2}, State: map[string]any{"k": "v"},
				Priority: troupe.PriorityHigh, Seed: 99,
				OptimizedPrompts: map[string]map[string]string{"explainer": {"Sig": "p"}},
			},
			Seed: 99, Setup: []string{"causal_impact"},
		}},
		{troupe.KindRunResumed, &troupe.RunStart{Request: &troupe.Request{Query: "again", Context: ctx}, Seed: 1}},
		{troupe.KindPlanCreated, &troupe.Plan{
			Stages: []troupe.PlanStage{
				{Tasks: []troupe.Task{{ID: "t1", Agent: "causal_impact", Reason: "primary", Priority: 1}}, MaxConcurrency: 1},
				{Tasks: []troupe.Task{{ID: "t2", Reason: "routed", Priority: 0.5, DependsOn: []string{"t1"}}}, MaxConcurrency: 10},
			},
			Selected: []troupe.Selection{{Agent: "causal_impact", Score: 1, Reasons: []string{"intent"}}},
			Skipped:  []troupe.Selection{{Agent: "explainer", Score: 0.1, Reasons: []string{"optional"}}},
			Criteria: criteria,
		}},
		{troupe.KindRouteDecided, &troupe.RoutingDecision{
			Target: "web_search", Reason: "lowest latency", Metadata: map[string]any{"confidence": 0.95}, Fallback: "rag_query",
		}},
		{troupe.KindDispatchStarted, &troupe.Dispatch{
			DispatchID: troupe.NewDispatchID(2), SessionID: "s", QueryID: "q", TargetAgent: "causal_impact",
			DispatchReason: "r", Priority: troupe.PriorityMedium, Query: "why?", ParsedQuery: map[string]any{"intent": "causal"},
			ExecutionMode: troupe.Sequential, UpstreamResults: []troupe.UpstreamResult{{Agent: "a", Result: map[string]any{"x": 1.0}, Confidence: troupe.Ptr(0.5)}},
			DependsOn: []string{"a"}, TimeoutSeconds: troupe.Ptr(30.0), DispatchedAt: at, CollectSignals: true,
		}},
		{troupe.KindDispatchCompleted, result},
		{troupe.KindDispatchFailed, failed},
		{troupe.KindRetryScheduled, &troupe.RetryScheduled{
			Attempt: 2, Backoff: 1500 * time.Millisecond, Reason: "TIMEOUT", NextID: troupe.NewDispatchID(5), PreviousID: troupe.NewDispatchID(4),
		}},
		{troupe.KindAgentProgress, &troupe.Progress{Kind: "replicate_done", Data: map[string]any{"n": 3.0, "of": []any{"a", "b"}}}},
		{troupe.KindStateDelta, &troupe.StateDelta{Set: map[string]any{"effect": -0.12, "drivers": []any{"access"}}}},
		{troupe.KindHumanAsked, question},
		{troupe.KindHumanAnswered, &troupe.Answer{QuestionID: "q1", Text: "ok", Approved: true, Data: "free text"}},
		{troupe.KindWarning, &troupe.Warning{Message: "low confidence", Code: "LOW_CONFIDENCE"}},
		{troupe.KindBudgetExhausted, &troupe.Warning{Message: "cost budget spent", Code: troupe.CodeBudget}},
		{troupe.KindRunAggregated, &troupe.Aggregation{
			AgentsExecuted: []string{"a", "b"}, ExecutionOrder: []string{"a", "b"},
			CombinedResults: map[string]any{"a": map[string]any{"x": 1.0}}, OverallConfidence: 0.7, Synthesis: "s",
			KeyInsights: []string{"k"}, ConflictsDetected: []troupe.Conflict{{
				Field: "x", Values: []troupe.ConflictValue{{Agent: "a", Value: 1.0, Confidence: troupe.Ptr(0.9)}, {Agent: "b", Value: "two"}},
				Resolved: 1.0, Winner: "a", Reason: "highest_confidence",
			}},
			ConsistencyScore: 0.5, TotalExecutionTimeMS: 20, TotalTokensUsed: troupe.Ptr(int64(10)),
			TotalCostDollars: troupe.Ptr(0.02), ResolutionStrategy: "highest_confidence", Resolved: map[string]any{"x": 1.0},
			Warnings: []string{"w"},
		}},
		{troupe.KindRunCompleted, &troupe.Outcome{Status: troupe.RunCompleted}},
		{troupe.KindRunFailed, outcome},
		{troupe.KindRunCancelled, &troupe.Outcome{Status: troupe.RunCancelled, Error: &troupe.ErrorInfo{Code: troupe.CodeCancelled, Message: "m"}}},
		{troupe.KindRunPaused, &troupe.Outcome{Status: troupe.RunPaused, Questions: []troupe.Question{*question}}},
	}
	for i, tt := range tests {
		t.Run(string(tt.kind), func(t *testing.T) {
			child := ctx.Child()
			want := troupe.Event{
				RunID: "run-1", Seq: int64(i + 1), Time: at, Stage: troupe.StageExecute, Kind: tt.kind,
				Step: 1, DispatchID: troupe.NewDispatchID(2), Agent: "causal_impact", Status: troupe.StatusCompleted,
				Context: &child, Data: tt.data,
			}
			got, _ := roundTrip(t, want)
			if gt, wt := reflect.TypeOf(got.Data), reflect.TypeOf(tt.data); gt != wt {
				t.Fatalf("Data is %v, want %v", gt, wt)
			}
			if diff := cmp.Diff(want, got, eventOpts); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("unknown kind keeps raw JSON", func(t *testing.T) {
		want := troupe.Event{RunID: "r", Seq: 1, Time: at, Stage: troupe.StagePlan, Kind: "custom_thing", Context: &ctx,
			Data: map[string]any{"x": 1.0, "y": []any{"z"}}}
		b, err := json.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		var got troupe.Event
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		raw, ok := got.Data.(json.RawMessage)
		if !ok {
			t.Fatalf("Data is %T, want json.RawMessage", got.Data)
		}
		var data any
		if err := json.Unmarshal(raw, &data); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want.Data, data); diff != "" {
			t.Errorf("raw data (-want +got):\n%s", diff)
		}
		// Re-encoding keeps the payload as it was.
		again, err := json.Marshal(got)
		if err != nil {
			t.Fatal(err)
		}
		if string(again) != string(b) {
			t.Errorf("re-encoded %s\nwant        %s", again, b)
		}
	})

	t.Run("no data", func(t *testing.T) {
		for _, in := range []string{
			`{"run_id":"r","seq":1,"stage":"complete","kind":"run_completed","context":null}`,
			`{"run_id":"r","seq":1,"stage":"complete","kind":"run_completed","context":null,"data":null}`,
		} {
			var got troupe.Event
			if err := json.Unmarshal([]byte(in), &got); err != nil {
				t.Fatal(err)
			}
			if got.Data != nil || got.Context != nil || got.Stage != troupe.StageComplete {
				t.Errorf("Unmarshal(%s) = %+v", in, got)
			}
		}
	})

	t.Run("payload of the wrong shape", func(t *testing.T) {
		var got troupe.Event
		err := json.Unmarshal([]byte(`{"run_id":"r","seq":4,"stage":"execute","kind":"dispatch_completed","data":{"status":7}}`), &got)
		if err == nil || !strings.Contains(err.Error(), "dispatch_completed") || !strings.Contains(err.Error(), "4") {
			t.Errorf("err = %v, want one naming the event's seq and kind", err)
		}
	})

	t.Run("unknown stage", func(t *testing.T) {
		var got troupe.Event
		if err := json.Unmarshal([]byte(`{"run_id":"r","seq":1,"stage":"dancing","kind":"warning"}`), &got); err == nil {
			t.Error("an unknown stage decoded")
		}
	})
}

func TestStage(t *testing.T) {
	tests := []struct {
		stage    troupe.Stage
		name     string
		terminal bool
	}{
		{troupe.StageInitialize, "initialize", false},
		{troupe.StagePlan, "plan", false},
		{troupe.StageRoute, "route", false},
		{troupe.StageExecute, "execute", false},
		{troupe.StageAggregate, "aggregate", false},
		{troupe.StageComplete, "complete", true},
		{troupe.StageFailed, "failed", true},
		{troupe.StageCancelled, "cancelled", true},
		{troupe.StagePaused, "paused", false}, // a paused run can be resumed
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if i > 0 && tt.stage <= tests[i-1].stage {
				t.Errorf("stage %v is not after %v: seed 001's order", tt.stage, tests[i-1].stage)
			}
			if got := tt.stage.String(); got != tt.name {
				t.Errorf("String() = %q, want %q", got, tt.name)
			}
			if got := tt.stage.Terminal(); got != tt.terminal {
				t.Errorf("Terminal() = %v, want %v", got, tt.terminal)
			}
			text, err := tt.stage.MarshalText()
			if err != nil || string(text) != tt.name {
				t.Fatalf("MarshalText() = %q, %v", text, err)
			}
			var back troupe.Stage
			if err := back.UnmarshalText(text); err != nil || back != tt.stage {
				t.Errorf("UnmarshalText(%q) = %v, %v; want %v", text, back, err, tt.stage)
			}
			js, err := json.Marshal(tt.stage)
			if err != nil || string(js) != `"`+tt.name+`"` {
				t.Errorf("json.Marshal = %s, %v", js, err)
			}
		})
	}

	t.Run("unknown names", func(t *testing.T) {
		for _, in := range []string{"", "dancing", "INITIALIZE", "execute ", "stage(3)"} {
			s := troupe.StagePlan
			if err := s.UnmarshalText([]byte(in)); err == nil {
				t.Errorf("UnmarshalText(%q) = %v, want an error", in, s)
			}
		}
	})

	// Whatever MarshalText accepts must read back: a store writes events with MarshalText
	// and must be able to read its own log. The zero Stage and out-of-range values are
	// where the two can disagree.
	t.Run("every encodable stage decodes", func(t *testing.T) {
		for _, s := range []troupe.Stage{0, troupe.StagePaused + 1, 255} {
			text, err := s.MarshalText()
			if err != nil {
				continue // refusing to encode is fine
			}
			var back troupe.Stage
			if err := back.UnmarshalText(text); err != nil || back != s {
				t.Errorf("Stage(%d): MarshalText = %q, but UnmarshalText gives %v, %v", uint8(s), text, back, err)
			}
		}
	})
}

// A failed run's outcome always has "fallback" (seed 001's compliance test 4 looks for it in
// every FAILED event's data), {} when no fallback ran; other outcomes leave it out when empty.
func TestOutcomeFallbackMember(t *testing.T) {
	for _, tc := range []struct {
		out  troupe.Outcome
		want string
	}{
		{troupe.Outcome{Status: troupe.RunFailed}, `{"status":"failed","fallback":{}}`},
		{troupe.Outcome{Status: troupe.RunFailed, Fallback: map[string]string{"a": "b"}}, `{"status":"failed","fallback":{"a":"b"}}`},
		{troupe.Outcome{Status: troupe.RunCompleted}, `{"status":"completed"}`},
		{troupe.Outcome{Status: troupe.RunCompleted, Fallback: map[string]string{"a": "b"}, Budget: "time budget of 1s spent"},
			`{"status":"completed","fallback":{"a":"b"},"budget":"time budget of 1s spent"}`},
	} {
		for _, v := range []any{tc.out, &tc.out} {
			got, err := json.Marshal(v)
			if err != nil || string(got) != tc.want {
				t.Errorf("%T %+v encodes as %s (%v), want %s", v, tc.out, got, err, tc.want)
			}
		}
	}
}
