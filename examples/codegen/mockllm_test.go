package codegen_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/troupehq/troupe/agent/cassette"
	"github.com/troupehq/troupe/examples/codegen"
	"github.com/troupehq/troupe/internal/peers"
)

// The cassettes in testdata were recorded against @dwmkerr/mock-llm, a third-party
// OpenAI-compatible server from the npm registry, scripted by script below: each rule matches
// an agent by its system prompt and a task by its text, and answers what a model might.
// TROUPE_CASSETTE=record re-records them (mock-llm must be installed: npm ci --prefix .ci/peers).

// endpoint is the base URL the cassettes name; while recording, requests to it are carried to
// mock-llm on a loopback port.
const endpoint = "http://llm.invalid/v1"

// testKey is the API key the recording runs with: it must never reach a cassette.
const testKey = "sk-codegen-test-key-do-not-record"

// rule is one scripted answer: when the system prompt contains agent and the last message
// contains task, answer (a JSON object) is the assistant's content.
type rule struct {
	agent, task string
	answer      map[string]any
	usage       [2]int // prompt, completion tokens
}

const (
	sumTask     = "Write a Go function Sum(xs []int) int that returns the sum of the integers in xs."
	reverseTask = "Write a Go function Reverse(s string) string that reverses a string by runes."
	clampTask   = "Write a Go function Clamp(x, lo, hi int) int that limits x to the range [lo, hi]."
)

var script = []rule{
	// Review of Sum: a specification, code that follows it, an approval.
	{"You are the analyzer", sumTask, map[string]any{
		"summary": "Sum returns the total of a slice of ints, 0 for an empty or nil slice.", "function_name": "Sum",
		"signature":    "func Sum(xs []int) int",
		"requirements": []string{"return the arithmetic sum of every element", "do not modify xs"},
		"edge_cases":   []string{"nil slice returns 0", "empty slice returns 0", "negative numbers"},
	}, [2]int{180, 60}},
	{"You are the generator", sumTask, map[string]any{
		"summary": "Ranges over xs accumulating a running total.",
		"code":    "package sum\n\n// Sum returns the sum of xs; 0 when xs is empty or nil.\nfunc Sum(xs []int) int {\n\ttotal := 0\n\tfor _, x := range xs {\n\t\ttotal += x\n\t}\n\treturn total\n}\n",
	}, [2]int{320, 70}},
	{"You are the reviewer", sumTask, map[string]any{
		"summary": "The code meets the specification, including nil and empty slices.", "verdict": "approve", "issues": []string{},
	}, [2]int{410, 30}},

	// Review of Clamp: the generator's code does not parse.
	{"You are the analyzer", clampTask, map[string]any{
		"summary": "Clamp limits x to [lo, hi].", "function_name": "Clamp", "signature": "func Clamp(x, lo, hi int) int",
		"requirements": []string{"return lo when x < lo", "return hi when x > hi", "else x"},
		"edge_cases":   []string{"lo > hi"},
	}, [2]int{170, 50}},
	{"You are the generator", clampTask, map[string]any{
		"summary": "Compares x with both bounds.",
		"code":    "package clamp\n\nfunc Clamp(x, lo, hi int) int {\n\tif x < lo {\n\t\treturn lo\n\t}\n\treturn min(x, hi\n}\n",
	}, [2]int{300, 40}},

	// Vote on Sum: a and b write the same program differently; c indexes instead.
	{"You are implementer_a", sumTask, map[string]any{
		"summary": "Range loop with an accumulator.",
		"code":    "package sum\n\n// Sum adds up xs.\nfunc Sum(xs []int) int {\n\ttotal := 0\n\tfor _, x := range xs {\n\t\ttotal += x\n\t}\n\treturn total\n}\n",
	}, [2]int{150, 45}},
	{"You are implementer_b", sumTask, map[string]any{
		"summary": "Accumulate over a range.",
		"code":    "```go\npackage main\n\nfunc Sum(nums []int) (int) {\n\ts := 0 // running sum\n\n\tfor _, n := range nums { s += n }\n\treturn s\n}\n```",
	}, [2]int{150, 40}},
	{"You are implementer_c", sumTask, map[string]any{
		"summary": "Index loop.",
		"code":    "package sum\n\nfunc Sum(xs []int) int {\n\tt := 0\n\tfor i := 0; i < len(xs); i++ {\n\t\tt += xs[i]\n\t}\n\treturn t\n}\n",
	}, [2]int{150, 50}},

	// Vote on Reverse: two different algorithms and one that does not parse — no majority.
	{"You are implementer_a", reverseTask, map[string]any{
		"summary": "Swap runes in place.",
		"code":    "package rev\n\nfunc Reverse(s string) string {\n\tr := []rune(s)\n\tfor i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {\n\t\tr[i], r[j] = r[j], r[i]\n\t}\n\treturn string(r)\n}\n",
	}, [2]int{150, 60}},
	{"You are implementer_b", reverseTask, map[string]any{
		"summary": "Prepend each rune.",
		"code":    "package rev\n\nfunc Reverse(s string) string {\n\tout := \"\"\n\tfor _, c := range s {\n\t\tout = string(c) + out\n\t}\n\treturn out\n}\n",
	}, [2]int{150, 50}},
	{"You are implementer_c", reverseTask, map[string]any{
		"summary": "Reverse the runes.",
		"code":    "package rev\n\nfunc Reverse(s string) string {\n\treturn slices.Reverse([]rune(s)\n",
	}, [2]int{150, 30}},
}

// mockLLMConfig renders script as mock-llm's configuration (JSON is YAML): a first rule that
// answers anything unscripted with a 400 naming it, then one rule per scripted answer (mock-llm
// lets the last matching rule win).
func mockLLMConfig(t *testing.T) []byte {
	t.Helper()
	type response struct {
		Status  int    `json:"status"`
		Content string `json:"content"`
	}
	type mrule struct {
		Path     string   `json:"path"`
		Method   string   `json:"method"`
		Match    string   `json:"match"`
		Response response `json:"response"`
	}
	rules := []mrule{{Path: "/v1/chat/completions", Method: "POST", Match: "@", Response: response{Status: 400,
		Content: `{"error": {"message": "mock-llm: no scripted answer for this request", "type": "invalid_request_error"}}`}}}
	for _, r := range script {
		content, err := json.Marshal(r.answer)
		if err != nil {
			t.Fatal(err)
		}
		body, err := json.Marshal(map[string]any{
			"id": "chatcmpl-codegen", "object": "chat.completion", "created": 1700000000, "model": "mock-model",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": string(content)}}},
			"usage": map[string]any{"prompt_tokens": r.usage[0], "completion_tokens": r.usage[1], "total_tokens": r.usage[0] + r.usage[1]},
		})
		if err != nil {
			t.Fatal(err)
		}
		rules = append(rules, mrule{Path: "/v1/chat/completions", Method: "POST", Response: response{Status: 200, Content: string(body)},
			Match: fmt.Sprintf("contains(body.messages[0].content, '%s') && contains(body.messages[-1].content, '%s')", r.agent, r.task)})
	}
	out, err := json.Marshal(map[string]any{"rules": rules})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// startMockLLM runs mock-llm with the script on a free loopback port and returns its URL once
// it reports listening; the process is killed and waited for at cleanup.
func startMockLLM(t *testing.T) *url.URL {
	t.Helper()
	bin := peers.Bin(t, "mock-llm")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "mock-llm.yaml"), mockLLMConfig(t), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	_, port, _ := net.SplitHostPort(addr)

	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--config", filepath.Join(dir, "mock-llm.yaml"))
	cmd.Dir, cmd.Env, cmd.Stderr = dir, append(os.Environ(), "HOST=127.0.0.1", "PORT="+port), os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	drained := make(chan struct{})
	t.Cleanup(func() { cancel(); <-drained; cmd.Wait() })
	ready := make(chan bool, 1)
	go func() {
		defer close(drained)
		lines := bufio.NewScanner(stdout)
		said := false
		for lines.Scan() {
			if !said && strings.Contains(lines.Text(), "server running on") {
				said = true
				ready <- true
			}
		}
		if !said {
			ready <- false
		}
	}()
	if !<-ready {
		t.Fatal("mock-llm exited before listening")
	}
	return &url.URL{Scheme: "http", Host: addr}
}

// toLoopback carries requests for endpoint to mock-llm, leaving the URL the cassette records.
type toLoopback struct{ to *url.URL }

func (r toLoopback) RoundTrip(req *http.Request) (*http.Response, error) {
	out := req.Clone(req.Context())
	out.URL.Scheme, out.URL.Host, out.Host = r.to.Scheme, r.to.Host, ""
	return http.DefaultTransport.RoundTrip(out)
}

// offline stands for the network while replaying: reaching it fails the request.
type offline struct{}

func (offline) RoundTrip(req *http.Request) (*http.Response, error) {
	return nil, fmt.Errorf("replay reached the network: %s", req.URL)
}

// sent is one request the agents sent: its system prompt and its last message.
type sent struct{ system, last string }

// spy records the chat requests that pass through it.
type spy struct {
	next http.RoundTripper
	mu   sync.Mutex
	reqs []sent
}

func (s *spy) RoundTrip(req *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, err
	}
	req.Body.Close()
	var chat struct {
		Messages []struct {
			Content string `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &chat); err == nil && len(chat.Messages) > 0 {
		s.mu.Lock()
		s.reqs = append(s.reqs, sent{chat.Messages[0].Content, chat.Messages[len(chat.Messages)-1].Content})
		s.mu.Unlock()
	}
	out := req.Clone(req.Context())
	out.Body, out.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	return s.next.RoundTrip(out)
}

// to returns the last messages of the requests to the agent whose system prompt names it.
func (s *spy) to(agent string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, r := range s.reqs {
		if strings.HasPrefix(r.system, "You are "+agent+",") || strings.HasPrefix(r.system, "You are the "+agent+",") {
			out = append(out, r.last)
		}
	}
	return out
}

// through returns the example's configuration with its requests going through the named
// cassette in testdata: replayed offline by default, recorded against mock-llm when
// TROUPE_CASSETTE=record. At cleanup a recording is saved, and a replay must have served every
// recorded exchange.
func through(t *testing.T, name string) (codegen.Config, *spy) {
	t.Helper()
	mode, err := cassette.ParseMode(os.Getenv("TROUPE_CASSETTE"))
	if err != nil {
		t.Fatal(err)
	}
	var inner http.RoundTripper = offline{}
	if mode != cassette.ModeReplay {
		inner = toLoopback{startMockLLM(t)}
		t.Setenv("CODEGEN_TEST_KEY", testKey)
	}
	c, err := codegen.OpenCassette(filepath.Join("testdata", name+".json"), mode)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Save(); err != nil {
			t.Error(err)
		}
		if unused := c.Unused(); len(unused) > 0 {
			t.Errorf("exchanges recorded but not replayed: %v", unused)
		}
	})
	s := &spy{next: c.Transport(inner)}
	return codegen.Config{BaseURL: endpoint, Model: "mock-model", APIKeyEnv: "CODEGEN_TEST_KEY",
		HTTPClient: &http.Client{Transport: s}}, s
}
