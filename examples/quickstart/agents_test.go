// Package quickstart_test runs the quickstart's exec agents as troupe runs them: a dispatch
// as JSON on stdin, a response as JSON on stdout.
package quickstart_test

import (
	"bytes"
	"encoding/json"
	"math"
	"os/exec"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// run runs an agent's command on a dispatch and returns its agent_result.
func run(t *testing.T, dispatch map[string]any, command ...string) map[string]any {
	t.Helper()
	in, err := json.Marshal(dispatch)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), command[0], command[1:]...)
	cmd.Stdin = bytes.NewReader(in)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v: %v\nstderr: %s", command, err, errOut.String())
	}
	var resp struct {
		Result map[string]any `json:"agent_result"`
	}
	if err := json.Unmarshal(out.Bytes(), &resp); err != nil {
		t.Fatalf("%v: the response is not JSON: %v\n%s", command, err, out.String())
	}
	return resp.Result
}

// total and extremes read the same numbers from a query — thousands grouped with commas
// included, which are one number, not three — and report combines them.
func TestAgentsReadTheSameNumbers(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not installed: the quickstart has two Python agents")
	}
	for _, tt := range []struct {
		query string
		want  map[string]any // report's agent_result
	}{
		{"Summarise 4 8 15 16 23 42", map[string]any{"count": 6.0, "mean": 18.0, "min": 4.0, "max": 42.0, "range": 38.0, "median": 15.5}},
		{"Summarise 1,000 and 2", map[string]any{"count": 2.0, "mean": 501.0, "min": 2.0, "max": 1000.0, "range": 998.0, "median": 501.0}},
		{"Summarise 1,234,567.5 and -2,000", map[string]any{"count": 2.0, "mean": 616283.75, "min": -2000.0, "max": 1234567.5, "range": 1236567.5, "median": 616283.75}},
		// Commas between single digits separate a list.
		{"Summarise 4,8,15,16,23,42", map[string]any{"count": 6.0, "mean": 18.0, "min": 4.0, "max": 42.0, "range": 38.0, "median": 15.5}},
	} {
		t.Run(tt.query, func(t *testing.T) {
			d := map[string]any{"dispatch_id": "disp_0000000000000001", "query": tt.query}
			total := run(t, d, "./total.sh")
			extremes := run(t, d, "python3", "extremes.py")
			d["upstream_results"] = []map[string]any{{"agent": "total", "result": total}, {"agent": "extremes", "result": extremes}}
			report := run(t, d, "python3", "report.py")
			if diff := cmp.Diff(tt.want, report, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
				t.Errorf("report (-want +got):\n%s\ntotal: %v\nextremes: %v", diff, total, extremes)
			}
			if sum, n := total["sum"].(float64), total["count"].(float64); math.Abs(sum/n-tt.want["mean"].(float64)) > 1e-9 {
				t.Errorf("total: sum %v of %v numbers", sum, n)
			}
		})
	}
}
