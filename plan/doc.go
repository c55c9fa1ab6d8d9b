// Package plan turns a query into an execution plan: it is seed 000's AgentSelector
// (select_agents, get_execution_order, can_execute_parallel) driven by data, a Rules value
// holding seed 000's routing tables. Planning is pure and deterministic: the same request and
// catalog always give the same plan, byte for byte in JSON.
//
// # Criteria
//
// A plan starts from seed 000's AgentSelectionCriteria: the request's Criteria when set, else
// the criteria CriteriaFromParsed derives from its parsed query, where "intent" (or
// "intent_type") names the intent, "kpis" (a list of strings or a single string) the KPIs, and
// every other list of strings (brands, regions, …) becomes an entity. The rule router
// route.Rules reads the intent and the KPIs of a parsed query the same way.
//
// # Scoring
//
// Every agent the criteria point to is a candidate and gets a priority score in [0, 1], the
// highest of those its reasons give:
//
//	primary agent of the main intent                         1.0   always selected
//	named in preferred_agents                                0.95  always selected
//	mapped from a KPI of the "kpis" entity (KPIMap)          0.85
//	mapped from a requires_* flag that is true (FlagAgents)  0.85
//	primary agent of a secondary intent                      0.8
//	optional agent of the main intent                        0.4 simple, 0.6 moderate, 0.75 complex query
//
// A synthesizer (Rules.Synthesizers) that is a candidate for another reason is raised to 0.8
// when at least two other, non-synthesizer agents are selected: there is something to
// synthesize. A candidate is selected when its score reaches the confidence threshold (0.7
// unless the criteria say otherwise), and always when it is a primary of the main intent or
// preferred. Excluded agents and agents missing from the catalog are skipped whatever their
// score. Each selection records every reason as a sentence ("primary agent for intent causal",
// "KPI NRx routes to it"), and a skipped one says why it was skipped; Plan.Selected and
// Plan.Skipped list them by score, highest first.
//
// # Rule order
//
// Ties are broken by rule order, the order in which candidates are found: the main intent's
// primary agents as its rule lists them, then the primary agents of each secondary intent,
// then the main intent's optional agents, then the agents of each KPI (KPIs in the entity's
// order, agents in the map's order), then flag agents (requires_ml, requires_causal_inference,
// requires_experimentation), then preferred agents. An agent keeps its first position.
//
// # Execution order
//
// The selected agents, in rule order, are then ordered. An agent runs after:
//
//   - the agents its registration names with troupe.After;
//   - the agents that write a session state key it reads (troupe.Writes, troupe.Reads); when
//     two agents each read what the other writes, the earlier in rule order runs first,
//     unless After, other state keys or the synthesizer rule already order the two the other
//     way round, directly or through other agents;
//   - every selected agent that is not a synthesizer, if it is a synthesizer;
//   - the first agent of an exclusive pair (Rules.ExclusivePairs) it is the second of: seed
//     000 lists first the agent that must finish first ("SHAP before deploy", "Scope must be
//     defined first"). The pair's order gives way when the rules above order the two the
//     other way round;
//   - when the main intent's rule has sequence_required, every agent earlier in rule order,
//     unless the two are a compatible pair (Rules.CompatiblePairs) or the earlier one is a
//     synthesizer (synthesizers always come last). Rule order is first made to agree with the
//     rules above: an agent moves after what it must run after, and the rest keep their order.
//
// Compatible pairs are declared independent, so neither the synthesizer rule nor
// sequence_required orders the two agents of one; After, state keys and exclusive pairs still
// do.
//
// A cycle among these is an error (ErrCycle) naming it. Stages are then filled by list
// scheduling: taking agents in dependency order, ties broken by rule order, each goes to the
// earliest stage after all of its dependencies that holds no agent it forms an exclusive pair
// with (Rules.ExclusivePairs) and no agent that writes a state key it also writes. Tasks within
// a stage are listed in rule order. A stage is never split for size: its MaxConcurrency
// (Rules.MaxConcurrency, default 10) tells the engine how many of its tasks to run at once.
//
// For seed 000's "What caused the drop in NRx for Kisqali in Midwest?" (intent causal, KPI
// NRx) that gives causal_impact (primary, 1.0), gap_analyzer (optional but mapped from NRx,
// 0.85) and explainer (synthesizer, 0.8), with heterogeneous_optimizer skipped at 0.6; causal
// requires a sequence, so the plan is [[causal_impact] [gap_analyzer] [explainer]].
package plan
