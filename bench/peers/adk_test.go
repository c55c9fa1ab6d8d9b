package peers

import (
	"context"
	"fmt"
	"iter"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/genai"

	"google.golang.org/adk/agent"
	"google.golang.org/adk/agent/workflowagents/parallelagent"
	"google.golang.org/adk/agent/workflowagents/sequentialagent"
	"google.golang.org/adk/model"
	"google.golang.org/adk/runner"
	"google.golang.org/adk/session"
)

const adkApp, adkUser = "bench", "u"

var (
	adkUserMsg = genai.NewContentFromText("hi", genai.RoleUser)
	adkReply   = genai.NewContentFromText("ok", genai.RoleModel)
)

// adkNoop builds a custom agent (agent.New + Config.Run, as in
// examples/workflowagents/sequential) that optionally runs pre(), bumps its
// counter and yields exactly one event.
func adkNoop(b *testing.B, name string, ctr *atomic.Int64, pre func()) agent.Agent {
	a, err := agent.New(agent.Config{
		Name:        name,
		Description: "no-op",
		Run: func(agent.InvocationContext) iter.Seq2[*session.Event, error] {
			return func(yield func(*session.Event, error) bool) {
				if pre != nil {
					pre()
				}
				ctr.Add(1)
				yield(&session.Event{LLMResponse: model.LLMResponse{Content: adkReply}}, nil)
			}
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	return a
}

func adkSeq(b *testing.B, subs []agent.Agent) agent.Agent {
	a, err := sequentialagent.New(sequentialagent.Config{AgentConfig: agent.Config{Name: "seq", SubAgents: subs}})
	if err != nil {
		b.Fatal(err)
	}
	return a
}

func adkPar(b *testing.B, subs []agent.Agent) agent.Agent {
	a, err := parallelagent.New(parallelagent.Config{AgentConfig: agent.Config{Name: "par", SubAgents: subs}})
	if err != nil {
		b.Fatal(err)
	}
	return a
}

func adkRunner(b *testing.B, root agent.Agent) (*runner.Runner, session.Service) {
	svc := session.InMemoryService()
	r, err := runner.New(runner.Config{AppName: adkApp, Agent: root, SessionService: svc})
	if err != nil {
		b.Fatal(err)
	}
	return r, svc
}

// adkRunOnce: one run = create a fresh in-memory session, drain runner.Run,
// delete the session (so the session store does not grow across iterations;
// reusing one session makes Get/findAgentToRun O(total events)).
// Returns the number of non-user events yielded.
func adkRunOnce(ctx context.Context, r *runner.Runner, svc session.Service) (int, error) {
	cr, err := svc.Create(ctx, &session.CreateRequest{AppName: adkApp, UserID: adkUser})
	if err != nil {
		return 0, err
	}
	sid := cr.Session.ID()
	n := 0
	for ev, err := range r.Run(ctx, adkUser, sid, adkUserMsg, agent.RunConfig{}) {
		if err != nil {
			return n, err
		}
		if ev.LLMResponse.Content != adkReply {
			return n, fmt.Errorf("unexpected event %+v", ev)
		}
		n++
	}
	return n, svc.Delete(ctx, &session.DeleteRequest{AppName: adkApp, UserID: adkUser, SessionID: sid})
}

// runADK runs root once per iteration and checks that it yielded want events and that every
// step ran each time.
func runADK(b *testing.B, root agent.Agent, ctr counters, want int, name string) {
	r, svc := adkRunner(b, root)
	ctx := context.Background()
	b.ReportAllocs()
	iters := int64(0)
	for b.Loop() {
		n, err := adkRunOnce(ctx, r, svc)
		if err != nil || n != want {
			b.Fatalf("n=%d err=%v", n, err)
		}
		iters++
	}
	ctr.check(b, name, iters)
}

// adkNoops returns n no-op agents named prefix0, prefix1, … counting into ctr, each running pre.
func adkNoops(b *testing.B, n int, prefix string, ctr counters, pre func()) []agent.Agent {
	subs := make([]agent.Agent, n)
	for i := range subs {
		subs[i] = adkNoop(b, fmt.Sprintf("%s%d", prefix, i), &ctr[i], pre)
	}
	return subs
}

func BenchmarkADKChain10(b *testing.B) {
	ctr := newCounters(chainLen)
	runADK(b, adkSeq(b, adkNoops(b, chainLen, "step", ctr, nil)), ctr, chainLen, "ADKChain10")
}

func BenchmarkADKFanOut100(b *testing.B) {
	ctr := newCounters(fanOut)
	runADK(b, adkPar(b, adkNoops(b, fanOut, "branch", ctr, nil)), ctr, fanOut, "ADKFanOut100")
}

func BenchmarkADKIOFanOut1000(b *testing.B) {
	ctr := newCounters(ioFanOut)
	sleep := func() { time.Sleep(10 * time.Millisecond) }
	runADK(b, adkPar(b, adkNoops(b, ioFanOut, "io", ctr, sleep)), ctr, ioFanOut, "ADKIOFanOut1000")
}

// BenchmarkADKBlockedRun: 10,000 concurrent runs of the 10-step sequential chain; step0 blocks
// on a channel. runner.Run is a pull iterator that runs on the caller's goroutine, so each run
// gets its own goroutine. Each run's session is created inside its goroutine (part of
// "starting a run").
func BenchmarkADKBlockedRun(b *testing.B) {
	ctr := newCounters(chainLen)
	var entered atomic.Int64
	var release chan struct{}
	subs := adkNoops(b, chainLen, "step", ctr, nil)
	subs[0] = adkNoop(b, "step0", &ctr[0], func() {
		entered.Add(1)
		<-release
	})
	r, svc := adkRunner(b, adkSeq(b, subs))
	ctx := context.Background()
	iters := measureBlocked(b, &entered, &release, func(done func(error)) {
		go func() {
			n, err := adkRunOnce(ctx, r, svc)
			if err == nil && n != chainLen {
				err = fmt.Errorf("n=%d", n)
			}
			done(err)
		}()
	})
	ctr.check(b, "ADKBlockedRun", iters*blockedRuns)
}

// BenchmarkADKSessionCreateDelete: the per-run session bookkeeping that
// adkRunOnce includes (InMemoryService Create + Delete), to allow subtraction.
func BenchmarkADKSessionCreateDelete(b *testing.B) {
	svc := session.InMemoryService()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		cr, err := svc.Create(ctx, &session.CreateRequest{AppName: adkApp, UserID: adkUser})
		if err != nil {
			b.Fatal(err)
		}
		if err := svc.Delete(ctx, &session.DeleteRequest{AppName: adkApp, UserID: adkUser, SessionID: cr.Session.ID()}); err != nil {
			b.Fatal(err)
		}
	}
}
