package troupe

// TraceID returns the trace id of the run d belongs to, when the runtime bound to it knows one
// (the engine's does), or "". Agents that call other services propagate it, e.g. as W3C
// traceparent.
func (d *Dispatch) TraceID() string {
	if t, ok := d.rt.(interface{ TraceID() string }); ok {
		return t.TraceID()
	}
	return ""
}
