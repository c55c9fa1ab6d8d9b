package cassette_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/troupehq/troupe/agent/cassette"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// echo answers with the request it got, so a test can see what reached the server.
func echo(hits *atomic.Int64) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Set-Cookie", "session=s3cr3t-cookie")
		json.NewEncoder(w).Encode(map[string]any{"method": r.Method, "path": r.URL.Path, "got": json.RawMessage(orNull(b)), "token": "sk-live123"})
	}
}

func orNull(b []byte) []byte {
	if len(b) == 0 {
		return []byte("null")
	}
	return b
}

func do(t *testing.T, c *http.Client, method, url, body string, hdr map[string]string) (int, string, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b), nil
}

func TestRecordThenReplayStripsSecretsAndNeverCallsTheNetwork(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(echo(&hits))
	defer srv.Close()
	path := filepath.Join(t.TempDir(), "c.json")
	cfg := cassette.Config{
		RedactHeaders: []string{"X-Org-Secret"},
		// Paths start at the body's root; the echo nests the request under "got".
		RedactJSONPaths: []string{"api_key", "nested.*.password", "got.api_key", "got.nested.*.password"},
		RedactPatterns:  []*regexp.Regexp{regexp.MustCompile(`sk-[a-z0-9]+`)},
	}
	secrets := map[string]string{
		"Authorization": "Bearer tok-authz", "X-Api-Key": "tok-xapikey", "Api-Key": "tok-apikey",
		"Cookie": "c=tok-cookie", "X-Org-Secret": "tok-org",
	}
	body := `{"api_key":"tok-body","nested":[{"password":"tok-pw","keep":1}],"prompt":"use sk-abc999 please"}`
	url := srv.URL + "/v1/chat?api-key=tok-query&model=m"

	cfg.Mode = cassette.ModeRecord
	rec, err := cassette.New(path, cfg)
	if err != nil {
		t.Fatal(err)
	}
	st, live, err := do(t, rec.Client(), "POST", url, body, secrets)
	if err != nil || st != 200 {
		t.Fatalf("record: %d %v", st, err)
	}
	if err := rec.Save(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"tok-", "s3cr3t", "sk-abc999", "sk-live123"} {
		if bytes.Contains(data, []byte(s)) {
			t.Errorf("cassette holds secret %q:\n%s", s, data)
		}
	}
	if !bytes.Contains(data, []byte(`"keep": 1`)) || !bytes.Contains(data, []byte(`model=m`)) {
		t.Errorf("cassette lost what is not secret:\n%s", data)
	}

	hits.Store(0)
	cfg.Mode = cassette.ModeReplay
	rep, err := cassette.New(path, cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Keys in another order and other secrets: the same request once redacted.
	other := `{"prompt":"use sk-zzz1 please", "nested":[{"keep":1,"password":"x"}], "api_key":"different"}`
	st, replayed, err := do(t, rep.Client(), "POST", srv.URL+"/v1/chat?model=m&api-key=other", other, nil)
	if err != nil || st != 200 {
		t.Fatalf("replay: %d %v", st, err)
	}
	if hits.Load() != 0 {
		t.Errorf("replay reached the server %d times", hits.Load())
	}
	var a, b map[string]any
	json.Unmarshal([]byte(live), &a)
	json.Unmarshal([]byte(replayed), &b)
	a["token"] = cassette.Redacted // the response's secret is stripped too
	a["got"].(map[string]any)["api_key"] = cassette.Redacted
	a["got"].(map[string]any)["nested"].([]any)[0].(map[string]any)["password"] = cassette.Redacted
	a["got"].(map[string]any)["prompt"] = "use REDACTED please"
	if d := cmp.Diff(a, b); d != "" {
		t.Errorf("replayed body (-live +replayed):\n%s", d)
	}
	if u := rep.Unused(); len(u) != 0 {
		t.Errorf("Unused = %v", u)
	}
}

// A server that echoes the credentials it was sent — in a 401's JSON body, a header, a text
// body, a stream — cannot put them in the file: every secret a request carried is stripped
// wherever it shows up, and a replay with another key still matches, even a body quoting it.
func TestEchoedSecretsAreStripped(t *testing.T) {
	const key, apiKey = "sk-proj-ECHOED-0123456789", "xk-ECHOED-abcdefgh"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		auth := r.Header.Get("Authorization")
		w.Header().Set("X-Debug-Auth", auth)
		switch r.URL.Path {
		case "/json":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": "Incorrect API key provided: " + strings.TrimPrefix(auth, "Bearer "),
				"x_api_key": r.Header.Get("X-Api-Key"), "token": r.URL.Query().Get("access_token"), "you_sent": string(b)}})
		case "/text":
			io.WriteString(w, "denied for "+auth+" and "+r.Header.Get("X-Api-Key"))
		case "/stream":
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: {\"echo\":\""+r.Header.Get("X-Api-Key")+"\"}\n\n")
		}
	}))
	defer srv.Close()
	path := filepath.Join(t.TempDir(), "echo.json")
	exchange := func(c *cassette.Cassette, key, apiKey string) []string {
		var out []string
		for _, p := range []string{"/json?access_token=tok-query-0123", "/text", "/stream"} {
			_, body, err := do(t, c.Client(), "POST", srv.URL+p, `{"prompt":"my key is `+key+`"}`,
				map[string]string{"Authorization": "Bearer " + key, "X-Api-Key": apiKey})
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, body)
		}
		return out
	}
	rec, err := cassette.New(path, cassette.Config{Mode: cassette.ModeRecord})
	if err != nil {
		t.Fatal(err)
	}
	live := exchange(rec, key, apiKey)
	if !strings.Contains(strings.Join(live, ""), key) {
		t.Fatalf("the server did not echo the key: %q", live)
	}
	if err := rec.Save(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{key, apiKey, "tok-query-0123", "ECHOED"} {
		if bytes.Contains(data, []byte(secret)) {
			t.Errorf("cassette holds %q:\n%s", secret, data)
		}
	}
	if !bytes.Contains(data, []byte("Incorrect API key provided: "+cassette.Redacted)) || !bytes.Contains(data, []byte("my key is "+cassette.Redacted)) {
		t.Errorf("the echoes are not marked redacted:\n%s", data)
	}

	rep, err := cassette.New(path, cassette.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv.Close() // replay must not need it
	replayed := exchange(rep, "sk-proj-OTHER-9876543210", "xk-OTHER-12345678")
	want := []string{"Incorrect API key provided: REDACTED", "denied for REDACTED and REDACTED", `data: {"echo":"REDACTED"}`}
	for i, w := range want {
		if !strings.Contains(replayed[i], w) {
			t.Errorf("replayed %d = %q, want it to hold %q", i, replayed[i], w)
		}
	}
}

func TestReplayMatching(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The first call fails, the others succeed: a retry test's shape.
		if n.Add(1) == 1 {
			http.Error(w, "overloaded", http.StatusServiceUnavailable)
			return
		}
		b, _ := io.ReadAll(r.Body)
		w.Write(append([]byte("ok "), b...))
	}))
	defer srv.Close()
	path := filepath.Join(t.TempDir(), "c.json")
	rec, _ := cassette.New(path, cassette.Config{Mode: cassette.ModeRecord})
	c := rec.Client()
	for _, b := range []string{`{"a":1,"b":[1,2]}`, `{"a":1,"b":[1,2]}`, "plain text"} {
		if _, _, err := do(t, c, "POST", srv.URL+"/x", b, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := rec.Save(); err != nil {
		t.Fatal(err)
	}
	srv.Close()

	rep, err := cassette.New(path, cassette.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Mode() != cassette.ModeReplay {
		t.Fatalf("zero Config mode = %s, want replay", rep.Mode())
	}
	c = rep.Client()
	type got struct {
		Status int
		Body   string
		Miss   bool
	}
	for _, tc := range []struct {
		name, method, path, body string
		want                     got
	}{
		{"equal JSON, other spacing and key order: first recorded answer", "POST", "/x", "{ \"b\": [1, 2], \"a\": 1 }", got{503, "overloaded\n", false}},
		{"the same request again: the next recorded answer", "POST", "/x", `{"a":1,"b":[1,2]}`, got{200, `ok {"a":1,"b":[1,2]}`, false}},
		{"recorded twice, asked three times: a miss", "POST", "/x", `{"a":1,"b":[1,2]}`, got{Miss: true}},
		{"a different JSON value", "POST", "/x", `{"a":2,"b":[1,2]}`, got{Miss: true}},
		{"array order matters", "POST", "/x", `{"a":1,"b":[2,1]}`, got{Miss: true}},
		{"text byte for byte", "POST", "/x", "plain text", got{200, "ok plain text", false}},
		{"another method", "PUT", "/x", "plain text", got{Miss: true}},
		{"another path", "POST", "/y", "plain text", got{Miss: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, body, err := do(t, c, tc.method, srv.URL+tc.path, tc.body, nil)
			g := got{st, body, err != nil}
			if err != nil {
				if !errors.Is(err, cassette.ErrNoMatch) {
					t.Errorf("miss error %v does not match ErrNoMatch", err)
				}
				for _, want := range []string{tc.method, tc.path, path} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("miss error %q does not name %q", err, want)
					}
				}
			}
			if d := cmp.Diff(tc.want, g); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

func TestStreamIsPassedOnLiveAndReplayedFaithfully(t *testing.T) {
	events := []string{"data: {\"delta\":\"Hel\"}\n\n", "event: x\ndata: {\"delta\":\"lo\"}\n\n", "data: [DONE]\n\n"}
	next := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i, e := range events {
			if i > 0 {
				select { // the client must have read the previous event before the next is sent
				case <-next:
				case <-r.Context().Done():
					return
				}
			}
			io.WriteString(w, e)
			w.(http.Flusher).Flush()
		}
	}))
	defer srv.Close()
	path := filepath.Join(t.TempDir(), "sse.json")
	rec, _ := cassette.New(path, cassette.Config{Mode: cassette.ModeAuto})
	if rec.Mode() != cassette.ModeRecord {
		t.Fatalf("auto without a file: mode %s", rec.Mode())
	}
	read := func(c *http.Client, signal bool) []string {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), "POST", srv.URL+"/stream", strings.NewReader(`{"stream":true}`))
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
			t.Errorf("content type %q", ct)
		}
		var got []string
		var ev strings.Builder
		br := bufio.NewReader(resp.Body)
		for {
			line, err := br.ReadString('\n')
			ev.WriteString(line)
			if line == "\n" {
				got = append(got, ev.String())
				ev.Reset()
				if signal && len(got) < len(events) {
					next <- struct{}{}
				}
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		return got
	}
	if d := cmp.Diff(events, read(rec.Client(), true)); d != "" {
		t.Fatalf("live stream (-want +got):\n%s", d)
	}
	if err := rec.Save(); err != nil {
		t.Fatal(err)
	}
	srv.Close()
	rep, _ := cassette.New(path, cassette.Config{Mode: cassette.ModeAuto})
	if rep.Mode() != cassette.ModeReplay {
		t.Fatalf("auto with a file: mode %s", rep.Mode())
	}
	if d := cmp.Diff(events, read(rep.Client(), false)); d != "" {
		t.Errorf("replayed stream (-want +got):\n%s", d)
	}
	// The file keeps one entry per event.
	data, _ := os.ReadFile(path)
	f, err := cassette.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(events, f.Interactions[0].Response.Stream); d != "" {
		t.Errorf("stored stream (-want +got):\n%s", d)
	}
}

func TestBinaryBodyAndTruncation(t *testing.T) {
	blob := []byte{0xff, 0x00, 0xfe, 0x10, 0x80}
	big := strings.Repeat("x", 100)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/big" {
			io.WriteString(w, big)
			return
		}
		w.Write(blob)
	}))
	defer srv.Close()
	path := filepath.Join(t.TempDir(), "c.json")
	rec, _ := cassette.New(path, cassette.Config{Mode: cassette.ModeRecord, MaxBodyBytes: 50})
	if _, b, err := do(t, rec.Client(), "GET", srv.URL+"/bin", "", nil); err != nil || b != string(blob) {
		t.Fatalf("bin: %q %v", b, err)
	}
	if _, b, err := do(t, rec.Client(), "GET", srv.URL+"/big", "", nil); err != nil || b != big {
		t.Fatalf("the caller must get the whole body even when the recording is cut: %d bytes, %v", len(b), err)
	}
	if _, _, err := do(t, rec.Client(), "POST", srv.URL+"/bin", big, nil); err == nil || !strings.Contains(err.Error(), "over 50 bytes") {
		t.Errorf("request body over the bound: %v", err)
	}
	err := rec.Save()
	if err == nil || !strings.Contains(err.Error(), "/big") || !strings.Contains(err.Error(), "cut short") {
		t.Errorf("Save = %v, want the cut response named", err)
	}
	rep, err := cassette.New(path, cassette.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, b, err := do(t, rep.Client(), "GET", srv.URL+"/bin", "", nil); err != nil || b != string(blob) {
		t.Errorf("replayed binary: %q %v", b, err)
	}
	if _, b, err := do(t, rep.Client(), "GET", srv.URL+"/big", "", nil); err != nil || b != big[:50] {
		t.Errorf("replayed cut body: %d bytes %v", len(b), err)
	}
}

func TestSavedFileIsStableWhateverTheOrderOfCompletion(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"path":"`+r.URL.Path+`"}`)
	}))
	defer srv.Close()
	dir := t.TempDir()
	record := func(name string, order []string) []byte {
		path := filepath.Join(dir, name)
		rec, _ := cassette.New(path, cassette.Config{Mode: cassette.ModeRecord})
		c := rec.Client()
		var wg sync.WaitGroup
		for _, p := range order {
			wg.Go(func() {
				if _, _, err := do(t, c, "GET", srv.URL+p, "", nil); err != nil {
					t.Error(err)
				}
			})
			wg.Wait() // complete in this order
		}
		if err := rec.Save(); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(path)
		return b
	}
	a := record("a.json", []string{"/1", "/2", "/3"})
	b := record("b.json", []string{"/3", "/1", "/2"})
	if d := cmp.Diff(string(a), string(b)); d != "" {
		t.Errorf("files differ (-a +b):\n%s", d)
	}
}

func TestNewErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		path string
		data string
		cfg  cassette.Config
		want string
	}{
		{"replay without a file", "missing.json", "", cassette.Config{Mode: cassette.ModeReplay}, "no such file"},
		{"unknown mode", "x.json", "", cassette.Config{Mode: "sometimes"}, `unknown mode "sometimes"`},
		{"bad JSON path", "x.json", "", cassette.Config{Mode: cassette.ModeRecord, RedactJSONPaths: []string{"a..b"}}, "empty segment"},
		{"nil pattern", "x.json", "", cassette.Config{Mode: cassette.ModeRecord, RedactPatterns: []*regexp.Regexp{nil}}, "RedactPatterns[0] is nil"},
		{"bad file", "bad.json", `{"version":1,"interactions":[{"request":{"method":"GET","url":"http://h/"},"response":{"status":42}}]}`, cassette.Config{}, "interactions[0].response.status: 42"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, tc.path)
			if tc.data != "" {
				os.WriteFile(p, []byte(tc.data), 0o644)
			}
			_, err := cassette.New(p, tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New = %v, want an error with %q", err, tc.want)
			}
		})
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, data, want string
	}{
		{"ok", `{"version":1,"interactions":[{"request":{"method":"POST","url":"https://h/p","body_json":{"a":1}},"response":{"status":200,"stream":["data: 1\n\n"]}}]}`, ""},
		{"empty", `{"version":1,"interactions":[]}`, ""},
		{"headers, one value or several", `{"version":1,"interactions":[{"request":{"method":"GET","url":"https://h/","headers":{"A":"1","B":["2","3"]}},"response":{"status":200}}]}`, ""},
		{"header of another type", `{"version":1,"interactions":[{"request":{"method":"GET","url":"https://h/","headers":{"A":1}},"response":{"status":200}}]}`, `header "A": want a string`},
		{"version", `{"version":2,"interactions":[]}`, "version 2"},
		{"unknown field", `{"version":1,"interactions":[],"extra":1}`, "unknown field"},
		{"trailing data", `{"version":1,"interactions":[]} {}`, "data after"},
		{"null interaction", `{"version":1,"interactions":[null]}`, "interactions[0]: null"},
		{"method", `{"version":1,"interactions":[{"request":{"method":"","url":"https://h/"},"response":{"status":200}}]}`, "interactions[0].request.method"},
		{"relative url", `{"version":1,"interactions":[{"request":{"method":"GET","url":"/p"},"response":{"status":200}}]}`, "interactions[0].request.url"},
		{"two bodies", `{"version":1,"interactions":[{"request":{"method":"GET","url":"https://h/"},"response":{"status":200,"body":"a","body_base64":"YQ=="}}]}`, "interactions[0].response: more than one"},
		{"bad base64", `{"version":1,"interactions":[{"request":{"method":"GET","url":"https://h/","body_base64":"!!"},"response":{"status":200}}]}`, "interactions[0].request: body_base64"},
		{"request stream", `{"version":1,"interactions":[{"request":{"method":"GET","url":"https://h/","stream":["x"]},"response":{"status":200}}]}`, "only a response"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := cassette.Parse([]byte(tc.data))
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Parse: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("Parse = %v, want an error with %q", err, tc.want)
			}
		})
	}
}

func TestParseMode(t *testing.T) {
	for in, want := range map[string]cassette.Mode{"": cassette.ModeReplay, "record": cassette.ModeRecord, " AUTO ": cassette.ModeAuto, "replay": cassette.ModeReplay} {
		if got, err := cassette.ParseMode(in); err != nil || got != want {
			t.Errorf("ParseMode(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := cassette.ParseMode("live"); err == nil {
		t.Error("ParseMode(live) accepted")
	}
}

func TestReplayHonoursCancellation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.json")
	os.WriteFile(path, []byte(`{"version":1,"interactions":[{"request":{"method":"GET","url":"http://h/"},"response":{"status":200,"body":"x"}}]}`), 0o644)
	rep, _ := cassette.New(path, cassette.Config{})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://h/", nil)
	if _, err := rep.Client().Do(req); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled replay: %v", err)
	}
	if u := rep.Unused(); len(u) != 1 || !strings.Contains(u[0], "GET http://h/") {
		t.Errorf("Unused = %v", u)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"version":1,"interactions":[{"request":{"method":"POST","url":"https://h/p","body_json":{"a":1}},"response":{"status":200,"stream":["data: 1\n\n"]}}]}`))
	f.Add([]byte(`{"version":1,"interactions":[{"request":{"method":"GET","url":"http://h/","body_base64":"YQ=="},"response":{"status":500,"body":"x","truncated":true}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := cassette.Parse(data)
		if err != nil {
			return
		}
		// Whatever parses survives a write and a re-read unchanged.
		out, err := file.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		again, err := cassette.Parse(out)
		if err != nil {
			t.Fatalf("re-parse: %v\n%s", err, out)
		}
		out2, _ := again.Marshal()
		if !bytes.Equal(out, out2) {
			t.Fatalf("not stable:\n%s\n%s", out, out2)
		}
	})
}

// Many goroutines through one cassette, recording and then replaying: each gets its own answer.
func TestConcurrentRecordAndReplay(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Write(append([]byte("re: "), b...))
	}))
	defer srv.Close()
	path := filepath.Join(t.TempDir(), "c.json")
	const n = 16
	round := func(c *cassette.Cassette) []string {
		got := make([]string, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				_, b, err := do(t, c.Client(), "POST", srv.URL+"/q", strconv.Itoa(i), nil)
				if err != nil {
					t.Error(err)
				}
				got[i] = b
			})
		}
		wg.Wait()
		return got
	}
	rec, _ := cassette.New(path, cassette.Config{Mode: cassette.ModeRecord})
	live := round(rec)
	if err := rec.Save(); err != nil {
		t.Fatal(err)
	}
	srv.Close()
	rep, err := cassette.New(path, cassette.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(live, round(rep)); d != "" {
		t.Errorf("(-live +replayed):\n%s", d)
	}
	if live[3] != "re: 3" {
		t.Errorf("live[3] = %q", live[3])
	}
}

// A replay miss names the request with its secrets stripped, as the file would hold it: the
// error ends up in a run's events and a test's log.
func TestReplayMissDoesNotQuoteSecrets(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.json")
	if err := os.WriteFile(path, []byte(`{"version":1,"interactions":[]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := cassette.New(path, cassette.Config{RedactJSONPaths: []string{"api_key"}})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = do(t, rep.Client(), "POST", "http://127.0.0.1:1/v1/x?key=sk-query-SECRET",
		`{"api_key":"sk-body-SECRET","echo":"Bearer sk-header-SECRET"}`, map[string]string{"Authorization": "Bearer sk-header-SECRET"})
	if !errors.Is(err, cassette.ErrNoMatch) {
		t.Fatalf("err = %v, want a miss", err)
	}
	// (net/http's own *url.Error quotes the URL it was given; the cassette's error is inside.)
	var ue *url.Error
	if !errors.As(err, &ue) || strings.Contains(ue.Err.Error(), "SECRET") || !strings.Contains(ue.Err.Error(), cassette.Redacted) {
		t.Errorf("miss error quotes a secret: %v", err)
	}
}
