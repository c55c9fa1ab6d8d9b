// Package storetest is the conformance suite of troupe.Store: every implementation (the memory
// store now; the durable SQLite and PostgreSQL stores planned) runs the same tests, so the
// engine sees the same semantics on each.
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) troupe.Store { return memory.New() })
//	}
//
// The suite depends on nothing but troupe.Store's documented contract. Payloads are compared
// both as typed values (unexported fields ignored) and as JSON, since a durable store gives
// back what encoding/json made of them. Every time the suite writes is a whole number of
// microseconds, so a store with microsecond timestamps passes; and the suite reads a run that
// ended back before it ends another, so a store that keeps only the latest finished run passes.
//
// The suite reads Store's contract together with Event's ("Seq is dense from 1"): a run's first
// event must be Seq 1, any other is an ErrSeqConflict; and a rejected Append leaves every log
// as it was, so no log ever holds half of a batch, and makes no log: a run that only a rejected
// Append started is still unknown (ErrRunNotFound).
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/troupehq/troupe"
)

// Run runs the conformance suite as subtests of t. newStore must return a new, empty store
// each time it is called; it may register cleanups on the t it is given.
func Run(t *testing.T, newStore func(t *testing.T) troupe.Store) {
	t.Helper()
	tests := []struct {
		name string
		test func(t *testing.T, s troupe.Store)
	}{
		{"AppendAndRead", testAppendAndRead},
		{"RunIDs", testRunIDs},
		{"EventsAfter", testEventsAfter},
		{"UnknownRun", testUnknownRun},
		{"SeqConflict", testSeqConflict},
		{"FirstEventMustBeSeq1", testFirstEventSeq},
		{"BatchIsAtomic", testBatchAtomic},
		{"PayloadRoundTrip", testPayloadRoundTrip},
		{"NestedEvents", testNestedEvents},
		{"AppendKeepsNoSlice", testAppendKeepsNoSlice},
		{"LargePayload", testLargePayload},
		{"LongLog", testLongLog},
		{"ConcurrentRuns", testConcurrentRuns},
		{"ConcurrentReaders", testConcurrentReaders},
		{"ConcurrentWritersOneRun", testConcurrentWritersOneRun},
		{"ConcurrentBatchesOfSeveralRuns", testConcurrentBatchesOfSeveralRuns},
		{"DoneContext", testDoneContext},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.test(t, newStore(t)) })
	}
}

// appendOK appends evs or fails the test.
func appendOK(t *testing.T, s troupe.Store, evs ...troupe.Event) {
	t.Helper()
	if err := s.Append(t.Context(), evs...); err != nil {
		t.Fatalf("Append(%s) = %v", describe(evs), err)
	}
}

// events reads the events of run after after, or fails the test.
func events(t *testing.T, s troupe.Store, run string, after int64) []troupe.Event {
	t.Helper()
	evs, err := s.Events(t.Context(), run, after)
	if err != nil {
		t.Fatalf("Events(%q, %d) = %v", run, after, err)
	}
	return evs
}

// checkLog fails the test unless the log of run after after is want.
func checkLog(t *testing.T, s troupe.Store, run string, after int64, want []troupe.Event) {
	t.Helper()
	if diff := diffEvents(want, events(t, s, run, after)); diff != "" {
		t.Errorf("Events(%q, %d) (-want +got):\n%s", run, after, diff)
	}
}

// checkSeqs is checkLog with a short report: which events (run#seq and what they say) differ.
func checkSeqs(t *testing.T, s troupe.Store, run string, want []troupe.Event) {
	t.Helper()
	if diff := cmp.Diff(summary(want), summary(events(t, s, run, 0))); diff != "" {
		t.Errorf("Events(%q, 0) (-want +got):\n%s", run, diff)
	}
}

func summary(evs []troupe.Event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = fmt.Sprintf("%s#%d %v", ev.RunID, ev.Seq, ev.Data)
		if w, ok := ev.Data.(*troupe.Warning); ok {
			out[i] = fmt.Sprintf("%s#%d %s", ev.RunID, ev.Seq, w.Message)
		}
	}
	return out
}

func describe(evs []troupe.Event) string {
	parts := make([]string, len(evs))
	for i, ev := range evs {
		parts[i] = fmt.Sprintf("%s#%d", ev.RunID, ev.Seq)
	}
	return fmt.Sprint(parts)
}

// payload is how the suite compares an event's Data: its dynamic type and what its JSON
// encoding decodes to generically (so key order, whitespace and number spelling do not matter).
type payload struct {
	Type string
	JSON any
}

func toPayload(v any) payload {
	if v == nil {
		return payload{Type: "<nil>"}
	}
	return payload{Type: fmt.Sprintf("%T", v), JSON: jsonValue(v)}
}

// jsonValue returns what v's JSON encoding decodes to as an untyped value.
func jsonValue(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("json.Marshal: %v", err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return fmt.Sprintf("json.Unmarshal: %v", err)
	}
	return out
}

// contextAsJSON compares troupe.Context, whose fields are unexported, by its JSON encoding.
var contextAsJSON = cmp.Transformer("troupe.Context", func(c troupe.Context) any { return jsonValue(c) })

// eventOpts compares events field by field, payloads by type and JSON, times with Equal.
var eventOpts = cmp.Options{
	cmp.FilterPath(func(p cmp.Path) bool {
		sf, ok := p.Last().(cmp.StructField)
		return ok && sf.Name() == "Data" && p.Index(-2).Type() == reflect.TypeFor[troupe.Event]()
	}, cmp.Transformer("payload", toPayload)),
	contextAsJSON,
	cmpopts.EquateEmpty(),
}

// payloadOpts compares typed payloads: unexported fields (a Dispatch's runtime) are ignored,
// and empty and nil slices and maps are equal because JSON cannot tell them apart under
// omitempty.
var payloadOpts = cmp.Options{
	cmpopts.IgnoreUnexported(troupe.Dispatch{}),
	contextAsJSON,
	cmpopts.EquateEmpty(),
}

func diffEvents(want, got []troupe.Event) string {
	return cmp.Diff(want, got, eventOpts)
}

// mustErr fails the test unless err matches target.
func mustErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s = %v, want an error matching %v", what, err, target)
	}
}

func testAppendAndRead(t *testing.T, s troupe.Store) {
	runs := []string{"run-a", "run-b", "run-c"}
	want := map[string][]troupe.Event{}
	for _, r := range runs {
		want[r] = plainLog(r, 1, 9, "read")
	}
	// Interleave the runs, one event at a time, several of one run at once, and several runs in
	// one call.
	for _, r := range runs {
		appendOK(t, s, want[r][0])
	}
	appendOK(t, s, want["run-a"][1:4]...)
	appendOK(t, s, want["run-b"][1], want["run-c"][1], want["run-b"][2], want["run-a"][4])
	for i := 2; i < 9; i++ {
		for _, r := range runs {
			if n := len(events(t, s, r, 0)); n <= i {
				appendOK(t, s, want[r][n:i+1]...)
			}
		}
	}
	for _, r := range runs {
		checkLog(t, s, r, 0, want[r])
	}
}

// testRunIDs: a run id is an opaque, case-sensitive string; characters that mean something to
// SQL (LIKE wildcards, quotes) or to paths must not make runs collide.
func testRunIDs(t *testing.T, s troupe.Store) {
	ids := []string{
		"run", "run-", "RUN", "Run", "run%", "run_", "ru_", "r%", "run'; DROP TABLE events; --",
		`run"quoted"`, "run/with/slashes", `run\back`, "run with spaces", " run", "run ", "ランの識別子", "run😀",
		"run.0", "run.00", "x", fmt.Sprintf("%0200d", 7),
	}
	for i, id := range ids {
		appendOK(t, s, plainLog(id, 1, int64(i%3+1), "id")...)
	}
	for i, id := range ids {
		t.Run(fmt.Sprintf("%q", id), func(t *testing.T) {
			checkLog(t, s, id, 0, plainLog(id, 1, int64(i%3+1), "id"))
		})
	}
}

func testEventsAfter(t *testing.T, s troupe.Store) {
	const n = 6
	log := plainLog("run", 1, n, "after")
	appendOK(t, s, log...)
	appendOK(t, s, plainLog("other", 1, 2*n, "other")...)
	tests := []struct {
		after int64
		want  []troupe.Event
	}{
		{-5, log},
		{-1, log},
		{0, log},
		{1, log[1:]},
		{3, log[3:]},
		{n - 1, log[n-1:]},
		{n, nil},
		{n + 1, nil},
		{1 << 40, nil},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint("after=", tt.after), func(t *testing.T) {
			checkLog(t, s, "run", tt.after, tt.want)
		})
	}
}

func testUnknownRun(t *testing.T, s troupe.Store) {
	_, err := s.Events(t.Context(), "nobody", 0)
	mustErr(t, `empty store: Events("nobody", 0)`, err, troupe.ErrRunNotFound)

	appendOK(t, s, plainLog("run-1", 1, 2, "known")...)
	for _, id := range []string{"nobody", "run", "run-", "run-%", "RUN-1", "run-1 ", ""} {
		_, err := s.Events(t.Context(), id, 0)
		mustErr(t, fmt.Sprintf("Events(%q, 0)", id), err, troupe.ErrRunNotFound)
	}
	// A rejected first append does not make a run known.
	if err := s.Append(t.Context(), plainEvent("ghost", 2, "gap")); err == nil {
		t.Fatal(`Append of "ghost" seq 2 as the first event succeeded`)
	}
	_, err = s.Events(t.Context(), "ghost", 0)
	mustErr(t, `after a rejected first append: Events("ghost", 0)`, err, troupe.ErrRunNotFound)
}

func testSeqConflict(t *testing.T, s troupe.Store) {
	tests := []struct {
		name string
		seq  int64
	}{
		{"repeat last", 3},
		{"repeat middle", 2},
		{"repeat first", 1},
		{"gap of one", 5},
		{"far gap", 1000},
		{"zero", 0},
		{"negative", -4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := "conflict " + tt.name
			log := plainLog(run, 1, 3, "kept")
			appendOK(t, s, log...)
			err := s.Append(t.Context(), plainEvent(run, tt.seq, "intruder"))
			mustErr(t, fmt.Sprintf("Append(seq %d) onto 3 events", tt.seq), err, troupe.ErrSeqConflict)
			// The log is as it was: a repeat did not overwrite, a gap was not filled.
			checkLog(t, s, run, 0, log)
			// And it goes on from where it was.
			next := plainEvent(run, 4, "next")
			appendOK(t, s, next)
			checkLog(t, s, run, 0, append(log, next))
		})
	}
}

func testFirstEventSeq(t *testing.T, s troupe.Store) {
	for _, seq := range []int64{2, 0, -1, 7} {
		err := s.Append(t.Context(), plainEvent("fresh", seq, "first"))
		mustErr(t, fmt.Sprintf("first Append of a run with seq %d", seq), err, troupe.ErrSeqConflict)
	}
	appendOK(t, s, plainEvent("fresh", 1, "first"))
	checkLog(t, s, "fresh", 0, []troupe.Event{plainEvent("fresh", 1, "first")})
}

// testBatchAtomic: an Append of several events that is rejected appends none of them, so a
// log never holds half of a batch.
func testBatchAtomic(t *testing.T, s troupe.Store) {
	type ev struct {
		run string // "a" and "b" exist with 3 and 2 events; "c" does not
		seq int64
	}
	tests := []struct {
		name  string
		batch []ev
	}{
		{"gap at the end", []ev{{"a", 4}, {"a", 5}, {"a", 7}}},
		{"repeat inside", []ev{{"a", 4}, {"a", 4}}},
		{"out of order", []ev{{"a", 5}, {"a", 4}}},
		{"bad in another run", []ev{{"a", 4}, {"b", 3}, {"b", 9}}},
		{"new run then bad", []ev{{"c", 1}, {"c", 2}, {"a", 3}}},
		{"bad then new run", []ev{{"a", 3}, {"c", 1}}},
		{"new run with a gap", []ev{{"c", 1}, {"c", 3}}},
		{"new run with a repeat", []ev{{"c", 1}, {"c", 2}, {"c", 2}}},
		{"new run with a gap among others", []ev{{"c", 1}, {"a", 4}, {"c", 3}}},
		{"bad first", []ev{{"a", 3}, {"a", 4}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := func(r string) string { return tt.name + "/" + r }
			logA := plainLog(name("a"), 1, 3, "kept")
			logB := plainLog(name("b"), 1, 2, "kept")
			appendOK(t, s, logA...)
			appendOK(t, s, logB...)
			var batch []troupe.Event
			for _, e := range tt.batch {
				batch = append(batch, plainEvent(name(e.run), e.seq, "batch"))
			}
			err := s.Append(t.Context(), batch...)
			mustErr(t, fmt.Sprintf("Append(%s)", describe(batch)), err, troupe.ErrSeqConflict)
			checkSeqs(t, s, name("a"), logA)
			checkSeqs(t, s, name("b"), logB)
			// A rejected batch makes no run: not even an empty log of the run it would have started.
			if evs, err := s.Events(t.Context(), name("c"), 0); !errors.Is(err, troupe.ErrRunNotFound) {
				t.Errorf("Events(%q) of a run only a rejected batch started = %s, %v; want ErrRunNotFound", name("c"), describe(evs), err)
			}
		})
	}
	t.Run("good batch", func(t *testing.T) {
		logA, logB := plainLog("good/a", 1, 3, "kept"), plainLog("good/b", 1, 2, "kept")
		appendOK(t, s, logA...)
		appendOK(t, s, logB...)
		batch := []troupe.Event{plainEvent("good/a", 4, "ok"), plainEvent("good/b", 3, "ok"), plainEvent("good/a", 5, "ok"), plainEvent("good/c", 1, "ok")}
		appendOK(t, s, batch...)
		checkLog(t, s, "good/a", 0, append(logA, batch[0], batch[2]))
		checkLog(t, s, "good/b", 0, append(logB, batch[1]))
		checkLog(t, s, "good/c", 0, batch[3:])
	})
}

func testPayloadRoundTrip(t *testing.T, s troupe.Store) {
	logs := fullRuns("full")
	covered := map[troupe.Kind]bool{}
	for _, log := range logs {
		for _, ev := range log {
			covered[ev.Kind] = true
		}
	}
	for _, k := range allKinds {
		if !covered[k] {
			t.Errorf("suite bug: no event of kind %s in fullRuns", k)
		}
	}
	for _, want := range logs {
		run := want[0].RunID
		// Half appended one by one, half in one call; read back before the next run finishes,
		// so a store that keeps few finished runs passes too.
		for _, ev := range want[:len(want)/2] {
			appendOK(t, s, ev)
		}
		appendOK(t, s, want[len(want)/2:]...)
		got := events(t, s, run, 0)
		if diff := diffEvents(want, got); diff != "" {
			t.Errorf("events of %q (-want +got):\n%s", run, diff)
		}
		if len(got) != len(want) {
			continue
		}
		for i := range want {
			w, g := want[i], got[i]
			t.Run(fmt.Sprintf("%s/%d-%s", run, w.Seq, w.Kind), func(t *testing.T) {
				if fmt.Sprintf("%T", g.Data) != fmt.Sprintf("%T", w.Data) {
					t.Fatalf("payload is a %T, want a %T", g.Data, w.Data)
				}
				if _, raw := w.Data.(json.RawMessage); !raw {
					// Typed: every exported field, with times compared by Equal.
					if diff := cmp.Diff(w.Data, g.Data, payloadOpts); diff != "" {
						t.Errorf("payload (-want +got):\n%s", diff)
					}
				}
				if diff := cmp.Diff(jsonValue(w.Data), jsonValue(g.Data)); diff != "" {
					t.Errorf("payload JSON (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(w.Context, g.Context, contextAsJSON); diff != "" {
					t.Errorf("context (-want +got):\n%s", diff)
				}
			})
		}
	}
}

// testNestedEvents: the events of agents nested in a dispatch (a composite's members, an
// agent called as a tool) come back with their parent dispatch and their own child context,
// interleaved with the run's own. Resuming a run tells them apart by Parent alone: a nested
// result read back without it would be taken for a result of the plan.
func testNestedEvents(t *testing.T, s troupe.Store) {
	const run = "nested"
	tc := traceContext(run)
	child := tc.Child().WithMetadata("member", "drafter")
	grandchild := child.Child()
	parentID := troupe.NewDispatchID(0x5eed_0100)
	memberID := troupe.NewDispatchID(0x5eed_0101)
	toolID := troupe.NewDispatchID(0x5eed_0102)
	result := func(id, agent string, st troupe.Status) *troupe.Result {
		return &troupe.Result{DispatchID: id, AgentName: agent, Status: st, AgentResult: map[string]any{"by": agent},
			Errors: []troupe.ErrorInfo{}, Warnings: []string{}, StartedAt: at(3), CompletedAt: at(4)}
	}
	type ev struct {
		kind     troupe.Kind
		status   troupe.Status
		dispatch string
		parent   string
		agent    string
		ctx      *troupe.Context
		data     any
	}
	evs := []ev{
		{kind: troupe.KindDispatchStarted, dispatch: parentID, agent: "pipeline", ctx: tc, data: &troupe.Dispatch{DispatchID: parentID, TargetAgent: "pipeline"}},
		{kind: troupe.KindDispatchStarted, dispatch: memberID, parent: parentID, agent: "drafter", ctx: &child, data: &troupe.Dispatch{DispatchID: memberID, TargetAgent: "drafter"}},
		{kind: troupe.KindAgentProgress, dispatch: memberID, parent: parentID, agent: "drafter", ctx: &child, data: &troupe.Progress{Kind: "token", Data: map[string]any{"n": 3.0}}},
		{kind: troupe.KindDispatchStarted, dispatch: toolID, parent: memberID, agent: "search", ctx: &grandchild, data: &troupe.Dispatch{DispatchID: toolID, TargetAgent: "search"}},
		{kind: troupe.KindWarning, dispatch: parentID, agent: "pipeline", ctx: tc, data: &troupe.Warning{Message: "slow member"}},
		{kind: troupe.KindDispatchFailed, status: troupe.StatusTimeout, dispatch: toolID, parent: memberID, agent: "search", ctx: &grandchild, data: result(toolID, "search", troupe.StatusTimeout)},
		{kind: troupe.KindDispatchCompleted, status: troupe.StatusCompleted, dispatch: memberID, parent: parentID, agent: "drafter", ctx: &child, data: result(memberID, "drafter", troupe.StatusCompleted)},
		{kind: troupe.KindDispatchCompleted, status: troupe.StatusCompleted, dispatch: parentID, agent: "pipeline", ctx: tc, data: result(parentID, "pipeline", troupe.StatusCompleted)},
	}
	want := make([]troupe.Event, len(evs))
	for i, e := range evs {
		seq := int64(i + 1)
		want[i] = troupe.Event{RunID: run, Seq: seq, Time: at(seq), Stage: troupe.StageExecute, Kind: e.kind, Step: 2,
			DispatchID: e.dispatch, Parent: e.parent, Agent: e.agent, Status: e.status, Context: e.ctx, Data: e.data}
	}
	// The first event in one call, then one by one, then the rest in one call.
	appendOK(t, s, want[0])
	for _, e := range want[1:4] {
		appendOK(t, s, e)
	}
	appendOK(t, s, want[4:]...)
	checkLog(t, s, run, 0, want)
}

// testAppendKeepsNoSlice: Append does not keep the slice it is given, nor read it after it
// returns: the engine reuses one batch for the next transition at once, overwriting its events.
func testAppendKeepsNoSlice(t *testing.T, s troupe.Store) {
	want := append(plainLog("reused-a", 1, 4, "kept"), plainLog("reused-b", 1, 2, "kept")...)
	batch := slices.Clone(want[:4])
	appendOK(t, s, batch[:1]...)
	appendOK(t, s, batch[1:]...)
	for i := range batch {
		batch[i] = plainEvent("reused-a", batch[i].Seq, "overwritten")
	}
	batch = append(batch[:0], want[4:]...) // the same array again, for a batch of another run
	appendOK(t, s, batch...)
	for i := range batch {
		batch[i] = troupe.Event{}
	}
	checkLog(t, s, "reused-a", 0, want[:4])
	checkLog(t, s, "reused-b", 0, want[4:])
}

func testLargePayload(t *testing.T, s troupe.Store) {
	want := []troupe.Event{plainEvent("big", 1, "small"), largeEvent("big", 2, 1<<20), plainEvent("big", 3, "small")}
	appendOK(t, s, want...)
	checkLog(t, s, "big", 0, want)
}

// testLongLog reads a long log in pages, as a watcher catching up does.
func testLongLog(t *testing.T, s troupe.Store) {
	const n = 500
	want := plainLog("long", 1, n, "long")
	for i := 0; i < n; {
		k := min(1+i%7, n-i) // batches of 1..7
		appendOK(t, s, want[i:i+k]...)
		i += k
	}
	var got []troupe.Event
	for after := int64(0); after < n; {
		page := events(t, s, "long", after)
		if len(page) == 0 {
			t.Fatalf("Events(after %d) is empty; the log has %d events", after, n)
		}
		page = page[:min(len(page), 100)]
		got = append(got, page...)
		after = page[len(page)-1].Seq
	}
	if diff := diffEvents(want, got); diff != "" {
		t.Errorf("paged read (-want +got):\n%s", diff)
	}
}

// testConcurrentRuns appends to many runs at once; run it under -race.
func testConcurrentRuns(t *testing.T, s troupe.Store) {
	const runs, n = 16, 60
	var wg sync.WaitGroup
	errs := make(chan error, runs)
	for r := range runs {
		wg.Go(func() {
			run := fmt.Sprintf("run-%02d", r)
			log := plainLog(run, 1, n, "concurrent")
			for i := 0; i < n; {
				k := min(1+(i+r)%3, n-i)
				if err := s.Append(t.Context(), log[i:i+k]...); err != nil {
					errs <- fmt.Errorf("Append(%s) = %w", describe(log[i:i+k]), err)
					return
				}
				i += k
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for r := range runs {
		run := fmt.Sprintf("run-%02d", r)
		checkLog(t, s, run, 0, plainLog(run, 1, n, "concurrent"))
	}
}

// testConcurrentBatchesOfSeveralRuns: batches that each hold the next event of several runs,
// naming the runs in opposite orders, appended from several goroutines at once. Each writer
// claims the next position and retries while the one before it has not landed (a sequence
// conflict, which leaves nothing behind), so appends are in flight together: a store that
// locks a batch's runs one by one, in the order the batch names them, deadlocks here, and the
// test fails after a minute instead of hanging (leaving the deadlocked writers behind).
func testConcurrentBatchesOfSeveralRuns(t *testing.T, s troupe.Store) {
	const writers, n = 4, 120
	runs := []string{"multi-a", "multi-b", "multi-c"}
	logs := map[string][]troupe.Event{}
	for _, r := range runs {
		logs[r] = plainLog(r, 1, n, "multi")
		appendOK(t, s, logs[r][0])
	}
	ctx := t.Context()
	var claimed atomic.Int64
	claimed.Store(1) // position 0 is appended
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			order := slices.Clone(runs)
			if w%2 == 1 {
				slices.Reverse(order)
			}
			for {
				i := int(claimed.Add(1) - 1)
				if i >= n {
					return
				}
				var batch []troupe.Event
				for _, r := range order {
					batch = append(batch, logs[r][i])
				}
				for {
					err := s.Append(ctx, batch...)
					if err == nil {
						break
					}
					if !errors.Is(err, troupe.ErrSeqConflict) || ctx.Err() != nil {
						errs <- fmt.Errorf("writer %d: Append(%s) = %w", w, describe(batch), err)
						return
					}
					runtime.Gosched() // the position before it has not landed yet
				}
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }() // ends with the writers
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("appends of batches naming several runs did not finish in a minute: a deadlock between them?")
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, r := range runs {
		checkLog(t, s, r, 0, logs[r])
	}
}

// testConcurrentReaders reads a run while it is written: every read is a dense run of the log
// from after+1, however the read and the appends interleave.
func testConcurrentReaders(t *testing.T, s troupe.Store) {
	const n, readers = 400, 4
	log := plainLog("live", 1, n, "live")
	appendOK(t, s, log[0])

	var wg sync.WaitGroup
	errs := make(chan error, readers+1)
	wg.Go(func() {
		for i := 1; i < n; i++ {
			if err := s.Append(t.Context(), log[i]); err != nil {
				errs <- fmt.Errorf("writer: Append(%d) = %w", i+1, err)
				return
			}
		}
	})
	for r := range readers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(r), 1))
			var seen int64 // highest seq read so far
			for seen < n {
				after := seen - rng.Int64N(5) // sometimes reread the tail
				after = max(after, 0)
				evs, err := s.Events(t.Context(), "live", after)
				if err != nil {
					errs <- fmt.Errorf("reader %d: Events(%d) = %w", r, after, err)
					return
				}
				if len(evs) > int(n-after) {
					errs <- fmt.Errorf("reader %d: Events(%d) returned %d events; at most %d exist", r, after, len(evs), n-after)
					return
				}
				// A cheap check per read; the full comparison is at the end.
				for i, ev := range evs {
					want := &log[after+int64(i)]
					if w, ok := ev.Data.(*troupe.Warning); ev.Seq != want.Seq || !ok || w.Message != want.Data.(*troupe.Warning).Message {
						errs <- fmt.Errorf("reader %d: Events(%d)[%d] is seq %d with %v, want seq %d with %v", r, after, i, ev.Seq, ev.Data, want.Seq, want.Data)
						return
					}
				}
				if len(evs) > 0 {
					if last := evs[len(evs)-1].Seq; last < seen {
						errs <- fmt.Errorf("reader %d: read up to %d after having read %d", r, last, seen)
						return
					}
					seen = evs[len(evs)-1].Seq
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	checkLog(t, s, "live", 0, log)
}

// testConcurrentWritersOneRun: writers racing on one run never interleave its log; each
// sequence number is won by exactly one of them, the others get ErrSeqConflict.
func testConcurrentWritersOneRun(t *testing.T, s troupe.Store) {
	const n, writers = 150, 6
	var wg sync.WaitGroup
	won := make([][]int64, writers) // seqs won by each writer
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			note := fmt.Sprintf("writer %d", w)
			var known int64 // events of the log this writer has seen
			for {
				evs, err := s.Events(t.Context(), "contended", known)
				switch {
				case errors.Is(err, troupe.ErrRunNotFound) && known == 0:
				case err != nil:
					errs <- fmt.Errorf("%s: Events(%d) = %w", note, known, err)
					return
				default:
					known += int64(len(evs))
				}
				next := known + 1
				if next > n {
					return
				}
				err = s.Append(t.Context(), plainEvent("contended", next, note))
				switch {
				case err == nil:
					won[w] = append(won[w], next)
				case errors.Is(err, troupe.ErrSeqConflict):
				default:
					errs <- fmt.Errorf("%s: Append(%d) = %w", note, next, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	want := make([]troupe.Event, n)
	winners := 0
	for w, seqs := range won {
		for _, seq := range seqs {
			if seq < 1 || seq > n {
				t.Fatalf("writer %d won seq %d", w, seq)
			}
			if want[seq-1].Seq != 0 {
				t.Errorf("seq %d was won twice: by %s and by writer %d", seq, want[seq-1].Agent, w)
			}
			want[seq-1] = plainEvent("contended", seq, fmt.Sprintf("writer %d", w))
			winners++
		}
	}
	if winners != n {
		t.Errorf("%d appends succeeded, want %d", winners, n)
	}
	checkLog(t, s, "contended", 0, want)
}

// testDoneContext: a call made with a context that is already done either fails, changing
// nothing, or succeeds in full; the log stays usable.
func testDoneContext(t *testing.T, s troupe.Store) {
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	expired, cancel2 := context.WithDeadline(t.Context(), base)
	defer cancel2()
	for _, tc := range []struct {
		name string
		ctx  context.Context
	}{{"cancelled", cancelled}, {"deadline exceeded", expired}} {
		t.Run(tc.name, func(t *testing.T) {
			run := "done-" + tc.name
			log := plainLog(run, 1, 3, "kept")

			// The first event of a run.
			if err := s.Append(tc.ctx, log[0]); err != nil {
				if _, err := s.Events(t.Context(), run, 0); !errors.Is(err, troupe.ErrRunNotFound) {
					t.Errorf("after a failed first append, Events = %v, want ErrRunNotFound", err)
				}
				appendOK(t, s, log[0])
			}
			checkLog(t, s, run, 0, log[:1])

			// A batch onto an existing log.
			if err := s.Append(tc.ctx, log[1:]...); err != nil {
				checkLog(t, s, run, 0, log[:1])
				appendOK(t, s, log[1:]...)
			}
			checkLog(t, s, run, 0, log)

			// A read.
			if evs, err := s.Events(tc.ctx, run, 1); err == nil {
				if diff := diffEvents(log[1:], evs); diff != "" {
					t.Errorf("Events with a done context succeeded with the wrong events (-want +got):\n%s", diff)
				}
			}

			// The log goes on.
			next := plainEvent(run, 4, "next")
			appendOK(t, s, next)
			checkLog(t, s, run, 0, append(slices.Clone(log), next))
		})
	}
}
