package bundle_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The package is pure: no clock, goroutines, I/O or randomness. Its sources import nothing
// that could provide them and start no goroutine.
func TestPure(t *testing.T) {
	allowed := map[string]bool{
		"bytes": true, "cmp": true, "encoding/json": true, "errors": true, "fmt": true, "maps": true,
		"math": true, "reflect": true, "slices": true, "strconv": true, "strings": true,
		"github.com/santhosh-tekuri/jsonschema/v6":      true,
		"github.com/troupehq/troupe/internal/jsonvalue": true,
		"github.com/troupehq/troupe/internal/schema":    true, // pure itself (arch_test)
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if !allowed[path] {
				t.Errorf("%s imports %s", name, path)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if g, ok := n.(*ast.GoStmt); ok {
				t.Errorf("%s: a goroutine at %s", name, fset.Position(g.Pos()))
			}
			return true
		})
	}
}
