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

// Two requests that differ only in a query value holding a ';' are different requests; the
// doc says the URL is compared with its query parameters sorted, so a replay of the second
// must get the second's answer, and the file must keep the query.
func TestSemicolonQueryIsKeptAndMatched(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "answer for "+r.URL.RawQuery)
	}))
	defer srv.Close()
	path := filepath.Join(t.TempDir(), "c.json")
	rec, err := cassette.New(path, cassette.Config{Mode: cassette.ModeRecord})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"fields=a;b", "fields=c;d"} {
		if _, _, err := do(t, rec.Client(), "GET", srv.URL+"/items?"+q, "", nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := rec.Save(); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
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
	rep, err := cassette.New(path, cassette.Config{})
	if err != nil {
		t.Fatal(err)
	}
	_, body, err := do(t, rep.Client(), "GET", srv.URL+"/items?fields=c;d", "", nil)
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
	path := filepath.Join(t.TempDir(), "c.json")
	rec, err := cassette.New(path, cassette.Config{Mode: cassette.ModeRecord})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := do(t, rec.Client(), "GET", srv.URL+"/v1/models", "", map[string]string{"X-Api-Key": key}); err != nil {
		t.Fatal(err)
	}
	if err := rec.Save(); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
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
	path := filepath.Join(t.TempDir(), "c.json")
	rec, err := cassette.New(path, cassette.Config{Mode: cassette.ModeRecord})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := do(t, rec.Client(), "GET", srv.URL+"/stream", "", nil); err != nil {
		t.Fatal(err)
	}
	if err := rec.Save(); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
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
	path := filepath.Join(t.TempDir(), "c.json")
	cfg := cassette.Config{Mode: cassette.ModeRecord, RedactPatterns: []*regexp.Regexp{regexp.MustCompile(`sig=[^&]+`)}}
	rec, err := cassette.New(path, cfg)
	if err != nil {
		t.Fatal(err)
	}
	u := srv.URL + "/files?a=1&sig=0123456789abcdef"
	if _, _, err := do(t, rec.Client(), "GET", u, "", nil); err != nil {
		t.Fatal(err)
	}
	if err := rec.Save(); err != nil {
		t.Fatal(err)
	}
	srv.Close()
	cfg.Mode = cassette.ModeReplay
	rep, err := cassette.New(path, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, body, err := do(t, rep.Client(), "GET", u, "", nil); err != nil || body != "ok" {
		t.Errorf("replay of the recorded request: %q, %v", body, err)
	}
}
