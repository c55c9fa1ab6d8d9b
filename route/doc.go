// Package route holds troupe's pure, deterministic routers: given a task, the run's message,
// its parsed form, the session state and the agents available, they choose the agent that
// handles it and say why (seed 001's RoutingDecision: target, reason, metadata, fallback).
//
// Rules is a routing table. Route decides in this order, and the first step that yields an
// available agent wins:
//
//  1. Planned task: a task that already names an agent (a planner chose it) goes to that agent,
//     with the task's reason.
//  2. Triggers, in order (seed 003's coordinator table): a trigger fires when every When key
//     is in the session state with a JSON-equal value and, if it has Patterns, one of them
//     occurs in the message as whole words, ignoring case, apostrophe style and Unicode
//     spelling (composed or decomposed accents, full-width and compatibility forms: NFKC).
//  3. Intent (seed 000's INTENT_ROUTING_RULES): the candidates listed for
//     ParsedQuery["intent"] (or "intent_type"), in order.
//  4. KPIs (seed 000's KPI_ROUTING_MAP): for each of ParsedQuery["kpis"] (a list or a single
//     string, or the "kpis" list of ParsedQuery["entities"]) in order, the agents mapped to it,
//     in order.
//
// Steps 3 and 4 read the parsed query as plan.CriteriaFromParsed does, so the planner and the
// router accept the same shapes, and a shape they refuse is an error naming the key rather
// than a silent fall through to the default.
//  5. Default.
//
// An agent that is not in RouteInput.Available is skipped, the next candidate is considered,
// and the decision's metadata lists what was skipped. When nothing is left, Route returns an
// error wrapping troupe.ErrUnknownAgent that says what it tried.
//
// The same input always gives the same decision, down to the bytes of its JSON encoding
// (seed 001, compliance test 3): nothing here reads a clock, random numbers, the environment
// or package-level mutable state, and no map is ranged over without sorting its keys.
//
// Planner wraps a router as a troupe.Planner whose plan has a single task with no agent, so
// that an engine configured with the same router picks the agent at ROUTE time; that is how a
// message-routing coordinator such as seed 003's runs in the engine.
package route
