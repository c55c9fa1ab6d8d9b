package cassette_test

import (
	"bytes"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/troupehq/troupe/agent/cassette"
)

const echoedKey = "sk-leak-test-0123456789abcdef"

// A server that echoes the key in a body that is not UTF-8 (a 401 in Latin-1) cannot put it in
// the file: the body is kept as base64, the key replaced before it is encoded.
func TestBinaryBodyQuotingTheKeyIsRedacted(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=latin1")
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, "cl\xe9 invalide: "+strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
	}))
	defer srv.Close()
	path := filepath.Join(t.TempDir(), "c.json")
	c, err := cassette.New(path, cassette.Config{Mode: cassette.ModeRecord})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("GET", srv.URL+"/v1/models", nil)
	req.Header.Set("Authorization", "Bearer "+echoedKey)
	resp, err := c.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := io.ReadAll(resp.Body); !bytes.Contains(got, []byte(echoedKey)) {
		t.Fatalf("the caller got %q, want the server's body as it was", got)
	}
	resp.Body.Close()
	if err := c.Save(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := cassette.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := base64.StdEncoding.DecodeString(f.Interactions[0].Response.Base64)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(data, []byte(echoedKey)) || bytes.Contains(raw, []byte(echoedKey)) {
		t.Errorf("the key reached the file: body %q", raw)
	}
	if want := "cl\xe9 invalide: " + cassette.Redacted; string(raw) != want {
		t.Errorf("recorded body %q, want %q", raw, want)
	}
}

// A request body over the bound fails with an error naming the request as the file would:
// no password, no secret query value.
func TestOversizeBodyErrorStripsTheURLsSecrets(t *testing.T) {
	for _, mode := range []cassette.Mode{cassette.ModeRecord, cassette.ModeReplay} {
		path := filepath.Join(t.TempDir(), "c.json")
		if mode == cassette.ModeReplay {
			if err := os.WriteFile(path, []byte(`{"version":1,"interactions":[]}`), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		c, err := cassette.New(path, cassette.Config{Mode: mode, MaxBodyBytes: 4})
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest("POST", "http://user:pw-"+echoedKey+"@127.0.0.1:1/v1?api_key="+echoedKey, strings.NewReader("0123456789"))
		_, err = c.Transport(nil).RoundTrip(req)
		if err == nil || !strings.Contains(err.Error(), "is over 4 bytes") {
			t.Fatalf("%v: RoundTrip error %v, want the body's bound", mode, err)
		}
		if strings.Contains(err.Error(), echoedKey) || strings.Contains(err.Error(), "pw-") {
			t.Errorf("%v: the error quotes a secret: %v", mode, err)
		}
		if want := "http://127.0.0.1:1/v1?api_key=" + cassette.Redacted; !strings.Contains(err.Error(), want) {
			t.Errorf("%v: the error %q does not name the request as %s", mode, err, want)
		}
	}
}

// A URL edited by hand matches the same request whatever order its query parameters were
// written in, as the doc promises ("compared with its query parameters sorted").
func TestHandEditedQueryInAnyOrderMatches(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.json")
	file := `{"version":1,"interactions":[{"request":{"method":"GET","url":"http://api.test/v1/x?b=1&a=2"},"response":{"status":200,"body":"ok"}}]}`
	if err := os.WriteFile(path, []byte(file), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := cassette.New(path, cassette.Config{})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("GET", "http://api.test/v1/x?b=1&a=2", nil)
	resp, err := c.Transport(nil).RoundTrip(req)
	if err != nil {
		t.Fatalf("the URL the file holds does not match: %v", err)
	}
	defer resp.Body.Close()
	if b, _ := io.ReadAll(resp.Body); string(b) != "ok" {
		t.Errorf("replayed body %q, want ok", b)
	}
}
