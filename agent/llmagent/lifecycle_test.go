package llmagent_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/agent/llmagent"
	"github.com/troupehq/troupe/engine"
	"github.com/troupehq/troupe/troupetest"
)

// journal records the lifecycle calls of tools, in order.
type journal struct {
	mu    sync.Mutex
	calls []string
}

func (j *journal) add(s string) { j.mu.Lock(); j.calls = append(j.calls, s); j.mu.Unlock() }

func (j *journal) get() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]string(nil), j.calls...)
}

// plainTool has no lifecycle.
type plainTool struct{ name string }

func (p *plainTool) Info() troupe.ToolInfo { return troupe.ToolInfo{Name: p.name} }
func (p *plainTool) Call(context.Context, *troupe.Dispatch, json.RawMessage) (json.RawMessage, error) {
	return json.RawMessage(`"ok"`), nil
}

// heldTool has Setup and Teardown, each recorded in j and failing with its err field.
type heldTool struct {
	plainTool
	j                     *journal
	setupErr, teardownErr error
}

func (h *heldTool) Setup(context.Context) error {
	h.j.add("setup " + h.name)
	return h.setupErr
}

func (h *heldTool) Teardown(context.Context) error {
	h.j.add("teardown " + h.name)
	return h.teardownErr
}

// closingTool has Teardown alone, as flow.AsTool's tool does.
type closingTool struct {
	plainTool
	j *journal
}

func (c *closingTool) Teardown(context.Context) error {
	c.j.add("teardown " + c.name)
	return nil
}

func TestSetupAndTeardownReachTheTools(t *testing.T) {
	boom := errors.New("boom")
	for _, tc := range []struct {
		name      string
		tools     func(j *journal) []troupe.Tool
		setupErr  string // "" means Setup succeeds
		teardown  bool   // call Teardown after a successful Setup
		tearErrs  []string
		wantCalls []string
	}{{
		name: "in order, then the last first",
		tools: func(j *journal) []troupe.Tool {
			return []troupe.Tool{&heldTool{plainTool: plainTool{"a"}, j: j}, &plainTool{"p"},
				&closingTool{plainTool: plainTool{"c"}, j: j}, &heldTool{plainTool: plainTool{"b"}, j: j}}
		},
		teardown:  true,
		wantCalls: []string{"setup a", "setup b", "teardown b", "teardown c", "teardown a"},
	}, {
		name: "a failed setup tears down those set up before it",
		tools: func(j *journal) []troupe.Tool {
			return []troupe.Tool{&heldTool{plainTool: plainTool{"a"}, j: j}, &closingTool{plainTool: plainTool{"c"}, j: j},
				&heldTool{plainTool: plainTool{"b"}, j: j, setupErr: boom}, &heldTool{plainTool: plainTool{"z"}, j: j}}
		},
		setupErr:  "llmagent: setup of tool b: boom",
		wantCalls: []string{"setup a", "setup b", "teardown a"},
	}, {
		name: "every teardown runs and the errors are joined",
		tools: func(j *journal) []troupe.Tool {
			return []troupe.Tool{&heldTool{plainTool: plainTool{"a"}, j: j, teardownErr: errors.New("a stuck")},
				&heldTool{plainTool: plainTool{"b"}, j: j, teardownErr: errors.New("b stuck")}}
		},
		teardown:  true,
		tearErrs:  []string{"llmagent: teardown of tool b: b stuck", "llmagent: teardown of tool a: a stuck"},
		wantCalls: []string{"setup a", "setup b", "teardown b", "teardown a"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			j := &journal{}
			a := newAgent(t, llmagent.Config{BaseURL: "http://127.0.0.1:1/v1", Tools: tc.tools(j)})
			su, ok := any(a).(troupe.Setupper)
			td, ok2 := any(a).(troupe.Teardowner)
			if !ok || !ok2 {
				t.Fatal("the agent is not a troupe.Setupper and troupe.Teardowner: its tools are never set up")
			}
			err := su.Setup(t.Context())
			switch {
			case tc.setupErr == "" && err != nil:
				t.Fatalf("Setup: %v", err)
			case tc.setupErr != "" && (err == nil || !strings.Contains(err.Error(), tc.setupErr) || !errors.Is(err, boom)):
				t.Fatalf("Setup error = %v, want %q wrapping the tool's", err, tc.setupErr)
			}
			if tc.teardown {
				err := td.Teardown(t.Context())
				var got []string
				if err != nil {
					got = strings.Split(err.Error(), "\n")
				}
				if diff := cmp.Diff(tc.tearErrs, got); diff != "" {
					t.Errorf("Teardown errors (-want +got):\n%s", diff)
				}
			}
			if diff := cmp.Diff(tc.wantCalls, j.get()); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
		})
	}
}

// Through the engine: a run that plans the LLM agent sets its tool up before the dispatch and
// tears it down after.
func TestEngineSetsUpTheTools(t *testing.T) {
	srv := newCompletionServer(t, reply{content: "done", usage: [2]int{1, 1}})
	j := &journal{}
	tool := &heldTool{plainTool: plainTool{"db"}, j: j}
	a := newAgent(t, llmagent.Config{BaseURL: srv.URL(), Tools: []troupe.Tool{tool}})
	reg := troupe.NewRegistry()
	reg.MustAdd("llm", a)
	eng, err := engine.New(engine.Config{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close(t.Context()) })
	evs, err := troupetest.Collect(eng.Run(t.Context(), troupe.Request{Query: "go", Context: troupe.NewContext("s", "q")}))
	if err != nil {
		t.Fatal(err)
	}
	if last := troupetest.Last(evs); last.Kind != troupe.KindRunCompleted {
		t.Fatalf("run ended with %s: %+v", last.Kind, last.Data)
	}
	if n := len(troupetest.Find(evs, troupe.KindDispatchCompleted, "llm")); n != 1 {
		t.Errorf("%d dispatch_completed events, want 1", n)
	}
	if diff := cmp.Diff([]string{"setup db", "teardown db"}, j.get()); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}
