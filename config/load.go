package config

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/troupehq/troupe"
)

// MaxFileBytes bounds the size of a configuration file.
const MaxFileBytes = 4 << 20

// Resolve returns the configuration file path names: path itself, or path/troupe.yaml when
// path is a directory.
func Resolve(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", fileError(path, err)
	}
	if fi.IsDir() {
		return filepath.Join(path, FileName), nil
	}
	return path, nil
}

// fileError says why the file at path cannot be read, in a user's words: "no such file or
// directory" rather than "stat x: no such file or directory".
func fileError(path string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return fmt.Errorf("config: %s: %w", path, err)
}

// Load reads and validates the configuration at path (a file, or a directory holding
// troupe.yaml). It returns Errors listing every problem found, each with its file, line,
// column and field path; any other error means the file could not be read.
func Load(path string) (*File, error) {
	p, err := Resolve(path)
	if err != nil {
		return nil, err
	}
	data, err := readFile(p)
	if err != nil {
		return nil, err
	}
	f, err := Parse(p, data)
	if f != nil {
		f.Dir = filepath.Dir(p)
	}
	return f, err
}

// readFile reads the file p, but no more than one byte past MaxFileBytes, so that a path such
// as /dev/zero is refused as too long rather than read until memory runs out.
func readFile(p string) ([]byte, error) {
	fh, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		// Resolve found p, unless it made it from a directory.
		return nil, fmt.Errorf("config: %s: no such file (a directory must hold %s)", p, FileName)
	}
	if err != nil {
		return nil, fileError(p, err)
	}
	defer fh.Close()
	if fi, err := fh.Stat(); err == nil && fi.IsDir() {
		return nil, fmt.Errorf("config: %s is a directory, not a file", p)
	}
	data, err := io.ReadAll(io.LimitReader(fh, MaxFileBytes+1))
	if err != nil {
		return nil, fileError(p, err)
	}
	return data, nil
}

// Parse validates data as the configuration file named name (used in errors and to resolve
// relative paths). It checks, in order, that the YAML is well formed, that it meets Schema
// (unknown fields are errors), and that what it says is consistent: every agent it names
// exists, composites do not contain themselves, list each member once and nest no deeper than
// flow allows, after has no cycle, schemas compile, routing and coordinator are not both given
// and can each route something, a coordinator's triggers have distinct names and none comes
// after a trigger that fires on everything. Every problem found is returned at once, as Errors.
func Parse(name string, data []byte) (*File, error) {
	if len(data) > MaxFileBytes {
		return nil, Errors{{File: name, Problem: fmt.Sprintf("the file is more than %d MiB; a configuration is at most %d MiB (%d bytes)", MaxFileBytes>>20, MaxFileBytes>>20, MaxFileBytes)}}
	}
	data, at, problem := text(data)
	if problem != "" {
		return nil, Errors{{File: name, Line: at.line, Column: at.col, Problem: problem}}
	}
	t, err := parseYAML(name, data)
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			return nil, Errors{e}
		}
		return nil, err
	}
	errs := Errors(t.errs)
	if t.over {
		// The document was read only up to a bound: what was not read would be reported
		// missing.
		return nil, sortErrors(errs)
	}
	if t.value == nil {
		errs = append(errs, &Error{File: name, Line: 1, Column: 1, Problem: "the file is empty: a configuration needs at least version and agents"})
		return nil, sortErrors(errs)
	}
	schemaErrs, bad := checkSchema(t)
	reported := map[string]bool{} // a value the YAML reading rejected is not reported again
	for _, e := range t.errs {
		reported[e.Path] = true
	}
	for _, e := range schemaErrs {
		if !reported[e.Path] {
			errs = append(errs, e)
		}
	}
	value := t.value
	t.refused = make(map[string]bool, len(bad))
	for _, loc := range bad {
		value = prune(value, loc)
		t.refused[pointer(loc...)] = true
	}
	raw, err := json.Marshal(value)
	if err != nil {
		return nil, fmt.Errorf("config: %s: %w", name, err)
	}
	f := &File{Path: name, Dir: filepath.Dir(name), where: t.places}
	if len(schemaErrs) == 0 {
		// The schema and the Go types describe the same format; a strict decode catches
		// any drift between them.
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(f); err != nil {
			errs = append(errs, &Error{File: name, Line: 1, Column: 1, Problem: "config: the schema accepted what the loader cannot read: " + err.Error()})
		}
	} else {
		// Best effort, so that references can be checked too: a wrongly typed field is
		// skipped and the rest decoded.
		_ = json.Unmarshal(raw, f)
	}
	for _, n := range t.order["/agents"] {
		if a := f.Agents[n]; a != nil {
			a.Name = n
			f.Order = append(f.Order, n)
		}
	}
	errs = append(errs, check(t, f)...)
	if len(errs) == 0 {
		errs = append(errs, backstop(t, f)...)
	}
	if len(errs) > 0 {
		return nil, sortErrors(errs)
	}
	return f, nil
}

// backstop runs the runtime's own validation of the rules and policy the file makes, so that
// nothing the planner, router or engine would refuse gets past Load.
func backstop(t *tree, f *File) Errors {
	var errs Errors
	cat, err := Catalog(f)
	if err != nil {
		return Errors{f.errorOf("/agents", err)}
	}
	for _, v := range []struct {
		ptr      string
		validate func() error
	}{
		{"/routing", func() error { return f.PlanRules().Validate(cat) }},
		{"/coordinator", func() error { return f.RouteRules().Validate(cat) }},
		{"/error_policy", func() error { p := f.Policy(); return p.Validate(cat) }},
	} {
		if _, present := t.vals[v.ptr]; !present {
			continue
		}
		if err := v.validate(); err != nil {
			var ves troupe.ValidationErrors
			if errors.As(err, &ves) {
				for _, ve := range ves {
					if ptr, ok := t.runtimeField(f, v.ptr, ve.Field); ok {
						errs = append(errs, t.errorAt(ptr, ve.Problem))
					} else {
						errs = append(errs, t.errorAt(ptr, ve.Field+": "+ve.Problem))
					}
				}
				continue
			}
			errs = append(errs, t.errorAt(v.ptr, err.Error()))
		}
	}
	return errs
}

// runtimeField returns the JSON pointer of the field of the file's section that the runtime's
// validation of it names as field, in its own words: the planner's "intents[causal].
// optional_agents[1]" is the file's "/routing/intents/0/optional/1". When part of field names
// nothing in the file, ok is false and the pointer is of the deepest field it does name.
func (t *tree) runtimeField(f *File, section, field string) (ptr string, ok bool) {
	ptr = section
	for field != "" {
		var tok string
		switch field[0] {
		case '.':
			field = field[1:]
			continue
		case '[':
			end := strings.IndexByte(field, ']')
			if end < 0 {
				return ptr, false
			}
			tok, field = field[1:end], field[end+1:]
		default:
			end := strings.IndexAny(field, ".[")
			if end < 0 {
				end = len(field)
			}
			tok, field = field[:end], field[end:]
		}
		switch {
		case ptr == "/routing/intents" && f.Routing != nil:
			// The planner names an intent rule by its intent.
			if i := slices.IndexFunc(f.Routing.Intents, func(r IntentRule) bool { return r.Intent == tok }); i >= 0 {
				tok = strconv.Itoa(i)
			}
		case strings.HasPrefix(ptr, "/routing/intents/") && strings.Count(ptr, "/") == 3:
			switch tok {
			case "intent_type":
				tok = "intent"
			case "primary_agents":
				tok = "primary"
			case "optional_agents":
				tok = "optional"
			}
		}
		next := ptr + "/" + escapePointer(tok)
		if _, found := t.vals[next]; !found {
			return ptr, false
		}
		ptr = next
	}
	return ptr, true
}

// bundle checks what the schema cannot of a bundle at ptr, so that a file that loads builds:
// evidence.New would refuse the rest, with no place in the file.
func (c *checker) bundle(ptr string, b *BundleSpec) {
	quorum := ptr + "/min_replicates"
	if b.Stop != nil && b.Stop.Valid > 0 {
		if b.MinReplicates > 0 {
			c.add(quorum, "min_replicates is stop.valid under its first name: give one or the other")
		}
		quorum = ptr + "/stop/valid"
	}
	if q := b.Quorum(); q > b.Replicates && !c.refused(ptr+"/replicates") {
		c.add(quorum, fmt.Sprintf("%s %d is more than replicates %d", quorum[strings.LastIndexByte(quorum, '/')+1:], q, b.Replicates))
	}
	if b.MaxTokens > 0 && b.Replicates > 0 && (b.Budget == nil || b.Budget.Tokens == 0) && b.MaxTokens > math.MaxInt64/int64(b.Replicates) {
		// The budget would be replicates × max_tokens, past what evidence's int64 holds.
		c.add(ptr+"/max_tokens", fmt.Sprintf("replicates × max_tokens, the bundle's token budget when budget.tokens is absent, is more than %d: lower max_tokens or give budget.tokens", int64(math.MaxInt64)))
	}
	seen := make(map[int64]int, len(b.Seeds))
	for i, s := range b.Seeds {
		if j, dup := seen[s]; dup {
			c.add(ptr+pointer("seeds", strconv.Itoa(i)), fmt.Sprintf("seed %d is seeds[%d] already: replicates need distinct seeds, or they are not independent samples", s, j))
			continue
		}
		seen[s] = i
	}
	if r := b.Redact; r != nil {
		for i, p := range r.Patterns {
			at := ptr + pointer("redact", "patterns", strconv.Itoa(i))
			re, err := regexp.Compile(p)
			switch {
			case err != nil:
				c.add(at, "not a regular expression (RE2 syntax): "+strings.TrimPrefix(err.Error(), "error parsing regexp: "))
			case re.MatchString(""):
				c.add(at, "the pattern matches the empty string, so it would put the replacement between every two characters")
			}
		}
		for i, f := range r.Fields {
			segs := strings.Split(f, ".")
			for j, s := range segs {
				if s == "" || s == "**" && (j != 0 || len(segs) == 1) {
					c.add(ptr+pointer("redact", "fields", strconv.Itoa(i)), fmt.Sprintf("segment %d of %q is invalid: a path is member names separated by \".\", * for any one, and ** only as the first of several (**.password)", j+1, f))
					break
				}
			}
		}
	}
}

// defaultBundleTimeout bounds a bundle whose agent has no timeout, nor the budget a
// default_timeout: evidence.DefaultBudgetTimeout, which this package does not import (its tests
// check they agree). defaultLintTimeout is a lint's when it gives none: evidence.DefaultLintTimeout.
const (
	defaultBundleTimeout = 10 * time.Minute
	defaultLintTimeout   = time.Second
)

// lints checks the lint lane of the bundle a: each lint's agent is declared (the cycle check
// refuses the bundle and the agents holding it, as Children counts lints) and given once, and
// its timeout is more than zero and no longer than the bundle's own, which cuts off every lint
// still running when it expires (as it does every replicate), so a longer one is never reached.
func (c *checker) lints(a *Agent) {
	base := pointer("agents", a.Name, "bundle", "lints")
	bound, boundOf := time.Duration(a.Timeout), fmt.Sprintf("(%s, line %d),", displayPath(pointer("agents", a.Name, "timeout")), c.line(pointer("agents", a.Name, "timeout")))
	if bound <= 0 {
		if bud := c.f.Budget; bud != nil && bud.DefaultTimeout > 0 {
			bound, boundOf = time.Duration(bud.DefaultTimeout), fmt.Sprintf("(budget.default_timeout, line %d, as %s has no timeout),", c.line("/budget/default_timeout"), a.Name)
		} else {
			bound, boundOf = defaultBundleTimeout, fmt.Sprintf("when %s has no timeout and the budget no default_timeout, as here,", a.Name)
		}
	}
	seen := map[string]int{}
	for i, l := range a.Bundle.Lints {
		at := base + "/" + strconv.Itoa(i)
		c.ref(at+"/agent", l.Agent)
		if j, dup := seen[l.Agent]; dup {
			c.add(at+"/agent", fmt.Sprintf("%s is lints[%d] already (line %d): a lint runs once on each replicate, its findings named after its agent", l.Agent, j, c.line(base+"/"+strconv.Itoa(j))))
		} else {
			seen[l.Agent] = i
		}
		switch d := time.Duration(l.Timeout); {
		case d == 0:
			if w, ok := c.t.valueAt(at + "/timeout").(string); ok && durationPattern.MatchString(w) {
				// Zero is no time to check anything in; evidence would read it as its default,
				// which the file did not write.
				c.add(at+"/timeout", fmt.Sprintf("a lint's timeout is more than 0s (absent: %s)", shortDuration(defaultLintTimeout)))
			}
		case d > bound:
			c.add(at+"/timeout", fmt.Sprintf("timeout %s is longer than the bundle's, %s %s which cuts off every lint first: the lint lane runs with tiny budgets; shorten timeout",
				shortDuration(d), shortDuration(bound), boundOf))
		}
	}
}

// check validates what the schema cannot: references between agents, cycles, schemas.
func check(t *tree, f *File) Errors {
	c := &checker{t: t, f: f}
	for _, n := range f.Order {
		a := f.Agents[n]
		base := pointer("agents", n)
		for i, d := range a.After {
			c.ref(base+pointer("after", fmt.Sprint(i)), d)
			if d == n {
				c.add(base+pointer("after", fmt.Sprint(i)), "an agent cannot run after itself")
			}
		}
		switch {
		case a.Sequential != nil:
			c.refs(base+"/sequential/agents", a.Sequential.Agents)
			c.once(base+"/sequential/agents", a.Sequential.Agents)
		case a.Parallel != nil:
			c.refs(base+"/parallel/agents", a.Parallel.Agents)
			c.once(base+"/parallel/agents", a.Parallel.Agents)
			switch p := a.Parallel; {
			case p.Strategy == StrategyMajorityVote && p.Vote == "":
				c.add(base+"/parallel/strategy", "majority_vote needs vote: the key of each agent's agent_result whose value is its answer")
			case p.Strategy != StrategyMajorityVote && p.Vote != "":
				c.add(base+"/parallel/vote", fmt.Sprintf("vote is the answer counted under strategy majority_vote, and this group's strategy is %s: write strategy: majority_vote, or remove vote", cmp.Or(p.Strategy, StrategyCollectAll)))
			}
		case a.Loop != nil:
			c.ref(base+"/loop/agent", a.Loop.Agent)
			if u, m := a.Loop.Until, f.Agents[a.Loop.Agent]; u != nil && m != nil && !slices.Contains(m.Writes, u.Key) {
				// The condition reads the state the looped agent writes, and only its declared
				// writes are applied: the loop would run to max_iterations every time.
				c.add(base+"/loop/until/key", fmt.Sprintf("%s does not declare writes of %q, so the loop would never see it change; add it to %s's writes", a.Loop.Agent, u.Key, a.Loop.Agent))
			}
		case a.LLM != nil:
			for i, tool := range a.LLM.Tools {
				p := base + pointer("llm", "tools", fmt.Sprint(i))
				if server, _, ok := MCPTool(tool); ok {
					c.server(p, server)
					continue
				}
				c.ref(p, tool)
			}
			c.tools(base+"/llm/tools", a.LLM.Tools)
		case a.MCP != nil:
			c.server(base+"/mcp/server", a.MCP.Server)
			c.callTimeout(a)
		case a.Bundle != nil:
			c.ref(base+"/bundle/agent", a.Bundle.Agent)
			c.bundle(base+"/bundle", a.Bundle)
			c.lints(a)
			if sub := f.Agents[a.Bundle.Agent]; sub != nil && sub != a && len(a.InputSchema) > 0 {
				// The bundle takes its agent's input schema (see needs); with one of its own
				// as well, one of the two would be ignored.
				if _, in, of := f.needs(sub); len(in) > 0 && of != a {
					whose := "declares an input_schema"
					if of != sub {
						whose = "takes " + of.Name + "'s input_schema"
					}
					c.add(base+"/input_schema", fmt.Sprintf("%s, the agent this bundle replicates, %s (line %d), which the bundle takes too, as a replicate's input is the bundle's: declare the schema on one of them",
						sub.Name, whose, c.line(pointer("agents", of.Name, "input_schema"))))
				}
			}
		}
		for _, s := range []struct {
			field string
			raw   json.RawMessage
		}{{"input_schema", a.InputSchema}, {"output_schema", a.OutputSchema}} {
			if len(s.raw) > 0 {
				if err := compileSchema(f.Dir, n, s.raw); err != nil {
					c.add(base+"/"+s.field, err.Error())
				}
			}
		}
	}
	for _, n := range slices.Sorted(maps.Keys(f.MCPServers)) {
		if s := f.MCPServers[n]; s != nil && (s.Command == "") == (s.URL == "") {
			c.add(pointer("mcp_servers", n), "an MCP server has a command (stdio) or a url (streamable HTTP): give exactly one")
		} else if s != nil && s.URL != "" && (len(s.Args) > 0 || len(s.Env) > 0 || s.Dir != "") {
			c.add(pointer("mcp_servers", n), "args, env and dir are for a server run as a command, not one at a url")
		} else if s != nil && s.Command != "" && s.MaxResultBytes > mcpStdioMessage {
			// The SDK would refuse the message before mcptool saw the result: the bound written
			// would never be the one that holds.
			c.add(pointer("mcp_servers", n, "max_result_bytes"), fmt.Sprintf("%d is more than a server run as a command can send: the MCP SDK reads each of its messages as one line of at most %d bytes (%d MiB), so a larger result fails before this bound is reached; lower max_result_bytes to %d or less, or reach the server at a url",
				s.MaxResultBytes, mcpStdioMessage, mcpStdioMessage>>20, mcpStdioMessage))
		}
	}
	c.cycles(func(a *Agent) []string { return a.Children() }, func(a *Agent, cyc string) {
		c.add(pointer("agents", a.Name), fmt.Sprintf("%s agent %q contains itself: %s", a.Kind, a.Name, cyc))
	})
	c.cycles(func(a *Agent) []string { return withoutSelf(a.After, a.Name) }, func(a *Agent, cyc string) {
		// Running after itself is reported at the entry.
		c.add(pointer("agents", a.Name, "after"), "after has a cycle, so no agent of it can run first: "+cyc)
	})
	c.nesting()

	if r := f.Routing; r != nil {
		seen := map[string]bool{}
		for i, ir := range r.Intents {
			p := pointer("routing", "intents", fmt.Sprint(i))
			if seen[ir.Intent] {
				c.add(p+"/intent", fmt.Sprintf("intent %q has a rule already", ir.Intent))
			}
			seen[ir.Intent] = true
			c.refs(p+"/primary", ir.Primary)
			c.refs(p+"/optional", ir.Optional)
		}
		if len(r.Intents) == 0 && (f.Parser == nil || len(f.Parser.PreferredAgents) == 0) {
			// The planner plans a request by its intent's rule, and without one only when the
			// request names preferred agents.
			c.add("/routing/intents", "routing has no intent rules, so no request can be planned: the planner selects agents by the rule of the request's intent; add a rule such as {intent: general, primary: [AGENT]}, or remove routing to run every top-level agent")
		}
		c.refMap("/routing/kpi_map", r.KPIMap)
		c.refMap("/routing/flag_agents", r.FlagAgents)
		for _, pairs := range []struct {
			field string
			p     [][]string
		}{{"exclusive_pairs", r.ExclusivePairs}, {"compatible_pairs", r.CompatiblePairs}} {
			for i, pr := range pairs.p {
				p := pointer("routing", pairs.field, fmt.Sprint(i))
				c.refs(p, pr)
				if len(pr) == 2 && pr[0] == pr[1] {
					c.add(p, fmt.Sprintf("a pair is two different agents, not %q twice", pr[0]))
				}
			}
		}
		c.refs("/routing/synthesizers", r.Synthesizers)
	}
	if r := f.Coordinator; r != nil {
		named := map[string]int{}
		for i, tr := range r.Triggers {
			p := pointer("coordinator", "triggers", fmt.Sprint(i))
			c.ref(p+"/target", tr.Target)
			if tr.Name == "" {
				continue
			}
			if j, dup := named[tr.Name]; dup {
				c.add(p+"/name", fmt.Sprintf("trigger name %q is taken by triggers[%d] on line %d: a name says which trigger fired, in routing reasons and metadata", tr.Name, j, c.line(pointer("coordinator", "triggers", fmt.Sprint(j)))))
				continue
			}
			named[tr.Name] = i
		}
		c.catchAll(r.Triggers)
		c.refMap("/coordinator/intents", r.Intents)
		c.refMap("/coordinator/kpi_map", r.KPIMap)
		for _, k := range slices.Sorted(maps.Keys(r.Fallbacks)) {
			c.refKey("/coordinator/fallbacks", k)
			c.ref(pointer("coordinator", "fallbacks", k), r.Fallbacks[k])
		}
		if r.Default != "" {
			c.ref("/coordinator/default", r.Default)
		}
		if len(r.Triggers) == 0 && len(r.Intents) == 0 && len(r.KPIMap) == 0 && r.Default == "" {
			c.add("/coordinator", "the coordinator has no triggers, intents, kpi_map or default, so it routes no request to any agent: give it a default agent, or triggers")
		}
	}
	if f.Routing != nil && f.Coordinator != nil {
		c.add("/coordinator", "routing and coordinator are exclusive: a file either plans stages of agents (routing) or routes each request to one agent (coordinator)")
	}
	if p := f.ErrorPolicy; p != nil {
		c.refMap("/error_policy/fallback_agents", p.FallbackAgents)
		for _, k := range slices.Sorted(maps.Keys(p.FallbackAgents)) {
			c.refKey("/error_policy/fallback_agents", k)
		}
		for _, k := range slices.Sorted(maps.Keys(p.FallbackAgents)) {
			for i, fb := range p.FallbackAgents[k] {
				if fb == k {
					// The engine never stands an agent in for itself: the entry would be ignored,
					// and, planned by TopLevel, the agent would not be planned at all.
					c.add(pointer("error_policy", "fallback_agents", k, strconv.Itoa(i)), "an agent cannot be its own fallback")
				}
			}
		}
		if f.Routing == nil && f.Coordinator == nil {
			// TopLevel plans no agent that is another's fallback, unless another agent runs
			// after it: agents that are each other's fallbacks, none of them run after, would
			// none of them run. An agent run after is planned, so no cycle goes through it.
			ranAfter := map[string]bool{}
			for _, a := range f.Agents {
				for _, d := range a.After {
					ranAfter[d] = true
				}
			}
			c.cycles(func(a *Agent) []string {
				if ranAfter[a.Name] {
					return nil
				}
				return withoutSelf(p.FallbackAgents[a.Name], a.Name)
			}, func(a *Agent, cyc string) {
				c.errs = append(c.errs, c.t.keyErrorAt(pointer("error_policy", "fallback_agents", a.Name),
					"fallback_agents has a cycle, so none of its agents is planned (a fallback agent runs only in place of one that failed, and there is no routing or coordinator to plan one of them): "+cyc))
			})
		}
		if p.OnError != "" && p.OnError != string(troupe.Fallback) && f.declaresFallbacks() {
			// The policy uses fallback agents only under on_error fallback (which retries
			// recoverable failures first); under any other on_error they would be ignored.
			c.add("/error_policy/on_error", fmt.Sprintf("on_error %s never uses the fallback agents this file declares (%s): they are used only under on_error fallback, which retries recoverable failures first; write on_error: fallback, or remove the fallbacks", p.OnError, strings.Join(fallbackFields(f), " and ")))
		}
		if r := p.Retry; r != nil && r.MaxBackoff > 0 && r.InitialBackoff > r.MaxBackoff {
			c.add("/error_policy/retry/initial_backoff", "initial_backoff is longer than max_backoff")
		} else if r != nil && r.MaxBackoff <= 0 && !c.refused("/error_policy/retry/max_backoff") && time.Duration(r.InitialBackoff) > defaultMaxBackoff {
			// Every wait is capped at max_backoff, the default one too: the wait written would
			// never be waited.
			initial := shortDuration(time.Duration(r.InitialBackoff))
			c.add("/error_policy/retry/initial_backoff", fmt.Sprintf("initial_backoff %s is longer than error_policy.retry.max_backoff, %s when absent as here, which caps every wait: set max_backoff to %s or more, or shorten initial_backoff",
				initial, shortDuration(defaultMaxBackoff), initial))
		}
	}
	if p := f.Parser; p != nil {
		for i, pa := range p.PreferredAgents {
			c.ref(pointer("parser", "preferred_agents", fmt.Sprint(i), "agent"), pa.Agent)
		}
	}
	return c.errs
}

// fallbackFields names the fields of f that declare fallback agents.
func fallbackFields(f *File) []string {
	var out []string
	if f.ErrorPolicy != nil && len(f.ErrorPolicy.FallbackAgents) > 0 {
		out = append(out, "error_policy.fallback_agents")
	}
	if f.Coordinator != nil && len(f.Coordinator.Fallbacks) > 0 {
		out = append(out, "coordinator.fallbacks")
	}
	return out
}

type checker struct {
	t    *tree
	f    *File
	errs Errors
}

func (c *checker) add(ptr, problem string) { c.errs = append(c.errs, c.t.errorAt(ptr, problem)) }

// refused reports whether the schema refused the value at ptr, reported already: the File holds
// it as absent, so a check comparing it with another field would compare what the file does not
// say, and is not made.
func (c *checker) refused(ptr string) bool { return c.t.refused[ptr] }

// mcpCallTimeout is how long a call to an MCP server whose call_timeout is absent may take:
// mcptool.DefaultCallTimeout, which this package does not import (its tests check they agree).
const mcpCallTimeout = time.Minute

// mcpStdioMessage is the longest message a server run as a command can send: the go-sdk's
// mcp.DefaultMaxLineLength, which this package does not import (its tests check they agree).
const mcpStdioMessage = 16 << 20

// defaultMaxBackoff is the longest wait between attempts when retry.max_backoff is absent:
// policy.DefaultMaxBackoff, which this package does not import (its tests check they agree).
const defaultMaxBackoff = 10 * time.Second

// callTimeout reports an mcp agent whose timeout is longer than its server's call_timeout (or
// the default, when the server gives none): each dispatch of the agent is one call, which the
// server's bound cuts off first, so the agent's timeout would never be reached. Which of the two
// the file means cannot be told, so neither is picked in silence.
func (c *checker) callTimeout(a *Agent) {
	s := c.f.MCPServers[a.MCP.Server]
	if s == nil || a.Timeout <= 0 {
		return
	}
	timeout, bound := time.Duration(a.Timeout), time.Duration(s.CallTimeout)
	field := pointer("mcp_servers", a.MCP.Server, "call_timeout")
	switch {
	case c.refused(field):
	case bound == 0 && timeout > mcpCallTimeout:
		c.add(pointer("agents", a.Name, "timeout"), fmt.Sprintf("timeout %s is longer than %s, %s when absent as here, which cuts off every call to the server first: set call_timeout to %s or more on the server, or shorten timeout",
			shortDuration(timeout), displayPath(field), shortDuration(mcpCallTimeout), shortDuration(timeout)))
	case bound > 0 && timeout > bound:
		c.add(pointer("agents", a.Name, "timeout"), fmt.Sprintf("timeout %s is longer than %s, %s (line %d), which cuts off every call to the server first: raise call_timeout to %s or more, or shorten timeout",
			shortDuration(timeout), displayPath(field), shortDuration(bound), c.line(field), shortDuration(timeout)))
	}
}

// shortDuration writes d as a file would: 1m, not 1m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if t, ok := strings.CutSuffix(s, "m0s"); ok {
		s = t + "m"
	}
	if t, ok := strings.CutSuffix(s, "h0m"); ok {
		s = t + "h"
	}
	return s
}

// line returns the line of the value at ptr.
func (c *checker) line(ptr string) int { return c.t.position(ptr, false).line }

// catchAll reports the first trigger that fires on every message, having neither patterns nor
// when, when triggers follow it: the first trigger that fires wins, so they never would. (Every
// agent of the file is available to the router, so the catch-all's target always is.)
func (c *checker) catchAll(triggers []Trigger) {
	for i := range triggers[:max(len(triggers)-1, 0)] {
		p := pointer("coordinator", "triggers", fmt.Sprint(i))
		if !c.firesAlways(p) {
			continue
		}
		var after []string
		for j := i + 1; j < len(triggers); j++ {
			after = append(after, fmt.Sprintf("%s (line %d)", triggerLabel(triggers[j], j), c.line(pointer("coordinator", "triggers", fmt.Sprint(j)))))
		}
		c.add(p, fmt.Sprintf("trigger %s has no patterns and no when, so it fires on every message and the triggers after it never do: %s; give it a condition or make it the last trigger",
			triggerLabel(triggers[i], i), strings.Join(after, ", ")))
		return
	}
}

// firesAlways reports whether the trigger at ptr, as written, has no condition. It goes by
// the keys written, not by the decoded trigger: a misspelt "pattern", or patterns of the wrong
// type, are left out of that, which is no reason to call the trigger a catch-all too.
func (c *checker) firesAlways(ptr string) bool {
	for _, k := range c.t.order[ptr] {
		switch v := c.t.valueAt(ptr + "/" + escapePointer(k)); k {
		case "name", "target", "reason":
		case "patterns":
			if l, ok := v.([]any); !ok || len(l) > 0 {
				return false
			}
		case "when":
			if m, ok := v.(map[string]any); !ok || len(m) > 0 {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// triggerLabel names a trigger for people: its name, or its place when it has none.
func triggerLabel(t Trigger, i int) string {
	if t.Name != "" {
		return strconv.Quote(t.Name)
	}
	return fmt.Sprintf("triggers[%d]", i)
}

// ref checks that the agent name at ptr is declared.
func (c *checker) ref(ptr, name string) {
	if name == "" {
		return
	}
	if _, ok := c.f.Agents[name]; !ok {
		c.add(ptr, c.unknown(name))
	}
}

// server checks that the MCP server name at ptr is declared.
func (c *checker) server(ptr, name string) {
	if _, ok := c.f.MCPServers[name]; ok {
		return
	}
	problem := fmt.Sprintf("unknown MCP server %q", name)
	if m := Closest(name, slices.Sorted(maps.Keys(c.f.MCPServers))); m != "" {
		problem += fmt.Sprintf(" (did you mean %q?)", m)
	} else if len(c.f.MCPServers) == 0 {
		problem += ": declare it under mcp_servers"
	}
	c.add(ptr, problem)
}

func (c *checker) refKey(ptr, name string) {
	if _, ok := c.f.Agents[name]; !ok {
		c.errs = append(c.errs, c.t.keyErrorAt(ptr+"/"+escapePointer(name), c.unknown(name)))
	}
}

func (c *checker) unknown(name string) string {
	s := fmt.Sprintf("unknown agent %q", name)
	if best := Closest(name, c.f.Order); best != "" {
		return s + fmt.Sprintf(" (did you mean %q?)", best)
	}
	return s + " (not declared under agents)"
}

// once reports each entry of a composite's agents at ptr that names an agent listed before
// it: a composite's members are told apart by name (their events, handoffs, results and state
// writes carry it), so flow refuses such a composite, at every run.
func (c *checker) once(ptr string, names []string) {
	seen := make(map[string]bool, len(names))
	for i, n := range names {
		if seen[n] {
			c.add(ptr+"/"+strconv.Itoa(i), fmt.Sprintf("%q is listed twice", n))
		}
		seen[n] = true
	}
}

// tools reports each of an llm agent's tools at ptr that offers a tool an entry before it
// offers already: the model calls a tool by name, so the agent cannot be built with two of one
// name. An agent is offered as one tool, mcp:NAME as every tool of the server and mcp:NAME/TOOL
// as one of them.
func (c *checker) tools(ptr string, tools []string) {
	seen := make(map[string]int, len(tools))
	for i, tool := range tools {
		at := ptr + "/" + strconv.Itoa(i)
		if _, dup := seen[tool]; dup {
			c.add(at, fmt.Sprintf("%q is listed twice", tool))
			continue
		}
		seen[tool] = i
		server, name, ok := MCPTool(tool)
		if !ok {
			continue
		}
		if j, all := seen["mcp:"+server]; all && name != "" {
			c.add(at, fmt.Sprintf("%q is one of the tools \"mcp:%s\" (tools[%d]) offers already: list the server or some of its tools, not both", tool, server, j))
		} else if name == "" {
			for j, earlier := range tools[:i] {
				if s, n, ok := MCPTool(earlier); ok && s == server && n != "" {
					c.add(at, fmt.Sprintf("%q offers %q, which tools[%d] lists already: list the server or some of its tools, not both", tool, earlier, j))
					break
				}
			}
		}
	}
}

// maxNesting is how deeply dispatches nest inside one another through composites: flow.MaxNesting,
// which this package does not import (its tests check they agree).
const maxNesting = 64

// nesting reports a sequential, parallel or loop agent whose members, composites of those kinds
// in turn, nest more than maxNesting agents deep: flow fails the member past that depth before
// it starts, at every run, so the innermost agents could never run. It is reported once, at the
// outermost agent of the chain; the cycle check has refused cycles, which are skipped here.
func (c *checker) nesting() {
	members := func(a *Agent) []string {
		if a.Sequential == nil && a.Parallel == nil && a.Loop == nil {
			return nil // a bundle's replicates and an llm agent's tool calls nest only at times
		}
		return a.Children()
	}
	deepest := map[string][]string{} // agent → the longest chain of members from it, it first
	visiting := map[string]bool{}
	var chain func(n string) []string
	chain = func(n string) []string {
		if ch, ok := deepest[n]; ok {
			return ch
		}
		a := c.f.Agents[n]
		if a == nil || visiting[n] {
			return nil
		}
		visiting[n] = true
		var longest []string
		for _, m := range members(a) {
			if ch := chain(m); len(ch) > len(longest) {
				longest = ch
			}
		}
		delete(visiting, n)
		deepest[n] = append([]string{n}, longest...)
		return deepest[n]
	}
	inside := map[string]bool{} // members of an agent nested too deep already
	for _, n := range c.f.Order {
		if ch := chain(n); len(ch) > maxNesting {
			for _, m := range members(c.f.Agents[n]) {
				inside[m] = true
			}
		}
	}
	for _, n := range c.f.Order {
		ch := chain(n)
		if len(ch) <= maxNesting || inside[n] {
			continue
		}
		c.add(pointer("agents", n), fmt.Sprintf("its members nest %d agents deep (%s → … → %s), and dispatches nest at most %d deep: every run of %s would fail at %s with MAX_DEPTH_EXCEEDED; nest fewer composites",
			len(ch), ch[0], ch[len(ch)-1], maxNesting, n, ch[maxNesting]))
	}
}

func (c *checker) refs(ptr string, names []string) {
	for i, n := range names {
		c.ref(ptr+"/"+fmt.Sprint(i), n)
	}
}

func (c *checker) refMap(ptr string, m map[string][]string) {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		c.refs(ptr+"/"+escapePointer(k), m[k])
	}
}

// withoutSelf returns names but for name.
func withoutSelf(names []string, name string) []string {
	if !slices.Contains(names, name) {
		return names
	}
	var out []string
	for _, n := range names {
		if n != name {
			out = append(out, n)
		}
	}
	return out
}

// cycles reports each cycle of the graph edges defines over the agents once, at the agent
// where it is first met in file order, naming the whole cycle.
func (c *checker) cycles(edges func(*Agent) []string, report func(a *Agent, cycle string)) {
	const (
		unvisited = iota
		active
		done
	)
	state := map[string]int{}
	var stack []string
	var visit func(n string)
	visit = func(n string) {
		state[n] = active
		stack = append(stack, n)
		a := c.f.Agents[n]
		for _, m := range edges(a) {
			if _, ok := c.f.Agents[m]; !ok {
				continue
			}
			switch state[m] {
			case unvisited:
				visit(m)
			case active:
				i := slices.Index(stack, m)
				cyc := append(slices.Clone(stack[i:]), m)
				report(c.f.Agents[m], strings.Join(cyc, " → "))
			}
		}
		stack = stack[:len(stack)-1]
		state[n] = done
	}
	for _, n := range c.f.Order {
		if state[n] == unvisited {
			visit(n)
		}
	}
}
