package llmagent

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"text/template"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/agent/internal/wire"
	"github.com/troupehq/troupe/internal/schema"
)

// Defaults for Config's zero values. Zero never means unlimited.
const (
	DefaultBaseURL       = "https://api.openai.com/v1/"
	DefaultAPIKeyEnv     = "OPENAI_API_KEY"
	DefaultMaxTokens     = 4096
	DefaultMaxTotal      = 200_000
	DefaultMaxTurns      = 8
	DefaultMaxReasks     = 2
	DefaultMaxRetries    = 2
	DefaultMaxRetryDelay = 30 * time.Second
	DefaultCallTimeout   = 2 * time.Minute
	DefaultMaxResponse   = 32 << 20
	DefaultMaxToolResult = 1 << 20
	DefaultPrompt        = "{{if not .HandoffInQuery}}{{with .Handoff}}{{.}}\n\n{{end}}{{end}}{{.Query}}"
)

// Price is what a model costs, in dollars per million tokens.
type Price struct {
	PromptPerMillion     float64 `json:"prompt_per_million"`
	CompletionPerMillion float64 `json:"completion_per_million"`
}

// Cost returns the price of a call that used prompt and completion tokens.
func (p Price) Cost(prompt, completion int64) float64 {
	return (float64(prompt)*p.PromptPerMillion + float64(completion)*p.CompletionPerMillion) / 1e6
}

// Config configures an LLM agent. The zero value of every field except Model is safe and
// bounded; New validates the whole and reports every problem.
type Config struct {
	// Name keys the agent's optimized prompt in Dispatch.OptimizedPrompts (seed 000); empty
	// means the dispatch's target agent.
	Name string

	// BaseURL of an OpenAI-compatible API ("http://127.0.0.1:11434/v1/" for Ollama); empty
	// means DefaultBaseURL. An error status names it, a password in it and the values of
	// query parameters that look like keys masked; those values are scrubbed, as the API key
	// is, from what errors quote of the server's answers.
	BaseURL string
	// APIKeyEnv is the NAME of the environment variable holding the API key, read on every
	// call so a rotated key is picked up; empty means OPENAI_API_KEY. The key itself is never
	// configured, and never appears in events, results or errors. An unset variable sends no
	// Authorization header (local servers need none).
	APIKeyEnv string
	// Model to ask for; required.
	Model string
	// Temperature and Seed are sent when set. A dispatch's user_context["seed"] (an integer,
	// as evidence bundles set per replicate) overrides Seed for that dispatch.
	Temperature *float64
	Seed        *int64
	// MaxTokens bounds each completion (max_completion_tokens); 0 means DefaultMaxTokens.
	MaxTokens int64
	// MaxTotalTokens bounds the tokens of one dispatch, summed over its completions (tool
	// round trips and re-asks included): once reached, the dispatch stops with code BUDGET.
	// 0 means DefaultMaxTotal. The run's own token budget (troupe.Budget.MaxTokens) is the
	// engine's to keep, between dispatches.
	MaxTotalTokens int64

	// System and Prompt are text/template templates rendering the system and user messages.
	// In scope: .Dispatch, .Query, .ParsedQuery, .Handoff (the upstream handoffs rendered as
	// seed 002's context block), .Upstream, .OptimizedPrompt (Dispatch.OptimizedPrompts[Name]),
	// session state ({{.State "topic"}}) and the function json. An empty System
	// means the optimized prompt alone; an empty Prompt means DefaultPrompt: the handoff blocks
	// (unless the query already carries them, as in a flow.Sequential) and the query.
	System string
	Prompt string

	// Schema, when set, is the JSON Schema the answer must satisfy: it is sent as
	// response_format json_schema (SchemaName, strict) and every answer is validated on
	// arrival. An invalid answer is asked again with the validation errors, at most MaxReasks
	// times (0 means DefaultMaxReasks; negative means never); then the dispatch fails with
	// the errors.
	Schema     json.RawMessage
	SchemaName string
	MaxReasks  int

	// Tools the model may call. A tool's error goes back to the model as the tool's answer,
	// except an error with a Fatal() bool method that returns true (the cycle and depth
	// guards of agents-as-tools), which fails the dispatch. The agent's Setup sets up the
	// tools that implement troupe.Setupper, in order, tearing down those already set up if
	// one fails; its Teardown tears down those that implement troupe.Teardowner, the last
	// first, and joins the errors. A tool shared by two agents is set up by each.
	Tools []troupe.Tool
	// MaxTurns bounds the completions of one dispatch (each tool round trip is one);
	// 0 means DefaultMaxTurns.
	MaxTurns int
	// MaxToolResultBytes bounds what one tool call's result may give the model; 0 means
	// DefaultMaxToolResult. A longer result is not sent: the model is told its size instead,
	// as a tool error, and a "tool_result_too_large" progress event records it.
	MaxToolResultBytes int64

	// Stream asks for a streamed completion and emits each piece of text as an
	// agent_progress event of kind "token" (data: {"text": ...}).
	Stream bool

	// Prices maps a model to its price; a call's cost is counted from its usage and the
	// model the server says it used (or Model). A model without a price costs nothing.
	Prices map[string]Price

	// MaxRetries bounds the retries of a call answered with 408, 409, 429 or 5xx or lost to a
	// connection error; 0 means DefaultMaxRetries, negative means none. Retry-After is
	// honoured up to MaxRetryDelay (0 means DefaultMaxRetryDelay); a server that asks for a
	// longer wait is not retried.
	MaxRetries    int
	MaxRetryDelay time.Duration
	// CallTimeout bounds each HTTP attempt (for a stream, until its last chunk); 0 means
	// DefaultCallTimeout. An attempt that times out fails the dispatch with code TIMEOUT,
	// recoverable: retrying it is the error policy's call, not the transport's. Every refused
	// attempt is reported as an "http_error" progress event (status, Retry-After).
	CallTimeout time.Duration

	// MaxResponseBytes bounds the body of each response, a stream's whole or an error's;
	// 0 means DefaultMaxResponse. An answer over it fails the dispatch with code
	// INVALID_OUTPUT; an error status over it is reported by its status.
	MaxResponseBytes int64

	// HTTPClient sends the requests; nil means a client over http.DefaultTransport. Plug a
	// recording or replaying transport here.
	HTTPClient *http.Client
}

// compiled is a validated Config, immutable and safe for concurrent use.
type compiled struct {
	cfg      Config
	endpoint string   // BaseURL as errors quote it: a password and key-like query values masked
	masked   []string // those values, scrubbed from what errors quote
	system   *template.Template
	prompt   *template.Template
	schema   *schema.Schema
	rawSch   map[string]any
	tools    map[string]troupe.Tool
	toolDef  []troupe.ToolInfo
	held     []troupe.Tool // the tools with Setup or Teardown, in order
	base     openai.ChatCompletionNewParams
}

// ConfigError is every problem New finds with a Config, each naming its field, so that a
// program building the Config from a file can report each at its place there. Its message is
// every problem, field first, on one line. New returns it unshared; it is safe for concurrent
// reads.
type ConfigError struct {
	Problems []ConfigProblem
}

// ConfigProblem is one problem of a Config: Field is the field as Config's comments and the
// workflow file name it ("system", "prompt", "base_url", "max_tokens", "prices[m]", "schema",
// "tools[2]"), and Err what is wrong with it.
type ConfigProblem struct {
	Field string
	Err   error
}

// Error lists the problems, as "llmagent: config: field: problem; field: problem".
func (e *ConfigError) Error() string {
	var b strings.Builder
	b.WriteString("llmagent: config: ")
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(p.Field + ": " + p.Err.Error())
	}
	return b.String()
}

// Unwrap returns each problem's error.
func (e *ConfigError) Unwrap() []error {
	out := make([]error, len(e.Problems))
	for i, p := range e.Problems {
		out[i] = p.Err
	}
	return out
}

func compile(cfg Config) (*compiled, error) {
	var problems []ConfigProblem
	bad := func(field, format string, args ...any) {
		problems = append(problems, ConfigProblem{Field: field, Err: fmt.Errorf(format, args...)})
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	if !strings.HasSuffix(cfg.BaseURL, "/") {
		cfg.BaseURL += "/"
	}
	endpoint, masked, err := shownURL(cfg.BaseURL)
	if err != nil {
		bad("base_url", "%w", err)
	} else if !strings.HasPrefix(cfg.BaseURL, "http://") && !strings.HasPrefix(cfg.BaseURL, "https://") {
		bad("base_url", "%q is not an http or https URL", endpoint)
	} else if u, _ := url.Parse(cfg.BaseURL); u.Host == "" {
		bad("base_url", "%q has no host", endpoint)
	}
	if cfg.APIKeyEnv == "" {
		cfg.APIKeyEnv = DefaultAPIKeyEnv
	}
	if cfg.Model == "" {
		bad("model", "required")
	}
	if t := cfg.Temperature; t != nil && !(*t >= 0 && *t <= 2) {
		bad("temperature", "%v is outside [0, 2]", *t)
	}
	positive(&cfg.MaxTokens, DefaultMaxTokens, "max_tokens", bad)
	positive(&cfg.MaxTotalTokens, DefaultMaxTotal, "max_total_tokens", bad)
	positive(&cfg.MaxTurns, DefaultMaxTurns, "max_turns", bad)
	positive(&cfg.MaxRetryDelay, DefaultMaxRetryDelay, "max_retry_delay", bad)
	positive(&cfg.CallTimeout, DefaultCallTimeout, "call_timeout", bad)
	positive(&cfg.MaxResponseBytes, DefaultMaxResponse, "max_response_bytes", bad)
	positive(&cfg.MaxToolResultBytes, DefaultMaxToolResult, "max_tool_result_bytes", bad)
	countOrNone(&cfg.MaxReasks, DefaultMaxReasks)
	countOrNone(&cfg.MaxRetries, DefaultMaxRetries)
	for _, m := range slices.Sorted(maps.Keys(cfg.Prices)) {
		// A NaN price would make every cost NaN, which no budget check ever finds spent.
		if p := cfg.Prices[m]; !price(p.PromptPerMillion) || !price(p.CompletionPerMillion) {
			bad("prices["+m+"]", "%v and %v are not both finite and ≥ 0", p.PromptPerMillion, p.CompletionPerMillion)
		}
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{}
	}
	if cfg.Prompt == "" {
		cfg.Prompt = DefaultPrompt
	}
	c := &compiled{cfg: cfg, endpoint: endpoint, masked: masked, tools: make(map[string]troupe.Tool, len(cfg.Tools))}
	if c.system, err = template.New("system").Funcs(templateFuncs).Option("missingkey=error").Parse(cfg.System); err != nil {
		bad("system", "%w", err)
	}
	if c.prompt, err = template.New("prompt").Funcs(templateFuncs).Option("missingkey=error").Parse(cfg.Prompt); err != nil {
		bad("prompt", "%w", err)
	}
	if len(cfg.Schema) > 0 {
		if cfg.SchemaName == "" {
			cfg.SchemaName = "answer"
			c.cfg.SchemaName = "answer"
		}
		c.schema, c.rawSch, err = compileSchema(cfg.Schema)
		if err != nil {
			bad("schema", "%w", err)
		}
	}
	for i, t := range cfg.Tools {
		if t == nil {
			bad(fmt.Sprintf("tools[%d]", i), "nil")
			continue
		}
		info := t.Info()
		switch {
		case info.Name == "":
			bad(fmt.Sprintf("tools[%d]", i), "empty name")
		case c.tools[info.Name] != nil:
			bad(fmt.Sprintf("tools[%d]", i), "%q offered twice", info.Name)
		default:
			c.tools[info.Name] = t
			c.toolDef = append(c.toolDef, info)
		}
	}
	if len(problems) > 0 {
		return nil, &ConfigError{Problems: problems}
	}
	c.base = c.params()
	c.held = held(cfg.Tools)
	return c, nil
}

// shownURL returns raw as errors quote it, and the values it masks (wire.ShownURL); a URL that
// does not parse is refused without quoting it.
func shownURL(raw string) (string, []string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		// Not a *url.Error itself, which quotes the URL, and a password in it.
		if ue := (*url.Error)(nil); errors.As(err, &ue) {
			err = ue.Err
		}
		return "", nil, fmt.Errorf("not a URL: %w", err)
	}
	shown, secrets := wire.ShownURL(u)
	return shown, secrets, nil
}

// positive sets a zero bound to its default and reports a negative one.
func positive[T int | int64 | time.Duration](v *T, def T, field string, bad func(string, string, ...any)) {
	switch {
	case *v == 0:
		*v = def
	case *v < 0:
		bad(field, "%v is negative", *v)
	}
}

// price reports whether p is a price: finite and not negative.
func price(p float64) bool { return p >= 0 && !math.IsInf(p, 1) }

// countOrNone sets a zero count to its default and a negative one to none.
func countOrNone(v *int, def int) {
	switch {
	case *v == 0:
		*v = def
	case *v < 0:
		*v = 0
	}
}

func compileSchema(raw json.RawMessage) (*schema.Schema, map[string]any, error) {
	var asMap map[string]any
	if err := json.Unmarshal(raw, &asMap); err != nil {
		return nil, nil, fmt.Errorf("not a JSON object: %w", err)
	}
	sch, err := schema.Compile("llmagent answer", raw)
	if err != nil {
		return nil, nil, err
	}
	return sch, asMap, nil
}

var templateFuncs = template.FuncMap{
	"json": func(v any) (string, error) {
		b, err := json.Marshal(v)
		return string(b), err
	},
}
