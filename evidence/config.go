package evidence

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/troupehq/troupe/bundle"
	"github.com/troupehq/troupe/redact"
)

// Defaults and bounds of Config.
const (
	DefaultK                = 3
	MaxK                    = 32
	DefaultEpsilon          = 0.2
	DefaultReplicateTokens  = 100_000
	DefaultReplicateTimeout = 2 * time.Minute
	DefaultBudgetTimeout    = 10 * time.Minute
	DefaultBudgetCost       = 5.0 // dollars
	DefaultLintTimeout      = time.Second
)

// DefaultSeeds are seed 004's seeds for the first three replicates.
var defaultSeeds = [...]int64{11, 23, 47}

// DefaultSeeds returns seed 004's default seeds, [11, 23, 47], in a new slice each call: the
// caller may change or append to it without changing the defaults.
func DefaultSeeds() []int64 { return slices.Clone(defaultSeeds[:]) }

// Config configures a bundle agent. Every zero value is safe and bounded: nothing is unlimited.
type Config struct {
	// Name tags every event the bundle emits (data["source"]); "" is the dispatch's target agent.
	Name string
	// Task is meta.task of the bundle; "" is the name.
	Task string
	// Model and SchemaVersion go into the bundle's meta for replay. Model "" records the
	// models the replicates report (their results' model_used), distinct, joined by ", ".
	Model         string
	SchemaVersion string

	// K is the most replicates to run, 2 to MaxK; 0 means 3.
	K int
	// Epsilon is the early-stop threshold: when the first two replicates are valid and their
	// distance, rounded to six decimals as the bundle reports it, is at most Epsilon, no more
	// run. In [0, 1]; 0 means 0.2 (to stop only on agreement to six decimals, use a tiny
	// positive value such as 1e-9).
	Epsilon float64
	// Seeds are the replicates' seeds, distinct; nil means [11, 23, 47]. When K exceeds them,
	// further seeds are derived deterministically from the last (see Seeds).
	Seeds []int64

	// Schema is the JSON Schema every replicate's agent_result is validated against (and the
	// source of distance annotations, see bundle.Schema); nil accepts any object.
	Schema []byte
	// Limits caps the bundle (max_fields, max_diffs, max_bytes).
	Limits bundle.Limits
	// DiffEncode writes replicates after the first valid one as patches against it.
	DiffEncode bool

	// Replicate bounds each replicate.
	Replicate Ceiling
	// Budget bounds the whole bundle.
	Budget Budget
	// Stop cancels stragglers once enough is known.
	Stop StopRule

	// Redact configures what is removed from events and, unless KeepRaw, from the bundle.
	Redact redact.Config
	// KeepRaw keeps replicate data unredacted inside the bundle (the result the orchestrator
	// reads). Events are redacted regardless.
	KeepRaw bool

	// Lints run beside the replicates; their findings arrive as warnings and never gate or
	// delay the bundle.
	Lints []Lint
}

// Ceiling bounds one replicate.
type Ceiling struct {
	// Tokens a replicate may use; one that reports more is invalid. 0 means 100,000.
	Tokens int64
	// Timeout of each replicate (also its dispatch's timeout_seconds); 0 means 2 minutes. It
	// holds against a sub-agent that ignores its context (see the package documentation).
	Timeout time.Duration
}

// Budget bounds the whole bundle: once a bound is reached no further replicate starts and
// running ones are cancelled.
type Budget struct {
	// Timeout of the whole bundle; 0 means 10 minutes. Replicates still running then time out
	// and the bundle is built from what finished. A dispatch with its own timeout lowers it, to
	// leave a tenth of that timeout (at most a second, at least half a second, at most half
	// of it) for abandoning replicates that ignore their context and building the bundle.
	Timeout time.Duration
	// Tokens over all replicates; 0 means K × Replicate.Tokens.
	Tokens int64
	// CostDollars over all replicates; 0 means $5, or the dispatch's max_cost_dollars when lower.
	CostDollars float64
}

// StopRule says when replicates still running are stragglers to cancel. Either rule needs at
// least two valid replicates finished. The zero value cancels nothing early.
type StopRule struct {
	// Confidence: cancel the rest once the finished valid replicates agree with at least this
	// confidence. In [0, 1]; 0 disables the rule.
	Confidence float64
	// After: cancel the rest once this long has passed since the bundle started. 0 disables it.
	After time.Duration
	// Valid: cancel the rest once this many replicates have finished valid (a quorum), 2 to K;
	// 0 disables the rule.
	Valid int
}

// Lint is a fast check run on each replicate's output beside the evaluation. Check must honour
// ctx: it is cancelled at its timeout or when the bundle is ready, whichever comes first.
type Lint struct {
	Name string
	// Check returns findings about one replicate's data (nil for none).
	Check func(ctx context.Context, replicate string, data any) []string
	// Timeout of one check; 0 means 1 second.
	Timeout time.Duration
}

// settings is a validated Config with defaults applied.
type settings struct {
	Config
	seeds  []int64
	schema *bundle.Schema
	red    *redact.Redactor
}

func (c Config) settle() (*settings, error) {
	s := &settings{Config: c}
	if s.K == 0 {
		s.K = DefaultK
	}
	if s.K < 2 || s.K > MaxK {
		return nil, fmt.Errorf("evidence: k is %d, want 2 to %d", c.K, MaxK)
	}
	if math.IsNaN(s.Epsilon) || s.Epsilon < 0 || s.Epsilon > 1 {
		return nil, fmt.Errorf("evidence: epsilon is %v, want a value in [0, 1]", c.Epsilon)
	}
	if s.Epsilon == 0 {
		s.Epsilon = DefaultEpsilon
	}
	seeds, err := Seeds(c.Seeds, s.K)
	if err != nil {
		return nil, err
	}
	s.seeds = seeds
	if len(c.Schema) > 0 {
		if s.schema, err = bundle.CompileSchema(c.Schema); err != nil {
			return nil, fmt.Errorf("evidence: %w", err)
		}
	}
	if err := c.Limits.Validate(); err != nil {
		return nil, fmt.Errorf("evidence: %w", err)
	}
	switch {
	case c.Replicate.Tokens < 0:
		return nil, fmt.Errorf("evidence: replicate tokens is %d, want ≥ 0", c.Replicate.Tokens)
	case c.Replicate.Timeout < 0:
		return nil, fmt.Errorf("evidence: replicate timeout is %v, want ≥ 0", c.Replicate.Timeout)
	case c.Budget.Tokens < 0:
		return nil, fmt.Errorf("evidence: budget tokens is %d, want ≥ 0", c.Budget.Tokens)
	case c.Budget.Timeout < 0:
		return nil, fmt.Errorf("evidence: budget timeout is %v, want ≥ 0", c.Budget.Timeout)
	case math.IsNaN(c.Budget.CostDollars) || c.Budget.CostDollars < 0 || math.IsInf(c.Budget.CostDollars, 0):
		return nil, fmt.Errorf("evidence: budget cost is %v, want a finite value ≥ 0", c.Budget.CostDollars)
	case math.IsNaN(c.Stop.Confidence) || c.Stop.Confidence < 0 || c.Stop.Confidence > 1:
		return nil, fmt.Errorf("evidence: stop confidence is %v, want a value in [0, 1]", c.Stop.Confidence)
	case c.Stop.After < 0:
		return nil, fmt.Errorf("evidence: stop after is %v, want ≥ 0", c.Stop.After)
	case c.Stop.Valid != 0 && (c.Stop.Valid < 2 || c.Stop.Valid > s.K):
		return nil, fmt.Errorf("evidence: stop valid is %d, want 2 to k (%d), or 0", c.Stop.Valid, s.K)
	}
	if s.Replicate.Tokens == 0 {
		s.Replicate.Tokens = DefaultReplicateTokens
	}
	if s.Replicate.Timeout == 0 {
		s.Replicate.Timeout = DefaultReplicateTimeout
	}
	if s.Budget.Timeout == 0 {
		s.Budget.Timeout = DefaultBudgetTimeout
	}
	if s.Budget.Tokens == 0 {
		s.Budget.Tokens = int64(s.K) * s.Replicate.Tokens
	}
	if s.Budget.CostDollars == 0 {
		s.Budget.CostDollars = DefaultBudgetCost
	}
	s.Lints = make([]Lint, len(c.Lints))
	for i, l := range c.Lints {
		if l.Name == "" || l.Check == nil {
			return nil, fmt.Errorf("evidence: lints[%d]: a lint needs a name and a check", i)
		}
		if l.Timeout < 0 {
			return nil, fmt.Errorf("evidence: lints[%d] (%s): timeout is %v, want ≥ 0", i, l.Name, l.Timeout)
		}
		if l.Timeout == 0 {
			l.Timeout = DefaultLintTimeout
		}
		s.Lints[i] = l
	}
	if s.red, err = redact.New(c.Redact); err != nil {
		return nil, fmt.Errorf("evidence: %w", err)
	}
	return s, nil
}

// Seeds returns the k seeds replicates use: the given ones (nil means [11, 23, 47]), then
// seeds derived from the last by a SplitMix64 step, in [1, 2³¹), skipping any already used.
// Seeds must be distinct: replicates that share a seed are not independent samples.
func Seeds(seeds []int64, k int) ([]int64, error) {
	if seeds == nil {
		seeds = DefaultSeeds()
	}
	out := make([]int64, 0, max(k, len(seeds)))
	used := make(map[int64]bool, k)
	for i, s := range seeds {
		if used[s] {
			return nil, fmt.Errorf("evidence: seeds[%d] = %d repeats an earlier seed; replicates need distinct seeds", i, s)
		}
		used[s] = true
		out = append(out, s)
	}
	var x uint64
	if len(out) > 0 {
		x = uint64(out[len(out)-1])
	}
	for len(out) < k {
		x += 0x9e3779b97f4a7c15
		z := x
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		z ^= z >> 31
		s := int64(z%(1<<31-1)) + 1
		if !used[s] {
			used[s] = true
			out = append(out, s)
		}
	}
	return out[:k], nil
}

// bundleOptions are the options the bundle is built with: redacted unless KeepRaw — replicate
// data, summary values (by their field paths too), field names and quality errors.
func (s *settings) bundleOptions() bundle.Options {
	opts := bundle.Options{Schema: s.schema, Limits: s.Limits, DiffEncode: s.DiffEncode}
	if !s.KeepRaw {
		opts.Present = s.red.ValueAt
	}
	return opts
}
