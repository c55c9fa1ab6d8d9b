package llmagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"
	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/agent/internal/wire"
	"github.com/troupehq/troupe/flow"
	"github.com/troupehq/troupe/internal/schema"
)

// Agent is an LLM agent: a troupe.Agent whose Run asks a chat completion model. It is safe for
// concurrent use. The zero value is not usable; call New.
type Agent struct {
	c   *compiled
	svc openai.ChatCompletionService
}

var _ troupe.Agent = (*Agent)(nil)

// New validates cfg and returns the agent. Every problem of cfg is reported in one error, a
// *ConfigError.
func New(cfg Config) (*Agent, error) {
	c, err := compile(cfg)
	if err != nil {
		return nil, err
	}
	// NewChatCompletionService, unlike openai.NewClient, reads nothing from the environment:
	// the base URL and key come from the Config alone.
	svc := openai.NewChatCompletionService(
		option.WithBaseURL(c.cfg.BaseURL),
		option.WithHTTPClient(c.cfg.HTTPClient),
		option.WithMaxRetries(c.cfg.MaxRetries),
		option.WithMaxRetryDelay(c.cfg.MaxRetryDelay),
		option.WithRequestTimeout(c.cfg.CallTimeout),
		option.WithMiddleware(limitBody(c.cfg.MaxResponseBytes)),
	)
	return &Agent{c: c, svc: svc}, nil
}

// Model returns the configured model.
func (a *Agent) Model() string { return a.c.cfg.Model }

// usage accumulates what a dispatch spent: its own completions, each counted once, and what
// agents called through its tools spent (tools, which flow.AsTool adds to).
type usage struct {
	prompt, completion int64
	cost               float64
	model              string
	warnings           []string // what the server reported of usage that could not be counted
	tools              *flow.Usage
}

// tokens is the dispatch's total: its completions' tokens and its tools'.
func (u *usage) tokens() int64 { return u.prompt + u.completion + u.tools.Tokens() }

// dollars is the dispatch's total cost: its completions' and its tools'.
func (u *usage) dollars() float64 { return u.cost + u.tools.Cost() }

// Run renders the prompt, converses with the model (tool calls, re-asks) and returns its
// answer as the result: a structured answer as agent_result, a text answer as
// {"text": ...}. Token usage, the model and the cost are in the result, also when Run fails.
func (a *Agent) Run(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
	c := a.c
	key := os.Getenv(c.cfg.APIKeyEnv)
	if why := wire.BadHeaderValue(key); why != "" {
		// It cannot be sent (a trailing newline, as a secret mounted from a file has): every
		// call would fail the same way, retried in vain. The error never quotes the key.
		return nil, &troupe.AgentError{Code: troupe.CodeInvalidInput,
			Message: fmt.Sprintf("llmagent: %s: the API key in the environment variable %s cannot be sent as a header: %s", c.cfg.Model, c.cfg.APIKeyEnv, why)}
	}
	// A server may echo the key back, in any spelling (a 401 quoting it): it is scrubbed from
	// every error the calls return, as are the base URL's password and key-like query values.
	secrets := wire.NewSecrets(append([]string{key}, c.masked...)...)
	data := c.promptData(d)
	system, err := render(c.system, data)
	if err != nil {
		return nil, &troupe.AgentError{Code: troupe.CodeInvalidInput, Message: err.Error()}
	}
	if system == "" {
		system = data.OptimizedPrompt
	}
	user, err := render(c.prompt, data)
	if err != nil {
		return nil, &troupe.AgentError{Code: troupe.CodeInvalidInput, Message: err.Error()}
	}

	msgs := make([]openai.ChatCompletionMessageParamUnion, 0, 4)
	if system != "" {
		msgs = append(msgs, openai.SystemMessage(system))
	}
	msgs = append(msgs, openai.UserMessage(user))
	params := c.base // a copy; only its Messages and Seed change, and the SDK does not modify the rest
	if s, ok := dispatchSeed(d); ok {
		params.Seed = param.NewOpt(s)
	}
	opts := []option.RequestOption{option.WithAPIKey(key), option.WithMiddleware(attempts(d))}
	if key == "" {
		opts[0] = option.WithHeaderDel("authorization")
	}

	var u usage
	// Agents called through the tools add what they spend to u.tools (flow.WithUsage); it is
	// part of this dispatch's result and budget.
	ctx, u.tools = flow.WithUsage(ctx)
	reasks := 0
	for turn := 1; ; turn++ {
		if turn > c.cfg.MaxTurns {
			return u.result(c, nil), &troupe.AgentError{Code: troupe.CodeAgentError,
				Message: fmt.Sprintf("llmagent: %s: no final answer after %d turns (max_turns)", c.cfg.Model, c.cfg.MaxTurns)}
		}
		if err := u.checkBudget(c, d); err != nil {
			return u.result(c, nil), err
		}
		params.Messages = msgs
		t, err := a.complete(ctx, d, params, opts, secrets)
		if t != nil {
			u.add(c, t)
		}
		if err != nil {
			return u.result(c, nil), secrets.Error(err, nil)
		}
		if len(t.toolCalls) > 0 {
			msgs = append(msgs, t.assistant())
			for _, tc := range t.toolCalls {
				out, err := a.callTool(ctx, d, tc)
				if err != nil {
					return u.result(c, nil), secrets.Error(err, nil)
				}
				msgs = append(msgs, openai.ToolMessage(out, tc.id))
			}
			continue
		}
		if t.refusal != "" {
			return u.result(c, nil), &troupe.AgentError{Code: troupe.CodeAgentError,
				Message: "llmagent: " + c.cfg.Model + " refused: " + t.refusal}
		}
		out, verr := c.parse(t.content)
		if verr == nil {
			// The answer is complete: what it cost is reported, and the engine's budget takes it
			// from here.
			res := u.result(c, out)
			if u.prompt+u.completion == 0 {
				// Budgets count on usage: say so when a server reports none (some omit it
				// from streams).
				res.Warnings = append(res.Warnings, "llmagent: "+c.cfg.Model+": the server reported no token usage; tokens_used and cost_dollars are 0")
			}
			if c.cfg.Stream && t.finishReason == "" {
				// A stream cut short ends as cleanly as a whole one; only a finish_reason says
				// the model was done.
				res.Warnings = append(res.Warnings, fmt.Sprintf("llmagent: %s: the stream ended without a finish_reason; the answer may be incomplete", c.cfg.Model))
			}
			if t.finishReason == "length" {
				// The answer parsed, but the model was stopped, not done: say so rather than
				// pass a cut-short text off as whole.
				limit := "the server's"
				if c.cfg.MaxTokens > 0 {
					limit = fmt.Sprintf("max_tokens %d", c.cfg.MaxTokens)
				}
				res.Warnings = append(res.Warnings, fmt.Sprintf("llmagent: %s: the answer stopped at the token limit (finish_reason length, %s); it may be cut short", c.cfg.Model, limit))
			}
			if t.finishReason == "content_filter" {
				// The server's content filter stopped or changed the answer: it parsed, but
				// is not all the model would have said.
				res.Warnings = append(res.Warnings, fmt.Sprintf("llmagent: %s: the answer was stopped by the content filter (finish_reason content_filter); it may be incomplete or altered", c.cfg.Model))
			}
			return res, nil
		}
		if reasks >= c.cfg.MaxReasks || turn >= c.cfg.MaxTurns {
			// No re-ask left, or no turn to ask it in: the answer is invalid, and the dispatch
			// fails saying why, not that no answer came.
			when := fmt.Sprintf("after %d re-asks", reasks)
			if reasks < c.cfg.MaxReasks {
				when = fmt.Sprintf("on turn %d of %d (max_turns), with none left to ask again", turn, c.cfg.MaxTurns)
			}
			return u.result(c, nil), &troupe.AgentError{Code: troupe.CodeInvalidOutput, Details: schema.Details(verr),
				Message: fmt.Sprintf("llmagent: %s: answer invalid %s: %v (last answer: %q)", c.cfg.Model, when, verr, cut(t.content, 200))}
		}
		reasks++
		d.Progress("reask", map[string]any{"attempt": reasks, "errors": verr.Error()})
		msgs = append(msgs, t.assistant(), openai.UserMessage(c.reask(verr)))
	}
}

// reask is the message asking again after an invalid answer.
func (c *compiled) reask(verr error) string {
	if c.schema == nil {
		return "Your answer was empty. Answer the request above."
	}
	return "Your answer does not satisfy the required JSON Schema:\n" + verr.Error() +
		"\nAnswer again with a single JSON value that satisfies the schema, and nothing else."
}

// params builds the request every dispatch starts from, once, at New.
func (c *compiled) params() openai.ChatCompletionNewParams {
	p := openai.ChatCompletionNewParams{
		Model:               shared.ChatModel(c.cfg.Model),
		MaxCompletionTokens: param.NewOpt(c.cfg.MaxTokens),
	}
	if t := c.cfg.Temperature; t != nil {
		p.Temperature = param.NewOpt(*t)
	}
	if s := c.cfg.Seed; s != nil {
		p.Seed = param.NewOpt(*s)
	}
	if c.schema != nil {
		p.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{
			OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{
				Name: c.cfg.SchemaName, Strict: param.NewOpt(true), Schema: c.rawSch,
			}},
		}
	}
	for _, info := range c.toolDef {
		fn := shared.FunctionDefinitionParam{Name: info.Name}
		if info.Description != "" {
			fn.Description = param.NewOpt(info.Description)
		}
		var ps shared.FunctionParameters
		if len(info.InputSchema) > 0 && json.Unmarshal(info.InputSchema, &ps) == nil {
			fn.Parameters = ps
		} else {
			fn.Parameters = shared.FunctionParameters{"type": "object", "properties": map[string]any{}}
		}
		p.Tools = append(p.Tools, openai.ChatCompletionFunctionTool(fn))
	}
	if c.cfg.Stream {
		p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: param.NewOpt(true)}
	}
	return p
}

// parse turns the final answer into agent_result: the validated object for a schema, else
// {"text": ...}.
func (c *compiled) parse(content string) (map[string]any, error) {
	if c.schema == nil {
		if strings.TrimSpace(content) == "" {
			return nil, errors.New("empty answer")
		}
		return map[string]any{"text": content}, nil
	}
	var v any
	if err := json.Unmarshal([]byte(stripFence(content)), &v); err != nil {
		return nil, fmt.Errorf("the answer is not JSON: %v", err)
	}
	if err := c.schema.Validate(v); err != nil {
		return nil, err
	}
	if m, ok := v.(map[string]any); ok {
		return m, nil
	}
	return map[string]any{"value": v}, nil
}

// stripFence removes a ```json fence some models wrap JSON in despite response_format.
func stripFence(s string) string {
	t := strings.TrimSpace(s)
	if !strings.HasPrefix(t, "```") {
		return s
	}
	t = strings.TrimPrefix(t, "```")
	if i := strings.IndexByte(t, '\n'); i >= 0 {
		t = t[i+1:]
	}
	return strings.TrimSuffix(strings.TrimSpace(t), "```")
}

func (u *usage) add(c *compiled, t *turn) {
	if t.promptTokens < 0 || t.completionTokens < 0 {
		// No server spends less than nothing: counted, it would give back budget and shrink
		// the run's totals. Counted as 0, and said.
		u.warnings = append(u.warnings, fmt.Sprintf("llmagent: %s: the server reported negative token usage (prompt %d, completion %d); counted as 0",
			c.cfg.Model, t.promptTokens, t.completionTokens))
		t.promptTokens, t.completionTokens = max(t.promptTokens, 0), max(t.completionTokens, 0)
	}
	u.prompt += t.promptTokens
	u.completion += t.completionTokens
	model := t.model
	if model == "" {
		model = c.cfg.Model
	}
	u.model = model
	p, ok := c.cfg.Prices[model]
	if !ok {
		p = c.cfg.Prices[c.cfg.Model]
	}
	u.cost += p.Cost(t.promptTokens, t.completionTokens)
}

// checkBudget stops the dispatch before another completion once its cost reaches
// Dispatch.MaxCostDollars or its tokens Config.MaxTotalTokens, its tools' spending included.
func (u *usage) checkBudget(c *compiled, d *troupe.Dispatch) error {
	if cost := u.dollars(); d.MaxCostDollars != nil && cost > 0 && cost >= *d.MaxCostDollars {
		return &troupe.AgentError{Code: troupe.CodeBudget, Message: fmt.Sprintf(
			"llmagent: spent $%.6f of max_cost_dollars $%.6f", cost, *d.MaxCostDollars), Cause: troupe.ErrBudgetExhausted}
	}
	if n := u.tokens(); n >= c.cfg.MaxTotalTokens {
		return &troupe.AgentError{Code: troupe.CodeBudget, Message: fmt.Sprintf(
			"llmagent: used %d tokens of max_total_tokens %d", n, c.cfg.MaxTotalTokens), Cause: troupe.ErrBudgetExhausted}
	}
	return nil
}

func (u *usage) result(c *compiled, out map[string]any) *troupe.Result {
	model := u.model
	if model == "" {
		model = c.cfg.Model
	}
	llm := map[string]any{"prompt_tokens": u.prompt, "completion_tokens": u.completion}
	if tt, tc := u.tools.Tokens(), u.tools.Cost(); tt != 0 || tc != 0 {
		llm["tool_tokens"], llm["tool_cost_dollars"] = tt, tc
	}
	res := &troupe.Result{
		AgentResult: out,
		TokensUsed:  troupe.Ptr(u.tokens()),
		ModelUsed:   troupe.Ptr(model),
		CostDollars: troupe.Ptr(u.dollars()),
		Annotations: map[string]any{"llm_usage": llm},
		// An agent it called as a tool asked for a human's review: the engine reviews this
		// dispatch's result, and the request reaches the human through it.
		RequiresHuman: u.tools.RequiresHuman(),
		Warnings:      slices.Clip(u.warnings),
	}
	if out != nil {
		res.AnalysisSummary = troupe.Ptr(summarize(out))
		if conf, ok := out["confidence"].(float64); ok && conf >= 0 && conf <= 1 {
			res.Confidence = troupe.Ptr(conf)
		}
	}
	return res
}

// summarize is the answer's own summary when it has one, else its first 200 characters.
func summarize(out map[string]any) string {
	for _, k := range []string{"summary", "analysis_summary", "text"} {
		if s, ok := out[k].(string); ok && s != "" {
			return cut(s, 200)
		}
	}
	return cut(compact(out), 200)
}

func cut(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// compact renders a JSON value for people: strings as they are, the rest as JSON.
func compact(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// attempts reports every HTTP attempt the server refused as an "http_error" progress event
// (status and Retry-After, never headers or bodies, which may echo the key), so a run's log
// shows the retries the SDK makes.
func attempts(d *troupe.Dispatch) option.Middleware {
	n := 0
	return func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		n++
		res, err := next(req)
		if res != nil && res.StatusCode >= 400 {
			ev := map[string]any{"attempt": n, "status": res.StatusCode}
			if ra := res.Header.Get("Retry-After"); ra != "" {
				ev["retry_after"] = ra
			}
			d.Progress("http_error", ev)
		}
		return res, err
	}
}

// limitBody bounds every response body: the SDK reads a whole answer and an error's body
// without a bound of its own, and a stream until it ends.
func limitBody(max int64) option.Middleware {
	return func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		res, err := next(req)
		if res != nil && res.Body != nil {
			res.Body = http.MaxBytesReader(nil, res.Body, max)
		}
		return res, err
	}
}

// apiError classifies a failed call: rate limits, server errors but 501 and 505 (as httpagent
// judges them: wire.Recoverable) and lost connections are recoverable (the error policy may
// retry later), other statuses are not. res is the last response, if any: the status decides even when the SDK could not decode the body (Ollama's
// {"error": "…"} is a string), and the body is quoted as the server sent it when it is not
// OpenAI's error object. Every message names the model and the endpoint (BaseURL, masked),
// since one file's agents may reach several. The status and Retry-After go into the details, so the
// run's error policy waits as long as the server asked. The API key (secrets) is scrubbed from the body
// before the body is cut to length: cut first, a key echoed across the cut would leave its start.
// A timeout says which bound it was, call_timeout or ctx's deadline (the dispatch's). A
// failure while a successful response's body or stream was read keeps that response's status,
// in the message and in http_status.
func (a *Agent) apiError(ctx context.Context, secrets *wire.Secrets, err error, res *http.Response) error {
	callTimeout := a.c.cfg.CallTimeout
	status, body := 0, ""
	var ae *openai.Error
	if errors.As(err, &ae) {
		status, body = ae.StatusCode, ae.RawJSON()
		if ae.Response != nil {
			res = ae.Response
		}
	} else if res != nil && res.StatusCode >= 400 {
		status = res.StatusCode
	}
	if status != 0 {
		if strings.TrimSpace(body) == "" && res != nil && res.Body != nil {
			b, _ := io.ReadAll(io.LimitReader(res.Body, 4<<10))
			body = string(b)
		}
		// Several endpoints may serve one file's agents: the message says which refused.
		msg := fmt.Sprintf("llmagent: %s: HTTP %d", a.server(), status)
		if body = strings.TrimSpace(secrets.String(body)); body != "" {
			msg += ": " + cut(body, 500)
		}
		if (status == http.StatusUnauthorized || status == http.StatusForbidden) && os.Getenv(a.c.cfg.APIKeyEnv) == "" {
			// No key was sent: the variable is unset or empty, which the server's own words
			// ("you didn't provide an API key") do not name.
			msg += fmt.Sprintf(" (no API key was sent: the environment variable %s is not set)", a.c.cfg.APIKeyEnv)
		}
		details := map[string]any{"http_status": status}
		if res != nil {
			if ra := wire.RetryAfter(res.Header.Get("Retry-After"), time.Now()); ra > 0 {
				details["retry_after_seconds"] = ra.Seconds()
			}
		}
		if status == http.StatusRequestTimeout || status == http.StatusGatewayTimeout {
			// The server's or a gateway's own timeout: a timeout, as httpagent reports one,
			// so the run's on_timeout applies, not on_error.
			return &troupe.AgentError{Code: troupe.CodeTimeout, Message: msg, Recoverable: true, Details: details, Cause: troupe.ErrTimeout}
		}
		return &troupe.AgentError{Code: troupe.CodeAgentError, Message: msg, Recoverable: wire.Recoverable(status), Details: details}
	}
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		var details map[string]any
		if res != nil {
			details = map[string]any{"http_status": res.StatusCode}
		}
		return &troupe.AgentError{Code: troupe.CodeInvalidOutput, Details: details,
			Message: fmt.Sprintf("llmagent: %s: the response is over %d bytes (max_response_bytes)", a.server(), tooBig.Limit)}
	}
	msg := "llmagent: " + a.server() + ": "
	var details map[string]any
	if res != nil {
		// A response came, and reading it failed (the connection lost, a stall past a
		// deadline): say so, and keep its status, which a bare "unexpected EOF" loses.
		what := "body"
		if a.c.cfg.Stream {
			what = "stream"
		}
		msg += fmt.Sprintf("reading the %s of a %s response: ", what, strings.TrimSpace(fmt.Sprintf("%d %s", res.StatusCode, http.StatusText(res.StatusCode))))
		details = map[string]any{"http_status": res.StatusCode}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		bound := fmt.Sprintf("within call_timeout %v", callTimeout)
		if ctx.Err() != nil {
			bound = "before the dispatch's deadline"
		}
		return &troupe.AgentError{Code: troupe.CodeTimeout, Message: msg + "the call did not finish " + bound, Recoverable: true, Details: details, Cause: troupe.ErrTimeout}
	}
	if errors.Is(err, context.Canceled) {
		return err
	}
	// The SDK says "error reading response body: " before what went wrong: the message says so already.
	// The secrets too: net/http quotes the request's URL, its query (a key in it) and all.
	cause := secrets.String(err.Error())
	if res != nil {
		cause = strings.TrimPrefix(cause, "error reading response body: ")
	}
	return &troupe.AgentError{Code: troupe.CodeAgentError, Message: msg + cause, Recoverable: true, Details: details}
}

// server names the model and the endpoint that serves it (BaseURL, masked), as errors about
// what the server did say it: one file's agents may reach several endpoints.
func (a *Agent) server() string { return a.c.cfg.Model + " at " + a.c.endpoint }

// dispatchSeed is the seed the dispatch asks for in user_context["seed"] — an evidence bundle
// gives each replicate its own there — which takes precedence over Config.Seed: replicates
// that all sent the same seed would not be independent samples.
func dispatchSeed(d *troupe.Dispatch) (int64, bool) {
	switch v := d.UserContext["seed"].(type) {
	case int64:
		return v, true
	case int:
		return int64(v), true
	case float64: // a dispatch decoded from JSON
		if v == float64(int64(v)) {
			return int64(v), true
		}
	}
	return 0, false
}
