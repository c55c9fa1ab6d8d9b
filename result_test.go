package troupe_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/troupehq/troupe"
)

var (
	resultStart = time.Date(2025, 12, 30, 9, 0, 0, 0, time.UTC)
	resultEnd   = resultStart.Add(1500 * time.Millisecond)
)

// resultDoc is a completed causal_impact response as JSON.
func resultDoc() map[string]any {
	return map[string]any{
		"dispatch_id":       "disp_abc123abc123abcd",
		"session_id":        "sess_xyz",
		"query_id":          "qry_789",
		"agent_name":        "causal_impact",
		"status":            "completed",
		"agent_result":      map[string]any{"effect": -0.12, "drivers": []any{"access"}},
		"analysis_summary":  "NRx fell after the formulary change.",
		"confidence":        0.82,
		"errors":            []any{},
		"warnings":          []any{},
		"execution_time_ms": 1500,
		"started_at":        resultStart.Format(time.RFC3339Nano),
		"completed_at":      resultEnd.Format(time.RFC3339Nano),
	}
}

func decodeResultDoc(t *testing.T, reg troupe.AgentSet, edit func(doc map[string]any)) (*troupe.Result, error) {
	t.Helper()
	doc := resultDoc()
	if edit != nil {
		edit(doc)
	}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return troupe.DecodeResult(b, reg)
}

// decodeResultRaw decodes resultDoc without drop and with the literal members spliced in.
func decodeResultRaw(t *testing.T, reg troupe.AgentSet, drop string, members ...string) (*troupe.Result, error) {
	t.Helper()
	doc := resultDoc()
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
	return troupe.DecodeResult(b, reg)
}

func TestSeed000ResponseValidation(t *testing.T) {
	reg := seedRegistry(t)

	t.Run("completed example is valid", func(t *testing.T) {
		r, err := decodeResultDoc(t, reg, nil)
		if err != nil {
			t.Fatalf("DecodeResult: %v", err)
		}
		if !r.Succeeded() || r.Summary() != "NRx fell after the formulary change." {
			t.Errorf("Succeeded() = %v, Summary() = %q", r.Succeeded(), r.Summary())
		}
	})

	t.Run("required fields", func(t *testing.T) {
		for _, field := range []string{
			"dispatch_id", "session_id", "query_id", "agent_name", "status", "execution_time_ms", "started_at", "completed_at",
		} {
			t.Run("missing "+field, func(t *testing.T) {
				_, err := decodeResultDoc(t, reg, func(doc map[string]any) { delete(doc, field) })
				checkProblems(t, err, []string{field}, troupe.ErrInvalidResult)
			})
			// pydantic rejects None for a required non-Optional field; so must we.
			t.Run("null "+field, func(t *testing.T) {
				_, err := decodeResultDoc(t, reg, func(doc map[string]any) { doc[field] = nil })
				checkProblems(t, err, []string{field}, troupe.ErrInvalidResult)
			})
		}
		// 000: the model types these as plain str, which accepts "", and
		// validate_dispatch_response never looks at them.
		for _, field := range []string{"dispatch_id", "session_id", "query_id", "agent_name"} {
			t.Run("empty "+field, func(t *testing.T) {
				_, err := decodeResultDoc(t, reg, func(doc map[string]any) { doc[field] = "" })
				checkProblems(t, err, nil, nil)
			})
		}
	})

	t.Run("status matches content", func(t *testing.T) {
		tests := []struct {
			name string
			edit func(doc map[string]any)
			want []string
		}{
			{"completed with agent_result", nil, nil},
			{"completed without agent_result", func(doc map[string]any) { delete(doc, "agent_result") }, []string{"agent_result"}},
			{"completed with empty agent_result", func(doc map[string]any) { doc["agent_result"] = map[string]any{} }, []string{"agent_result"}},
			{"completed with null agent_result", func(doc map[string]any) { doc["agent_result"] = nil }, []string{"agent_result"}},
			{"failed with errors", func(doc map[string]any) {
				doc["status"] = "failed"
				doc["errors"] = []any{map[string]any{"code": "TIMEOUT", "message": "slow", "recoverable": true}}
			}, nil},
			{"failed without errors", func(doc map[string]any) { doc["status"] = "failed" }, []string{"errors"}},
			{"failed with null errors", func(doc map[string]any) { doc["status"] = "failed"; doc["errors"] = nil }, []string{"errors"}},
			{"timeout needs neither", func(doc map[string]any) { doc["status"] = "timeout"; delete(doc, "agent_result") }, nil},
			{"cancelled needs neither", func(doc map[string]any) { doc["status"] = "cancelled"; delete(doc, "agent_result") }, nil},
			{"unknown status", func(doc map[string]any) { doc["status"] = "done" }, []string{"status"}},
			{"status is case sensitive", func(doc map[string]any) { doc["status"] = "COMPLETED" }, []string{"status"}},
			{"empty status", func(doc map[string]any) { doc["status"] = "" }, []string{"status"}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				_, err := decodeResultDoc(t, reg, tt.edit)
				checkProblems(t, err, tt.want, troupe.ErrInvalidResult)
			})
		}
	})

	t.Run("timing is logical", func(t *testing.T) {
		tests := []struct {
			name string
			edit func(doc map[string]any)
			want []string
		}{
			{"zero execution time", func(doc map[string]any) { doc["execution_time_ms"] = 0 }, nil},
			{"negative execution time", func(doc map[string]any) { doc["execution_time_ms"] = -1 }, []string{"execution_time_ms"}},
			{"same start and end", func(doc map[string]any) { doc["completed_at"] = doc["started_at"] }, nil},
			{"completed before started", func(doc map[string]any) {
				doc["completed_at"] = resultStart.Add(-time.Nanosecond).Format(time.RFC3339Nano)
			}, []string{"completed_at"}},
			{"offsets are compared as instants", func(doc map[string]any) {
				// 10:00:01+01:00 is after 09:00:00Z.
				doc["completed_at"] = "2025-12-30T10:00:01+01:00"
			}, nil},
			{"zero started_at", func(doc map[string]any) { doc["started_at"] = time.Time{}.Format(time.RFC3339) }, []string{"started_at"}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				_, err := decodeResultDoc(t, reg, tt.edit)
				checkProblems(t, err, tt.want, troupe.ErrInvalidResult)
			})
		}
	})

	t.Run("next_agent must be known", func(t *testing.T) {
		tests := []struct {
			name     string
			agents   troupe.AgentSet
			next     any
			want     []string
			sentinel error
		}{
			{"absent", reg, nil, nil, nil},
			{"known", reg, "explainer", nil, nil},
			{"empty means none", reg, "", nil, nil},
			{"unknown", reg, "oracle", []string{"next_agent"}, troupe.ErrUnknownAgent},
			{"nil agent set skips the check", nil, "oracle", nil, nil},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				_, err := decodeResultDoc(t, tt.agents, func(doc map[string]any) {
					if tt.next != nil {
						doc["next_agent"] = tt.next
					}
				})
				checkProblems(t, err, tt.want, tt.sentinel)
			})
		}
	})

	t.Run("bounds", func(t *testing.T) {
		tests := []struct {
			field string
			value float64
			ok    bool
		}{
			{"confidence", 0, true},
			{"confidence", 1, true},
			{"confidence", 0.5, true},
			{"confidence", -0.01, false},
			{"confidence", 1.01, false},
			{"signal_quality", 0, true},
			{"signal_quality", 1, true},
			{"signal_quality", -1, false},
			{"signal_quality", 2, false},
			{"tokens_used", 0, true},
			{"tokens_used", -1, false},
			{"cost_dollars", 0, true},
			{"cost_dollars", -0.5, false},
		}
		// JSON cannot carry these; a Result built in Go can, and a NaN cost would pass
		// every budget check of the run that adds it up.
		for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
			t.Run(fmt.Sprintf("cost_dollars=%v", v), func(t *testing.T) {
				r, err := decodeResultDoc(t, reg, func(map[string]any) {})
				if err != nil {
					t.Fatal(err)
				}
				r.CostDollars = troupe.Ptr(v)
				checkProblems(t, r.Validate(reg), []string{"cost_dollars"}, troupe.ErrInvalidResult)
			})
		}
		for _, tt := range tests {
			t.Run(fmt.Sprintf("%s=%v", tt.field, tt.value), func(t *testing.T) {
				_, err := decodeResultDoc(t, reg, func(doc map[string]any) { doc[tt.field] = tt.value })
				var want []string
				if !tt.ok {
					want = []string{tt.field}
				}
				checkProblems(t, err, want, troupe.ErrInvalidResult)
			})
		}
	})

	t.Run("wrong JSON types name the field", func(t *testing.T) {
		tests := []struct {
			member string
			field  string
		}{
			{`"agent_name":1`, "agent_name"},
			{`"status":true`, "status"},
			{`"agent_result":[1]`, "agent_result"},
			{`"confidence":"high"`, "confidence"},
			{`"errors":"boom"`, "errors"},
			{`"warnings":[1]`, "warnings"},
			{`"requires_human":"no"`, "requires_human"},
			{`"execution_time_ms":1.5`, "execution_time_ms"},
			{`"execution_time_ms":"1500"`, "execution_time_ms"},
			{`"tokens_used":1e30`, "tokens_used"},
			{`"training_signals":{}`, "training_signals"},
			{`"started_at":5`, "started_at"},
			{`"completed_at":"later"`, "completed_at"},
			// Defaulted, not Optional: pydantic refuses None.
			{`"errors":null`, "errors"},
			{`"warnings":null`, "warnings"},
			{`"requires_human":null`, "requires_human"},
			{`"training_signals":null`, "training_signals"},
		}
		for _, tt := range tests {
			t.Run(tt.member, func(t *testing.T) {
				_, err := decodeResultRaw(t, reg, "", tt.member)
				if err == nil {
					t.Fatal("no error")
				}
				if problemFor(err, tt.field) == nil {
					t.Errorf("error does not name field %q: %#v", tt.field, err)
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
				drop:    "agent_name",
				members: []string{`"status":"failed"`, `"execution_time_ms":-5`, `"confidence":1.5`, `"signal_quality":-0.5`, `"next_agent":"oracle"`, `"completed_at":"2025-12-30T08:00:00Z"`},
				want:    []string{"agent_name", "errors", "execution_time_ms", "confidence", "signal_quality", "next_agent", "completed_at"},
			},
			{
				// DecodeResult promises missing, wrongly typed and invalid fields "together".
				name:    "wrong type and missing field",
				drop:    "session_id",
				members: []string{`"execution_time_ms":"1500"`},
				want:    []string{"session_id", "execution_time_ms"},
			},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				_, err := decodeResultRaw(t, reg, tt.drop, tt.members...)
				checkProblems(t, err, tt.want, nil)
			})
		}
	})

	t.Run("Validate on a built result", func(t *testing.T) {
		tests := []struct {
			name string
			r    troupe.Result
			want []string
		}{
			{"zero value", troupe.Result{}, []string{"status", "started_at"}},
			{"missing completed_at", troupe.Result{
				DispatchID: "d", SessionID: "s", QueryID: "q", AgentName: "explainer",
				Status: troupe.StatusTimeout, StartedAt: resultStart,
			}, []string{"completed_at"}},
			{"engine-built failure", troupe.Result{
				DispatchID: "d", SessionID: "s", QueryID: "q", AgentName: "explainer",
				Status: troupe.StatusFailed, Errors: []troupe.ErrorInfo{troupe.ErrorInfoOf(errors.New("boom"))},
				StartedAt: resultStart, CompletedAt: resultEnd, ExecutionTimeMS: 1500,
			}, nil},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				checkProblems(t, tt.r.Validate(reg), tt.want, troupe.ErrInvalidResult)
			})
		}
	})
}

func TestResultJSONFieldNames(t *testing.T) {
	r := &troupe.Result{
		DispatchID:      troupe.NewDispatchID(7),
		SessionID:       "s",
		QueryID:         "q",
		AgentName:       "causal_impact",
		Status:          troupe.StatusCompleted,
		AgentResult:     map[string]any{"effect": 1},
		AnalysisSummary: troupe.Ptr("summary"),
		Confidence:      troupe.Ptr(0.9),
		Errors:          []troupe.ErrorInfo{{Code: troupe.CodeTimeout, Message: "m"}},
		Warnings:        []string{"w"},
		NextAgent:       troupe.Ptr("explainer"),
		RequiresHuman:   true,
		Handoff:         map[string]any{"to": "explainer"},
		ExecutionTimeMS: 12,
		TokensUsed:      troupe.Ptr(int64(345)),
		ModelUsed:       troupe.Ptr("model"),
		StartedAt:       resultStart,
		CompletedAt:     resultEnd,
		SpanID:          troupe.Ptr("span"),
		TraceID:         troupe.Ptr("trace"),
		TrainingSignals: []troupe.TrainingSignal{{Signature: "Sig"}},
		SignalQuality:   troupe.Ptr(0.7),
		CostDollars:     troupe.Ptr(0.01),
		Annotations:     map[string]any{"pii": "none"},
	}
	checkJSONKeys(t, r, []string{
		// identification
		"dispatch_id", "session_id", "query_id", "agent_name",
		// status
		"status",
		// results
		"agent_result", "analysis_summary", "confidence",
		// errors
		"errors", "warnings",
		// routing
		"next_agent", "requires_human",
		// handoff
		"handoff",
		// metadata
		"execution_time_ms", "tokens_used", "model_used", "started_at", "completed_at",
		// observability
		"span_id", "trace_id",
		// DSPy signals
		"training_signals", "signal_quality",
		// troupe extensions, documented on Result
		"cost_dollars", "annotations",
	})
	t.Run("error entries follow seed 003", func(t *testing.T) {
		checkJSONKeys(t, troupe.ErrorInfo{Code: "c", Message: "m", Recoverable: true, FallbackAction: "retry", Details: map[string]any{"k": 1}},
			[]string{"code", "message", "recoverable", "fallback_action", "details"})
	})
}

func TestResultAccessors(t *testing.T) {
	tests := []struct {
		name      string
		r         *troupe.Result
		succeeded bool
		summary   string
	}{
		{"nil", nil, false, ""},
		{"zero", &troupe.Result{}, false, ""},
		{"completed", &troupe.Result{Status: troupe.StatusCompleted, AnalysisSummary: troupe.Ptr("s")}, true, "s"},
		{"failed", &troupe.Result{Status: troupe.StatusFailed, AnalysisSummary: troupe.Ptr("")}, false, ""},
		{"timeout", &troupe.Result{Status: troupe.StatusTimeout}, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.r.Succeeded(); got != tt.succeeded {
				t.Errorf("Succeeded() = %v, want %v", got, tt.succeeded)
			}
			if got := tt.r.Summary(); got != tt.summary {
				t.Errorf("Summary() = %q, want %q", got, tt.summary)
			}
		})
	}
}

var resultCorpus = []string{
	// completed, the shape of seed 000's AgentDispatchResponse
	`{"dispatch_id":"disp_abc123abc123abcd","session_id":"sess_xyz","query_id":"qry_789","agent_name":"causal_impact","status":"completed","agent_result":{"effect":-0.12},"analysis_summary":"NRx fell.","confidence":0.82,"errors":[],"warnings":["small sample"],"next_agent":"gap_analyzer","requires_human":false,"handoff":{"focus":"Midwest"},"execution_time_ms":1500,"tokens_used":1200,"model_used":"m","started_at":"2025-12-30T09:00:00Z","completed_at":"2025-12-30T09:00:01.5Z","span_id":"sp","trace_id":"tr","training_signals":[{"signature":"CausalSignature","input":{"q":"x"},"output":{"a":"y"},"quality":0.9}],"signal_quality":0.9}`,
	`{"dispatch_id":"disp_def456def456def4","session_id":"s","query_id":"q","agent_name":"gap_analyzer","status":"failed","errors":[{"code":"TIMEOUT","message":"slow","recoverable":true,"fallback_action":"retry","details":{}}],"warnings":[],"execution_time_ms":30000,"started_at":"2025-12-30T09:00:00+01:00","completed_at":"2025-12-30T09:00:30+01:00"}`,
	`{"dispatch_id":"d","session_id":"s","query_id":"q","agent_name":"explainer","status":"timeout","execution_time_ms":0,"started_at":"2025-12-30T09:00:00Z","completed_at":"2025-12-30T09:00:00Z","cost_dollars":0,"annotations":{"guard":"ok"},"agent_result":{}}`,
	// failed with an error dict of no shape troupe knows, as seed 000's List[Dict[str, Any]] allows
	`{"dispatch_id":"","session_id":"","query_id":"","agent_name":"","status":"failed","errors":[{"error":"ValueError: no rows","node":"estimate","code":404,"message":null}],"execution_time_ms":5,"started_at":"2025-12-30T09:00:00Z","completed_at":"2025-12-30T09:00:01Z"}`,
	// broken
	`{"dispatch_id":"d","session_id":"s","query_id":"q","agent_name":"explainer","status":"completed","execution_time_ms":-1,"started_at":"2025-12-30T09:00:00Z","completed_at":"2025-12-30T08:00:00Z","confidence":1.5,"next_agent":"oracle"}`,
	`{"status":"failed"}`,
	`{"dispatch_id":"d","session_id":"s","query_id":"q","agent_name":"explainer","status":"timeout","execution_time_ms":null,"started_at":"2025-12-30T09:00:00Z","completed_at":"2025-12-30T09:00:00Z"}`,
	`{"dispatch_id":"d","session_id":"s","query_id":"q","agent_name":"explainer","status":"timeout","execution_time_ms":1,"started_at":5,"completed_at":"2025-12-30T09:00:00Z"}`,
	`{}`, `null`, `[]`, `{"errors":[{"code":1}]}`, `{"execution_time_ms":1e99}`,
}

// resultOpts treats nil and empty as equal: omitempty maps do not survive JSON when empty.
var resultOpts = cmp.Options{cmpopts.EquateEmpty()}

// The valid seeds must decode, or the fuzz target's round trip is never exercised on them.
func TestDecodeResultCorpus(t *testing.T) {
	reg := seedRegistry(t)
	for i, s := range resultCorpus[:4] {
		if _, err := troupe.DecodeResult([]byte(s), reg); err != nil {
			t.Errorf("seed %d: %v", i, err)
		}
	}
}

func FuzzDecodeResult(f *testing.F) {
	for _, s := range resultCorpus {
		f.Add([]byte(s))
	}
	reg := seedRegistry(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := troupe.DecodeResult(data, reg)
		if err != nil {
			var ve *troupe.ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("error is not a *ValidationError: %#v", err)
			}
			return
		}
		if r == nil {
			t.Fatal("nil result and nil error")
		}
		if err := r.Validate(reg); err != nil {
			t.Fatalf("decoded without error but Validate fails: %v", err)
		}
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatalf("Marshal: %v", err)
		}
		again, err := troupe.DecodeResult(b, reg)
		if err != nil {
			t.Fatalf("re-decoding %s: %v", b, err)
		}
		if diff := cmp.Diff(r, again, resultOpts); diff != "" {
			t.Fatalf("round trip through %s (-first +second):\n%s", b, diff)
		}
	})
}

// Seed 000's models are pydantic's, whose datetime reads a timestamp without an offset, and
// whose own default (dispatched_at's datetime.utcnow) makes one: an agent that builds its
// response with datetime.utcnow() sends "2025-12-30T09:00:00.123456". Such a time is UTC; a
// space between date and time (Python's str of a datetime) is read as the T it stands for.
func TestSeed000PythonTimestamps(t *testing.T) {
	reg := seedRegistry(t)
	tests := []struct {
		name           string
		started, ended string
		wantStart      time.Time
		want           []string // fields with problems
	}{
		{"isoformat of utcnow", "2025-12-30T09:00:00.123456", "2025-12-30T09:00:01.623456", resultStart.Add(123456 * time.Microsecond), nil},
		{"whole seconds", "2025-12-30T09:00:00", "2025-12-30T09:00:02", resultStart, nil},
		{"str of a datetime", "2025-12-30 09:00:00", "2025-12-30 09:00:01.5", resultStart, nil},
		{"str of an aware datetime", "2025-12-30 10:00:00+01:00", "2025-12-30T09:00:01Z", resultStart, nil},
		{"naive and aware compared as UTC", "2025-12-30T09:00:00", "2025-12-30T09:00:01+00:00", resultStart, nil},
		{"still in order", "2025-12-30T09:00:02", "2025-12-30T09:00:01", time.Time{}, []string{"completed_at"}},
		{"not a time", "2025-12-30T09:00:00", "2025-12-30 later", time.Time{}, []string{"completed_at"}},
		{"no such hour", "2025-12-30T25:00:00", "2025-12-30T09:00:01", time.Time{}, []string{"started_at"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := decodeResultDoc(t, reg, func(doc map[string]any) {
				doc["started_at"], doc["completed_at"] = tt.started, tt.ended
			})
			checkProblems(t, err, tt.want, nil)
			if tt.want == nil && err == nil && !r.StartedAt.Equal(tt.wantStart) {
				t.Errorf("StartedAt = %v, want %v", r.StartedAt, tt.wantStart)
			}
		})
	}
	t.Run("dispatched_at", func(t *testing.T) {
		d, err := decodeDispatchDoc(t, reg, func(doc map[string]any) { doc["dispatched_at"] = "2025-12-18T08:30:00.5" })
		if err != nil {
			t.Fatalf("DecodeDispatch: %v", err)
		}
		if want := time.Date(2025, 12, 18, 8, 30, 0, 5e8, time.UTC); !d.DispatchedAt.Equal(want) {
			t.Errorf("DispatchedAt = %v, want %v", d.DispatchedAt, want)
		}
	})
}

// Seed 000's lists hold dicts and strs, and pydantic refuses None for an item of either: an
// errors list of [null] is no error a failed status can be reported by, nor is [null] an
// upstream result or a dependency. encoding/json would keep each as a zero value.
func TestSeed000NullListItems(t *testing.T) {
	reg := seedRegistry(t)
	failed := `"status":"failed"`
	results := []struct {
		members []string
		want    []string
	}{
		{[]string{failed, `"errors":[null]`}, []string{"errors[0]"}},
		{[]string{failed, `"errors":[{"code":"TIMEOUT","message":"slow"},null]`}, []string{"errors[1]"}},
		{[]string{`"warnings":["slow",null]`}, []string{"warnings[1]"}},
		{[]string{`"training_signals":[null]`}, []string{"training_signals[0]"}},
		{[]string{failed, `"errors":[{"code":"TIMEOUT","message":"null"}]`, `"warnings":["null"]`}, nil},
	}
	for _, tt := range results {
		t.Run(strings.Join(tt.members, ","), func(t *testing.T) {
			_, err := decodeResultRaw(t, reg, "", tt.members...)
			checkProblems(t, err, tt.want, troupe.ErrInvalidResult)
		})
	}
	dispatches := []struct {
		member string
		want   []string
	}{
		{`"upstream_results":[null]`, []string{"upstream_results[0]"}},
		{`"depends_on":["causal_impact",null]`, []string{"depends_on[1]"}},
		{`"depends_on":["causal_impact"]`, nil},
	}
	for _, tt := range dispatches {
		t.Run(tt.member, func(t *testing.T) {
			// Without agents to check names against, so that only the null is at fault.
			_, err := decodeDispatchRaw(t, nil, "", tt.member)
			checkProblems(t, err, tt.want, troupe.ErrInvalidDispatch)
		})
	}
}

// A result's member named as a field only ignoring case is an extra member, ignored, as in
// seed 000's pydantic model: "Confidence" overrode the confidence the agent gave, and
// "Status" could turn a failed result completed. A training signal's members match exactly too.
func TestDecodeResultMatchesNamesExactly(t *testing.T) {
	reg := seedRegistry(t)
	r, err := decodeResultRaw(t, reg, "", `"Confidence":0.1`, `"STATUS":"failed"`,
		`"training_signals":[{"signature":"S","Quality":0.9,"quality":0.4}]`)
	if err != nil {
		t.Fatalf("DecodeResult: %v", err)
	}
	if r.Confidence == nil || *r.Confidence != 0.82 || r.Status != troupe.StatusCompleted {
		t.Errorf("confidence %v, status %q; want 0.82 and completed, the members spelled as the seed spells them", r.Confidence, r.Status)
	}
	if len(r.TrainingSignals) != 1 || r.TrainingSignals[0].Quality == nil || *r.TrainingSignals[0].Quality != 0.4 {
		t.Errorf("training signals %+v; want one of quality 0.4", r.TrainingSignals)
	}
}
