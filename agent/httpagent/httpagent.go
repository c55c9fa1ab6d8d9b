package httpagent

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/agent/internal/wire"
)

// Bounds a zero Config field takes.
const (
	DefaultTimeout          = time.Minute
	DefaultMaxResponseBytes = 4 << 20
	excerptBytes            = 512
)

// Config configures an HTTP agent. Only URL is required. Secrets never appear in a Config: they
// are named by environment variable and read once, by New. Nor do they appear in errors: a
// service that echoes one back (a 401 quoting the token) has it replaced by "[redacted]" in
// what the error quotes — as it was sent, JSON-escaped (by encoding/json or an ASCII-only
// encoder), Go-quoted or percent-encoded.
type Config struct {
	// URL is where each dispatch is POSTed; http or https.
	URL string
	// Headers are sent with every request as they are (non-secret values: a tenant, a version).
	Headers map[string]string
	// HeadersFromEnv maps a header name to the environment variable holding its value, e.g.
	// {"X-Api-Key": "SUMMARIZER_KEY"}. A variable that is not set fails New.
	HeadersFromEnv map[string]string
	// BearerTokenEnv names the environment variable holding a token sent as
	// "Authorization: Bearer <token>"; "" sends none. A variable that is not set fails New.
	BearerTokenEnv string
	// Timeout bounds one dispatch, connection to last byte; 0 means DefaultTimeout. A shorter
	// deadline on the context (the dispatch's timeout_seconds, the run's budget) wins.
	Timeout time.Duration
	// MaxResponseBytes bounds the response body; 0 means DefaultMaxResponseBytes. A longer
	// response fails the dispatch.
	MaxResponseBytes int64
	// TLS configures the agent's own transport (a private CA, client certificates); nil is Go's
	// default. It cannot be combined with Client.
	TLS *tls.Config
	// Client, when set, sends the requests — e.g. one whose transport is a cassette's. Nil is a
	// client of the agent's own that does not follow redirects (a redirected POST would lose
	// its body).
	Client *http.Client
	// Agents, when set, checks a result's next_agent names a known agent (the engine checks it
	// again in any case).
	Agents troupe.AgentSet
	// LookupEnv reads the environment; nil is os.LookupEnv.
	LookupEnv func(key string) (string, bool)
}

// Agent POSTs each dispatch to a service. It is immutable and safe for concurrent use. The zero
// value is not usable; build one with New.
type Agent struct {
	url     string
	header  http.Header
	timeout time.Duration
	max     int64
	client  *http.Client
	agents  troupe.AgentSet
	secrets []string // every spelling of the values read from the environment, scrubbed from what errors quote
}

// New validates cfg, reads the secrets it names from the environment and returns the agent.
func New(cfg Config) (*Agent, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("httpagent: Config.URL %q is not an http or https URL", cfg.URL)
	}
	if cfg.Timeout < 0 || cfg.MaxResponseBytes < 0 {
		return nil, errors.New("httpagent: Config.Timeout and Config.MaxResponseBytes cannot be negative")
	}
	if cfg.TLS != nil && cfg.Client != nil {
		return nil, errors.New("httpagent: Config.TLS and Config.Client are exclusive: configure TLS in the client's transport")
	}
	lookup := cfg.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	a := &Agent{url: u.String(), header: make(http.Header), timeout: cfg.Timeout, max: cfg.MaxResponseBytes, client: cfg.Client, agents: cfg.Agents}
	if a.timeout == 0 {
		a.timeout = DefaultTimeout
	}
	if a.max == 0 {
		a.max = DefaultMaxResponseBytes
	}
	for k, v := range cfg.Headers {
		a.header.Set(k, v)
	}
	env := func(what, name string) (string, error) {
		v, ok := lookup(name)
		if !ok || v == "" {
			return "", fmt.Errorf("httpagent: %s: environment variable %s is not set", what, name)
		}
		if len(v) >= minSecret {
			a.secrets = append(a.secrets, v)
		}
		return v, nil
	}
	for h, name := range cfg.HeadersFromEnv {
		v, err := env("Config.HeadersFromEnv["+h+"]", name)
		if err != nil {
			return nil, err
		}
		a.header.Set(h, v)
	}
	if cfg.BearerTokenEnv != "" {
		v, err := env("Config.BearerTokenEnv", cfg.BearerTokenEnv)
		if err != nil {
			return nil, err
		}
		a.header.Set("Authorization", "Bearer "+v)
	}
	a.secrets = spellings(a.secrets)
	a.header.Set("Content-Type", "application/json")
	a.header.Set("Accept", "application/json")
	if a.client == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.TLSClientConfig = cfg.TLS
		a.client = &http.Client{Transport: t, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	return a, nil
}

// CloseIdleConnections closes the idle keep-alive connections of the agent's client.
func (a *Agent) CloseIdleConnections() { a.client.CloseIdleConnections() }

// StatusError is the cause of the error an HTTP agent returns for a response that is not 2xx.
type StatusError struct {
	StatusCode int
	RetryAfter time.Duration // from Retry-After; 0 when absent
	Excerpt    string        // the start of the body, quoted
}

func (e *StatusError) Error() string {
	s := fmt.Sprintf("httpagent: status %d %s", e.StatusCode, http.StatusText(e.StatusCode))
	if e.RetryAfter > 0 {
		s += fmt.Sprintf(", retry after %v", e.RetryAfter)
	}
	if e.Excerpt != "" {
		s += ": " + e.Excerpt
	}
	return s
}

// Run POSTs d as JSON with headers Idempotency-Key (the dispatch id, the same on every send of
// the dispatch) and, inside a run, W3C traceparent and X-Troupe-Trace-Id; it reads and
// validates a Result from a 2xx response. Other statuses fail the dispatch: 408, 429 and 5xx
// recoverable (Retry-After in the error's details), any other not.
func (a *Agent) Run(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
	body, err := json.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("httpagent: encoding the dispatch: %w", err)
	}
	ctx, cancel := context.WithTimeoutCause(ctx, a.timeout, troupe.ErrTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("httpagent: %w", err)
	}
	for k, v := range a.header {
		req.Header[k] = v
	}
	req.Header.Set("Idempotency-Key", d.DispatchID)
	if tid := d.TraceID(); tid != "" {
		req.Header.Set("Traceparent", wire.Traceparent(tid, d.DispatchID))
		req.Header.Set("X-Troupe-Trace-Id", tid)
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return nil, a.transportError(ctx, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, a.max+1))
	if err != nil {
		return nil, a.transportError(ctx, err)
	}
	details := map[string]any{"url": a.url, "http_status": resp.StatusCode}
	// The status first: a 503's error page over the bound is still a 503, recoverable, and
	// its excerpt needs only the start of the body.
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, a.statusError(resp, []byte(a.scrub(string(data))), details)
	}
	if int64(len(data)) > a.max {
		return nil, &troupe.AgentError{Code: troupe.CodeInvalidOutput, Details: details,
			Message: fmt.Sprintf("httpagent: POST %s: response over %d bytes", a.url, a.max)}
	}
	res, err := wire.DecodeResult("httpagent: POST "+a.url, data, d, a.agents, details)
	if err != nil {
		return nil, a.scrubError(err, data)
	}
	return res, nil
}

// minSecret is the shortest environment value scrubbed from errors; shorter ones would blank
// unrelated text.
const minSecret = 4

// scrub replaces the agent's secrets in text a service sent back: a service that echoes the
// token it was sent (a 401 quoting it) must not put it in the run's events.
func (a *Agent) scrub(s string) string {
	for _, v := range a.secrets {
		s = strings.ReplaceAll(s, v, "[redacted]")
	}
	return s
}

// spellings returns the ways text a service sends back, or an error quoting it, can spell the
// secrets vs, longest first so that a spelling holding another is replaced whole: as sent;
// JSON-escaped as encoding/json writes it (", \ and control characters escaped; <, > and & as
// \u003c, \u003e, \u0026, or as they are with SetEscapeHTML(false); other non-ASCII as it is)
// and as ASCII-only encoders do (non-ASCII as \u00e9 — Python's json.dumps — and / as \/ too —
// PHP's json_encode); Go-quoted, as a validation message quotes a value (%q); and
// percent-encoded, as a redirect's Location carries it in a query or a path.
func spellings(vs []string) []string {
	inner := func(quoted string) string { return quoted[1 : len(quoted)-1] }
	var out []string
	for _, v := range vs {
		html, _ := json.Marshal(v) // a string always encodes
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		enc.Encode(v)
		plain := inner(strings.TrimSuffix(b.String(), "\n"))
		ascii := asciiJSON(plain)
		out = append(out, v, inner(string(html)), plain, ascii, strings.ReplaceAll(ascii, "/", `\/`),
			inner(strconv.Quote(v)), url.QueryEscape(v), url.PathEscape(v))
	}
	slices.SortFunc(out, func(a, b string) int { return cmp.Or(len(b)-len(a), strings.Compare(a, b)) })
	return slices.Compact(out)
}

// asciiJSON writes the non-ASCII characters of JSON text as \u escapes (a surrogate pair beyond
// the Basic Multilingual Plane), with lower-case hex digits as Python and PHP write them.
func asciiJSON(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r < utf8.RuneSelf:
			b.WriteRune(r)
		case r > 0xFFFF:
			r1, r2 := utf16.EncodeRune(r)
			fmt.Fprintf(&b, `\u%04x\u%04x`, r1, r2)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return b.String()
}

// scrubError scrubs an invalid result's error (its message, the output it quotes, its cause).
// The output is quoted again from the scrubbed data: scrubbing the quote would miss a secret
// the quote cuts in two.
func (a *Agent) scrubError(err error, data []byte) error {
	var ae *troupe.AgentError
	if len(a.secrets) == 0 || !errors.As(err, &ae) {
		return err
	}
	ae.Message = a.scrub(ae.Message)
	if _, ok := ae.Details["output"]; ok {
		ae.Details["output"] = wire.Head([]byte(a.scrub(string(data))), wire.OutputExcerpt)
	}
	for k, v := range ae.Details {
		switch x := v.(type) {
		case string:
			ae.Details[k] = a.scrub(x)
		case []string:
			for i := range x {
				x[i] = a.scrub(x[i])
			}
		}
	}
	if ae.Cause != nil {
		if msg := ae.Cause.Error(); a.scrub(msg) != msg {
			ae.Cause = errors.New(a.scrub(msg))
		}
	}
	return err
}

func (a *Agent) statusError(resp *http.Response, data []byte, details map[string]any) error {
	se := &StatusError{StatusCode: resp.StatusCode, RetryAfter: wire.RetryAfter(resp.Header.Get("Retry-After"), time.Now())}
	if len(bytes.TrimSpace(data)) > 0 {
		se.Excerpt = wire.Head(bytes.TrimSpace(data), excerptBytes)
		details["body_excerpt"] = se.Excerpt
	}
	code := resp.StatusCode
	recoverable := code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || code >= 500
	if se.RetryAfter > 0 {
		details["retry_after_seconds"] = se.RetryAfter.Seconds()
	}
	if loc := resp.Header.Get("Location"); code >= 300 && code < 400 && loc != "" {
		details["location"] = a.scrub(loc)
	}
	errCode := troupe.CodeAgentError
	if code == http.StatusRequestTimeout || code == http.StatusGatewayTimeout {
		errCode = troupe.CodeTimeout
	}
	return &troupe.AgentError{Code: errCode, Recoverable: recoverable, Cause: se, Details: details,
		Message: "httpagent: POST " + a.url}
}

// transportError classifies a failure to get a response: a deadline is TIMEOUT, a cancelled
// run CANCELLED, a certificate that does not verify permanent, anything else (refused,
// reset) recoverable.
func (a *Agent) transportError(ctx context.Context, err error) error {
	msg := "httpagent: POST " + a.url
	details := map[string]any{"url": a.url}
	if ctx.Err() != nil {
		cause := context.Cause(ctx)
		if errors.Is(cause, troupe.ErrTimeout) || errors.Is(cause, context.DeadlineExceeded) {
			return &troupe.AgentError{Code: troupe.CodeTimeout, Recoverable: true, Message: msg, Cause: cause, Details: details}
		}
		return &troupe.AgentError{Code: troupe.CodeCancelled, Message: msg, Cause: cause, Details: details}
	}
	var cv *tls.CertificateVerificationError
	if errors.As(err, &cv) {
		return &troupe.AgentError{Code: troupe.CodeAgentError, Message: msg, Cause: err, Details: details}
	}
	return &troupe.AgentError{Code: troupe.CodeAgentError, Recoverable: true, Message: msg, Cause: err, Details: details}
}
