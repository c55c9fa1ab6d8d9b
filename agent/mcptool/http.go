package mcptool

import (
	"context"
	"io"
	"math"
	"mime"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// envelope is what a response may hold besides twice a result: the JSON-RPC envelope, SSE
// framing, escaping.
const envelope = 64 << 10

// cutKey is the context key under which a call puts the context.CancelCauseFunc that a
// response cut off at the bound calls.
type cutKey struct{}

// httpTransport reaches cfg.URL with an http.Client whose responses are bounded: a JSON body in
// all, an SSE stream event by event (the standalone stream lasts as long as the session, so only
// its events are bounded). The go-sdk's own bound on SSE events stays, above ours, as a backstop.
func httpTransport(cfg Config) *mcp.StreamableClientTransport {
	limit := cfg.MaxResultBytes
	if limit == 0 {
		limit = DefaultMaxResultBytes
	}
	wire := int64(math.MaxInt64)
	if limit <= (math.MaxInt64-envelope)/2 {
		wire = 2*limit + envelope
	}
	client := http.Client{}
	if cfg.HTTPClient != nil {
		client = *cfg.HTTPClient
	}
	base := client.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	client.Transport = &boundedTransport{base: base, limit: limit, wire: wire}
	backstop := -1
	if wire <= math.MaxInt/2 {
		backstop = int(2 * wire)
	}
	return &mcp.StreamableClientTransport{Endpoint: cfg.URL, HTTPClient: &client, MaxEventSize: backstop}
}

// boundedTransport wraps each response body in a boundedBody.
type boundedTransport struct {
	base  http.RoundTripper
	limit int64 // Config.MaxResultBytes, for the error
	wire  int64 // the bound on a JSON body or an SSE event
}

func (t *boundedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	cut, _ := req.Context().Value(cutKey{}).(context.CancelCauseFunc)
	resp.Body = &boundedBody{ReadCloser: resp.Body, t: t, sse: mt == "text/event-stream", cut: cut}
	return resp, nil
}

// boundedBody fails a Read that takes the body (or, for an SSE stream, the current event) past
// the bound, and cancels the call that sent the request with a *ResultTooLargeError. Only the
// goroutine reading the body uses it.
type boundedBody struct {
	io.ReadCloser
	t        *boundedTransport
	sse      bool
	cut      context.CancelCauseFunc // the call's, or nil for the standalone stream
	n        int64                   // bytes of the body, or of the current event
	read     int64                   // bytes of the body
	eol, cr  bool                    // the last byte ended a line; it was '\r'
	exceeded error
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.exceeded != nil {
		return 0, b.exceeded
	}
	n, err := b.ReadCloser.Read(p)
	b.read += int64(n)
	if !b.sse {
		b.n += int64(n)
	} else {
		for _, c := range p[:n] {
			switch {
			case c == '\n' && b.cr:
				b.cr = false // the '\n' of a "\r\n"
			case c == '\n' || c == '\r':
				if b.eol {
					b.n = 0 // an empty line ends an event
				}
				b.eol, b.cr = true, c == '\r'
			default:
				b.eol, b.cr = false, false
				b.n++
			}
		}
	}
	if b.n > b.t.wire {
		// The go-sdk fails the session when a JSON body cannot be read, not when an SSE
		// stream breaks off.
		e := &ResultTooLargeError{Read: b.read, Limit: b.t.limit, broke: !b.sse}
		if b.cut != nil {
			b.cut(e)
		}
		b.exceeded = e
		return 0, e
	}
	return n, err
}
