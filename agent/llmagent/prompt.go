package llmagent

import (
	"fmt"
	"strings"
	"text/template"
	"time"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/flow"
)

// PromptData is what the System and Prompt templates see.
type PromptData struct {
	Dispatch        *troupe.Dispatch
	Query           string
	ParsedQuery     map[string]any
	Upstream        []troupe.UpstreamResult
	Handoff         string // the upstream handoffs as seed 002's context blocks; "" when none
	HandoffInQuery  bool   // the query already carries a handoff block (a flow.Sequential put it there)
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
		HandoffInQuery:  strings.Contains(d.Query, "=== Context from Previous Agent ==="),
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

// RenderHandoffs renders each upstream result as seed 002's handoff block with
// flow.Handoff.Prompt, separated by blank lines: from the handoff object the result carries
// (flow.Handoff.Map's shape), else one built from the result by flow.NewHandoff.
func RenderHandoffs(ups []troupe.UpstreamResult) string {
	var b strings.Builder
	for i := range ups {
		if i > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(handoffOf(&ups[i]).Prompt())
	}
	return b.String()
}

func handoffOf(u *troupe.UpstreamResult) flow.Handoff {
	res := &troupe.Result{AgentName: u.Agent, DispatchID: u.DispatchID, AgentResult: u.Result, Status: troupe.StatusCompleted, Handoff: u.Handoff}
	if u.Summary != "" {
		res.AnalysisSummary = &u.Summary
	}
	h := flow.NewHandoff(res)
	if s, ok := u.Handoff["task_summary"].(string); ok {
		h.TaskSummary = s
	}
	meta, _ := u.Handoff["metadata"].(map[string]any)
	if s, ok := meta["source_agent"].(string); ok && s != "" {
		h.SourceAgent = s
	}
	if s, ok := meta["status"].(string); ok && s != "" {
		h.Status = troupe.Status(s)
	}
	if s, ok := meta["timestamp"].(string); ok {
		h.Timestamp, _ = time.Parse(time.RFC3339Nano, s)
	}
	return h
}
