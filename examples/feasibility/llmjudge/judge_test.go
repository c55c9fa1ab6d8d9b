package llmjudge_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/agent/cassette"
	"github.com/troupehq/troupe/agent/llmagent"
	"github.com/troupehq/troupe/bundle"
	"github.com/troupehq/troupe/engine"
	"github.com/troupehq/troupe/examples/feasibility"
	"github.com/troupehq/troupe/examples/feasibility/llmjudge"
	"github.com/troupehq/troupe/troupetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The cassettes in testdata were recorded against a scripted OpenAI-compatible server on a
// loopback port (judges below, keyed by case and the request's seed): no real model is
// reachable where they were made, so the judgements are written by hand. What the tests check
// — the briefs sent, the per-replicate seeds, the checks, the bundle's statistics and the
// orchestrator's decision — troupe computes from them. TROUPE_CASSETTE=record re-records.

const endpoint = "http://llm.invalid/v1"

type judgement struct {
	Verdict  string   `json:"verdict"`
	P        float64  `json:"probability"`
	PB       float64  `json:"probability_budget"`
	PD       float64  `json:"probability_deadline"`
	Cost     float64  `json:"expected_cost_k"`
	Cost80   float64  `json:"p80_cost_k"`
	Weeks    float64  `json:"expected_weeks"`
	Weeks80  float64  `json:"p80_weeks"`
	Binding  string   `json:"binding_constraint"`
	Drivers  []string `json:"risk_drivers"`
	Rational string   `json:"rationale"`
}

// judges is what the scripted model answers, by case and seed.
var judges = map[string]map[int64]judgement{
	// Borderline: two of three find it infeasible, and they differ on the binding constraint.
	"warehouse-expansion": {
		11: {"feasible", 0.55, 0.66, 0.58, 1440, 1880, 55, 65, "deadline", []string{"weather", "regulatory_approval"},
			"Construction projects overran their schedules by a median of about 30%; with the approval risk the 56-week deadline is met a little more often than not."},
		23: {"infeasible", 0.46, 0.78, 0.52, 1370, 1500, 57.5, 66, "deadline", []string{"regulatory_approval"},
			"The budget holds in most reference projects, but a 40% delay when approval slips puts the deadline at even odds or worse."},
		47: {"infeasible", 0.40, 0.55, 0.60, 1490, 1590, 57, 67, "budget", []string{"regulatory_approval", "weather"},
			"Cost overruns of the larger construction projects leave the 1,500k budget at barely even odds."},
	},
	// Clear-cut: the first two agree closely, so the bundle stops at two.
	"crm-rollout": {
		11: {"feasible", 0.93, 0.97, 0.95, 235, 270, 25, 29, "none", []string{"data_migration"},
			"The budget and deadline are twice the estimates; even the worst software overruns in the reference class stay within them."},
		23: {"feasible", 0.95, 0.98, 0.96, 230, 262, 24.6, 28.5, "none", []string{"data_migration"},
			"Estimates doubled still fit: software projects overran by at most 60% here."},
		47: {"feasible", 0.94, 0.97, 0.96, 232, 266, 24.8, 28.8, "none", []string{"data_migration"}, "Comfortably within both limits."},
	},
	// The first judge contradicts itself (feasible at probability 0.22): an invalid replicate.
	"lab-platform": {
		11: {"feasible", 0.22, 0.35, 0.30, 390, 450, 39, 45, "deadline", []string{"new_technology"},
			"Research projects overran by 30% on average; the budget equals the estimate."},
		23: {"infeasible", 0.18, 0.31, 0.26, 395, 460, 40, 46, "deadline", []string{"new_technology", "key_person"},
			"With no slack in budget or schedule and research overruns of 20–60%, meeting both is unlikely."},
		47: {"infeasible", 0.20, 0.33, 0.27, 388, 452, 39.5, 45.5, "deadline", []string{"new_technology"},
			"No contingency against typical research overruns."},
	},
}

// scripted is the loopback completion server: it answers each judge request with judges[case][seed].
func scripted(t *testing.T) *url.URL {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Seed     int64 `json:"seed"`
			Messages []struct {
				Content string `json:"content"`
			} `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) == 0 {
			http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
			return
		}
		for id, bySeed := range judges {
			j, ok := bySeed[req.Seed]
			if !ok || !strings.HasPrefix(req.Messages[len(req.Messages)-1].Content, "Proposal "+id+":") {
				continue
			}
			content, _ := json.Marshal(j)
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]any{
				"id": fmt.Sprintf("chatcmpl-%s-%d", id, req.Seed), "object": "chat.completion", "created": 1700000000, "model": "judge-model",
				"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": string(content)}}},
				"usage":   map[string]any{"prompt_tokens": 900, "completion_tokens": 120, "total_tokens": 1020},
			})
			return
		}
		http.Error(w, `{"error":{"message":"no scripted judgement"}}`, http.StatusBadRequest)
	}))
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	return u
}

// dialing returns a transport whose every connection goes to srv's loopback address, whatever
// host the request names: the cassette records the stable endpoint.
func dialing(srv *url.URL) http.RoundTripper {
	var d net.Dialer
	return &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return d.DialContext(ctx, network, srv.Host)
	}}
}

// request is what a judge sent: its seed, brief and response format.
type request struct {
	Seed     int64 `json:"seed"`
	Messages []struct {
		Content string `json:"content"`
	} `json:"messages"`
	ResponseFormat struct {
		JSONSchema struct {
			Schema json.RawMessage `json:"schema"`
		} `json:"json_schema"`
	} `json:"response_format"`
}

// recorded returns the requests in a cassette, by seed. A replay that served every recorded
// exchange (run checks Unused) sent exactly these bodies: the cassette matches on the body.
func recorded(t *testing.T, path string) map[int64]request {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := cassette.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64]request{}
	for _, in := range f.Interactions {
		var r request
		if err := json.Unmarshal(in.Request.JSON, &r); err != nil {
			t.Fatal(err)
		}
		out[r.Seed] = r
	}
	return out
}

// run asks the LLM-judge system about a case through the cassette testdata/<name>.json and
// returns the bundle, the decision and the requests the judges sent, by seed.
func run(t *testing.T, name, caseID string) (*bundle.Bundle, feasibility.Decision, map[int64]request) {
	t.Helper()
	mode, err := cassette.ParseMode(os.Getenv("TROUPE_CASSETTE"))
	if err != nil {
		t.Fatal(err)
	}
	var network http.RoundTripper // a replaying cassette never reaches it
	if mode != cassette.ModeReplay {
		network = dialing(scripted(t))
	}
	path := filepath.Join("testdata", name+".json")
	c, err := cassette.New(path, cassette.Config{Mode: mode})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := llmjudge.Registry(nil, llmjudge.Config{LLM: llmagent.Config{BaseURL: endpoint, Model: "judge-model", APIKeyEnv: "LLMJUDGE_TEST_KEY",
		Temperature: troupe.Ptr(0.7), HTTPClient: &http.Client{Transport: c.Transport(network)}}})
	if err != nil {
		t.Fatal(err)
	}
	eng, err := engine.New(engine.Config{Registry: reg, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	evs, err := troupetest.Collect(eng.Run(t.Context(), troupe.Request{Query: "is " + caseID + " feasible?", ParsedQuery: map[string]any{"case": caseID}}))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Save(); err != nil {
		t.Fatal(err)
	}
	if unused := c.Unused(); len(unused) > 0 {
		t.Errorf("recorded exchanges not replayed: %v", unused)
	}
	var b *bundle.Bundle
	var dec feasibility.Decision
	for _, ev := range troupetest.Find(evs, troupe.KindDispatchCompleted, "") {
		r := ev.Data.(*troupe.Result)
		raw, _ := json.Marshal(r.AgentResult)
		switch r.AgentName {
		case feasibility.BundleAgent:
			b = new(bundle.Bundle)
			err = json.Unmarshal(raw, b)
		case feasibility.OrchestratorAgent:
			err = json.Unmarshal(raw, &dec)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if b == nil || dec.Decision == "" {
		t.Fatalf("run ended %s without a bundle and a decision: %+v", troupetest.Last(evs).Kind, troupetest.Last(evs).Data)
	}
	return b, dec, recorded(t, path)
}

func fields(ds []bundle.Disagreement) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.Field)
	}
	slices.Sort(out)
	return out
}

func TestSplitVerdictFromThreeLLMJudges(t *testing.T) {
	b, dec, sent := run(t, "llm_split", "warehouse-expansion")
	if diff := cmp.Diff([]int64{11, 23, 47}, slices.Sorted(maps.Keys(sent))); diff != "" {
		t.Errorf("one completion per replicate, each with its seed (-want +got):\n%s", diff)
	}
	for _, r := range sent {
		brief := r.Messages[len(r.Messages)-1].Content
		for _, want := range []string{"Proposal warehouse-expansion: Is the warehouse expansion feasible", "Budget: 1500k. Deadline: 56 weeks.",
			"Past construction projects (14)", "- regulatory_approval: 0.25, +0.1, +0.4", "at least 0.5."} {
			if !strings.Contains(brief, want) {
				t.Errorf("seed %d: the brief lacks %q:\n%s", r.Seed, want, brief)
			}
		}
		if s := string(r.ResponseFormat.JSONSchema.Schema); strings.Contains(s, "x-weight") || !strings.Contains(s, `"binding_constraint"`) {
			t.Errorf("the schema sent must be the judge schema without annotations: %s", s)
		}
	}
	if b.Meta.K != 3 || b.Meta.EarlyStop || len(b.Replicates) != 3 {
		t.Fatalf("k %d early stop %v replicates %d", b.Meta.K, b.Meta.EarlyStop, len(b.Replicates))
	}
	for _, r := range b.Replicates {
		if !r.Quality.Valid {
			t.Errorf("replicate %s invalid: %v", r.ID, r.Quality.Errors)
		}
	}
	diff := fields(b.Summary.Disagreements)
	for _, f := range []string{"verdict", "probability", "binding_constraint", "expected_cost_k"} {
		if !slices.Contains(diff, f) {
			t.Errorf("disagreements %v lack %s", diff, f)
		}
	}
	for _, f := range []string{"verdict", "binding_constraint", "risk_drivers[0]"} {
		if v, ok := b.Summary.Consensus[f]; ok {
			t.Errorf("the judges differ on %s, yet the consensus holds %v", f, v)
		}
	}
	if p := b.Summary.Distributions["probability"]; p.Mean == nil || *p.Mean < 0.469 || *p.Mean > 0.471 {
		t.Errorf("probability distribution %+v, want mean (0.55+0.46+0.40)/3", p)
	}
	if b.Meta.Usage.Tokens != 3*1020 {
		t.Errorf("usage %+v", b.Meta.Usage)
	}
	if dec.Decision != "no_go_unless_rescoped" || dec.Votes != "2 of 3 infeasible" || dec.Unanimous || !slices.Contains(dec.Disagreements, "verdict") {
		t.Errorf("decision %+v", dec)
	}
}

func TestAgreeingLLMJudgesStopEarly(t *testing.T) {
	b, dec, sent := run(t, "llm_agree", "crm-rollout")
	if diff := cmp.Diff([]int64{11, 23}, slices.Sorted(maps.Keys(sent))); diff != "" {
		t.Errorf("the third judge must not be asked (-want +got):\n%s", diff)
	}
	if !b.Meta.EarlyStop || b.Meta.K != 2 {
		t.Errorf("early stop %v k %d", b.Meta.EarlyStop, b.Meta.K)
	}
	want := map[string]any{"verdict": "feasible", "binding_constraint": "none"}
	for k, v := range want {
		if b.Summary.Consensus[k] != v {
			t.Errorf("consensus %s = %v, want %v", k, b.Summary.Consensus[k], v)
		}
	}
	if dec.Decision != "go" || !dec.Unanimous || dec.Confidence < 0.8 {
		t.Errorf("decision %+v", dec)
	}
}

func TestSelfContradictingJudgeIsInvalid(t *testing.T) {
	b, dec, _ := run(t, "llm_invalid", "lab-platform")
	var valid []bool
	for _, r := range b.Replicates {
		valid = append(valid, r.Quality.Valid)
	}
	if diff := cmp.Diff([]bool{false, true, true}, valid); diff != "" {
		t.Fatalf("validity by replicate (-want +got):\n%s", diff)
	}
	if errs := strings.Join(b.Replicates[0].Quality.Errors, "; "); !strings.Contains(errs, `verdict \"feasible\" with probability 0.22 and threshold 0.5`) &&
		!strings.Contains(errs, `verdict "feasible" with probability 0.22 and threshold 0.5`) {
		t.Errorf("the invalid replicate's errors: %s", errs)
	}
	if dec.Votes != "2 of 2 infeasible" || !strings.Contains(dec.Justification, "1 judge(s) produced invalid output") {
		t.Errorf("decision %+v", dec)
	}
}

// judged is a judgement as the agent's result holds it.
type judged map[string]any

// with returns a copy of j with k set to v.
func (j judged) with(k string, v any) judged {
	m := judged{}
	for a, b := range j {
		m[a] = b
	}
	m[k] = v
	return m
}

func TestCheck(t *testing.T) {
	p := feasibility.Proposal{Risks: []string{"weather"}}
	ok := map[string]any{"verdict": "infeasible", "probability": 0.4, "probability_budget": 0.9, "probability_deadline": 0.5,
		"binding_constraint": "deadline", "risk_drivers": []any{"weather"}, "expected_cost_k": 10.0, "p80_cost_k": 12.0, "expected_weeks": 5.0, "p80_weeks": 6.0}
	with := func(k string, v any) judged { return judged(ok).with(k, v) }
	tests := []struct {
		name string
		j    judged
		want string
	}{
		{"consistent", ok, ""},
		{"verdict against the probability", with("verdict", "feasible"), `verdict "feasible" with probability 0.4 and threshold 0.5`},
		{"joint above a single one", with("probability", 0.6), "exceeds that of meeting one"},
		{"binding constraint", with("binding_constraint", "budget"), `binding_constraint "budget", but budget 0.9 and deadline 0.5 make it "deadline"`},
		{"binding constraint without a broken limit", with("probability_deadline", 0.85).with("binding_constraint", "deadline"), `but budget 0.9 and deadline 0.85 make it "none"`},
		{"either binding constraint when tied", with("probability_budget", 0.5), ""},
		{"either binding constraint when tied, budget", with("probability_budget", 0.5).with("binding_constraint", "budget"), ""},
		// The prompt asks for the likelier limit "when either is broken with probability 0.2 or
		// more": a limit met with probability exactly 0.8 is on that boundary, where a judge
		// following the prompt names it and the Monte Carlo judge says none; neither contradicts
		// itself.
		{"binding constraint broken in exactly 20%, as the prompt says", with("probability_deadline", 0.8), ""},
		{"no binding constraint at exactly 20%, as the forecaster says", with("probability_deadline", 0.8).with("binding_constraint", "none"), ""},
		{"the other limit at exactly 20%", with("probability_deadline", 0.8).with("binding_constraint", "budget"), `binding_constraint "budget", but budget 0.9 and deadline 0.8`},
		{"unknown risk", with("risk_drivers", []any{"weather", "scope_creep"}), `risk driver "scope_creep" is not among the proposal's risks [weather]`},
		{"p80 below expected", with("p80_weeks", 4.0), "a p80 figure is below the expected one"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := strings.Join(llmjudge.Check(tt.j, p, 0.5), "; ")
			if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
				t.Errorf("Check = %q, want %q", got, tt.want)
			}
		})
	}
}
