// Package quickstart_test runs the quickstart's exec agents as troupe runs them: a dispatch
// as JSON on stdin, a response as JSON on stdout.
package quickstart_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// execute runs an agent's command on a dispatch given as JSON and returns its stdout and
// stderr, and whether it exited with status 0.
func execute(t *testing.T, in []byte, command ...string) (stdout, stderr string, ok bool) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), command[0], command[1:]...)
	cmd.Stdin = bytes.NewReader(in)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if _, exited := err.(*exec.ExitError); err != nil && !exited {
		t.Fatalf("%v: %v", command, err)
	}
	return out.String(), errOut.String(), err == nil
}

// run runs an agent's command on a dispatch given as JSON and returns its agent_result. The
// response must be strict JSON: encoding/json rejects Infinity and NaN.
func run(t *testing.T, in []byte, command ...string) map[string]any {
	t.Helper()
	stdout, stderr, ok := execute(t, in, command...)
	if !ok {
		t.Fatalf("%v failed\nstderr: %s", command, stderr)
	}
	var resp struct {
		Result map[string]any `json:"agent_result"`
	}
	if err := json.Unmarshal([]byte(stdout), &resp); err != nil {
		t.Fatalf("%v: the response is not JSON: %v\n%s", command, err, stdout)
	}
	return resp.Result
}

// encodings are the ways a host may write a dispatch: troupe's encoding/json writes non-ASCII
// as UTF-8; Python's json.dumps, by default, as \uXXXX escapes.
var encodings = []struct {
	name   string
	encode func(t *testing.T, v any) []byte
}{
	{"utf-8", func(t *testing.T, v any) []byte {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}},
	{"ascii", func(t *testing.T, v any) []byte {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		for _, r := range string(b) { // non-ASCII occurs only inside strings
			switch {
			case r < 0x80:
				out.WriteRune(r)
			case r > 0xFFFF:
				r -= 0x10000
				fmt.Fprintf(&out, `\u%04x\u%04x`, 0xD800+(r>>10), 0xDC00+(r&0x3FF))
			default:
				fmt.Fprintf(&out, `\u%04x`, r)
			}
		}
		return []byte(out.String())
	}},
}

// total and extremes read the same numbers from a query — thousands grouped with commas
// included, which are one number, not three, and a minus sign written as U+2212, which is
// one — and report combines them.
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
		// U+2212 MINUS SIGN, as typeset text writes it, is a minus: "−5" is -5.
		{"Summarise −5 and 3", map[string]any{"count": 2.0, "mean": -1.0, "min": -5.0, "max": 3.0, "range": 8.0, "median": -1.0}},
		{"Summarise −1,500.5 −2 7", map[string]any{"count": 3.0, "mean": -498.5, "min": -1500.5, "max": 7.0, "range": 1507.5, "median": -2.0}},
		// A hyphen or a minus between two numbers is the second one's sign, either way.
		{"Summarise 10−4 and 10-4", map[string]any{"count": 4.0, "mean": 3.0, "min": -4.0, "max": 10.0, "range": 14.0, "median": 3.0}},
		// Other dashes are no minus: an en dash writes a range.
		{"Summarise 4–8", map[string]any{"count": 2.0, "mean": 6.0, "min": 4.0, "max": 8.0, "range": 4.0, "median": 6.0}},
		// A number may start at its point: .5 is a half, not 5.
		{"Summarise .5 and 1.5 and -.5", map[string]any{"count": 3.0, "mean": 0.5, "min": -0.5, "max": 1.5, "range": 2.0, "median": 0.5}},
	} {
		for _, enc := range encodings {
			t.Run(enc.name+"/"+tt.query, func(t *testing.T) {
				d := map[string]any{"dispatch_id": "disp_0000000000000001", "query": tt.query}
				total := run(t, enc.encode(t, d), "./total.sh")
				extremes := run(t, enc.encode(t, d), "python3", "extremes.py")
				d["upstream_results"] = []map[string]any{{"agent": "total", "result": total}, {"agent": "extremes", "result": extremes}}
				report := run(t, enc.encode(t, d), "python3", "report.py")
				if diff := cmp.Diff(tt.want, report, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
					t.Errorf("report (-want +got):\n%s\ntotal: %v\nextremes: %v", diff, total, extremes)
				}
				if sum, n := total["sum"].(float64), total["count"].(float64); math.Abs(sum/n-tt.want["mean"].(float64)) > 1e-9 {
					t.Errorf("total: sum %v of %v numbers", sum, n)
				}
			})
		}
	}
}

// A number, or a figure made of numbers, beyond the float range (about ±1.8e308) is an error
// that names it, never an Inf or a NaN in a result: each agent that meets one exits 1 with the
// reason on stderr, which troupe quotes in the dispatch's error.
func TestOutOfRange(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not installed: the quickstart has two Python agents")
	}
	ones := strings.Repeat("1", 400)
	nines := strings.Repeat("9", 308) // 1e308 - 1: in range, but two of them add up beyond it
	for _, tt := range []struct {
		name  string
		query string
		// The stderr of each agent that must fail holds every string listed; an agent not
		// listed must succeed. report runs only when total and extremes succeed.
		want map[string][]string
	}{
		{"400 digits", "Summarise " + ones + " and 2", map[string][]string{
			"total":    {"number out of range: 111111111111... (400 digits)"},
			"extremes": {"number out of range: 111111111111... (400 digits)"},
		}},
		{"400 digits, negative", "Summarise 2 and −" + ones, map[string][]string{
			"total":    {"number out of range: -11111111111... (400 digits)"},
			"extremes": {"number out of range: -11111111111... (400 digits)"},
		}},
		{"400 digits, after a fraction point", "Summarise 1." + ones, nil}, // 1.111…: in range
		{"the sum", "Summarise " + nines + " " + nines, map[string][]string{
			"total": {"out of range", "the sum of the 2 numbers"},
		}},
		{"the range", "Summarise -" + nines + " " + nines, map[string][]string{
			"report": {"out of range", "the range from -1e+308 to 1e+308"},
		}},
	} {
		for _, enc := range encodings {
			t.Run(enc.name+"/"+tt.name, func(t *testing.T) {
				d := map[string]any{"dispatch_id": "disp_0000000000000001", "query": tt.query}
				results := map[string]any{}
				for _, a := range []struct {
					name    string
					command []string
				}{
					{"total", []string{"./total.sh"}},
					{"extremes", []string{"python3", "extremes.py"}},
					{"report", []string{"python3", "report.py"}},
				} {
					if a.name == "report" {
						if len(results) < 2 {
							return
						}
						d["upstream_results"] = []map[string]any{{"agent": "total", "result": results["total"]}, {"agent": "extremes", "result": results["extremes"]}}
					}
					in := enc.encode(t, d)
					want, fails := tt.want[a.name]
					if !fails {
						results[a.name] = run(t, in, a.command...)
						continue
					}
					stdout, stderr, ok := execute(t, in, a.command...)
					if ok {
						t.Errorf("%s succeeded on %.40q…: %s", a.name, tt.query, stdout)
						continue
					}
					if stdout != "" {
						t.Errorf("%s failed, yet wrote a response: %s", a.name, stdout)
					}
					for _, w := range want {
						if !strings.Contains(stderr, w) {
							t.Errorf("%s's stderr lacks %q:\n%s", a.name, w, stderr)
						}
					}
				}
			})
		}
	}
}
