package cli

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/calib-dev/calib/internal/goldenjson"
	"github.com/calib-dev/calib/internal/testenv"
)

// updateGolden rewrites the golden JSON files of TestGoldenJSON from the
// current code: go test ./cmd/calib/internal/cli -run TestGoldenJSON -update.
var updateGolden = flag.Bool("update", false, "rewrite the golden JSON files in testdata/")

// goldenCase is one command whose JSON output is pinned.
type goldenCase struct {
	name string   // the golden file testdata/NAME.json.golden
	args []string // the command (--json is added)
	slow bool     // run only under CALIB_THOROUGH (and -update)
	// dir is the directory the command runs in, relative to this
	// package's: the inputs' paths are part of the output, and the golden
	// files were made when the command lived in internal/cli, so the
	// module's testdata is reached as ../../testdata from cmd/calib
	// (inCmd), the demo set as ../demo from here ("").
	dir string
}

// inCmd is cmd/calib, two levels below the module root as internal/cli was.
const inCmd = "../.."

func goldenCases() []goldenCase {
	const g = "../../testdata/golden/ecekde/"
	const d = "../demo/cifar10_resnet110-brier/"
	var cs []goldenCase
	for _, f := range []string{"c01_n60_k2", "c02_n200_k3", "c04_n1000_k10", "c06_n150_k3_exact_zeros", "c07_n100_k4_onehot_row",
		"c09_n40_k4_toplabel_one_correct", "c10_n30_k3_toplabel_zero_correct", "c11_n400_k5_near_faces", "c13_n24_k3_grad"} {
		cs = append(cs,
			goldenCase{name: "eval-" + f, args: []string{"eval", g + f + ".csv", "--metrics", "all", "--ci"}, dir: inCmd},
			goldenCase{name: "bandwidth-" + f, args: []string{"bandwidth", g + f + ".csv"}, dir: inCmd})
	}
	cs = append(cs,
		goldenCase{name: "eval-default-c02_n200_k3", args: []string{"eval", g + "c02_n200_k3.csv", "--ci"}, dir: inCmd},
		goldenCase{name: "compare-k4", args: []string{"compare", "--val", g + "c07_n100_k4_onehot_row.csv", "--test", g + "c09_n40_k4_toplabel_one_correct.csv"}, dir: inCmd},
		goldenCase{name: "compare-c02", args: []string{"compare", "--val", g + "c02_n200_k3.csv", "--test", g + "c06_n150_k3_exact_zeros.csv", "--methods", "spline,isotonic,histogram,platt,beta,dirichlet-odir"}, dir: inCmd},
		goldenCase{name: "eval-demo", args: []string{"eval", d + "test_logits.npy", "--labels", d + "test_labels.npy", "--logits", "--metrics", "all", "--ci"}, slow: true},
		goldenCase{name: "eval-default-demo", args: []string{"eval", d + "test_logits.npy", "--labels", d + "test_labels.npy", "--logits", "--ci"}, slow: true},
		goldenCase{name: "bandwidth-demo", args: []string{"bandwidth", d + "test_logits.npy", "--labels", d + "test_labels.npy", "--logits"}, slow: true},
		goldenCase{name: "compare-demo", args: []string{"compare", "--val", d + "val_logits.npy", "--val-labels", d + "val_labels.npy",
			"--test", d + "test_logits.npy", "--test-labels", d + "test_labels.npy", "--logits"}, slow: true},
	)
	for _, set := range []string{"cifar10_densenet121-flsd53", "cifar100_resnet110-brier"} {
		l := "../../testdata/logits/" + set + "/"
		cs = append(cs,
			goldenCase{name: "eval-" + set, args: []string{"eval", l + "test_logits.npy", "--labels", l + "test_labels.npy", "--logits", "--metrics", "all", "--mode", "canonical,top_label"}, slow: true, dir: inCmd},
			goldenCase{name: "bandwidth-" + set, args: []string{"bandwidth", l + "test_logits.npy", "--labels", l + "test_labels.npy", "--logits"}, slow: true, dir: inCmd})
	}
	return cs
}

// TestGoldenJSON pins the JSON of eval, compare and bandwidth on every
// input in testdata and the embedded demo set: every key of the golden
// file must be in the output with the same value and no other key
// (volatile keys aside, and the definition keys added since:
// goldenjson.Definitions). The golden files were
// made before the library refactor so that it can be checked to
// change no number. The sets with n = 10,000 run under CALIB_THOROUGH.
func TestGoldenJSON(t *testing.T) {
	golden, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range goldenCases() {
		if c.slow && !testenv.Thorough() && !*updateGolden {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			if c.dir != "" {
				t.Chdir(c.dir)
			}
			stdout, stderr, code := run(t, append(c.args, "--json", "--progress=false")...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			file := filepath.Join(golden, c.name+".json.golden")
			if *updateGolden {
				got, err := goldenjson.DecodeOutput([]byte(stdout))
				if err != nil {
					t.Fatal(err)
				}
				b, _ := json.MarshalIndent(got, "", " ")
				if err := os.WriteFile(file, append(b, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			diffs, err := goldenjson.CompareFile([]byte(stdout), file)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range diffs {
				t.Error(d)
			}
		})
	}
}

// timeCell matches the times of eval's table (its last column and the wall
// time), which change from run to run.
var timeCell = regexp.MustCompile(`(?m)( \d+\.\d\ds$|^wall time \d+\.\d+ s$)`)

// TestGoldenText pins calib eval's table (the times masked) on golden sets:
// the layout, the notes and the warnings are part of what a user reads.
func TestGoldenText(t *testing.T) {
	// The table's first line names the input as given: the commands run
	// from cmd/calib (see goldenCase.dir).
	dir, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(inCmd)
	const g = "../../testdata/golden/ecekde/"
	for _, c := range []goldenCase{
		{name: "eval-text-c02", args: []string{"eval", g + "c02_n200_k3.csv", "--metrics", "all", "--ci"}},
		{name: "eval-text-default-c02", args: []string{"eval", g + "c02_n200_k3.csv", "--ci"}},
		{name: "eval-text-c04", args: []string{"eval", g + "c04_n1000_k10.csv", "--metrics", "all", "--mode", "canonical,top_label"}},
		{name: "eval-text-c06", args: []string{"eval", g + "c06_n150_k3_exact_zeros.csv", "--metrics", "all", "--bandwidth", "0.05", "--debias"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			stdout, stderr, code := run(t, append(c.args, "--progress=false")...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			got := timeCell.ReplaceAllString(stdout, " TIME")
			file := filepath.Join(dir, c.name+".golden")
			if *updateGolden {
				if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
				for i := 0; i < max(len(gl), len(wl)); i++ {
					var a, b string
					if i < len(gl) {
						a = gl[i]
					}
					if i < len(wl) {
						b = wl[i]
					}
					if a != b {
						t.Errorf("line %d:\n got %q\nwant %q", i+1, a, b)
						break
					}
				}
			}
		})
	}
}
