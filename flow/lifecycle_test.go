package flow_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/flow"
)

// journal records lifecycle calls in order, from any goroutine.
type journal struct {
	mu    sync.Mutex
	lines []string
}

func (j *journal) add(s string) {
	j.mu.Lock()
	j.lines = append(j.lines, s)
	j.mu.Unlock()
}

func (j *journal) all() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]string(nil), j.lines...)
}

// resource is an agent that must be set up before it runs: its Run fails unless Setup came
// first and Teardown has not yet come.
type resource struct {
	name  string
	j     *journal
	fail  error // what Setup returns
	panic bool  // Setup panics
	open  *bool
}

func newResource(name string, j *journal) *resource {
	return &resource{name: name, j: j, open: new(bool)}
}

func (r *resource) Setup(context.Context) error {
	r.j.add(r.name + " setup")
	if r.panic {
		panic("no socket for " + r.name)
	}
	if r.fail != nil {
		return r.fail
	}
	*r.open = true
	return nil
}

func (r *resource) Teardown(context.Context) error {
	r.j.add(r.name + " teardown")
	*r.open = false
	return nil
}

func (r *resource) Run(_ context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
	if !*r.open {
		return nil, errors.New(r.name + " ran without its setup")
	}
	r.j.add(r.name + " run")
	return &troupe.Result{AgentResult: map[string]any{"by": r.name}}, nil
}

// closer only tears down; the engine never calls such an agent, and neither does a composite.
type closer struct {
	troupe.AgentFunc
	j *journal
}

func (c closer) Teardown(context.Context) error { c.j.add("closer teardown"); return nil }

func plain(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
	return &troupe.Result{AgentResult: map[string]any{"ok": true}}, nil
}

func TestCompositeForwardsSetupAndTeardown(t *testing.T) {
	j := &journal{}
	group := flow.Parallel(flow.ParallelConfig{},
		flow.Named("c", newResource("c", j)), flow.Named("d", closer{AgentFunc: plain, j: j}))
	seq := flow.Sequential(flow.SequentialConfig{},
		flow.Named("a", newResource("a", j)), flow.Named("b", troupe.AgentFunc(plain)), flow.Named("group", group))
	ctx := context.Background()
	if err := seq.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := seq.Run(ctx, troupe.NewDispatch()); err != nil {
		t.Fatal(err)
	}
	if err := seq.Teardown(ctx); err != nil {
		t.Fatal(err)
	}
	want := []string{"a setup", "c setup", "a run", "c run", "c teardown", "a teardown"}
	if got := j.all(); !cmp.Equal(got, want) {
		t.Errorf("calls:\n got %q\nwant %q", got, want)
	}
}

func TestCompositeSetupFailureTearsDownTheOthers(t *testing.T) {
	errNoDB := errors.New("no database")
	for _, tc := range []struct {
		name  string
		bad   func(*resource)
		check func(t *testing.T, err error)
	}{
		{"error", func(r *resource) { r.fail = errNoDB }, func(t *testing.T, err error) {
			if !errors.Is(err, errNoDB) {
				t.Errorf("error %v does not wrap the member's", err)
			}
		}},
		{"panic", func(r *resource) { r.panic = true }, func(t *testing.T, err error) {
			var pe *troupe.PanicError
			if !errors.As(err, &pe) || pe.Value != "no socket for b" {
				t.Errorf("error %v is not the member's panic", err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := &journal{}
			b := newResource("b", j)
			tc.bad(b)
			loop := flow.Loop(flow.LoopConfig{MaxIterations: 2}, flow.Named("cycle",
				flow.Sequential(flow.SequentialConfig{}, flow.Named("a", newResource("a", j)), flow.Named("b", b), flow.Named("c", newResource("c", j)))))
			err := loop.Setup(context.Background())
			if err == nil {
				t.Fatal("setup succeeded")
			}
			if !strings.Contains(err.Error(), "flow: loop: setup of cycle: flow: sequential: setup of b:") {
				t.Errorf("error %q does not say which member", err)
			}
			tc.check(t, err)
			if want := []string{"a setup", "b setup", "a teardown"}; !cmp.Equal(j.all(), want) {
				t.Errorf("calls %q, want %q", j.all(), want)
			}
		})
	}
}

// In a run, the engine sets a planned composite up once at INITIALIZE, so its members are set
// up however many cycles the loop makes, and tears it down when the run ends.
func TestCompositeMembersSetUpInARun(t *testing.T) {
	j := &journal{}
	loop := flow.Loop(flow.LoopConfig{MaxIterations: 3}, flow.Named("cycle",
		flow.Sequential(flow.SequentialConfig{}, flow.Named("fetch", newResource("fetch", j)), flow.Named("check", troupe.AgentFunc(plain)))))
	eng := newEngine(t, "mastery", loop)
	var kinds []troupe.Kind
	for ev, err := range eng.Run(context.Background(), troupe.Request{Query: "q"}) {
		if err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, ev.Kind)
		if ev.Kind == troupe.KindRunFailed {
			t.Fatalf("run failed: %+v", ev.Data)
		}
	}
	if kinds[len(kinds)-1] != troupe.KindRunCompleted {
		t.Fatalf("run ended with %s", kinds[len(kinds)-1])
	}
	want := []string{"fetch setup", "fetch run", "fetch run", "fetch run", "fetch teardown"}
	if got := j.all(); !cmp.Equal(got, want) {
		t.Errorf("calls:\n got %q\nwant %q", got, want)
	}
}
