package execagent_test

import (
	"testing"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/agent/execagent"
	"github.com/troupehq/troupe/engine"
	"github.com/troupehq/troupe/troupetest"
)

// An exec agent inside a real run: its stderr lines are progress events in the run's log, its
// result is the dispatch's, and a failing one is recorded with its stderr tail.
func TestExecAgentsInARun(t *testing.T) {
	goBin := buildGoAgent(t, t.TempDir())
	reg := troupe.NewRegistry()
	reg.MustAdd("go_counter", newAgent(t, execagent.Config{Command: []string{goBin}}))
	reg.MustAdd("sh_counter", newAgent(t, execagent.Config{Command: []string{"sh", "testdata/agent.sh"}}))
	reg.MustAdd("broken", newAgent(t, execagent.Config{Command: []string{"sh", "testdata/garbage.sh"}}))
	eng, err := engine.New(engine.Config{Registry: reg, Seed: 1, Policy: troupe.ErrorPolicy{OnError: troupe.Continue}})
	if err != nil {
		t.Fatal(err)
	}
	evs, err := troupetest.Collect(eng.Run(t.Context(), troupe.Request{Query: "how many words are here"}))
	if err != nil {
		t.Fatal(err)
	}
	troupetest.CheckFinishedLog(t, evs)
	traceID := evs[0].Context.TraceID()
	for agent, line := range map[string]string{"go_counter": "counting words", "sh_counter": "counted 5 words", "broken": "Traceback (most recent call last): something broke"} {
		found := false
		for _, ev := range troupetest.Find(evs, troupe.KindAgentProgress, agent) {
			p := ev.Data.(*troupe.Progress)
			found = found || p.Kind == "stderr" && p.Data == line
		}
		if !found {
			t.Errorf("%s: no progress event %q in the log", agent, line)
		}
	}
	for _, agent := range []string{"go_counter", "sh_counter"} {
		done := troupetest.Find(evs, troupe.KindDispatchCompleted, agent)
		if len(done) != 1 {
			t.Fatalf("%s: %d dispatch_completed events", agent, len(done))
		}
		res := done[0].Data.(*troupe.Result)
		if res.AgentResult["words"] != 5.0 {
			t.Errorf("%s: agent_result %v", agent, res.AgentResult)
		}
		if agent == "go_counter" {
			tp, _ := res.AgentResult["trace"].(string)
			if len(tp) != 55 || traceID == "" {
				t.Errorf("the Go agent saw TRACEPARENT %q in run %s", tp, traceID)
			}
		}
	}
	failed := troupetest.Find(evs, troupe.KindDispatchFailed, "broken")
	if len(failed) != 1 {
		t.Fatalf("broken: %d dispatch_failed events", len(failed))
	}
	e := failed[0].Data.(*troupe.Result).Errors[0]
	if e.Code != troupe.CodeInvalidOutput || e.Details["stderr_tail"] == nil || e.Details["errors"] == nil {
		t.Errorf("broken agent's error: %+v", e)
	}
}
