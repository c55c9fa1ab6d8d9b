package codegen

import (
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/scanner"
	"go/token"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// Normalize returns the canonical form of a Go implementation, so that two implementations
// vote together exactly when they are the same program up to presentation:
//
//   - a Markdown code fence around the code is removed, and a file without a package clause
//     gets one;
//   - comments are dropped and the package is named p;
//   - the local names of each function — receiver, parameters, results, and every variable,
//     constant, type and label declared in its body — are renamed _v1, _v2… in the order
//     they are declared (a name declared twice keeps its first number);
//   - imports are merged into one sorted declaration, and the file is printed from its syntax tree alone, so line breaks,
//     spacing, blank lines and one-line bodies of the source do not matter.
//
// Function names, package-level names, field names and selectors are kept: they are the
// implementation's interface. Code that does not parse is an error saying where and what.
func Normalize(src string) (string, error) {
	src = unfence(src)
	if strings.TrimSpace(src) == "" {
		return "", fmt.Errorf("codegen: no code")
	}
	// A bare function is parsed behind a package clause on its first line, so error lines
	// stay the code's own; columns on line 1 are shifted back.
	const clause = "package p;"
	shift := 0
	if !hasPackageClause(src) {
		src, shift = clause+src, len(clause)
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "code.go", src, parser.SkipObjectResolution)
	if err != nil {
		var list scanner.ErrorList
		if errors.As(err, &list) && len(list) > 0 {
			e := list[0]
			if e.Pos.Line == 1 {
				e.Pos.Column -= shift
			}
			return "", fmt.Errorf("codegen: the code does not parse: line %d, column %d: %s", e.Pos.Line, e.Pos.Column, e.Msg)
		}
		return "", fmt.Errorf("codegen: the code does not parse: %w", err)
	}
	f.Name.Name = "p"
	f.Comments, f.Doc = nil, nil
	mergeImports(f)
	keyed := keyedTypes(f)
	for _, d := range f.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok {
			fn.Doc = nil
			renameLocals(fn, keyed)
		}
	}
	clearPositions(f)
	var b bytes.Buffer
	if err := format.Node(&b, token.NewFileSet(), f); err != nil {
		return "", fmt.Errorf("codegen: printing the code: %w", err)
	}
	return b.String(), nil
}

// unfence removes a Markdown code fence (```go … ```) around the code: models add one even
// when asked not to.
func unfence(src string) string {
	s := strings.TrimSpace(src)
	if !strings.HasPrefix(s, "```") {
		return src
	}
	s = strings.TrimPrefix(s, "```")
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[i+1:] // the info string ("go")
	} else {
		return ""
	}
	if i := strings.LastIndex(s, "```"); i >= 0 {
		s = s[:i]
	}
	return s
}

func hasPackageClause(src string) bool {
	var s scanner.Scanner
	fset := token.NewFileSet()
	s.Init(fset.AddFile("", -1, len(src)), []byte(src), nil, 0)
	_, tok, _ := s.Scan()
	return tok == token.PACKAGE
}

// mergeImports puts every import in one declaration, sorted by path then name, once each.
func mergeImports(f *ast.File) {
	var specs []*ast.ImportSpec
	decls := f.Decls[:0]
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.IMPORT {
			decls = append(decls, d)
			continue
		}
		for _, sp := range g.Specs {
			specs = append(specs, sp.(*ast.ImportSpec))
		}
	}
	if len(specs) == 0 {
		return
	}
	key := func(s *ast.ImportSpec) string {
		name := ""
		if s.Name != nil {
			name = s.Name.Name
		}
		return s.Path.Value + " " + name
	}
	slices.SortFunc(specs, func(a, b *ast.ImportSpec) int { return strings.Compare(key(a), key(b)) })
	specs = slices.CompactFunc(specs, func(a, b *ast.ImportSpec) bool { return key(a) == key(b) })
	merged := &ast.GenDecl{Tok: token.IMPORT}
	for _, sp := range specs {
		sp.Doc, sp.Comment = nil, nil
		merged.Specs = append(merged.Specs, sp)
	}
	f.Decls = append([]ast.Decl{merged}, decls...)
	f.Imports = specs
}

// keyedTypes returns the file's named map, slice and array types: the keys of their composite
// literals are values, not field names.
func keyedTypes(f *ast.File) map[string]bool {
	keyed := map[string]bool{}
	for _, d := range f.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.TYPE {
			for _, sp := range g.Specs {
				ts := sp.(*ast.TypeSpec)
				switch ts.Type.(type) {
				case *ast.MapType, *ast.ArrayType:
					keyed[ts.Name.Name] = true
				}
			}
		}
	}
	return keyed
}

// fieldKeys says whether the keys of lit are struct field names: a map, slice or array
// literal's keys are values; an elided type (a literal inside another) is not known, and
// its keys are taken as values when they name a local.
func fieldKeys(lit *ast.CompositeLit, keyed map[string]bool) (fields, known bool) {
	switch t := lit.Type.(type) {
	case nil:
		return false, false
	case *ast.MapType, *ast.ArrayType:
		return false, true
	case *ast.Ident:
		return !keyed[t.Name], true
	}
	return true, true // a struct type literal, or a type of another package
}

// renameLocals renames every name fn declares locally, in declaration order. Uses are found
// by name, not by scope: shadowing renames consistently, since the same name always gets the
// same new one.
func renameLocals(fn *ast.FuncDecl, keyed map[string]bool) {
	names := map[string]string{}
	declare := func(id *ast.Ident) {
		if id == nil || id.Name == "_" {
			return
		}
		if _, ok := names[id.Name]; !ok {
			names[id.Name] = "_v" + strconv.Itoa(len(names)+1)
		}
	}
	fields := func(fl *ast.FieldList) {
		if fl == nil {
			return
		}
		for _, f := range fl.List {
			for _, n := range f.Names {
				declare(n)
			}
		}
	}
	fields(fn.Recv)
	ast.Inspect(fn, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncType:
			fields(n.TypeParams)
			fields(n.Params)
			fields(n.Results)
		case *ast.AssignStmt:
			if n.Tok == token.DEFINE {
				for _, e := range n.Lhs {
					if id, ok := e.(*ast.Ident); ok {
						declare(id)
					}
				}
			}
		case *ast.RangeStmt:
			if n.Tok == token.DEFINE {
				for _, e := range []ast.Expr{n.Key, n.Value} {
					if id, ok := e.(*ast.Ident); ok {
						declare(id)
					}
				}
			}
		case *ast.ValueSpec:
			for _, id := range n.Names {
				declare(id)
			}
		case *ast.TypeSpec:
			declare(n.Name)
		case *ast.LabeledStmt:
			declare(n.Label)
		}
		return true
	})
	var rename func(n ast.Node) bool
	rename = func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncDecl:
			if n.Recv != nil {
				ast.Inspect(n.Recv, rename)
			}
			ast.Inspect(n.Type, rename)
			if n.Body != nil {
				ast.Inspect(n.Body, rename)
			}
			return false // n.Name is the function's, not a local
		case *ast.SelectorExpr:
			ast.Inspect(n.X, rename) // n.Sel names a field, method or package member
			return false
		case *ast.CompositeLit:
			if n.Type != nil {
				ast.Inspect(n.Type, rename)
			}
			fields, known := fieldKeys(n, keyed)
			for _, e := range n.Elts {
				kv, ok := e.(*ast.KeyValueExpr)
				if !ok {
					ast.Inspect(e, rename)
					continue
				}
				if id, isIdent := kv.Key.(*ast.Ident); !isIdent || !fields && (known || names[id.Name] != "") {
					ast.Inspect(kv.Key, rename)
				}
				ast.Inspect(kv.Value, rename)
			}
			return false
		case *ast.Ident:
			if to, ok := names[n.Name]; ok {
				n.Name = to
			}
		}
		return true
	}
	ast.Inspect(fn, rename)
}

var posType = reflect.TypeFor[token.Pos]()

// clearPositions zeroes every position in f, so the printer lays the code out from the
// syntax alone and the source's own layout leaves no trace.
func clearPositions(f *ast.File) {
	ast.Inspect(f, func(n ast.Node) bool {
		if n == nil {
			return false
		}
		v := reflect.ValueOf(n)
		if v.Kind() != reflect.Pointer || v.IsNil() {
			return true
		}
		v = v.Elem()
		if v.Kind() != reflect.Struct {
			return true
		}
		for i := range v.NumField() {
			if fv := v.Field(i); fv.Type() == posType && fv.CanSet() {
				fv.SetInt(0)
			}
		}
		return true
	})
}
