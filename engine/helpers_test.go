package engine_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/engine"
	"github.com/troupehq/troupe/executor/local"
	"github.com/troupehq/troupe/troupetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// agents builds a registry from name → agent pairs, in order.
func agents(t *testing.T, pairs ...any) *troupe.Registry {
	t.Helper()
	reg := troupe.NewRegistry()
	for i := 0; i < len(pairs); i += 2 {
		name := pairs[i].(string)
		var opts []troupe.Option
		a := pairs[i+1]
		if w, ok := a.(withOpts); ok {
			a, opts = w.a, w.opts
		}
		if err := reg.Add(name, a.(troupe.Agent), opts...); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

type withOpts struct {
	a    troupe.Agent
	opts []troupe.Option
}

func opt(a troupe.Agent, opts ...troupe.Option) withOpts { return withOpts{a, opts} }

// chain plans the named agents one per stage, in order.
func chain(names ...string) troupe.Planner { return staticPlan(chainPlan(names)) }

// group plans the named agents in one stage with the given cap.
func group(limit int, names ...string) troupe.Planner { return staticPlan(groupPlan(names, limit)) }

func newEngine(t *testing.T, cfg engine.Config) *engine.Engine {
	t.Helper()
	if cfg.Seed == 0 {
		cfg.Seed = 42
	}
	eng, err := engine.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := eng.Close(ctx); err != nil {
			t.Errorf("engine close: %v", err)
		}
	})
	return eng
}

// run collects a run's events and checks the log invariants.
func run(t *testing.T, eng *engine.Engine, req troupe.Request) []troupe.Event {
	t.Helper()
	evs, err := troupetest.Collect(eng.Run(t.Context(), req))
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	troupetest.CheckFinishedLog(t, evs)
	return evs
}

func outcome(t *testing.T, evs []troupe.Event) *troupe.Outcome {
	t.Helper()
	o, ok := troupetest.Last(evs).Data.(*troupe.Outcome)
	if !ok {
		t.Fatalf("last event %s has no outcome", troupetest.Last(evs).Kind)
	}
	return o
}

func results(evs []troupe.Event) map[string][]*troupe.Result {
	out := map[string][]*troupe.Result{}
	for _, ev := range evs {
		if r, ok := ev.Data.(*troupe.Result); ok {
			out[r.AgentName] = append(out[r.AgentName], r)
		}
	}
	return out
}

// gate counts agents inside it and the most that were inside at once.
type gate struct {
	mu       sync.Mutex
	in, peak int
	entered  chan struct{}
	release  chan struct{}
}

func newGate() *gate { return &gate{entered: make(chan struct{}, 1000), release: make(chan struct{})} }

func (g *gate) agent() troupe.Agent {
	return troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		g.mu.Lock()
		g.in++
		g.peak = max(g.peak, g.in)
		g.mu.Unlock()
		g.entered <- struct{}{}
		defer func() { g.mu.Lock(); g.in--; g.mu.Unlock() }()
		select {
		case <-g.release:
			return &troupe.Result{AgentResult: map[string]any{"ok": true}, Confidence: troupe.Ptr(1.0)}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
}

var _ = local.Config{}
