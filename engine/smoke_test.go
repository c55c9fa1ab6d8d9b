package engine_test

import (
	"context"
	"testing"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/engine"
)

func TestSmoke(t *testing.T) {
	reg := troupe.NewRegistry()
	for _, n := range []string{"a", "b", "c"} {
		reg.MustAdd(n, troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
			return &troupe.Result{AgentResult: map[string]any{"n": len(d.UpstreamResults)}, Confidence: troupe.Ptr(0.9)}, nil
		}))
	}
	eng, err := engine.New(engine.Config{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	for ev, err := range eng.Run(t.Context(), troupe.Request{Query: "q"}) {
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%d %s %s %s %s", ev.Seq, ev.Stage, ev.Kind, ev.Agent, ev.Status)
	}
}
