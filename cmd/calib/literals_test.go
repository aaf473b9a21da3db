package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/calib-dev/calib/evaluate"
	"github.com/calib-dev/calib/notion"
)

// TestNoMetricOrNotionLiterals: outside the registry (evaluate/registry.go)
// and package notion, no Go code names a metric or a notion by a string
// literal where the typed value belongs: a Metric or Notion field of a
// composite literal, an element of a MetricSet or of a []Notion (a
// NotionSet's Notions), either side of a comparison with a .Metric or
// .Notion, a case of a switch on one, an argument of Has, or (for notions)
// any call's argument. A renamed metric or notion then has one spelling to
// change, where the compiler finds its uses, instead of literals that
// silently match nothing.
func TestNoMetricOrNotionLiterals(t *testing.T) {
	words := map[string]bool{"marginal": true}
	for _, m := range append(slices.Clone(evaluate.Metrics), evaluate.ECEKDEDebiased, evaluate.SharpnessDebiased, evaluate.ATBDebiased) {
		words[string(m)] = true
	}
	notionWords := map[string]bool{"marginal": true}
	for _, n := range notion.All() {
		words[string(n)] = true
		notionWords[string(n)] = true
	}
	typed := func(e ast.Expr) bool { // a .Metric or .Notion, or a Notion() call
		switch x := e.(type) {
		case *ast.SelectorExpr:
			return x.Sel.Name == "Metric" || x.Sel.Name == "Notion"
		case *ast.CallExpr:
			s, ok := x.Fun.(*ast.SelectorExpr)
			return ok && s.Sel.Name == "Notion"
		}
		return false
	}
	lit := func(e ast.Expr) (string, bool) {
		b, ok := e.(*ast.BasicLit)
		if !ok || b.Kind != token.STRING {
			return "", false
		}
		s, err := strconv.Unquote(b.Value)
		return s, err == nil && words[s]
	}
	fset := token.NewFileSet()
	err := filepath.WalkDir("../..", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n == ".git" || n == ".venv" || n == "testdata" || n == "python" || path == "../../notion" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || path == "../../evaluate/registry.go" {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		report := func(e ast.Expr, where string) {
			if s, ok := lit(e); ok {
				t.Errorf("%s: %q as a string literal (%s): use the typed value", fset.Position(e.Pos()), s, where)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.KeyValueExpr:
				if k, ok := x.Key.(*ast.Ident); ok && (k.Name == "Metric" || k.Name == "Notion") {
					report(x.Value, k.Name+" field")
				}
			case *ast.CompositeLit:
				id := typeName(x.Type)
				if a, ok := x.Type.(*ast.ArrayType); ok && typeName(a.Elt) == "Notion" {
					id = "[]Notion" // a NotionSet's Notions
				}
				if id == "MetricSet" || id == "[]Notion" {
					for _, e := range x.Elts {
						report(e, id)
					}
				}
			case *ast.BinaryExpr:
				if x.Op == token.EQL || x.Op == token.NEQ {
					if typed(x.X) {
						report(x.Y, "compared with "+exprText(x.X))
					}
					if typed(x.Y) {
						report(x.X, "compared with "+exprText(x.Y))
					}
				}
			case *ast.SwitchStmt:
				if x.Tag != nil && typed(x.Tag) {
					for _, s := range x.Body.List {
						for _, e := range s.(*ast.CaseClause).List {
							report(e, "case of a switch on "+exprText(x.Tag))
						}
					}
				}
			case *ast.CallExpr:
				if s, ok := x.Fun.(*ast.SelectorExpr); ok && (s.Sel.Name == "Has" || s.Sel.Name == "has") {
					for _, a := range x.Args {
						report(a, s.Sel.Name)
					}
				}
				// A notion's name as any call's argument (metric names
				// are other vocabularies' words too: calib test's tests,
				// plot kinds, losses).
				for _, a := range x.Args {
					if s, ok := lit(a); ok && notionWords[s] {
						report(a, "a call's argument")
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// typeName is the name of a composite literal's type (its last part).
func typeName(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.Ident:
		return x.Name
	case *ast.SelectorExpr:
		return x.Sel.Name
	}
	return ""
}

// exprText is a short text of a selector, for messages.
func exprText(e ast.Expr) string {
	if s, ok := e.(*ast.SelectorExpr); ok {
		return "." + s.Sel.Name
	}
	return "a notion"
}
