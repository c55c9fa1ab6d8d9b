package httpagent_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/agent/httpagent"
	"github.com/troupehq/troupe/agent/internal/wire"
	"github.com/troupehq/troupe/engine"
	"github.com/troupehq/troupe/troupetest"
)

// An HTTP agent in a real run: a 503 with Retry-After is recorded with its details and retried
// under the retry policy, the retry carries the new dispatch's idempotency key, and every
// request carries the run's trace.
func TestHTTPAgentInARun(t *testing.T) {
	var calls atomic.Int64
	keys := make(chan [3]string, 4)
	ok := counter(t, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		keys <- [3]string{r.Header.Get("Idempotency-Key"), r.Header.Get("X-Troupe-Trace-Id"), r.Header.Get("Traceparent")}
		if calls.Add(1) == 1 {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "warming up", http.StatusServiceUnavailable)
			return
		}
		ok(w, r)
	}))
	defer srv.Close()
	reg := troupe.NewRegistry()
	reg.MustAdd("counter", newAgent(t, httpagent.Config{URL: srv.URL}))
	eng, err := engine.New(engine.Config{Registry: reg, Seed: 1, Policy: troupe.ErrorPolicy{OnError: troupe.Retry, Retry: troupe.RetryPolicy{MaxAttempts: 2}}})
	if err != nil {
		t.Fatal(err)
	}
	evs, err := troupetest.Collect(eng.Run(t.Context(), troupe.Request{Query: "count these four words"}))
	if err != nil {
		t.Fatal(err)
	}
	troupetest.CheckFinishedLog(t, evs)
	failed := troupetest.Find(evs, troupe.KindDispatchFailed, "counter")
	done := troupetest.Find(evs, troupe.KindDispatchCompleted, "counter")
	if len(failed) != 1 || len(done) != 1 {
		t.Fatalf("%d failed, %d completed dispatches; want 1 and 1", len(failed), len(done))
	}
	e := failed[0].Data.(*troupe.Result).Errors[0]
	if !e.Recoverable || e.Details["http_status"] != 503 || e.Details["retry_after_seconds"] != 1.0 || !strings.Contains(e.Message, "warming up") {
		t.Errorf("recorded error %+v", e)
	}
	// The engine waits as long as the service asked, not its own shorter backoff.
	if rs := troupetest.Find(evs, troupe.KindRetryScheduled, "counter"); len(rs) != 1 || rs[0].Data.(*troupe.RetryScheduled).Backoff != time.Second {
		t.Errorf("retry_scheduled %+v; want one, after the service's Retry-After of 1s", rs)
	}
	if got := done[0].Data.(*troupe.Result).AgentResult["words"]; got != 4.0 {
		t.Errorf("words = %v", got)
	}
	first, second := <-keys, <-keys
	trace := evs[0].Context.TraceID()
	if first[0] != failed[0].DispatchID || second[0] != done[0].DispatchID || first[1] != trace || second[1] != trace {
		t.Errorf("idempotency keys and traces %v %v; want %s, %s and %s", first, second, failed[0].DispatchID, done[0].DispatchID, trace)
	}
	// traceparent: the run's W3C trace id in both requests, each dispatch a parent span of its own.
	if want := wire.Traceparent(trace, failed[0].DispatchID); first[2] != want {
		t.Errorf("first traceparent %q, want %q", first[2], want)
	}
	if want := wire.Traceparent(trace, done[0].DispatchID); second[2] != want {
		t.Errorf("second traceparent %q, want %q", second[2], want)
	}
	if first[2][3:35] != second[2][3:35] || first[2][36:52] == second[2][36:52] {
		t.Errorf("traceparents %q and %q: want one trace id and two span ids", first[2], second[2])
	}
}
