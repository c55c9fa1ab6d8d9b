package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/agent/execagent"
	"github.com/troupehq/troupe/agent/httpagent"
	"github.com/troupehq/troupe/agent/llmagent"
	"github.com/troupehq/troupe/agent/mcptool"
	"github.com/troupehq/troupe/bundle"
	"github.com/troupehq/troupe/config"
	"github.com/troupehq/troupe/engine"
	"github.com/troupehq/troupe/evidence"
	"github.com/troupehq/troupe/examples/e2i"
	"github.com/troupehq/troupe/examples/feasibility"
	"github.com/troupehq/troupe/examples/tutor"
	"github.com/troupehq/troupe/flow"
	"github.com/troupehq/troupe/internal/jsonvalue"
	"github.com/troupehq/troupe/redact"
)

// This file is where troupe's command line wires concrete parts to a configuration file: the
// factories of each kind of agent, the builtin Go agents a file may name, and the query parser.

// factories builds every kind of agent a file can declare except builtin, which package
// config builds from builtins. The MCP servers llm and mcp agents use are connected through
// servers, which the command closes when it ends.
func factories(servers *mcpServers) config.Factories {
	return config.Factories{
		config.KindMCP:        servers.buildMCP,
		config.KindExec:       buildExec,
		config.KindHTTP:       buildHTTP,
		config.KindSequential: buildSequential,
		config.KindParallel:   buildParallel,
		config.KindLoop:       buildLoop,
		config.KindBundle:     buildBundle,
		config.KindLLM:        servers.buildLLM,
	}
}

// buildCancelled reports on stderr, and says, that troupe cmd's build of the agents failed
// because ctx ended (Ctrl-C while an MCP server was starting), not for anything in the file.
func buildCancelled(ctx context.Context, cmd string, stderr io.Writer) bool {
	if ctx.Err() == nil {
		return false
	}
	fmt.Fprintf(stderr, "troupe %s: cancelled while building the agents: %v\n", cmd, context.Cause(ctx))
	return true
}

// Each factory reports every problem it finds, joined (errors.Join), not the first only: config
// reports each at its field, as Load does.

func buildExec(_ context.Context, b *config.Builder, a *config.Agent) (troupe.Agent, error) {
	var errs []error
	cmd := append([]string(nil), a.Exec.Command...)
	prog, err := program(b, cmd[0])
	if err != nil {
		errs = append(errs, a.Field(err, "exec", "command"))
	}
	cmd[0] = prog
	dir := b.File.Dir
	if a.Exec.Dir != "" {
		dir = b.Path(a.Exec.Dir)
		if err := isDir(dir); err != nil {
			errs = append(errs, a.Field(err, "exec", "dir"))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	var env []string
	for _, k := range slices.Sorted(maps.Keys(a.Exec.Env)) {
		v := a.Exec.Env[k]
		env = append(env, k+"="+v)
	}
	return execagent.New(execagent.Config{Command: cmd, Dir: dir, Env: env, Timeout: agentTimeout(b, a)})
}

// agentTimeout is the timeout an adapter gives a's calls: a's own, else the budget's
// default_timeout, else 0 (the adapter's default). The engine's deadline for the dispatch is
// the same; the adapter's must not cut a call off before it.
func agentTimeout(b *config.Builder, a *config.Agent) time.Duration {
	if a.Timeout > 0 {
		return time.Duration(a.Timeout)
	}
	if bud := b.File.Budget; bud != nil {
		return time.Duration(bud.DefaultTimeout)
	}
	return 0
}

// isDir checks that a working directory the file names is one, now rather than when the first
// dispatch fails to start (with an error naming the program, not the directory).
func isDir(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("no such directory: %s", dir)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	return nil
}

// program resolves the program of a command: one written as a path ("./fetch.sh",
// "bin/agent") is relative to the file; a bare name ("python3") is looked up in PATH. A
// program that is not there fails now, when the file is validated, not at the first run.
func program(b *config.Builder, name string) (string, error) {
	written := name
	if strings.ContainsRune(name, '/') {
		abs, err := filepath.Abs(b.Path(name))
		if err != nil {
			return "", err
		}
		name = abs
	}
	if _, err := exec.LookPath(name); err != nil {
		// In the file's words: exec's own ("exec: \"x\": stat x: no such file or directory")
		// names the path twice and the cause last.
		switch {
		case errors.Is(err, exec.ErrNotFound) && !strings.ContainsRune(written, '/'):
			return "", fmt.Errorf("no program to run: %s is not in PATH", written)
		case errors.Is(err, fs.ErrNotExist):
			return "", fmt.Errorf("no program to run: %s does not exist (a program with a slash is relative to the file's directory)", name)
		case errors.Is(err, fs.ErrPermission):
			return "", fmt.Errorf("no program to run: %s is not executable (chmod +x it, or run it through its interpreter: [sh, %s])", name, written)
		}
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return "", fmt.Errorf("no program to run: %s: %v", name, err)
	}
	return name, nil
}

func buildHTTP(_ context.Context, b *config.Builder, a *config.Agent) (troupe.Agent, error) {
	h := a.HTTP
	ag, err := httpagent.New(httpagent.Config{URL: h.URL, Headers: h.Headers, HeadersFromEnv: h.HeadersFromEnv, BearerTokenEnv: h.BearerTokenEnv,
		Timeout: agentTimeout(b, a), MaxResponseBytes: h.MaxResponseBytes})
	if ce, ok := errors.AsType[*httpagent.ConfigError](err); ok {
		// Each problem at the http block's field, at its line, in the file's words: not the
		// adapter's Config.BearerTokenEnv at the agent, and every one, not the first.
		var errs []error
		for _, p := range ce.Problems {
			switch {
			case p.Field == "timeout":
				errs = append(errs, a.Field(p.Err, "timeout"))
			case p.Key != "":
				errs = append(errs, a.Field(p.Err, "http", p.Field, p.Key))
			default:
				errs = append(errs, a.Field(p.Err, "http", p.Field))
			}
		}
		return nil, errors.Join(errs...)
	}
	return ag, err
}

// members builds the named agents as members of a composite, with what each declares: the
// composite applies a member's reads, writes, timeout and schemas as the engine would.
func members(ctx context.Context, b *config.Builder, names []string) ([]*troupe.AgentSpec, error) {
	var out []*troupe.AgentSpec
	for _, n := range names {
		a, opts, err := b.Declared(ctx, n)
		if err != nil {
			return nil, err
		}
		out = append(out, flow.Named(n, a, opts...))
	}
	return out, nil
}

func buildSequential(ctx context.Context, b *config.Builder, a *config.Agent) (troupe.Agent, error) {
	ms, err := members(ctx, b, a.Sequential.Agents)
	if err != nil {
		return nil, err
	}
	return flow.Sequential(flow.SequentialConfig{}, ms...), nil
}

func buildParallel(ctx context.Context, b *config.Builder, a *config.Agent) (troupe.Agent, error) {
	ms, err := members(ctx, b, a.Parallel.Agents)
	if err != nil {
		return nil, err
	}
	cfg := flow.ParallelConfig{MaxConcurrent: a.Parallel.MaxConcurrency}
	switch a.Parallel.Strategy {
	case config.StrategyFirstSuccess:
		cfg.Strategy = flow.FirstSuccess
	case config.StrategyMajorityVote:
		cfg.Strategy, cfg.Answer = flow.MajorityVote, voteOf(a.Parallel.Vote)
	}
	return flow.Parallel(cfg, ms...), nil
}

// voteOf is the answer a result gives under majority_vote: the value of its agent_result's key,
// a string as it is and any other value as JSON, so that 3 and "3" are different answers; ""
// when the key is absent.
func voteOf(key string) func(*troupe.Result) string {
	return func(r *troupe.Result) string {
		v, ok := r.AgentResult[key]
		if !ok {
			return ""
		}
		if s, ok := v.(string); ok {
			return s
		}
		b, _ := json.Marshal(v)
		return string(b)
	}
}

func buildLoop(ctx context.Context, b *config.Builder, a *config.Agent) (troupe.Agent, error) {
	ms, err := members(ctx, b, []string{a.Loop.Agent})
	if err != nil {
		return nil, err
	}
	cfg := flow.LoopConfig{MaxIterations: a.Loop.MaxIterations}
	if u := a.Loop.Until; u != nil {
		cfg.Until = func(it flow.Iteration) bool {
			v, ok := it.State(u.Key)
			return ok && jsonvalue.Equal(v, u.Equals)
		}
	}
	return flow.Loop(cfg, ms[0]), nil
}

func buildBundle(ctx context.Context, b *config.Builder, a *config.Agent) (troupe.Agent, error) {
	sub, err := b.Agent(ctx, a.Bundle.Agent)
	if err != nil {
		return nil, err
	}
	cfg, err := bundleConfig(ctx, b, a)
	if err != nil {
		return nil, err
	}
	ag, err := evidence.New(sub, cfg)
	if err != nil {
		return nil, fmt.Errorf("bundle %s: %w", a.Name, err)
	}
	return ag, nil
}

// bundleConfig is the evidence.Config of the bundle agent a, its lints' agents built. Load has
// checked what evidence.New would refuse, so that a problem is reported at its place in the file.
func bundleConfig(ctx context.Context, b *config.Builder, a *config.Agent) (evidence.Config, error) {
	spec := a.Bundle
	cfg := evidence.Config{
		Name:          a.Name,
		Task:          spec.Task,
		Model:         spec.Model,
		SchemaVersion: spec.SchemaVersion,
		K:             spec.Replicates,
		Epsilon:       spec.Epsilon,
		Seeds:         slices.Clone(spec.Seeds),
		DiffEncode:    spec.DiffEncode,
		KeepRaw:       spec.KeepRaw,
	}
	cfg.Stop.Valid = spec.Quorum()
	if st := spec.Stop; st != nil {
		cfg.Stop.Confidence = st.Confidence
		cfg.Stop.After = time.Duration(st.After)
	}
	if l := spec.Limits; l != nil {
		cfg.Limits = bundle.Limits{MaxFields: l.MaxFields, MaxDiffs: l.MaxDiffs, MaxBytes: l.MaxBytes}
	}
	if bud := spec.Budget; bud != nil {
		cfg.Budget.Tokens = bud.Tokens
		cfg.Budget.CostDollars = bud.CostDollars
	}
	if r := spec.Redact; r != nil {
		cfg.Redact = redact.Config{Patterns: slices.Clone(r.Patterns), Fields: slices.Clone(r.Fields), NoDefaults: r.NoDefaults, Replacement: r.Replacement}
	}
	decl := b.File.Agents[spec.Agent]
	// Each replicate is a dispatch of the sub-agent, bounded by its timeout (its own, else the
	// budget's default_timeout), and the whole bundle by the bundle agent's: evidence's own
	// defaults (2 and 10 minutes) apply only when the file gives neither.
	cfg.Replicate.Tokens = spec.MaxTokens
	cfg.Replicate.Timeout = agentTimeout(b, decl)
	cfg.Budget.Timeout = agentTimeout(b, a)
	if len(decl.OutputSchema) > 0 {
		// The replicates' schema is the sub-agent's output schema.
		s, err := schemaFile(b, decl.OutputSchema)
		if err != nil {
			return evidence.Config{}, fmt.Errorf("bundle %s: %w", a.Name, err)
		}
		cfg.Schema = s
	}
	for _, l := range spec.Lints {
		// The lint lane dispatches the agent as it is built, as replicates are: a check is no
		// step of the run, so what the agent declares to the planner does not apply to it.
		ag, err := b.Agent(ctx, l.Agent)
		if err != nil {
			return evidence.Config{}, err
		}
		lint := evidence.LintAgent(l.Agent, ag, nil)
		lint.Timeout = time.Duration(l.Timeout)
		cfg.Lints = append(cfg.Lints, lint)
	}
	return cfg, nil
}

func (s *mcpServers) buildLLM(ctx context.Context, b *config.Builder, a *config.Agent) (troupe.Agent, error) {
	cfg, err := s.llmConfig(ctx, b, a)
	if err != nil {
		// What the adapter finds besides (a template that does not parse) is reported too,
		// checked without the tools that could not be had.
		_, nerr := llmagent.New(cfg)
		return nil, errors.Join(err, llmProblems(a, nerr))
	}
	ag, err := llmagent.New(cfg)
	if err != nil {
		return nil, llmProblems(a, err)
	}
	return ag, nil
}

// llmFields are the fields of llmagent.Config that are the llm block's fields of the same name.
var llmFields = []string{"model", "base_url", "system", "prompt", "temperature", "max_tokens", "max_turns", "max_response_bytes", "max_tool_result_bytes"}

// llmProblems is err, llmagent.New's, as problems of the file: each at the llm block's field
// it names (a template at agents.NAME.llm.system), the answer's schema at output_schema, and
// others (a tool offered twice, by index among the tools servers expand to) at the agent.
func llmProblems(a *config.Agent, err error) error {
	ce, ok := errors.AsType[*llmagent.ConfigError](err)
	if !ok {
		return err
	}
	var out []error
	for _, p := range ce.Problems {
		switch {
		case slices.Contains(llmFields, p.Field):
			out = append(out, a.Field(p.Err, "llm", p.Field))
		case p.Field == "schema":
			out = append(out, a.Field(p.Err, "output_schema"))
		default:
			out = append(out, fmt.Errorf("llmagent: config: %s: %w", p.Field, p.Err))
		}
	}
	return errors.Join(out...)
}

// llmConfig is the configuration of the llm agent a: its block, its output schema as the
// structured answer, its tools, and its timeout as the bound of each call.
func (s *mcpServers) llmConfig(ctx context.Context, b *config.Builder, a *config.Agent) (llmagent.Config, error) {
	l := a.LLM
	cfg := llmagent.Config{
		Name: a.Name, Model: l.Model, BaseURL: l.BaseURL, APIKeyEnv: l.APIKeyEnv,
		System: l.System, Prompt: l.Prompt, Temperature: l.Temperature, Seed: l.Seed,
		MaxTokens: l.MaxTokens, MaxTurns: l.MaxTurns, Stream: l.Stream,
		MaxResponseBytes: l.MaxResponseBytes, MaxToolResultBytes: l.MaxToolResultBytes,
		// A call may take as long as the dispatch may: the adapter's default (2 minutes)
		// must not cut off a model the file gives longer.
		CallTimeout: agentTimeout(b, a),
	}
	if len(a.OutputSchema) > 0 {
		// The structured answer the model is asked for is the agent's output schema.
		s, err := schemaFile(b, a.OutputSchema)
		if err != nil {
			return cfg, fmt.Errorf("llm %s: %w", a.Name, err)
		}
		cfg.Schema, cfg.SchemaName = s, a.Name
	}
	// Every server's problems, not the first's: an agent named as a tool reports its own.
	var errs []error
	for _, n := range l.Tools {
		if server, tool, ok := config.MCPTool(n); ok {
			ts, err := s.tools(ctx, b, server, tool)
			if err != nil {
				errs = append(errs, eachWrapped(err, "llm %s", a.Name))
				continue
			}
			cfg.Tools = append(cfg.Tools, ts...)
			continue
		}
		ag, opts, err := b.Declared(ctx, n)
		if err != nil {
			return cfg, err
		}
		cfg.Tools = append(cfg.Tools, flow.AsTool(n, ag, opts...))
	}
	return cfg, errors.Join(errs...)
}

// eachWrapped is err prefixed with what (as fmt.Errorf("what: %w") does), or, when err joins
// several problems (errors.Join), each of them, joined again, so that config still reports each
// at its own field.
func eachWrapped(err error, format string, args ...any) error {
	what := fmt.Sprintf(format, args...)
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return fmt.Errorf("%s: %w", what, err)
	}
	var out []error
	for _, e := range j.Unwrap() {
		out = append(out, eachWrapped(e, "%s", what))
	}
	return errors.Join(out...)
}

// mcpConnectTimeout bounds starting or dialling an MCP server and listing its tools when the
// file gives no connect_timeout.
const mcpConnectTimeout = 30 * time.Second

// mcpServers connects each of a file's MCP servers the first time an agent being built needs
// it, once, and closes them all — ending the sessions and the servers' processes — when the
// command ends. The zero value is not usable; a nil *mcpServers builds no MCP agent.
type mcpServers struct {
	mu      sync.Mutex
	clients map[string]*mcptool.Client
	closed  bool
}

func newMCPServers() *mcpServers { return &mcpServers{clients: map[string]*mcptool.Client{}} }

// client returns the connected server name of b's file, connecting it with ctx first if
// needed.
func (s *mcpServers) client(ctx context.Context, b *config.Builder, name string) (*mcptool.Client, error) {
	if s == nil {
		return nil, errors.New("this command does not connect MCP servers")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errors.New("the MCP servers are closed")
	}
	if c, ok := s.clients[name]; ok {
		return c, nil
	}
	decl := b.File.MCPServers[name]
	if decl == nil {
		return nil, fmt.Errorf("unknown MCP server %q", name)
	}
	cfg := mcptool.Config{URL: decl.URL, Include: decl.Include, Prefix: decl.Prefix, CallTimeout: time.Duration(decl.CallTimeout), StopTimeout: time.Duration(decl.StopTimeout), MaxResultBytes: decl.MaxResultBytes}
	if decl.Command != "" {
		var errs []error
		prog, err := program(b, decl.Command)
		if err != nil {
			errs = append(errs, serverField(name, err, "command"))
		}
		cfg.Command = append([]string{prog}, decl.Args...)
		cfg.Dir = b.File.Dir
		if decl.Dir != "" {
			cfg.Dir = b.Path(decl.Dir)
			if err := isDir(cfg.Dir); err != nil {
				errs = append(errs, serverField(name, err, "dir"))
			}
		}
		for _, k := range slices.Sorted(maps.Keys(decl.Env)) {
			v, ok := os.LookupEnv(decl.Env[k])
			if !ok {
				errs = append(errs, serverField(name, fmt.Errorf("the environment variable %s is not set", decl.Env[k]), "env", k))
			}
			cfg.Env = append(cfg.Env, k+"="+v)
		}
		if len(errs) > 0 {
			return nil, errors.Join(errs...)
		}
	}
	timeout := time.Duration(decl.ConnectTimeout)
	if timeout <= 0 {
		timeout = mcpConnectTimeout
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c, err := mcptool.Connect(cctx, cfg)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			// Its connect_timeout, not the caller's: say which bound, and how long, so a
			// slow server (raise it) can be told from a hung one.
			bound := fmt.Sprintf("connect_timeout %v", timeout)
			if decl.ConnectTimeout <= 0 {
				bound += " (the default: the file sets no connect_timeout)"
			}
			err = fmt.Errorf("%w: it did not finish starting (initialize, list its tools) within %s", err, bound)
		}
		return nil, serverField(name, err)
	}
	s.clients[name] = c
	return c, nil
}

// tools returns the tools an llm agent's "mcp:SERVER" (tool "") or "mcp:SERVER/TOOL" names.
func (s *mcpServers) tools(ctx context.Context, b *config.Builder, server, tool string) ([]troupe.Tool, error) {
	c, err := s.client(ctx, b, server)
	if err != nil {
		return nil, err
	}
	if tool == "" {
		return c.Tools(), nil
	}
	t, err := serverTool(c, server, tool)
	if err != nil {
		return nil, err
	}
	return []troupe.Tool{t}, nil
}

// serverTool returns the tool a server names tool, or an error listing the ones it has.
func serverTool(c *mcptool.Client, server, tool string) (*mcptool.Tool, error) {
	if t, ok := c.Tool(tool); ok {
		return t, nil
	}
	// The server's own names, which a file writes after "mcp:SERVER/" whatever the prefix.
	return nil, fmt.Errorf("MCP server %s has no tool %q (it offers %s)", server, tool, strings.Join(c.Names(), ", "))
}

// buildMCP builds an mcp agent: one tool of a server, called with the dispatch's arguments.
func (s *mcpServers) buildMCP(ctx context.Context, b *config.Builder, a *config.Agent) (troupe.Agent, error) {
	c, err := s.client(ctx, b, a.MCP.Server)
	if err != nil {
		return nil, eachWrapped(err, "mcp %s", a.Name)
	}
	t, err := serverTool(c, a.MCP.Server, a.MCP.Tool)
	if err != nil {
		return nil, a.Field(err, "mcp", "tool")
	}
	return mcptool.Agent(t), nil
}

// serverField is err as a problem of the field path of MCP server name's declaration (of the
// declaration itself, with no path): reported at that field's line, once however many agents
// use the server.
func serverField(name string, err error, path ...string) error {
	return &config.FieldError{Path: append([]string{"mcp_servers", name}, path...), Err: fmt.Errorf("MCP server %s: %w", name, err)}
}

// Close closes every server connected, waiting for their processes to end; later builds
// connect none.
func (s *mcpServers) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	var errs []error
	for _, n := range slices.Sorted(maps.Keys(s.clients)) {
		if err := s.clients[n].Close(); err != nil {
			errs = append(errs, fmt.Errorf("MCP server %s: %w", n, err))
		}
	}
	clear(s.clients)
	return errors.Join(errs...)
}

// schemaFile returns an agent's schema: inline, or read from the path (relative to the file)
// the field holds.
func schemaFile(b *config.Builder, raw json.RawMessage) (json.RawMessage, error) {
	var path string
	if json.Unmarshal(raw, &path) != nil {
		return raw, nil
	}
	return os.ReadFile(b.Path(path))
}

// builtins returns the Go agents a file may name as builtin: the agents of troupe's
// examples (seed 000's e2i, seed 003's tutor, seed 004's feasibility judge and orchestrator).
func builtins() (*troupe.Registry, error) {
	reg := troupe.NewRegistry()
	e, err := e2i.Registry()
	if err != nil {
		return nil, err
	}
	t, err := tutor.Registry(tutor.NewSpecialists(nil, tutor.Config{}))
	if err != nil {
		return nil, err
	}
	fz, err := feasibility.Builtins(feasibility.DefaultDataset(), feasibility.Config{})
	if err != nil {
		return nil, err
	}
	for _, r := range []*troupe.Registry{e, t, fz} {
		for _, n := range r.Names() {
			s, _ := r.Spec(n)
			if err := reg.Add(n, s.Agent, troupe.Describe(s.Description)); err != nil {
				return nil, err
			}
		}
	}
	return reg, nil
}

// parser returns the file's query parser, or nil when it declares none.
func parser(f *config.File) func(string) map[string]any {
	p := f.Parser
	if p == nil {
		return nil
	}
	conv := func(k config.Keywords) e2i.Keywords {
		return e2i.Keywords{Words: k.Words, Stems: k.Stems, Phrases: k.Phrases}
	}
	r := e2i.ParserRules{DefaultIntent: p.DefaultIntent}
	for _, ik := range p.Intents {
		r.Intents = append(r.Intents, e2i.IntentKeywords{Intent: ik.Intent, Keywords: conv(ik.Keywords)})
	}
	for _, ik := range p.SecondaryIntents {
		r.Secondary = append(r.Secondary, e2i.IntentKeywords{Intent: ik.Intent, Keywords: conv(ik.Keywords)})
	}
	for _, ak := range p.PreferredAgents {
		r.Prefer = append(r.Prefer, e2i.AgentKeywords{Agent: ak.Agent, Keywords: conv(ak.Keywords)})
	}
	for _, g := range p.Gazetteers {
		eg := e2i.Gazetteer{Key: g.Key}
		for _, t := range g.Terms {
			eg.Terms = append(eg.Terms, e2i.Term{Name: t.Name, Phrases: t.Phrases})
		}
		r.Gazetteers = append(r.Gazetteers, eg)
	}
	return r.Parse
}

// loadConfig loads CONFIG, printing every problem to stderr; ok is false when it could not.
func loadConfig(cmd, path string, stderr io.Writer) (*config.File, bool) {
	f, err := config.Load(path)
	if err != nil {
		var es config.Errors
		if errors.As(err, &es) {
			for _, e := range es {
				fmt.Fprintln(stderr, printableText(e.Error()))
			}
			n := len(es)
			fmt.Fprintf(stderr, "troupe %s: %s: %d problem%s\n", cmd, path, n, plural(n))
		} else {
			report(stderr, cmd, err)
		}
		return nil, false
	}
	return f, true
}

// loadWithBuiltins is loadConfig and the builtin agents a file may name; ok is false when the
// command is over, with code its exit code.
func loadWithBuiltins(cmd, path string, stderr io.Writer) (f *config.File, b *troupe.Registry, code int, ok bool) {
	f, ok = loadConfig(cmd, path, stderr)
	if !ok {
		return nil, nil, exitUsage, false
	}
	b, err := builtins()
	if err != nil {
		report(stderr, cmd, err)
		return nil, nil, exitFailed, false
	}
	return f, b, exitOK, true
}

// needQuery reports whether words (CONFIG, then the query) or --input give a request, saying
// what is missing when they do not.
func needQuery(cmd string, words []string, input string, stderr io.Writer) bool {
	if len(words) > 1 {
		if where := notUTF8(strings.Join(words[1:], " ")); where != "" {
			fmt.Fprintf(stderr, "troupe %s: the query is not UTF-8 text: %s\n", cmd, where)
			return false
		}
	}
	if len(words) == 1 && input == "" {
		fmt.Fprintf(stderr, "troupe %s: want a query after CONFIG, or --input FILE.json\n", cmd)
		return false
	}
	if input == "" && strings.TrimSpace(strings.Join(words[1:], " ")) == "" {
		// An empty argument ("$Q" with Q unset) is no question: say so rather than run the
		// agents on nothing.
		fmt.Fprintf(stderr, "troupe %s: the query is empty: want a question after CONFIG, or --input FILE.json\n", cmd)
		return false
	}
	return true
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// engineConfig is the engine a file describes, over reg.
func engineConfig(f *config.File, reg *troupe.Registry) engine.Config {
	cfg := engine.Config{Registry: reg, Planner: f.Planner(), Router: f.Router(), Policy: f.Policy()}
	if b := f.Budget; b != nil {
		cfg.TimeBudget = time.Duration(b.Time)
		cfg.MaxCostDollars = b.MaxCostDollars
		cfg.MaxDispatches = b.MaxDispatches
		cfg.MaxConcurrency = b.MaxConcurrency
		cfg.DefaultTimeout = time.Duration(b.DefaultTimeout)
	}
	return cfg
}

// request builds the request of a command line: the query (parsed by the file's parser),
// or --input's request, with --state's session state and the seed. It refuses a request the
// engine would refuse at the start of a run, naming the field. in is where --input gave the
// parsed query (nil when it gave none), so that a command can say where in the file a value
// planning refuses is.
func request(f *config.File, query, input string, state map[string]any, seed uint64) (req troupe.Request, in *inputQuery, err error) {
	if input != "" {
		b, err := os.ReadFile(input)
		if err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err // "open x: no such file" names the file twice
			}
			return req, nil, fmt.Errorf("--input %s: %w", input, err)
		}
		var alone bool
		if req, alone, err = decodeInput(b); err != nil {
			return req, nil, fmt.Errorf("--input %s: %w", input, err)
		}
		if query != "" {
			req.Query = query
		}
		if strings.TrimSpace(req.Query) == "" && len(req.ParsedQuery) == 0 {
			// As an empty query argument is refused: there is nothing to plan.
			return req, nil, fmt.Errorf("--input %s: no query and no parsed query: want \"query\" or \"parsed_query\" in the file, or a query after CONFIG", input)
		}
		if err := checkRequest(req, fileAgents{f}); err != nil {
			return req, nil, fmt.Errorf("--input %s: %w", input, err)
		}
		if req.ParsedQuery != nil {
			in = &inputQuery{path: input, prefix: "parsed_query."}
			if alone {
				in.prefix = ""
			}
		}
	} else {
		req.Query = query
	}
	if req.ParsedQuery == nil {
		if p := parser(f); p != nil {
			req.ParsedQuery = p(req.Query)
		}
	}
	for k, v := range state {
		if req.State == nil {
			req.State = map[string]any{}
		}
		req.State[k] = v
	}
	if seed != 0 {
		req.Seed = seed
	}
	return req, in, nil
}

// inputQuery is where --input gave a request's parsed query: the file, and the parsed query's
// place in it ("parsed_query.", or "" in a file that is a parsed query alone).
type inputQuery struct{ path, prefix string }

// refused says, in the file's terms, why planning refused the parsed query pq of the file (a
// value of the wrong JSON type), or returns nil when err is no such refusal or in is nil.
func (in *inputQuery) refused(err error, pq map[string]any) error {
	if in == nil {
		return nil
	}
	if p := parsedProblem(err, pq, in.prefix); p != nil {
		return fmt.Errorf("--input %s: %w", in.path, p)
	}
	return nil
}

// requestFields are the JSON names of troupe.Request's fields.
func requestFields() []string {
	var out []string
	t := reflect.TypeFor[troupe.Request]()
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out = append(out, name)
		}
	}
	return out
}

// decodeInput reads --input: a whole request ({"query": ..., "parsed_query": {...},
// "state": {...}, …}, troupe.Request's fields) or, when the object has none of a request's
// fields, a parsed query alone ({"intent": "causal", "kpis": ["NRx"], …}).
//
// A parsed query's keys are whatever its parser and agents use, so they cannot be checked
// against a list; but a key a typo away from a request's field ("qeury") is far likelier a
// misspelt request than a parsed query, which would be planned with no query at all. Such a
// key is an error, and one that really belongs to a parsed query goes under "parsed_query".
func decodeInput(b []byte) (req troupe.Request, alone bool, err error) {
	var top any
	if len(bytes.TrimSpace(b)) == 0 {
		return req, false, errors.New("the file is empty: want a request {\"query\": ...} or a parsed query {\"intent\": ...}")
	}
	if !utf8.Valid(b) {
		// encoding/json would read each such byte as U+FFFD, and the agents get another text.
		off := 0
		for off < len(b) {
			r, n := utf8.DecodeRune(b[off:])
			if r == utf8.RuneError && n == 1 {
				break
			}
			off += n
		}
		line, col := lineCol(b, off)
		return req, false, fmt.Errorf("not UTF-8, at line %d, column %d: byte 0x%02x is not UTF-8; save the file as UTF-8", line, col, b[off])
	}
	if err := json.Unmarshal(b, &top); err != nil {
		return req, false, jsonProblem(b, err)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil {
		return req, false, fmt.Errorf("got %s, want a JSON object: a request {\"query\": ...} or a parsed query {\"intent\": ...}", jsonvalue.KindOf(top))
	}
	fields := requestFields()
	isRequest := false
	var others []string
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		if slices.Contains(fields, k) {
			isRequest = true
		} else {
			others = append(others, k)
		}
	}
	if isRequest {
		if len(others) > 0 {
			k := others[0]
			hint := ""
			if s := config.Closest(k, fields); s != "" {
				hint = fmt.Sprintf(" (did you mean %q?)", s)
			}
			return req, false, fmt.Errorf("unknown field %q%s: a request's fields are %s; a parsed query's keys go under \"parsed_query\"", k, hint, strings.Join(fields, ", "))
		}
		if err := unknownField(b, reflect.TypeFor[troupe.Request](), ""); err != nil {
			return req, false, err
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			return req, false, jsonProblem(b, err)
		}
		return req, false, nil
	}
	for _, k := range others {
		if s := config.Closest(k, fields); s != "" {
			return req, false, fmt.Errorf("unknown field %q (did you mean %q?): with no request field the file is read as a parsed query alone; to give a parsed query with this key, put it under \"parsed_query\"", k, s)
		}
	}
	var pq map[string]any
	if err := json.Unmarshal(b, &pq); err != nil {
		return req, true, err
	}
	req.ParsedQuery = pq
	return req, true, nil
}

// jsonProblem says what is wrong with the JSON b, in its terms rather than Go's: where a
// syntax error is, or which field holds what kind of value where another is wanted (not
// "cannot unmarshal number into Go struct field Request.query of type string").
func jsonProblem(b []byte, err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		line, col := lineCol(b, int(se.Offset))
		// The offset is just past the byte at fault.
		return fmt.Errorf("not JSON, at line %d, column %d: %s", line, max(col-1, 1), se)
	case errors.As(err, &te):
		field := te.Field
		if field == "" {
			field = "the value"
		} else {
			field = "field " + strconv.Quote(field)
		}
		got := te.Value // JSON's kind: "number", "string", "bool", "array", "object"
		switch got {
		case "bool":
			got = "a boolean"
		case "array", "object":
			got = "an " + got
		case "number", "string":
			got = "a " + got
		}
		return fmt.Errorf("%s: got %s, want %s", field, got, jsonvalue.KindWanted(te.Type))
	}
	return err
}

// stateFlag collects --state key=value pairs; a value is read as JSON when it is JSON
// (true, 3, "x", [1]), as a boolean when it is True or False in any case (seed 003's Python
// writes quiz_paused=True, and a coordinator's when compares it with true), and as a string
// otherwise. A string "True" is written as JSON: key='"True"'.
type stateFlag map[string]any

func (s stateFlag) String() string { return "" }

func (s stateFlag) Set(kv string) error {
	k, v, ok := strings.Cut(kv, "=")
	if !ok || k == "" {
		return fmt.Errorf("want key=value, got %q", kv)
	}
	if where := notUTF8(kv); where != "" {
		return fmt.Errorf("not UTF-8 text: %s", where)
	}
	var val any
	switch {
	case json.Unmarshal([]byte(v), &val) == nil:
	case strings.EqualFold(v, "true"), strings.EqualFold(v, "false"):
		val = strings.EqualFold(v, "true")
	default:
		val = v
	}
	s[k] = val
	return nil
}
