package httpagent

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

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
// encoder), Go-quoted or percent-encoded — and in what a result the service sends says besides
// a valid answer (its errors, warnings and summary; the agent_result of a failure). A password
// in URL, and the value of a query parameter that names a secret (api_key, token, sig), are
// masked where errors and details quote the URL, and scrubbed as those values are.
type Config struct {
	// URL is where each dispatch is POSTed; http or https.
	URL string
	// Headers are sent with every request as they are (non-secret values: a tenant, a version).
	// A name that is not an HTTP token, or a value holding a control character other than a
	// tab (a newline), fails New, naming the header.
	Headers map[string]string
	// HeadersFromEnv maps a header name to the environment variable holding its value, e.g.
	// {"X-Api-Key": "SUMMARIZER_KEY"}. A variable that is not set, or whose value could not be
	// sent (a newline in it), fails New, naming the header and the variable, not the value.
	HeadersFromEnv map[string]string
	// BearerTokenEnv names the environment variable holding a token sent as
	// "Authorization: Bearer <token>"; "" sends none. A variable that is not set, or whose value
	// could not be sent, fails New.
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
	shown   string // url as errors and details quote it: a password and secret query values masked
	header  http.Header
	timeout time.Duration
	max     int64
	client  *http.Client
	agents  troupe.AgentSet
	secrets *wire.Secrets // the values read from the environment, scrubbed from what errors quote
}

// ConfigError is New's refusal of a Config: every problem it found, each at its field.
type ConfigError struct {
	Problems []ConfigProblem
}

// ConfigProblem is one problem of a Config. Field names the field as a workflow file's http
// block does ("url", "headers", "headers_from_env", "bearer_token_env", "timeout",
// "max_response_bytes", "tls"), Key the header it is about, if any, and Err what is wrong. It
// never holds a secret's value.
type ConfigProblem struct {
	Field, Key string
	Err        error
}

// goFields are Config's Go names of the fields ConfigProblem names.
var goFields = map[string]string{"url": "URL", "headers": "Headers", "headers_from_env": "HeadersFromEnv", "bearer_token_env": "BearerTokenEnv",
	"timeout": "Timeout", "max_response_bytes": "MaxResponseBytes", "tls": "TLS"}

// Error lists the problems at Config's Go fields: "httpagent: Config.URL: …; Config.Headers[X Team]: …".
func (e *ConfigError) Error() string {
	var b strings.Builder
	b.WriteString("httpagent: ")
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString("Config." + goFields[p.Field])
		if p.Key != "" {
			b.WriteString("[" + p.Key + "]")
		}
		b.WriteString(": " + p.Err.Error())
	}
	return b.String()
}

// New validates cfg, reads the secrets it names from the environment and returns the agent. A
// Config it refuses gets a *ConfigError with every problem found, in the order of Config's
// fields and, within a map, of its keys.
func New(cfg Config) (*Agent, error) {
	var problems []ConfigProblem
	bad := func(field, key, format string, args ...any) {
		problems = append(problems, ConfigProblem{Field: field, Key: key, Err: fmt.Errorf(format, args...)})
	}
	u, err := url.Parse(cfg.URL)
	var shown string
	switch ue := (*url.Error)(nil); {
	case errors.As(err, &ue):
		// Not ue itself, which quotes the URL, and a password in it.
		bad("url", "", "not a URL: %w", ue.Err)
	case u.Scheme != "http" && u.Scheme != "https":
		shown, _ = wire.ShownURL(u)
		bad("url", "", "%q is not an http or https URL", shown)
	case u.Host == "":
		shown, _ = wire.ShownURL(u)
		bad("url", "", "%q has no host", shown)
	}
	// A header net/http would refuse to send fails New, not every dispatch.
	for _, k := range slices.Sorted(maps.Keys(cfg.Headers)) {
		if !validHeaderName(k) {
			bad("headers", k, "%q is not a valid header name", k)
		} else if why := wire.BadHeaderValue(cfg.Headers[k]); why != "" {
			bad("headers", k, "the value is not a valid header value: %s", why)
		}
	}
	lookup := cfg.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	var secrets []string
	env := func(field, key, name, what string) (string, bool) {
		v, ok := lookup(name)
		switch {
		case !ok:
			bad(field, key, "the environment variable %s is not set", name)
		case v == "":
			bad(field, key, "the environment variable %s is set but empty", name)
		case wire.BadHeaderValue(v) != "":
			// The value is a secret: the error says what is wrong with it, never what it is.
			bad(field, key, "the environment variable %s is not a valid %s: %s", name, what, wire.BadHeaderValue(v))
		default:
			secrets = append(secrets, v)
			return v, true
		}
		return "", false
	}
	fromEnv := map[string]string{}
	for _, h := range slices.Sorted(maps.Keys(cfg.HeadersFromEnv)) {
		if !validHeaderName(h) {
			bad("headers_from_env", h, "%q is not a valid header name", h)
		} else if v, ok := env("headers_from_env", h, cfg.HeadersFromEnv[h], "header value"); ok {
			fromEnv[h] = v
		}
	}
	var token string
	if cfg.BearerTokenEnv != "" {
		token, _ = env("bearer_token_env", "", cfg.BearerTokenEnv, "Authorization header value")
	}
	if cfg.Timeout < 0 {
		bad("timeout", "", "%v is negative", cfg.Timeout)
	}
	if cfg.MaxResponseBytes < 0 {
		bad("max_response_bytes", "", "%d is negative", cfg.MaxResponseBytes)
	}
	if cfg.TLS != nil && cfg.Client != nil {
		bad("tls", "", "Config.TLS and Config.Client are exclusive: configure TLS in the client's transport")
	}
	if len(problems) > 0 {
		return nil, &ConfigError{Problems: problems}
	}
	a := &Agent{url: u.String(), header: make(http.Header), timeout: cfg.Timeout, max: cfg.MaxResponseBytes, client: cfg.Client, agents: cfg.Agents}
	var urlSecrets []string
	a.shown, urlSecrets = wire.ShownURL(u)
	secrets = append(secrets, urlSecrets...)
	if a.timeout == 0 {
		a.timeout = DefaultTimeout
	}
	if a.max == 0 {
		a.max = DefaultMaxResponseBytes
	}
	for _, k := range slices.Sorted(maps.Keys(cfg.Headers)) {
		a.header.Set(k, cfg.Headers[k])
	}
	for _, h := range slices.Sorted(maps.Keys(fromEnv)) {
		a.header.Set(h, fromEnv[h])
	}
	if token != "" {
		a.header.Set("Authorization", "Bearer "+token)
	}
	a.secrets = wire.NewSecrets(secrets...)
	a.header.Set("Content-Type", "application/json")
	a.header.Set("Accept", "application/json")
	if a.client == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.TLSClientConfig = cfg.TLS
		a.client = &http.Client{Transport: t, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	return a, nil
}

// validHeaderName reports whether name is a token (RFC 9110, section 5.6.2), as net/http
// requires of a header's name.
func validHeaderName(name string) bool {
	if name == "" {
		return false
	}
	for i := range len(name) {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
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
// but 501 and 505 recoverable (Retry-After in the error's details), any other not.
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
		return nil, a.transportError(ctx, err, nil)
	}
	defer resp.Body.Close()
	// One byte past the bound tells a body over it from one at it; at the largest bound
	// (math.MaxInt64, which the config schema allows) there is no byte past it to read.
	data, err := io.ReadAll(io.LimitReader(resp.Body, a.max+min(1, math.MaxInt64-a.max)))
	failed := resp.StatusCode < 200 || resp.StatusCode > 299
	if err != nil && (!failed || ctx.Err() != nil) {
		return nil, a.transportError(ctx, err, resp)
	}
	details := map[string]any{"url": a.shown, "http_status": resp.StatusCode}
	// The status first: a 503's error page over the bound, or cut short by a lost connection,
	// is still a 503, recoverable (a 400's, permanent), and its excerpt needs only the start
	// of the body.
	if failed {
		// A service may echo the token it was sent (a 401 quoting it): scrubbed before the
		// excerpt is cut, which would split it.
		return nil, a.statusError(resp, []byte(a.secrets.String(string(data))), details)
	}
	if int64(len(data)) > a.max {
		return nil, &troupe.AgentError{Code: troupe.CodeInvalidOutput, Details: details,
			Message: fmt.Sprintf("httpagent: POST %s: response over %d bytes (max_response_bytes)", a.shown, a.max)}
	}
	res, err := wire.DecodeResult("httpagent: POST "+a.shown, data, d, a.agents, details, a.secrets)
	if err != nil {
		return nil, a.secrets.Error(err, data)
	}
	a.secrets.Result(res) // a failure it reports may quote what it was sent
	return res, nil
}

func (a *Agent) statusError(resp *http.Response, data []byte, details map[string]any) error {
	se := &StatusError{StatusCode: resp.StatusCode, RetryAfter: wire.RetryAfter(resp.Header.Get("Retry-After"), time.Now())}
	if len(bytes.TrimSpace(data)) > 0 {
		se.Excerpt = wire.Head(bytes.TrimSpace(data), excerptBytes)
		details["body_excerpt"] = se.Excerpt
	}
	code := resp.StatusCode
	if se.RetryAfter > 0 {
		details["retry_after_seconds"] = se.RetryAfter.Seconds()
	}
	if loc := resp.Header.Get("Location"); code >= 300 && code < 400 && loc != "" {
		loc = a.secrets.String(loc)
		// A secret percent-encoded otherwise than Go encodes it (Python leaves "/" alone, some
		// write lower-case hex) is found once decoded; the location is then given decoded.
		if dec, err := url.PathUnescape(loc); err == nil && a.secrets.String(dec) != dec {
			loc = a.secrets.String(dec)
		}
		details["location"] = loc
	}
	errCode := troupe.CodeAgentError
	if code == http.StatusRequestTimeout || code == http.StatusGatewayTimeout {
		errCode = troupe.CodeTimeout
	}
	return &troupe.AgentError{Code: errCode, Recoverable: wire.Recoverable(code), Cause: se, Details: details,
		Message: "httpagent: POST " + a.shown}
}

// transportError classifies a failure to get a response, or, when resp is not nil, to read its
// body: a deadline is TIMEOUT, a cancelled run CANCELLED, a certificate that does not verify
// permanent, anything else (refused, reset) recoverable. The status of a response whose body
// was lost is kept, in the message and the details.
func (a *Agent) transportError(ctx context.Context, err error, resp *http.Response) error {
	msg := "httpagent: POST " + a.shown
	details := map[string]any{"url": a.shown}
	if ue := (*url.Error)(nil); errors.As(err, &ue) {
		// net/http quotes the URL it was asked for, a secret query parameter and all.
		cp := *ue
		cp.URL = a.shown
		err = &cp
	}
	if resp != nil {
		msg += fmt.Sprintf(": reading the body of a %s response", strings.TrimSpace(fmt.Sprintf("%d %s", resp.StatusCode, http.StatusText(resp.StatusCode))))
		details["http_status"] = resp.StatusCode
	}
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
