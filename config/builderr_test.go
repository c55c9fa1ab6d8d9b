package config_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/config"
)

// buildErrs builds f with the builtin agent "judge" and factories, and returns the problems
// Build reports, formatted.
func buildErrs(t *testing.T, f *config.File, fs config.Factories) []string {
	t.Helper()
	builtins := troupe.NewRegistry()
	builtins.MustAdd("judge", echo(nil))
	_, err := config.Build(t.Context(), f, config.Options{Builtins: builtins, Factories: fs})
	if err == nil {
		return nil
	}
	es, ok := errors.AsType[config.Errors](err)
	if !ok {
		t.Fatalf("error %v (%T) is not config.Errors", err, err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Error())
	}
	return out
}

// Factories as a program writes them, each finding a problem with one field only building
// can find: a working directory that is not there, an environment variable that is not set, more
// replicates than the program runs.
var fieldFactories = config.Factories{
	config.KindExec: func(_ context.Context, b *config.Builder, a *config.Agent) (troupe.Agent, error) {
		if fi, err := os.Stat(b.Path(a.Exec.Dir)); err != nil || !fi.IsDir() {
			return nil, a.Field(fmt.Errorf("no such directory: %s", a.Exec.Dir), "exec", "dir")
		}
		return echo(nil), nil
	},
	config.KindMCP: func(_ context.Context, b *config.Builder, a *config.Agent) (troupe.Agent, error) {
		for k, v := range b.File.MCPServers[a.MCP.Server].Env {
			// Wrapped, as a program names the agent that needed the server.
			return nil, fmt.Errorf("mcp %s: %w", a.Name, &config.FieldError{
				Path: []string{"mcp_servers", a.MCP.Server, "env", k},
				Err:  fmt.Errorf("the environment variable %s is not set", v),
			})
		}
		return echo(nil), nil
	},
	config.KindBundle: func(ctx context.Context, b *config.Builder, a *config.Agent) (troupe.Agent, error) {
		sub, err := b.Agent(ctx, a.Bundle.Agent)
		if err != nil {
			return nil, fmt.Errorf("bundle %s: %w", a.Name, err)
		}
		if a.Bundle.Replicates > 4 {
			return nil, a.Field(fmt.Errorf("this program runs at most 4 replicates"), "bundle", "replicates")
		}
		return sub, nil
	},
}

// A problem building finds with one field is reported at that field's line and path, as Load
// reports the problems it finds, not at the agent's; one met by several agents (a server two
// agents use, a member of a bundle) is reported once.
func TestBuildErrorsAtTheirField(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, src string
		want      []string
	}{
		{"exec dir", `version: 1
agents:
  fetch:
    kind: exec
    exec:
      command: [cat]
      dir: nowhere
`, []string{"testdata/t.yaml:7:12: agents.fetch.exec.dir: no such directory: nowhere"}},
		{"mcp server env, two agents", `version: 1
agents:
  sum:
    kind: mcp
    mcp: {server: calc, tool: add}
  product:
    kind: mcp
    mcp: {server: calc, tool: multiply}
mcp_servers:
  calc:
    command: calc-server
    env:
      TOKEN: CALC_TOKEN
`, []string{"testdata/t.yaml:13:14: mcp_servers.calc.env.TOKEN: the environment variable CALC_TOKEN is not set"}},
		{"bundle replicates", `version: 1
agents:
  judge:
    kind: builtin
  jury:
    kind: bundle
    bundle:
      agent: judge
      replicates: 5
`, []string{"testdata/t.yaml:9:19: agents.jury.bundle.replicates: this program runs at most 4 replicates"}},
		{"bundle of an agent that cannot be built", `version: 1
agents:
  judge:
    kind: builtin
    builtin:
      name: judge_v2
  jury:
    kind: bundle
    bundle: {agent: judge, replicates: 3}
`, []string{`testdata/t.yaml:6:13: agents.judge.builtin.name: no builtin agent "judge_v2"; this program has judge`}},
		{"kind this program lacks", `version: 1
agents:
  remote:
    description: an endpoint
    kind: http
    http: {url: "http://127.0.0.1:1/agent"}
`, []string{"testdata/t.yaml:5:11: agents.remote.kind: kind http is not supported by this program"}},
		// A problem of no one field is still the agent's, at its name.
		{"builtin named by its key", `version: 1
agents:
  oracle:
    kind: builtin
`, []string{`testdata/t.yaml:3:3: agents.oracle: no builtin agent "oracle"; this program has judge`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tt.want, buildErrs(t, mustParse(t, tt.src), fieldFactories)); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

// A schema file gone between loading and building is an error at the input_schema naming it:
// the bundle's, or its agent's when the bundle takes its agent's.
func TestBuildSchemaGone(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, config.FileName)
	src := `version: 1
agents:
  judge:
    kind: builtin
    input_schema: in.json
  jury:
    kind: bundle
    bundle: {agent: judge, replicates: 3}
`
	for name, data := range map[string]string{path: src, filepath.Join(dir, "in.json"): `{"type": "object"}`} {
		if err := os.WriteFile(name, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := config.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "in.json")); err != nil {
		t.Fatal(err)
	}
	gone := fmt.Sprintf("cannot read the schema %s: no such file or directory", filepath.Join(dir, "in.json"))
	want := []string{path + ":5:19: agents.judge.input_schema: " + gone}
	if diff := cmp.Diff(want, buildErrs(t, f, fieldFactories)); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
	if _, err := config.Catalog(f); err == nil || err.Error() != "config: agents.judge.input_schema: "+gone {
		t.Errorf("Catalog: %v", err)
	}
}

// A FieldError says its field, and unwraps to its problem.
func TestFieldError(t *testing.T) {
	t.Parallel()
	errMissing := errors.New("missing")
	a := &config.Agent{Name: "a b"}
	err := fmt.Errorf("wrapped: %w", a.Field(errMissing, "exec", "command", "0"))
	if got, want := err.Error(), `wrapped: config: agents."a b".exec.command[0]: missing`; got != want {
		t.Errorf("error %q, want %q", got, want)
	}
	if !errors.Is(err, errMissing) {
		t.Errorf("%v does not unwrap to its problem", err)
	}
	if a.Field(nil, "exec") != nil {
		t.Error("Field(nil) is not nil")
	}
}

// A factory that finds several problems returns them joined, and each is reported at its field;
// an error saying more than the problems it wraps stays one problem, at the agent, in its words.
func TestBuildReportsEveryProblemJoined(t *testing.T) {
	t.Parallel()
	fs := config.Factories{
		config.KindExec: func(_ context.Context, _ *config.Builder, a *config.Agent) (troupe.Agent, error) {
			return nil, errors.Join(
				a.Field(errors.New("no program to run"), "exec", "command"),
				errors.Join(a.Field(errors.New("no such directory"), "exec", "dir")))
		},
		config.KindHTTP: func(_ context.Context, _ *config.Builder, a *config.Agent) (troupe.Agent, error) {
			return nil, fmt.Errorf("http %s: %w; %w", a.Name, errors.New("one"), errors.New("two"))
		},
	}
	f := mustParse(t, `version: 1
agents:
  fetch:
    kind: exec
    exec:
      command: [cat]
      dir: nowhere
  remote:
    kind: http
    http: {url: "http://127.0.0.1:1/agent"}
`)
	want := []string{
		"testdata/t.yaml:6:16: agents.fetch.exec.command: no program to run",
		"testdata/t.yaml:7:12: agents.fetch.exec.dir: no such directory",
		"testdata/t.yaml:8:3: agents.remote: http remote: one; two",
	}
	if diff := cmp.Diff(want, buildErrs(t, f, fs)); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
}
