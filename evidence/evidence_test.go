package evidence_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/bundle"
	"github.com/troupehq/troupe/evidence"
	"github.com/troupehq/troupe/redact"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// recorder is a dispatch runtime that keeps the progress events.
type recorder struct {
	mu      sync.Mutex
	events  []event
	partial map[string]any
	asked   []troupe.Question
}

type event struct {
	kind string
	data map[string]any
}

func (r *recorder) State(string) (any, bool) { return nil, false }
func (r *recorder) Progress(kind string, data any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m, _ := data.(map[string]any)
	r.events = append(r.events, event{kind, m})
}
func (r *recorder) Ask(_ context.Context, q troupe.Question) (troupe.Answer, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asked = append(r.asked, q)
	return troupe.Answer{}, errors.New("no human")
}
func (r *recorder) Partial(p map[string]any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.partial = p
}

func (r *recorder) kinds() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.events {
		out = append(out, e.kind)
	}
	return out
}

func (r *recorder) find(kind string) []map[string]any {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []map[string]any
	for _, e := range r.events {
		if e.kind == kind {
			out = append(out, e.data)
		}
	}
	return out
}

func dispatch(rec *recorder) *troupe.Dispatch {
	d := troupe.NewDispatch()
	d.DispatchID, d.SessionID, d.QueryID = troupe.NewDispatchID(1), "s1", "q1"
	d.TargetAgent, d.DispatchReason, d.Query = "feas_bundle", "replicate", "Is it feasible?"
	d.ParsedQuery = map[string]any{"topic": "feasibility"}
	d.UserContext = map[string]any{"tenant": "acme"}
	d.DispatchedAt = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if rec != nil {
		d.Bind(rec)
	}
	return d
}

// bySeed answers with what out returns for the replicate's seed, and counts calls per seed.
type bySeed struct {
	calls sync.Map // seed → *atomic.Int32
	out   func(ctx context.Context, seed int64) (*troupe.Result, error)
}

func (b *bySeed) Run(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
	seed := d.UserContext[evidence.SeedKey].(int64)
	c, _ := b.calls.LoadOrStore(seed, new(atomic.Int32))
	c.(*atomic.Int32).Add(1)
	return b.out(ctx, seed)
}

func (b *bySeed) called(seed int64) int {
	c, ok := b.calls.Load(seed)
	if !ok {
		return 0
	}
	return int(c.(*atomic.Int32).Load())
}

func ok(data map[string]any, tokens int64, cost float64) *troupe.Result {
	return &troupe.Result{Status: troupe.StatusCompleted, AgentResult: data, TokensUsed: &tokens, CostDollars: &cost}
}

func bundleOf(t *testing.T, res *troupe.Result) *bundle.Bundle {
	t.Helper()
	b, err := json.Marshal(res.AgentResult)
	if err != nil {
		t.Fatal(err)
	}
	var out bundle.Bundle
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return &out
}

const scoreSchema = `{"type":"object","required":["score","verdict"],"properties":{
	"score":{"type":"number","minimum":0,"maximum":1},"verdict":{"enum":["go","no"]}}}`

func TestEarlyStopAtTwo(t *testing.T) {
	sub := &bySeed{out: func(_ context.Context, seed int64) (*troupe.Result, error) {
		return ok(map[string]any{"score": 0.7, "verdict": "go"}, 100, 0.01), nil
	}}
	rec := &recorder{}
	res, err := evidence.Bundle(sub, evidence.Config{Schema: []byte(scoreSchema)}).Run(t.Context(), dispatch(rec))
	if err != nil {
		t.Fatal(err)
	}
	if sub.called(11) != 1 || sub.called(23) != 1 || sub.called(47) != 0 {
		t.Errorf("calls by seed: 11→%d 23→%d 47→%d, want 1 1 0", sub.called(11), sub.called(23), sub.called(47))
	}
	b := bundleOf(t, res)
	if !b.Meta.EarlyStop || b.Meta.K != 2 || b.Meta.KMax != 3 || !cmp.Equal(b.Meta.Seeds, []int64{11, 23}) {
		t.Errorf("meta = %+v", b.Meta)
	}
	if *res.Confidence != 1 || b.Summary.Confidence != 1 {
		t.Errorf("confidence %v / %v, want 1", *res.Confidence, b.Summary.Confidence)
	}
	if got := len(rec.find(evidence.EventReplicateStarted)); got != 2 {
		t.Errorf("%d replicate_started events, want 2", got)
	}
	ps := rec.find(evidence.EventPartialSummary)
	if len(ps) != 1 || ps[0]["early_stop"] != true || ps[0]["distance"] != 0.0 || ps[0]["source"] != "feas_bundle" {
		t.Errorf("partial_summary = %v", ps)
	}
	if *res.TokensUsed != 200 || *res.CostDollars != 0.02 {
		t.Errorf("usage %d tokens $%v, want 200 and 0.02", *res.TokensUsed, *res.CostDollars)
	}
}

// A distance equal to epsilon stops early, as seed 004's "dist ≤ ε" says, although the
// difference of 0.9 and 0.7 is 0.20000000000000007 in floating point: the decision is taken on
// the distance the bundle reports (six decimals), the one partial_summary shows beside epsilon.
func TestEarlyStopAtEpsilonExactly(t *testing.T) {
	scores := map[int64]float64{11: 0.7, 23: 0.9, 47: 0.5}
	sub := &bySeed{out: func(_ context.Context, seed int64) (*troupe.Result, error) {
		return ok(map[string]any{"score": scores[seed]}, 1, 0), nil
	}}
	rec := &recorder{}
	schema := `{"type":"object","properties":{"score":{"type":"number","minimum":0,"maximum":1}}}`
	res, err := evidence.Bundle(sub, evidence.Config{Schema: []byte(schema)}).Run(t.Context(), dispatch(rec))
	if err != nil {
		t.Fatal(err)
	}
	ps := rec.find(evidence.EventPartialSummary)
	if len(ps) != 1 || ps[0]["distance"] != 0.2 || ps[0]["epsilon"] != 0.2 || ps[0]["early_stop"] != true {
		t.Errorf("partial_summary = %v, want distance 0.2 ≤ epsilon 0.2 and an early stop", ps)
	}
	if b := bundleOf(t, res); !b.Meta.EarlyStop || b.Meta.K != 2 || sub.called(47) != 0 {
		t.Errorf("meta %+v, seed 47 called %d times", b.Meta, sub.called(47))
	}
}

func TestDisagreeingRunToK(t *testing.T) {
	scores := map[int64]float64{11: 0.2, 23: 0.9, 47: 0.5}
	sub := &bySeed{out: func(_ context.Context, seed int64) (*troupe.Result, error) {
		return ok(map[string]any{"score": scores[seed], "verdict": "go"}, 10, 0), nil
	}}
	rec := &recorder{}
	res, err := evidence.Bundle(sub, evidence.Config{Name: "feas", Schema: []byte(scoreSchema)}).Run(t.Context(), dispatch(rec))
	if err != nil {
		t.Fatal(err)
	}
	b := bundleOf(t, res)
	if b.Meta.EarlyStop || b.Meta.K != 3 || sub.called(47) != 1 {
		t.Errorf("meta %+v, seed 47 called %d times", b.Meta, sub.called(47))
	}
	// Score distances with the schema's range of 1: 0.7, 0.3, 0.4; verdicts agree (0); objects
	// average their fields: 0.35, 0.15, 0.2 → confidence 1 − 0.7/3.
	if want := 0.766667; b.Summary.Confidence != want || *res.Confidence != want {
		t.Errorf("confidence %v, want %v", b.Summary.Confidence, want)
	}
	if b.Summary.Consensus["verdict"] != "go" || b.Summary.Disagreements[0].Field != "score" {
		t.Errorf("summary %+v", b.Summary)
	}
	if !strings.Contains(res.Summary(), "3 of 3 replicates valid") || !strings.Contains(res.Summary(), `largest on "score"`) {
		t.Errorf("analysis summary %q", res.Summary())
	}
	kinds := rec.kinds()
	want := []string{"replicate_started", "replicate_started", "replicate_done", "replicate_done", "partial_summary",
		"replicate_started", "replicate_done", "bundle_ready"}
	if !cmp.Equal(kinds, want) {
		t.Errorf("events %v, want %v", kinds, want)
	}
	for _, e := range rec.events {
		if e.data["source"] != "feas" {
			t.Errorf("%s event source %v", e.kind, e.data["source"])
		}
	}
	// The bundle of the first two is the dispatch's partial result while the third runs.
	if m, _ := rec.partial["meta"].(map[string]any); m == nil || m["k"] != 2.0 {
		t.Errorf("partial result %v", rec.partial)
	}
}

// partial_summary's distance between r1 and r2 is the one the bundle reports in
// pairwise_distance: a replicate without data is at distance 1 from every other, so two
// replicates that both produced nothing are not shown as agreeing.
func TestPartialSummaryDistanceIsTheBundles(t *testing.T) {
	data := map[string]any{"score": 0.7, "verdict": "go"}
	tests := []struct {
		name string
		out  map[int64]func() (*troupe.Result, error) // by seed; missing: data
		want float64
	}{
		{"both produced nothing", map[int64]func() (*troupe.Result, error){
			11: func() (*troupe.Result, error) { return nil, errors.New("down") },
			23: func() (*troupe.Result, error) { return nil, errors.New("down") },
		}, 1},
		{"r1 produced nothing", map[int64]func() (*troupe.Result, error){
			11: func() (*troupe.Result, error) { return nil, errors.New("down") },
		}, 1},
		{"both completed without agent_result", map[int64]func() (*troupe.Result, error){
			11: func() (*troupe.Result, error) { return ok(nil, 1, 0), nil },
			23: func() (*troupe.Result, error) { return ok(nil, 1, 0), nil },
		}, 1},
		{"both agree", nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sub := &bySeed{out: func(_ context.Context, seed int64) (*troupe.Result, error) {
				if f, found := tt.out[seed]; found {
					return f()
				}
				return ok(data, 1, 0), nil
			}}
			rec := &recorder{}
			res, err := evidence.Bundle(sub, evidence.Config{Schema: []byte(scoreSchema)}).Run(t.Context(), dispatch(rec))
			if err != nil {
				t.Fatal(err)
			}
			ps := rec.find(evidence.EventPartialSummary)
			if len(ps) != 1 {
				t.Fatalf("%d partial_summary events, want 1", len(ps))
			}
			b := bundleOf(t, res)
			if got := ps[0]["distance"]; got != tt.want || got != b.Summary.PairwiseDistance[0][1] {
				t.Errorf("partial_summary distance %v, want %v, the bundle's pairwise_distance[0][1] (%v)",
					got, tt.want, b.Summary.PairwiseDistance[0][1])
			}
		})
	}
}

// Replicates are isolated: each gets its own copy of the dispatch with its own seed; what one
// does to its copy no other sees.
func TestReplicatesAreIsolated(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]string{}
	ids := map[string]bool{}
	sub := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		rep, found := evidence.ReplicateFrom(ctx)
		mu.Lock()
		seen[rep.ID] = fmt.Sprintf("%v %v %v %v %v %v %v", found, rep.Seed, d.UserContext["seed"], d.UserContext["replicate"], d.ParsedQuery, d.UserContext["tenant"], d.UserContext["bundle_dispatch_id"])
		ids[d.DispatchID] = troupe.IsDispatchID(d.DispatchID)
		mu.Unlock()
		// Scribble on everything shared-looking.
		d.ParsedQuery["scribbled"] = rep.ID
		d.UserContext["tenant"] = rep.ID
		return ok(map[string]any{"seed": float64(rep.Seed)}, 1, 0), nil
	})
	d := dispatch(&recorder{})
	if _, err := evidence.Bundle(sub, evidence.Config{}).Run(t.Context(), d); err != nil {
		t.Fatal(err)
	}
	parent := d.DispatchID
	want := map[string]string{
		"r1": "true 11 11 r1 map[topic:feasibility] acme " + parent,
		"r2": "true 23 23 r2 map[topic:feasibility] acme " + parent,
		"r3": "true 47 47 r3 map[topic:feasibility] acme " + parent,
	}
	if diff := cmp.Diff(want, seen); diff != "" {
		t.Errorf("what replicates saw (-want +got):\n%s", diff)
	}
	// Each replicate has a dispatch id of its own, well-formed, not the bundle's.
	if len(ids) != 3 || ids[parent] {
		t.Errorf("replicate dispatch ids %v (bundle's %s)", ids, parent)
	}
	for id, valid := range ids {
		if !valid {
			t.Errorf("replicate dispatch id %q is malformed", id)
		}
	}
	if len(d.ParsedQuery) != 1 || d.UserContext["tenant"] != "acme" || d.UserContext["seed"] != nil {
		t.Errorf("the bundle's own dispatch changed: %v %v", d.ParsedQuery, d.UserContext)
	}
}

func TestInvalidReplicate(t *testing.T) {
	sub := &bySeed{out: func(_ context.Context, seed int64) (*troupe.Result, error) {
		if seed == 23 {
			return ok(map[string]any{"score": 1.5, "verdict": "maybe"}, 1, 0), nil
		}
		return ok(map[string]any{"score": 0.5, "verdict": "go"}, 1, 0), nil
	}}
	rec := &recorder{}
	res, err := evidence.Bundle(sub, evidence.Config{Schema: []byte(scoreSchema)}).Run(t.Context(), dispatch(rec))
	if err != nil {
		t.Fatal(err)
	}
	b := bundleOf(t, res)
	r2 := b.Replicates[1]
	if r2.Quality.Valid || len(r2.Quality.Errors) != 2 || !strings.HasPrefix(r2.Quality.Errors[0], "at /score") {
		t.Errorf("r2 quality %+v", r2.Quality)
	}
	// r1 and r3 agree; r2 is excluded from consensus and confidence but shows in disagreements.
	if b.Meta.K != 3 || b.Summary.Confidence != 1 || b.Summary.Consensus["score"] != 0.5 || len(b.Summary.Disagreements) != 2 {
		t.Errorf("bundle %+v", b.Summary)
	}
	if d := b.Summary.Distributions["score"]; d.N != 2 {
		t.Errorf("score distribution over %d replicates, want the 2 valid", d.N)
	}
	warned := false
	for _, w := range rec.find(evidence.EventWarning) {
		warned = warned || strings.Contains(w["message"].(string), "replicate r2 is invalid")
	}
	if !warned || len(res.Warnings) == 0 {
		t.Errorf("no warning about r2: %v", rec.find(evidence.EventWarning))
	}
}

// A straggler is cancelled once the finished valid replicates agree enough. Virtual time: a
// straggler left running would time out after an hour, at once, and fail the test.
// A sub-agent that ends other than completed but hands back an agent_result (a partial answer)
// is an invalid replicate whose data is kept, as seed 004's r3: shown, excluded from consensus
// and confidence, included in disagreements.
func TestUnfinishedReplicateKeepsItsData(t *testing.T) {
	sub := &bySeed{out: func(_ context.Context, seed int64) (*troupe.Result, error) {
		if seed == 23 {
			r := ok(map[string]any{"score": 0.1, "verdict": "no"}, 1, 0)
			r.Status, r.Errors = troupe.StatusFailed, []troupe.ErrorInfo{{Code: "AGENT_ERROR", Message: "ran out of steps"}}
			return r, nil
		}
		return ok(map[string]any{"score": 0.5, "verdict": "go"}, 1, 0), nil
	}}
	res, err := evidence.Bundle(sub, evidence.Config{Schema: []byte(scoreSchema)}).Run(t.Context(), dispatch(&recorder{}))
	if err != nil {
		t.Fatal(err)
	}
	b := bundleOf(t, res)
	r2 := b.Replicates[1]
	if r2.Status != "failed" || r2.Quality.Valid || !cmp.Equal(r2.Quality.Errors, []string{"AGENT_ERROR: ran out of steps"}) ||
		!cmp.Equal(r2.Data, map[string]any{"score": 0.1, "verdict": "no"}) {
		t.Errorf("r2 = %+v", r2)
	}
	if b.Summary.Confidence != 1 || b.Summary.Consensus["verdict"] != "go" || len(b.Summary.Disagreements) != 2 {
		t.Errorf("summary %+v", b.Summary)
	}
}

func TestStragglerCancelledOnConfidence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		answers := map[int64]map[string]any{11: {"score": 0.5, "verdict": "go"}, 23: {"score": 0.9, "verdict": "no"}, 47: {"score": 0.5, "verdict": "go"}}
		var stragglerErr atomic.Value
		sub := &bySeed{out: func(ctx context.Context, seed int64) (*troupe.Result, error) {
			if a, found := answers[seed]; found {
				return ok(a, 1, 0), nil
			}
			<-ctx.Done() // the fourth replicate waits until it is cancelled
			stragglerErr.Store(context.Cause(ctx))
			return nil, ctx.Err()
		}}
		rec := &recorder{}
		// r1–r2 = (0.4 + 1)/2 = 0.7 is past epsilon (confidence 0.3 < 0.5); with r3 the confidence
		// is 1 − (0.7 + 0 + 0.7)/3 = 0.533 ≥ 0.5, so r4 is cancelled.
		cfg := evidence.Config{K: 4, Schema: []byte(scoreSchema), Stop: evidence.StopRule{Confidence: 0.5},
			Replicate: evidence.Ceiling{Timeout: time.Hour}, Budget: evidence.Budget{Timeout: 2 * time.Hour}}
		start := time.Now()
		res, err := evidence.Bundle(sub, cfg).Run(t.Context(), dispatch(rec))
		if err != nil {
			t.Fatal(err)
		}
		if el := time.Since(start); el != 0 {
			t.Errorf("took %v of virtual time: the straggler was not cancelled at once", el)
		}
		b := bundleOf(t, res)
		if b.Meta.K != 4 || b.Replicates[3].Status != "cancelled" || b.Replicates[3].Quality.Valid {
			t.Errorf("r4 = %+v", b.Replicates[3])
		}
		if e, _ := stragglerErr.Load().(error); e == nil || !strings.Contains(e.Error(), "straggler") {
			t.Errorf("the straggler saw %v", e)
		}
		c := rec.find(evidence.EventCancelled)
		if len(c) != 1 || c[0]["replicate"] != "r4" || !strings.Contains(c[0]["reason"].(string), "confidence") {
			t.Errorf("cancelled events %v", c)
		}
		if b.Summary.Confidence != 0.533333 {
			t.Errorf("confidence %v", b.Summary.Confidence)
		}
	})
}

// Stop.Valid cancels stragglers once that many replicates have finished valid, whatever they
// say: r1 and r2 disagree, r3 completes the quorum of three, r4 and r5 are cancelled.
func TestStragglerCancelledOnQuorum(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		answers := map[int64]map[string]any{11: {"score": 0.1, "verdict": "no"}, 23: {"score": 0.9, "verdict": "go"}, 47: {"score": 0.5, "verdict": "go"}}
		sub := &bySeed{out: func(ctx context.Context, seed int64) (*troupe.Result, error) {
			if a, found := answers[seed]; found {
				return ok(a, 1, 0), nil
			}
			<-ctx.Done()
			return nil, ctx.Err()
		}}
		rec := &recorder{}
		cfg := evidence.Config{K: 5, Schema: []byte(scoreSchema), Stop: evidence.StopRule{Valid: 3},
			Replicate: evidence.Ceiling{Timeout: time.Hour}, Budget: evidence.Budget{Timeout: 2 * time.Hour}}
		res, err := evidence.Bundle(sub, cfg).Run(t.Context(), dispatch(rec))
		if err != nil {
			t.Fatal(err)
		}
		b := bundleOf(t, res)
		var status []string
		for _, r := range b.Replicates {
			status = append(status, r.Status)
		}
		if want := []string{"completed", "completed", "completed", "cancelled", "cancelled"}; !cmp.Equal(status, want) {
			t.Errorf("replicates %v, want %v", status, want)
		}
		c := rec.find(evidence.EventCancelled)
		if len(c) != 2 || !strings.Contains(c[0]["reason"].(string), "3 valid replicates reached the quorum of 3") {
			t.Errorf("cancelled events %v", c)
		}
	})
}

// Stop.After cancels stragglers once time is up and two valid replicates are in; a replicate
// past its own timeout times out. Virtual time: synctest.
func TestStragglerCancelledOnTimeAndReplicateTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sub := &bySeed{out: func(ctx context.Context, seed int64) (*troupe.Result, error) {
			switch seed {
			case 11:
				return ok(map[string]any{"v": "a"}, 1, 0), nil
			case 23:
				return ok(map[string]any{"v": "b"}, 1, 0), nil
			}
			<-ctx.Done()
			return nil, ctx.Err()
		}}
		rec := &recorder{}
		cfg := evidence.Config{Stop: evidence.StopRule{After: 5 * time.Second}}
		start := time.Now()
		res, err := evidence.Bundle(sub, cfg).Run(t.Context(), dispatch(rec))
		if err != nil {
			t.Fatal(err)
		}
		if el := time.Since(start); el != 5*time.Second {
			t.Errorf("took %v, want the 5s of the stop rule", el)
		}
		if b := bundleOf(t, res); b.Replicates[2].Status != "cancelled" {
			t.Errorf("r3 = %+v", b.Replicates[2])
		}

		rec = &recorder{}
		cfg = evidence.Config{Replicate: evidence.Ceiling{Timeout: 3 * time.Second}}
		res, err = evidence.Bundle(sub, cfg).Run(t.Context(), dispatch(rec))
		if err != nil {
			t.Fatal(err)
		}
		if b := bundleOf(t, res); b.Replicates[2].Status != "timeout" || b.Replicates[2].Quality.Errors[0] != "timed out after 3s" {
			t.Errorf("r3 = %+v", b.Replicates[2])
		}
		if to := rec.find(evidence.EventTimeout); len(to) != 1 || to[0]["replicate"] != "r3" || to[0]["timeout_seconds"] != 3.0 {
			t.Errorf("timeout events %v", to)
		}

		// The bundle's own budget: after 4s it is built from what finished.
		start = time.Now()
		res, err = evidence.Bundle(sub, evidence.Config{Budget: evidence.Budget{Timeout: 4 * time.Second}}).Run(t.Context(), dispatch(&recorder{}))
		if err != nil {
			t.Fatal(err)
		}
		if b := bundleOf(t, res); time.Since(start) != 4*time.Second || b.Replicates[2].Status != "timeout" || b.Replicates[2].Quality.Errors[0] != "bundle budget of 4s spent" {
			t.Errorf("after %v: r3 = %+v", time.Since(start), b.Replicates[2])
		}

		// A dispatch timeout of 20s leaves 1s to build the bundle: replicates get 19s.
		start = time.Now()
		d := dispatch(&recorder{})
		d.TimeoutSeconds = troupe.Ptr(20.0)
		res, err = evidence.Bundle(sub, evidence.Config{}).Run(t.Context(), d)
		if err != nil {
			t.Fatal(err)
		}
		if b := bundleOf(t, res); time.Since(start) != 19*time.Second || b.Replicates[2].Quality.Errors[0] != "bundle budget of 19s spent" {
			t.Errorf("after %v: r3 = %+v", time.Since(start), b.Replicates[2])
		}

		// A dispatch timeout of 2s leaves half a second, a tenth being too little to abandon
		// a replicate that ignores its context: replicates get 1.5s.
		start = time.Now()
		d = dispatch(&recorder{})
		d.TimeoutSeconds = troupe.Ptr(2.0)
		res, err = evidence.Bundle(sub, evidence.Config{}).Run(t.Context(), d)
		if err != nil {
			t.Fatal(err)
		}
		if b := bundleOf(t, res); time.Since(start) != 1500*time.Millisecond || b.Replicates[2].Quality.Errors[0] != "bundle budget of 1.5s spent" {
			t.Errorf("after %v: r3 = %+v", time.Since(start), b.Replicates[2])
		}
	})
}

func TestBudgets(t *testing.T) {
	scores := map[int64]float64{11: 0.1, 23: 0.9, 47: 0.5}
	sub := &bySeed{out: func(_ context.Context, seed int64) (*troupe.Result, error) {
		tokens := int64(600)
		if seed == 23 {
			tokens = 2000 // over the per-replicate ceiling
		}
		return ok(map[string]any{"score": scores[seed], "verdict": "go"}, tokens, 0.5), nil
	}}
	rec := &recorder{}
	cfg := evidence.Config{Schema: []byte(scoreSchema), Replicate: evidence.Ceiling{Tokens: 1000}, Budget: evidence.Budget{Tokens: 2500}}
	res, err := evidence.Bundle(sub, cfg).Run(t.Context(), dispatch(rec))
	if err != nil {
		t.Fatal(err)
	}
	b := bundleOf(t, res)
	if b.Meta.K != 2 || sub.called(47) != 0 {
		t.Errorf("k %d, seed 47 called %d: the token budget (2600 ≥ 2500) should stop further replicates", b.Meta.K, sub.called(47))
	}
	if q := b.Replicates[1].Quality; q.Valid || !cmp.Equal(q.Errors, []string{"used 2000 tokens, over the replicate ceiling of 1000"}) {
		t.Errorf("r2 quality %+v", q)
	}
	if !strings.Contains(strings.Join(res.Warnings, "\n"), "token budget spent (2600 of 2500): not starting replicates r3 to r3") {
		t.Errorf("warnings %q", res.Warnings)
	}
	if *res.TokensUsed != 2600 || *res.CostDollars != 1 || b.Meta.Usage.Tokens != 2600 || len(b.Meta.Usage.PerReplicate) != 2 {
		t.Errorf("usage: result %d $%v, meta %+v", *res.TokensUsed, *res.CostDollars, b.Meta.Usage)
	}
	for _, done := range rec.find(evidence.EventReplicateDone) {
		if u := done["usage"].(map[string]any); done["replicate"] == "r2" && u["tokens"] != int64(2000) {
			t.Errorf("replicate_done usage %v", u)
		}
	}
	// A dispatch's max_cost_dollars lowers the cost budget: $0.5 + $0.5 spends $0.9.
	sub2 := &bySeed{out: sub.out}
	d := dispatch(&recorder{})
	d.MaxCostDollars = troupe.Ptr(0.9)
	res, err = evidence.Bundle(sub2, evidence.Config{}).Run(t.Context(), d)
	if err != nil || bundleOf(t, res).Meta.K != 2 {
		t.Errorf("cost budget: %v, %+v", err, res)
	}
}

func TestTruncationWarns(t *testing.T) {
	sub := &bySeed{out: func(_ context.Context, seed int64) (*troupe.Result, error) {
		return ok(map[string]any{"a": float64(seed), "b": float64(seed) * 2, "c": fmt.Sprint(seed)}, 1, 0), nil
	}}
	rec := &recorder{}
	res, err := evidence.Bundle(sub, evidence.Config{Limits: bundle.Limits{MaxDiffs: 1}}).Run(t.Context(), dispatch(rec))
	if err != nil {
		t.Fatal(err)
	}
	b := bundleOf(t, res)
	if !b.Summary.Truncated || len(b.Summary.Disagreements) != 1 || b.Summary.Omitted.Disagreements != 2 {
		t.Errorf("summary %+v", b.Summary)
	}
	w := rec.find(evidence.EventWarning)
	if len(w) != 1 || w[0]["message"] != "bundle truncated to its caps: omitted 0 consensus fields, 2 disagreements, 0 distributions, 0 replicates' data" {
		t.Errorf("warnings %v", w)
	}
}

func TestRedaction(t *testing.T) {
	sub := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		d.Progress("thinking", map[string]any{"header": "Authorization: Bearer abcdefghijklmnop"})
		rep, _ := evidence.ReplicateFrom(ctx)
		if rep.Index == 0 { // a question leaves the process too
			_, _ = d.Ask(ctx, troupe.Question{Prompt: "Write to jane@example.com?", Data: map[string]any{"password": "hunter22"}})
		}
		code := "ok"
		if rep.Index == 1 {
			code = "jane@example.com" // invalid: the schema's error quotes it
		}
		return ok(map[string]any{"contact": "jane@example.com", "n": float64(rep.Index), "code": code,
			"user": map[string]any{"ssn": "123-45-6789"}, "jane@example.com": float64(rep.Index) * 10}, 1, 0), nil
	})
	schema := []byte(`{"properties":{"code":{"type":"string","pattern":"^ok$"}}}`)
	for _, keep := range []bool{false, true} {
		rec := &recorder{}
		cfg := evidence.Config{KeepRaw: keep, Schema: schema, Redact: redact.Config{Fields: []string{"user.ssn"}}}
		res, err := evidence.Bundle(sub, cfg).Run(t.Context(), dispatch(rec))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range rec.events {
			j, _ := json.Marshal(e.data)
			if strings.Contains(string(j), "jane@") || strings.Contains(string(j), "abcdefghijklmnop") {
				t.Errorf("keep %v: event %s leaks: %s", keep, e.kind, j)
			}
		}
		if got := len(rec.find(evidence.EventReplicateProgress)); got != 3 {
			t.Errorf("%d replicate_progress events, want 3", got)
		}
		if q := rec.asked; len(q) != 1 || q[0].Prompt != "Write to [REDACTED:email]?" || !cmp.Equal(q[0].Data, map[string]any{"password": "[REDACTED]"}) {
			t.Errorf("keep %v: questions asked %+v", keep, q)
		}
		// The replicates' data, the consensus (user.ssn, contact), and r2's quality errors all
		// hold the secrets; redacted, none of them may.
		out, _ := json.Marshal(res.AgentResult)
		if leaks := strings.Contains(string(out), "jane@example.com"); leaks != keep {
			t.Errorf("keep %v: bundle holds the raw address: %v\n%s", keep, leaks, out)
		}
		if leaks := strings.Contains(string(out), "123-45-6789"); leaks != keep {
			t.Errorf("keep %v: bundle holds the raw user.ssn: %v\n%s", keep, leaks, out)
		}
		// The analysis summary names the most distant field, keyed by the address: redacted
		// whatever KeepRaw says, as events and warnings are.
		if sum := res.Summary(); strings.Contains(sum, "jane@") || !strings.Contains(sum, "REDACTED:email") {
			t.Errorf("keep %v: analysis summary %q", keep, sum)
		}
		b := bundleOf(t, res)
		if keep {
			continue
		}
		if c := b.Summary.Consensus; c["user.ssn"] != "[REDACTED]" || c["contact"] != "[REDACTED:email]" {
			t.Errorf("consensus %v", c)
		}
		if q := b.Replicates[1].Quality; q.Valid || len(q.Errors) != 1 || !strings.Contains(q.Errors[0], "[REDACTED:email]") {
			t.Errorf("r2 quality %+v", q)
		}
	}
}

func TestLintLane(t *testing.T) {
	blocked := make(chan error, 3)
	lints := []evidence.Lint{
		{Name: "no-empty-verdict", Check: func(_ context.Context, rep string, data any) []string {
			if data.(map[string]any)["verdict"] == "" {
				return []string{"verdict is empty"}
			}
			return nil
		}},
		{Name: "slow", Timeout: time.Hour, Check: func(ctx context.Context, rep string, data any) []string {
			<-ctx.Done() // never finishes on its own: the bundle must not wait for it
			blocked <- ctx.Err()
			return []string{"too late"}
		}},
	}
	sub := &bySeed{out: func(_ context.Context, seed int64) (*troupe.Result, error) {
		v := "go"
		if seed == 23 {
			v = ""
		}
		return ok(map[string]any{"verdict": v}, 1, 0), nil
	}}
	rec := &recorder{}
	res, err := evidence.Bundle(sub, evidence.Config{Lints: lints}).Run(t.Context(), dispatch(rec))
	if err != nil {
		t.Fatal(err)
	}
	if b := bundleOf(t, res); b.Meta.K != 3 {
		t.Errorf("lints changed the bundle: k %d", b.Meta.K)
	}
	for range 3 {
		if err := <-blocked; !errors.Is(err, context.Canceled) {
			t.Errorf("slow lint ended with %v, want cancelled", err)
		}
	}
	// The bundle was ready before the slow lint gave up: it never waited for it.
	var found []string
	ready := false
	for _, e := range rec.events {
		switch {
		case e.kind == evidence.EventBundleReady:
			ready = true
		case e.kind == evidence.EventWarning && e.data["lint"] == "no-empty-verdict":
			found = append(found, e.data["message"].(string))
		case e.kind == evidence.EventWarning && e.data["lint"] == "slow" && !ready:
			t.Errorf("the slow lint reported before the bundle was ready: %v", e.data)
		}
	}
	if !cmp.Equal(found, []string{"lint no-empty-verdict on r2: verdict is empty"}) {
		t.Errorf("lint warnings %q", found)
	}
	if !strings.Contains(strings.Join(res.Warnings, "\n"), "lint no-empty-verdict on r2: verdict is empty") {
		t.Errorf("result warnings %q", res.Warnings)
	}
}

func TestReproducible(t *testing.T) {
	sub := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		seed := d.UserContext["seed"].(int64)
		return ok(map[string]any{"score": float64(seed%10) / 10, "tags": []any{"a", fmt.Sprint(seed % 3)},
			"nested": map[string]any{"x": seed % 2, "y": "same"}}, seed%100, float64(seed%100)/1000), nil
	})
	cfg := evidence.Config{K: 5, DiffEncode: true}
	var first []byte
	for i := range 5 {
		res, err := evidence.Bundle(sub, cfg).Run(t.Context(), dispatch(&recorder{}))
		if err != nil {
			t.Fatal(err)
		}
		out, err := json.Marshal(res.AgentResult)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = out
			continue
		}
		if string(out) != string(first) {
			t.Fatalf("run %d differs:\n%s\n%s", i, first, out)
		}
	}
	seeds, _ := evidence.Seeds(nil, 5)
	if !strings.Contains(string(first), fmt.Sprintf(`"seeds":[%d,%d,%d,%d,%d]`, seeds[0], seeds[1], seeds[2], seeds[3], seeds[4])) {
		t.Errorf("seeds not recorded: %s", first)
	}
}

func TestFailures(t *testing.T) {
	sub := &bySeed{out: func(_ context.Context, seed int64) (*troupe.Result, error) {
		switch seed {
		case 11:
			panic("boom")
		case 23:
			return &troupe.Result{Status: troupe.StatusFailed, Errors: []troupe.ErrorInfo{{Code: "RAG_EMPTY", Message: "nothing for key sk-abcdefghijklmnopqrstuv"}}}, nil
		}
		return ok(map[string]any{"v": 1.0}, 1, 0), nil
	}}
	res, err := evidence.Bundle(sub, evidence.Config{}).Run(t.Context(), dispatch(&recorder{}))
	if err != nil {
		t.Fatal(err)
	}
	b := bundleOf(t, res)
	if r := b.Replicates[0]; r.Status != "failed" || !strings.Contains(r.Quality.Errors[0], "panicked: boom") {
		t.Errorf("r1 %+v", r)
	}
	if r := b.Replicates[1]; r.Status != "failed" || r.Quality.Errors[0] != "RAG_EMPTY: nothing for key [REDACTED:api_key]" {
		t.Errorf("r2 %+v", r)
	}
	if b.Summary.Confidence != 0 || !strings.Contains(res.Summary(), "1 of 3 replicates valid") {
		t.Errorf("confidence %v, summary %q", b.Summary.Confidence, res.Summary())
	}

	none := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) { return nil, errors.New("down") })
	_, err = evidence.Bundle(none, evidence.Config{}).Run(t.Context(), dispatch(&recorder{}))
	var ae *troupe.AgentError
	if !errors.As(err, &ae) || !strings.Contains(ae.Message, "no replicate produced output") {
		t.Errorf("all failed: %v", err)
	}
}

// A sub-agent that reports what JSON cannot hold — NaN in its answer, an infinite or NaN cost —
// gives an invalid replicate that says why; the bundle is still built, and every event it
// emits can be written to the run's log. Unchecked, an infinite cost made the bundle
// impossible to encode and a NaN one was counted as nothing.
func TestNonFiniteReplicateOutput(t *testing.T) {
	sub := troupe.AgentFunc(func(_ context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		switch d.UserContext[evidence.ReplicateKey] {
		case "r1":
			return ok(map[string]any{"v": math.NaN()}, 1, 0.01), nil
		case "r2":
			return ok(map[string]any{"v": 1.0}, 1, math.Inf(1)), nil
		case "r3":
			return ok(map[string]any{"v": 1.0}, 1, math.NaN()), nil
		}
		return ok(map[string]any{"v": 1.0}, 1, 0.01), nil
	})
	rec := &recorder{}
	res, err := evidence.Bundle(sub, evidence.Config{K: 4}).Run(t.Context(), dispatch(rec))
	if err != nil {
		t.Fatal(err)
	}
	b := bundleOf(t, res)
	want := []string{"agent_result is not JSON", "reported cost_dollars +Inf, which is not a number of dollars",
		"reported cost_dollars NaN, which is not a number of dollars", ""}
	for i, r := range b.Replicates {
		if got := strings.Join(r.Quality.Errors, "; "); r.Quality.Valid != (want[i] == "") || !strings.Contains(got, want[i]) {
			t.Errorf("%s: valid %v, errors %q; want %q", r.ID, r.Quality.Valid, got, want[i])
		}
	}
	if cost := *res.CostDollars; cost != 0.02 {
		t.Errorf("cost_dollars %v, want the 0.02 of the replicates that said what they cost", cost)
	}
	for _, e := range rec.events {
		if _, err := json.Marshal(e.data); err != nil {
			t.Errorf("event %s cannot be logged: %v", e.kind, err)
		}
	}
}

func TestConfigErrors(t *testing.T) {
	sub := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) { return nil, nil })
	for _, tt := range []struct {
		cfg  evidence.Config
		want string
	}{
		{evidence.Config{K: 1}, "k is 1, want 2 to 32"},
		{evidence.Config{K: 33}, "k is 33"},
		{evidence.Config{Epsilon: 1.5}, "epsilon is 1.5"},
		{evidence.Config{Seeds: []int64{1, 2, 1}}, "seeds[2] = 1 repeats"},
		{evidence.Config{Schema: []byte(`{"type":"nope"}`)}, "evidence: bundle: schema"},
		{evidence.Config{Limits: bundle.Limits{MaxBytes: -1}}, "max_bytes is -1"},
		{evidence.Config{Replicate: evidence.Ceiling{Timeout: -1}}, "replicate timeout"},
		{evidence.Config{Stop: evidence.StopRule{Confidence: 2}}, "stop confidence is 2"},
		{evidence.Config{Stop: evidence.StopRule{Valid: 1}}, "stop valid is 1, want 2 to k (3), or 0"},
		{evidence.Config{K: 4, Stop: evidence.StopRule{Valid: 5}}, "stop valid is 5, want 2 to k (4)"},
		{evidence.Config{Lints: []evidence.Lint{{Name: "x"}}}, "lints[0]: a lint needs a name and a check"},
	} {
		if _, err := evidence.New(sub, tt.cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("New(%+v) = %v, want %q", tt.cfg, err, tt.want)
		}
	}
	_, err := evidence.Bundle(sub, evidence.Config{K: 1}).Run(t.Context(), dispatch(nil))
	if err == nil || !strings.Contains(err.Error(), "k is 1") {
		t.Errorf("Bundle with a bad config: %v", err)
	}
}

func TestSeeds(t *testing.T) {
	s, err := evidence.Seeds(nil, 6)
	if err != nil || !cmp.Equal(s[:3], []int64{11, 23, 47}) || len(s) != 6 {
		t.Fatalf("Seeds = %v, %v", s, err)
	}
	again, _ := evidence.Seeds(nil, 6)
	seen := map[int64]bool{}
	for i, x := range s {
		if seen[x] || x <= 0 || x != again[i] {
			t.Errorf("seeds %v: %d repeats, is not positive, or differs between calls", s, x)
		}
		seen[x] = true
	}
}

// DefaultSeeds hands out a slice of its own: building seeds from it, or changing it, never
// changes the seeds of bundles configured with none.
func TestDefaultSeedsIsACopy(t *testing.T) {
	tests := []struct {
		name   string
		change func()
	}{
		{"append after the first two", func() { _ = append(evidence.DefaultSeeds()[:2], 5) }},
		{"set an element", func() { evidence.DefaultSeeds()[0] = 99 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.change()
			if got := evidence.DefaultSeeds(); !cmp.Equal(got, []int64{11, 23, 47}) {
				t.Errorf("DefaultSeeds() = %v, want [11 23 47]", got)
			}
			if got, err := evidence.Seeds(nil, 3); err != nil || !cmp.Equal(got, []int64{11, 23, 47}) {
				t.Errorf("Seeds(nil, 3) = %v, %v, want [11 23 47]", got, err)
			}
		})
	}
}

// An agent as a lint: it gets the replicate's data under user_context.lint_target, and its
// warnings and agent_result.findings come back as findings.
func TestLintAgent(t *testing.T) {
	checker := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		data := d.UserContext["lint_target"].(map[string]any)
		res := &troupe.Result{Status: troupe.StatusCompleted, AgentResult: map[string]any{"findings": []any{}}}
		if data["score"].(float64) > 0.5 {
			res.Warnings = []string{"score above 0.5"}
			res.AgentResult["findings"] = []any{fmt.Sprintf("replicate %s is optimistic", d.UserContext["replicate"])}
		}
		return res, nil
	})
	scores := map[int64]float64{11: 0.2, 23: 0.9, 47: 0.4}
	sub := &bySeed{out: func(_ context.Context, seed int64) (*troupe.Result, error) {
		return ok(map[string]any{"score": scores[seed]}, 1, 0), nil
	}}
	d := dispatch(&recorder{})
	res, err := evidence.Bundle(sub, evidence.Config{Lints: []evidence.Lint{evidence.LintAgent("optimism", checker, d)}}).Run(t.Context(), d)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"lint optimism on r2: score above 0.5", "lint optimism on r2: replicate r2 is optimistic"}
	if !cmp.Equal(res.Warnings, want) {
		t.Errorf("warnings %q, want %q", res.Warnings, want)
	}
}

type lifecycle struct {
	troupe.AgentFunc
	setup, teardown int
}

func (l *lifecycle) Setup(context.Context) error    { l.setup++; return nil }
func (l *lifecycle) Teardown(context.Context) error { l.teardown++; return nil }

func TestSetupTeardownReachTheSubAgent(t *testing.T) {
	sub := &lifecycle{AgentFunc: func(context.Context, *troupe.Dispatch) (*troupe.Result, error) { return nil, nil }}
	a, err := evidence.New(sub, evidence.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Setup(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := a.Teardown(t.Context()); err != nil {
		t.Fatal(err)
	}
	if sub.setup != 1 || sub.teardown != 1 {
		t.Errorf("setup %d teardown %d", sub.setup, sub.teardown)
	}
}

// meta.model records what produced the bundle: the configured model, or else the models the
// replicates report using.
func TestModelRecorded(t *testing.T) {
	models := map[int64]string{11: "judge@1", 23: "judge@2", 47: "judge@1"}
	sub := &bySeed{out: func(_ context.Context, seed int64) (*troupe.Result, error) {
		res := ok(map[string]any{"v": float64(seed)}, 1, 0)
		res.ModelUsed = troupe.Ptr(models[seed])
		return res, nil
	}}
	for _, tt := range []struct {
		cfg  string
		want string
	}{{"", "judge@1, judge@2"}, {"provider:model@ver", "provider:model@ver"}} {
		res, err := evidence.Bundle(sub, evidence.Config{Model: tt.cfg}).Run(t.Context(), dispatch(&recorder{}))
		if err != nil {
			t.Fatal(err)
		}
		if b := bundleOf(t, res); b.Meta.Model != tt.want || res.ModelUsed == nil || *res.ModelUsed != tt.want {
			t.Errorf("config model %q: meta.model %q, model_used %v; want %q", tt.cfg, b.Meta.Model, res.ModelUsed, tt.want)
		}
	}
}

// TestReplicateTimeoutHoldsAgainstAnAgentThatIgnoresIt: a replicate whose sub-agent ignores its
// context is recorded as timed out once its timeout (and a short grace) has passed, and the
// bundle is built without waiting for it; Teardown waits for it to return.
func TestReplicateTimeoutHoldsAgainstAnAgentThatIgnoresIt(t *testing.T) {
	release := make(chan struct{})
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	scores := map[int64]float64{11: 0.2, 23: 0.9, 47: 0.5}
	sub := &bySeed{out: func(_ context.Context, seed int64) (*troupe.Result, error) {
		if seed == 23 {
			<-release // ignores its context
		}
		return ok(map[string]any{"score": scores[seed]}, 1, 0), nil
	}}
	a, err := evidence.New(sub, evidence.Config{Schema: []byte(scoreSchema), Replicate: evidence.Ceiling{Timeout: 20 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	res, err := a.Run(t.Context(), dispatch(rec)) // returns with r2 still blocked
	if err != nil {
		t.Fatal(err)
	}
	b := bundleOf(t, res)
	if got := b.Replicates[1]; got.Status != "timeout" || got.Quality.Valid {
		t.Errorf("r2 = %+v, want timed out", got)
	}
	if b.Replicates[0].Status != "completed" || len(b.Replicates) != 3 || b.Replicates[2].Status != "completed" {
		t.Errorf("replicates %+v, want r1 and r3 completed", b.Replicates)
	}
	if !slices.ContainsFunc(res.Warnings, func(w string) bool { return strings.Contains(w, "replicate r2 did not return") }) {
		t.Errorf("warnings %q do not say r2 was left running", res.Warnings)
	}

	// Teardown waits for it: not while it is blocked...
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := a.Teardown(ctx); err == nil || !strings.Contains(err.Error(), "1 replicates still running") {
		t.Errorf("Teardown with r2 still running = %v", err)
	}
	// ...and once it returns.
	close(release)
	if err := a.Teardown(t.Context()); err != nil {
		t.Errorf("Teardown = %v", err)
	}
}

// TestAbandonedReplicateReachesNothing: once the bundle has returned, a replicate left running
// reports no progress, asks nobody and reads no state through the bundle's dispatch, which is
// its caller's again.
func TestAbandonedReplicateReachesNothing(t *testing.T) {
	release, after := make(chan struct{}), make(chan error, 1)
	sub := troupe.AgentFunc(func(_ context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		if d.UserContext[evidence.ReplicateKey] == "r2" {
			<-release
			d.Progress("late", map[string]any{"n": 1})
			_, seen := d.State("topic")
			_, err := d.Ask(context.Background(), troupe.Question{Prompt: "still there?"})
			if seen {
				err = errors.New("read state after the bundle ended")
			}
			after <- err
		}
		return ok(map[string]any{"score": 0.5}, 1, 0), nil
	})
	a, err := evidence.New(sub, evidence.Config{Schema: []byte(scoreSchema), Replicate: evidence.Ceiling{Timeout: 20 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	if _, err := a.Run(t.Context(), dispatch(rec)); err != nil {
		t.Fatal(err)
	}
	n := len(rec.find(evidence.EventReplicateProgress))
	close(release)
	if err := <-after; err == nil || !strings.Contains(err.Error(), "the bundle has finished") {
		t.Errorf("a late Ask = %v, want it refused", err)
	}
	if err := a.Teardown(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := len(rec.find(evidence.EventReplicateProgress)); got != n || len(rec.asked) != 0 {
		t.Errorf("after the bundle ended: %d more progress events, %d questions", got-n, len(rec.asked))
	}
}

// guardedRuntime is a recorder whose run has guardrails (troupe.Guarder).
type guardedRuntime struct {
	*recorder
	guards []troupe.Guardrail
}

func (g guardedRuntime) RunGuardrails() []troupe.Guardrail { return g.guards }

// Admit says the run's budget is spent (troupe.Admitter).
func (g guardedRuntime) Admit() error { return fmt.Errorf("%w: cost", troupe.ErrBudgetExhausted) }

// TestReplicatesPassOnTheRunsGuardrails: a replicate's dispatch passes on its run's guardrails
// and budgets, so that a composite sub-agent checks its members with them, and stops starting
// them once the budget is spent, as it would outside a bundle.
func TestReplicatesPassOnTheRunsGuardrails(t *testing.T) {
	var seen atomic.Int32
	sub := troupe.AgentFunc(func(_ context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		if gs := d.RunGuardrails(); len(gs) == 1 && gs[0].Name() == "policy" && errors.Is(d.Admit(), troupe.ErrBudgetExhausted) {
			seen.Add(1)
		}
		return ok(map[string]any{"score": 0.5, "verdict": "go"}, 1, 0), nil
	})
	d := dispatch(nil)
	d.Bind(guardedRuntime{&recorder{}, []troupe.Guardrail{troupe.GuardrailFuncs{ID: "policy"}}})
	if _, err := evidence.Bundle(sub, evidence.Config{Schema: []byte(scoreSchema)}).Run(t.Context(), d); err != nil {
		t.Fatal(err)
	}
	if n := seen.Load(); n != 2 {
		t.Errorf("%d of 2 replicates saw the run's guardrails and spent budget", n)
	}
}

// TestTeardownWaitsForStragglersOnly: Teardown waits for abandoned replicates, not for those of
// a bundle still running normally (another run's, on the same agent), nor for replicates that
// returned on time (their goroutines may still be on their way out when Run returns).
func TestTeardownWaitsForStragglersOnly(t *testing.T) {
	release := make(chan struct{})
	sub := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		if d.UserContext["tenant"] == "busy" {
			select { // a healthy replicate, still working
			case <-release:
			case <-ctx.Done():
			}
		}
		return ok(map[string]any{"score": 0.5, "verdict": "go"}, 1, 0), nil
	})
	a, err := evidence.New(sub, evidence.Config{Schema: []byte(scoreSchema)})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	busy := dispatch(nil)
	busy.UserContext["tenant"] = "busy"
	go func() { _, err := a.Run(t.Context(), busy); done <- err }()
	for range 50 { // bundles that finish while the busy one runs
		if _, err := a.Run(t.Context(), dispatch(nil)); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		cancel() // no straggler to wait for: Teardown returns at once
		if err := a.Teardown(ctx); err != nil {
			t.Fatalf("Teardown with no straggler = %v", err)
		}
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestFirstTwoReplicatesFailed: when r1 and r2 both fail, partial_summary says so — their
// distance of 1 is no disagreement — and the bundle runs the rest only when that may help.
// Two that fail on the same error that is not recoverable (INVALID_INPUT) failed on the input
// every replicate gets: the bundle stops at two and fails with that code, not recoverable. A
// recoverable failure, or two different ones, may not repeat: the rest run. Before, the
// bundle reported the two as differing by more than ε and ran r3 to fail the same way.
func TestFirstTwoReplicatesFailed(t *testing.T) {
	invalid := &troupe.AgentError{Code: troupe.CodeInvalidInput, Message: "no proposal"}
	blocked := &troupe.AgentError{Code: troupe.CodeBlocked, Message: "guardrail pii"}
	flaky := &troupe.AgentError{Code: troupe.CodeRAGEmpty, Message: "index warming up", Recoverable: true}
	tests := []struct {
		name        string
		errs        map[int64]error // by seed; nil answers
		ran3        bool
		code        string // the bundle's error's code; "" when it succeeds
		recoverable bool
		reason      string
	}{
		{"same error, not recoverable: stop at two", map[int64]error{11: invalid, 23: invalid, 47: invalid}, false,
			troupe.CodeInvalidInput, false,
			"the first two replicates both failed (INVALID_INPUT: no proposal): not running the rest: INVALID_INPUT is not recoverable, and every replicate gets the same input"},
		{"recoverable: run the rest", map[int64]error{11: flaky, 23: flaky, 47: flaky}, true,
			troupe.CodeAgentError, true,
			"the first two replicates both failed (RAG_EMPTY: index warming up): running the rest: RAG_EMPTY is recoverable, so another seed may succeed"},
		{"different errors: run the rest", map[int64]error{11: invalid, 23: blocked, 47: invalid}, true,
			troupe.CodeAgentError, true,
			"the first two replicates both failed (r1 INVALID_INPUT: no proposal; r2 BLOCKED: guardrail pii): running the rest: they failed differently, so another seed may succeed"},
		{"recoverable, then an answer", map[int64]error{11: flaky, 23: flaky}, true, "", false,
			"the first two replicates both failed (RAG_EMPTY: index warming up): running the rest: RAG_EMPTY is recoverable, so another seed may succeed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sub := &bySeed{out: func(_ context.Context, seed int64) (*troupe.Result, error) {
				if err := tt.errs[seed]; err != nil {
					return nil, err
				}
				return ok(map[string]any{"score": 0.7, "verdict": "go"}, 1, 0), nil
			}}
			rec := &recorder{}
			_, err := evidence.Bundle(sub, evidence.Config{Schema: []byte(scoreSchema)}).Run(t.Context(), dispatch(rec))
			if got := sub.called(47) == 1; got != tt.ran3 {
				t.Errorf("r3 ran: %v, want %v", got, tt.ran3)
			}
			switch {
			case tt.code == "" && err != nil:
				t.Errorf("err = %v, want a bundle", err)
			case tt.code != "" && err == nil:
				t.Errorf("no error, want %s", tt.code)
			case err != nil:
				info := troupe.ErrorInfoOf(err)
				if info.Code != tt.code || info.Recoverable != tt.recoverable {
					t.Errorf("err = %v (recoverable %v), want code %s, recoverable %v", err, info.Recoverable, tt.code, tt.recoverable)
				}
				// Each failure once, with the replicates that failed so.
				if first := tt.errs[11].Error(); tt.errs[23] == tt.errs[11] && (!strings.Contains(info.Message, "; r1, r2") || strings.Count(info.Message, first) != 1) {
					t.Errorf("message %q, want %q once, after \"r1, r2\"", info.Message, first)
				}
			}
			ps := rec.find(evidence.EventPartialSummary)
			if len(ps) != 1 {
				t.Fatalf("%d partial_summary events, want 1", len(ps))
			}
			if ps[0]["early_stop"] != false || ps[0]["reason"] != tt.reason {
				t.Errorf("partial_summary early_stop %v, reason %q; want false, %q", ps[0]["early_stop"], ps[0]["reason"], tt.reason)
			}
		})
	}

	// Two that failed the same way but handed back an answer anyway: the bundle is built from
	// them, and its result says why it holds two replicates of three.
	sub := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{Status: troupe.StatusFailed, AgentResult: map[string]any{"score": 2.0},
			Errors: []troupe.ErrorInfo{{Code: troupe.CodeInvalidInput, Message: "no proposal"}}}, nil
	})
	res, err := evidence.Bundle(sub, evidence.Config{Schema: []byte(scoreSchema)}).Run(t.Context(), dispatch(&recorder{}))
	if err != nil {
		t.Fatal(err)
	}
	if b := bundleOf(t, res); b.Meta.K != 2 || b.Meta.EarlyStop {
		t.Errorf("meta %+v, want k 2, no early stop (they did not agree)", b.Meta)
	}
	want := "the first two replicates both failed (INVALID_INPUT: no proposal): not running the rest: INVALID_INPUT is not recoverable, and every replicate gets the same input"
	if !slices.Contains(res.Warnings, want) {
		t.Errorf("warnings %q, want %q", res.Warnings, want)
	}
}
