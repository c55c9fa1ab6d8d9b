package cassette

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
)

// Version is the cassette file format's version.
const Version = 1

// File is a cassette file: JSON, indented, one interaction per exchange. Interactions are
// sorted by what replay matches on (method, URL, normalized body) and, among equal requests, in
// the order they were recorded; header names are canonical and sorted; secrets read Redacted.
// Edit one by hand freely: Parse checks it.
type File struct {
	Version      int            `json:"version"`
	Interactions []*Interaction `json:"interactions"`
}

// Interaction is one recorded HTTP exchange.
type Interaction struct {
	Request  Request  `json:"request"`
	Response Response `json:"response"`
}

// Request is the recorded request.
type Request struct {
	Method  string  `json:"method"`
	URL     string  `json:"url"`
	Headers Headers `json:"headers,omitempty"`
	Body
}

// Response is the recorded response. Truncated says the body was cut at the cassette's
// MaxBodyBytes.
type Response struct {
	Status    int     `json:"status"`
	Headers   Headers `json:"headers,omitempty"`
	Truncated bool    `json:"truncated,omitempty"`
	Body
}

// Headers are recorded headers, names canonical. In the file a header with one value is a
// string, one with several a list of strings.
type Headers map[string][]string

// MarshalJSON writes a single value as a string.
func (h Headers) MarshalJSON() ([]byte, error) {
	m := make(map[string]any, len(h))
	for k, vs := range h {
		if len(vs) == 1 {
			m[k] = vs[0]
		} else {
			m[k] = vs
		}
	}
	return marshalNoEscape(m) // a Link header's <…> stays readable
}

// UnmarshalJSON reads a string or a list of strings per header.
func (h *Headers) UnmarshalJSON(b []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	out := make(Headers, len(m))
	for k, raw := range m {
		var one string
		if err := json.Unmarshal(raw, &one); err == nil {
			out[k] = []string{one}
			continue
		}
		var many []string
		if err := json.Unmarshal(raw, &many); err != nil {
			return fmt.Errorf("header %q: want a string or a list of strings", k)
		}
		out[k] = many
	}
	*h = out
	return nil
}

// Body is a recorded body in the most readable form that keeps it: JSON as JSON, a
// text/event-stream as its events (each ending with its blank line, so joined they are the
// bytes the server sent), other UTF-8 as text, anything else as base64. At most one is set;
// none is an empty body. A JSON body is replayed compacted.
type Body struct {
	JSON   json.RawMessage `json:"body_json,omitempty"`
	Text   string          `json:"body,omitempty"`
	Base64 string          `json:"body_base64,omitempty"`
	Stream []string        `json:"stream,omitempty"`
}

func (b Body) bytes() []byte {
	switch {
	case len(b.JSON) > 0:
		var buf bytes.Buffer
		if json.Compact(&buf, b.JSON) == nil {
			return buf.Bytes()
		}
		return b.JSON
	case b.Text != "":
		return []byte(b.Text)
	case b.Base64 != "":
		out, _ := base64.StdEncoding.DecodeString(b.Base64) // Parse checked it
		return out
	case len(b.Stream) > 0:
		return []byte(strings.Join(b.Stream, ""))
	}
	return nil
}

// Marshal encodes f as a cassette file.
func (f *File) Marshal() ([]byte, error) {
	var buf bytes.Buffer
	e := json.NewEncoder(&buf)
	e.SetEscapeHTML(false)
	e.SetIndent("", "  ")
	if err := e.Encode(f); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Parse decodes and checks a cassette file; an error names the interaction and field at fault.
func Parse(data []byte) (File, error) {
	var f File
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(&f); err != nil {
		return File{}, fmt.Errorf("parse: %w", err)
	}
	if d.More() {
		return File{}, fmt.Errorf("parse: data after the cassette")
	}
	if f.Version != Version {
		return File{}, fmt.Errorf("parse: version %d, want %d", f.Version, Version)
	}
	for i, in := range f.Interactions {
		at := fmt.Sprintf("interactions[%d]", i)
		if in == nil {
			return File{}, fmt.Errorf("parse: %s: null", at)
		}
		if in.Request.Method == "" || strings.ContainsAny(in.Request.Method, " \t\r\n") {
			return File{}, fmt.Errorf("parse: %s.request.method: %q is not an HTTP method", at, in.Request.Method)
		}
		if u, err := url.Parse(in.Request.URL); err != nil || u.Scheme == "" || u.Host == "" {
			return File{}, fmt.Errorf("parse: %s.request.url: %q is not an absolute URL", at, in.Request.URL)
		}
		if s := in.Response.Status; s < 100 || s > 999 {
			return File{}, fmt.Errorf("parse: %s.response.status: %d is not an HTTP status", at, s)
		}
		if err := in.Request.Body.check(); err != nil {
			return File{}, fmt.Errorf("parse: %s.request: %w", at, err)
		}
		if len(in.Request.Stream) > 0 {
			return File{}, fmt.Errorf("parse: %s.request.stream: only a response can be a stream", at)
		}
		if err := in.Response.Body.check(); err != nil {
			return File{}, fmt.Errorf("parse: %s.response: %w", at, err)
		}
	}
	return f, nil
}

func (b Body) check() error {
	n := 0
	for _, set := range []bool{len(b.JSON) > 0, b.Text != "", b.Base64 != "", len(b.Stream) > 0} {
		if set {
			n++
		}
	}
	if n > 1 {
		return fmt.Errorf("more than one of body_json, body, body_base64 and stream")
	}
	if b.Base64 != "" {
		if _, err := base64.StdEncoding.DecodeString(b.Base64); err != nil {
			return fmt.Errorf("body_base64: %w", err)
		}
	}
	return nil
}
