// Package e2i is seed 000's E2I Causal Analytics system, runnable: an orchestrator over 17
// agents that answers questions about pharmaceutical prescription data.
//
// Three pieces make the system; troupe's engine does the rest:
//
//   - ParseQuery stands in for seed 000's NLP layer: keyword rules and gazetteers turn a
//     question into its parsed_query (intent, brands, KPIs, regions, time period).
//   - Rules holds seed 000's routing tables — intent rules, the KPI map, exclusive and
//     compatible pairs — as a plan.Rules, troupe's data-driven planner.
//   - Registry holds the 17 agents as troupe.AgentFunc values that do real, deterministic work
//     on a synthetic dataset (NewDataset): difference-in-differences, gap analysis, drift
//     tests, sample sizes, forecasts, least squares. Nothing they say is canned; every number
//     is computed, and the explainer composes the final answer only from the numbers its
//     upstream agents returned.
//
// # The data
//
// Weekly NRx, TRx and NBRx for Kisqali, Fabhalta and Verzenio in four regions over 26 weeks,
// by prescriber decile, generated from a fixed seed. Planted in it: from week 18 an access
// restriction in the Midwest cuts Kisqali NRx by about 12% — more among heavy prescribers —
// while the other regions keep growing. The agents are not told; they find it.
//
// A question about a brand the data does not hold ("… for the brand Ozempic …") is not
// answered about another: every agent that reads the data fails with INVALID_INPUT, "no data
// for brand Ozempic: the data holds Kisqali, Fabhalta and Verzenio", and so does the run; so
// does a question about a region the data does not hold ("… in Southeast …", "… in the
// Pacific Northwest …"), unless it also names one it does, which is then analysed with a
// warning. A period longer than the data's 26 weeks ("over the last 2 years") or a calendar
// year its numbered weeks cannot pick out ("in 2019") is analysed over all of them, and the
// warnings say so. A question naming two brands is answered about the first, and the answer
// says so. A question that names none of them is about Kisqali, the data's first; the
// agents' warnings and the explainer's answer say so, and name what the question mentioned
// where a brand could stand ("… for Ozempic …", "… for Southeast …"), which may be a brand
// without data or something else the example does not know.
//
// # A run
//
// Seed 000's example question, "What caused the drop in NRx for Kisqali in Midwest?", parses
// as a causal question about NRx and plans as [[causal_impact] [gap_analyzer] [explainer]]:
//
//   - causal_impact scans for the change point, estimates the Midwest's change against the
//     other regions by difference-in-differences (with a 95% interval, a t statistic and
//     placebo regions), and writes it to session state as "causal_effect";
//   - gap_analyzer compares the Midwest with its best peer region per 100 prescribers, turns
//     the gap into units, and says how much of it the estimated effect accounts for;
//   - explainer writes the answer from those two results, which becomes the run's synthesis.
//
// Run it with `troupe demo`, or:
//
//	reg, _ := e2i.Registry()
//	eng, _ := engine.New(engine.Config{Registry: reg, Planner: e2i.Rules()})
//	q := "What caused the drop in NRx for Kisqali in Midwest?"
//	for ev, err := range eng.Run(ctx, troupe.Request{Query: q, ParsedQuery: e2i.ParseQuery(q)}) {
//		...
//	}
//
// # State and upstream results
//
// Seed 000 passes each agent the results of the agents before it (upstream_results); troupe
// adds declared session state. Here causal_impact writes "causal_effect" and model_trainer
// writes "trained_model", but no agent declares a read: a declared read fails the dispatch
// when the key is absent, and every consumer may be planned without the writer. Consumers
// take what they need from upstream results, then from session state, and otherwise work it
// out themselves.
package e2i
