package evaluate

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestDriversNameNoMetricField keeps a metric's streamed code in its own
// file: the drivers of a stream (sums.go, kernelsums.go, finish.go,
// stream.go) hold the parts' states only as embedded structs (sumsState,
// kernelSumsState and streamConfig embed, say, variationalState) and never
// select or set (in a composite literal) a field declared in one of them;
// setting up, adding, merging, joining, checking and finishing that field
// is its part's code, in its metric's file. A driver may call a method of
// the embedded struct (c.ksConfig.valid()). The check is by name: a field
// of another struct with the same name is refused too (the part structs'
// names are chosen apart from Options' fields).
func TestDriversNameNoMetricField(t *testing.T) {
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]*ast.File{}
	types := map[string]*ast.StructType{}
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files[name] = f
		ast.Inspect(f, func(n ast.Node) bool {
			if ts, ok := n.(*ast.TypeSpec); ok {
				if st, ok := ts.Type.(*ast.StructType); ok {
					types[ts.Name.Name] = st
				}
			}
			return true
		})
	}
	// owner maps each field of an embedded part struct to that struct.
	owner := map[string]string{}
	for _, shared := range []string{"sumsState", "kernelSumsState", "streamConfig"} {
		st := types[shared]
		if st == nil {
			t.Fatalf("no struct %s", shared)
		}
		for _, f := range st.Fields.List {
			id, ok := f.Type.(*ast.Ident)
			if len(f.Names) > 0 || !ok || types[id.Name] == nil {
				continue
			}
			for _, pf := range types[id.Name].Fields.List {
				for _, n := range pf.Names {
					owner[n.Name] = id.Name
				}
			}
		}
	}
	// The check sees the parts: ece_variational's three, ks's config.
	for _, f := range []string{"Variational", "VariationalFamily", "KSCells", "PointSums", "SmECESums"} {
		if owner[f] == "" {
			t.Fatalf("the field %s is not found in an embedded part struct (%v)", f, owner)
		}
	}
	for _, name := range []string{"sums.go", "kernelsums.go", "finish.go", "stream.go"} {
		f := files[name]
		if f == nil {
			t.Fatalf("no file %s", name)
		}
		var bad []string
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				if o := owner[n.Sel.Name]; o != "" {
					bad = append(bad, fmt.Sprintf("%s: .%s (of %s)", fset.Position(n.Sel.Pos()), n.Sel.Name, o))
				}
			case *ast.KeyValueExpr: // a composite literal's field
				if id, ok := n.Key.(*ast.Ident); ok && owner[id.Name] != "" {
					bad = append(bad, fmt.Sprintf("%s: %s: (of %s)", fset.Position(id.Pos()), id.Name, owner[id.Name]))
				}
			}
			return true
		})
		slices.Sort(bad)
		for _, b := range bad {
			t.Errorf("%s: a metric's field, named by a driver: move the code into the metric's part", b)
		}
	}
}

// TestKernelPartOrder: every second-pass part has its required functions,
// and the parts run in the table's order,
// which must put ece_variational's first (its add refuses a batch before
// any sum is touched) and ece_kde's before sharpness's (which shares
// ece_kde's sums of its notion).
func TestKernelPartOrder(t *testing.T) {
	ps := allKernelParts()
	if len(ps) == 0 || ps[0] != variationalKernel {
		t.Errorf("the first second-pass part is not ece_variational's")
	}
	if i, j := slices.Index(ps, eceKDEKernel), slices.Index(ps, sharpnessKernel); i < 0 || j < 0 || i > j {
		t.Errorf("ece_kde's part at %d, sharpness's at %d", i, j)
	}
	for _, p := range ps {
		if p.holds == nil || p.concat == nil {
			t.Errorf("%s's second-pass part lacks holds or concat (both required)", p.what)
		}
	}
}
