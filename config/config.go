package config

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Version is the version of the file format this package reads; a file says which it is
// written for in its version field.
const Version = 1

// FileName is the configuration file looked for when a directory is given.
const FileName = "troupe.yaml"

// File is a loaded, validated configuration: the agents and how requests are planned and
// routed among them. Load fills every field from the YAML file; the zero value describes no
// agents. A File is not modified by anything in this package once loaded and is safe for
// concurrent reads.
type File struct {
	// Path is the file the configuration was read from; Dir its directory, against which
	// relative paths (commands, schema files) resolve.
	Path string `json:"-"`
	Dir  string `json:"-"`

	Version     int               `json:"version"`
	Name        string            `json:"name,omitempty"`
	Description string            `json:"description,omitempty"`
	Agents      map[string]*Agent `json:"agents"`
	// MCPServers are the MCP servers whose tools llm agents call and mcp agents are, by name.
	MCPServers map[string]*MCPServer `json:"mcp_servers,omitempty"`
	// Order lists the agents' names in the order the file declares them.
	Order       []string     `json:"-"`
	Routing     *Routing     `json:"routing,omitempty"`
	Coordinator *Coordinator `json:"coordinator,omitempty"`
	ErrorPolicy *ErrorPolicy `json:"error_policy,omitempty"`
	Budget      *Budget      `json:"budget,omitempty"`
	Parser      *Parser      `json:"parser,omitempty"`
	Examples    []Example    `json:"examples,omitempty"`

	// where are the places of the file's fields, for errors found after loading (building an
	// agent).
	where places
}

// Position returns the line and column of the field at ptr (a JSON pointer such as
// "/agents/fetch") — of its key, for a member of a mapping, as that is where people look for
// it — or of the nearest field enclosing it; 0, 0 for a File not loaded from YAML.
func (f *File) Position(ptr string) (line, col int) {
	p := f.place(ptr, true)
	return p.line, p.col
}

// place is where the field at ptr is, as places.position says; the zero pos for a File not
// loaded from YAML.
func (f *File) place(ptr string, key bool) pos {
	if f.where.vals == nil {
		return pos{}
	}
	return f.where.position(ptr, key)
}

// Example is a query the configuration is meant to answer, shown by "troupe agents" and
// planned by tests.
type Example struct {
	Query string         `json:"query"`
	State map[string]any `json:"state,omitempty"`
}

// Agent is one agent of the file: its kind, what it declares to the planner (reads, writes,
// after, timeout), the schemas its input and output must meet, and the block of its kind —
// exactly one, named after the kind. Name is the agent's key in the agents mapping.
type Agent struct {
	Name         string          `json:"-"`
	Kind         string          `json:"kind"`
	Description  string          `json:"description,omitempty"`
	Timeout      Duration        `json:"timeout,omitempty"`
	Reads        []string        `json:"reads,omitempty"`
	Writes       []string        `json:"writes,omitempty"`
	After        []string        `json:"after,omitempty"`
	InputSchema  json.RawMessage `json:"input_schema,omitempty"`
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`

	Builtin    *BuiltinSpec    `json:"builtin,omitempty"`
	Exec       *ExecSpec       `json:"exec,omitempty"`
	HTTP       *HTTPSpec       `json:"http,omitempty"`
	Sequential *SequentialSpec `json:"sequential,omitempty"`
	Parallel   *ParallelSpec   `json:"parallel,omitempty"`
	Loop       *LoopSpec       `json:"loop,omitempty"`
	Bundle     *BundleSpec     `json:"bundle,omitempty"`
	LLM        *LLMSpec        `json:"llm,omitempty"`
	MCP        *MCPSpec        `json:"mcp,omitempty"`
}

// The kinds of agent a file can declare. Each has a block of the same name in the agent.
const (
	KindBuiltin    = "builtin"    // a Go agent the program registers by name
	KindExec       = "exec"       // a subprocess speaking JSON on stdin and stdout
	KindHTTP       = "http"       // an HTTP endpoint taking the dispatch as a JSON POST
	KindSequential = "sequential" // its agents one after another
	KindParallel   = "parallel"   // its agents at once
	KindLoop       = "loop"       // one agent repeated until a condition holds
	KindBundle     = "bundle"     // replicates of one agent whose evidence is combined
	KindLLM        = "llm"        // a chat model on an OpenAI-compatible endpoint
	KindMCP        = "mcp"        // one tool of an MCP server
)

// Children returns the agents a composite agent runs, in order — for a bundle, the agent it
// replicates, then its lints' agents — and the agents an llm agent may call as tools; none for
// a leaf.
func (a *Agent) Children() []string {
	switch {
	case a.Sequential != nil:
		return a.Sequential.Agents
	case a.Parallel != nil:
		return a.Parallel.Agents
	case a.Loop != nil:
		return []string{a.Loop.Agent}
	case a.Bundle != nil:
		// A lint runs inside the bundle, on each replicate's output, as a member runs inside
		// its composite: not planned on its own (TopLevel), and never the bundle or an agent
		// holding it (Load's cycle check).
		out := []string{a.Bundle.Agent}
		for _, l := range a.Bundle.Lints {
			out = append(out, l.Agent)
		}
		return out
	case a.LLM != nil:
		var out []string
		for _, t := range a.LLM.Tools {
			if _, _, isMCP := MCPTool(t); !isMCP {
				out = append(out, t)
			}
		}
		return out
	}
	return nil
}

// MCPTool reads an llm agent's tool that names MCP tools rather than an agent: "mcp:NAME" is
// every tool of the server NAME (tool is ""), "mcp:NAME/TOOL" its tool TOOL. ok is false for
// an agent's name.
func MCPTool(ref string) (server, tool string, ok bool) {
	rest, ok := strings.CutPrefix(ref, "mcp:")
	if !ok {
		return "", "", false
	}
	server, tool, _ = strings.Cut(rest, "/")
	return server, tool, true
}

// MCPServer says how to reach an MCP server: exactly one of Command (a subprocess speaking
// MCP over stdio, with Args, Env and Dir) or URL (a streamable HTTP endpoint). Env maps a
// variable set for the server to the NAME of the environment variable holding its value, so
// that secrets stay out of the file. Include keeps only the tools it names, Prefix is put
// before the name of every tool offered to a model, ConnectTimeout bounds starting the server
// and listing its tools (0: 30s), CallTimeout each call (0: a minute) and StopTimeout how long
// a command's server is given to exit once its stdin closes before it is terminated (0: 5s).
// MaxResultBytes bounds a tool's result (mcptool.Config's; 0: its default, 16 MiB): at most
// 1 GiB, and for a command's server at most 16 MiB, the most one of its messages can hold.
type MCPServer struct {
	Command        string            `json:"command,omitempty"`
	Args           []string          `json:"args,omitempty"`
	Env            map[string]string `json:"env,omitempty"`
	Dir            string            `json:"dir,omitempty"`
	URL            string            `json:"url,omitempty"`
	Include        []string          `json:"include,omitempty"`
	Prefix         string            `json:"prefix,omitempty"`
	ConnectTimeout Duration          `json:"connect_timeout,omitempty"`
	CallTimeout    Duration          `json:"call_timeout,omitempty"`
	StopTimeout    Duration          `json:"stop_timeout,omitempty"`
	MaxResultBytes int64             `json:"max_result_bytes,omitempty"`
}

// MCPSpec is an mcp agent: the tool Tool (as the server names it) of the server Server, a key
// of the file's mcp_servers, called with the dispatch's arguments.
type MCPSpec struct {
	Server string `json:"server"`
	Tool   string `json:"tool"`
}

// BuiltinSpec names the Go agent a builtin agent is; Name defaults to the agent's own name.
type BuiltinSpec struct {
	Name string `json:"name,omitempty"`
}

// ExecSpec runs a command: Command[0] is the program (a path relative to the file's
// directory, or a name looked up in PATH), the rest its arguments. Dir is its working
// directory (default the file's directory), Env extra environment variables.
type ExecSpec struct {
	Command []string          `json:"command"`
	Dir     string            `json:"dir,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
}

// HTTPSpec posts each dispatch to URL with Headers. Secrets are never in the file: a header
// whose value is secret names the environment variable holding it (HeadersFromEnv), and
// BearerTokenEnv names the variable holding a bearer token.
type HTTPSpec struct {
	URL            string            `json:"url"`
	Headers        map[string]string `json:"headers,omitempty"`
	HeadersFromEnv map[string]string `json:"headers_from_env,omitempty"`
	BearerTokenEnv string            `json:"bearer_token_env,omitempty"`
	// MaxResponseBytes is httpagent.Config's; 0 means its default.
	MaxResponseBytes int64 `json:"max_response_bytes,omitempty"`
}

// SequentialSpec lists the agents of a sequential agent, in the order they run.
type SequentialSpec struct {
	Agents []string `json:"agents"`
}

// ParallelSpec lists the agents of a parallel agent; MaxConcurrency caps how many run at
// once (0 is the runtime's bound). Strategy is how their results make the group's (seed 002's
// AggregationStrategy: StrategyCollectAll when empty, StrategyFirstSuccess or
// StrategyMajorityVote); under majority_vote, Vote is the key of each agent_result whose value
// is the agent's answer.
type ParallelSpec struct {
	Agents         []string `json:"agents"`
	MaxConcurrency int      `json:"max_concurrency,omitempty"`
	Strategy       string   `json:"strategy,omitempty"`
	Vote           string   `json:"vote,omitempty"`
}

// The strategies of a parallel agent.
const (
	StrategyCollectAll   = "collect_all"
	StrategyFirstSuccess = "first_success"
	StrategyMajorityVote = "majority_vote"
)

// LoopSpec repeats Agent at most MaxIterations times, stopping early once the session state
// key Until.Key holds Until.Equals.
type LoopSpec struct {
	Agent         string     `json:"agent"`
	MaxIterations int        `json:"max_iterations"`
	Until         *Condition `json:"until,omitempty"`
}

// Condition holds when session state key Key equals Equals (compared as JSON).
type Condition struct {
	Key    string `json:"key"`
	Equals any    `json:"equals"`
}

// BundleSpec runs up to Replicates replicates of Agent, each with its own seed, and combines
// their evidence (package evidence, whose Config each field sets): Task, Model and
// SchemaVersion go into the bundle's meta; Epsilon (0: absent) is the early-stop threshold;
// Seeds, Limits and DiffEncode are evidence.Config's; MaxTokens bounds each replicate
// (evidence.Ceiling.Tokens), Budget the whole bundle, and Stop says when stragglers are
// cancelled. MinReplicates is Stop.Valid under its first name: a file gives one or neither
// (Quorum reads either). Redact and KeepRaw say what is redacted. Lints are the bundle's lint
// lane (evidence.Config.Lints): agents of the file run on each replicate's output beside the
// evaluation, whose findings become the bundle's warnings. Zero fields take evidence's
// defaults; the timeouts are the agents': each replicate's is Agent's, the bundle's its own.
type BundleSpec struct {
	Agent         string        `json:"agent"`
	Replicates    int           `json:"replicates"`
	MinReplicates int           `json:"min_replicates,omitempty"`
	Task          string        `json:"task,omitempty"`
	Model         string        `json:"model,omitempty"`
	SchemaVersion string        `json:"schema_version,omitempty"`
	Seeds         []int64       `json:"seeds,omitempty"`
	Epsilon       float64       `json:"epsilon,omitempty"`
	Stop          *BundleStop   `json:"stop,omitempty"`
	MaxTokens     int64         `json:"max_tokens,omitempty"`
	Budget        *BundleBudget `json:"budget,omitempty"`
	Limits        *BundleLimits `json:"limits,omitempty"`
	DiffEncode    bool          `json:"diff_encode,omitempty"`
	Redact        *Redact       `json:"redact,omitempty"`
	KeepRaw       bool          `json:"keep_raw,omitempty"`
	Lints         []BundleLint  `json:"lints,omitempty"`
}

// BundleLint is one lint of a bundle (evidence.LintAgent): the agent Agent of the file,
// dispatched with a replicate's data under user_context.lint_target and its id under
// user_context.replicate, whose warnings and agent_result.findings are the lint's findings.
// Timeout bounds each check (0: evidence.DefaultLintTimeout); Load refuses a timeout written
// as 0s.
type BundleLint struct {
	Agent   string   `json:"agent"`
	Timeout Duration `json:"timeout,omitempty"`
}

// Quorum is how many valid replicates cancel the rest: Stop.Valid, else MinReplicates; 0 for
// none.
func (b *BundleSpec) Quorum() int {
	if b.Stop != nil && b.Stop.Valid > 0 {
		return b.Stop.Valid
	}
	return b.MinReplicates
}

// BundleStop says when a bundle's replicates still running are cancelled
// (evidence.StopRule): once those finished agree with Confidence, After has passed, or Valid
// have finished valid. Zero fields are rules not applied.
type BundleStop struct {
	Confidence float64  `json:"confidence,omitempty"`
	After      Duration `json:"after,omitempty"`
	Valid      int      `json:"valid,omitempty"`
}

// BundleBudget bounds a whole bundle (evidence.Budget): Tokens and CostDollars over all its
// replicates. Zero fields take evidence's defaults.
type BundleBudget struct {
	Tokens      int64   `json:"tokens,omitempty"`
	CostDollars float64 `json:"cost_dollars,omitempty"`
}

// BundleLimits caps a bundle (bundle.Limits). Zero fields take its defaults.
type BundleLimits struct {
	MaxFields int `json:"max_fields,omitempty"`
	MaxDiffs  int `json:"max_diffs,omitempty"`
	MaxBytes  int `json:"max_bytes,omitempty"`
}

// Redact says what is redacted (redact.Config): Patterns are extra RE2 regular expressions,
// Fields JSON field paths whose values are replaced whole, NoDefaults turns off the built-in
// rules and fields, and Replacement replaces what Patterns and Fields match ("": the
// package's default).
type Redact struct {
	Patterns    []string `json:"patterns,omitempty"`
	Fields      []string `json:"fields,omitempty"`
	NoDefaults  bool     `json:"no_defaults,omitempty"`
	Replacement string   `json:"replacement,omitempty"`
}

// LLMSpec asks a chat model on an OpenAI-compatible endpoint. The API key is never in the
// file: APIKeyEnv names the environment variable holding it. The agent's output_schema, when
// set, is the structured answer the model must give. Tools are what the model may call:
// agents of the file by name, and tools of the file's MCP servers ("mcp:NAME" for all of a
// server's tools, "mcp:NAME/TOOL" for one; see MCPTool).
type LLMSpec struct {
	Model       string   `json:"model"`
	BaseURL     string   `json:"base_url,omitempty"`
	APIKeyEnv   string   `json:"api_key_env,omitempty"`
	System      string   `json:"system,omitempty"`
	Prompt      string   `json:"prompt,omitempty"`
	Temperature *float64 `json:"temperature,omitempty"`
	Seed        *int64   `json:"seed,omitempty"`
	MaxTokens   int64    `json:"max_tokens,omitempty"`
	MaxTurns    int      `json:"max_turns,omitempty"`
	// MaxResponseBytes and MaxToolResultBytes are llmagent.Config's; 0 means its defaults.
	MaxResponseBytes   int64    `json:"max_response_bytes,omitempty"`
	MaxToolResultBytes int64    `json:"max_tool_result_bytes,omitempty"`
	Stream             bool     `json:"stream,omitempty"`
	Tools              []string `json:"tools,omitempty"`
}

// Routing is seed 000's AgentSelector as data (plan.Rules): intent routing rules, the KPI map,
// the agents each requires_* flag calls for, exclusive and compatible pairs, synthesizers.
type Routing struct {
	Intents         []IntentRule        `json:"intents"`
	KPIMap          map[string][]string `json:"kpi_map,omitempty"`
	FlagAgents      map[string][]string `json:"flag_agents,omitempty"`
	ExclusivePairs  [][]string          `json:"exclusive_pairs,omitempty"`
	CompatiblePairs [][]string          `json:"compatible_pairs,omitempty"`
	Synthesizers    []string            `json:"synthesizers,omitempty"`
	MaxConcurrency  int                 `json:"max_concurrency,omitempty"`
}

// IntentRule is seed 000's IntentRoutingRule.
type IntentRule struct {
	Intent           string   `json:"intent"`
	Primary          []string `json:"primary"`
	Optional         []string `json:"optional,omitempty"`
	SequenceRequired bool     `json:"sequence_required,omitempty"`
}

// Coordinator is a message-routing table (route.Rules), seed 003's coordinator: each request
// goes to one agent, chosen by triggers on its words and session state, then by intent and
// KPI, then Default.
type Coordinator struct {
	Triggers      []Trigger           `json:"triggers,omitempty"`
	Intents       map[string][]string `json:"intents,omitempty"`
	KPIMap        map[string][]string `json:"kpi_map,omitempty"`
	Fallbacks     map[string]string   `json:"fallbacks,omitempty"`
	Default       string              `json:"default,omitempty"`
	DefaultReason string              `json:"default_reason,omitempty"`
}

// Trigger is one row of a coordinator's table.
type Trigger struct {
	Name     string         `json:"name"`
	Patterns []string       `json:"patterns,omitempty"`
	When     map[string]any `json:"when,omitempty"`
	Target   string         `json:"target"`
	Reason   string         `json:"reason,omitempty"`
}

// ErrorPolicy is seed 000's ErrorPropagationPolicy (troupe.ErrorPolicy).
type ErrorPolicy struct {
	OnWarning           string              `json:"on_warning,omitempty"`
	OnError             string              `json:"on_error,omitempty"`
	OnTimeout           string              `json:"on_timeout,omitempty"`
	EnableFallback      *bool               `json:"enable_fallback,omitempty"`
	FallbackAgents      map[string][]string `json:"fallback_agents,omitempty"`
	AllowPartialResults *bool               `json:"allow_partial_results,omitempty"`
	MinSuccessRate      *float64            `json:"min_success_rate,omitempty"`
	Retry               *Retry              `json:"retry,omitempty"`
}

// Retry shapes retries (troupe.RetryPolicy).
type Retry struct {
	MaxAttempts    int      `json:"max_attempts,omitempty"`
	InitialBackoff Duration `json:"initial_backoff,omitempty"`
	MaxBackoff     Duration `json:"max_backoff,omitempty"`
	Multiplier     float64  `json:"multiplier,omitempty"`
	Jitter         float64  `json:"jitter,omitempty"`
}

// Budget bounds every run of the file; zero fields take the engine's bounds.
type Budget struct {
	Time           Duration `json:"time,omitempty"`
	MaxCostDollars float64  `json:"max_cost_dollars,omitempty"`
	MaxDispatches  int      `json:"max_dispatches,omitempty"`
	MaxConcurrency int      `json:"max_concurrency,omitempty"`
	DefaultTimeout Duration `json:"default_timeout,omitempty"`
}

// Parser is a deterministic query parser's rules: keyword rules that classify a question's
// intent and gazetteers that find its entities (seed 000 assumes an NLP layer in front of
// the orchestrator; this stands in for it).
type Parser struct {
	// DefaultIntent is the intent of a question no rule fires on.
	DefaultIntent string `json:"default_intent"`
	// Intents are tried in order; the first that fires gives the intent.
	Intents []IntentKeywords `json:"intents,omitempty"`
	// SecondaryIntents are added as secondary_intents when they fire and differ from the
	// main intent.
	SecondaryIntents []IntentKeywords `json:"secondary_intents,omitempty"`
	// PreferredAgents are added to preferred_agents when they fire.
	PreferredAgents []AgentKeywords `json:"preferred_agents,omitempty"`
	// Gazetteers each fill one entity key ("brands") with the names the question mentions.
	Gazetteers []Gazetteer `json:"gazetteers,omitempty"`
}

// Keywords fire on a word equal to one of Words, a word starting with one of Stems, or a
// run of words equal to one of Phrases.
type Keywords struct {
	Words   []string `json:"words,omitempty"`
	Stems   []string `json:"stems,omitempty"`
	Phrases []string `json:"phrases,omitempty"`
}

// IntentKeywords gives Intent when its keywords fire.
type IntentKeywords struct {
	Intent string `json:"intent"`
	Keywords
}

// AgentKeywords prefers Agent when its keywords fire.
type AgentKeywords struct {
	Agent string `json:"agent"`
	Keywords
}

// Gazetteer maps phrases to names for one entity key.
type Gazetteer struct {
	Key   string `json:"key"`
	Terms []Term `json:"terms"`
}

// Term is a name and the phrases that mention it.
type Term struct {
	Name    string   `json:"name"`
	Phrases []string `json:"phrases"`
}

// Duration is a time.Duration written as Go writes one: "30s", "1m30s", "250ms".
type Duration time.Duration

// UnmarshalJSON reads a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("config: a duration is a string such as \"30s\"")
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	*d = Duration(v)
	return nil
}

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }
