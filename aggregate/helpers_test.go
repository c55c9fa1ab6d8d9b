package aggregate_test

import (
	"time"

	"github.com/troupehq/troupe"
)

var t0 = time.Date(2025, 3, 4, 10, 0, 0, 0, time.UTC)

type mod func(*troupe.Result)

// result builds a valid completed result of agent, completing at t0+1s.
func result(agent string, ar map[string]any, mods ...mod) *troupe.Result {
	r := &troupe.Result{
		DispatchID:      "disp_" + agent,
		SessionID:       "sess_xyz",
		QueryID:         "qry_789",
		AgentName:       agent,
		Status:          troupe.StatusCompleted,
		AgentResult:     ar,
		Errors:          []troupe.ErrorInfo{},
		Warnings:        []string{},
		StartedAt:       t0,
		CompletedAt:     t0.Add(time.Second),
		TrainingSignals: []troupe.TrainingSignal{},
	}
	for _, m := range mods {
		m(r)
	}
	return r
}

func conf(c float64) mod   { return func(r *troupe.Result) { r.Confidence = troupe.Ptr(c) } }
func summary(s string) mod { return func(r *troupe.Result) { r.AnalysisSummary = troupe.Ptr(s) } }
func tokens(n int64) mod   { return func(r *troupe.Result) { r.TokensUsed = troupe.Ptr(n) } }
func cost(d float64) mod   { return func(r *troupe.Result) { r.CostDollars = troupe.Ptr(d) } }
func took(ms int64) mod    { return func(r *troupe.Result) { r.ExecutionTimeMS = ms } }
func doneAt(sec int) mod {
	return func(r *troupe.Result) { r.CompletedAt = t0.Add(time.Duration(sec) * time.Second) }
}
func status(s troupe.Status) mod {
	return func(r *troupe.Result) {
		r.Status = s
		if s == troupe.StatusFailed {
			r.Errors = []troupe.ErrorInfo{{Code: troupe.CodeAgentError, Message: "model unavailable", Recoverable: true}}
		}
	}
}

// cv is a conflict value; c < 0 means no confidence reported.
func cv(agent string, value any, c float64) troupe.ConflictValue {
	v := troupe.ConflictValue{Agent: agent, Value: value}
	if c >= 0 {
		v.Confidence = troupe.Ptr(c)
	}
	return v
}
