package llmroute

import (
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/agent/llmagent"
)

// Intents are seed 000's intent types (AgentSelectionCriteria.intent_type), with the
// descriptions the default prompt gives the model.
var Intents = []Intent{
	{"causal", "why something happened or what caused a change; the effect of an action"},
	{"exploratory", "open-ended looking around: where are the gaps, what stands out"},
	{"comparative", "comparing groups, segments, products or periods against each other"},
	{"trend", "how a metric moved over time; drift, growth or decline"},
	{"what_if", "a hypothetical or a planned change: what would happen if"},
	{"ml_training", "training, building or selecting a machine learning model"},
	{"model_deployment", "deploying, releasing or serving a model"},
	{"monitoring", "health, status or alerts of running systems, data or models"},
}

// Intent is one label the model may choose, with what it means.
type Intent struct {
	Name        string
	Description string
}

// Defaults for Config's zero values.
const (
	DefaultTimeout   = 30 * time.Second
	DefaultCacheSize = 4096
)

// Config configures a Router. The zero value of every field but Rules and LLM.Model is safe
// and bounded.
type Config struct {
	// Rules is the rule router consulted first; required. Its decision stands unless it fell
	// to its default (metadata "source": "default", as route.Rules reports) or it found no
	// agent at all (an error wrapping troupe.ErrUnknownAgent); any other error it returns,
	// such as route.Rules's for a parsed query of the wrong shape, is Route's.
	Rules troupe.Router
	// Intents the model chooses from; nil means seed 000's eight (Intents).
	Intents []Intent
	// LLM is the classifier's model and endpoint. The router sets what makes a classification
	// repeatable and checkable: temperature 0 and seed 0 unless set, a JSON Schema whose
	// "intent" is one of the intents, no tools, no streaming, and no re-ask unless
	// LLM.MaxReasks asks for some. An empty LLM.System lists the intents; an empty LLM.Prompt
	// is the message.
	LLM llmagent.Config
	// Timeout bounds one classification, within the run's context (cancelling the run
	// stops the classification); 0 means DefaultTimeout.
	Timeout time.Duration
	// CacheSize bounds the classifications remembered; 0 means DefaultCacheSize. When the
	// cache is full, the least recently used classification is forgotten.
	CacheSize int
}

// Router is a troupe.Router that asks a model for the intent of a message its rule router
// cannot place, then routes on that intent with the same rules. It is safe for concurrent
// use. The zero value is not usable; call New.
type Router struct {
	rules   troupe.Router
	agent   *llmagent.Agent
	labels  []string
	timeout time.Duration

	mu    sync.Mutex
	cache map[string]*list.Element // input key → its entry in recent
	// recent holds the cached classifications (*cached), most recently used first: a hit
	// moves its entry to the front and eviction takes the back, so a query asked again and
	// again stays cached however many one-off queries pass through.
	recent *list.List
	limit  int
	asks   map[string]*inflight // input key → the classification under way
}

// cached is one remembered classification.
type cached struct {
	key, intent string
}

// inflight is one classification under way, which concurrent callers with the same inputs
// wait for rather than ask the model again. Its fields are set before done is closed.
type inflight struct {
	done      chan struct{}
	intent    string
	err       error
	cancelled bool // the asker's context ended: the failure says nothing about the input
}

var _ troupe.Router = (*Router)(nil)

// New validates cfg and builds the router.
func New(cfg Config) (*Router, error) {
	if cfg.Rules == nil {
		return nil, errors.New("llmroute: config: rules: required")
	}
	if cfg.Intents == nil {
		cfg.Intents = Intents
	}
	if len(cfg.Intents) == 0 {
		return nil, errors.New("llmroute: config: intents: empty")
	}
	if cfg.Timeout < 0 || cfg.CacheSize < 0 {
		return nil, fmt.Errorf("llmroute: config: negative timeout (%v) or cache_size (%d)", cfg.Timeout, cfg.CacheSize)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.CacheSize == 0 {
		cfg.CacheSize = DefaultCacheSize
	}
	labels := make([]string, len(cfg.Intents))
	var menu strings.Builder
	for i, in := range cfg.Intents {
		if in.Name == "" || slices.Contains(labels[:i], in.Name) {
			return nil, fmt.Errorf("llmroute: config: intents[%d]: empty or repeated name %q", i, in.Name)
		}
		labels[i] = in.Name
		fmt.Fprintf(&menu, "- %s: %s\n", in.Name, in.Description)
	}
	l := cfg.LLM
	if l.Temperature == nil {
		l.Temperature = new(float64)
	}
	if l.Seed == nil {
		l.Seed = new(int64)
	}
	if l.MaxReasks == 0 {
		l.MaxReasks = -1
	}
	l.Tools, l.Stream = nil, false
	if l.System == "" {
		l.System = "You classify a user's message by its intent. Choose exactly one of these intents:\n" + menu.String() +
			`Answer with a JSON object {"intent": "<one of the intents above>"} and nothing else.`
	}
	if l.Prompt == "" {
		l.Prompt = "{{.Query}}"
	}
	schema, _ := json.Marshal(map[string]any{
		"type":                 "object",
		"properties":           map[string]any{"intent": map[string]any{"type": "string", "enum": labels}},
		"required":             []string{"intent"},
		"additionalProperties": false,
	})
	l.Schema, l.SchemaName = schema, "intent"
	a, err := llmagent.New(l)
	if err != nil {
		return nil, fmt.Errorf("llmroute: %w", err)
	}
	return &Router{rules: cfg.Rules, agent: a, labels: labels, timeout: cfg.Timeout,
		cache: make(map[string]*list.Element), recent: list.New(), limit: cfg.CacheSize, asks: make(map[string]*inflight)}, nil
}

// Route asks the rule router first. When it matched something other than its default, that
// decision stands and no model is asked. Otherwise the model classifies the message, and the
// rule router decides again with ParsedQuery["intent"] set to the model's intent (and any
// "intent_type" removed, since route.Rules reads either); the decision's metadata then holds
// "classifier": "llm", "llm_intent" and "llm_model".
//
// Classifications are cached by the message and parsed query, so the same inputs give the
// same decision, down to its JSON, but for tokens_used and cost_dollars: only a decision that
// asked the model carries what asking cost (the engine counts it toward the run's budgets and
// totals); a cached one cost nothing. The model is asked within ctx, bounded by
// Config.Timeout; when ctx ends first, Route returns its cause. On any other failure —
// transport, timeout, an intent not in the list, an intent the rules do not place — the rule
// router's own decision stands (its default) with "llm_fallback" in its metadata saying why;
// failures are not cached, so a later call may classify. When the rule router has no default
// either, Route returns its error with the reason added. An error of the rule router other
// than finding no agent (troupe.ErrUnknownAgent) is returned as it is, and no model is asked.
func (r *Router) Route(ctx context.Context, in troupe.RouteInput, c troupe.Context) (troupe.RoutingDecision, error) {
	first, ferr := r.rules.Route(ctx, in, c)
	switch {
	case ferr == nil && first.Metadata["source"] != "default":
		return first, nil
	case ferr != nil && !errors.Is(ferr, troupe.ErrUnknownAgent):
		// Not "no agent": the input is wrong (a parsed query of the wrong shape), and an
		// intent from the model would only route around what the rules refuse.
		return troupe.RoutingDecision{}, ferr
	}
	intent, usage, err := r.classify(ctx, in)
	if err == nil {
		second := in
		second.ParsedQuery = maps.Clone(in.ParsedQuery)
		if second.ParsedQuery == nil {
			second.ParsedQuery = map[string]any{}
		}
		delete(second.ParsedQuery, "intent_type") // the rules read either key: the model's intent replaces both
		second.ParsedQuery["intent"] = intent
		dec, rerr := r.rules.Route(ctx, second, c)
		switch {
		case rerr != nil:
			err = fmt.Errorf("llmroute: intent %q: %w", intent, rerr)
		case dec.Metadata["source"] == "default":
			err = fmt.Errorf("llmroute: the rules route no agent for intent %q", intent)
		default:
			meta := maps.Clone(dec.Metadata)
			if meta == nil {
				meta = map[string]any{}
			}
			meta["classifier"], meta["llm_intent"], meta["llm_model"] = "llm", intent, r.agent.Model()
			dec.Metadata = meta
			dec.Reason = fmt.Sprintf("no rule matched the message; %s classified its intent as %q: %s", r.agent.Model(), intent, dec.Reason)
			usage.charge(&dec)
			return dec, nil
		}
	}
	// What asking the model cost is on the decision returned with an error too: the engine
	// counts a decision's usage whether or not routing succeeded.
	var spent troupe.RoutingDecision
	usage.charge(&spent)
	if ctx.Err() != nil {
		return spent, context.Cause(ctx) // the run was cancelled: decide nothing
	}
	if ferr != nil {
		return spent, fmt.Errorf("%w (LLM classification failed: %v)", ferr, err)
	}
	meta := maps.Clone(first.Metadata)
	if meta == nil {
		meta = map[string]any{}
	}
	meta["llm_fallback"] = err.Error()
	first.Metadata = meta
	first.Reason += " (LLM classification failed: " + err.Error() + ")"
	usage.charge(&first)
	return first, nil
}

// usage is what one classification cost, as the model's result reported it.
type usage struct {
	tokens *int64
	cost   *float64
}

// charge puts the classification's cost on the decision, which the engine counts toward the
// run's budgets and totals. A zero (a model without prices) is left out.
func (u usage) charge(d *troupe.RoutingDecision) {
	if u.tokens != nil && *u.tokens > 0 {
		d.TokensUsed = u.tokens
	}
	if u.cost != nil && *u.cost > 0 {
		d.CostDollars = u.cost
	}
}

// classify returns the model's intent for in, from the cache when it was asked before;
// concurrent calls with the same inputs share one request. A caller waiting for another's
// request stops when its own context ends, and asks again itself when the other's context
// ended first: one run's cancellation is no failure of another's classification.
func (r *Router) classify(ctx context.Context, in troupe.RouteInput) (string, usage, error) {
	key, err := cacheKey(in)
	if err != nil {
		return "", usage{}, err
	}
	for {
		r.mu.Lock()
		if e, ok := r.cache[key]; ok {
			r.recent.MoveToFront(e)
			intent := e.Value.(*cached).intent
			r.mu.Unlock()
			return intent, usage{}, nil // a cached classification costs nothing
		}
		if a, ok := r.asks[key]; ok {
			r.mu.Unlock()
			select {
			case <-a.done:
			case <-ctx.Done():
				return "", usage{}, context.Cause(ctx)
			}
			if a.cancelled {
				continue
			}
			// Only the caller that asked the model is charged; those sharing its answer pay
			// nothing, and tokens are counted once.
			return a.intent, usage{}, a.err
		}
		a := &inflight{done: make(chan struct{})}
		r.asks[key] = a
		r.mu.Unlock()
		return r.ask(ctx, key, in, a)
	}
}

// ask asks the model for in's intent on behalf of every caller waiting for a.
func (r *Router) ask(ctx context.Context, key string, in troupe.RouteInput, a *inflight) (intent string, spent usage, err error) {
	defer func() {
		r.mu.Lock()
		delete(r.asks, key)
		if err == nil && intent == "" { // Run panicked; the panic goes on up
			err = errors.New("llmroute: the classification did not finish")
		}
		if err == nil {
			r.remember(key, intent)
		}
		a.intent, a.err, a.cancelled = intent, err, ctx.Err() != nil
		r.mu.Unlock()
		close(a.done)
	}()
	callCtx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	d := troupe.NewDispatch()
	d.TargetAgent, d.DispatchReason, d.Query, d.ParsedQuery = "llmroute", "classify intent", in.Query, in.ParsedQuery
	res, err := r.agent.Run(callCtx, d)
	if res != nil {
		spent = usage{tokens: res.TokensUsed, cost: res.CostDollars}
	}
	if err != nil {
		return "", spent, err
	}
	intent, _ = res.AgentResult["intent"].(string)
	if !slices.Contains(r.labels, intent) { // the schema already says so; keep the guard local
		return "", spent, fmt.Errorf("llmroute: %q is not one of the intents", intent)
	}
	return intent, spent, nil
}

// remember caches key's intent as the most recently used, forgetting the least recently
// used when the cache is full; r.mu is held.
func (r *Router) remember(key, intent string) {
	if e, ok := r.cache[key]; ok {
		r.recent.MoveToFront(e)
		return
	}
	if r.recent.Len() >= r.limit {
		oldest := r.recent.Back()
		delete(r.cache, r.recent.Remove(oldest).(*cached).key)
	}
	r.cache[key] = r.recent.PushFront(&cached{key: key, intent: intent})
}

// cacheKey identifies what the model sees: the message and the parsed query (encoding/json
// sorts map keys, so equal inputs give equal keys).
func cacheKey(in troupe.RouteInput) (string, error) {
	b, err := json.Marshal([]any{in.Query, in.ParsedQuery})
	if err != nil {
		return "", fmt.Errorf("llmroute: parsed query cannot be encoded: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}
