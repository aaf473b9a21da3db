package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/calib-dev/calib/beam/internal/doccmp"
	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/evaluate"
)

func TestMain(m *testing.M) {
	// As a subprocess of runBeam: calib-beam itself on the arguments of
	// CALIB_BEAM_ARGS (Main uses the process's flag set, once).
	if args, ok := os.LookupEnv("CALIB_BEAM_ARGS"); ok {
		var a []string
		if err := json.Unmarshal([]byte(args), &a); err != nil {
			panic(err)
		}
		os.Exit(Main(a, os.Stdout, os.Stderr))
	}
	flag.Parse()
	beam.Init()
	os.Exit(m.Run())
}

// parse parses args into a fresh config.
func parse(t *testing.T, args ...string) (*config, map[string]bool) {
	t.Helper()
	var c config
	fs := flag.NewFlagSet("calib-beam", flag.ContinueOnError)
	c.register(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return &c, set
}

// TestOptions: the flags are checked before any file is read, with calib
// eval's rules and messages.
func TestOptions(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string // error text; "" for none
	}{
		{nil, "--input is required"},
		{[]string{"--input", "x", "--eval-points", "0"}, "--eval-points"},
		{[]string{"--input", "x", "--metrics", "ece_witness", "--p", "3"}, "p = 1 and 2"},
		{[]string{"--input", "x", "--metrics", "ece"}, "unknown metric"},
		{[]string{"--input", "x", "--mode", "nope"}, "mode:"},
		{[]string{"--input", "x", "--bandwidth", "-1"}, "bandwidth"},
		{[]string{"--input", "x", "--p", "0.5"}, "p"},
		{[]string{"--input", "x", "--rows", "0"}, "--rows"},
		{[]string{"--input", "x", "--format", "xls"}, "--format"},
		{[]string{"--input", "x", "--output", ""}, "--output"},
		{[]string{"--input", "x", "--eval-blocks", "0"}, "--eval-blocks"},
		{[]string{"--input", "x", "--binning", "quantile"}, "binning"},
		{[]string{"--input", "x"}, ""},
		{[]string{"--input", "x", "--mode", "canonical", "--eval-points", "all", "--bandwidth", "0.1"}, ""},
	} {
		cfg, set := parse(t, c.args...)
		o, err := cfg.options(set)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%q: %v", c.args, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%q: error %v, want %q", c.args, err, c.want)
		case c.want != "":
			if _, ok := err.(*usageError); !ok {
				t.Errorf("%q: %T, want a usage error", c.args, err)
			}
		}
		if slices.Contains(c.args, "canonical") && err == nil {
			if !slices.Equal(o.Stream.Metrics, evaluate.MetricSet{evaluate.ECEKDE}) || o.Stream.Mode.String() != "canonical" || o.Stream.EvalPoints != evaluate.AllPoints || o.Stream.Bandwidth != 0.1 {
				t.Errorf("--mode canonical: %+v", o.Stream)
			}
		}
	}
}

// TestSameAsCalibEvalStream runs calib-beam on Prism over four CSV shards
// of a real set (CIFAR-10 DenseNet-121 FLSD-53, val, 5,000 rows) and
// compares its document with `calib eval --stream --json` over the same
// directory (the calib binary, built from the calib module: the oracle):
// every number to 1e-12 relative, the
// timings and calib's provenance left out.
func TestSameAsCalibEvalStream(t *testing.T) {
	calib := buildCalib(t)
	d := "../../../testdata/logits/cifar10_densenet121-flsd53/"
	s, err := data.Load(d+"val_logits.npy", data.Options{Labels: d + "val_labels.npy", Logits: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	if err := os.Mkdir("shards", 0o755); err != nil {
		t.Fatal(err)
	}
	cuts := []int{0, 1300, 2500, 3750, 5000}
	for i := range len(cuts) - 1 {
		r := s.Rows(cuts[i], cuts[i+1])
		if err := data.WriteFile(filepath.Join("shards", fmt.Sprintf("part-%d.csv", i)), r.Probs, r.K, r.Labels); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{
		{"--output", "-"}, // the defaults
		{"--eval-points", "300", "--metrics", "ece_kde,ece_witness,ece_bin", "--output", "-"},
		{"--eval-points", "200", "--bandwidth", "0.02", "--metrics", "ece_kde,ks,brier", "--mode", "top_label,marginal", "--seed", "5", "--rows", "777", "--output", "eval.json"},
		// Exact kernel estimates by the block-pair plan, equal-mass bins
		// with Doane's rule.
		{"--eval-points", "all", "--bandwidth", "0.05", "--binning", "equal_mass", "--bin-rule", "doane", "--metrics", "ece_variational,ece_kde,ece_bin,ks", "--eval-blocks", "3", "--output", "-"},
	} {
		var want, stderr bytes.Buffer
		calibArgs := []string{"eval", "--stream", "--json", "--progress=false", "shards"}
		for i := 0; i < len(args); i += 2 {
			if args[i] != "--output" && args[i] != "--eval-blocks" {
				calibArgs = append(calibArgs, args[i], args[i+1])
			}
		}
		cmd := exec.Command(calib, calibArgs...)
		cmd.Stdout, cmd.Stderr = &want, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("calib %q: %v: %s", calibArgs, err, stderr.String())
		}
		c, set := parse(t, append([]string{"--input", "shards"}, args...)...)
		var stdout bytes.Buffer
		if err := run(context.Background(), c, set, &stdout, io.Discard); err != nil {
			t.Fatal(err)
		}
		got := stdout.Bytes()
		if c.output != "-" {
			if got, err = os.ReadFile(c.output); err != nil {
				t.Fatal(err)
			}
		}
		diffs := doccmp.Diff(got, want.Bytes(), 1e-12, "seconds", "provenance")
		for i, d := range diffs {
			if i == 20 {
				t.Errorf("... %d more", len(diffs)-i)
				break
			}
			t.Errorf("%q: %s", args, d)
		}
		key := `"metric":"ece_kde"`
		if !slices.Contains(args, "--metrics") {
			key = `"headline":{"metric":"ece_variational"` // the defaults: the headline first
		}
		if !bytes.Contains(got, []byte(key)) {
			t.Errorf("%q: no %s in %s", args, key, got)
		}
	}
}

// buildCalib builds the calib command of the calib module (the directory
// three levels up: this module's replace directive points there) into a
// temporary directory and returns the binary's path.
func buildCalib(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "calib")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/calib")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/calib: %v\n%s", err, out)
	}
	return bin
}
