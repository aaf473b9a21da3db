package main

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// mod is the module path of calib.
const mod = "github.com/calib-dev/calib"

// TestLayers keeps the layers of the tree (as crane's depcheck test does
// for go-containerregistry), read from the import graph of `go list`
// (non-test files) and, for the Beam module, from its sources:
//
//   - internal/* is the ground: the kernels, the worker pool, the shared
//     math. Its packages import no calib package outside internal/.
//   - cmd/... is the top: only it imports the command-line libraries
//     (cobra, pflag, mpb), and no package outside it imports it. Of it,
//     the commands (cmd/calib/internal/commands) and the C ABI that runs
//     them (cmd/calib/libcalib) reach neither cobra nor the command line
//     (cmd/calib/internal/cli).
//   - GoMLX is reached only from train and experiment/training (a Go program
//     that imports evaluate, compare, report, recal or experiment builds none
//     of it).
//   - The estimators (kde, metric) do not import the I/O package data (nor,
//     through it, npyio); progress does not either.
//   - calibtest does not import evaluate (the tests of calibration are
//     built on the estimators, not on the evaluation driver).
//   - Only serve (and cmd/...) imports serve and prometheus/client_golang:
//     a program that evaluates builds no server.
//   - The Beam module (beam/, its tests included) imports no calib
//     internal/ package: it uses the library as any other program would.
func TestLayers(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	root := filepath.Join("..", "..")
	// go test caches a result by the files the test opens or stats; go
	// list reads the sources in another process, so stat them here: an
	// edited import then reruns the test.
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "go.mod")) {
			_, err = os.Stat(path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}}|{{join .Imports \" \"}}|{{join .Deps \" \"}}", "./...")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	cli := []string{"github.com/spf13/cobra", "github.com/spf13/pflag", "github.com/vbauerster/mpb"}
	rules := []struct {
		applies func(pkg string) bool
		bad     []string // prefixes forbidden among the package's dependencies
		why     string
	}{
		{func(p string) bool { return !under(p, mod+"/cmd") }, append([]string{mod + "/cmd/"}, cli...), "only cmd/... imports the command and its libraries"},
		{func(p string) bool {
			return !under(p, mod+"/cmd") && !under(p, mod+"/train") && !under(p, mod+"/experiment/training")
		},
			[]string{"github.com/gomlx/"}, "only train and experiment/training reach GoMLX"},
		{func(p string) bool { return p == mod+"/kde" || p == mod+"/metric" || p == mod+"/progress" },
			[]string{mod + "/data", "github.com/sbinet/npyio"}, "the estimators and progress read no files"},
		{func(p string) bool { return under(p, mod+"/calibtest") }, []string{mod + "/evaluate"}, "calibtest is built on the estimators"},
		{func(p string) bool { return !under(p, mod+"/cmd") && !under(p, mod+"/serve") },
			[]string{"github.com/prometheus/", mod + "/serve"}, "only serve (and the command) reach the server and Prometheus's client"},
		{func(p string) bool { return p == mod+"/cmd/calib/internal/commands" || p == mod+"/cmd/calib/libcalib" },
			[]string{"github.com/spf13/cobra", mod + "/cmd/calib/internal/cli"}, "the commands and the C ABI call the library, not the command line"},
		{func(p string) bool { return p == mod+"/cmd/calib/libcalib" },
			append([]string{mod + "/cmd/calib/internal/commands"}, cli...), "the C ABI calls the library, not the commands"},
	}
	seen := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "|")
		if len(f) != 3 {
			t.Fatalf("go list: unexpected line %q", line)
		}
		pkg, imports, deps := f[0], strings.Fields(f[1]), strings.Fields(f[2])
		seen++
		if under(pkg, mod+"/internal") {
			for _, imp := range imports {
				if under(imp, mod) && !under(imp, mod+"/internal") {
					t.Errorf("%s (the ground) imports %s, a package above it", pkg, imp)
				}
			}
		}
		for _, r := range rules {
			if !r.applies(pkg) {
				continue
			}
			for _, dep := range deps {
				for _, b := range r.bad {
					if dep == strings.TrimSuffix(b, "/") || strings.HasPrefix(dep, b) {
						t.Errorf("%s imports %s, directly or not (%s)", pkg, dep, r.why)
					}
				}
			}
		}
	}
	if seen < 20 {
		t.Fatalf("go list listed %d packages; the check did not see the module", seen)
	}
	// The check sees indirect imports: the command does import cobra.
	if !strings.Contains(string(out), mod+"/cmd/calib/internal/cli|") || !strings.Contains(string(out), mod+"/cmd/calib/internal/commands|") || !strings.Contains(string(out), "github.com/spf13/cobra") {
		t.Fatalf("go list did not list the command or cobra:\n%s", out)
	}

	// The Beam module, read from its sources (its own module: go list
	// there would resolve the Beam SDK).
	fset := token.NewFileSet()
	files := 0
	err = filepath.WalkDir(filepath.Join(root, "beam"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
			return err
		}
		files++
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, s := range f.Imports {
			imp, _ := strconv.Unquote(s.Path.Value)
			if under(imp, mod+"/internal") || under(imp, mod+"/cmd") {
				t.Errorf("%s imports %s: the Beam module uses calib as any program would", path, imp)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files == 0 {
		t.Fatal("no Go file under beam/")
	}
}

// under reports whether the import path p is the package dir or below it.
func under(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }
