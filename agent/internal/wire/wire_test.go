package wire_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/agent/internal/wire"
)

func TestTraceparent(t *testing.T) {
	w3c := "4bf92f3577b34da6a3ce929d0e0e4736"
	for _, tc := range []struct {
		name, trace, dispatch string
		wantTrace             string // "" means hashed: 32 hex digits, not the input
	}{
		{"a W3C trace id is kept", w3c, "disp_1", w3c},
		{"troupe's trace id is hashed", "trace_abc", "disp_1", ""},
		{"all zeros is invalid, so hashed", strings.Repeat("0", 32), "disp_1", ""},
		{"upper case is not W3C, so hashed", strings.ToUpper(w3c), "disp_1", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tp := wire.Traceparent(tc.trace, tc.dispatch)
			parts := strings.Split(tp, "-")
			if len(parts) != 4 || parts[0] != "00" || len(parts[1]) != 32 || len(parts[2]) != 16 || parts[3] != "01" {
				t.Fatalf("%q is not a traceparent", tp)
			}
			if tc.wantTrace != "" && parts[1] != tc.wantTrace || tc.wantTrace == "" && parts[1] == tc.trace {
				t.Errorf("trace id part %q for %q", parts[1], tc.trace)
			}
			if tp != wire.Traceparent(tc.trace, tc.dispatch) {
				t.Error("not deterministic")
			}
			if wire.Traceparent(tc.trace, "disp_2")[36:52] == parts[2] {
				t.Error("two dispatches share a span id")
			}
		})
	}
}

func TestTail(t *testing.T) {
	for _, tc := range []struct {
		name   string
		max    int
		writes []string
		want   string
	}{
		{"fits", 10, []string{"ab", "cd"}, "abcd"},
		{"keeps the end", 4, []string{"abc", "def"}, "…cdef"},
		{"one big write", 3, []string{"abcdefgh"}, "…fgh"},
		{"cut inside a rune", 4, []string{"xé", "abc"}, "…abc"},
		{"nothing kept", 0, []string{"abc"}, "…"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tl := wire.Tail{Max: tc.max}
			for _, w := range tc.writes {
				tl.Write([]byte(w))
			}
			if got := tl.String(); got != tc.want {
				t.Errorf("%q, want %q", got, tc.want)
			}
		})
	}
}

func TestTailScrub(t *testing.T) {
	long := wire.NewSecrets("tok-12345678")
	short := wire.NewSecrets("tok1")
	for _, tc := range []struct {
		name   string
		scrub  func(kept string, cut bool) string
		max    int
		writes []string
		want   string
	}{
		{"a secret the cut splits is dropped", long.Tail, 12, []string{"error tok-1234", "5678 x"}, "… x"},
		{"a whole secret is redacted", long.Tail, 20, []string{"tok-12345678 x"}, "[redacted] x"},
		// "[redacted]" is longer than "tok1": the result still keeps at most Max bytes.
		{"at most Max bytes", short.Tail, 8, []string{"a tok1 b"}, "…acted] b"},
		{"without Scrub, as it was", nil, 12, []string{"error tok-1234", "5678 x"}, "…k-12345678 x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tl := wire.Tail{Max: tc.max, Scrub: tc.scrub}
			for _, w := range tc.writes {
				tl.Write([]byte(w))
			}
			got := tl.String()
			if got != tc.want {
				t.Errorf("%q, want %q", got, tc.want)
			}
			if len(strings.TrimPrefix(got, "…")) > tc.max {
				t.Errorf("%q is over %d bytes", got, tc.max)
			}
		})
	}
}

func TestDecodeResult(t *testing.T) {
	d := troupe.NewDispatch()
	d.DispatchID, d.TargetAgent, d.SessionID, d.QueryID = troupe.NewDispatchID(1), "a", "s", "q"
	good := `{"dispatch_id":"` + d.DispatchID + `","session_id":"s","query_id":"q","agent_name":"a","status":"completed","agent_result":{"x":1},"errors":[],"warnings":[],"execution_time_ms":1,"started_at":"2026-01-01T00:00:00Z","completed_at":"2026-01-01T00:00:01Z"}`
	for _, tc := range []struct {
		name, data string
		want       []string // problems; nil means valid
	}{
		{"valid", good, nil},
		{"another dispatch", strings.Replace(good, d.DispatchID, "disp_0000000000000000", 1), []string{`dispatch_id "disp_0000000000000000" answers another dispatch`}},
		{"another agent", strings.Replace(good, `"agent_name":"a"`, `"agent_name":"b"`, 1), []string{`agent_name "b" is not the dispatch's target "a"`}},
		// Engine-owned fields are filled in; what the agent owes stays required.
		{"only what the agent knows", `{"agent_result":{"x":1}}`, nil},
		{"no agent_result", `{"status":"completed"}`, []string{"completed status requires agent_result"}},
		{"a field it sends is checked", `{"agent_result":{"x":1},"session_id":7}`, []string{"session_id"}},
		{"not JSON", `nope`, []string{"nope"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := wire.DecodeResult("pkg", []byte(tc.data), d, nil, map[string]any{"k": "v"}, nil)
			if tc.want == nil {
				if err != nil || r.AgentResult["x"] != 1.0 || r.DispatchID != d.DispatchID || r.AgentName != "a" || r.Status != troupe.StatusCompleted {
					t.Fatalf("%+v, %v", r, err)
				}
				return
			}
			var ae *troupe.AgentError
			if r != nil || !errors.As(err, &ae) || ae.Code != troupe.CodeInvalidOutput || ae.Recoverable {
				t.Fatalf("%+v, %v", r, err)
			}
			all := strings.Join(ae.Details["errors"].([]string), "\n") + ae.Details["output"].(string)
			for _, w := range tc.want {
				if !strings.Contains(all, w) {
					t.Errorf("details %v lack %q", ae.Details, w)
				}
			}
			if d := cmp.Diff("v", ae.Details["k"]); d != "" || !strings.HasPrefix(err.Error(), "troupe: agent error INVALID_OUTPUT: pkg: invalid result") {
				t.Errorf("extra details or message wrong: %v %s", err, d)
			}
		})
	}
}

// The message of an invalid result names the field at fault without repeating that it is the
// result's, and output that is not JSON at all is quoted from its start, cut at 64 bytes.
func TestDecodeResultMessage(t *testing.T) {
	d := troupe.NewDispatch()
	d.DispatchID, d.TargetAgent = troupe.NewDispatchID(1), "a"
	for _, tc := range []struct{ name, data, want string }{
		{"a field", `{"agent_result":{"x":1},"session_id":7}`, `pkg: invalid result: field "session_id": expected a string, got JSON number`},
		{"not an object", `[1,2,3]`, `pkg: invalid result: expected an object, got JSON array`},
		{"a number as a string", `{"agent_result":{"x":1},"confidence":"0.5"}`, `pkg: invalid result: field "confidence": expected a number, got JSON string`},
		{"not JSON", "Traceback (most recent call last):\n  File x", `pkg: invalid result: malformed JSON: invalid character 'T' looking for beginning of value, output begins "Traceback (most recent call last):\n  File x"`},
		{"not JSON, long", strings.Repeat("é", 40), `output begins "` + strings.Repeat("é", 32) + `"…`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := wire.DecodeResult("pkg", []byte(tc.data), d, nil, nil, nil)
			info := troupe.ErrorInfoOf(err)
			if !strings.Contains(info.Message, tc.want) || strings.Contains(info.Message, "troupe:") {
				t.Errorf("message %q, want it to hold %q and no \"troupe:\"", info.Message, tc.want)
			}
		})
	}
}

func TestRecoverable(t *testing.T) {
	got := map[int]bool{}
	for _, status := range []int{400, 401, 404, 408, 409, 429, 500, 501, 502, 503, 504, 505, 507, 599} {
		got[status] = wire.Recoverable(status)
	}
	want := map[int]bool{400: false, 401: false, 404: false, 408: true, 409: false, 429: true,
		500: true, 501: false, 502: true, 503: true, 504: true, 505: false, 507: true, 599: true}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Duration
	}{
		{"", 0},
		{"7", 7 * time.Second},
		{" 120 ", 2 * time.Minute},
		{"0", 0},
		{"-5", 0},
		{"86400", 24 * time.Hour},
		{"86401", 24 * time.Hour},
		{"9999999999", 24 * time.Hour},
		{"99999999999999999999", 0}, // not an int64: not delay-seconds
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0},
		{"Sunday, 22-Nov-26 12:01:00 GMT", time.Minute}, // RFC 850, which HTTP dates also allow
		{"soon", 0},
		{"1.5", 0},
	} {
		if got := wire.RetryAfter(tc.in, now); got != tc.want {
			t.Errorf("RetryAfter(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func FuzzRetryAfter(f *testing.F) {
	for _, s := range []string{"7", "Sun, 22 Nov 2026 12:01:30 GMT", "-1", "x", "86400"} {
		f.Add(s)
	}
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, v string) {
		if d := wire.RetryAfter(v, now); d < 0 || d > 24*time.Hour {
			t.Errorf("RetryAfter(%q) = %v, outside [0, 24h]", v, d)
		}
	})
}
