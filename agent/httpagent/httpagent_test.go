package httpagent_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/agent/cassette"
	"github.com/troupehq/troupe/agent/httpagent"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// runtime is a hand-written DispatchRuntime that knows a trace id.
type runtime struct{ traceID string }

func (r runtime) State(string) (any, bool) { return nil, false }
func (r runtime) Progress(string, any)     {}
func (r runtime) Ask(context.Context, troupe.Question) (troupe.Answer, error) {
	return troupe.Answer{}, troupe.ErrPaused
}
func (r runtime) Partial(map[string]any) {}
func (r runtime) TraceID() string        { return r.traceID }

func dispatch(query string) *troupe.Dispatch {
	d := troupe.NewDispatch()
	d.DispatchID, d.SessionID, d.QueryID = troupe.NewDispatchID(9), "sess_1", "qry_1"
	d.TargetAgent, d.DispatchReason, d.Query = "counter", "test", query
	d.ParsedQuery, d.DispatchedAt = map[string]any{}, time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	d.Bind(runtime{traceID: "trace_77"})
	return d
}

// counter is a service speaking the protocol: it decodes the dispatch and counts its words.
func counter(t testing.TB, seen func(r *http.Request, d *troupe.Dispatch)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		d, err := troupe.DecodeDispatch(b, nil, time.Now())
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if seen != nil {
			seen(r, d)
		}
		now := time.Now().UTC()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(&troupe.Result{DispatchID: d.DispatchID, SessionID: d.SessionID, QueryID: d.QueryID, AgentName: d.TargetAgent,
			Status: troupe.StatusCompleted, AgentResult: map[string]any{"words": len(strings.Fields(d.Query))},
			Errors: []troupe.ErrorInfo{}, Warnings: []string{}, StartedAt: now, CompletedAt: now})
	}
}

func newAgent(t testing.TB, cfg httpagent.Config) *httpagent.Agent {
	t.Helper()
	a, err := httpagent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.CloseIdleConnections)
	return a
}

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestPostsTheDispatchWithHeaders(t *testing.T) {
	type seen struct {
		Auth, Key, Team, Idem, Trace, TraceHdr, ContentType, Query string
	}
	got := make(chan seen, 1)
	srv := httptest.NewServer(counter(t, func(r *http.Request, d *troupe.Dispatch) {
		got <- seen{r.Header.Get("Authorization"), r.Header.Get("X-Api-Key"), r.Header.Get("X-Team"), r.Header.Get("Idempotency-Key"),
			r.Header.Get("Traceparent"), r.Header.Get("X-Troupe-Trace-Id"), r.Header.Get("Content-Type"), d.Query}
	}))
	defer srv.Close()
	a := newAgent(t, httpagent.Config{URL: srv.URL + "/agent", Headers: map[string]string{"X-Team": "search"},
		HeadersFromEnv: map[string]string{"X-Api-Key": "SVC_KEY"}, BearerTokenEnv: "SVC_TOKEN",
		LookupEnv: env(map[string]string{"SVC_KEY": "k-123", "SVC_TOKEN": "t-456"})})
	d := dispatch("four words right here")
	res, err := a.Run(t.Context(), d)
	if err != nil {
		t.Fatal(err)
	}
	if res.AgentResult["words"] != 4.0 || res.DispatchID != d.DispatchID {
		t.Errorf("result %+v", res)
	}
	s := <-got
	if !strings.HasPrefix(s.Trace, "00-") || len(s.Trace) != 55 {
		t.Errorf("traceparent %q", s.Trace)
	}
	s.Trace = ""
	want := seen{"Bearer t-456", "k-123", "search", d.DispatchID, "", "trace_77", "application/json", "four words right here"}
	if diff := cmp.Diff(want, s); diff != "" {
		t.Errorf("request (-want +got):\n%s", diff)
	}
}

func TestFailures(t *testing.T) {
	type want struct {
		Code        string
		Recoverable bool
		RetryAfter  any
		Status      any
		Message     []string
	}
	big := strings.Repeat("z", 5000)
	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc
		cfg     httpagent.Config
		want    want
	}{
		{"400 is permanent, with a body excerpt", status(400, nil, `{"error":"query too long"}`), httpagent.Config{},
			want{troupe.CodeAgentError, false, nil, 400, []string{"status 400 Bad Request", "query too long"}}},
		{"404 is permanent", status(404, nil, ""), httpagent.Config{}, want{troupe.CodeAgentError, false, nil, 404, []string{"404 Not Found"}}},
		{"408 is a recoverable timeout", status(408, nil, ""), httpagent.Config{}, want{troupe.CodeTimeout, true, nil, 408, []string{"408"}}},
		{"429 with Retry-After seconds", status(429, map[string]string{"Retry-After": "7"}, "slow down"), httpagent.Config{},
			want{troupe.CodeAgentError, true, 7.0, 429, []string{"retry after 7s", "slow down"}}},
		{"503 with Retry-After as a date", status(503, map[string]string{"Retry-After": time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat)}, "maintenance"), httpagent.Config{},
			want{troupe.CodeAgentError, true, "≈90", 503, []string{"503 Service Unavailable", "maintenance"}}},
		{"500 with a long body: an excerpt only", status(500, nil, big), httpagent.Config{},
			want{troupe.CodeAgentError, true, nil, 500, []string{"500 Internal Server Error", `zzz"…`}}},
		// 501 and 505 say the service cannot do this at all: retrying only burns the budget.
		{"501 is permanent", status(501, nil, "no such method"), httpagent.Config{},
			want{troupe.CodeAgentError, false, nil, 501, []string{"501 Not Implemented", "no such method"}}},
		{"505 is permanent", status(505, nil, ""), httpagent.Config{},
			want{troupe.CodeAgentError, false, nil, 505, []string{"505 HTTP Version Not Supported"}}},
		{"502 is recoverable", status(502, nil, ""), httpagent.Config{},
			want{troupe.CodeAgentError, true, nil, 502, []string{"502 Bad Gateway"}}},
		{"a redirect is not followed", status(302, map[string]string{"Location": "/elsewhere"}, ""), httpagent.Config{},
			want{troupe.CodeAgentError, false, nil, 302, []string{"302 Found"}}},
		{"garbage JSON", status(200, nil, `{"dispatch_id": oops`), httpagent.Config{},
			want{troupe.CodeInvalidOutput, false, nil, 200, []string{"invalid result"}}},
		{"valid JSON, not a valid result", status(200, nil, `{"status":"completed","confidence":3}`), httpagent.Config{},
			want{troupe.CodeInvalidOutput, false, nil, 200, []string{"invalid result", "more problems"}}},
		{"huge response", func(w http.ResponseWriter, r *http.Request) {
			chunk := []byte(strings.Repeat("x", 64<<10))
			for r.Context().Err() == nil { // until the agent stops reading
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		}, httpagent.Config{MaxResponseBytes: 1 << 20},
			want{troupe.CodeInvalidOutput, false, nil, 200, []string{"response over 1048576 bytes (max_response_bytes)"}}},
		{"a response exactly MaxResponseBytes long is read", status(200, nil, `{"agent_result":{"a":1},"confidence":7}`), httpagent.Config{MaxResponseBytes: 39},
			want{troupe.CodeInvalidOutput, false, nil, 200, []string{"invalid result", "confidence"}}},
		{"a 503 over MaxResponseBytes is still a recoverable 503", status(503, map[string]string{"Retry-After": "5"}, "<html>"+big+"</html>"), httpagent.Config{MaxResponseBytes: 1000},
			want{troupe.CodeAgentError, true, 5.0, 503, []string{"503 Service Unavailable", "<html>zzz"}}},
		{"a 400 over MaxResponseBytes is still a 400", status(400, nil, big), httpagent.Config{MaxResponseBytes: 1000},
			want{troupe.CodeAgentError, false, nil, 400, []string{"400 Bad Request"}}},
		{"slow server: timeout", func(w http.ResponseWriter, r *http.Request) { hang(r) }, httpagent.Config{Timeout: 100 * time.Millisecond},
			want{troupe.CodeTimeout, true, nil, nil, []string{"dispatch timed out"}}},
		// A connection lost in the middle of an error page does not turn a permanent 400 into
		// a recoverable network error, nor hide a 503's Retry-After.
		{"a 400 whose body is cut short is still a permanent 400", cutShort(400, nil, `{"error":"query too long, max`), httpagent.Config{},
			want{troupe.CodeAgentError, false, nil, 400, []string{"status 400 Bad Request", "query too long"}}},
		{"a 503 whose body is cut short is still a 503", cutShort(503, map[string]string{"Retry-After": "5"}, "<html>maint"), httpagent.Config{},
			want{troupe.CodeAgentError, true, 5.0, 503, []string{"503 Service Unavailable", "maint"}}},
		// The response's status is kept, and the message says the body could not be read.
		{"a 200 whose body is cut short", cutShort(200, nil, `{"agent_result":{"n":`), httpagent.Config{},
			want{troupe.CodeAgentError, true, nil, 200, []string{"reading the body of a 200 OK response: unexpected EOF"}}},
		{"a 200 whose body stalls past the timeout", func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			w.WriteHeader(200)
			io.WriteString(w, `{"agent_result":{"n":`)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}, httpagent.Config{Timeout: 100 * time.Millisecond},
			want{troupe.CodeTimeout, true, nil, 200, []string{"reading the body of a 200 OK response: troupe: dispatch timed out"}}},
		{"the connection reset before an answer", func(w http.ResponseWriter, r *http.Request) {
			c, _, _ := w.(http.Hijacker).Hijack()
			c.Close()
		}, httpagent.Config{}, want{troupe.CodeAgentError, true, nil, nil, []string{"EOF"}}},
		// A 200 that reports a failure: what it reported is the message, not "completed
		// status requires agent_result".
		{"a 200 with an error object, not a result", status(200, nil, `{"error":{"message":"database unavailable","type":"server_error"}}`), httpagent.Config{},
			want{troupe.CodeInvalidOutput, false, nil, 200, []string{`answered an error, not a result: "database unavailable"`}}},
		// Latin-1 "café": decoded anyway, the é would become U+FFFD unseen.
		{"a 200 whose body is not UTF-8", status(200, nil, "{\"agent_result\":{\"text\":\"caf\xe9\"}}"), httpagent.Config{},
			want{troupe.CodeInvalidOutput, false, nil, 200, []string{"not UTF-8, as JSON must be: byte 28 is 0xe9"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.handler)
			defer srv.Close()
			cfg := tc.cfg
			cfg.URL = srv.URL
			res, err := newAgent(t, cfg).Run(t.Context(), dispatch("q"))
			var ae *troupe.AgentError
			if res != nil || !errors.As(err, &ae) {
				t.Fatalf("Run = %+v, %v; want an *AgentError", res, err)
			}
			got := want{ae.Code, ae.Recoverable, ae.Details["retry_after_seconds"], ae.Details["http_status"], tc.want.Message}
			if s, ok := tc.want.RetryAfter.(string); ok && s == "≈90" {
				if ra, _ := got.RetryAfter.(float64); ra < 85 || ra > 91 {
					t.Errorf("retry after %v, want about 90", got.RetryAfter)
				}
				got.RetryAfter = s
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
			for _, s := range tc.want.Message {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q lacks %q", err, s)
				}
			}
			if len(err.Error()) > 1500 {
				t.Errorf("error of %d bytes: the body is not cut", len(err.Error()))
			}
			var se *httpagent.StatusError
			if code, _ := tc.want.Status.(int); code >= 300 && (!errors.As(err, &se) || se.StatusCode != code) {
				t.Errorf("cause %v is not a StatusError %d", err, code)
			}
		})
	}
}

// hang blocks until the client goes away. The body is read first: only then does the server
// watch the connection and cancel the request's context when the client closes it.
func hang(r *http.Request) {
	io.Copy(io.Discard, r.Body)
	<-r.Context().Done()
}

// cutShort answers with a status and the start of a body longer than it sends, then drops the
// connection, as a server that crashes mid-answer does.
func cutShort(code int, hdr map[string]string, start string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for k, v := range hdr {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(start)+100))
		w.WriteHeader(code)
		io.WriteString(w, start)
		w.(http.Flusher).Flush()
		c, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			c.Close()
		}
	}
}

func status(code int, hdr map[string]string, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for k, v := range hdr {
			w.Header().Set(k, v)
		}
		w.WriteHeader(code)
		io.WriteString(w, body)
	}
}

func TestCancelWhileWaiting(t *testing.T) {
	arrived := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		hang(r)
	}))
	defer srv.Close()
	a := newAgent(t, httpagent.Config{URL: srv.URL})
	ctx, cancel := context.WithCancel(t.Context())
	go func() { <-arrived; cancel() }()
	_, err := a.Run(ctx, dispatch("q"))
	var ae *troupe.AgentError
	if !errors.As(err, &ae) || ae.Code != troupe.CodeCancelled || ae.Recoverable || !errors.Is(err, context.Canceled) {
		t.Errorf("Run = %v", err)
	}
}

func TestTLS(t *testing.T) {
	srv := httptest.NewUnstartedServer(counter(t, nil))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshake the second agent refuses
	srv.StartTLS()
	defer srv.Close()
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	a := newAgent(t, httpagent.Config{URL: srv.URL, TLS: &tls.Config{RootCAs: pool}})
	if res, err := a.Run(t.Context(), dispatch("a b")); err != nil || res.AgentResult["words"] != 2.0 {
		t.Errorf("with the server's CA: %+v, %v", res, err)
	}
	_, err := newAgent(t, httpagent.Config{URL: srv.URL}).Run(t.Context(), dispatch("a b"))
	var ae *troupe.AgentError
	if !errors.As(err, &ae) || ae.Recoverable || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("without it: %v (a certificate that does not verify is permanent)", err)
	}
}

func TestConnectionRefusedIsRecoverable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	_, err := newAgent(t, httpagent.Config{URL: url}).Run(t.Context(), dispatch("q"))
	var ae *troupe.AgentError
	if !errors.As(err, &ae) || !ae.Recoverable || ae.Code != troupe.CodeAgentError {
		t.Errorf("Run = %v", err)
	}
}

// The agent's exchanges recorded to a cassette replay offline, byte for byte the same result.
func TestRecordAndReplayThroughACassette(t *testing.T) {
	srv := httptest.NewServer(counter(t, nil))
	path := filepath.Join(t.TempDir(), "counter.json")
	run := func(mode cassette.Mode) *troupe.Result {
		c, err := cassette.New(path, cassette.Config{Mode: mode})
		if err != nil {
			t.Fatal(err)
		}
		a := newAgent(t, httpagent.Config{URL: srv.URL, Client: &http.Client{Transport: c.Transport(nil)}, BearerTokenEnv: "TOK",
			LookupEnv: env(map[string]string{"TOK": "very-secret"})})
		res, err := a.Run(t.Context(), dispatch("one two three"))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Save(); err != nil {
			t.Fatal(err)
		}
		return res
	}
	live := run(cassette.ModeRecord)
	srv.Close()
	replayed := run(cassette.ModeReplay)
	if d := cmp.Diff(live, replayed); d != "" {
		t.Errorf("(-live +replayed):\n%s", d)
	}
}

// A service that echoes the credentials it got — in a 401's body, in an invalid result — cannot
// put them in the dispatch's error, whose message, details and cause end up in the run's events.
func TestEchoedSecretsAreScrubbedFromErrors(t *testing.T) {
	const token, key = "tok-ECHO-0123456789", "key-ECHO-abcdef"
	for _, tc := range []struct {
		name string
		code int
		want string
	}{
		{"401 quoting them", http.StatusUnauthorized, "status 401"},
		{"200 with an invalid result quoting them", http.StatusOK, "invalid result"},
		{"200 quoting them where the excerpt is cut", http.StatusOK, "invalid result"},
		{"a redirect to a URL holding them", http.StatusFound, "status 302"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tc.code == http.StatusFound {
					w.Header().Set("Location", "/login?token="+strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
				}
				w.WriteHeader(tc.code)
				pad := ""
				if strings.Contains(tc.name, "cut") {
					pad = strings.Repeat(" ", 470) // the excerpt ends inside the token
				}
				fmt.Fprintf(w, `{%s"error":"bad credentials %s / %s"}`, pad, r.Header.Get("Authorization"), r.Header.Get("X-Api-Key"))
			}))
			defer srv.Close()
			a := newAgent(t, httpagent.Config{URL: srv.URL, BearerTokenEnv: "TOK", HeadersFromEnv: map[string]string{"X-Api-Key": "KEY"},
				LookupEnv: env(map[string]string{"TOK": token, "KEY": key})})
			_, err := a.Run(t.Context(), dispatch("q"))
			var ae *troupe.AgentError
			if !errors.As(err, &ae) {
				t.Fatalf("Run = %v", err)
			}
			var se *httpagent.StatusError
			excerpt := ""
			if errors.As(err, &se) {
				excerpt = se.Excerpt
			}
			all := fmt.Sprintf("%v %+v %v %s", err, ae.Details, ae.Cause, excerpt)
			if strings.Contains(all, "ECHO") || strings.Contains(all, "tok-E") || !strings.Contains(all, "[redac") || !strings.Contains(all, tc.want) {
				t.Errorf("error and details: %s", all)
			}
		})
	}
}

// Where an error quotes the start of the output (64 bytes of output that is not JSON; the first
// 200 characters of an error object), a cut that falls inside an echoed secret keeps none of
// it: the output is scrubbed before it is cut.
func TestEchoedSecretCutByAnExcerptIsScrubbed(t *testing.T) {
	const token = "ghp_0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	for _, tc := range []struct {
		name, body string
	}{
		{"not JSON, cut at 64 bytes", "bad auth: %s rejected"},
		{"an error object cut at 200 characters", `{"error": "` + strings.Repeat("0", 180) + ` %s"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				fmt.Fprintf(w, tc.body, strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
			}))
			defer srv.Close()
			a := newAgent(t, httpagent.Config{URL: srv.URL, BearerTokenEnv: "TOK", LookupEnv: env(map[string]string{"TOK": token})})
			_, err := a.Run(t.Context(), dispatch("q"))
			var ae *troupe.AgentError
			if !errors.As(err, &ae) || ae.Code != troupe.CodeInvalidOutput {
				t.Fatalf("Run = %v, want INVALID_OUTPUT", err)
			}
			all := fmt.Sprintf("%v %+v", err, ae.Details)
			if strings.Contains(all, token[:12]) {
				t.Errorf("the error keeps the start of the secret: %s", all)
			}
		})
	}
}

// A secret with characters that get escaped is echoed in the escaped spelling: JSON as
// encoding/json writes it (with and without HTML escaping) and as ASCII-only encoders do,
// Go-quoted in a validation message, percent-encoded in a redirect. Every spelling is scrubbed.
// The soft hyphen (U+00AD) sets Go quoting apart from JSON: Go writes it \u00ad, JSON as it is;
// the key, beyond the Basic Multilingual Plane, is a surrogate pair to an ASCII-only encoder.
func TestEchoedSecretsAreScrubbedInEveryEscaping(t *testing.T) {
	const token = "tok\"ECHO\\<&é\u00ad🔑/9"
	goJSON := func(escapeHTML bool, v any) string {
		var b strings.Builder
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(escapeHTML)
		enc.Encode(v)
		return b.String()
	}
	plain := goJSON(false, map[string]string{"error": "bad token " + token})
	python := strings.NewReplacer("é", `\u00e9`, "\u00ad", `\u00ad`, "🔑", `\ud83d\udd11`).Replace(plain) // json.dumps
	for _, tc := range []struct {
		name, body, location string
		code                 int
		want                 string
	}{
		{"encoding/json, <, > and & escaped", goJSON(true, map[string]string{"error": "bad token " + token}), "", 401, "status 401"},
		{"encoding/json without HTML escaping", plain, "", 401, "status 401"},
		{"non-ASCII as \\u escapes", python, "", 401, "status 401"},
		{"and / as \\/", strings.ReplaceAll(python, "/", `\/`), "", 401, "status 401"}, // PHP's json_encode
		{"Go-quoted in the invalid result's message", goJSON(true, map[string]any{"agent_result": map[string]any{}, "status": token}), "", 200, "is not one of"},
		{"percent-encoded in a redirect's query", "", "/login?token=" + url.QueryEscape(token), 302, "status 302"},
		{"percent-encoded in a redirect's path", "", "/login/" + url.PathEscape(token), 302, "status 302"},
		// Python's quote leaves "/" alone; some encoders write lower-case hex.
		{"percent-encoded as Python does", "", "/login?token=" + strings.ReplaceAll(url.PathEscape(token), "%2F", "/"), 302, "status 302"},
		{"percent-encoded in lower case", "", "/login?token=" + regexp.MustCompile(`%[0-9A-F]{2}`).ReplaceAllStringFunc(url.QueryEscape(token), strings.ToLower), 302, "status 302"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if got := r.Header.Get("Authorization"); got != "Bearer "+token {
					t.Errorf("sent %q", got)
				}
				if tc.location != "" {
					w.Header().Set("Location", tc.location)
				}
				w.WriteHeader(tc.code)
				io.WriteString(w, tc.body)
			}))
			defer srv.Close()
			a := newAgent(t, httpagent.Config{URL: srv.URL, BearerTokenEnv: "TOK", LookupEnv: env(map[string]string{"TOK": token})})
			_, err := a.Run(t.Context(), dispatch("q"))
			var ae *troupe.AgentError
			if !errors.As(err, &ae) {
				t.Fatalf("Run = %v", err)
			}
			all := fmt.Sprintf("%v %+v %v", err, ae.Details, ae.Cause)
			if strings.Contains(all, "ECHO") || !strings.Contains(all, "[redacted]") || !strings.Contains(all, tc.want) {
				t.Errorf("error and details: %s", all)
			}
		})
	}
}

// A secret that holds another (a key, and a token that starts with it) is scrubbed whole, not
// cut where the shorter one was: "[redacted]-5678" would leak the token's end.
func TestASecretHoldingAnotherIsScrubbedWhole(t *testing.T) {
	const key, token = "abcd-1234", "abcd-1234-5678"
	srv := httptest.NewServer(status(http.StatusUnauthorized, nil, "bad token "+token))
	defer srv.Close()
	a := newAgent(t, httpagent.Config{URL: srv.URL, BearerTokenEnv: "TOK", HeadersFromEnv: map[string]string{"X-Api-Key": "KEY"},
		LookupEnv: env(map[string]string{"TOK": token, "KEY": key})})
	_, err := a.Run(t.Context(), dispatch("q"))
	if err == nil || strings.Contains(err.Error(), "5678") || !strings.Contains(err.Error(), "bad token [redacted]") {
		t.Errorf("Run = %v", err)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  httpagent.Config
		want string
	}{
		{"no URL", httpagent.Config{}, `Config.URL: "" is not`},
		{"not http", httpagent.Config{URL: "ftp://h/x"}, "not an http or https URL"},
		{"token variable unset", httpagent.Config{URL: "http://h", BearerTokenEnv: "NOPE_TOKEN", LookupEnv: env(nil)}, "environment variable NOPE_TOKEN is not set"},
		{"header variable unset", httpagent.Config{URL: "http://h", HeadersFromEnv: map[string]string{"X-K": "NOPE_KEY"}, LookupEnv: env(nil)}, "HeadersFromEnv[X-K]: the environment variable NOPE_KEY"},
		{"token variable empty", httpagent.Config{URL: "http://h", BearerTokenEnv: "TOK", LookupEnv: env(map[string]string{"TOK": ""})}, "Config.BearerTokenEnv: the environment variable TOK is set but empty"},
		{"no host", httpagent.Config{URL: "http:///x"}, `Config.URL: "http:///x" has no host`},
		{"every problem", httpagent.Config{URL: "http://h", Headers: map[string]string{"X A": "v", "X-B": "a\nb"}, Timeout: -1},
			`Config.Headers[X A]: "X A" is not a valid header name; Config.Headers[X-B]: the value is not a valid header value: it holds a newline; Config.Timeout: -1ns is negative`},
		{"TLS and Client", httpagent.Config{URL: "https://h", TLS: &tls.Config{}, Client: http.DefaultClient}, "exclusive"},
		{"negative timeout", httpagent.Config{URL: "http://h", Timeout: -1}, "negative"},
		// Header values net/http would refuse to send, on every dispatch: refused once, here,
		// naming the header — never quoting a secret's value.
		{"a header value with a newline", httpagent.Config{URL: "http://h", Headers: map[string]string{"X-Team": "search\nX-Admin: 1"}},
			"Config.Headers[X-Team]: the value is not a valid header value: it holds a newline"},
		{"a header name with a space", httpagent.Config{URL: "http://h", Headers: map[string]string{"X Team": "search"}},
			`Config.Headers[X Team]: "X Team" is not a valid header name`},
		{"an empty header name", httpagent.Config{URL: "http://h", Headers: map[string]string{"": "search"}},
			`Config.Headers: "" is not a valid header name`},
		{"a header name from the environment with a colon", httpagent.Config{URL: "http://h", HeadersFromEnv: map[string]string{"X-Key:": "KEY"}, LookupEnv: env(map[string]string{"KEY": "s3cr3t-key"})},
			`Config.HeadersFromEnv[X-Key:]: "X-Key:" is not a valid header name`},
		{"a secret header value with a newline", httpagent.Config{URL: "http://h", HeadersFromEnv: map[string]string{"X-Key": "KEY"}, LookupEnv: env(map[string]string{"KEY": "s3cr3t-key\n"})},
			"Config.HeadersFromEnv[X-Key]: the environment variable KEY is not a valid header value: it holds a newline"},
		{"a token with a carriage return", httpagent.Config{URL: "http://h", BearerTokenEnv: "TOK", LookupEnv: env(map[string]string{"TOK": "s3cr3t-key\r\n"})},
			"Config.BearerTokenEnv: the environment variable TOK is not a valid Authorization header value: it holds a carriage return"},
		{"a token with a NUL", httpagent.Config{URL: "http://h", BearerTokenEnv: "TOK", LookupEnv: env(map[string]string{"TOK": "s3cr3t-key\x00"})},
			"Config.BearerTokenEnv: the environment variable TOK is not a valid Authorization header value: it holds control character 0x00"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := httpagent.New(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "httpagent: ") {
				t.Errorf("New = %v, want an error with %q", err, tc.want)
			}
			if err != nil && strings.Contains(err.Error(), "s3cr3t") {
				t.Errorf("New = %v: it quotes the secret", err)
			}
		})
	}
}

// What net/http sends is accepted: a tab, spaces and UTF-8 in a value, a token's punctuation
// in a name.
func TestNewAcceptsHeadersHTTPSends(t *testing.T) {
	got := make(chan http.Header, 1)
	srv := httptest.NewServer(counter(t, func(r *http.Request, d *troupe.Dispatch) { got <- r.Header }))
	defer srv.Close()
	a := newAgent(t, httpagent.Config{URL: srv.URL, Headers: map[string]string{"X-Note": "a\tb café ", "X-Odd_Name!": "1"},
		BearerTokenEnv: "TOK", LookupEnv: env(map[string]string{"TOK": "tok en"})})
	if _, err := a.Run(t.Context(), dispatch("q")); err != nil {
		t.Fatal(err)
	}
	h := <-got
	if h.Get("X-Note") != "a\tb café" || h.Get("X-Odd_Name!") != "1" || h.Get("Authorization") != "Bearer tok en" {
		t.Errorf("headers %v", h)
	}
}

// A password in the URL, and a secret query parameter's value, appear in no error or detail:
// errors quote the URL masked, and a failure the service reports quoting either is scrubbed.
func TestURLSecretsMasked(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.URL.Query().Get("api_key")
		fmt.Fprintf(w, `{"status":"failed","errors":[{"code":"AGENT_ERROR","message":"key %s refused","recoverable":false}],"warnings":["used %s"]}`, key, key)
	}))
	defer srv.Close()
	d := troupe.NewDispatch()
	d.DispatchID, d.SessionID, d.QueryID, d.TargetAgent = troupe.NewDispatchID(1), "s", "q", "search"

	a, err := httpagent.New(httpagent.Config{URL: "http://bob:hunter2pass@127.0.0.1:9/dispatch"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.Run(t.Context(), d)
	info := troupe.ErrorInfoOf(err)
	if s := err.Error() + fmt.Sprint(info.Details); strings.Contains(s, "hunter2pass") || !strings.Contains(s, "bob:xxxxx@127.0.0.1:9") {
		t.Errorf("a connection error says %s; want the URL with its password masked", s)
	}

	a, err = httpagent.New(httpagent.Config{URL: srv.URL + "/dispatch?api_key=k3y-s3cret&region=eu"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Run(t.Context(), d)
	if err != nil {
		t.Fatal(err)
	}
	if s := fmt.Sprint(res.Errors, res.Warnings); strings.Contains(s, "k3y-s3cret") || !strings.Contains(s, "[redacted]") {
		t.Errorf("the failed result says %s; want the key redacted", s)
	}
	if _, err := httpagent.New(httpagent.Config{URL: "ftp://bob:hunter2pass@host/x?token=t0k3n-value"}); err == nil || strings.Contains(err.Error(), "hunter2pass") || strings.Contains(err.Error(), "t0k3n-value") {
		t.Errorf("New with a bad scheme: %v; want an error without the password", err)
	}
}
