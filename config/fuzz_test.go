package config_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/troupehq/troupe/config"
)

// FuzzLoad feeds the loader arbitrary bytes, seeded with every checked-in configuration and
// the broken one. It must never panic; a file it accepts must build a catalog and rules the
// runtime accepts; a file it rejects must say where, for every problem.
func FuzzLoad(f *testing.F) {
	for _, p := range append(exampleConfigs(f), "testdata/bad.yaml") {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("a: &a [*a]"))
	f.Add([]byte("version: 1\nagents: {a: {kind: loop, loop: {agent: a, max_iterations: 1}}}"))
	// Mis-indented lines, whose syntax errors are explained from the tokens and the source.
	f.Add([]byte("version: 1\nagents:\n  a:\n    kind: exec\n    exec: {command: [x]}\n     timeout: 1s\n"))
	f.Add([]byte("version: 1\nagents: {a: {kind: builtin}}\ncoordinator:\n  triggers:\n    - name: x\n      patterns: [y]\n    target: a\n"))
	f.Add([]byte("version: 1\nagents:\n  a:\n\tkind: builtin\n"))
	f.Add([]byte("version: 1\nagents:\n  a:\n    kind: exec\n     exec: {command: [x]}\n"))
	// Numbers and durations past what Go holds, and text that is not UTF-8.
	f.Add([]byte("version: 1\nagents: {a: {kind: builtin, timeout: 2562048h}}\nbudget: {max_dispatches: 18446744073709551615, max_concurrency: 1e400}\n"))
	f.Add([]byte("version: 1\nname: \"\xff\"\nagents: {a: {kind: builtin}}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := config.Parse("fuzz.yaml", data)
		if err != nil {
			var es config.Errors
			if !errors.As(err, &es) || len(es) == 0 {
				t.Fatalf("error %v (%T) is not config.Errors", err, err)
			}
			for _, e := range es {
				if e.File != "fuzz.yaml" || e.Line < 1 || e.Column < 1 || e.Problem == "" {
					t.Fatalf("problem without a place: %#v", e)
				}
				if libraryWords(e) {
					t.Fatalf("problem in a library's words: %v", e)
				}
			}
			return
		}
		cat, err := config.Catalog(file)
		if err != nil {
			t.Fatalf("accepted file does not catalogue: %v", err)
		}
		if r := file.PlanRules(); r != nil {
			if err := r.Validate(cat); err != nil {
				t.Fatalf("accepted routing the planner rejects: %v", err)
			}
		}
		if r := file.RouteRules(); r != nil {
			if err := r.Validate(cat); err != nil {
				t.Fatalf("accepted coordinator the router rejects: %v", err)
			}
		}
		p := file.Policy()
		if err := p.Validate(cat); err != nil {
			t.Fatalf("accepted policy the engine rejects: %v", err)
		}
	})
}

// libraryWords is errInternal for the fuzzer: only the wordings no user's text can produce
// (a problem may quote the file's own text, and random text may hold "open " or "stat ").
func libraryWords(e *config.Error) bool {
	for _, s := range []string{"json: cannot unmarshal", "json: unknown field", "yaml: unmarshal errors", "the schema accepted what the loader cannot read"} {
		if strings.Contains(e.Problem, s) {
			return true
		}
	}
	return false
}
