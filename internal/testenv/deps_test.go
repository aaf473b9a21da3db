package testenv

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestLibraryDependencies keeps the layering: no library package imports
// the CLI's dependencies (cobra, pflag, mpb) or internal/cli, no package
// but train and experiment/training reaches GoMLX (a Go program that
// imports evaluate, compare, report, recal or experiment downloads and
// builds none of it), and the estimator packages (kde,
// metric) do not import the I/O package data (nor, through it, npyio), the
// shared math living in internal/mathx (recal does: recal.Fit and
// recal.Apply take a *data.Set). It reads the import graph with `go list -deps`.
func TestLibraryDependencies(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	// go test caches a result by the files the test opens or stats; go
	// list reads the sources in another process, so stat them here: an
	// edited import then reruns the test.
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "go.mod")) {
			_, err = os.Stat(path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	const mod = "github.com/calib-dev/calib/"
	forbidden := map[string][]string{
		"data":                {"github.com/spf13/", "github.com/vbauerster/mpb", mod + "internal/cli"},
		"kde":                 {mod + "data", "github.com/sbinet/npyio", "github.com/spf13/", "github.com/vbauerster/mpb", "github.com/gomlx/"},
		"metric":              {mod + "data", "github.com/sbinet/npyio", "github.com/spf13/", "github.com/vbauerster/mpb", "github.com/gomlx/"},
		"recal":               {"github.com/spf13/", "github.com/vbauerster/mpb", "github.com/gomlx/"},
		"compare":             {"github.com/spf13/", "github.com/vbauerster/mpb", mod + "internal/cli", "github.com/gomlx/"},
		"evaluate":            {"github.com/spf13/", "github.com/vbauerster/mpb", mod + "internal/cli", "github.com/gomlx/"},
		"report":              {"github.com/spf13/", "github.com/vbauerster/mpb", mod + "internal/cli", "github.com/gomlx/"},
		"synth":               {"github.com/spf13/", "github.com/vbauerster/mpb", mod + "internal/cli", "github.com/gomlx/"},
		"progress":            {"github.com/spf13/", "github.com/vbauerster/mpb", mod + "internal/cli", "github.com/gomlx/", mod + "data"},
		"experiment":          {"github.com/spf13/", "github.com/vbauerster/mpb", mod + "internal/cli", "github.com/gomlx/"},
		"experiment/training": {"github.com/spf13/", "github.com/vbauerster/mpb", mod + "internal/cli"},
		"train":               {"github.com/spf13/", "github.com/vbauerster/mpb", mod + "internal/cli"},
	}
	// The check sees indirect imports: the CLI does import cobra.
	if out, err := exec.Command("go", "list", "-deps", mod+"internal/cli").CombinedOutput(); err != nil || !strings.Contains(string(out), "github.com/spf13/cobra") {
		t.Fatalf("go list -deps internal/cli does not list cobra: %v\n%s", err, out)
	}
	for pkg, bad := range forbidden {
		out, err := exec.Command("go", "list", "-deps", mod+pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, b := range bad {
				if strings.HasPrefix(dep, b) {
					t.Errorf("%s imports %s (directly or not)", pkg, dep)
				}
			}
		}
	}
}
