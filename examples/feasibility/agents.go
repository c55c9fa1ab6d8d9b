package feasibility

import (
	"bytes"
	"cmp"
	"context"
	_ "embed" // the judge schema
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/bundle"
)

//go:embed data/judge.schema.json
var judgeSchema []byte

// JudgeSchema returns the JSON Schema (data/judge.schema.json) of a judge's agent_result: the
// bundle validates every replicate against it and reads its distance annotations. The
// rationale is an explanation of the numbers, not a judgement, so it weighs nothing in the
// distance; the verdict and the probability weigh double; probabilities are normalized by
// their [0, 1] range. Each call returns a new copy.
func JudgeSchema() []byte { return bytes.Clone(judgeSchema) }

// ProposalOf finds the proposal a dispatch asks about: parsed_query "proposal" (an object with
// Proposal's fields), else parsed_query "case" or a case id in the query text (in any case,
// with spaces or hyphens between its words), among the shipped cases. A budget ("10k",
// "1,500k") or a deadline ("2 weeks") the query text states replaces the case's own: the
// question is answered for the limits it asks about.
func (ds *Dataset) ProposalOf(d *troupe.Dispatch) (Proposal, error) {
	if v, ok := d.ParsedQuery["proposal"]; ok {
		b, err := json.Marshal(v)
		if err != nil {
			return Proposal{}, &troupe.AgentError{Code: troupe.CodeInvalidInput, Message: "feasibility: parsed_query.proposal: " + err.Error(), FallbackAction: "ask user to clarify"}
		}
		var p Proposal
		dec := json.NewDecoder(strings.NewReader(string(b)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&p); err != nil {
			return Proposal{}, &troupe.AgentError{Code: troupe.CodeInvalidInput, Message: "feasibility: parsed_query.proposal: " + err.Error(), FallbackAction: "ask user to clarify"}
		}
		if probs := ds.Check(p, "parsed_query.proposal"); len(probs) > 0 {
			return Proposal{}, &troupe.AgentError{Code: troupe.CodeInvalidInput, Message: "feasibility: " + strings.Join(probs, "; "), FallbackAction: "ask user to clarify"}
		}
		return p, nil
	}
	id, _ := d.ParsedQuery["case"].(string)
	if id == "" {
		// Word by word, ignoring case and punctuation: "warehouse expansion", "CRM-rollout"
		// and the question without its question mark all name their case.
		q := words(d.Query)
		for _, c := range ds.Cases {
			if strings.Contains(q, words(c.ID)) || q == words(c.Question) {
				id = c.ID
			}
		}
	}
	p, ok := ds.Case(id)
	if ok {
		if budget, weeks := statedLimits(d.Query); budget > 0 || weeks > 0 {
			if budget > 0 {
				p.BudgetK = budget
			}
			if weeks > 0 {
				p.DeadlineWeeks = weeks
			}
			p.Question = strings.TrimSpace(d.Query) // what was asked, limits and all
		}
	}
	if !ok {
		var ids []string
		for _, c := range ds.Cases {
			ids = append(ids, c.ID)
		}
		return Proposal{}, &troupe.AgentError{Code: troupe.CodeInvalidInput,
			Message:        fmt.Sprintf("feasibility: no proposal: give parsed_query.proposal, or one of the cases %s", strings.Join(ids, ", ")),
			FallbackAction: "ask user to clarify"}
	}
	return p, nil
}

// Limits a question states: a budget in thousands ("10k", "1,500k", "$400k") and a deadline in
// weeks ("2 weeks", "56-week").
var (
	budgetRE = regexp.MustCompile(`(?i)\$?\b(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?\s*k\b`)
	weeksRE  = regexp.MustCompile(`(?i)\b(\d+(?:\.\d+)?)[\s-]*weeks?\b`)
)

// statedLimits returns the budget (in thousands) and the deadline (in weeks) q states, 0 for
// one it does not state. Each is taken when q states it once; stated twice, differently, it is
// not taken (0), as the question does not say which it means.
func statedLimits(q string) (budgetK, weeks float64) {
	one := func(re *regexp.Regexp, value func(m []string) float64) float64 {
		var v float64
		for i, m := range re.FindAllStringSubmatch(q, -1) {
			x := value(m)
			if i > 0 && x != v {
				return 0
			}
			v = x
		}
		return v
	}
	budgetK = one(budgetRE, func(m []string) float64 {
		f, _ := strconv.ParseFloat(strings.ReplaceAll(m[1], ",", "")+"."+cmp.Or(m[2], "0"), 64)
		return f
	})
	weeks = one(weeksRE, func(m []string) float64 {
		f, _ := strconv.ParseFloat(m[1], 64)
		return f
	})
	return budgetK, weeks
}

// words returns s's words in lower case, each between single spaces.
func words(s string) string {
	ws := strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	return " " + strings.Join(ws, " ") + " "
}

// Judge returns the judge agent: it assesses the dispatch's proposal with the replicate's
// seed, read from user_context "seed" (the evidence bundle sets it per replicate); a dispatch
// without one uses seed 1.
func (ds *Dataset) Judge(cfg JudgeConfig) troupe.Agent {
	return troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		p, err := ds.ProposalOf(d)
		if err != nil {
			return nil, err
		}
		j, err := ds.Assess(p, SeedOf(d), cfg)
		if err != nil {
			return nil, err
		}
		out, err := asObject(j)
		if err != nil {
			return nil, err
		}
		return &troupe.Result{AgentResult: out, AnalysisSummary: &j.Rationale, Confidence: troupe.Ptr(math.Abs(2*j.Probability - 1))}, nil
	})
}

// asObject encodes v as the JSON object an agent_result is, so the engine, the bundle's
// validation and its distances see exactly what the wire would carry.
func asObject(v any) (map[string]any, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("feasibility: %w", err)
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("feasibility: %w", err)
	}
	return out, nil
}

// SeedOf returns the replicate's seed from the dispatch's user context ("seed"), or 1.
func SeedOf(d *troupe.Dispatch) uint64 {
	switch v := d.UserContext["seed"].(type) {
	case int64:
		return uint64(v)
	case int:
		return uint64(v)
	case uint64:
		return v
	case float64:
		return uint64(v)
	case json.Number:
		n, _ := strconv.ParseUint(string(v), 10, 64)
		return n
	}
	return 1
}

// Decision is the orchestrator's agent_result.
type Decision struct {
	Decision   string  `json:"decision"` // go | no_go | go_with_contingency | no_go_unless_rescoped
	Verdict    string  `json:"verdict"`  // the majority verdict of the valid replicates; infeasible on a tie
	Votes      string  `json:"votes"`    // e.g. "2 of 3 infeasible"
	Confidence float64 `json:"confidence"`
	Unanimous  bool    `json:"unanimous"`
	EarlyStop  bool    `json:"early_stop"`
	// Judges is how many judges ran (the bundle's k). It is not named "replicates": the
	// bundle's agent_result holds the replicates themselves under that key, and the run's
	// aggregation compares fields of the same name across agents, so an echo under the same
	// key would read as a conflict between the orchestrator and the bundle it cites.
	Judges        int      `json:"judges"`
	Disagreements []string `json:"disagreements"` // fields the judges disagree on, most distant first
	Justification string   `json:"justification"`
}

// Decide reads an evidence bundle of judges on p once and decides: unanimous judges (two or
// more valid ones) at or above minConfidence decide outright (go / no_go); otherwise the
// majority verdict stands with a condition (go_with_contingency / no_go_unless_rescoped), a
// tie reading as infeasible. The justification cites the replicates' verdicts, the
// disagreements, the confidence and the distributions, all read from the bundle.
func Decide(p Proposal, b *bundle.Bundle, minConfidence float64) (Decision, error) {
	var verdicts, ids []string
	var drivers [][]string
	invalid := 0
	for i, r := range b.Replicates {
		if !r.Quality.Valid {
			invalid++
			continue
		}
		data, err := b.Data(i)
		if err != nil {
			return Decision{}, fmt.Errorf("feasibility: replicate %s: %w", r.ID, err)
		}
		m, _ := data.(map[string]any)
		v, _ := m["verdict"].(string)
		verdicts = append(verdicts, v)
		ids = append(ids, fmt.Sprintf("%s (seed %d)", r.ID, r.Seed))
		var ds []string
		if arr, ok := m["risk_drivers"].([]any); ok {
			for _, x := range arr {
				if s, ok := x.(string); ok {
					ds = append(ds, s)
				}
			}
		}
		drivers = append(drivers, ds)
	}
	if len(verdicts) == 0 {
		return Decision{}, &troupe.AgentError{Code: troupe.CodeInvalidInput, Message: fmt.Sprintf("feasibility: the bundle has no valid replicate (%d invalid)", invalid), Recoverable: true, FallbackAction: "rerun the bundle"}
	}
	feasible := 0
	for _, v := range verdicts {
		if v == "feasible" {
			feasible++
		}
	}
	d := Decision{Confidence: b.Summary.Confidence, EarlyStop: b.Meta.EarlyStop, Judges: len(b.Replicates), Disagreements: []string{}}
	d.Verdict, d.Votes = "feasible", fmt.Sprintf("%d of %d feasible", feasible, len(verdicts))
	if 2*feasible <= len(verdicts) { // a tie reads cautiously
		d.Verdict, d.Votes = "infeasible", fmt.Sprintf("%d of %d infeasible", len(verdicts)-feasible, len(verdicts))
	}
	d.Unanimous = feasible == 0 || feasible == len(verdicts)
	for _, g := range b.Summary.Disagreements {
		if g.Field != "rationale" { // the judges' prose always differs; their numbers are the evidence
			d.Disagreements = append(d.Disagreements, g.Field)
		}
	}
	outright := d.Unanimous && len(verdicts) > 1 && d.Confidence >= minConfidence // one judge is no agreement
	switch {
	case outright && d.Verdict == "feasible":
		d.Decision = "go"
	case outright:
		d.Decision = "no_go"
	case d.Verdict == "feasible":
		d.Decision = "go_with_contingency"
	default:
		d.Decision = "no_go_unless_rescoped"
	}

	var s strings.Builder
	fmt.Fprintf(&s, "%s: %s. ", p.Question, strings.ReplaceAll(d.Decision, "_", " "))
	if d.EarlyStop {
		dist := 0.0
		if len(b.Summary.PairwiseDistance) > 1 {
			dist = b.Summary.PairwiseDistance[0][1]
		}
		fmt.Fprintf(&s, "The first two judges agreed within ε = %g (distance %.3f), so no further judge ran (k = %d of at most %d). ", b.Meta.Epsilon, dist, b.Meta.K, b.Meta.KMax)
	} else {
		fmt.Fprintf(&s, "%d judges ran (seeds %s). ", len(b.Replicates), joinSeeds(b.Meta.Seeds))
	}
	switch {
	case len(verdicts) == 1:
		// The bundle's confidence is 0 here because there is no pair to measure, not because
		// judges disagree: it must not read as 1 − mean pairwise distance.
		fmt.Fprintf(&s, "Only 1 judge produced valid output, so agreement cannot be measured (confidence 0) and one judge does not decide outright; it finds it %s.", d.Verdict)
	case d.Unanimous:
		fmt.Fprintf(&s, "All %d valid judges find it %s", len(verdicts), d.Verdict)
	default:
		var per []string
		for i, v := range verdicts {
			per = append(per, ids[i]+" "+v)
		}
		if 2*feasible == len(verdicts) {
			// No majority to follow: say so, and how the tie is read.
			fmt.Fprintf(&s, "The judges disagree on the verdict — %s — an even split, %d of %d each way, which reads as infeasible, with a condition", strings.Join(per, ", "), feasible, len(verdicts))
		} else {
			fmt.Fprintf(&s, "The judges disagree on the verdict — %s — so the decision follows the majority, %s, with a condition", strings.Join(per, ", "), d.Votes)
		}
	}
	if len(verdicts) > 1 {
		fmt.Fprintf(&s, "; confidence %.2f (1 − mean pairwise distance), %s the %.2f needed to decide outright.", d.Confidence, map[bool]string{true: "meeting", false: "below"}[d.Confidence >= minConfidence], minConfidence)
	}
	if dist, ok := b.Summary.Distributions["probability"]; ok && dist.Mean != nil {
		fmt.Fprintf(&s, " Probability of meeting the %gk budget and %g-week deadline: mean %.2f", p.BudgetK, p.DeadlineWeeks, *dist.Mean)
		if dist.Stdev != nil && dist.Min != nil && dist.Max != nil {
			fmt.Fprintf(&s, " ± %.2f (range %.2f–%.2f)", *dist.Stdev, *dist.Min, *dist.Max)
		}
		s.WriteString(".")
	}
	var other []string
	for _, g := range b.Summary.Disagreements {
		if g.Field == "verdict" || g.Field == "rationale" {
			continue
		}
		var vals []string
		for _, v := range g.Values {
			vals = append(vals, fmt.Sprint(v))
		}
		other = append(other, fmt.Sprintf("%s (%s)", g.Field, strings.Join(vals, " / ")))
		if len(other) == 3 {
			break
		}
	}
	if len(other) > 0 {
		fmt.Fprintf(&s, " They also differ on %s.", strings.Join(other, ", "))
	}
	if c, ok := b.Summary.Consensus["binding_constraint"]; ok && c != "none" {
		fmt.Fprintf(&s, " All agree the %s is the binding constraint.", c)
	}
	if common := commonDrivers(drivers); len(common) > 0 {
		fmt.Fprintf(&s, " Risks that sink failing draws for every judge: %s.", strings.Join(common, ", "))
	}
	switch d.Decision {
	case "go_with_contingency":
		s.WriteString(" Proceed only with a contingency reserve and a checkpoint on the binding constraint.")
	case "no_go_unless_rescoped":
		s.WriteString(" Do not proceed as scoped; widen the budget or deadline, or cut scope, and ask again.")
	}
	if invalid > 0 {
		fmt.Fprintf(&s, " %d judge(s) produced invalid output and were left out of the vote.", invalid)
	}
	d.Justification = s.String()
	return d, nil
}

func joinSeeds(seeds []int64) string {
	var out []string
	for _, s := range seeds {
		out = append(out, strconv.FormatInt(s, 10))
	}
	return strings.Join(out, ", ")
}

// commonDrivers returns the risk drivers every judge named, in the first judge's order.
func commonDrivers(all [][]string) []string {
	if len(all) == 0 {
		return nil
	}
	var out []string
	for _, r := range all[0] {
		in := true
		for _, ds := range all[1:] {
			in = in && slices.Contains(ds, r)
		}
		if in {
			out = append(out, r)
		}
	}
	return out
}
