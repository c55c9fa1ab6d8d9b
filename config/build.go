package config

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/internal/schema"
	"github.com/troupehq/troupe/plan"
	"github.com/troupehq/troupe/route"
)

// Factory builds the agent of one kind from its declaration. b gives access to the file, the
// program's builtin agents and the other agents of the file (for composites). A factory that
// finds several problems returns them all, joined with errors.Join: Build reports each at its
// own place.
type Factory func(ctx context.Context, b *Builder, a *Agent) (troupe.Agent, error)

// Factories maps a kind to its factory. A program passes the kinds it supports to Build:
// this package knows the format of every kind but builds only builtin agents itself, so it
// depends on no transport or runtime; cmd/troupe wires exec, http, llm, mcp and the composites.
// A new kind (a2a) slots in as a block of its own name and a factory here, as llm did.
type Factories map[string]Factory

// Options are what Build needs from the program.
type Options struct {
	// Builtins holds the Go agents builtin agents name; nil has none.
	Builtins *troupe.Registry
	// Factories builds agents by kind; builtin needs none.
	Factories Factories
}

// Builder builds a file's agents, each once, children before the composites holding them.
// It is used by one Build call at a time.
type Builder struct {
	File     *File
	Builtins *troupe.Registry
	kinds    Factories
	built    map[string]troupe.Agent
	building map[string]bool
}

// Agent returns the built agent name, building it first if needed.
func (b *Builder) Agent(ctx context.Context, name string) (troupe.Agent, error) {
	if a, ok := b.built[name]; ok {
		return a, nil
	}
	decl, ok := b.File.Agents[name]
	if !ok {
		return nil, fmt.Errorf("config: %w %q", troupe.ErrUnknownAgent, name)
	}
	if b.building[name] {
		return nil, fmt.Errorf("config: agent %q contains itself", name)
	}
	b.building[name] = true
	defer delete(b.building, name)
	var a troupe.Agent
	var err error
	if decl.Kind == KindBuiltin {
		a, err = b.builtin(decl)
	} else if f := b.kinds[decl.Kind]; f != nil {
		a, err = f(ctx, b, decl)
	} else {
		err = decl.Field(fmt.Errorf("kind %s is not supported by this program", decl.Kind), "kind")
	}
	if err != nil {
		return nil, err
	}
	b.built[name] = a
	return a, nil
}

func (b *Builder) builtin(decl *Agent) (troupe.Agent, error) {
	// The Go agent's name is builtin.name, else the agent's own: its key, where Build places
	// an error without a field.
	name := decl.Name
	fail := func(err error) error { return fmt.Errorf("config: %w", err) }
	if decl.Builtin != nil && decl.Builtin.Name != "" {
		name = decl.Builtin.Name
		fail = func(err error) error { return decl.Field(err, "builtin", "name") }
	}
	if b.Builtins == nil {
		return nil, fail(fmt.Errorf("builtin agent %q: this program registers no builtin agents", name))
	}
	spec, ok := b.Builtins.Spec(name)
	if !ok {
		return nil, fail(fmt.Errorf("no builtin agent %q; this program has %s", name, strings.Join(b.Builtins.Names(), ", ")))
	}
	return spec.Agent, nil
}

// Options returns the registration options of the agent name: what it declares (reads,
// writes, after, timeout, input and output schemas) and its description. Build registers
// agents with them; a composite's factory gives them to its members.
func (b *Builder) Options(name string) ([]troupe.Option, error) {
	a, ok := b.File.Agents[name]
	if !ok {
		return nil, fmt.Errorf("config: %w %q", troupe.ErrUnknownAgent, name)
	}
	return specOptions(b.File, a, b.Builtins)
}

// Declared returns the agent name, built, with its registration options: what Build registers,
// and what a composite's factory gives its members.
func (b *Builder) Declared(ctx context.Context, name string) (troupe.Agent, []troupe.Option, error) {
	a, err := b.Agent(ctx, name)
	if err != nil {
		return nil, nil, err
	}
	opts, err := b.Options(name)
	if err != nil {
		return nil, nil, err
	}
	return a, opts, nil
}

// Path resolves p, relative to the file's directory.
func (b *Builder) Path(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(b.File.Dir, p)
}

// Build builds every agent of f and registers it with what it declares: description, reads,
// writes, after, timeout, and its input and output schemas, which the engine enforces. Agents are
// registered in file order. It returns Errors, each at the field at fault when the error a
// factory returned is or wraps a FieldError, else at the agent; the problems of an error that
// joins several (errors.Join) are each reported; a problem met through several agents (a member
// of two composites, a server two agents use) is reported once.
func Build(ctx context.Context, f *File, opts Options) (*troupe.Registry, error) {
	b := &Builder{File: f, Builtins: opts.Builtins, kinds: opts.Factories, built: map[string]troupe.Agent{}, building: map[string]bool{}}
	reg := troupe.NewRegistry()
	var errs Errors
	for _, n := range f.Order {
		a, opts, err := b.Declared(ctx, n)
		if err == nil {
			err = reg.Add(n, a, opts...)
		}
		for _, err := range joined(err) {
			errs = append(errs, f.errorOf(pointer("agents", n), err))
		}
	}
	if len(errs) > 0 {
		return nil, sortErrors(errs)
	}
	return reg, nil
}

// joined returns the problems err joins with errors.Join, each one's own joined ones in turn;
// err alone when it joins none; none when it is nil. An error that says more than the problems
// it wraps (fmt.Errorf("mcp s: %w; %w", …)) is one problem: split, its words would be lost.
func joined(err error) []error {
	if err == nil {
		return nil
	}
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []error{err}
	}
	var out []error
	var msgs []string
	for _, e := range j.Unwrap() {
		if e != nil {
			out = append(out, joined(e)...)
			msgs = append(msgs, e.Error())
		}
	}
	if err.Error() != strings.Join(msgs, "\n") {
		return []error{err}
	}
	return out
}

// Catalog registers f's agents with what they declare but without building them: each
// fails if dispatched. It is what planning needs — "troupe plan" runs nothing, so it needs
// neither subprocesses nor endpoints.
func Catalog(f *File) (*troupe.Registry, error) {
	reg := troupe.NewRegistry()
	for _, n := range f.Order {
		opts, err := specOptions(f, f.Agents[n], nil)
		if err != nil {
			return nil, err
		}
		name := n
		unbuilt := troupe.AgentFunc(func(context.Context, *troupe.Dispatch) (*troupe.Result, error) {
			return nil, fmt.Errorf("config: agent %q was catalogued for planning, not built to run", name)
		})
		if err := reg.Add(n, unbuilt, opts...); err != nil {
			return nil, fmt.Errorf("config: %w", err)
		}
	}
	return reg, nil
}

func specOptions(f *File, a *Agent, builtins *troupe.Registry) ([]troupe.Option, error) {
	desc := a.Description
	if desc == "" && a.Kind == KindBuiltin && builtins != nil {
		name := a.Name
		if a.Builtin != nil && a.Builtin.Name != "" {
			name = a.Builtin.Name
		}
		if s, ok := builtins.Spec(name); ok {
			desc = s.Description
		}
	}
	opts := []troupe.Option{troupe.Describe(desc)}
	reads, input, inputOf := f.needs(a)
	if len(reads) > 0 {
		opts = append(opts, troupe.Reads(reads...))
	}
	if len(a.Writes) > 0 {
		opts = append(opts, troupe.Writes(a.Writes...))
	}
	if len(a.After) > 0 {
		opts = append(opts, troupe.After(a.After...))
	}
	if a.Timeout > 0 {
		opts = append(opts, troupe.WithTimeout(time.Duration(a.Timeout)))
	}
	// The engine (and flow, for members of composites) checks these: an input that does not
	// meet its schema fails with INVALID_INPUT, an output with INVALID_OUTPUT.
	if len(input) > 0 {
		b, err := schemaBytes(f.Dir, input)
		if err != nil {
			return nil, inputOf.Field(err, "input_schema")
		}
		opts = append(opts, troupe.InputSchema(b))
	}
	if len(a.OutputSchema) > 0 {
		b, err := schemaBytes(f.Dir, a.OutputSchema)
		if err != nil {
			return nil, a.Field(err, "output_schema")
		}
		opts = append(opts, troupe.OutputSchema(b))
	}
	return opts, nil
}

// needs returns what the agent a needs of a dispatch: the session state keys it reads and the
// input schema it must meet, with the agent declaring that schema. A bundle's replicates are
// dispatches of its agent with the bundle's own input and state, so a bundle reads what its
// agent reads, and takes its agent's input schema when it declares none itself (Load refuses
// both declaring one); the planner orders it after the writers of those keys, and the engine
// checks them before the bundle runs, as it would for the agent alone.
func (f *File) needs(a *Agent) (reads []string, input json.RawMessage, inputOf *Agent) {
	reads, input, inputOf = slices.Clone(a.Reads), a.InputSchema, a
	seen := map[*Agent]bool{a: true} // a bundle of itself is refused by Load, not looped on here
	for a.Bundle != nil {
		sub := f.Agents[a.Bundle.Agent]
		if sub == nil || seen[sub] {
			break
		}
		seen[sub] = true
		for _, k := range sub.Reads {
			if !slices.Contains(reads, k) {
				reads = append(reads, k)
			}
		}
		if len(input) == 0 {
			input, inputOf = sub.InputSchema, sub
		}
		a = sub
	}
	return reads, input, inputOf
}

// schemaBytes returns an agent's schema: inline (an object or a boolean), or read from a path
// (a string) relative to dir.
func schemaBytes(dir string, raw json.RawMessage) (json.RawMessage, error) {
	var path string
	if json.Unmarshal(raw, &path) != nil {
		return raw, nil
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(dir, path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("cannot read the schema %s: %w", path, err)
	}
	return b, nil
}

// compileSchema checks that an agent's schema compiles, as the engine will compile it.
func compileSchema(dir, agent string, raw json.RawMessage) error {
	b, err := schemaBytes(dir, raw)
	if err != nil {
		return err
	}
	_, err = schema.Compile(agent, b)
	var sve *jsonschema.SchemaValidationError
	var ve *jsonschema.ValidationError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &sve) && errors.As(sve.Err, &ve):
		// Name each problem of the schema by where it is in the schema, on one line.
		var probs []string
		var leaves func(e *jsonschema.ValidationError)
		leaves = func(e *jsonschema.ValidationError) {
			for _, c := range e.Causes {
				leaves(c)
			}
			if len(e.Causes) == 0 {
				where := displayPath(pointer(e.InstanceLocation...))
				if where == "" {
					where = "(root)"
				}
				probs = append(probs, where+": "+e.ErrorKind.LocalizedString(printer))
			}
		}
		leaves(ve)
		return fmt.Errorf("invalid JSON Schema: %s", strings.Join(probs, "; "))
	}
	return fmt.Errorf("invalid JSON Schema: %s", strings.Join(strings.Fields(err.Error()), " "))
}

// PlanRules returns the file's routing section as plan rules, or nil when it has none.
func (f *File) PlanRules() *plan.Rules {
	r := f.Routing
	if r == nil {
		return nil
	}
	out := &plan.Rules{
		KPIMap:         cloneMap(r.KPIMap),
		FlagAgents:     cloneMap(r.FlagAgents),
		Synthesizers:   slices.Clone(r.Synthesizers),
		MaxConcurrency: r.MaxConcurrency,
	}
	if out.MaxConcurrency == 0 {
		out.MaxConcurrency = f.budgetConcurrency() // 0 when unset too: the rules' default
	}
	for _, ir := range r.Intents {
		out.Intents = append(out.Intents, plan.IntentRule{Intent: ir.Intent, Primary: slices.Clone(ir.Primary), Optional: slices.Clone(ir.Optional), SequenceRequired: ir.SequenceRequired})
	}
	for _, p := range r.ExclusivePairs {
		out.ExclusivePairs = append(out.ExclusivePairs, [2]string{p[0], p[1]})
	}
	for _, p := range r.CompatiblePairs {
		out.CompatiblePairs = append(out.CompatiblePairs, [2]string{p[0], p[1]})
	}
	return out
}

// RouteRules returns the file's coordinator section as a routing table, or nil when it has
// none.
func (f *File) RouteRules() *route.Rules {
	c := f.Coordinator
	if c == nil {
		return nil
	}
	out := &route.Rules{
		Intents:       cloneMap(c.Intents),
		KPIMap:        cloneMap(c.KPIMap),
		Default:       c.Default,
		DefaultReason: c.DefaultReason,
	}
	if len(c.Fallbacks) > 0 {
		out.Fallbacks = make(map[string]string, len(c.Fallbacks))
		for k, v := range c.Fallbacks {
			out.Fallbacks[k] = v
		}
	}
	for _, t := range c.Triggers {
		out.Triggers = append(out.Triggers, route.Trigger{Name: t.Name, Patterns: slices.Clone(t.Patterns), When: t.When, Target: t.Target, Reason: t.Reason})
	}
	return out
}

// Planner returns the planner the file describes: its routing rules; or, for a coordinator,
// a planner of one task the coordinator routes (route.Planner); or, when it has neither,
// a planner of its top-level agents (TopLevel) in the stages their after, reads and writes
// imply — the members of composites run inside them, not on their own.
func (f *File) Planner() troupe.Planner {
	if r := f.PlanRules(); r != nil {
		return r
	}
	if r := f.RouteRules(); r != nil {
		return route.Planner(r)
	}
	top := f.TopLevel()
	return troupe.PlannerFunc(func(_ *troupe.Request, c troupe.Catalog) (*troupe.Plan, error) {
		var r plan.Rules
		stages, err := r.ExecutionOrder(top, c)
		if err != nil {
			return nil, err
		}
		p := &troupe.Plan{}
		for i, names := range stages {
			st := troupe.PlanStage{GroupID: plan.GroupID(i), MaxConcurrency: cmp.Or(f.budgetConcurrency(), plan.DefaultMaxConcurrency)}
			for _, n := range names {
				t := troupe.Task{ID: n, Agent: n, Reason: "declared in the workflow file", Priority: 1}
				if spec, ok := c.Spec(n); ok {
					for _, d := range spec.DependsOn {
						if slices.Contains(top, d) {
							t.DependsOn = append(t.DependsOn, d)
						}
					}
				}
				st.Tasks = append(st.Tasks, t)
			}
			st.SharedResources = plan.SharedResources(st.Tasks, c)
			p.Stages = append(p.Stages, st)
		}
		return p, nil
	})
}

// budgetConcurrency is budget.max_concurrency, the cap of a stage the file's routing does not
// cap itself, or 0.
func (f *File) budgetConcurrency() int {
	if f.Budget == nil {
		return 0
	}
	return f.Budget.MaxConcurrency
}

// TopLevel returns the agents no composite of the file contains, in file order, but for
// fallback agents (error_policy.fallback_agents) no other agent runs after.
func (f *File) TopLevel() []string {
	member := map[string]bool{}
	for _, a := range f.Agents {
		for _, c := range a.Children() {
			member[c] = true
		}
	}
	// A fallback agent stands in for one that failed: planned on its own as well, it would run
	// whether or not that one fails, and twice when it does. It is planned only when another
	// agent runs after it.
	standby := map[string]bool{}
	if p := f.ErrorPolicy; p != nil {
		for _, fbs := range p.FallbackAgents {
			for _, fb := range fbs {
				standby[fb] = true
			}
		}
	}
	for _, a := range f.Agents {
		for _, d := range a.After {
			delete(standby, d)
		}
	}
	var out []string
	for _, n := range f.Order {
		if !member[n] && !standby[n] {
			out = append(out, n)
		}
	}
	return out
}

// Router returns the coordinator's routing table as a router, or nil.
func (f *File) Router() troupe.Router {
	if r := f.RouteRules(); r != nil {
		return r
	}
	return nil
}

// Policy returns the file's error policy (the zero policy, seed 000's defaults, when it has
// none).
//
// A file that declares fallback agents (error_policy.fallback_agents or coordinator.fallbacks)
// and says no on_error gets on_error fallback: the fallbacks are used when an agent fails, as
// they say, rather than being ignored under fail_fast.
func (f *File) Policy() troupe.ErrorPolicy {
	p := f.ErrorPolicy
	if p == nil {
		if f.declaresFallbacks() {
			return troupe.ErrorPolicy{OnError: troupe.Fallback}
		}
		return troupe.ErrorPolicy{}
	}
	out := troupe.ErrorPolicy{
		OnWarning:           troupe.WarningAction(p.OnWarning),
		OnError:             troupe.ErrorAction(p.OnError),
		OnTimeout:           troupe.TimeoutAction(p.OnTimeout),
		EnableFallback:      p.EnableFallback,
		FallbackAgents:      cloneMap(p.FallbackAgents),
		AllowPartialResults: p.AllowPartialResults,
		MinSuccessRate:      p.MinSuccessRate,
	}
	if r := p.Retry; r != nil {
		out.Retry = troupe.RetryPolicy{MaxAttempts: r.MaxAttempts, Initial: time.Duration(r.InitialBackoff), Max: time.Duration(r.MaxBackoff), Multiplier: r.Multiplier, Jitter: r.Jitter}
	}
	if out.OnError == "" && f.declaresFallbacks() {
		out.OnError = troupe.Fallback
	}
	return out
}

// declaresFallbacks reports whether the file names fallback agents: error_policy.fallback_agents
// or coordinator.fallbacks. They are used only under on_error fallback.
func (f *File) declaresFallbacks() bool {
	return (f.ErrorPolicy != nil && len(f.ErrorPolicy.FallbackAgents) > 0) || (f.Coordinator != nil && len(f.Coordinator.Fallbacks) > 0)
}

func cloneMap(m map[string][]string) map[string][]string {
	if m == nil {
		return nil
	}
	out := make(map[string][]string, len(m))
	for k, v := range m {
		out[k] = slices.Clone(v)
	}
	return out
}
