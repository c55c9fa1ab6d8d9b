package cassette

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/troupehq/troupe/agent/internal/wire"
)

// Mode says whether a cassette talks to the network.
type Mode string

// Modes. The zero Mode is ModeReplay: a cassette built without saying otherwise never reaches
// the network.
const (
	ModeReplay Mode = "replay" // serve recorded exchanges; a request with none fails
	ModeRecord Mode = "record" // pass every request through and record it; Save writes the file
	ModeAuto   Mode = "auto"   // replay when the file exists, record when it does not
)

// ParseMode parses "replay", "record" or "auto"; "" is ModeReplay. It suits a mode taken from an
// environment variable, such as TROUPE_CASSETTE=record to re-record a test's cassettes.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(strings.ToLower(strings.TrimSpace(s))); m {
	case "":
		return ModeReplay, nil
	case ModeReplay, ModeRecord, ModeAuto:
		return m, nil
	}
	return "", fmt.Errorf("cassette: unknown mode %q (want replay, record or auto)", s)
}

// Redacted replaces every secret a cassette strips.
const Redacted = "REDACTED"

// DefaultMaxBodyBytes bounds each recorded body when Config.MaxBodyBytes is zero.
const DefaultMaxBodyBytes = 16 << 20

// Config configures a cassette. The zero value replays, strips the default secrets and bounds
// bodies to DefaultMaxBodyBytes.
type Config struct {
	Mode Mode

	// RedactHeaders names headers whose values are replaced by Redacted, in addition to
	// Authorization, Proxy-Authorization, Api-Key, X-Api-Key, Cookie and Set-Cookie. Case does
	// not matter.
	RedactHeaders []string

	// RedactQuery names URL query parameters whose values are replaced, in addition to
	// api-key, api_key, apikey, access_token and key.
	RedactQuery []string

	// RedactJSONPaths are dotted paths into JSON request and response bodies whose values are
	// replaced: "api_key", "auth.token", "messages.*.content" ("*" is every array element or
	// object member, a number one array element).
	RedactJSONPaths []string

	// RedactPatterns are replaced wherever they match in URLs, header values, text bodies and
	// the string values of JSON bodies.
	RedactPatterns []*regexp.Regexp

	// MaxBodyBytes bounds each recorded body; 0 means DefaultMaxBodyBytes. A request body over
	// it fails the request; a response body over it is passed on whole but recorded cut short,
	// and Save reports it.
	MaxBodyBytes int64
}

// Cassette records HTTP exchanges to a file or replays them from it. The zero value is not
// usable; build one with New. It is safe for concurrent use; its Transport may serve many
// goroutines at once.
type Cassette struct {
	path string
	mode Mode // resolved: never ModeAuto
	red  redactor
	max  int64

	mu       sync.Mutex
	recorded []*Interaction   // record mode: completed exchanges, in completion order
	pending  map[string][]int // replay mode: match key → indexes into file.Interactions not yet served
	file     File
	problems []string // record mode: what Save must report
}

// New opens the cassette at path. In ModeReplay the file must exist and parse; in ModeRecord it
// starts empty and Save overwrites the file; ModeAuto picks one by whether the file exists.
func New(path string, cfg Config) (*Cassette, error) {
	if path == "" {
		return nil, errors.New("cassette: empty path")
	}
	mode, err := ParseMode(string(cfg.Mode))
	if err != nil {
		return nil, err
	}
	c := &Cassette{path: path, mode: mode, max: cfg.MaxBodyBytes}
	if c.max <= 0 {
		c.max = DefaultMaxBodyBytes
	}
	if c.red, err = newRedactor(cfg); err != nil {
		return nil, err
	}
	if mode == ModeAuto {
		c.mode = ModeReplay
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			c.mode = ModeRecord
		}
	}
	if c.mode == ModeRecord {
		return c, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cassette: replay: %w", err)
	}
	if c.file, err = Parse(data); err != nil {
		return nil, fmt.Errorf("cassette: %s: %w", path, err)
	}
	c.pending = make(map[string][]int)
	for i, in := range c.file.Interactions {
		k := c.red.key(in.Request.Method, sortedQuery(in.Request.URL), in.Request.Body.bytes())
		c.pending[k] = append(c.pending[k], i)
	}
	return c, nil
}

// Mode returns the cassette's mode, ModeAuto resolved.
func (c *Cassette) Mode() Mode { return c.mode }

// Path returns the cassette's file.
func (c *Cassette) Path() string { return c.path }

// Transport returns a RoundTripper that records through inner (nil means
// http.DefaultTransport) or, when replaying, serves from the cassette and never calls inner.
func (c *Cassette) Transport(inner http.RoundTripper) http.RoundTripper {
	if inner == nil {
		inner = http.DefaultTransport
	}
	return &transport{c: c, inner: inner}
}

// Client returns an *http.Client whose transport is c.Transport(nil).
func (c *Cassette) Client() *http.Client { return &http.Client{Transport: c.Transport(nil)} }

// Unused describes the recorded exchanges a replaying cassette has not served yet, so a test can
// assert that its workflow made every call it made when it was recorded. It is nil when
// recording.
func (c *Cassette) Unused() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var idx []int
	for _, is := range c.pending {
		idx = append(idx, is...)
	}
	slices.Sort(idx)
	var out []string
	for _, i := range idx {
		out = append(out, describe(c.file.Interactions[i].Request.Method, c.file.Interactions[i].Request.URL, c.file.Interactions[i].Request.Body.bytes()))
	}
	return out
}

// Save writes what was recorded to the cassette's file (atomically: a temporary file renamed
// over it). Exchanges whose response body is still being read are not included. Replaying,
// Save does nothing. It reports a response recorded cut short by MaxBodyBytes as an error after
// writing the file.
func (c *Cassette) Save() error {
	if c.mode != ModeRecord {
		return nil
	}
	c.mu.Lock()
	f := File{Version: Version, Interactions: slices.Clone(c.recorded)}
	problems := slices.Clone(c.problems)
	c.mu.Unlock()
	// Stable order: by what a replay matches on, then in the order they completed — so the same
	// exchanges give the same file whatever order concurrent requests finished in.
	keys := make(map[*Interaction]string, len(f.Interactions))
	for _, in := range f.Interactions {
		keys[in] = c.red.key(in.Request.Method, in.Request.URL, in.Request.Body.bytes())
	}
	slices.SortStableFunc(f.Interactions, func(a, b *Interaction) int { return cmp.Compare(keys[a], keys[b]) })
	data, err := f.Marshal()
	if err != nil {
		return fmt.Errorf("cassette: %s: %w", c.path, err)
	}
	if err := writeFile(c.path, data); err != nil {
		return fmt.Errorf("cassette: %w", err)
	}
	if len(problems) > 0 {
		return fmt.Errorf("cassette: %s: %s", c.path, strings.Join(problems, "; "))
	}
	return nil
}

func writeFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".cassette-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

type transport struct {
	c     *Cassette
	inner http.RoundTripper
}

// ErrNoMatch is what a replaying cassette returns (wrapped, naming the request) for a request
// it has no recorded exchange left for.
var ErrNoMatch = errors.New("cassette: no recorded exchange matches")

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	c := t.c
	red := c.red.withSent(req)
	body, err := readBody(req, c.max, red.url)
	if err != nil {
		return nil, err
	}
	if c.mode == ModeReplay {
		return c.replay(req, body)
	}
	out := req.Clone(req.Context())
	if req.Body != nil {
		out.Body = io.NopCloser(bytes.NewReader(body))
		out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	resp, err := t.inner.RoundTrip(out)
	if err != nil {
		return nil, err
	}
	in := &Interaction{Request: Request{
		Method:  req.Method,
		URL:     red.url(req.URL),
		Headers: red.headers(req.Header),
		Body:    red.body(req.Header.Get("Content-Type"), body, false),
	}}
	in.Response = Response{Status: resp.StatusCode, Headers: red.headers(resp.Header)}
	resp.Body = &tee{rc: resp.Body, c: c, red: red, in: in, ctype: resp.Header.Get("Content-Type"), max: c.max}
	return resp, nil
}

// readBody reads a request's body, up to limit bytes. Its errors name the request's URL as
// shown gives it, secrets stripped: they reach events and logs.
func readBody(req *http.Request, limit int64, shown func(*url.URL) string) ([]byte, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return nil, nil
	}
	defer req.Body.Close()
	b, err := io.ReadAll(io.LimitReader(req.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("cassette: reading the body of %s %s: %w", req.Method, shown(req.URL), err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("cassette: the body of %s %s is over %d bytes", req.Method, shown(req.URL), limit)
	}
	return b, nil
}

// tee passes a response body to the caller as it arrives — a stream stays a stream — and keeps
// a copy; when the caller reaches the end or closes it, the exchange is recorded with what was
// read.
type tee struct {
	rc    io.ReadCloser
	c     *Cassette
	red   redactor // the cassette's, plus the secrets the request carried
	in    *Interaction
	ctype string
	max   int64
	buf   bytes.Buffer
	cut   bool
	once  sync.Once
}

func (t *tee) Read(p []byte) (int, error) {
	n, err := t.rc.Read(p)
	if n > 0 {
		if room := t.max - int64(t.buf.Len()); room < int64(n) {
			t.buf.Write(p[:max(room, 0)])
			t.cut = true
		} else {
			t.buf.Write(p[:n])
		}
	}
	if err == io.EOF {
		t.finish()
	}
	return n, err
}

func (t *tee) Close() error {
	t.finish()
	return t.rc.Close()
}

func (t *tee) finish() {
	t.once.Do(func() {
		c := t.c
		t.in.Response.Body = t.red.body(t.ctype, t.buf.Bytes(), isStream(t.ctype))
		c.mu.Lock()
		defer c.mu.Unlock()
		if t.cut {
			t.in.Response.Truncated = true
			c.problems = append(c.problems, fmt.Sprintf("the response to %s %s is over %d bytes and was recorded cut short", t.in.Request.Method, t.in.Request.URL, t.max))
		}
		c.recorded = append(c.recorded, t.in)
	})
}

func isStream(ctype string) bool {
	return strings.HasPrefix(strings.ToLower(strings.TrimSpace(ctype)), "text/event-stream")
}

func (c *Cassette) replay(req *http.Request, body []byte) (*http.Response, error) {
	if err := req.Context().Err(); err != nil {
		return nil, context.Cause(req.Context())
	}
	red := c.red.withSent(req) // as when recording, so a body that quotes the key still matches
	u := red.url(req.URL)
	rb := red.body(req.Header.Get("Content-Type"), body, false).bytes()
	// Sorted again after redaction, as a recorded URL is read (a pattern may have redacted a
	// parameter whole).
	k := red.key(req.Method, sortedQuery(u), rb)
	c.mu.Lock()
	is := c.pending[k]
	if len(is) == 0 {
		c.mu.Unlock()
		// Named as the file would hold it, secrets stripped: the error reaches events and logs.
		return nil, fmt.Errorf("%w %s in %s (%d recorded)", ErrNoMatch, describe(req.Method, u, rb), c.path, len(c.file.Interactions))
	}
	i := is[0]
	c.pending[k] = is[1:]
	if len(c.pending[k]) == 0 {
		delete(c.pending, k)
	}
	c.mu.Unlock()
	r := c.file.Interactions[i].Response
	h := make(http.Header, len(r.Headers))
	for k, v := range r.Headers {
		h[k] = slices.Clone(v)
	}
	h.Del("Content-Length")
	h.Del("Transfer-Encoding")
	resp := &http.Response{
		Status:     strconv.Itoa(r.Status) + " " + http.StatusText(r.Status),
		StatusCode: r.Status,
		Proto:      "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        h,
		Request:       req,
		ContentLength: -1,
	}
	if len(r.Body.Stream) > 0 {
		resp.Body = &chunks{ctx: req.Context(), rest: r.Body.Stream}
	} else {
		b := r.Body.bytes()
		resp.ContentLength = int64(len(b))
		resp.Body = io.NopCloser(bytes.NewReader(b))
	}
	return resp, nil
}

// describe names a request in errors: method, URL and the start of its body.
func describe(method, u string, body []byte) string {
	s := method + " " + u
	if len(body) > 0 {
		s += " with body " + wire.Head(body, 200)
	}
	return s
}

// chunks serves a recorded stream one recorded chunk per Read at most, so a streaming reader
// sees events arrive as separate reads, as it did from the server.
type chunks struct {
	ctx  context.Context
	rest []string
	cur  string
}

func (r *chunks) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, context.Cause(r.ctx)
	}
	if r.cur == "" {
		if len(r.rest) == 0 {
			return 0, io.EOF
		}
		r.cur, r.rest = r.rest[0], r.rest[1:]
	}
	n := copy(p, r.cur)
	r.cur = r.cur[n:]
	return n, nil
}

func (r *chunks) Close() error { r.rest, r.cur = nil, ""; return nil }

// redactor strips secrets and computes match keys.
type redactor struct {
	hdr      map[string]bool // canonical header names
	query    map[string]bool // lower-case parameter names
	paths    [][]string
	patterns []*regexp.Regexp
	sent     []string // secrets one request carried, longest first (see withSent)
}

// minSent is the shortest value withSent strips wherever it appears: shorter ones ("1", "on")
// would mangle unrelated text, and no real credential is that short.
const minSent = 8

var defaultHeaders = []string{"Authorization", "Proxy-Authorization", "Api-Key", "X-Api-Key", "Cookie", "Set-Cookie"}
var defaultQuery = []string{"api-key", "api_key", "apikey", "access_token", "key"}

func newRedactor(cfg Config) (redactor, error) {
	r := redactor{hdr: map[string]bool{}, query: map[string]bool{}, patterns: cfg.RedactPatterns}
	for _, h := range append(slices.Clone(defaultHeaders), cfg.RedactHeaders...) {
		r.hdr[http.CanonicalHeaderKey(strings.TrimSpace(h))] = true
	}
	for _, q := range append(slices.Clone(defaultQuery), cfg.RedactQuery...) {
		r.query[strings.ToLower(q)] = true
	}
	for _, p := range cfg.RedactJSONPaths {
		parts := strings.Split(p, ".")
		if slices.Contains(parts, "") {
			return r, fmt.Errorf("cassette: RedactJSONPaths: %q has an empty segment", p)
		}
		r.paths = append(r.paths, parts)
	}
	for i, re := range cfg.RedactPatterns {
		if re == nil {
			return r, fmt.Errorf("cassette: RedactPatterns[%d] is nil", i)
		}
	}
	return r, nil
}

// withSent returns r extended to strip the secrets req itself carries — the values of its
// redacted headers (and the credential after a scheme such as "Bearer "), of its redacted query
// parameters and its URL's password — wherever they appear in the exchange: a server that
// echoes a key back (a 401 quoting it, a debug header) must not put it in the file.
func (r redactor) withSent(req *http.Request) redactor {
	var sent []string
	add := func(v string) {
		if v = strings.TrimSpace(v); len(v) >= minSent && v != Redacted && !slices.Contains(sent, v) {
			sent = append(sent, v)
		}
	}
	for k, vs := range req.Header {
		if !r.hdr[http.CanonicalHeaderKey(k)] {
			continue
		}
		for _, v := range vs {
			add(v)
			if _, cred, ok := strings.Cut(strings.TrimSpace(v), " "); ok {
				add(cred)
			}
		}
	}
	if req.URL != nil {
		for k, vs := range req.URL.Query() {
			if r.query[strings.ToLower(k)] {
				for _, v := range vs {
					add(v)
				}
			}
		}
		if p, ok := req.URL.User.Password(); ok {
			add(p)
		}
	}
	if len(sent) == 0 {
		return r
	}
	// Longest first: "Bearer sk-…" goes whole before "sk-…" alone.
	slices.SortStableFunc(sent, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	r.sent = sent
	return r
}

func (r *redactor) text(s string) string {
	s = r.unsent(s)
	for _, re := range r.patterns {
		s = re.ReplaceAllString(s, Redacted)
	}
	return s
}

// sortedQuery is a recorded URL with its query parameters sorted, as url gives a request's, so
// that a URL edited by hand matches whatever order its parameters were written in; a URL that
// does not parse is left as it is.
func sortedQuery(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.RawQuery == "" {
		return s
	}
	u.RawQuery = sortQuery(u.RawQuery, nil)
	return u.String()
}

// sortQuery is a raw query with its parameters sorted, those secret says are secrets valued
// Redacted: re-encoded by key, as url.Values encodes, when the query parses; otherwise (a pair
// with a ";", a bad escape, which url.ParseQuery drops) pair by pair as written, so that no
// parameter is lost from the file nor from what a request is matched on.
func sortQuery(raw string, secret func(key string) bool) string {
	if q, err := url.ParseQuery(raw); err == nil {
		for k := range q {
			if secret != nil && secret(k) {
				q[k] = []string{Redacted}
			}
		}
		return q.Encode() // sorted by key: a stable match whatever order the caller built
	}
	pairs := strings.Split(raw, "&")
	for i, p := range pairs {
		k, _, _ := strings.Cut(p, "=")
		if uk, err := url.QueryUnescape(k); err == nil {
			k = uk
		}
		if secret != nil && secret(k) {
			pairs[i] = url.QueryEscape(k) + "=" + Redacted
		}
	}
	slices.Sort(pairs)
	return strings.Join(pairs, "&")
}

func (r *redactor) url(u *url.URL) string {
	v := *u
	v.User = nil
	if v.RawQuery != "" {
		v.RawQuery = sortQuery(v.RawQuery, func(k string) bool { return r.query[strings.ToLower(k)] })
	}
	return r.text(v.String())
}

func (r *redactor) headers(h http.Header) Headers {
	out := make(Headers, len(h))
	for k, vs := range h {
		ck := http.CanonicalHeaderKey(k)
		switch {
		case r.hdr[ck]:
			out[ck] = []string{Redacted}
		case ck == "Content-Length" || ck == "Date":
			// recomputed or irrelevant on replay; dropping Date keeps re-recorded files stable
		default:
			vv := make([]string, len(vs))
			for i, v := range vs {
				vv[i] = r.text(v)
			}
			out[ck] = vv
		}
	}
	return out
}

// body classifies and redacts a body: JSON (kept as JSON, readable in the file), a stream
// (text/event-stream, cut after each blank line so each event is one entry), text, or binary.
func (r *redactor) body(ctype string, b []byte, stream bool) Body {
	if len(b) == 0 {
		return Body{}
	}
	if stream && utf8.Valid(b) {
		return Body{Stream: splitEvents(r.text(string(b)))}
	}
	if t := bytes.TrimSpace(b); len(t) > 0 && (t[0] == '{' || t[0] == '[') && json.Valid(t) {
		if len(r.paths) == 0 && len(r.patterns) == 0 && !r.quotesSent(t) {
			return Body{JSON: json.RawMessage(t)}
		}
		var v any
		d := json.NewDecoder(bytes.NewReader(t))
		d.UseNumber()
		if d.Decode(&v) == nil {
			for _, p := range r.paths {
				v = redactPath(v, p)
			}
			v = r.strings(v)
			if out, err := marshalNoEscape(v); err == nil {
				return Body{JSON: out}
			}
		}
	}
	if utf8.Valid(b) {
		return Body{Text: r.text(string(b))}
	}
	// Not text, but a server may still echo a key in it (a 401 in Latin-1): the secrets go,
	// as from text, before the bytes are encoded.
	for _, v := range r.sent {
		b = bytes.ReplaceAll(b, []byte(v), []byte(Redacted))
	}
	for _, re := range r.patterns {
		b = re.ReplaceAll(b, []byte(Redacted))
	}
	return Body{Base64: base64.StdEncoding.EncodeToString(b)}
}

// quotesSent reports whether b holds a secret of the request.
func (r *redactor) quotesSent(b []byte) bool {
	for _, v := range r.sent {
		if bytes.Contains(b, []byte(v)) {
			return true
		}
	}
	return false
}

// splitEvents cuts a stream after each blank line, keeping the line ends, which the event
// stream format allows as LF, CRLF or CR.
func splitEvents(s string) []string {
	var out []string
	for s != "" {
		end := -1
		for _, sep := range []string{"\r\n\r\n", "\n\n", "\r\r"} {
			if i := strings.Index(s, sep); i >= 0 && (end < 0 || i+len(sep) < end) {
				end = i + len(sep)
			}
		}
		if end < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:end])
		s = s[end:]
	}
	return out
}

func redactPath(v any, path []string) any {
	if len(path) == 0 {
		return Redacted
	}
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if path[0] == "*" || path[0] == k {
				x[k] = redactPath(e, path[1:])
			}
		}
	case []any:
		for i, e := range x {
			if path[0] == "*" || path[0] == strconv.Itoa(i) {
				x[i] = redactPath(e, path[1:])
			}
		}
	}
	return v
}

func (r *redactor) strings(v any) any {
	switch x := v.(type) {
	case string:
		return r.text(x)
	case map[string]any:
		// A member's name may echo a secret of the request too (an error map keyed by the
		// key sent): names lose the request's secrets, as values do; patterns apply to values.
		renamed := false
		for k := range x {
			renamed = renamed || r.unsent(k) != k
		}
		if renamed {
			y := make(map[string]any, len(x))
			for k, e := range x {
				y[r.unsent(k)] = r.strings(e)
			}
			return y
		}
		for k, e := range x {
			x[k] = r.strings(e)
		}
	case []any:
		for i, e := range x {
			x[i] = r.strings(e)
		}
	}
	return v
}

// unsent is s with the request's secrets replaced.
func (r *redactor) unsent(s string) string {
	for _, v := range r.sent {
		s = strings.ReplaceAll(s, v, Redacted)
	}
	return s
}

// key is what replay matches on: the method, the redacted URL with its query sorted, and the
// body normalized — JSON re-encoded with sorted keys and no insignificant space, anything else
// byte for byte.
func (r *redactor) key(method, u string, body []byte) string {
	return method + " " + u + "\n" + string(normalize(body))
}

func normalize(b []byte) []byte {
	t := bytes.TrimSpace(b)
	if len(t) == 0 || (t[0] != '{' && t[0] != '[') {
		return b
	}
	var v any
	d := json.NewDecoder(bytes.NewReader(t))
	d.UseNumber()
	if d.Decode(&v) != nil || d.More() {
		return b
	}
	out, err := marshalNoEscape(v)
	if err != nil {
		return b
	}
	return out
}

func marshalNoEscape(v any) ([]byte, error) {
	var buf bytes.Buffer
	e := json.NewEncoder(&buf)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
