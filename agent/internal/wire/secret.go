package wire

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/troupehq/troupe"
)

// MinSecret is the shortest value Secrets scrubs; shorter ones would blank unrelated text.
const MinSecret = 4

// Redacted replaces every spelling of a secret.
const Redacted = "[redacted]"

// Secrets is every spelling of some secrets — an API key, a bearer token, a subprocess's
// environment values — that a service or a program may echo back (a 401 quoting the token, a
// failing CLI printing it) and that must not reach a run's events, results or errors. A nil
// or zero Secrets scrubs nothing. It is immutable and safe for concurrent use.
type Secrets struct {
	spellings []string
}

// NewSecrets returns the secrets values, ignoring those shorter than MinSecret. A value of
// several lines (a PEM key, a credentials file) is also a secret line by line: what reads a
// program's output line by line sees no more than one at a time.
func NewSecrets(values ...string) *Secrets {
	var vs []string
	for _, v := range values {
		if len(v) < MinSecret {
			continue
		}
		vs = append(vs, v)
		if strings.ContainsAny(v, "\r\n") {
			for _, line := range strings.FieldsFunc(v, func(r rune) bool { return r == '\n' || r == '\r' }) {
				if len(line) >= MinSecret {
					vs = append(vs, line)
				}
			}
		}
	}
	return &Secrets{spellings: spellings(vs)}
}

// Empty reports whether s scrubs nothing.
func (s *Secrets) Empty() bool { return s == nil || len(s.spellings) == 0 }

// String replaces every spelling of every secret in text by Redacted.
func (s *Secrets) String(text string) string {
	if s.Empty() {
		return text
	}
	for _, v := range s.spellings {
		text = strings.ReplaceAll(text, v, Redacted)
	}
	return text
}

// Head scrubs text, the start of a longer text when cut is true: then an end that may be the
// start of a secret the cut split (a proper prefix of a spelling) is dropped first, since
// scrubbing cannot recognise it.
func (s *Secrets) Head(text string, cut bool) string {
	if s.Empty() {
		return text
	}
	if cut {
		text = text[:len(text)-s.partial(text, strings.HasSuffix, func(v string, n int) string { return v[:n] })]
	}
	return s.String(text)
}

// Tail scrubs text, the end of a longer text when cut is true: then a start that may be the
// end of a secret the cut split (a proper suffix of a spelling) is dropped first.
func (s *Secrets) Tail(text string, cut bool) string {
	if s.Empty() {
		return text
	}
	if cut {
		text = text[s.partial(text, strings.HasPrefix, func(v string, n int) string { return v[len(v)-n:] }):]
	}
	return s.String(text)
}

// partial is the length of the longest piece of a spelling (piece(v, n): n bytes of v, fewer
// than all) that text has at the edge has checks (strings.HasSuffix or strings.HasPrefix).
func (s *Secrets) partial(text string, has func(text, piece string) bool, piece func(v string, n int) string) int {
	longest := 0
	for _, v := range s.spellings {
		for n := min(len(v)-1, len(text)); n > longest; n-- {
			if has(text, piece(v, n)) {
				longest = n
				break
			}
		}
	}
	return longest
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

// Error returns err with the secrets scrubbed from all it says. The *troupe.AgentError in its
// chain is copied — the original may be shared — with its message, its details (strings, in
// lists and maps too) and its cause scrubbed; errors.As still finds the copy. A cause whose
// text holds a secret becomes a plain error of the scrubbed text. output is what the agent
// sent back, when the error quotes it under "output" (wire.DecodeResult): that excerpt is
// quoted again from the scrubbed output, since scrubbing the excerpt would miss a secret its
// cut splits. An error that is no AgentError and holds a secret becomes a plain error of the
// scrubbed text.
func (s *Secrets) Error(err error, output []byte) error {
	if s.Empty() || err == nil {
		return err
	}
	var ae *troupe.AgentError
	if !errors.As(err, &ae) {
		if msg := err.Error(); s.String(msg) != msg {
			return errors.New(s.String(msg))
		}
		return err
	}
	cp := *ae
	cp.Message = s.String(cp.Message)
	if cp.Details != nil {
		cp.Details = s.value(cp.Details).(map[string]any)
		if _, ok := cp.Details["output"]; ok && output != nil {
			cp.Details["output"] = Head([]byte(s.String(string(output))), OutputExcerpt)
		}
	}
	if cp.Cause != nil {
		if msg := cp.Cause.Error(); s.String(msg) != msg {
			cp.Cause = errors.New(s.String(msg))
		}
	}
	if err == error(ae) {
		return &cp
	}
	return &wrapped{msg: s.String(err.Error()), ae: &cp}
}

// value returns a scrubbed copy of a detail value: strings, and the strings in lists and maps.
func (s *Secrets) value(v any) any {
	switch x := v.(type) {
	case string:
		return s.String(x)
	case []string:
		out := make([]string, len(x))
		for i, e := range x {
			out[i] = s.String(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = s.value(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = s.value(e)
		}
		return out
	}
	return v
}

// wrapped is an error wrapping an AgentError, scrubbed: its text is the scrubbed text of the
// whole chain, and it unwraps to the scrubbed AgentError, not to the rest of the chain.
type wrapped struct {
	msg string
	ae  *troupe.AgentError
}

func (w *wrapped) Error() string { return w.msg }
func (w *wrapped) Unwrap() error { return w.ae }

// Result scrubs the secrets from res, a result an agent decoded from its program's or
// service's answer, in place: what the run records of it besides a valid answer — its errors
// (message, fallback action, details), warnings and analysis summary, and the agent_result of
// a result that did not complete (a failure quoting a connection string). A completed
// result's agent_result is the answer, passed on unchanged.
func (s *Secrets) Result(res *troupe.Result) {
	if s.Empty() || res == nil {
		return
	}
	for i := range res.Errors {
		e := &res.Errors[i]
		e.Message, e.FallbackAction = s.String(e.Message), s.String(e.FallbackAction)
		if e.Details != nil {
			e.Details = s.value(e.Details).(map[string]any)
		}
		if e.Extra != nil {
			e.Extra = s.value(e.Extra).(map[string]any)
		}
	}
	for i, w := range res.Warnings {
		res.Warnings[i] = s.String(w)
	}
	if res.AnalysisSummary != nil {
		res.AnalysisSummary = troupe.Ptr(s.String(*res.AnalysisSummary))
	}
	if res.Status != "" && res.Status != troupe.StatusCompleted && res.AgentResult != nil {
		res.AgentResult = s.value(res.AgentResult).(map[string]any)
	}
}

// EnvSecrets returns the secrets of a subprocess's environment, KEY=value entries: every value,
// whatever its key (a rule on names would miss DATABASE_URL=postgres://app:pw@db).
func EnvSecrets(env []string) *Secrets {
	values := make([]string, 0, len(env))
	for _, e := range env {
		_, v, _ := strings.Cut(e, "=")
		values = append(values, v)
	}
	return NewSecrets(values...)
}

// CommandName names a command in messages: its words, secrets scrubbed (before the cut, which
// would hide a secret's end), cut after limit characters (a "sh -c" script can be a page long).
// A long name first loses its program's directory, shown as "…/", so that the program's own name
// survives a deep install path (node_modules/.bin/…) and the cut falls on the arguments.
func CommandName(command []string, secrets *Secrets, limit int) string {
	name := secrets.String(strings.Join(command, " "))
	if utf8.RuneCountInString(name) <= limit {
		return name
	}
	if len(command) > 0 {
		if i := strings.LastIndexByte(command[0], '/'); i >= 0 && i < len(command[0])-1 {
			short := append([]string{"…/" + command[0][i+1:]}, command[1:]...)
			name = secrets.String(strings.Join(short, " "))
			if utf8.RuneCountInString(name) <= limit {
				return name
			}
		}
	}
	r := []rune(name)
	return strings.TrimRight(string(r[:limit]), " ") + "…"
}
