// Package wire holds what troupe's transport adapters (execagent, httpagent, llmagent) share
// about talking to an agent out of process: checking the Result it sends back, quoting the
// start or end of what it printed, deriving a W3C traceparent from a run's trace id, and
// scrubbing the secrets it was given from all that, in every spelling it may echo them in.
package wire

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/troupehq/troupe"
)

// DecodeResult decodes and validates an agent's JSON response to d: every rule of
// troupe.DecodeResult, plus that it answers d (same dispatch_id and agent_name). Invalid
// output is an *troupe.AgentError with code INVALID_OUTPUT, not recoverable — the same agent
// given the same dispatch is unlikely to do better — whose message quotes the first problem,
// whose cause is troupe.ErrInvalidResult, and whose details list every problem under "errors"
// and carry extra (the adapter's own context, e.g. a stderr tail).
//
// Fields the engine owns anyway — identification, timing and a "completed" status — may be
// left out: they are filled in from d, so an agent in another language need print no more
// than {"agent_result": {...}}. Fields it does send are checked as sent.
//
// What the error quotes of the output is scrubbed of secrets before it is cut, so a cut that
// falls inside a secret cannot keep its start.
func DecodeResult(pkg string, data []byte, d *troupe.Dispatch, agents troupe.AgentSet, extra map[string]any, secrets *Secrets) (*troupe.Result, error) {
	shown := data // what excerpts quote
	if !secrets.Empty() {
		shown = []byte(secrets.String(string(data)))
	}
	var problems []string
	if p := notUTF8(data); p != "" {
		// encoding/json would read each bad byte as U+FFFD: the agent's text, changed unseen.
		problems = append(problems, p)
	} else if p := errorReport(data, secrets); p != "" {
		// Filled in as "completed", it would fail for want of an agent_result, which says
		// nothing of what the agent reported.
		problems = append(problems, p)
	} else {
		r, err := troupe.DecodeResult(fillEngineFields(data, d, time.Now()), agents)
		var ves troupe.ValidationErrors
		var ve *troupe.ValidationError
		switch {
		case errors.As(err, &ves):
			for _, e := range ves {
				problems = append(problems, problem(e))
			}
		case errors.As(err, &ve):
			p := problem(ve)
			if ve.Field == "" {
				// Not JSON at all: what the agent printed says more than where the parser
				// gave up.
				p += ", output begins " + Head(shown, headInMessage)
			}
			problems = append(problems, p)
		case err != nil:
			problems = append(problems, err.Error())
		}
		if err == nil && r.DispatchID != d.DispatchID {
			problems = append(problems, fmt.Sprintf("dispatch_id %q answers another dispatch than %q", r.DispatchID, d.DispatchID))
		}
		if err == nil && d.TargetAgent != "" && r.AgentName != d.TargetAgent {
			problems = append(problems, fmt.Sprintf("agent_name %q is not the dispatch's target %q", r.AgentName, d.TargetAgent))
		}
		if len(problems) == 0 {
			return r, nil
		}
	}
	details := map[string]any{"errors": problems, "output": Head(shown, OutputExcerpt)}
	for k, v := range extra {
		details[k] = v
	}
	msg := fmt.Sprintf("%s: invalid result: %s", pkg, problems[0])
	if len(problems) > 1 {
		msg += fmt.Sprintf(" (and %d more problems)", len(problems)-1)
	}
	if len(data) == 0 {
		msg = pkg + ": invalid result: empty output"
	}
	// The message quotes the problems already; the cause is the sentinel alone, as in what
	// troupe.ErrorInfo.Err gives back, so that the error's text says each problem once.
	return nil, &troupe.AgentError{Code: troupe.CodeInvalidOutput, Message: msg, Cause: troupe.ErrInvalidResult, Details: details}
}

// OutputExcerpt is how many bytes of invalid output DecodeResult quotes under "output".
const OutputExcerpt = 512

// headInMessage is how many bytes of output that is not JSON the error's message quotes.
const headInMessage = 64

// problem is a validation problem as an invalid result's message lists it: the message says
// already that it is the result's.
func problem(e *troupe.ValidationError) string {
	if e.Field == "" {
		return e.Problem
	}
	return fmt.Sprintf("field %q: %s", e.Field, e.Problem)
}

// notUTF8 says where data stops being UTF-8, which JSON text exchanged between systems must
// be (RFC 8259, section 8.1); "" when it is.
func notUTF8(data []byte) string {
	if utf8.Valid(data) {
		return ""
	}
	i := 0
	for i < len(data) {
		r, n := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && n <= 1 {
			break
		}
		i += n
	}
	return fmt.Sprintf("the output is not UTF-8, as JSON must be: byte %d is 0x%02x", i, data[i])
}

// errorReport reads an agent's report of its own failure in place of a result — an object with
// an "error" member but neither status nor agent_result, as many services answer — and says
// what it reported; "" for anything else.
func errorReport(data []byte, secrets *Secrets) string {
	// Every answer passes here: one without the key is not decoded once more for it.
	if !bytes.Contains(data, []byte(`"error"`)) {
		return ""
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(data, &obj) != nil {
		return ""
	}
	raw, ok := obj["error"]
	_, hasStatus := obj["status"]
	_, hasResult := obj["agent_result"]
	if !ok || hasStatus || hasResult || string(raw) == "null" {
		return ""
	}
	text := strings.TrimSpace(string(raw))
	var s string
	var m struct {
		Message string `json:"message"`
	}
	switch {
	case json.Unmarshal(raw, &s) == nil:
		text = s
	case json.Unmarshal(raw, &m) == nil && m.Message != "":
		text = m.Message
	}
	text = secrets.String(text) // before the cut, which could keep a secret's start
	if r := []rune(text); len(r) > 200 {
		text = string(r[:199]) + "…"
	}
	return fmt.Sprintf("the agent answered an error, not a result: %q", text)
}

// fillEngineFields adds to a JSON object the engine-owned result fields it lacks, taken from
// d; anything that is not a JSON object is returned as it is, for DecodeResult to report.
func fillEngineFields(data []byte, d *troupe.Dispatch, now time.Time) []byte {
	var obj map[string]json.RawMessage
	if json.Unmarshal(data, &obj) != nil || obj == nil {
		return data
	}
	started := d.DispatchedAt
	if started.IsZero() || started.After(now) {
		started = now
	}
	defaults := map[string]any{
		"dispatch_id": d.DispatchID, "session_id": d.SessionID, "query_id": d.QueryID, "agent_name": d.TargetAgent,
		"status": troupe.StatusCompleted, "started_at": started, "completed_at": now,
		"execution_time_ms": now.Sub(started).Milliseconds(),
	}
	added := false
	for k, v := range defaults {
		if _, ok := obj[k]; ok {
			continue
		}
		b, err := json.Marshal(v)
		if err != nil {
			return data
		}
		obj[k], added = b, true
	}
	if !added {
		return data
	}
	out, err := json.Marshal(obj)
	if err != nil {
		return data
	}
	return out
}

// Head quotes at most n bytes of the start of b, cut on a rune boundary, with "…" when cut.
func Head(b []byte, n int) string {
	if len(b) <= n {
		return strconv.Quote(string(b))
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(b[cut]) {
		cut--
	}
	return strconv.Quote(string(b[:cut])) + "…"
}

// Tail keeps the last Max bytes written to it (for a process's stderr). The zero value keeps
// nothing; it is not safe for concurrent use.
type Tail struct {
	Max int
	// Scrub, when set, rewrites what is kept before String returns it (Secrets.Tail), told
	// whether earlier bytes were dropped; String keeps the last Max bytes of what it returns.
	Scrub func(kept string, cut bool) string
	buf   []byte
	seen  int64
}

// Write keeps the end of p; it never fails.
func (t *Tail) Write(p []byte) (int, error) {
	t.seen += int64(len(p))
	if len(p) >= t.Max {
		t.buf = append(t.buf[:0], p[len(p)-t.Max:]...)
		return len(p), nil
	}
	if over := len(t.buf) + len(p) - t.Max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	t.buf = append(t.buf, p...)
	return len(p), nil
}

// String returns what is kept, starting on a rune boundary, prefixed with "…" when earlier
// bytes were dropped.
func (t *Tail) String() string {
	b := t.buf
	cut := t.seen > int64(len(b))
	if t.Scrub != nil {
		b = []byte(t.Scrub(string(b), cut))
		if len(b) > t.Max {
			b, cut = b[len(b)-t.Max:], true
		}
	}
	for len(b) > 0 && !utf8.RuneStart(b[0]) {
		b, cut = b[1:], true
	}
	if cut {
		return "…" + string(b)
	}
	return string(b)
}

// Recoverable reports whether an HTTP error status is worth trying again later: 408, 429 and
// the 5xx, but for 501 Not Implemented and 505 HTTP Version Not Supported, which say the
// server cannot do this at all, so a retry would only spend the budget.
func Recoverable(status int) bool {
	switch status {
	case http.StatusRequestTimeout, http.StatusTooManyRequests:
		return true
	case http.StatusNotImplemented, http.StatusHTTPVersionNotSupported:
		return false
	}
	return status >= 500
}

// RetryAfter reads an HTTP Retry-After value, delay-seconds or an HTTP date (relative to now).
// Anything else or a time already past is 0; more than a day is a day.
func RetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	var d time.Duration
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		d = time.Duration(min(max(n, 0), maxRetryAfter)) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now).Round(time.Second)
	}
	return min(max(d, 0), maxRetryAfter*time.Second)
}

const maxRetryAfter = 24 * 60 * 60

// Traceparent returns a W3C traceparent header value (version 00, sampled) for a dispatch of
// the run with traceID. A trace id that already is 32 lower-case hex digits is used as is;
// any other (troupe's own "trace_…" ids) is hashed to 16 bytes, so every dispatch of one run
// shares one W3C trace id. The parent span id is derived from dispatchID the same way.
func Traceparent(traceID, dispatchID string) string {
	tid := traceID
	if !isHex(tid, 32) {
		h := sha256.Sum256([]byte(traceID))
		tid = hex.EncodeToString(h[:16])
	}
	h := sha256.Sum256([]byte("span:" + dispatchID))
	if h[0]|h[1]|h[2]|h[3]|h[4]|h[5]|h[6]|h[7] == 0 {
		h[7] = 1 // an all-zero span id is invalid
	}
	return "00-" + tid + "-" + hex.EncodeToString(h[:8]) + "-01"
}

func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	zero := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
		zero = zero && c == '0'
	}
	return !zero
}
