package flow

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/troupehq/troupe"
)

// Handoff is seed 002's HandoffObject: what one agent of a sequence passes to the next. It is a
// value; a transform returns a modified copy.
type Handoff struct {
	TaskSummary  string         // the first 200 characters of the agent's output
	KeyOutputs   []string       // the outputs worth passing on
	SourceAgent  string         // the agent that produced it
	DispatchID   string         // its dispatch
	Timestamp    time.Time      // when it completed
	Status       troupe.Status  // how it ended
	ToolsUsed    []string       // tools it called, as it reported them
	CustomFields map[string]any // added by a transform (seed 002's handoffCustomFields)
}

// summaryLen is seed 002's "first 200 chars" of the output.
const summaryLen = 200

// NewHandoff builds the handoff of res (seed 002's createHandoff):
//
//   - TaskSummary: the first 200 characters of the output — the analysis summary, else the
//     agent_result's "output" string, else the agent_result as JSON, else the first error;
//   - KeyOutputs: the result's handoff "key_outputs" when the agent names them, else one
//     "key: value" line per agent_result field, in key order;
//   - ToolsUsed: the result's handoff "tools_used", else its "metadata"'s (a composite's
//     result carries its last handoff in Map's shape);
//   - CustomFields: a copy of the result's handoff "custom_fields" (a composite's, from its
//     transform).
func NewHandoff(res *troupe.Result) Handoff {
	h := Handoff{SourceAgent: res.AgentName, DispatchID: res.DispatchID, Timestamp: res.CompletedAt, Status: res.Status}
	h.TaskSummary = truncate(outputText(res), summaryLen)
	h.KeyOutputs = strings1(res.Handoff["key_outputs"])
	if h.KeyOutputs == nil {
		for _, k := range slices.Sorted(maps.Keys(res.AgentResult)) {
			h.KeyOutputs = append(h.KeyOutputs, k+": "+truncate(compact(res.AgentResult[k]), summaryLen))
		}
	}
	h.ToolsUsed = strings1(res.Handoff["tools_used"])
	if h.ToolsUsed == nil {
		meta, _ := res.Handoff["metadata"].(map[string]any)
		h.ToolsUsed = strings1(meta["tools_used"])
	}
	if cf, ok := res.Handoff["custom_fields"].(map[string]any); ok && len(cf) > 0 {
		h.CustomFields = maps.Clone(cf)
	}
	return h
}

func outputText(res *troupe.Result) string {
	if s := res.Summary(); s != "" {
		return s
	}
	if s, ok := asString(res.AgentResult["output"]); ok && s != "" {
		return s
	}
	if len(res.AgentResult) > 0 {
		return compact(res.AgentResult)
	}
	if len(res.Errors) > 0 {
		return res.Errors[0].Message
	}
	return ""
}

func compact(v any) string {
	if s, ok := asString(v); ok {
		return s
	}
	return jsonText(v)
}

// asString is v as the string it encodes to, when it encodes to a JSON string: a string, a
// named string type, a time.Time. Each then reads as it will once a log that went through JSON
// gives it back as a plain string, so a resumed run builds the same handoff, and the dispatch
// the log holds is the one it makes again, not run twice.
func asString(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case nil, bool, float64, int, int64, map[string]any, []any:
		return "", false
	}
	b, err := json.Marshal(v)
	if err != nil || len(b) == 0 || b[0] != '"' {
		return "", false
	}
	var s string
	if json.Unmarshal(b, &s) != nil {
		return "", false
	}
	return s, true
}

// jsonText is v as JSON, or as fmt prints it when it is not JSON.
func jsonText(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // the text is read by people and models: "x < lo", not "x \u003c lo"
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// truncate keeps the first n characters (runes, not bytes) of s.
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for j := range s {
		if i == n {
			return s[:j]
		}
		i++
	}
	return s
}

// strings1 reads a list of strings from a JSON-ish value ([]string or []any of strings).
func strings1(v any) []string {
	switch v := v.(type) {
	case []string:
		return slices.Clone(v)
	case []any:
		out := make([]string, 0, len(v))
		for _, x := range v {
			out = append(out, compact(x))
		}
		return out
	}
	return nil
}

// Prompt renders the handoff for prompt injection, exactly in seed 002's format:
//
//	=== Context from Previous Agent ===
//	Task: {taskSummary}
//	Key Outputs:
//	- {output1}
//	Metadata: Agent {agentId} completed at {timestamp} with status {status}
//	===================================
//
// The timestamp is RFC 3339 in UTC. A task summary or output of several lines (code, a
// paragraph) keeps its lines, each after the first indented by two spaces under its entry, so
// that no line of an agent's output can end the block early or stand as its Metadata line.
func (h Handoff) Prompt() string {
	var b strings.Builder
	b.WriteString("=== Context from Previous Agent ===\n")
	b.WriteString("Task: ")
	b.WriteString(continued(h.TaskSummary))
	b.WriteString("\nKey Outputs:\n")
	for _, o := range h.KeyOutputs {
		b.WriteString("- ")
		b.WriteString(continued(o))
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "Metadata: Agent %s completed at %s with status %s\n", h.SourceAgent, h.Timestamp.UTC().Format(time.RFC3339), h.Status)
	b.WriteString("===================================")
	return b.String()
}

// lineBreaks are the line breaks a reader may take for one, CR LF once, each made a LF.
var lineBreaks = strings.NewReplacer("\r\n", "\n", "\r", "\n", "\u0085", "\n", "\u2028", "\n", "\u2029", "\n")

// continued is s as one entry of the prompt: its trailing line breaks dropped, the lines after
// its first indented by two spaces (a blank line stays blank).
func continued(s string) string {
	s = strings.TrimRight(lineBreaks.Replace(s), "\n")
	if !strings.Contains(s, "\n") {
		return s
	}
	var b strings.Builder
	for i, line := range strings.Split(s, "\n") {
		if i > 0 {
			b.WriteByte('\n')
			if line != "" {
				b.WriteString("  ")
			}
		}
		b.WriteString(line)
	}
	return b.String()
}

// Map is the handoff as the JSON object a dispatch's upstream_results entry carries.
func (h Handoff) Map() map[string]any {
	m := map[string]any{
		"task_summary": h.TaskSummary,
		"key_outputs":  h.KeyOutputs,
		"metadata": map[string]any{
			"source_agent": h.SourceAgent, "dispatch_id": h.DispatchID,
			"timestamp": h.Timestamp.UTC().Format(time.RFC3339Nano), "status": string(h.Status), "tools_used": h.ToolsUsed,
		},
	}
	if len(h.CustomFields) > 0 {
		m["custom_fields"] = h.CustomFields
	}
	return m
}
