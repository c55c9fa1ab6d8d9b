// Package troupe holds the contracts of the troupe multi-agent orchestration runtime: the
// dispatch request and response an orchestrator exchanges with an agent (seed 000), the
// immutable execution context, routing decisions, lifecycle stages, events and structured
// errors (seed 001), the error policy that unifies both, and the small interfaces the rest of
// troupe plugs into (Agent, Planner, Router, Guardrail, HumanHandler, Store, Executor).
//
// The package imports the standard library and, of troupe, only internal/jsonvalue (itself
// standard library only); planning, routing, policy and aggregation live in pure packages
// beside it, the engine drives them.
//
// A minimal program registers agents, builds an engine and ranges over a run's events:
//
//	reg := troupe.NewRegistry()
//	reg.Add("causal_impact", troupe.AgentFunc(estimate), troupe.Writes("effect"))
//	eng, _ := engine.New(engine.Config{Registry: reg, Planner: rules})
//	for ev, err := range eng.Run(ctx, troupe.Request{Query: q, ParsedQuery: parsed}) {
//		...
//	}
package troupe
