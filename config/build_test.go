package config_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/config"
	"github.com/troupehq/troupe/engine"
	"github.com/troupehq/troupe/plan"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func mustParse(t *testing.T, src string) *config.File {
	t.Helper()
	f, err := config.Parse("testdata/t.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// echo answers with what it was given, or with the result its script says.
func echo(result map[string]any) troupe.AgentFunc {
	return func(_ context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		r := map[string]any{"intent": d.ParsedQuery["intent"]}
		for k, v := range result {
			r[k] = v
		}
		return &troupe.Result{Status: troupe.StatusCompleted, AgentResult: r}, nil
	}
}

func TestBuild(t *testing.T) {
	builtins := troupe.NewRegistry()
	builtins.MustAdd("judge_v2", echo(nil), troupe.Describe("judges"))
	builtins.MustAdd("other", echo(nil))

	f := mustParse(t, `
version: 1
agents:
  judge: {kind: builtin, builtin: {name: judge_v2}, writes: [verdict], timeout: 3s}
  other: {kind: builtin, after: [judge], description: mine}
  pair: {kind: sequential, sequential: {agents: [judge, other]}}
`)
	var built []string
	seq := func(ctx context.Context, b *config.Builder, a *config.Agent) (troupe.Agent, error) {
		var kids []troupe.Agent
		for _, n := range a.Sequential.Agents {
			k, err := b.Agent(ctx, n)
			if err != nil {
				return nil, err
			}
			kids = append(kids, k)
		}
		built = append(built, fmt.Sprintf("%s of %d", a.Name, len(kids)))
		return kids[0], nil
	}
	reg, err := config.Build(t.Context(), f, config.Options{Builtins: builtins, Factories: config.Factories{config.KindSequential: seq}})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(reg.Names(), " "); got != "judge other pair" {
		t.Errorf("names %q", got)
	}
	judge, _ := reg.Spec("judge")
	if judge.Description != "judges" || judge.Timeout.Seconds() != 3 || judge.Writes[0] != "verdict" {
		t.Errorf("judge spec %+v: want the builtin's description, the file's timeout and writes", judge)
	}
	other, _ := reg.Spec("other")
	if other.Description != "mine" || other.DependsOn[0] != "judge" {
		t.Errorf("other spec %+v", other)
	}
	if len(built) != 1 || built[0] != "pair of 2" {
		t.Errorf("factory calls %v", built)
	}

	// What the program does not have is an error at the field naming it, or at the agent when
	// its name is the agent's own.
	_, err = config.Build(t.Context(), f, config.Options{Builtins: troupe.NewRegistry()})
	for _, want := range []string{`testdata/t.yaml:4:42: agents.judge.builtin.name: no builtin agent "judge_v2"`, `testdata/t.yaml:5:3: agents.other: no builtin agent "other"`, "testdata/t.yaml:6:16: agents.pair.kind: kind sequential is not supported by this program"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
}

// Declared schemas are enforced at run time: a dispatch whose parsed query does not meet the
// input schema is blocked, and a result that does not meet the output schema is recorded as
// failed, never accepted.
func TestSchemasEnforced(t *testing.T) {
	builtins := troupe.NewRegistry()
	builtins.MustAdd("good", echo(map[string]any{"verdict": "yes"}))
	builtins.MustAdd("bad", echo(map[string]any{"verdict": 7}))
	f := mustParse(t, `
version: 1
agents:
  good:
    kind: builtin
    input_schema: {type: object, required: [intent], properties: {intent: {enum: [check]}}}
    output_schema: schemas/verdict.json
  bad:
    kind: builtin
    output_schema: schemas/verdict.json
error_policy: {on_error: continue, min_success_rate: 0}
`)
	reg, err := config.Build(t.Context(), f, config.Options{Builtins: builtins})
	if err != nil {
		t.Fatal(err)
	}
	run := func(intent string) map[string]*troupe.Result {
		eng, err := engine.New(engine.Config{Registry: reg, Policy: f.Policy()})
		if err != nil {
			t.Fatal(err)
		}
		results := map[string]*troupe.Result{}
		for ev, err := range eng.Run(t.Context(), troupe.Request{Query: "q", ParsedQuery: map[string]any{"intent": intent}}) {
			if err != nil {
				t.Fatal(err)
			}
			if r, ok := ev.Data.(*troupe.Result); ok {
				results[ev.Agent] = r
			}
		}
		return results
	}
	res := run("check")
	if r := res["good"]; r == nil || r.Status != troupe.StatusCompleted {
		t.Errorf("good: %+v", r)
	}
	r := res["bad"]
	if r == nil || r.Status == troupe.StatusCompleted || len(r.Errors) == 0 || r.Errors[0].Code != troupe.CodeInvalidOutput ||
		!strings.Contains(r.Errors[0].Message, "/verdict: got number, want string") {
		t.Errorf("bad's result was not recorded as invalid: %+v", r)
	}
	res = run("other")
	if r := res["good"]; r == nil || r.Status == troupe.StatusCompleted || r.Errors[0].Code != troupe.CodeInvalidInput || !strings.Contains(r.Errors[0].Message, "/intent: value must be 'check'") {
		t.Errorf("good with an input its schema refuses: %+v", r)
	}
}

func ExampleLoad() {
	f, err := config.Load("../examples/e2i")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(f.Order), "agents; the first intent rule:", f.Routing.Intents[0].Intent, f.Routing.Intents[0].Primary)
	cat, _ := config.Catalog(f)
	p, _, _ := f.PlanRules().Select(&troupe.SelectionCriteria{IntentType: "causal", Entities: map[string][]string{"kpis": {"NRx"}}}, cat)
	for _, s := range p {
		fmt.Printf("%s %.2f\n", s.Agent, s.Score)
	}
	// Output:
	// 17 agents; the first intent rule: causal [causal_impact]
	// causal_impact 1.00
	// gap_analyzer 0.85
	// explainer 0.80
}

// A file without routing or coordinator plans its top-level agents only, in the stages
// their declarations imply; members of composites run inside them.
func TestPlannerOfTopLevelAgents(t *testing.T) {
	f := mustParse(t, `
version: 1
agents:
  a: {kind: builtin}
  b: {kind: builtin, after: [a]}
  c: {kind: builtin, reads: [x]}
  w: {kind: builtin, writes: [x]}
  seq: {kind: sequential, sequential: {agents: [a, b]}}
`)
	if got := strings.Join(f.TopLevel(), " "); got != "c w seq" {
		t.Errorf("top level %q", got)
	}
	cat, err := config.Catalog(f)
	if err != nil {
		t.Fatal(err)
	}
	p, err := f.Planner().Plan(&troupe.Request{Query: "q"}, cat)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(p.ExecutionPlan()); got != "[[w seq] [c]]" {
		t.Errorf("plan %s, want [[w seq] [c]]: c reads what w writes", got)
	}
}

// A fallback agent is not planned on its own, where it would run whether or not the agent it
// stands in for fails (and twice when it does), unless another agent runs after it.
func TestFallbackAgentsAreNotPlannedOnTheirOwn(t *testing.T) {
	f := mustParse(t, `
version: 1
agents:
  a: {kind: builtin}
  b: {kind: builtin}
  c: {kind: builtin}
  d: {kind: builtin, after: [c]}
error_policy:
  fallback_agents: {a: [b], d: [c]}
`)
	if got := strings.Join(f.TopLevel(), " "); got != "a c d" {
		t.Errorf("top level %q, want a c d: b only stands in for a, c also runs before d", got)
	}
}

// An agent a bundle uses as a lint runs inside the bundle, on each replicate's output, as a
// member runs inside its composite: it is one of the bundle's children and not a step of the
// plan of its own. An agent the file also names elsewhere is planned as before.
func TestLintAgentsAreNotPlannedOnTheirOwn(t *testing.T) {
	f := mustParse(t, `
version: 1
agents:
  judge: {kind: builtin}
  tidy: {kind: builtin}
  strict: {kind: builtin}
  other: {kind: builtin}
  panel:
    kind: bundle
    bundle: {agent: judge, replicates: 2, lints: [{agent: tidy}, {agent: strict, timeout: 100ms}]}
  more:
    kind: bundle
    bundle: {agent: other, replicates: 2, lints: [{agent: strict}]}
`)
	if got := strings.Join(f.Agents["panel"].Children(), " "); got != "judge tidy strict" {
		t.Errorf("panel's children %q, want judge tidy strict", got)
	}
	if got := strings.Join(f.TopLevel(), " "); got != "panel more" {
		t.Errorf("top level %q, want panel more: tidy and strict are lints, judge and other replicated", got)
	}
	cat, err := config.Catalog(f)
	if err != nil {
		t.Fatal(err)
	}
	p, err := f.Planner().Plan(&troupe.Request{Query: "q"}, cat)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(p.ExecutionPlan()); got != "[[panel more]]" {
		t.Errorf("plan %s, want [[panel more]]", got)
	}
}

// budget.max_concurrency caps the stages of a file's plan that its routing does not cap
// itself; routing.max_concurrency, when set, wins for planned stages.
func TestPlanConcurrencyFromTheBudget(t *testing.T) {
	const agents = "version: 1\nagents:\n  a: {kind: builtin}\n  b: {kind: builtin}\n"
	const routing = "routing:\n  intents: [{intent: x, primary: [a, b]}]\n"
	for _, tt := range []struct {
		name, src string
		want      int
	}{
		{"no budget", agents, plan.DefaultMaxConcurrency},
		{"budget", agents + "budget: {max_concurrency: 1}\n", 1},
		{"routing, budget", agents + routing + "budget: {max_concurrency: 3}\n", 3},
		{"routing's own cap", agents + "routing:\n  intents: [{intent: x, primary: [a, b]}]\n  max_concurrency: 2\n" + "budget: {max_concurrency: 3}\n", 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := mustParse(t, tt.src)
			cat, err := config.Catalog(f)
			if err != nil {
				t.Fatal(err)
			}
			p, err := f.Planner().Plan(&troupe.Request{Query: "q", ParsedQuery: map[string]any{"intent": "x"}}, cat)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Stages) != 1 || len(p.Stages[0].Tasks) != 2 || p.Stages[0].MaxConcurrency != tt.want {
				t.Errorf("stages %+v, want one of a and b capped at %d", p.Stages, tt.want)
			}
		})
	}
}

// A program builds a file's agents with the kinds it supports: here builtin agents from its
// own registry, and a sequential kind of its own that runs members in order.
func ExampleBuild() {
	f, err := config.Parse("example.yaml", []byte(`
version: 1
agents:
  greet: {kind: builtin, writes: [greeting]}
  seq: {kind: sequential, sequential: {agents: [greet]}}
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	builtins := troupe.NewRegistry()
	builtins.MustAdd("greet", troupe.AgentFunc(func(_ context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		return &troupe.Result{Status: troupe.StatusCompleted, AgentResult: map[string]any{"greeting": "hello " + d.Query}}, nil
	}))
	sequential := func(ctx context.Context, b *config.Builder, a *config.Agent) (troupe.Agent, error) {
		var members []troupe.Agent
		for _, n := range a.Sequential.Agents {
			m, err := b.Agent(ctx, n)
			if err != nil {
				return nil, err
			}
			members = append(members, m)
		}
		return troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (r *troupe.Result, err error) {
			for _, m := range members {
				if r, err = m.Run(ctx, d); err != nil {
					return nil, err
				}
			}
			return r, nil
		}), nil
	}
	reg, err := config.Build(context.Background(), f, config.Options{Builtins: builtins, Factories: config.Factories{config.KindSequential: sequential}})
	if err != nil {
		fmt.Println(err)
		return
	}
	spec, _ := reg.Spec("greet")
	fmt.Println(reg.Names(), spec.Writes)
	// Output: [greet seq] [greeting]
}

// A bundle's replicates are dispatches of its agent with the bundle's own input and state, so
// the bundle reads what its agent reads and takes its agent's input schema: the planner runs it
// after the agent writing those keys, and the engine refuses an input the agent's schema
// refuses before any replicate runs, as it would for the agent alone.
func TestBundleTakesWhatItsAgentNeeds(t *testing.T) {
	t.Parallel()
	f := mustParse(t, `
version: 1
agents:
  ask:
    kind: builtin
    writes: [question]
  judge:
    kind: builtin
    reads: [question]
    input_schema: {type: object, required: [intent], properties: {intent: {enum: [check]}}}
  jury:
    kind: bundle
    reads: [topic]
    bundle: {agent: judge, replicates: 3}
`)
	cat, err := config.Catalog(f)
	if err != nil {
		t.Fatal(err)
	}
	jury, _ := cat.Spec("jury")
	judge, _ := cat.Spec("judge")
	if diff := cmp.Diff([]string{"topic", "question"}, jury.Reads); diff != "" {
		t.Errorf("jury's reads (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(string(judge.InputSchema), string(jury.InputSchema)); diff != "" || jury.InputSchema == nil {
		t.Errorf("jury's input schema is not judge's (-judge +jury):\n%s", diff)
	}
	p, err := f.Planner().Plan(&troupe.Request{Query: "q"}, cat)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(p.ExecutionPlan()); got != "[[ask] [jury]]" {
		t.Errorf("plan %s, want [[ask] [jury]]: jury's replicates read what ask writes", got)
	}

	builtins := troupe.NewRegistry()
	builtins.MustAdd("ask", echo(map[string]any{"question": "which?"}))
	builtins.MustAdd("judge", echo(nil))
	bundle := func(ctx context.Context, b *config.Builder, a *config.Agent) (troupe.Agent, error) {
		return b.Agent(ctx, a.Bundle.Agent) // one replicate stands for all here
	}
	reg, err := config.Build(t.Context(), f, config.Options{Builtins: builtins, Factories: config.Factories{config.KindBundle: bundle}})
	if err != nil {
		t.Fatal(err)
	}
	for intent, want := range map[string]string{"check": "", "other": troupe.CodeInvalidInput} {
		eng, err := engine.New(engine.Config{Registry: reg, Planner: f.Planner(), Policy: troupe.ErrorPolicy{OnError: troupe.Continue}})
		if err != nil {
			t.Fatal(err)
		}
		var got *troupe.Result
		req := troupe.Request{Query: "q", ParsedQuery: map[string]any{"intent": intent}, State: map[string]any{"topic": "t"}}
		for ev, err := range eng.Run(t.Context(), req) {
			if err != nil {
				t.Fatal(err)
			}
			if r, ok := ev.Data.(*troupe.Result); ok && ev.Agent == "jury" {
				got = r
			}
		}
		switch {
		case got == nil:
			t.Errorf("intent %s: jury did not run", intent)
		case want == "" && got.Status != troupe.StatusCompleted:
			t.Errorf("intent %s: jury %+v, want completed", intent, got)
		case want != "" && (len(got.Errors) == 0 || got.Errors[0].Code != want):
			t.Errorf("intent %s: jury %+v, want %s", intent, got, want)
		}
	}
}
