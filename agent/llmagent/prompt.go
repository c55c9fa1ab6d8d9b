package llmagent

import (
	"fmt"
	"sort"
	"strings"
	"text/template"

	"github.com/troupehq/troupe"
)

// PromptData is what the System and Prompt templates see.
type PromptData struct {
	Dispatch        *troupe.Dispatch
	Query           string
	ParsedQuery     map[string]any
	Upstream        []troupe.UpstreamResult
	Handoff         string // the upstream handoffs as seed 002's context blocks; "" when none
	OptimizedPrompt string // Dispatch.OptimizedPrompts[Config.Name]; "" when none
}

// State returns the session state value under key, or nil: {{.State "topic"}}.
func (p *PromptData) State(key string) any {
	v, _ := p.Dispatch.State(key)
	return v
}

func (c *compiled) promptData(d *troupe.Dispatch) *PromptData {
	name := c.cfg.Name
	if name == "" {
		name = d.TargetAgent
	}
	return &PromptData{
		Dispatch:        d,
		Query:           d.Query,
		ParsedQuery:     d.ParsedQuery,
		Upstream:        d.UpstreamResults,
		Handoff:         RenderHandoffs(d.UpstreamResults),
		OptimizedPrompt: d.OptimizedPrompts[name],
	}
}

func render(t *template.Template, data *PromptData) (string, error) {
	var b strings.Builder
	if err := t.Execute(&b, data); err != nil {
		return "", fmt.Errorf("llmagent: template %s: %w", t.Name(), err)
	}
	return b.String(), nil
}

// RenderHandoffs renders each upstream result as seed 002's handoff block (handoffToPrompt):
//
//	=== Context from Previous Agent ===
//	Task: {taskSummary}
//	Key Outputs:
//	- {output}
//	Metadata: Agent {agentId} completed at {timestamp} with status {status}
//	===================================
//
// The task summary is the handoff's "task_summary" or else the result's analysis summary,
// cut to 200 characters; key outputs are the handoff's "key_outputs" (a list) or else the
// result's members, sorted by key. Results are rendered in order, separated by a blank line.
func RenderHandoffs(ups []troupe.UpstreamResult) string {
	var b strings.Builder
	for i := range ups {
		if i > 0 {
			b.WriteString("\n\n")
		}
		renderHandoff(&b, &ups[i])
	}
	return b.String()
}

func renderHandoff(b *strings.Builder, u *troupe.UpstreamResult) {
	h := u.Handoff
	task, _ := h["task_summary"].(string)
	if task == "" {
		task = u.Summary
	}
	if r := []rune(task); len(r) > 200 {
		task = string(r[:200])
	}
	b.WriteString("=== Context from Previous Agent ===\nTask: ")
	b.WriteString(task)
	b.WriteString("\nKey Outputs:\n")
	if outs, ok := h["key_outputs"].([]any); ok {
		for _, o := range outs {
			fmt.Fprintf(b, "- %v\n", o)
		}
	} else if outs, ok := h["key_outputs"].([]string); ok {
		for _, o := range outs {
			fmt.Fprintf(b, "- %s\n", o)
		}
	} else {
		keys := make([]string, 0, len(u.Result))
		for k := range u.Result {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(b, "- %s: %s\n", k, compact(u.Result[k]))
		}
	}
	agent, at, status := u.Agent, "", "completed"
	if meta, ok := h["metadata"].(map[string]any); ok {
		if s, ok := meta["agent_id"].(string); ok && s != "" {
			agent = s
		}
		at, _ = meta["timestamp"].(string)
		if s, ok := meta["status"].(string); ok && s != "" {
			status = s
		}
	}
	if at == "" {
		at = "an earlier step"
	}
	fmt.Fprintf(b, "Metadata: Agent %s completed at %s with status %s\n===================================", agent, at, status)
}
