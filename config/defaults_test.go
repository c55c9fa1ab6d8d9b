package config_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/troupehq/troupe/agent/httpagent"
	"github.com/troupehq/troupe/agent/llmagent"
	"github.com/troupehq/troupe/agent/mcptool"
	"github.com/troupehq/troupe/bundle"
	"github.com/troupehq/troupe/config"
	"github.com/troupehq/troupe/evidence"
	"github.com/troupehq/troupe/flow"
	"github.com/troupehq/troupe/plan"
	"github.com/troupehq/troupe/policy"
	"github.com/troupehq/troupe/redact"
)

// The defaults docs/config.md states (the schema's descriptions) are the ones the runtime
// applies to a file that leaves the field out: each description is checked against the
// package that applies the default, so that neither changes without the other.
func TestDocumentedDefaults(t *testing.T) {
	f, err := config.Parse("t.yaml", []byte("version: 1\nagents: {a: {kind: builtin}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	p := f.Policy()
	seeds := evidence.DefaultSeeds()
	tests := []struct {
		field string // the field's pointer in the schema
		says  string // what its description must say
	}{
		{"/properties/error_policy/properties/on_warning", fmt.Sprintf("(default %s)", p.Warning())},
		{"/properties/error_policy/properties/on_error", fmt.Sprintf("(default %s,", p.Error())},
		{"/properties/error_policy/properties/on_timeout", fmt.Sprintf("(default %s)", p.Timeout())},
		{"/properties/error_policy/properties/enable_fallback", fmt.Sprintf("(default %t)", p.FallbackEnabled())},
		{"/properties/error_policy/properties/allow_partial_results", fmt.Sprintf("(default %t)", p.PartialAllowed())},
		{"/properties/error_policy/properties/min_success_rate", fmt.Sprintf("(default %g)", p.MinSuccess())},
		{"/properties/error_policy/properties/retry/properties/max_attempts", fmt.Sprintf("(0: %d)", p.Retry.Attempts())},
		{"/properties/error_policy/properties/retry/properties/initial_backoff", fmt.Sprintf("(0s or absent: %s)", policy.DefaultInitialBackoff)},
		{"/properties/error_policy/properties/retry/properties/max_backoff", fmt.Sprintf("(0s or absent: %s)", policy.DefaultMaxBackoff)},
		{"/properties/error_policy/properties/retry/properties/multiplier", fmt.Sprintf("(0 or absent: %g)", policy.DefaultMultiplier)},
		{"/properties/routing/properties/max_concurrency", fmt.Sprintf("else %d)", plan.DefaultMaxConcurrency)},
		{"/$defs/agent/properties/parallel/properties/max_concurrency", fmt.Sprintf("(0: %d)", flow.DefaultMaxConcurrent)},
		{"/$defs/agent/properties/http/properties/max_response_bytes", fmt.Sprintf("(0: %d)", httpagent.DefaultMaxResponseBytes)},
		{"/$defs/agent/properties/llm/properties/base_url", fmt.Sprintf("(default %s)", llmagent.DefaultBaseURL)},
		{"/$defs/agent/properties/llm/properties/api_key_env", fmt.Sprintf("(default %s)", llmagent.DefaultAPIKeyEnv)},
		{"/$defs/agent/properties/llm/properties/max_tokens", fmt.Sprintf("(0: %d)", llmagent.DefaultMaxTokens)},
		{"/$defs/agent/properties/llm/properties/max_turns", fmt.Sprintf("(0: %d)", llmagent.DefaultMaxTurns)},
		{"/$defs/agent/properties/llm/properties/max_response_bytes", fmt.Sprintf("(0: %d)", llmagent.DefaultMaxResponse)},
		{"/$defs/agent/properties/llm/properties/max_tool_result_bytes", fmt.Sprintf("(0: %d)", llmagent.DefaultMaxToolResult)},
		{"/$defs/agent/properties/bundle/properties/replicates", fmt.Sprintf("Most replicates to run, 2 to %d", evidence.MaxK)},
		{"/$defs/agent/properties/bundle/properties/seeds", fmt.Sprintf("(absent: %d, %d, %d)", seeds[0], seeds[1], seeds[2])},
		{"/$defs/agent/properties/bundle/properties/epsilon", fmt.Sprintf("(absent: %g)", evidence.DefaultEpsilon)},
		{"/$defs/agent/properties/bundle/properties/max_tokens", fmt.Sprintf("(0: %d)", evidence.DefaultReplicateTokens)},
		{"/$defs/agent/properties/bundle/properties/budget/properties/tokens", "(0: replicates × max_tokens)"},
		{"/$defs/agent/properties/bundle/properties/budget/properties/cost_dollars", fmt.Sprintf("(0: %g, or the dispatch's max_cost_dollars when lower)", evidence.DefaultBudgetCost)},
		{"/$defs/agent/properties/bundle/properties/limits/properties/max_fields", fmt.Sprintf("(0: %d)", bundle.DefaultMaxFields)},
		{"/$defs/agent/properties/bundle/properties/limits/properties/max_diffs", fmt.Sprintf("(0: %d)", bundle.DefaultMaxDiffs)},
		{"/$defs/agent/properties/bundle/properties/limits/properties/max_bytes", fmt.Sprintf("(0: %d)", bundle.DefaultMaxBytes)},
		{"/$defs/agent/properties/bundle/properties/lints/items/properties/timeout", fmt.Sprintf("(absent: %s)", evidence.DefaultLintTimeout)},
		{"/$defs/agent/properties/bundle/properties/redact/properties/replacement", fmt.Sprintf("(absent: %s)", redact.DefaultReplacement)},
		{"/$defs/mcpServer/properties/max_result_bytes", fmt.Sprintf("(0: %d)", mcptool.DefaultMaxResultBytes)},
		{"/$defs/mcpServer/properties/call_timeout", fmt.Sprintf("(0s or absent: %s)", strings.TrimSuffix(mcptool.DefaultCallTimeout.String(), "0s"))},
	}
	var root any
	if err := json.Unmarshal(config.Schema, &root); err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		node := root
		for _, tok := range strings.Split(tt.field[1:], "/") {
			m, _ := node.(map[string]any)
			node = m[tok]
		}
		m, _ := node.(map[string]any)
		desc, _ := m["description"].(string)
		if !strings.Contains(desc, tt.says) {
			t.Errorf("%s: description %q does not say %q, the default applied", tt.field, desc, tt.says)
		}
	}
}
