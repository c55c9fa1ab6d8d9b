package main

import (
	"encoding/json"
	"math"
	"os/exec"
	"testing"
)

// The quickstart's agents read the same numbers from the query, whatever else it holds —
// characters the dispatch's JSON escapes (<, >, & as \u003c…, a quote as \"), digits of other
// scripts — and total adds them without rounding: report's count and mean are the query's.
func TestQuickstartFigures(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not installed: examples/quickstart has two Python agents")
	}
	tests := []struct {
		query string
		want  map[string]float64 // report's agent_result
	}{
		{"Summarise 4 < 8 & 16 > 2", map[string]float64{"count": 4, "mean": 7.5, "min": 2, "max": 16, "median": 6}},
		{`Summarise 4 "8" 15`, map[string]float64{"count": 3, "mean": 9, "min": 4, "max": 15, "median": 8}},
		{`Summarise 4 \"8\" 15`, map[string]float64{"count": 3, "mean": 9, "min": 4, "max": 15, "median": 8}},
		{"Summarise 12345.67 1", map[string]float64{"count": 2, "mean": 6173.335, "min": 1, "max": 12345.67, "median": 6173.335}},
		{"Summarise 1234567.5 2.25", map[string]float64{"count": 2, "mean": 617284.875, "min": 2.25, "max": 1234567.5, "median": 617284.875}},
		// A fullwidth digit is no number to total's [0-9]; nor to extremes.
		{"Summarise 4 ８ 16", map[string]float64{"count": 2, "mean": 10, "min": 4, "max": 16, "median": 10}},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			code, stdout, stderr := invoke(t, "run", "--output", "json", "../../examples/quickstart", tt.query)
			if code != exitOK {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			var rec struct {
				Results []struct {
					Agent  string         `json:"agent_name"`
					Result map[string]any `json:"agent_result"`
				} `json:"results"`
			}
			if err := json.Unmarshal([]byte(stdout), &rec); err != nil {
				t.Fatal(err)
			}
			var report map[string]any
			for _, r := range rec.Results {
				if r.Agent == "report" {
					report = r.Result
				}
			}
			for k, want := range tt.want {
				if got, ok := report[k].(float64); !ok || math.Abs(got-want) > 1e-9 {
					t.Errorf("report's %s = %v, want %v (agent_result %v)", k, report[k], want, report)
				}
			}
		})
	}
}
