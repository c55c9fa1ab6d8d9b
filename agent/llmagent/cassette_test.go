package llmagent_test

import (
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/agent/cassette"
	"github.com/troupehq/troupe/agent/llmagent"
)

// cassetteBase is the endpoint the recorded agent talks to; while recording, requests to it are
// carried to a loopback completion server, so the cassette names a stable URL.
const cassetteBase = "http://llm.invalid/v1"

// redirect sends every request to srv, leaving the URL the cassette records untouched.
type redirect struct{ to *url.URL }

func (r redirect) RoundTrip(req *http.Request) (*http.Response, error) {
	out := req.Clone(req.Context())
	out.URL.Scheme, out.URL.Host, out.Host = r.to.Scheme, r.to.Host, ""
	return http.DefaultTransport.RoundTrip(out)
}

// TestCassetteReplay runs a streamed, tool-calling LLM agent offline from
// testdata/tools_stream.cassette.json; TROUPE_CASSETTE=record re-records it against the
// loopback server. Either way the agent must produce the same result and token events.
func TestCassetteReplay(t *testing.T) {
	mode, err := cassette.ParseMode(os.Getenv("TROUPE_CASSETTE"))
	if err != nil {
		t.Fatal(err)
	}
	runThroughCassette(t, filepath.Join("testdata", "tools_stream.cassette.json"), mode)
}

// TestCassetteRecordThenReplay records to a fresh file and replays it with the server gone.
func TestCassetteRecordThenReplay(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.json")
	runThroughCassette(t, path, cassette.ModeRecord)
	runThroughCassette(t, path, cassette.ModeReplay)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), testKey) || !strings.Contains(string(raw), cassette.Redacted) {
		t.Errorf("the cassette must hold the key redacted:\n%s", raw)
	}
}

func runThroughCassette(t *testing.T, path string, mode cassette.Mode) {
	t.Helper()
	c, err := cassette.New(path, cassette.Config{Mode: mode})
	if err != nil {
		t.Fatal(err)
	}
	var inner http.RoundTripper = failTransport{}
	if mode != cassette.ModeReplay {
		srv := newCompletionServer(t,
			reply{toolCalls: []wireToolCall{{"call_1", "add", `{"a":20,"b":22}`}}, usage: [2]int{30, 9}},
			reply{content: "The answer is 42.", usage: [2]int{45, 6}},
		)
		u, _ := url.Parse(srv.srv.URL)
		inner = redirect{to: u}
	}
	a := newAgent(t, llmagent.Config{BaseURL: cassetteBase, Stream: true, Tools: []troupe.Tool{addTool}, Seed: troupe.Ptr(int64(1)),
		HTTPClient: &http.Client{Transport: c.Transport(inner)}})
	rt := &runtime{}
	res, err := a.Run(t.Context(), dispatch("what is 20+22?", rt))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Save(); err != nil {
		t.Fatal(err)
	}
	if res.AgentResult["text"] != "The answer is 42." || *res.TokensUsed != 90 {
		t.Errorf("%s: result %v tokens %d", mode, res.AgentResult, *res.TokensUsed)
	}
	var tokens []any
	for _, e := range rt.Events() {
		if e.Kind == "token" {
			tokens = append(tokens, e.Data.(map[string]any)["text"])
		}
	}
	if diff := cmp.Diff([]any{"The ", "answ", "er i", "s 42", "."}, tokens); diff != "" {
		t.Errorf("%s: token events (-want +got):\n%s", mode, diff)
	}
	if unused := c.Unused(); len(unused) > 0 {
		t.Errorf("%s: exchanges not replayed: %v", mode, unused)
	}
}

// failTransport stands for the network in replay mode: reaching it is a bug.
type failTransport struct{}

func (failTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	panic("replay reached the network: " + req.URL.String())
}
