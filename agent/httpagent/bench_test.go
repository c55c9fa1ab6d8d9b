package httpagent_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/troupehq/troupe/agent/httpagent"
)

// BenchmarkHTTPAgent measures a dispatch through the agent against a loopback service;
// BenchmarkHTTPFloor posts the same bytes with a plain http.Post and reads the answer, so the
// difference is what the agent adds (encoding, headers, limits, validation).
func BenchmarkHTTPAgent(b *testing.B) {
	srv := httptest.NewServer(counter(b, nil))
	defer srv.Close()
	a := newAgent(b, httpagent.Config{URL: srv.URL})
	d := dispatch("three little words")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Run(b.Context(), d); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkHTTPFloor(b *testing.B) {
	srv := httptest.NewServer(counter(b, nil))
	defer srv.Close()
	defer http.DefaultClient.CloseIdleConnections()
	body, _ := json.Marshal(dispatch("three little words"))
	b.ReportAllocs()
	for b.Loop() {
		resp, err := http.Post(srv.URL, "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, resp.Body); err != nil || resp.StatusCode != 200 {
			b.Fatal(err, resp.StatusCode)
		}
		resp.Body.Close()
	}
}
