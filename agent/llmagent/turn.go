package llmagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/agent/internal/wire"
)

// turn is one completion's answer, from a whole response or from the chunks of a stream.
type turn struct {
	content, refusal               string
	toolCalls                      []toolCall
	promptTokens, completionTokens int64
	model                          string
	finishReason                   string // "stop", "length", "tool_calls", ...; "" when not sent
}

type toolCall struct{ id, name, args string }

func (t *turn) assistant() openai.ChatCompletionMessageParamUnion {
	m := openai.ChatCompletionAssistantMessageParam{}
	if t.content != "" {
		m.Content.OfString = openai.String(t.content)
	}
	for _, tc := range t.toolCalls {
		m.ToolCalls = append(m.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
			OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
				ID:       tc.id,
				Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: tc.name, Arguments: tc.args},
			},
		})
	}
	return openai.ChatCompletionMessageParamUnion{OfAssistant: &m}
}

// complete asks for one completion. A turn is returned whenever the server reported usage, so
// that what was spent is counted even when the answer is unusable.
func (a *Agent) complete(ctx context.Context, d *troupe.Dispatch, p openai.ChatCompletionNewParams, opts []option.RequestOption, secrets *wire.Secrets) (*turn, error) {
	if a.c.cfg.Stream {
		return a.stream(ctx, d, p, opts, secrets)
	}
	// The SDK builds, sends and retries the request and turns error statuses into errors; the
	// answer is decoded here into just what the agent reads, which costs a fraction of
	// decoding the SDK's complete ChatCompletion.
	var raw []byte
	var res *http.Response
	if _, err := a.svc.New(ctx, p, append(opts, option.WithResponseBodyInto(&raw), option.WithResponseInto(&res))...); err != nil {
		return nil, a.apiError(ctx, secrets, err, res)
	}
	var resp wireCompletion
	if err := json.Unmarshal(raw, &resp); err != nil {
		ae := &troupe.AgentError{Code: troupe.CodeInvalidOutput, Recoverable: true,
			Message: fmt.Sprintf("llmagent: %s: the response is not a chat completion: %v: %s", a.server(), err, excerpt(secrets, string(raw), 200))}
		// What it reports having spent is counted all the same, if it can be read (content
		// as a list of parts, say, fails only the answer).
		var spent struct {
			Model string    `json:"model"`
			Usage wireUsage `json:"usage"`
		}
		if json.Unmarshal(raw, &spent) == nil && (spent.Usage.PromptTokens != 0 || spent.Usage.CompletionTokens != 0) {
			return &turn{model: spent.Model, promptTokens: spent.Usage.PromptTokens, completionTokens: spent.Usage.CompletionTokens}, ae
		}
		return nil, ae
	}
	t := &turn{model: resp.Model, promptTokens: resp.Usage.PromptTokens, completionTokens: resp.Usage.CompletionTokens}
	if len(resp.Choices) == 0 {
		if err := reportedError(a.server(), secrets, resp.Error); err != nil {
			return t, err
		}
		return t, &troupe.AgentError{Code: troupe.CodeInvalidOutput, Message: "llmagent: " + a.server() + ": response has no choices"}
	}
	msg := &resp.Choices[0].Message
	t.content, t.refusal, t.finishReason = msg.Content, msg.Refusal, resp.Choices[0].FinishReason
	for _, tc := range msg.ToolCalls {
		if tc.Type != "" && tc.Type != "function" {
			continue
		}
		t.toolCalls = append(t.toolCalls, toolCall{id: tc.ID, name: tc.Function.Name, args: tc.Function.Arguments})
	}
	return t, nil
}

// excerpt is the start of text, at most n characters ("…" marking a cut), with the secrets
// scrubbed: a response that is no chat completion may echo the key.
func excerpt(secrets *wire.Secrets, text string, n int) string {
	r := []rune(text)
	if len(r) <= n {
		return secrets.Head(text, false)
	}
	return secrets.Head(string(r[:n-1]), true) + "…"
}

// reportedError is the error a response without choices reports in its "error" member, as
// some servers and gateways answer a failed call with status 200 (OpenRouter, for a provider's
// failure): recoverable when its code is a status worth retrying (wire.Recoverable). Nil when
// there is none.
func reportedError(model string, secrets *wire.Secrets, raw json.RawMessage) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var obj struct {
		Message string          `json:"message"`
		Code    json.RawMessage `json:"code"`
	}
	msg := string(raw)
	if json.Unmarshal(raw, &msg) != nil && json.Unmarshal(raw, &obj) == nil && obj.Message != "" {
		msg = obj.Message
	}
	ae := &troupe.AgentError{Code: troupe.CodeAgentError,
		Message: fmt.Sprintf("llmagent: %s: the server answered 200 with an error: %s", model, excerpt(secrets, strings.TrimSpace(msg), 500))}
	var code int
	if json.Unmarshal(obj.Code, &code) == nil && code != 0 {
		ae.Recoverable, ae.Details = wire.Recoverable(code), map[string]any{"error_code": code}
	}
	return ae
}

// wireCompletion is the part of a chat.completion object (OpenAI API reference) the agent
// reads. Null content and refusal decode as "". Error is what a server that failed the call
// but answered 200 sends instead of choices.
type wireCompletion struct {
	Error   json.RawMessage `json:"error"`
	Model   string          `json:"model"`
	Choices []struct {
		Message struct {
			Content   string `json:"content"`
			Refusal   string `json:"refusal"`
			ToolCalls []struct {
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage wireUsage `json:"usage"`
}

// wireUsage is a completion's usage member.
type wireUsage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
}

// stream asks for a streamed completion, emitting each piece of text as a "token" progress
// event, and assembles the turn from the chunks (tool calls arrive in pieces keyed by index;
// usage arrives in a last chunk without choices).
func (a *Agent) stream(ctx context.Context, d *troupe.Dispatch, p openai.ChatCompletionNewParams, opts []option.RequestOption, secrets *wire.Secrets) (*turn, error) {
	var res *http.Response
	s := a.svc.NewStreaming(ctx, p, append(opts, option.WithResponseInto(&res))...)
	defer s.Close()
	t := &turn{}
	var content, refusal []byte
	byIndex := map[int64]int{}
	chunks := 0
	for s.Next() {
		chunks++
		ch := s.Current()
		if ch.Model != "" {
			t.model = ch.Model
		}
		if ch.Usage.PromptTokens != 0 || ch.Usage.CompletionTokens != 0 {
			t.promptTokens, t.completionTokens = ch.Usage.PromptTokens, ch.Usage.CompletionTokens
		}
		if len(ch.Choices) == 0 {
			continue
		}
		if fr := ch.Choices[0].FinishReason; fr != "" {
			t.finishReason = fr
		}
		delta := ch.Choices[0].Delta
		if delta.Content != "" {
			content = append(content, delta.Content...)
			d.Progress("token", map[string]any{"text": delta.Content})
		}
		refusal = append(refusal, delta.Refusal...)
		for _, tc := range delta.ToolCalls {
			i, ok := byIndex[tc.Index]
			// A new id at a known index is a new call: Ollama numbers every call 0, and Gemini
			// sends no index, which decodes as 0. A piece without an id continues its index's call.
			if !ok || tc.ID != "" && t.toolCalls[i].id != "" && tc.ID != t.toolCalls[i].id {
				i = len(t.toolCalls)
				byIndex[tc.Index] = i
				t.toolCalls = append(t.toolCalls, toolCall{})
			}
			call := &t.toolCalls[i]
			if tc.ID != "" {
				call.id = tc.ID
			}
			call.name += tc.Function.Name
			call.args += tc.Function.Arguments
		}
	}
	t.content, t.refusal = string(content), string(refusal)
	if err := s.Err(); err != nil {
		var se *ssestream.StreamError
		var ev wireCompletion
		if errors.As(err, &se) && json.Unmarshal(se.Event.Data, &ev) == nil {
			// An event carrying an error object: the server's answer, judged as the same
			// object in a whole (unstreamed) 200 is, by its code, not a stream cut short.
			if rerr := reportedError(a.server(), secrets, ev.Error); rerr != nil {
				// What the event, or the chunks before it, reported spent is counted.
				if ev.Usage.PromptTokens != 0 || ev.Usage.CompletionTokens != 0 {
					t.promptTokens, t.completionTokens = ev.Usage.PromptTokens, ev.Usage.CompletionTokens
				}
				if ev.Model != "" {
					t.model = ev.Model
				}
				if t.promptTokens == 0 && t.completionTokens == 0 {
					return nil, rerr
				}
				return t, rerr
			}
		}
		if t.promptTokens == 0 && t.completionTokens == 0 {
			return nil, a.apiError(ctx, secrets, err, res)
		}
		return t, a.apiError(ctx, secrets, err, res)
	}
	if chunks == 0 {
		// Not one event: a server that ignores "stream" and answers a whole completion, or a
		// proxy's page. Read as an empty answer, it would be asked again to no end.
		ct := ""
		if res != nil {
			ct = res.Header.Get("Content-Type")
		}
		return nil, &troupe.AgentError{Code: troupe.CodeInvalidOutput, Details: map[string]any{"content_type": ct},
			Message: fmt.Sprintf("llmagent: %s: asked for a stream, the server sent no stream chunks (Content-Type %q); if it does not stream, set stream to false", a.server(), ct)}
	}
	return t, nil
}

// fatal is what other errors that must end the dispatch may implement. Every tool error that
// is neither fatal nor one of agent-as-tool's guards is the model's to handle.
type fatal interface{ Fatal() bool }

func isFatal(err error) bool {
	var cycle *troupe.CircularDependencyError
	var depth *troupe.MaxDepthExceededError
	var ae *troupe.AgentError
	var f fatal
	return errors.As(err, &cycle) || errors.As(err, &depth) || errors.As(err, &f) && f.Fatal() ||
		errors.As(err, &ae) && (ae.Code == troupe.CodeCircularDependency || ae.Code == troupe.CodeMaxDepthExceeded)
}

// callTool runs one tool call and returns what the model is told: the tool's output, or what
// went wrong. It returns an error only when the dispatch must fail.
func (a *Agent) callTool(ctx context.Context, d *troupe.Dispatch, tc toolCall) (string, error) {
	tool, ok := a.c.tools[tc.name]
	if !ok {
		return fmt.Sprintf("error: there is no tool named %q", tc.name), nil
	}
	args := json.RawMessage(tc.args)
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	if !json.Valid(args) {
		return fmt.Sprintf("error: the arguments of %s are not valid JSON: %s", tc.name, cut(tc.args, 200)), nil
	}
	d.Progress("tool_call", map[string]any{"tool": tc.name, "id": tc.id})
	out, err := tool.Call(ctx, d, args)
	if err != nil {
		if isFatal(err) || ctx.Err() != nil {
			return "", fmt.Errorf("llmagent: tool %s: %w", tc.name, err)
		}
		msg := err.Error()
		if limit := a.c.cfg.MaxToolResultBytes; int64(len(msg)) > limit {
			// An error is a result the model reads too, and is sent again with every later
			// turn: over the bound, its start is sent, and the model told how long it was.
			d.Progress("tool_result_too_large", map[string]any{"tool": tc.name, "id": tc.id, "bytes": len(msg), "max_bytes": limit, "error": true})
			runes := max(int(min(limit/4, 2000)), 16) // a rune is at most 4 bytes
			return fmt.Sprintf("error (%d bytes, over the %d a tool result may have, max_tool_result_bytes; its start): %s", len(msg), limit, cut(msg, runes)), nil
		}
		return "error: " + msg, nil
	}
	if len(out) == 0 {
		return "null", nil
	}
	if max := a.c.cfg.MaxToolResultBytes; int64(len(out)) > max {
		// Sent on, it would be sent again with every later turn, and overflow the model's
		// context; told, the model can ask for less (a narrower query, a range of a file).
		d.Progress("tool_result_too_large", map[string]any{"tool": tc.name, "id": tc.id, "bytes": len(out), "max_bytes": max})
		return fmt.Sprintf("error: the result of %s is %d bytes, over the %d a tool result may have (max_tool_result_bytes): call it so that it returns less", tc.name, len(out), max), nil
	}
	return string(out), nil
}
