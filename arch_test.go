package troupe_test

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
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

// The arrows point one way: the contracts import nothing of ours but the leaf helpers for
// JSON-shaped values, the pure packages import only the contracts and those helpers, and no
// store or executor imports the engine. (DESIGN.md: the engine's zero
// values are the memory store and the local executor, so the engine may import those two.)
func TestArchImportArrows(t *testing.T) {
	pkgs := listPackages(t)
	allowed := map[string][]string{
		"":                   {"internal/jsonvalue"},
		"plan":               {"", "internal/jsonvalue"},
		"route":              {"", "internal/jsonvalue"},
		"aggregate":          {"", "internal/jsonvalue"},
		"internal/jsonvalue": {},
		"policy":             {""},
		"store/memory":       {""},
		"executor/local":     {""},
		"troupetest":         {""},
		"engine":             {"", "plan", "aggregate", "policy", "store/memory", "executor/local", "internal/schema", "internal/jsonvalue"},
		"internal/schema":    {},
		"internal/stray":     {},
		// Composite agents run their members themselves: the contracts and pure helpers only,
		// never the engine, an executor or a store.
		"flow": {"", "internal/jsonvalue", "internal/schema", "internal/stray", "policy", "aggregate"},
		// Evidence bundles: pure statistics, and the agent that replicates and decides.
		"bundle":   {"internal/jsonvalue", "internal/schema"},
		"redact":   {},
		"evidence": {"", "bundle", "redact", "internal/stray"},
		// Adapters reach the outside world; they know the contracts and the composites they
		// nest in, never the engine, an executor or a store.
		"agent/internal/wire": {""},
		"agent/cassette":      {"agent/internal/wire"},
		"agent/execagent":     {"", "agent/internal/wire"},
		"agent/httpagent":     {"", "agent/internal/wire"},
		"agent/llmagent":      {"", "agent/internal/wire", "flow", "internal/schema"},
		"agent/mcptool":       {"", "agent/internal/wire"},
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

// Core packages reach time, randomness and concurrency only through the executor: that is what
// lets the same engine run inside a workflow engine. coreViolations says what a file of theirs
// uses that it must not; coreExceptions are the uses allowed all the same.
func TestArchCoreHasNoClocksRandOrGoroutines(t *testing.T) {
	pkgs := listPackages(t)
	used := make([]bool, len(coreExceptions))
	for _, name := range []string{"", "plan", "route", "aggregate", "policy", "engine", "internal/jsonvalue", "internal/schema", "bundle", "redact"} {
		p, ok := pkgs[name]
		if !ok {
			t.Errorf("core package %q not found", name)
			continue
		}
		fset := token.NewFileSet()
		for _, f := range p.GoFiles {
			file, err := parser.ParseFile(fset, filepath.Join(p.Dir, f), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			rel := path.Join(name, f)
		next:
			for _, v := range coreViolations(fset, file) {
				for i, x := range coreExceptions {
					if x.file == rel && x.what == v.what {
						used[i] = true
						continue next
					}
				}
				t.Errorf("%s: %s %s: go through the executor (troupe.Executor, troupe.Scope)", v.pos, v.what, v.why)
			}
		}
	}
	for i, x := range coreExceptions {
		if !used[i] {
			t.Errorf("coreExceptions: %s no longer uses %s: remove the entry", x.file, x.what)
		}
	}
}

// coreExceptions allows one file of a core package (its path from the module root) one use of
// what coreViolations reports (its what), for the reason given. None is needed today.
var coreExceptions = []struct{ file, what, why string }{}

// coreForbidden lists, by import path, the names core code must not refer to, called or not
// (a method value such as clock: time.Now is the same bypass), and what each does.
var coreForbidden = map[string]map[string]string{
	"time": {
		"Now":       "reads the clock",
		"Since":     "reads the clock",
		"Until":     "reads the clock",
		"Sleep":     "sleeps",
		"After":     "arms a timer",
		"Tick":      "arms a timer",
		"NewTimer":  "arms a timer",
		"NewTicker": "arms a timer",
		"Timer":     "is a timer (Reset arms it)",
		"Ticker":    "is a timer (Reset arms it)",
		"AfterFunc": "arms a timer whose callback runs on a new goroutine",
	},
	"context": {
		"WithTimeout":       "reads the clock and arms a timer",
		"WithTimeoutCause":  "reads the clock and arms a timer",
		"WithDeadline":      "arms a timer",
		"WithDeadlineCause": "arms a timer",
		"AfterFunc":         "runs its callback on a new goroutine",
	},
	"sync": {
		// Without type information a wg.Go call cannot be told from a Scope's Go; a
		// WaitGroup has nothing to wait for in code that starts no goroutine.
		"WaitGroup": "waits for goroutines (and its Go starts one)",
	},
}

// coreForbiddenImports are packages core code must not import under any name. crypto/rand is
// among them: a run's entropy comes from the executor's Seed, and is recorded.
var coreForbiddenImports = map[string]string{
	"math/rand":                   "draws randomness",
	"math/rand/v2":                "draws randomness",
	"crypto/rand":                 "draws randomness",
	"golang.org/x/sync/errgroup":  "starts goroutines",
	"github.com/sourcegraph/conc": "starts goroutines",
}

type coreViolation struct {
	pos       token.Position
	what, why string
}

// coreViolations reports what file uses of coreForbidden and coreForbiddenImports, and its go
// statements. Names are resolved through the file's own imports, so an aliased import is
// caught and a package of another path that happens to be called time is not. An identifier
// shadowing an import's name is taken for the package: a false alarm is fixed by a rename.
func coreViolations(fset *token.FileSet, file *ast.File) []coreViolation {
	var out []coreViolation
	report := func(n ast.Node, what, why string) {
		out = append(out, coreViolation{fset.Position(n.Pos()), what, why})
	}
	pkgOf := map[string]string{} // the file's name of an import → its path
	for _, spec := range file.Imports {
		p, err := strconv.Unquote(spec.Path.Value)
		if err != nil {
			continue
		}
		if why, ok := coreForbiddenImports[p]; ok {
			report(spec, "import of "+p, why)
			continue
		}
		if _, ok := coreForbidden[p]; !ok {
			continue
		}
		switch name := path.Base(p); {
		case spec.Name == nil:
			pkgOf[name] = p
		case spec.Name.Name == ".":
			report(spec, "dot import of "+p, "hides which of its names are used")
		case spec.Name.Name != "_":
			pkgOf[spec.Name.Name] = p
		}
	}
	ast.Inspect(file, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GoStmt:
			report(n, "go statement", "starts a goroutine")
		case *ast.SelectorExpr:
			id, ok := n.X.(*ast.Ident)
			if !ok {
				break
			}
			if p, ok := pkgOf[id.Name]; ok {
				if why, ok := coreForbidden[p][n.Sel.Name]; ok {
					report(n, p+"."+n.Sel.Name, why)
				}
			}
		}
		return true
	})
	return out
}

// The checker catches every way around the rule an audit found, and lets through what is fine.
func TestArchCoreViolations(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string
	}{
		{"aliased time", `import clock "time"
func f() clock.Time { return clock.Now() }`, []string{"time.Now"}},
		{"method value", `import "time"
var now = time.Now`, []string{"time.Now"}},
		{"clock, timers and sleep", `import "time"
func f(t0 time.Time, c chan int) {
	time.Sleep(time.Second)
	<-time.After(time.Second)
	_ = time.Since(t0) + time.Until(t0)
	time.NewTimer(time.Second).Stop()
	time.AfterFunc(time.Second, func() {})
	_ = time.Tick(time.Second)
	time.NewTicker(time.Second).Stop()
	var tm *time.Timer
	_ = tm
}`, []string{"time.Sleep", "time.After", "time.Since", "time.Until", "time.NewTimer", "time.AfterFunc", "time.Tick", "time.NewTicker", "time.Timer"}},
		{"context timers and after-funcs", `import "context"
func f(ctx context.Context, d time.Time) {
	context.WithTimeout(ctx, 1)
	context.WithTimeoutCause(ctx, 1, nil)
	context.WithDeadline(ctx, d)
	context.WithDeadlineCause(ctx, d, nil)
	context.AfterFunc(ctx, func() {})
}`, []string{"context.WithTimeout", "context.WithTimeoutCause", "context.WithDeadline", "context.WithDeadlineCause", "context.AfterFunc"}},
		{"aliased context", `import cx "context"
func f(ctx cx.Context) { cx.AfterFunc(ctx, func() {}) }`, []string{"context.AfterFunc"}},
		{"go statement", `func f() { go func() {}() }`, []string{"go statement"}},
		{"WaitGroup.Go", `import s "sync"
func f(g func()) { var wg s.WaitGroup; wg.Go(g); wg.Wait() }`, []string{"sync.WaitGroup"}},
		{"randomness", `import (
	"math/rand"
	r2 "math/rand/v2"
	_ "crypto/rand"
	"golang.org/x/sync/errgroup"
)`, []string{"import of math/rand", "import of math/rand/v2", "import of crypto/rand", "import of golang.org/x/sync/errgroup"}},
		{"dot import", `import . "time"
func f() Time { return Now() }`, []string{"dot import of time"}},
		{"the audit's bypass file", `import (
	"sync"
	"time"
	clock "time"
)
func bypassClock() clock.Time { return clock.Now() }
func bypassGo(f func()) {
	var wg sync.WaitGroup
	wg.Go(f)
}
func bypassAfter(f func()) { time.AfterFunc(time.Second, f) }`, []string{"time.Now", "sync.WaitGroup", "time.AfterFunc"}},
		{"allowed", `import (
	"context"
	"sync"
	"time"
)
type clock struct{}
func (clock) Now() time.Time { return time.Time{} }
func f(ctx context.Context, t0 time.Time, d time.Duration) time.Duration {
	var mu sync.Mutex
	mu.Lock()
	defer mu.Unlock()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(context.Cause(ctx))
	return clock{}.Now().Add(d).Sub(t0)
}`, nil},
		{"another package named time", `import time "example.com/fake"
func f() { time.Now(); time.Sleep(1) }`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fset := token.NewFileSet()
			file, err := parser.ParseFile(fset, "snippet.go", "package p\n"+tt.src, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, v := range coreViolations(fset, file) {
				got = append(got, v.what)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("violations (-want +got):\n%s", diff)
			}
		})
	}
}
