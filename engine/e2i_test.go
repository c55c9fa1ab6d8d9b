package engine_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/engine"
	"github.com/troupehq/troupe/examples/e2i"
	"github.com/troupehq/troupe/troupetest"
)

// Seed 001, compliance test 3 at the engine level: the same request and seed make the same
// plan and routing decisions, byte for byte. (The router's own test is in package route.)
func TestDeterministicRouting(t *testing.T) {
	reg, err := e2i.Registry()
	if err != nil {
		t.Fatal(err)
	}
	decisions := func() []byte {
		eng := newEngine(t, engine.Config{Registry: reg, Planner: e2i.Rules(), Seed: 7})
		evs := run(t, eng, troupe.Request{Query: "What caused the drop in NRx for Kisqali in Midwest?",
			ParsedQuery: e2i.ParseQuery("What caused the drop in NRx for Kisqali in Midwest?")})
		var out []any
		for _, ev := range evs {
			if ev.Kind == troupe.KindRouteDecided || ev.Kind == troupe.KindPlanCreated {
				out = append(out, ev.DispatchID, ev.Data)
			}
		}
		b, err := json.Marshal(out)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	first := decisions()
	for range 5 {
		if again := decisions(); string(again) != string(first) {
			t.Fatalf("routing differs between runs:\n%s\n%s", first, again)
		}
	}
}

// Seed 000, testing requirement 1 at the engine: every dispatch the engine sends validates.
func TestSeed000DispatchesValidate(t *testing.T) {
	reg, err := e2i.Registry()
	if err != nil {
		t.Fatal(err)
	}
	eng := newEngine(t, engine.Config{Registry: reg, Planner: e2i.Rules()})
	q := "What caused the drop in NRx for Kisqali in Midwest?"
	evs := run(t, eng, troupe.Request{Query: q, ParsedQuery: e2i.ParseQuery(q)})
	started := troupetest.Find(evs, troupe.KindDispatchStarted, "")
	if len(started) != 3 {
		t.Fatalf("%d dispatches, want 3", len(started))
	}
	for i, ev := range started {
		d := ev.Data.(*troupe.Dispatch)
		if err := d.Validate(reg); err != nil {
			t.Errorf("dispatch to %s: %v", d.TargetAgent, err)
		}
		if len(d.UpstreamResults) != i {
			t.Errorf("dispatch %d (%s) has %d upstream results, want %d", i, d.TargetAgent, len(d.UpstreamResults), i)
		}
	}
	// 000's sequential example: gap_analyzer depends on causal_impact and sees its result.
	gap := started[1].Data.(*troupe.Dispatch)
	if gap.TargetAgent != "gap_analyzer" || !cmp.Equal(gap.DependsOn, []string{"causal_impact"}) || gap.UpstreamResults[0].Agent != "causal_impact" {
		t.Errorf("gap_analyzer dispatch: target %s depends_on %v upstream %+v", gap.TargetAgent, gap.DependsOn, gap.UpstreamResults)
	}
	if got := troupetest.Last(evs).Kind; got != troupe.KindRunCompleted {
		t.Errorf("run ended %s", got)
	}
}
