//go:build unix

package quickstart_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// total.sh promises POSIX sh and awk, and awks read a number beyond the float range
// differently: mawk and gawk as inf, BWK awk (macOS's and the BSDs', Debian's original-awk) as
// 0, and "inf" written back as 0 too. Whichever awk runs it, total reads the same numbers, and
// refuses one or a sum out of range rather than miscount it or write an inf. Each awk installed
// runs the cases; the default awk at least.
func TestTotalWithEveryAWK(t *testing.T) {
	ones := strings.Repeat("1", 400)
	nines := strings.Repeat("9", 308)
	// The least whole number that rounds to no float (2^1024 - 2^970), and one under it.
	const over = "179769313486231580793728971405303415079934132710037826936173778980444968292764750946649017977587207096330286416692887910946555547851940402630657488671505820681908902000708383676273854845817711531764475730270069855571366959622842914819860834936475292719074168444365510704342711559699508093042880177904174497792"
	under := "1797693134862315" + strings.Repeat("0", 293)
	cases := []struct {
		name  string
		query string
		want  string // the result's count and sum as "count sum"; "" when total must fail
		err   string // in stderr when it fails
	}{
		{"ordinary", "Summarise 1,234,567.5 and −2,000 and 0.25", "3 1232567.75", ""},
		{"400 digits", "Summarise " + ones + " and 2", "", "number out of range: 111111111111... (400 digits)"},
		{"400 digits, negative", "Summarise 2 and −" + ones, "", "number out of range: -11111111111... (400 digits)"},
		{"400 digits after a fraction point", "Summarise 1." + ones, "1 1.11111111111111", ""},
		{"leading zeros", "Summarise " + strings.Repeat("0", 400) + "7 and 1", "2 8", ""},
		{"the least out of range", "Summarise " + over, "", "number out of range: 179769313486... (309 digits)"},
		{"just in range", "Summarise " + under, "1 1.79769313486231e+308", ""},
		{"the sum", "Summarise " + nines + " " + nines, "", "the sum of the 2 numbers is out of range"},
		{"the sum, negative", "Summarise -" + nines + " -" + nines, "", "the sum of the 2 numbers is out of range"},
	}
	awks := map[string]string{}
	if p, err := exec.LookPath("awk"); err == nil {
		awks["awk"] = p
	}
	for _, name := range []string{"mawk", "gawk", "original-awk", "nawk", "bwk-awk", "busybox"} {
		if p, err := exec.LookPath(name); err == nil {
			awks[name] = p
		}
	}
	if len(awks) == 0 {
		t.Skip("no awk installed")
	}
	for name, path := range awks {
		dir := t.TempDir()
		if err := os.Symlink(path, filepath.Join(dir, "awk")); err != nil {
			t.Fatal(err)
		}
		env := append(os.Environ(), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"))
		for _, tt := range cases {
			t.Run(name+"/"+tt.name, func(t *testing.T) {
				in, err := json.Marshal(map[string]any{"dispatch_id": "disp_0000000000000001", "query": tt.query})
				if err != nil {
					t.Fatal(err)
				}
				cmd := exec.CommandContext(t.Context(), "./total.sh")
				cmd.Env, cmd.Stdin = env, strings.NewReader(string(in))
				var out, errOut strings.Builder
				cmd.Stdout, cmd.Stderr = &out, &errOut
				err = cmd.Run()
				if tt.want == "" {
					if err == nil {
						t.Errorf("succeeded: %s", out.String())
					} else if !strings.Contains(errOut.String(), tt.err) {
						t.Errorf("stderr lacks %q: %s", tt.err, errOut.String())
					}
					return
				}
				if err != nil {
					t.Fatalf("%v: %s", err, errOut.String())
				}
				var resp struct {
					Result struct {
						Count json.Number `json:"count"`
						Sum   json.Number `json:"sum"`
					} `json:"agent_result"`
				}
				if err := json.Unmarshal([]byte(out.String()), &resp); err != nil {
					t.Fatalf("the response is not JSON: %v\n%s", err, out.String())
				}
				if got := string(resp.Result.Count) + " " + string(resp.Result.Sum); got != tt.want {
					t.Errorf("count and sum %q, want %q", got, tt.want)
				}
			})
		}
	}
}
