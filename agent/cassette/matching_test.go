package cassette_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/troupehq/troupe/agent/cassette"
)

// recordGets records a GET of each of urls, with hdr, into a new cassette file made with cfg
// (its Mode set to record), saves it, and returns the file's path and its bytes.
func recordGets(t *testing.T, cfg cassette.Config, hdr map[string]string, urls ...string) (string, []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "c.json")
	cfg.Mode = cassette.ModeRecord
	rec, err := cassette.New(path, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range urls {
		if _, _, err := do(t, rec.Client(), "GET", u, "", hdr); err != nil {
			t.Fatal(err)
		}
	}
	if err := rec.Save(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, data
}

// replayGet replays a GET of url from the cassette file at path, made with cfg (its Mode set to
// replay), and returns the body it serves.
func replayGet(t *testing.T, path string, cfg cassette.Config, url string) (string, error) {
	t.Helper()
	cfg.Mode = cassette.ModeReplay
	rep, err := cassette.New(path, cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, body, err := do(t, rep.Client(), "GET", url, "", nil)
	return body, err
}

// Two requests that differ only in a query value holding a ';' are different requests; the
// doc says the URL is compared with its query parameters sorted, so a replay of the second
// must get the second's answer, and the file must keep the query.
func TestSemicolonQueryIsKeptAndMatched(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "answer for "+r.URL.RawQuery)
	}))
	defer srv.Close()
	path, data := recordGets(t, cassette.Config{}, nil, srv.URL+"/items?fields=a;b", srv.URL+"/items?fields=c;d")
	f, err := cassette.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range f.Interactions {
		if !strings.Contains(in.Request.URL, "fields=") {
			t.Errorf("recorded URL %q lost its query", in.Request.URL)
		}
	}
	srv.Close()
	body, err := replayGet(t, path, cassette.Config{}, srv.URL+"/items?fields=c;d")
	if err != nil {
		t.Fatal(err)
	}
	if body != "answer for fields=c;d" {
		t.Errorf("replay of ?fields=c;d served %q", body)
	}
}

// A server that echoes the key as a JSON member name (an error map keyed by the credential)
// must not put it in the file: the doc says a request's secrets are replaced wherever they
// appear in its exchange.
func TestEchoedKeyAsJSONMemberNameIsRedacted(t *testing.T) {
	const key = "sk-audit-0123456789abcdef"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"errors":{"`+r.Header.Get("X-Api-Key")+`":"revoked"}}`)
	}))
	defer srv.Close()
	_, data := recordGets(t, cassette.Config{}, map[string]string{"X-Api-Key": key}, srv.URL+"/v1/models")
	if bytes.Contains(data, []byte(key)) {
		t.Errorf("the key reached the file:\n%s", data)
	}
}

// An event stream written with CRLF line ends (which the SSE format allows) is stored one
// event per entry, as the doc says of every text/event-stream response.
func TestCRLFStreamIsStoredOneEventPerEntry(t *testing.T) {
	events := []string{"data: {\"delta\":\"Hel\"}\r\n\r\n", "data: {\"delta\":\"lo\"}\r\n\r\n", "data: [DONE]\r\n\r\n"}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, strings.Join(events, ""))
	}))
	defer srv.Close()
	_, data := recordGets(t, cassette.Config{}, nil, srv.URL+"/stream")
	f, err := cassette.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Interactions[0].Response.Stream; len(got) != len(events) {
		t.Errorf("stream stored as %d entries %q, want %d, one per event", len(got), got, len(events))
	}
}

// A request recorded with a RedactPatterns entry that matches a whole query parameter (name
// and value, as "sig=[^&]+" does) must match when the same request is replayed.
func TestPatternOverAQueryParameterStillMatches(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	cfg := cassette.Config{RedactPatterns: []*regexp.Regexp{regexp.MustCompile(`sig=[^&]+`)}}
	u := srv.URL + "/files?a=1&sig=0123456789abcdef"
	path, _ := recordGets(t, cfg, nil, u)
	srv.Close()
	if body, err := replayGet(t, path, cfg, u); err != nil || body != "ok" {
		t.Errorf("replay of the recorded request: %q, %v", body, err)
	}
}
