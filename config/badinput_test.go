package config_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/troupehq/troupe/config"
)

// A file a user gets wrong is reported at its place, in the file's terms: never as a decoder's
// message ("json: cannot unmarshal…"), a library's formatting (9.223372036854776×10¹⁸,
// [3:3]) or a wrong type the file does not have ("got string" for a number).
func TestParseBadInput(t *testing.T) {
	const head = "version: 1\nagents: {a: {kind: builtin}}\n"
	tests := []struct {
		name string
		src  string
		want []string
	}{
		{"not UTF-8", "version: 1\nname: \"caf\xe9\"\nagents: {a: {kind: builtin}}\n", []string{
			"t.yaml:2:11: byte 0xe9 is not UTF-8: a configuration is UTF-8 text; save it as UTF-8",
		}},
		{"UTF-16", "\xff\xfev\x00e\x00r\x00", []string{
			"t.yaml:1:1: the file is UTF-16 text: a configuration is UTF-8; save it as UTF-8",
		}},
		{"control character", "version: 1\nname: a\x01b\nagents: {a: {kind: builtin}}\n", []string{
			"t.yaml:2:8: the control character U+0001 is not allowed in YAML; is this the file meant?",
		}},
		{"every duplicate key", "version: 1\nversion: 1\nagents:\n  a: {kind: builtin}\n  a: {kind: builtin}\n  b: {kind: builtin, kind: exec}\n", []string{
			`t.yaml:2:1: version: duplicate key "version": it is first on line 1; a key is given once`,
			`t.yaml:5:3: agents.a: duplicate key "a": it is first on line 4; a key is given once`,
			`t.yaml:6:22: agents.b.kind: duplicate key "kind": it is first on line 6; a key is given once`,
		}},
		{"integer past 64 bits", head + "budget: {max_dispatches: 18446744073709551615, max_concurrency: 9223372036854775808}\n", []string{
			"t.yaml:3:26: budget.max_dispatches: 18446744073709551615 is too large: want at most 9223372036854775807",
			"t.yaml:3:65: budget.max_concurrency: 9223372036854775808 is too large: want at most 9223372036854775807",
		}},
		{"integer past the YAML reader's", head + "budget: {max_dispatches: 99999999999999999999999}\n", []string{
			"t.yaml:3:26: budget.max_dispatches: got string, want integer; 99999999999999999999999 is too large a number: a whole number here is at most 9223372036854775807",
		}},
		{"a seed, negative or not, is 64 bits", "version: 1\nagents:\n  a: {kind: llm, llm: {model: m, seed: -9223372036854775809}}\n  b: {kind: llm, llm: {model: m, seed: -9223372036854775808}}\n", []string{
			"t.yaml:3:40: agents.a.llm.seed: got string, want integer; -9223372036854775809 is too large a number: a whole number here is at most 9223372036854775807",
		}},
		{"an llm agent's byte bounds", "version: 1\nagents:\n  a:\n    kind: llm\n    llm:\n      model: m\n      max_response_bytes: -1\n      max_tool_result_bytes: 9223372036854775808\n", []string{
			"t.yaml:7:27: agents.a.llm.max_response_bytes: -1 is too small: want 0 or more",
			"t.yaml:8:30: agents.a.llm.max_tool_result_bytes: 9223372036854775808 is too large: want at most 9223372036854775807",
		}},
		{"an http agent's byte bound", "version: 1\nagents:\n  a:\n    kind: http\n    http:\n      url: http://127.0.0.1:1/\n      max_response_bytes: -1\n", []string{
			"t.yaml:7:27: agents.a.http.max_response_bytes: -1 is too small: want 0 or more",
		}},
		{"a float past float64", head + "budget: {max_cost_dollars: 1.0e+400}\n", []string{
			"t.yaml:3:28: budget.max_cost_dollars: got string, want number; 1.0e+400 is too large a number",
		}},
		{"an exponent without a point", head + "budget: {max_dispatches: 1e3, max_cost_dollars: 2.5e1x, time: 1s}\nerror_policy: {retry: {multiplier: 15e-1}}\n", []string{
			"t.yaml:3:26: budget.max_dispatches: got string, want integer; an exponent needs a point in YAML (1.0e3, not 1e3): write 1000",
			"t.yaml:3:49: budget.max_cost_dollars: got string, want number",
			"t.yaml:4:36: error_policy.retry.multiplier: got string, want number; an exponent needs a point in YAML (1.0e3, not 1e3): write 15.0e-1",
		}},
		{"a quoted number", head + "budget: {max_dispatches: \"10\", max_cost_dollars: '2.5'}\n", []string{
			"t.yaml:3:26: budget.max_dispatches: got string, want integer; a number is written without quotes: 10",
			"t.yaml:3:50: budget.max_cost_dollars: got string, want number; a number is written without quotes: 2.5",
		}},
		{"a fraction for a whole number", head + "budget: {max_dispatches: 1.5}\n", []string{
			"t.yaml:3:26: budget.max_dispatches: got number, want integer; 1.5 is not a whole number",
		}},
		{"bounds in the file's digits", head + "error_policy: {retry: {max_attempts: 10000000000000000000}, min_success_rate: -0.5}\n", []string{
			"t.yaml:3:38: error_policy.retry.max_attempts: 10000000000000000000 is too large: want at most 100",
			"t.yaml:3:79: error_policy.min_success_rate: -0.5 is too small: want 0 or more",
		}},
		{"durations Go cannot hold", "version: 1\nagents:\n  a: {kind: builtin, timeout: 2562048h}\nbudget: {time: 99999999999h, default_timeout: 2562047h}\nerror_policy: {retry: {max_backoff: 9999999999999999999ns}}\nmcp_servers: {s: {url: \"http://x\", call_timeout: 3000000h}}\n", []string{
			`t.yaml:3:31: agents.a.timeout: "2562048h" is too long: a duration is at most 2562047h`,
			`t.yaml:4:16: budget.time: "99999999999h" is too long: a duration is at most 2562047h`,
			`t.yaml:5:37: error_policy.retry.max_backoff: "9999999999999999999ns" is too long: a duration is at most 2562047h`,
			`t.yaml:6:50: mcp_servers.s.call_timeout: "3000000h" is too long: a duration is at most 2562047h`,
		}},
		{"a string version", "version: \"1\"\nagents: {a: {kind: builtin}}\n", []string{
			`t.yaml:1:10: version: version is a number, not the string "1": write version: 1`,
		}},
		{"a key without a value", "version: 1\nagents:\n", []string{
			"t.yaml:2:9: agents: no value: want its fields, indented under it",
		}},
		{"agents as a list", "version: 1\nagents:\n  - a\n", []string{
			`t.yaml:3:3: agents: got array, want object; fields are written "name: value", not as "- " items of a list`,
		}},
		{"one item for a list", "version: 1\nagents: {a: {kind: exec, exec: {command: ./run.sh}}}\n", []string{
			`t.yaml:2:42: agents.a.exec.command: got string, want array; write a list, even of one item: ["./run.sh"]`,
		}},
		{"text for a boolean", "version: 1\nagents: {a: {kind: builtin}}\nrouting:\n  intents:\n    - {intent: x, primary: [a], sequence_required: yes}\n    - {intent: y, primary: [a], sequence_required: \"true\"}\n", []string{
			"t.yaml:5:52: routing.intents[0].sequence_required: got string, want boolean; yes is text in YAML 1.2: write true or false",
			"t.yaml:6:52: routing.intents[1].sequence_required: got string, want boolean; write true without quotes",
		}},
		{"a number for text", "version: 1\nname: 1.10\nagents: {a: {kind: builtin}}\n", []string{
			`t.yaml:2:7: name: got number, want string; quote it to make it text: "1.10"`,
		}},
		{"empty lists and strings", "version: 1\nagents:\n  a: {kind: exec, exec: {command: [\"\"]}}\n  s: {kind: sequential, sequential: {agents: []}}\nrouting: {intents: [{intent: x, primary: [a]}], exclusive_pairs: [[a]]}\n", []string{
			"t.yaml:3:36: agents.a.exec.command[0]: empty: give a value, or leave the field out where it is optional",
			"t.yaml:4:46: agents.s.sequential.agents: the list has 0 items; want at least 1 item",
			"t.yaml:5:67: routing.exclusive_pairs[0]: the list has 1 item; want at least 2 items",
		}},
		{"a key without its colon", "version: 1\nagents\n  a: {kind: builtin}\n", []string{
			`t.yaml:2:1: YAML syntax: unexpected key name; "agents" has no ':' after it: write agents:`,
		}},
		{"a nested key without its colon", "version: 1\nagents:\n  a:\n    kind: exec\n    exec  # the block\n      command: [x]\n", []string{
			`t.yaml:5:5: agents.a: YAML syntax: non-map value is specified; "exec" has no ':' after it: write exec:`,
		}},
		{"a parallel strategy and its vote", "version: 1\nagents:\n  a: {kind: builtin}\n  v: {kind: parallel, parallel: {agents: [a], strategy: majority_vote}}\n  w: {kind: parallel, parallel: {agents: [a], vote: verdict}}\n  x: {kind: parallel, parallel: {agents: [a], strategy: first_sucess}}\n", []string{
			"t.yaml:4:57: agents.v.parallel.strategy: majority_vote needs vote: the key of each agent's agent_result whose value is its answer",
			"t.yaml:5:53: agents.w.parallel.vote: vote is the answer counted under strategy majority_vote, and this group's strategy is collect_all: write strategy: majority_vote, or remove vote",
			`t.yaml:6:57: agents.x.parallel.strategy: value must be one of 'collect_all', 'first_success', 'majority_vote' (did you mean "first_success"?)`,
		}},
		{"patterns in words", "version: 1\nagents:\n  a: {kind: http, http: {url: \"ftp://x\", bearer_token_env: \"MY-TOKEN\"}}\n", []string{
			`t.yaml:3:31: agents.a.http.url: "ftp://x" is not an http:// or https:// URL`,
			`t.yaml:3:60: agents.a.http.bearer_token_env: "MY-TOKEN" is not an environment variable's name: a letter or _, then letters, digits and _`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, parseErrs(t, tt.src)); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

// What YAML allows at the head of a file is no part of the configuration: a byte order mark,
// which some editors start a UTF-8 file with, and a directive, %YAML or %TAG (tags are ignored).
func TestParseFileHead(t *testing.T) {
	for name, head := range map[string]string{
		"byte order mark": "\xef\xbb\xbf",
		"directive":       "%YAML 1.2\n---\n",
		"both":            "\xef\xbb\xbf%YAML 1.2\n---\n",
		"tag directive":   "%TAG !e! tag:example.com,2000:\n---\n",
	} {
		t.Run(name, func(t *testing.T) {
			f, err := config.Parse("t.yaml", []byte(head+"version: 1\nagents: {a: {kind: builtin}}\n"))
			if err != nil {
				t.Fatal(err)
			}
			if f.Version != 1 || len(f.Order) != 1 {
				t.Errorf("version %d, agents %v; want 1, [a]", f.Version, f.Order)
			}
		})
	}
}

// The YAML reader takes one directive before a document, and only with "---" after it: a file
// breaking either rule, or writing a directive wrongly, is told so in those words, at the
// directive at fault, not with the reader's "document not started" at the first one.
func TestParseDirectives(t *testing.T) {
	const doc = "---\nversion: 1\nagents: {a: {kind: builtin}}\n"
	tests := []struct {
		name string
		src  string
		want []string
	}{
		{"%YAML and %TAG", "%YAML 1.2\n%TAG !e! tag:example.com,2000:\n" + doc, []string{
			`t.yaml:2:1: YAML syntax: a second directive before the document: the YAML reader takes one (%YAML on line 1); remove one — a configuration needs neither, as troupe reads YAML 1.2 and ignores tags`,
		}},
		{"two %TAG, a comment between", "%TAG !e! tag:example.com,2000:\n# the other\n%TAG !f! tag:example.org,2000:\n" + doc, []string{
			`t.yaml:3:1: YAML syntax: a second directive before the document: the YAML reader takes one (%TAG on line 1); remove one — a configuration needs neither, as troupe reads YAML 1.2 and ignores tags`,
		}},
		{"no document start", "%TAG !e! tag:example.com,2000:\nversion: 1\nagents: {a: {kind: builtin}}\n", []string{
			`t.yaml:1:1: YAML syntax: the directive %TAG must be followed by a line "---" that starts the document`,
		}},
		{"nothing after", "%YAML 1.2\n", []string{
			`t.yaml:1:1: YAML syntax: the directive %YAML must be followed by a line "---" that starts the document`,
		}},
		{"inside the document", "version: 1\n%YAML 1.2\nagents: {a: {kind: builtin}}\n", []string{
			`t.yaml:2:1: YAML syntax: a directive (%YAML) goes at the head of the file, before the line "---" that starts the document`,
		}},
		{"%TAG without its prefix", "%TAG !e!\n" + doc, []string{
			`t.yaml:1:1: YAML syntax: a %TAG directive is a handle and a prefix, as in %TAG !e! tag:example.com,2000:`,
		}},
		{"%YAML with two versions", "%YAML 1.2 1.1\n" + doc, []string{
			`t.yaml:1:1: YAML syntax: a %YAML directive is a version, as in %YAML 1.2`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, parseErrs(t, tt.src)); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

// A document that crosses a bound is reported at the bound only: what was not read is not
// reported missing too.
func TestParseBoundAlone(t *testing.T) {
	got := parseErrs(t, laughs())
	want := []string{"t.yaml:7:45: x4[7]: alias *a3 expands too far: the document holds more than 100000 values, aliases expanded"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
}

// Every whole number of the schema has bounds the Go field holds, so that a number the schema
// accepts always decodes: one past int64 is a problem at its place, not a decoding failure
// with none.
func TestSchemaIntegersFitInt64(t *testing.T) {
	var root any
	if err := json.Unmarshal(config.Schema, &root); err != nil {
		t.Fatal(err)
	}
	n := 0
	var walk func(v any, path string)
	walk = func(v any, path string) {
		switch v := v.(type) {
		case map[string]any:
			if v["type"] == "integer" {
				n++
				lo, _ := v["minimum"].(float64)
				hi, _ := v["maximum"].(float64)
				if _, ok := v["minimum"]; !ok || lo < -(1<<63) {
					t.Errorf("%s: an integer without a minimum of at least -2^63", path)
				}
				if _, ok := v["maximum"]; !ok || hi > 1<<63-1 {
					t.Errorf("%s: an integer without a maximum of at most 2^63-1", path)
				}
			}
			for k, sub := range v {
				walk(sub, path+"/"+k)
			}
		case []any:
			for _, sub := range v {
				walk(sub, path+"/*")
			}
		}
	}
	walk(root, "")
	if n == 0 {
		t.Fatal("no integers found in the schema")
	}
}

// Files that cannot be read say why in a user's words, and a path that never ends (a device)
// is read only up to the bound.
func TestLoadUnreadable(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "troupe.yaml"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path, want string
	}{
		{"missing", filepath.Join(dir, "nope.yaml"), "config: " + filepath.Join(dir, "nope.yaml") + ": no such file or directory"},
		{"troupe.yaml is a directory", dir, "config: " + filepath.Join(dir, "troupe.yaml") + " is a directory, not a file"},
	}
	if os.Getuid() != 0 { // root reads a file of mode 0
		locked := filepath.Join(dir, "locked.yaml")
		if err := os.WriteFile(locked, []byte("version: 1\n"), 0o000); err != nil {
			t.Fatal(err)
		}
		tests = append(tests, struct{ name, path, want string }{"unreadable", locked, "config: " + locked + ": permission denied"})
	}
	if _, err := os.Stat("/dev/zero"); err == nil {
		tests = append(tests, struct{ name, path, want string }{"endless", "/dev/zero", "config: 1 problem\n/dev/zero: the file is more than 4 MiB; a configuration is at most 4 MiB (4194304 bytes)"})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := config.Load(tt.path)
			if err == nil || err.Error() != tt.want {
				t.Errorf("Load(%q) = %v, want %q", tt.path, err, tt.want)
			}
		})
	}
}

// errInternal reports a problem worded by a library rather than by the loader.
func errInternal(e *config.Error) bool {
	for _, s := range []string{"json: cannot", "json: unknown", "yaml: unmarshal", "cannot unmarshal", "stat ", "open ", "the schema accepted what the loader cannot read", "×10", "does not match pattern '"} {
		if strings.Contains(e.Problem, s) {
			return true
		}
	}
	return false
}

// "Did you mean" suggests a typo's correction, a swap of two letters included, and does not
// take a short name for a typo of any other: "x" is no typo of "a", nor "nope" of "pipe".
func TestClosest(t *testing.T) {
	for _, tt := range []struct {
		name       string
		candidates []string
		want       string
	}{
		{"sumarize", []string{"fetch", "summarize"}, "summarize"},
		{"agnets", []string{"agents", "name"}, "agents"},
		{"modle", []string{"model", "prompt"}, "model"},
		{"exce", []string{"builtin", "exec"}, "exec"},
		{"fech", []string{"fetch", "pipe"}, "fetch"},
		{"errorpolicy", []string{"error_policy"}, "error_policy"},
		{"x", []string{"a", "b"}, ""},
		{"nope", []string{"pipe", "fetch"}, ""},
		{"skip", []string{"skip_agent"}, ""},
	} {
		if got := config.Closest(tt.name, tt.candidates); got != tt.want {
			t.Errorf("Closest(%q, %q) = %q, want %q", tt.name, tt.candidates, got, tt.want)
		}
	}
}
