// Package feasibility is seed 004's system, runnable offline: a feasibility question judged by
// an evidence bundle of K judge agents, read by an orchestrator agent that decides once over
// the full evidence and cites the judges' disagreement and confidence.
//
// The judges do real computation over a shipped dataset (data/): reference-class forecasts of
// a proposal's cost and schedule from a bootstrap resample of past projects, Monte Carlo risk
// draws, and the probability of meeting the budget and the deadline. Their verdicts vary only
// with their seeds; README.md says how.
package feasibility
