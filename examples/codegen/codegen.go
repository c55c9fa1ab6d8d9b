package codegen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/agent/cassette"
	"github.com/troupehq/troupe/agent/llmagent"
	"github.com/troupehq/troupe/flow"
)

// DefaultModel is the model asked for when neither Config.Model nor OPENAI_MODEL names one.
const DefaultModel = "gpt-4o-mini"

// Agent names: the members of the review sequence and of the vote.
const (
	Analyzer  = "analyzer"
	Generator = "generator"
	Reviewer  = "reviewer"
)

// Implementers are the three members of the vote, in agent order.
var Implementers = [3]string{"implementer_a", "implementer_b", "implementer_c"}

// Config says which endpoint and model the agents ask. The zero value asks DefaultModel at
// llmagent.DefaultBaseURL with the key in OPENAI_API_KEY; Env fills it from the environment.
type Config struct {
	// BaseURL of an OpenAI-compatible API; "" means llmagent.DefaultBaseURL.
	BaseURL string
	// Model to ask for; "" means DefaultModel.
	Model string
	// APIKeyEnv names the environment variable holding the key; "" means OPENAI_API_KEY.
	APIKeyEnv string
	// Temperature is sent when set.
	Temperature *float64
	// Seeds are the implementers' seeds, in Implementers' order; nil means 1, 2, 3. Review's
	// agents use the first.
	Seeds []int64
	// Prices per model, for the cost in the results (see llmagent.Price).
	Prices map[string]llmagent.Price
	// CallTimeout bounds each HTTP attempt; 0 means llmagent.DefaultCallTimeout.
	CallTimeout time.Duration
	// HTTPClient sends the requests; nil means http.DefaultTransport. A cassette's client
	// (OpenCassette) records or replays here.
	HTTPClient *http.Client
}

// Env returns the configuration the environment names: the endpoint from OPENAI_BASE_URL and
// the model from OPENAI_MODEL (DefaultModel when unset); the key stays in OPENAI_API_KEY.
// getenv is os.Getenv, or a fake in tests.
func Env(getenv func(string) string) Config {
	return Config{BaseURL: getenv("OPENAI_BASE_URL"), Model: getenv("OPENAI_MODEL")}
}

func (c Config) seed(i int) int64 {
	if i < len(c.Seeds) {
		return c.Seeds[i]
	}
	return int64(i + 1)
}

// agent builds one LLM agent of the example with cfg's endpoint.
func (c Config) agent(name, system, prompt string, schema json.RawMessage, seed int64) (*llmagent.Agent, error) {
	model := c.Model
	if model == "" {
		model = DefaultModel
	}
	a, err := llmagent.New(llmagent.Config{
		Name: name, BaseURL: c.BaseURL, APIKeyEnv: c.APIKeyEnv, Model: model,
		Temperature: c.Temperature, Seed: &seed,
		System: system, Prompt: prompt, Schema: schema, SchemaName: name,
		Prices: c.Prices, CallTimeout: c.CallTimeout, HTTPClient: c.HTTPClient,
	})
	if err != nil {
		return nil, fmt.Errorf("codegen: %s: %w", name, err)
	}
	return a, nil
}

const (
	analyzerSystem = `You are the analyzer, the first of three agents (analyzer → generator → reviewer) that turn a programming task into reviewed Go code.
Read the task and write the specification a Go developer needs to implement it as one exported Go function: its name, its exact signature, the requirements it must meet, and the edge cases it must handle (empty or nil input, negative numbers, Unicode, overflow — whichever apply).
Do not write the implementation. summary: one sentence saying what the function does.`

	generatorSystem = `You are the generator, the second of three agents (analyzer → generator → reviewer).
The analyzer's specification is in the context block before the task: its key outputs give the function name, the signature, the requirements and the edge cases.
Write a complete Go source file — package clause, imports, and the function with exactly the specified signature, meeting every requirement and handling every edge case — using only the standard library.
code: the file's source only, without a Markdown fence or explanation. summary: one sentence on how the code works.`

	reviewerSystem = `You are the reviewer, the last of three agents (analyzer → generator → reviewer).
The context block before the task is the generator's handoff; the analyzer's specification and the generator's code follow the task.
Check the code against every requirement and edge case of the specification: correctness, edge cases, whether it compiles, idiomatic Go.
verdict: "approve" when the code is correct as written, else "request_changes". issues: one entry per concrete problem, naming the line or construct; empty when approving. summary: one sentence with your conclusion.`

	reviewerPrompt = `{{.Query}}

Specification (from the analyzer):
{{range .Upstream}}{{if eq .Agent "analyzer"}}{{json .Result}}{{end}}{{end}}

Code (from the generator):
{{range .Upstream}}{{if eq .Agent "generator"}}{{index .Result "code"}}{{end}}{{end}}`

	implementerSystem = `You are {{.Dispatch.TargetAgent}}, one of three programmers implementing the same task independently in Go. The three implementations are compared after normalization (comments, layout and local names do not count) and the majority wins, so write the most straightforward correct implementation: one exported function, standard library only.
code: a complete Go source file — package clause, imports, the function — without a Markdown fence or explanation. summary: one sentence on the approach.`
)

var (
	analyzerSchema = json.RawMessage(`{"type":"object","additionalProperties":false,
 "required":["summary","function_name","signature","requirements","edge_cases"],
 "properties":{"summary":{"type":"string"},"function_name":{"type":"string"},"signature":{"type":"string"},
  "requirements":{"type":"array","items":{"type":"string"}},"edge_cases":{"type":"array","items":{"type":"string"}}}}`)
	codeSchema = json.RawMessage(`{"type":"object","additionalProperties":false,"required":["summary","code"],
 "properties":{"summary":{"type":"string"},"code":{"type":"string","minLength":1}}}`)
	reviewSchema = json.RawMessage(`{"type":"object","additionalProperties":false,"required":["summary","verdict","issues"],
 "properties":{"summary":{"type":"string"},"verdict":{"enum":["approve","request_changes"]},"issues":{"type":"array","items":{"type":"string"}}}}`)
)

// goCode wraps an agent that answers {"code": …}: an answer whose code does not parse as Go
// fails the dispatch with INVALID_OUTPUT (saying where), never passing on as code.
func goCode(a troupe.Agent) troupe.Agent {
	return troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		res, err := a.Run(ctx, d)
		if err != nil {
			return res, err
		}
		code, _ := res.AgentResult["code"].(string)
		if _, err := Normalize(code); err != nil {
			return res, &troupe.AgentError{Code: troupe.CodeInvalidOutput, Message: err.Error(), Recoverable: true, FallbackAction: "ask again"}
		}
		return res, nil
	})
}

// ReviewResult is what Review did.
type ReviewResult struct {
	Analysis map[string]any // the analyzer's specification (its agent_result)
	Code     string         // the generator's code
	Verdict  string         // the reviewer's: approve | request_changes
	Issues   []string       // the reviewer's issues
	Summary  string         // the reviewer's conclusion
	// Results and Handoffs are the sequence's, one per agent that ran (flow.SequenceOutcome).
	Results  []*troupe.Result
	Handoffs []flow.Handoff
	// TokensUsed and CostDollars are summed over every completion of every agent.
	TokensUsed  int64
	CostDollars float64
}

// Review runs analyzer → generator → reviewer on task as a flow.Sequential (seed 002's
// executeSequential): each agent's handoff is injected before the task in the next one's
// prompt, and the reviewer also sees the specification and the code. It stops at the first
// failure (a generator whose code does not parse fails with INVALID_OUTPUT) and returns what
// ran with the error.
func Review(ctx context.Context, cfg Config, task string) (*ReviewResult, error) {
	if strings.TrimSpace(task) == "" {
		return nil, errors.New("codegen: review: the task is empty")
	}
	an, err := cfg.agent(Analyzer, analyzerSystem, "{{.Query}}", analyzerSchema, cfg.seed(0))
	if err != nil {
		return nil, err
	}
	gen, err := cfg.agent(Generator, generatorSystem, "{{.Query}}", codeSchema, cfg.seed(0))
	if err != nil {
		return nil, err
	}
	rev, err := cfg.agent(Reviewer, reviewerSystem, reviewerPrompt, reviewSchema, cfg.seed(0))
	if err != nil {
		return nil, err
	}
	seq := flow.Sequential(flow.SequentialConfig{},
		flow.Named(Analyzer, an), flow.Named(Generator, goCode(gen)), flow.Named(Reviewer, rev))
	d := troupe.NewDispatch()
	d.TargetAgent, d.Query = "codegen_review", task
	out, err := seq.Execute(ctx, d)
	if out == nil {
		return nil, fmt.Errorf("codegen: review: %w", err)
	}
	r := &ReviewResult{Results: out.Results, Handoffs: out.Handoffs}
	for _, res := range out.Results {
		r.TokensUsed, r.CostDollars = r.TokensUsed+deref(res.TokensUsed), r.CostDollars+deref(res.CostDollars)
		if res.Status != troupe.StatusCompleted {
			continue
		}
		switch res.AgentName {
		case Analyzer:
			r.Analysis = res.AgentResult
		case Generator:
			r.Code, _ = res.AgentResult["code"].(string)
		case Reviewer:
			r.Verdict, _ = res.AgentResult["verdict"].(string)
			r.Summary, _ = res.AgentResult["summary"].(string)
			for _, s := range asSlice(res.AgentResult["issues"]) {
				r.Issues = append(r.Issues, fmt.Sprint(s))
			}
		}
	}
	if err != nil {
		return r, fmt.Errorf("codegen: review: %w", err)
	}
	return r, nil
}

// VoteResult is what Vote did.
type VoteResult struct {
	// Winner is the winning implementation as its first voter wrote it; "" on a tie.
	Winner string
	// Canonical is the winning implementation's Normalize form; "" on a tie.
	Canonical string
	// Tally is the flow's vote, keyed by canonical form.
	Tally *flow.Vote
	// Code holds each implementer's code as written, Normal its canonical form; an
	// implementer that failed is in Failed instead, with its error.
	Code, Normal, Failed map[string]string
	// Results are the implementers' results in Implementers' order (nil when one never ran).
	Results []*troupe.Result
	// TokensUsed and CostDollars are summed over the implementers.
	TokensUsed  int64
	CostDollars float64
}

// Vote runs the three Implementers on task at once (seed 002's executeParallel with
// MajorityVote) and votes on their code's Normalize form. Implementations that differ only in
// layout, comments or local names count as one answer. An implementer whose code does not
// parse fails (INVALID_OUTPUT) and does not vote. Without a majority the error is a
// *flow.TieError (code VOTE_TIE), returned with the result; so is a vote in which no
// implementer succeeded.
func Vote(ctx context.Context, cfg Config, task string) (*VoteResult, error) {
	if strings.TrimSpace(task) == "" {
		return nil, errors.New("codegen: vote: the task is empty")
	}
	var members []*troupe.AgentSpec
	for i, name := range Implementers {
		a, err := cfg.agent(name, implementerSystem, "{{.Query}}", codeSchema, cfg.seed(i))
		if err != nil {
			return nil, err
		}
		members = append(members, flow.Named(name, goCode(a)))
	}
	group := flow.Parallel(flow.ParallelConfig{Strategy: flow.MajorityVote, Answer: canonical}, members...)
	d := troupe.NewDispatch()
	d.TargetAgent, d.Query = "codegen_vote", task
	out, err := group.Execute(ctx, d)
	if out == nil {
		return nil, fmt.Errorf("codegen: vote: %w", err)
	}
	v := &VoteResult{Tally: out.Vote, Results: out.Results, Code: map[string]string{}, Normal: map[string]string{}, Failed: map[string]string{}}
	for i, res := range out.Results {
		name := Implementers[i]
		if res == nil {
			v.Failed[name] = "did not run"
			continue
		}
		v.TokensUsed, v.CostDollars = v.TokensUsed+deref(res.TokensUsed), v.CostDollars+deref(res.CostDollars)
		if res.Status != troupe.StatusCompleted {
			msg := string(res.Status)
			if len(res.Errors) > 0 {
				msg = res.Errors[0].Code + ": " + res.Errors[0].Message
			}
			v.Failed[name] = msg
			continue
		}
		v.Code[name], _ = res.AgentResult["code"].(string)
		v.Normal[name] = canonical(res)
	}
	if out.Vote != nil && !out.Vote.Tie && out.Vote.Answer != "" {
		v.Canonical = out.Vote.Answer
		if voters := out.Vote.Voters[out.Vote.Answer]; len(voters) > 0 {
			v.Winner = v.Code[voters[0]]
		}
	}
	if err != nil {
		return v, fmt.Errorf("codegen: vote: %w", err)
	}
	return v, nil
}

// canonical is the vote's answer extractor: the Normalize form of a result's code. goCode has
// already failed every result whose code does not parse, so an error here cannot reach a
// vote; it is kept distinct all the same.
func canonical(res *troupe.Result) string {
	code, _ := res.AgentResult["code"].(string)
	c, err := Normalize(code)
	if err != nil {
		return "invalid (" + res.AgentName + "): " + err.Error()
	}
	return c
}

// handoffTime matches the timestamp in a handoff block ("completed at 2026-…Z"), which is the
// wall clock's and so differs between a recording and its replay.
var handoffTime = regexp.MustCompile(`completed at \d{4}-\d\d-\d\dT[0-9:.]+Z`)

// OpenCassette opens a cassette (package agent/cassette) for the example's HTTP exchanges:
// its Client goes in Config.HTTPClient. Besides the API key it redacts the handoff
// timestamps in prompts, so a recording replays whenever it is run.
func OpenCassette(path string, mode cassette.Mode) (*cassette.Cassette, error) {
	c, err := cassette.New(path, cassette.Config{Mode: mode, RedactPatterns: []*regexp.Regexp{handoffTime}})
	if err != nil {
		return nil, fmt.Errorf("codegen: %w", err)
	}
	return c, nil
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}
