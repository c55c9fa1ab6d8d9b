package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/troupehq/troupe"
)

// decodeEvents reads JSON lines as troupe events.
func decodeEvents(t *testing.T, out string) []troupe.Event {
	t.Helper()
	var evs []troupe.Event
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev troupe.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("line %d is not an event: %v\n%s", len(evs)+1, err, sc.Text())
		}
		evs = append(evs, ev)
	}
	return evs
}

func TestDemoJSON(t *testing.T) {
	code, stdout, stderr := invoke(t, "demo", "--json", "--seed", "7")
	if code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	evs := decodeEvents(t, stdout)
	if len(evs) == 0 {
		t.Fatal("no events")
	}
	terminal := 0
	for i, ev := range evs {
		if ev.Seq != int64(i+1) {
			t.Errorf("event %d has seq %d: want dense from 1", i+1, ev.Seq)
		}
		if ev.Stage.Terminal() {
			terminal++
		}
		if ev.Data == nil {
			t.Errorf("event %d (%s) has no payload", ev.Seq, ev.Kind)
		}
	}
	if last := evs[len(evs)-1]; terminal != 1 || last.Kind != troupe.KindRunCompleted {
		t.Errorf("%d terminal events, the last event is %s: want exactly one, run_completed, last", terminal, last.Kind)
	}
	var plan *troupe.Plan
	var synthesis string
	for _, ev := range evs {
		switch d := ev.Data.(type) {
		case *troupe.Plan:
			plan = d
		case *troupe.Aggregation:
			synthesis = d.Synthesis
		}
	}
	if plan == nil || fmt.Sprint(plan.ExecutionPlan()) != "[[causal_impact] [gap_analyzer] [explainer]]" {
		t.Errorf("plan %v, want seed 000's [[causal_impact] [gap_analyzer] [explainer]]", plan)
	}
	if !strings.Contains(synthesis, "Midwest") {
		t.Errorf("synthesis %q", synthesis)
	}

	// The same seed gives the same run, ids included.
	_, again, _ := invoke(t, "demo", "--seed", "7", "--json")
	evs2 := decodeEvents(t, again)
	if len(evs2) != len(evs) {
		t.Fatalf("second run: %d events, first %d", len(evs2), len(evs))
	}
	for i := range evs {
		if evs[i].Kind != evs2[i].Kind || evs[i].DispatchID != evs2[i].DispatchID || evs[i].RunID != evs2[i].RunID {
			t.Errorf("event %d differs between runs of one seed: %s %s %s vs %s %s %s", i+1,
				evs[i].Kind, evs[i].RunID, evs[i].DispatchID, evs2[i].Kind, evs2[i].RunID, evs2[i].DispatchID)
		}
	}
}

func TestDemoText(t *testing.T) {
	_, jsonOut, _ := invoke(t, "demo", "--json", "--seed", "11")
	kinds := map[troupe.Kind]int{}
	var synthesis string
	for _, ev := range decodeEvents(t, jsonOut) {
		kinds[ev.Kind]++
		if a, ok := ev.Data.(*troupe.Aggregation); ok {
			synthesis = a.Synthesis
		}
	}

	code, stdout, stderr := invoke(t, "demo", "--seed", "11")
	if code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	for _, want := range []string{
		"question  " + defaultQuery,
		"intent=causal brands=[Kisqali] kpis=[NRx] regions=[Midwest]",
		"stage 1:\n    causal_impact", "stage 2:\n    gap_analyzer", "stage 3:\n    explainer",
		"\nanswer\n", "confidence   0.", "conflicts    none", "status  completed (exit 0)",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	// One line per event, in the kind column.
	lines := map[troupe.Kind]int{}
	for _, l := range strings.Split(stdout, "\n") {
		if f := strings.Fields(l); len(f) >= 3 && strings.HasPrefix(f[0], "+") {
			lines[troupe.Kind(f[2])]++
		}
	}
	for k, n := range kinds {
		if lines[k] != n {
			t.Errorf("%d %s lines, want one per event (%d)", lines[k], k, n)
		}
	}
	// The synthesis, as wrapped in the answer.
	if flat := strings.Join(strings.Fields(stdout), " "); synthesis == "" || !strings.Contains(flat, synthesis) {
		t.Errorf("output lacks the synthesis %q:\n%s", synthesis, stdout)
	}
}

func TestDemoOtherQuestion(t *testing.T) {
	code, stdout, stderr := invoke(t, "demo", "Show", "me", "market", "trends", "--seed", "3", "and", "opportunities", "for", "Kisqali")
	if code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	for _, want := range []string{
		"question  Show me market trends and opportunities for Kisqali",
		"intent=trend secondary_intents=[exploratory]",
		"stage 1 (parallel, max 10):\n    drift_monitor",
		"run_initialized                    run run_", // --seed among the words is still a flag
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	// After "--" everything is part of the question.
	code, stdout, _ = invoke(t, "demo", "--", "--json", "is", "not", "a", "flag")
	if code != exitOK || !strings.Contains(stdout, "question  --json is not a flag") {
		t.Errorf("exit %d:\n%s", code, stdout)
	}
}

func TestDemoCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	var out, errOut strings.Builder
	if code := run(ctx, []string{"demo"}, &out, &errOut); code != exitCancelled {
		t.Errorf("exit %d, want %d; stdout:\n%s\nstderr:\n%s", code, exitCancelled, out.String(), errOut.String())
	}
	if !strings.Contains(out.String(), "cancelled") {
		t.Errorf("output does not say the run was cancelled:\n%s", out.String())
	}
}

func TestExitCode(t *testing.T) {
	for s, want := range map[troupe.RunStatus]int{
		troupe.RunCompleted: exitOK, troupe.RunFailed: exitFailed, troupe.RunPaused: exitPaused, troupe.RunCancelled: exitCancelled,
	} {
		if got := exitCode(s); got != want {
			t.Errorf("exitCode(%s) = %d, want %d", s, got, want)
		}
	}
}
