package troupe_test

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/troupehq/troupe"

type listedPackage struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	Imports    []string
}

func listPackages(t *testing.T) map[string]listedPackage {
	t.Helper()
	out, err := exec.Command("go", "list", "-json", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string]listedPackage{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p listedPackage
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs[strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")] = p
	}
	return pkgs
}

// The arrows point one way: the contracts import nothing of ours, the pure packages import only
// the contracts, and no store or executor imports the engine. (DESIGN.md: the engine's zero
// values are the memory store and the local executor, so the engine may import those two.)
func TestImportArrows(t *testing.T) {
	pkgs := listPackages(t)
	allowed := map[string][]string{
		"":                   {},
		"plan":               {""},
		"route":              {"", "internal/jsonvalue"},
		"aggregate":          {"", "internal/jsonvalue"},
		"internal/jsonvalue": {},
		"policy":             {""},
		"store/memory":       {""},
		"executor/local":     {""},
		"troupetest":         {""},
		"engine":             {"", "plan", "aggregate", "policy", "store/memory", "executor/local", "internal/schema", "internal/jsonvalue"},
		"internal/schema":    {},
		// Composite agents run their members themselves: the contracts and pure helpers only,
		// never the engine, an executor or a store.
		"flow": {"", "internal/jsonvalue", "internal/schema", "policy", "aggregate"},
		// Evidence bundles: pure statistics, and the agent that replicates and decides.
		"bundle":   {"internal/jsonvalue"},
		"redact":   {},
		"evidence": {"", "bundle", "redact"},
		// Adapters reach the outside world; they know the contracts and the composites they
		// nest in, never the engine, an executor or a store.
		"agent/internal/wire": {""},
		"agent/cassette":      {"agent/internal/wire"},
		"agent/execagent":     {"", "agent/internal/wire"},
		"agent/httpagent":     {"", "agent/internal/wire"},
		"agent/llmagent":      {"", "flow", "internal/schema"},
		"agent/mcptool":       {""},
		"route/llmroute":      {"", "agent/llmagent"},
		// The config turns a file into specs; concrete adapters are wired by cmd/troupe.
		"config": {"", "internal/schema", "plan", "route"},
	}
	for name, ok := range allowed {
		p, found := pkgs[name]
		if !found {
			t.Errorf("package %q not found", name)
			continue
		}
		for _, imp := range p.Imports {
			if imp != module && !strings.HasPrefix(imp, module+"/") {
				continue
			}
			rel := strings.TrimPrefix(strings.TrimPrefix(imp, module), "/")
			if !contains(ok, rel) {
				t.Errorf("%s imports %s: the arrow points the wrong way", p.ImportPath, imp)
			}
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Core packages reach time, randomness and concurrency only through seams: no time.Now, no
// math/rand, no go statement. That is what lets the same engine run inside a workflow engine.
func TestCoreHasNoClocksRandOrGoroutines(t *testing.T) {
	pkgs := listPackages(t)
	for _, name := range []string{"", "plan", "route", "aggregate", "policy", "engine", "internal/jsonvalue", "internal/schema", "bundle", "redact"} {
		p := pkgs[name]
		for _, imp := range p.Imports {
			if imp == "math/rand" || imp == "math/rand/v2" || imp == "crypto/rand" {
				t.Errorf("%s imports %s", p.ImportPath, imp)
			}
		}
		fset := token.NewFileSet()
		for _, f := range p.GoFiles {
			file, err := parser.ParseFile(fset, filepath.Join(p.Dir, f), nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(file, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.GoStmt:
					t.Errorf("%s: go statement: fan out through the executor", fset.Position(n.Pos()))
				case *ast.SelectorExpr:
					if id, ok := n.X.(*ast.Ident); ok && id.Name == "time" && (n.Sel.Name == "Now" || n.Sel.Name == "Since" || n.Sel.Name == "Sleep" || n.Sel.Name == "After" || n.Sel.Name == "NewTimer") {
						t.Errorf("%s: time.%s: read time through the executor", fset.Position(n.Pos()), n.Sel.Name)
					}
				}
				return true
			})
		}
	}
}
