package bundle

import "encoding/json"

// PromptHint is seed 004's instruction for the orchestrator that reads a bundle; put it in the
// orchestrator's prompt beside the bundle.
const PromptHint = "Use replicates[] as ground evidence; treat summary as statistics. " +
	"If disagreements exist, cite them and justify your choice. " +
	"Agreement between replicates is agreement, not verification."

// Bundle is seed 004's Evidence Bundle: the raw replicates and the statistics computed over
// them, for an orchestrator to read in one turn. Its JSON encoding is deterministic: the same
// inputs encode to the same bytes (maps encode with sorted keys, slices keep their order, and
// nothing in it depends on time).
//
// The zero value is an empty bundle. A Bundle is a plain value: safe to read concurrently,
// not to modify concurrently.
type Bundle struct {
	Meta       Meta        `json:"meta"`
	Replicates []Replicate `json:"replicates"`
	Summary    Summary     `json:"summary"`
}

// Meta says what the bundle is about and how it was produced: enough to replay it.
type Meta struct {
	Task          string  `json:"task"`
	K             int     `json:"k"`     // replicates in the bundle
	KMax          int     `json:"k_max"` // replicates the configuration allowed
	Model         string  `json:"model"` // "" when unknown; always present, as in seed 004
	Seeds         []int64 `json:"seeds"` // of the replicates in the bundle, in order
	SchemaVersion string  `json:"schema_version"`
	Epsilon       float64 `json:"epsilon"`
	// EarlyStop is true when the first two replicates agreed within epsilon and no more ran.
	EarlyStop bool `json:"early_stop"`
	// Usage is the aggregate over every replicate, and per replicate.
	Usage Usage `json:"usage"`
}

// Usage is what a replicate (or the bundle) consumed.
type Usage struct {
	Tokens      int64   `json:"tokens"`
	CostDollars float64 `json:"cost_dollars"`
	// PerReplicate holds each replicate's own usage; set only on Meta.Usage.
	PerReplicate []ReplicateUsage `json:"per_replicate,omitempty"`
}

// ReplicateUsage is one replicate's usage in Meta.Usage.
type ReplicateUsage struct {
	ID          string  `json:"id"`
	Tokens      int64   `json:"tokens"`
	CostDollars float64 `json:"cost_dollars"`
}

// Replicate is one sub-agent run. Exactly one of Data and Delta carries its output: Data the
// output itself, or — when the bundle is diff-encoded — Delta, a JSON Patch (RFC 6902) that
// turns the output of replicate Base into this one's (Bundle.Data reconstructs it). A replicate
// that produced nothing has neither; DataOmitted says its data was dropped to fit max_bytes.
type Replicate struct {
	ID          string  `json:"id"`
	Seed        int64   `json:"seed"`
	Status      string  `json:"status"` // completed, failed, timeout or cancelled
	Data        any     `json:"data,omitempty"`
	Base        string  `json:"base,omitempty"`
	Delta       []Op    `json:"delta,omitempty"`
	DataOmitted bool    `json:"data_omitted,omitempty"`
	Quality     Quality `json:"quality"`
}

// Quality says whether a replicate's output is valid: it completed and its data satisfies the
// schema. Errors say why not.
type Quality struct {
	Valid  bool     `json:"valid"`
	Errors []string `json:"errors,omitempty"`
}

// Op is one JSON Patch (RFC 6902) operation of a diff-encoded replicate: add, remove or replace.
// It encodes as RFC 6902 says: "value" is present for add and replace, even when it is null,
// and absent for remove.
type Op struct {
	Op    string `json:"op"`
	Path  string `json:"path"` // a JSON Pointer (RFC 6901)
	Value any    `json:"value,omitempty"`
}

// MarshalJSON encodes the operation with "value" whenever the operation takes one.
func (o Op) MarshalJSON() ([]byte, error) {
	if o.Op == "remove" {
		return json.Marshal(struct {
			Op   string `json:"op"`
			Path string `json:"path"`
		}{o.Op, o.Path})
	}
	return json.Marshal(struct {
		Op    string `json:"op"`
		Path  string `json:"path"`
		Value any    `json:"value"`
	}{o.Op, o.Path, o.Value})
}

// Summary is the statistics over the replicates. Field paths name leaves of the replicates'
// data: object keys joined with ".", array positions as "[i]" (a key that would be ambiguous is
// written as ["key"]).
type Summary struct {
	// Consensus maps each field on which every valid replicate (at least two) holds the same
	// value to that value. Agreement, not verification: replicates can agree and be wrong.
	Consensus map[string]any `json:"consensus"`
	// Disagreements are the fields on which replicates with data differ — invalid replicates
	// included — most distant first, at most max_diffs of them.
	Disagreements []Disagreement `json:"disagreements"`
	// PairwiseDistance[i][j] is the distance between replicates i and j, in [0, 1].
	PairwiseDistance [][]float64 `json:"pairwise_distance"`
	// Distributions describe each numeric field (and each categorical field the valid replicates
	// disagree on) over the valid replicates.
	Distributions map[string]Distribution `json:"distributions"`
	// Confidence is 1 − the mean pairwise distance between valid replicates, in [0, 1]; 0 when
	// fewer than two replicates are valid, since agreement cannot be measured.
	Confidence float64 `json:"confidence"`
	// Truncated is true when a cap left something out; Omitted counts what.
	Truncated bool     `json:"truncated"`
	Omitted   *Omitted `json:"omitted,omitempty"`
}

// Disagreement is one field on which replicates differ: Values[i] is what replicate
// Replicates[i] holds; Missing lists replicates with data that lack the field.
type Disagreement struct {
	Field      string   `json:"field"`
	Values     []any    `json:"values"`
	Replicates []string `json:"replicates"`
	Missing    []string `json:"missing,omitempty"`
	// Distance is the field's mean pairwise distance over the replicates with data (a missing
	// field counting 1); disagreements are ranked by it.
	Distance float64 `json:"distance"`
}

// Distribution describes one field over the valid replicates: N values, the mean, population
// standard deviation, minimum and maximum of the numeric ones, and Counts of the others (for a
// multi-valued field, of each element). A Counts key is a string value as it is and any other
// value as JSON — strings too when other kinds of values share the field, so "true" and true
// are counted apart.
type Distribution struct {
	N      int            `json:"n"`
	Mean   *float64       `json:"mean,omitempty"`
	Stdev  *float64       `json:"stdev,omitempty"`
	Min    *float64       `json:"min,omitempty"`
	Max    *float64       `json:"max,omitempty"`
	Counts map[string]int `json:"counts,omitempty"`
}

// Omitted counts what the caps left out of a truncated bundle.
type Omitted struct {
	Consensus     int `json:"consensus,omitempty"`
	Disagreements int `json:"disagreements,omitempty"`
	Distributions int `json:"distributions,omitempty"`
	// ReplicateData counts replicates whose data was dropped to fit max_bytes.
	ReplicateData int `json:"replicate_data,omitempty"`
}

// Input is one replicate as the caller ran it, before statistics. The zero value is a
// completed replicate without data, hence invalid.
type Input struct {
	ID     string
	Seed   int64
	Status string // "" means completed
	// Data is the replicate's output as encoding/json decodes JSON (map[string]any, []any,
	// float64, string, bool, nil; other numeric types and json.Number are read as numbers);
	// nil when it produced none.
	Data any
	// Errors are why the replicate is invalid (failure, schema violations); none means valid
	// if it completed with data.
	Errors []string
	Usage  Usage
}

// Valid reports whether in counts as a valid replicate: completed, with data, without errors.
func (in *Input) Valid() bool {
	return (in.Status == "" || in.Status == "completed") && in.Data != nil && len(in.Errors) == 0
}
