package troupe_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The README promises that its commands run as written and that the tour's files are the ones
// in examples/quickstart. These tests hold it to that through the built CLI, as a reader would
// run it.

// readmeBlock is one fenced code block of README.md.
type readmeBlock struct {
	lang string // the fence's info string: sh, yaml, python, text, …
	file string // the path named on the line before the fence ("`examples/quickstart/x`:"), if any
	line int    // line of the opening fence, 1-based
	body string
}

// readmeBlocks returns README.md's fenced code blocks.
func readmeBlocks(t *testing.T) []readmeBlock {
	t.Helper()
	data, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	fileLine := regexp.MustCompile("^`([^`]+)`:$")
	var (
		blocks []readmeBlock
		open   *readmeBlock
		prev   string // the last non-blank line outside a block
	)
	for i, line := range strings.Split(string(data), "\n") {
		switch {
		case open != nil && line == "```":
			blocks = append(blocks, *open)
			open = nil
		case open != nil:
			open.body += line + "\n"
		case strings.HasPrefix(line, "```"):
			open = &readmeBlock{lang: strings.TrimPrefix(line, "```"), line: i + 1}
			if m := fileLine.FindStringSubmatch(prev); m != nil {
				open.file = m[1]
			}
		case strings.TrimSpace(line) != "":
			prev = line
		}
	}
	if open != nil {
		t.Fatalf("README.md:%d: code block never closed", open.line)
	}
	return blocks
}

// TestReadmeFilesMatch checks that every file the README shows ("`path`:" above a code block) is
// shown exactly as it is in the repository, and that the tour shows the quickstart workflow
// file and an agent in each of its two languages.
func TestReadmeFilesMatch(t *testing.T) {
	shown := map[string]bool{}
	for _, b := range readmeBlocks(t) {
		if b.file == "" {
			continue
		}
		shown[b.file] = true
		want, err := os.ReadFile(filepath.FromSlash(b.file))
		if err != nil {
			t.Errorf("README.md:%d shows %s: %v", b.line, b.file, err)
			continue
		}
		if b.body != string(want) {
			t.Errorf("README.md:%d: the block shown as %s differs from the file:\n%s", b.line, b.file, lineDiff(string(want), b.body))
		}
	}
	for _, f := range []string{"examples/quickstart/troupe.yaml", "examples/quickstart/total.sh", "examples/quickstart/report.py"} {
		if !shown[f] {
			t.Errorf("README.md does not show %s", f)
		}
	}
}

// lineDiff names the first line where got differs from want.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := range max(len(w), len(g)) {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return fmt.Sprintf("line %d: file has %q, README has %q", i+1, wl, gl)
		}
	}
	return "(they differ only in a final newline)"
}

// buildCLI builds cmd/troupe into a temporary directory and returns that directory.
func buildCLI(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.CommandContext(t.Context(), "go", "build", "-o", filepath.Join(dir, "troupe"), "./cmd/troupe")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/troupe: %v\n%s", err, out)
	}
	return dir
}

// runCLI runs the built CLI and returns its stdout, stderr and exit code.
func runCLI(t *testing.T, bin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "troupe"), args...)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("troupe %s: %v", strings.Join(args, " "), err)
	}
	return out.String(), errOut.String(), code
}

// TestQuickstart validates and runs examples/quickstart through the CLI and checks what its
// agents computed from the numbers in each question.
func TestQuickstart(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not installed: examples/quickstart has two Python agents")
	}
	bin := buildCLI(t)

	out, errOut, code := runCLI(t, bin, "validate", "examples/quickstart")
	if code != 0 || !strings.Contains(out, "ok — 3 agents") {
		t.Fatalf("troupe validate examples/quickstart: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}

	tests := []struct {
		query string
		want  map[string]float64 // report's agent_result
	}{
		{"Summarise 4 8 15 16 23 42", map[string]float64{"count": 6, "mean": 18, "min": 4, "max": 42, "range": 38, "median": 15.5}},
		{"Temperatures this week: -3.5, 2 and 10", map[string]float64{"count": 3, "mean": 8.5 / 3, "min": -3.5, "max": 10, "range": 13.5, "median": 2}},
		{"Summarise 1, 2 and 3.", map[string]float64{"count": 3, "mean": 2, "min": 1, "max": 3, "range": 2, "median": 2}},
		{"7", map[string]float64{"count": 1, "mean": 7, "min": 7, "max": 7, "range": 0, "median": 7}},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			out, errOut, code := runCLI(t, bin, "run", "--output", "json", "examples/quickstart", tt.query)
			if code != 0 {
				t.Fatalf("exit %d, want 0\nstderr: %s\nstdout: %s", code, errOut, out)
			}
			var record struct {
				Status  string `json:"status"`
				Results []struct {
					Agent  string         `json:"agent_name"`
					Status string         `json:"status"`
					Result map[string]any `json:"agent_result"`
				} `json:"results"`
			}
			if err := json.Unmarshal([]byte(out), &record); err != nil {
				t.Fatalf("the run record is not JSON: %v\n%s", err, out)
			}
			if record.Status != "completed" || len(record.Results) != 3 {
				t.Fatalf("status %q with %d results, want completed with 3:\n%s", record.Status, len(record.Results), out)
			}
			var report map[string]any
			for _, r := range record.Results {
				if r.Status != "completed" {
					t.Errorf("%s: status %q, want completed", r.Agent, r.Status)
				}
				if r.Agent == "report" {
					report = r.Result
				}
			}
			for k, want := range tt.want {
				got, ok := report[k].(float64)
				if !ok || math.Abs(got-want) > 1e-9 {
					t.Errorf("report's %s = %v, want %v (agent_result %v)", k, report[k], want, report)
				}
			}
		})
	}

	t.Run("no numbers", func(t *testing.T) {
		out, errOut, code := runCLI(t, bin, "run", "examples/quickstart", "How many numbers are there?")
		if code != 1 {
			t.Fatalf("exit %d, want 1 (failed)\nstdout: %s\nstderr: %s", code, out, errOut)
		}
		if !strings.Contains(out, "total failed") || !strings.Contains(out, "no numbers in the query") {
			t.Errorf("the output does not say that total failed and why:\n%s", out)
		}
	})
}

// TestReadmeCommands runs every command of the README's sh blocks, as a reader would, with the
// CLI built and on PATH as troupe (the README's `go run ./cmd/troupe` runs it too). A command
// succeeds unless a trailing comment says "exit N". go test and go install are not run here.
func TestReadmeCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the CLI and runs every README command")
	}
	shell, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not installed")
	}
	bin := buildCLI(t)
	path := bin + string(os.PathListSeparator) + os.Getenv("PATH")
	exitComment := regexp.MustCompile(`#.*\bexit (\d+)`)

	ran := 0
	for _, b := range readmeBlocks(t) {
		if b.lang != "sh" || b.file != "" { // a file's listing is not commands
			continue
		}
		sc := bufio.NewScanner(strings.NewReader(b.body))
		for n := 0; sc.Scan(); n++ {
			line := strings.TrimSpace(sc.Text())
			if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "go test") || strings.HasPrefix(line, "go install") {
				continue
			}
			want := 0
			if m := exitComment.FindStringSubmatch(line); m != nil {
				want, _ = strconv.Atoi(m[1])
			}
			command := strings.Replace(line, "go run ./cmd/troupe", "troupe", 1)
			t.Run(fmt.Sprintf("README.md:%d", b.line+1+n), func(t *testing.T) {
				for _, prog := range []string{"python3", "jq"} {
					if strings.Contains(command, prog) {
						if _, err := exec.LookPath(prog); err != nil {
							t.Skipf("%s not installed: %s", prog, line)
						}
					}
				}
				if strings.Contains(command, "examples/quickstart") {
					if _, err := exec.LookPath("python3"); err != nil {
						t.Skipf("python3 not installed: %s", line)
					}
				}
				ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
				defer cancel()
				cmd := exec.CommandContext(ctx, shell, "-o", "pipefail", "-c", command)
				cmd.Env = append(os.Environ(), "PATH="+path)
				out, err := cmd.CombinedOutput()
				code := 0
				var exit *exec.ExitError
				switch {
				case errors.As(err, &exit):
					code = exit.ExitCode()
				case err != nil:
					t.Fatalf("%s: %v", line, err)
				}
				if code != want {
					t.Errorf("%s\nexit %d, want %d; output:\n%s", line, code, want, out)
				}
			})
			ran++
		}
	}
	if ran < 10 {
		t.Errorf("ran %d README commands; the tour alone has more", ran)
	}
}

// TestReadmeConfigsValidate checks every complete workflow file the README shows without naming
// a file (a YAML block starting "version: 1") with troupe validate.
func TestReadmeConfigsValidate(t *testing.T) {
	var bin string
	checked := 0
	for _, b := range readmeBlocks(t) {
		if b.lang != "yaml" || b.file != "" || !strings.HasPrefix(b.body, "version: 1\n") {
			continue
		}
		if bin == "" {
			bin = buildCLI(t)
		}
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "troupe.yaml"), []byte(b.body), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, errOut, code := runCLI(t, bin, "validate", dir); code != 0 {
			t.Errorf("README.md:%d: troupe validate: exit %d\n%s%s", b.line, code, out, errOut)
		}
		checked++
	}
	if checked == 0 {
		t.Error("README.md shows no complete workflow file besides the quickstart's; this test checks nothing")
	}
}
