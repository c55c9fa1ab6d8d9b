package troupe

import (
	"encoding/json"
	"maps"
)

// Context is seed 001's ExecutionContext: the immutable value that travels with every event,
// routing decision and dispatch of a run. The trace id is required; WithMetadata returns a
// copy, so a Context can be shared between goroutines freely.
//
// The zero value has no trace id and fails Validate; build one with NewContext.
type Context struct {
	traceID  string
	profile  string
	metadata map[string]any
	parent   *Context
}

// DefaultProfile is the profile a context gets when none is named (seed 001).
const DefaultProfile = "default"

// NewContext returns a context with the given trace id and profile ("" means DefaultProfile).
func NewContext(traceID, profile string) Context {
	if profile == "" {
		profile = DefaultProfile
	}
	return Context{traceID: traceID, profile: profile}
}

// TraceID is the run's trace identifier; it never changes within a run.
func (c Context) TraceID() string { return c.traceID }

// Profile is the security profile name.
func (c Context) Profile() string { return c.profile }

// Parent is the context of the orchestration that started this one, or nil. It is a copy:
// the parent every copy of c shares cannot be changed through it (seed 001: frozen).
func (c Context) Parent() *Context {
	if c.parent == nil {
		return nil
	}
	p := *c.parent
	return &p
}

// IsZero reports whether c is the zero Context.
func (c Context) IsZero() bool {
	return c.traceID == "" && c.profile == "" && c.parent == nil && c.metadata == nil
}

// Metadata returns the value stored under key.
func (c Context) Metadata(key string) (any, bool) {
	v, ok := c.metadata[key]
	return v, ok
}

// MetadataMap returns a copy of all metadata.
func (c Context) MetadataMap() map[string]any { return maps.Clone(c.metadata) }

// WithMetadata returns a copy of c with key set to value; c itself is unchanged (copy on write).
func (c Context) WithMetadata(key string, value any) Context {
	m := make(map[string]any, len(c.metadata)+1)
	maps.Copy(m, c.metadata)
	m[key] = value
	c.metadata = m
	return c
}

// Child returns a context for a nested orchestration: same trace id and profile, c as parent.
func (c Context) Child() Context {
	p := c
	return Context{traceID: c.traceID, profile: c.profile, parent: &p}
}

// Validate reports a missing trace id (seed 001: trace_id is REQUIRED).
func (c Context) Validate() error {
	if c.traceID == "" {
		return &ValidationError{Object: "context", Field: "trace_id", Problem: "required"}
	}
	return nil
}

type contextJSON struct {
	TraceID  string         `json:"trace_id"`
	Profile  string         `json:"profile"`
	Metadata map[string]any `json:"metadata,omitempty"`
	Parent   *Context       `json:"parent,omitempty"`
}

// MarshalJSON encodes the context as {trace_id, profile, metadata, parent}.
func (c Context) MarshalJSON() ([]byte, error) {
	return json.Marshal(contextJSON{c.traceID, c.profile, c.metadata, c.parent})
}

// UnmarshalJSON decodes what MarshalJSON produces.
func (c *Context) UnmarshalJSON(b []byte) error {
	var j contextJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	if j.Profile == "" && j.TraceID != "" {
		j.Profile = DefaultProfile // seed 001: profile defaults to "default", as in NewContext
	}
	*c = Context{traceID: j.TraceID, profile: j.Profile, metadata: j.Metadata, parent: j.Parent}
	return nil
}
