package flow

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/internal/stray"
)

// ToolPrefix starts the name of every agent tool (seed 002: "delegate_to_{agentName}").
const ToolPrefix = "delegate_to_"

var defaultToolSchema = json.RawMessage(`{"type":"object","properties":{"task":{"type":"string","description":"what the agent should do"}},"required":["task"]}`)

// AsTool wraps an agent as a tool named delegate_to_{name} that another agent — an LLM agent
// choosing among its tools — can call during its own dispatch (seed 002's createAgentTool).
// opts are the registration options: Describe sets the tool's description, InputSchema its
// arguments' schema (checked before the agent runs), OutputSchema the agent's result's,
// MaxDepth the deepest call stack at which the agent may be called (default 5; at most
// MaxNesting, which bounds every nesting, so a larger MaxDepth is a configuration error, not
// a silent cap), Reads, Writes and WithTimeout as for any member of a composite.
//
// The call stack travels in ctx. It holds the agents on the path to the one called: the agent
// that made the first call, each agent called through a tool and, when a tool wraps a
// composite, the member that made the next call. A call to an agent already on it, or to a
// composite whose dispatch encloses the caller's (a member calling its own composite, which
// the engine planned and no tool call put on the stack), fails with a
// *troupe.CircularDependencyError naming the cycle, a call deeper than the called agent's
// MaxDepth with a *troupe.MaxDepthExceededError. The called agent runs as a nested dispatch of
// caller: its events appear in caller's run, its state reads see caller's session state, and
// its state writes stay local to the call (recorded as nested state_delta events). The tool
// returns the agent's agent_result as JSON; a failure returns its seed 003 *troupe.AgentError.
//
// The called agent's tokens_used and cost_dollars — on success and on failure — are added to
// the Usage of ctx (see WithUsage), for the calling agent to count in its own result; with no
// Usage in ctx they are counted nowhere. So is its requires_human, when its result completed
// asking for a human's review: Usage.AddTo sets it on the caller's result, which the engine
// reviews. Its agent_result alone is what the tool returns.
//
// With WithTimeout, the call returns a TIMEOUT error once the timeout has passed even when the
// agent ignores its context: one still running 250 ms after its timeout is left running, and
// its late answer is dropped. The tool is a troupe.Teardowner whose Teardown waits for such
// calls to return; whoever owns the tool calls it before letting go of it.
//
// The tool is safe for concurrent use.
func AsTool(name string, a troupe.Agent, opts ...troupe.Option) troupe.Tool {
	t := &agentTool{spec: Named(name, a, opts...)}
	t.info = troupe.ToolInfo{Name: ToolPrefix + name, Description: t.spec.Description, InputSchema: t.spec.InputSchema}
	if t.info.Description == "" {
		t.info.Description = "Delegate a task to the " + name + " agent and get its result."
	}
	if t.info.InputSchema == nil {
		t.info.InputSchema = defaultToolSchema
	}
	h := fnv.New64a()
	h.Write([]byte(name))
	t.salt = h.Sum64()
	return t
}

type agentTool struct {
	spec  *troupe.AgentSpec
	info  troupe.ToolInfo
	salt  uint64
	lazy  lazy
	calls atomic.Uint64 // ordinals of calls whose caller's runtime has none to give
	// strays are calls abandoned past the agent's timeout, still running: Teardown waits for
	// them.
	strays stray.Tracker
}

func (t *agentTool) Info() troupe.ToolInfo { return t.info }

// Teardown waits for calls abandoned past the agent's timeout to return, or until ctx ends
// (troupe.Teardowner). It does not tear the agent down: the tool never sets it up.
func (t *agentTool) Teardown(ctx context.Context) error {
	return waitStrays(ctx, &t.strays, t.info.Name)
}

type stackKey struct{}

// CallStack returns the agents on the call stack of ctx, outermost first: the agents that,
// through agent tools, called the one running with ctx. It is nil outside an agent tool call.
func CallStack(ctx context.Context) []string {
	s, _ := ctx.Value(stackKey{}).([]string)
	return slices.Clone(s)
}

// Call runs the agent on args — a JSON object: its "task" string becomes the dispatch's query,
// the whole object its parsed_query.
func (t *agentTool) Call(ctx context.Context, caller *troupe.Dispatch, args json.RawMessage) (json.RawMessage, error) {
	ms, err := t.lazy.get(t.info.Name, []*troupe.AgentSpec{t.spec})
	if err != nil {
		return nil, err
	}
	if t.spec.MaxDepth > MaxNesting {
		// The call at depth MaxNesting+1 would fail anyway, reporting MaxNesting as its limit:
		// a deeper MaxDepth could never be honoured.
		return nil, fmt.Errorf("flow: %s: agent %s: max depth %d is above flow.MaxNesting (%d), the deepest any dispatch nests",
			t.info.Name, t.spec.Name, t.spec.MaxDepth, MaxNesting)
	}
	if caller == nil {
		caller = troupe.NewDispatch()
	}
	stack, _ := ctx.Value(stackKey{}).([]string)
	if c := caller.TargetAgent; c != "" && (len(stack) == 0 || stack[len(stack)-1] != c) {
		// The caller is not the agent the last tool call ran but a member of a composite
		// that tool wraps (or the planned agent at the bottom): it is on the stack too.
		stack = append(stack[:len(stack):len(stack)], c)
	}
	name := t.spec.Name
	if i := slices.Index(stack, name); i >= 0 {
		return nil, &troupe.CircularDependencyError{Cycle: append(slices.Clone(stack[i:]), name)}
	}
	// The call stack holds tool calls; a composite enclosing the caller is on none. Calling
	// one (a member of team calling team as a tool) is a cycle too, found before it runs again.
	outer := enclosingOf(caller)
	if i := slices.Index(outer, name); i >= 0 {
		return nil, &troupe.CircularDependencyError{Cycle: append(slices.Clone(outer[i:]), name)}
	}
	next := make([]string, len(stack)+1)
	copy(next, stack)
	next[len(stack)] = name
	limit := t.spec.MaxDepth
	if limit == 0 {
		limit = troupe.DefaultMaxDepth
	}
	if len(next) > limit {
		return nil, &troupe.MaxDepthExceededError{Stack: next, MaxDepth: limit}
	}

	var parsed map[string]any
	if err := json.Unmarshal(args, &parsed); err != nil || parsed == nil {
		return nil, &troupe.AgentError{Code: troupe.CodeInvalidInput, FallbackAction: "call the tool with a JSON object",
			Message: fmt.Sprintf("flow: %s: arguments must be a JSON object, got %s", t.info.Name, truncate(string(bytes.TrimSpace(args)), 80))}
	}
	query, _ := parsed["task"].(string)
	if query == "" {
		query = string(args)
	}
	var ordinal uint64
	if em := caller.Emitter(); em != nil {
		ordinal = em.NextChild()
	} else {
		ordinal = t.calls.Add(1) - 1
	}
	f := frameOf(caller, &t.strays)
	in := input{id: childID(caller.DispatchID, saltTool, t.salt, ordinal), query: query, parsed: parsed, mode: troupe.Sequential,
		reason: "called as tool " + t.info.Name}
	if len(stack) > 0 {
		in.reason += " by " + stack[len(stack)-1]
	}
	m := ms[0]
	m.tool = true
	res, cause := f.run(context.WithValue(ctx, stackKey{}, next), &m, in, over(caller))
	if res.TokensUsed != nil || res.CostDollars != nil {
		UsageFrom(ctx).Add(deref(res.TokensUsed), deref(res.CostDollars))
	}
	if res.Status == troupe.StatusCompleted && res.RequiresHuman {
		// The engine reviews the results of the dispatches it planned: the called agent's
		// request for a human's review reaches the human through its caller's result, as a
		// composite member's does through its composite's.
		UsageFrom(ctx).requireHuman()
	}
	if res.Status != troupe.StatusCompleted {
		if cause != nil && (res.Status == troupe.StatusFailed || res.Status == troupe.StatusTimeout && errors.Is(cause, troupe.ErrTimeout)) {
			// The agent's own error, typed errors included (a cycle found deeper down, a
			// timeout it reports as troupe.ErrTimeout).
			return nil, fmt.Errorf("flow: %s: %w", t.info.Name, cause)
		}
		return nil, errorOf("flow: "+t.info.Name, res)
	}
	out, err := json.Marshal(res.AgentResult)
	if err != nil {
		return nil, &troupe.AgentError{Code: troupe.CodeInvalidOutput, Message: fmt.Sprintf("flow: %s: result is not JSON: %v", t.info.Name, err)}
	}
	return out, nil
}

type usageKey struct{}

// Usage sums the tokens and cost that agents called through agent tools spend on behalf of the
// agent that called them, which AsTool's Call cannot return beside the called agent's answer.
// An agent that calls tools opens one with WithUsage, passes the context it returns to each
// Tool.Call, and adds the sum to its own result (AddTo) — so the engine, which counts each
// planned dispatch's result once, counts the tools' spending within it, once.
//
// Usage is safe for concurrent use. Its methods do nothing on a nil *Usage (reading gives 0),
// so a tool may add to UsageFrom(ctx) whether or not its caller opened one.
//
// It also records whether an agent called through a tool completed asking for a human's
// review (requires_human): AddTo passes that on to the caller's result, so the request reaches
// the run's review instead of being lost with the called agent's result.
type Usage struct {
	mu     sync.Mutex
	tokens int64
	cost   float64
	added  bool
	human  bool
}

// WithUsage returns a context carrying a new, empty Usage, and that Usage. Agent tools called
// with the context, or with one derived from it, add to it what their agents spend, including
// what agent tools called by those agents spend unless those agents open a Usage of their own.
// Whoever opens a Usage owns what it holds: it must add the sum to its result, or it is lost.
func WithUsage(ctx context.Context) (context.Context, *Usage) {
	u := new(Usage)
	return context.WithValue(ctx, usageKey{}, u), u
}

// UsageFrom returns the Usage most recently opened in ctx's ancestry, or nil if there is none.
func UsageFrom(ctx context.Context) *Usage {
	u, _ := ctx.Value(usageKey{}).(*Usage)
	return u
}

// Add records tokens and cost spent by a tool's call.
func (u *Usage) Add(tokens int64, cost float64) {
	if u == nil {
		return
	}
	u.mu.Lock()
	u.tokens += tokens
	u.cost += cost
	u.added = true
	u.mu.Unlock()
}

// requireHuman records that an agent called through a tool asked for a human's review.
func (u *Usage) requireHuman() {
	if u == nil {
		return
	}
	u.mu.Lock()
	u.human = true
	u.mu.Unlock()
}

// RequiresHuman says whether an agent called through a tool completed asking for a human's
// review (requires_human); the caller's result should ask for it too (AddTo sets it).
func (u *Usage) RequiresHuman() bool {
	if u == nil {
		return false
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.human
}

// Tokens returns the tokens recorded so far.
func (u *Usage) Tokens() int64 {
	if u == nil {
		return 0
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.tokens
}

// Cost returns the cost in dollars recorded so far.
func (u *Usage) Cost() float64 {
	if u == nil {
		return 0
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.cost
}

// AddTo adds what u recorded to r's TokensUsed and CostDollars (setting them when r has none),
// and sets r's RequiresHuman when a called agent asked for a human's review. It leaves r as it
// is when nothing was recorded. Call it once, on the final result.
func (u *Usage) AddTo(r *troupe.Result) {
	if u == nil || r == nil {
		return
	}
	u.mu.Lock()
	tokens, cost, added, human := u.tokens, u.cost, u.added, u.human
	u.mu.Unlock()
	if human {
		r.RequiresHuman = true
	}
	if !added {
		return
	}
	r.TokensUsed = troupe.Ptr(deref(r.TokensUsed) + tokens)
	r.CostDollars = troupe.Ptr(deref(r.CostDollars) + cost)
}

func deref[T int64 | float64](p *T) T {
	if p == nil {
		return 0
	}
	return *p
}
