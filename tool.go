package troupe

import (
	"context"
	"encoding/json"
)

// ToolInfo describes a tool to the agent that may call it — usually an LLM, which reads the
// description and fills in arguments matching InputSchema.
type ToolInfo struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema,omitempty"` // JSON Schema of the arguments object
}

// Tool is something an agent can call by name during its own dispatch: another agent wrapped
// as a tool, a tool of an MCP server, a function. Call runs on behalf of caller, the calling
// agent's dispatch, so that nested work is attributed to it in the run's log and inherits its
// deadline; it returns the tool's output as JSON. Implementations must be safe for concurrent
// use: an agent may call the same tool from several turns at once.
type Tool interface {
	Info() ToolInfo
	Call(ctx context.Context, caller *Dispatch, args json.RawMessage) (json.RawMessage, error)
}
