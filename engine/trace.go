package engine

// TraceID gives the dispatch's agent the run's trace id (troupe.Dispatch.TraceID).
func (c *call) TraceID() string { return c.r.rec.traceID }
