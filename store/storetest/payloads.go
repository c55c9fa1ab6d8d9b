package storetest

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/troupehq/troupe"
)

// base is the time of the suite's first event. Every time the suite writes is a whole number
// of microseconds in UTC, so a store that keeps microsecond precision (PostgreSQL's timestamp)
// or renders times in another zone still compares equal.
var base = time.Date(2026, 3, 1, 9, 30, 0, 123456000, time.UTC)

// at returns the suite's time for the n-th event.
func at(n int64) time.Time { return base.Add(time.Duration(n) * 1234567 * time.Microsecond) }

// traceContext is a realistic execution context: trace id, profile, metadata and a parent.
func traceContext(run string) *troupe.Context {
	parent := troupe.NewContext("trace-"+run, "analyst").WithMetadata("tenant", "acme")
	c := parent.Child().WithMetadata("user", "u-42").WithMetadata("tags", []any{"nightly", "e2i"})
	return &c
}

// plainEvent is a small warning event of run with sequence number seq; what it says is derived
// from note, so two events with the same run and seq can differ.
func plainEvent(run string, seq int64, note string) troupe.Event {
	return troupe.Event{
		RunID:   run,
		Seq:     seq,
		Time:    at(seq),
		Stage:   troupe.StageExecute,
		Kind:    troupe.KindWarning,
		Step:    1,
		Agent:   "causal_impact",
		Context: traceContext(run),
		Data:    &troupe.Warning{Message: fmt.Sprintf("%s: event %d of %s", note, seq, run), Code: "W" + fmt.Sprint(seq)},
	}
}

// plainLog returns events from..to (inclusive) of run, numbered densely.
func plainLog(run string, from, to int64, note string) []troupe.Event {
	evs := make([]troupe.Event, 0, to-from+1)
	for s := from; s <= to; s++ {
		evs = append(evs, plainEvent(run, s, note))
	}
	return evs
}

// fullRuns returns realistic logs with an event of every kind between them: run, with every
// kind but run_failed and run_cancelled, plus an event of a kind troupe does not know (its
// payload kept as raw JSON) and one with neither payload nor context, ending run_completed;
// and two short runs ending run_failed and run_cancelled. A store must give every payload back
// with its type and content.
func fullRuns(run string) [][]troupe.Event {
	tc := traceContext(run)
	dispatchID := troupe.NewDispatchID(0x5eed_0001)
	retryID := troupe.NewDispatchID(0x5eed_0002)
	request := troupe.Request{
		RunID:     run,
		SessionID: "sess-7",
		QueryID:   "q-11",
		Query:     "What caused the drop in NRx for Kisqali in Midwest?",
		ParsedQuery: map[string]any{
			"intent":   "causal",
			"entities": map[string]any{"brand": []any{"Kisqali"}, "region": []any{"Midwest"}},
			"kpi":      "NRx",
		},
		Criteria: &troupe.SelectionCriteria{
			IntentType:              "causal",
			Entities:                map[string][]string{"brand": {"Kisqali"}, "region": {"Midwest"}},
			Complexity:              "complex",
			RequiresCausalInference: true,
			TimeBudgetSeconds:       troupe.Ptr(45.5),
			ConfidenceThreshold:     troupe.Ptr(0.7),
			PreferredAgents:         []string{"causal_impact"},
			ExcludedAgents:          []string{"experiment_designer"},
		},
		RAGContext:  map[string]any{"documents": []any{map[string]any{"id": "doc-1", "score": 0.91}}},
		UserContext: map[string]any{"role": "brand_manager"},
		Context:     *tc,
		Policy: &troupe.ErrorPolicy{
			OnWarning:      troupe.WarnLogOnly,
			OnError:        troupe.Fallback,
			OnTimeout:      troupe.TimeoutUsePartial,
			EnableFallback: troupe.Ptr(true),
			FallbackAgents: map[string][]string{"causal_impact": {"gap_analyzer"}},
			MinSuccessRate: troupe.Ptr(0.75),
			Retry:          troupe.RetryPolicy{MaxAttempts: 4, Initial: 250 * time.Millisecond, Max: 5 * time.Second, Multiplier: 2, Jitter: 0.1},
		},
		Budget:           troupe.Budget{TimeSeconds: 120, MaxCostDollars: 2.5},
		State:            map[string]any{"quarter": "Q3", "weeks": 13.0},
		Priority:         troupe.PriorityHigh,
		Seed:             0xdead_beef_cafe_f00d, // beyond float64's exact integers: must round-trip exactly
		Timeouts:         map[string]float64{"causal_impact": 30},
		OptimizedPrompts: map[string]map[string]string{"causal_impact": {"system": "You are a careful analyst."}},
	}
	plan := &troupe.Plan{
		Stages: []troupe.PlanStage{
			{Tasks: []troupe.Task{{ID: "t1", Agent: "causal_impact", Reason: "causal question", Priority: 0.9}}, MaxConcurrency: 1},
			{Tasks: []troupe.Task{
				{ID: "t2", Agent: "gap_analyzer", Reason: "regional gap", Priority: 0.6, DependsOn: []string{"t1"}},
				{ID: "t3", Reason: "router picks", Priority: 0.4, DependsOn: []string{"t1"}},
			}, MaxConcurrency: 2},
		},
		Selected: []troupe.Selection{{Agent: "causal_impact", Score: 0.9, Reasons: []string{"intent causal", "preferred"}}},
		Skipped:  []troupe.Selection{{Agent: "experiment_designer", Score: 0.2, Reasons: []string{"excluded"}}},
		Criteria: request.Criteria,
	}
	dispatch := &troupe.Dispatch{
		DispatchID:     dispatchID,
		SessionID:      "sess-7",
		QueryID:        "q-11",
		TargetAgent:    "causal_impact",
		DispatchReason: "causal question",
		Priority:       troupe.PriorityHigh,
		Query:          request.Query,
		ParsedQuery:    request.ParsedQuery,
		RAGContext:     request.RAGContext,
		ExecutionMode:  troupe.Sequential,
		UpstreamResults: []troupe.UpstreamResult{{
			Agent: "data_loader", Result: map[string]any{"rows": 1200.0}, DispatchID: troupe.NewDispatchID(7),
			Confidence: troupe.Ptr(0.95), Summary: "loaded", Handoff: map[string]any{"table": "nrx_weekly"},
		}},
		DependsOn:        []string{"t0"},
		TimeoutSeconds:   troupe.Ptr(30.0),
		MaxCostDollars:   troupe.Ptr(0.5),
		DispatchedAt:     at(4),
		UserContext:      request.UserContext,
		OptimizedPrompts: map[string]string{"system": "You are a careful analyst."},
		CollectSignals:   true,
		SignalSignature:  troupe.Ptr("question -> drivers"),
	}
	completed := &troupe.Result{
		DispatchID:      dispatchID,
		SessionID:       "sess-7",
		QueryID:         "q-11",
		AgentName:       "causal_impact",
		Status:          troupe.StatusCompleted,
		AgentResult:     map[string]any{"drivers": []any{map[string]any{"name": "formulary", "effect": -0.12}}, "significant": true},
		AnalysisSummary: troupe.Ptr("Formulary change explains most of the drop."),
		Confidence:      troupe.Ptr(0.82),
		Errors:          []troupe.ErrorInfo{},
		Warnings:        []string{"small sample in one territory"},
		NextAgent:       troupe.Ptr("gap_analyzer"),
		Handoff:         map[string]any{"focus": "formulary"},
		ExecutionTimeMS: 1834,
		TokensUsed:      troupe.Ptr[int64](5120),
		ModelUsed:       troupe.Ptr("model-x"),
		StartedAt:       at(4),
		CompletedAt:     at(5),
		SpanID:          troupe.Ptr("span-1"),
		TraceID:         troupe.Ptr(tc.TraceID()),
		TrainingSignals: []troupe.TrainingSignal{{
			Signature: "question -> drivers", Input: map[string]any{"q": "why"}, Output: map[string]any{"a": "formulary"},
			Quality: troupe.Ptr(0.9), Metadata: map[string]any{"source": "agent"},
		}},
		SignalQuality: troupe.Ptr(0.88),
		CostDollars:   troupe.Ptr(0.031),
		Annotations:   map[string]any{"pii_guard": map[string]any{"checked": true}},
	}
	failed := &troupe.Result{
		DispatchID: retryID, SessionID: "sess-7", QueryID: "q-11", AgentName: "gap_analyzer",
		Status: troupe.StatusTimeout,
		Errors: []troupe.ErrorInfo{{
			Code: troupe.CodeTimeout, Message: "gap_analyzer did not finish within its deadline (30s)", Recoverable: true,
			FallbackAction: "use partial", Details: map[string]any{"elapsed_ms": 30000.0},
		}},
		Warnings:        []string{},
		AgentResult:     map[string]any{"partial": true},
		ExecutionTimeMS: 30000,
		StartedAt:       at(6),
		CompletedAt:     at(7),
	}
	question := troupe.Question{
		ID: "q1", Kind: troupe.QuestionReview, DispatchID: dispatchID, Agent: "causal_impact",
		Prompt: "causal_impact asks for review of its result", Options: []string{"approve", "reject"},
		Data: map[string]any{"drivers": []any{"formulary"}},
	}
	errInfo := &troupe.ErrorInfo{Code: troupe.CodeAgentError, Message: "gap_analyzer failed", Recoverable: false}
	outcome := func(s troupe.RunStatus) *troupe.Outcome {
		o := &troupe.Outcome{
			Status:   s,
			Fallback: map[string]string{"causal_impact": "gap_analyzer"},
			Failed:   []string{"gap_analyzer"},
			Skipped:  []string{"experiment_designer"},
		}
		switch s {
		case troupe.RunFailed, troupe.RunCancelled:
			o.Error = errInfo
		case troupe.RunPaused:
			o.Questions = []troupe.Question{question}
		}
		return o
	}

	type entry struct {
		stage  troupe.Stage
		kind   troupe.Kind
		status troupe.Status
		data   any
	}
	entries := []entry{
		{troupe.StageInitialize, troupe.KindRunInitialized, "", &troupe.RunStart{Request: &request, Seed: request.Seed, Setup: []string{"causal_impact"}}},
		{troupe.StagePlan, troupe.KindPlanCreated, "", plan},
		{troupe.StageRoute, troupe.KindRouteDecided, "", &troupe.RoutingDecision{Target: "causal_impact", Reason: "rule: causal", Metadata: map[string]any{"rule": "r3", "score": 0.9}, Fallback: "gap_analyzer"}},
		{troupe.StageExecute, troupe.KindDispatchStarted, "", dispatch},
		{troupe.StageExecute, troupe.KindAgentProgress, "", &troupe.Progress{Kind: "replicate_done", Data: map[string]any{"replicate": 3.0, "of": 10.0}}},
		{troupe.StageExecute, troupe.KindStateDelta, "", &troupe.StateDelta{Set: map[string]any{"drivers": []any{"formulary"}, "done": true, "nothing": nil}}},
		{troupe.StageExecute, troupe.KindDispatchCompleted, troupe.StatusCompleted, completed},
		{troupe.StageExecute, troupe.KindRetryScheduled, "", &troupe.RetryScheduled{Attempt: 2, Backoff: 375 * time.Millisecond, Reason: "TIMEOUT", NextID: retryID, PreviousID: dispatchID}},
		{troupe.StageExecute, troupe.KindDispatchFailed, troupe.StatusTimeout, failed},
		{troupe.StageExecute, troupe.KindHumanAsked, "", &question},
		{troupe.StagePaused, troupe.KindRunPaused, "", outcome(troupe.RunPaused)},
		{troupe.StageInitialize, troupe.KindRunResumed, "", &troupe.RunStart{Request: &request, Seed: request.Seed}},
		{troupe.StageExecute, troupe.KindHumanAnswered, "", &troupe.Answer{QuestionID: "q1", Text: "looks right", Approved: true, Data: map[string]any{"note": "ok"}}},
		{troupe.StageExecute, troupe.KindWarning, "", &troupe.Warning{Message: "causal_impact: small sample in one territory", Code: "LOW_N"}},
		{troupe.StageExecute, troupe.KindBudgetExhausted, "", &troupe.Warning{Message: "cost budget of $2.50 spent", Code: troupe.CodeBudget}},
		{troupe.StageAggregate, troupe.KindRunAggregated, "", &troupe.Aggregation{
			AgentsExecuted:    []string{"causal_impact", "gap_analyzer"},
			ExecutionOrder:    []string{"causal_impact", "gap_analyzer"},
			CombinedResults:   map[string]any{"causal_impact": map[string]any{"significant": true}},
			OverallConfidence: 0.78,
			Synthesis:         "Formulary change explains most of the drop; the Midwest gap is secondary.",
			KeyInsights:       []string{"formulary", "territory gap"},
			ConflictsDetected: []troupe.Conflict{{
				Field: "effect",
				Values: []troupe.ConflictValue{
					{Agent: "causal_impact", Value: -0.12, Confidence: troupe.Ptr(0.82)},
					{Agent: "gap_analyzer", Value: -0.08},
				},
				Resolved: -0.12, Winner: "causal_impact", Reason: "highest confidence",
			}},
			ConsistencyScore:     0.64,
			TotalExecutionTimeMS: 31834,
			TotalTokensUsed:      troupe.Ptr[int64](5120),
			TotalCostDollars:     troupe.Ptr(0.031),
			ResolutionStrategy:   "highest_confidence",
			Resolved:             map[string]any{"effect": -0.12},
			Warnings:             []string{"one agent timed out"},
		}},
		// A kind troupe does not know: its payload is kept as raw JSON.
		{troupe.StageExecute, troupe.Kind("custom_metric"), "", json.RawMessage(`{"name":"latency_p95","value":1.5,"labels":["a","b"]}`)},
		// Neither payload nor context.
		{troupe.StageExecute, troupe.KindWarning, "", nil},
		{troupe.StageComplete, troupe.KindRunCompleted, "", outcome(troupe.RunCompleted)},
	}
	// A run ends with one terminal event: the other two end runs of their own.
	failedRun := []entry{entries[0], {troupe.StageFailed, troupe.KindRunFailed, "", outcome(troupe.RunFailed)}}
	cancelledRun := []entry{entries[0], {troupe.StageCancelled, troupe.KindRunCancelled, "", outcome(troupe.RunCancelled)}}

	build := func(run string, entries []entry) []troupe.Event {
		evs := make([]troupe.Event, len(entries))
		for i, e := range entries {
			seq := int64(i + 1)
			ev := troupe.Event{
				RunID: run, Seq: seq, Time: at(seq), Stage: e.stage, Kind: e.kind, Status: e.status,
				Context: tc, Data: e.data,
			}
			switch e.stage {
			case troupe.StageRoute, troupe.StageExecute:
				ev.Step = 1
				ev.DispatchID = dispatchID
				ev.Agent = "causal_impact"
			}
			if e.data == nil {
				ev.Context = nil
				ev.Step, ev.DispatchID, ev.Agent = 0, "", ""
			}
			evs[i] = ev
		}
		return evs
	}
	return [][]troupe.Event{build(run, entries), build(run+"-failed", failedRun), build(run+"-cancelled", cancelledRun)}
}

// allKinds is every kind troupe defines; fullRuns must cover each.
var allKinds = []troupe.Kind{
	troupe.KindRunInitialized, troupe.KindRunResumed, troupe.KindPlanCreated, troupe.KindRouteDecided,
	troupe.KindDispatchStarted, troupe.KindDispatchCompleted, troupe.KindDispatchFailed, troupe.KindRetryScheduled,
	troupe.KindAgentProgress, troupe.KindStateDelta, troupe.KindHumanAsked, troupe.KindHumanAnswered,
	troupe.KindWarning, troupe.KindBudgetExhausted, troupe.KindRunAggregated, troupe.KindRunCompleted,
	troupe.KindRunFailed, troupe.KindRunCancelled, troupe.KindRunPaused,
}

// largeEvent is an event whose payload is about n bytes of JSON, as an agent's long result is.
func largeEvent(run string, seq int64, n int) troupe.Event {
	ev := plainEvent(run, seq, "large")
	ev.Kind, ev.Status = troupe.KindDispatchCompleted, troupe.StatusCompleted
	const unit = "The formulary change explains the drop — «ünïcode» \"quoted\" \\ <html> & line\nbreaks.\t"
	text := strings.Repeat(unit, n/len(unit)+1)
	ev.Data = &troupe.Result{
		DispatchID: troupe.NewDispatchID(uint64(seq)), AgentName: "causal_impact", Status: troupe.StatusCompleted,
		AgentResult: map[string]any{"report": text}, AnalysisSummary: troupe.Ptr(unit),
		Errors: []troupe.ErrorInfo{}, Warnings: []string{}, StartedAt: at(seq), CompletedAt: at(seq + 1),
	}
	return ev
}
