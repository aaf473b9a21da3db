package cli

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/evaluate"
	"github.com/calib-dev/calib/internal/testenv"
)

// TestNoSilentFlag: every bad value of every numeric or enumerated flag is
// refused with exit 2 and a message naming the flag, before any data is
// read (the input file does not exist, so a flag checked late would report
// the missing file instead).
func TestNoSilentFlag(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.csv")
	mapFile := filepath.Join(dir, "missing-map.json")
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"eval", missing, "--p", "1000"}, "--p"},
		{[]string{"eval", missing, "--p", "1e308"}, "--p"},
		{[]string{"eval", missing, "--p", "0.5"}, "--p"},
		{[]string{"eval", missing, "--p", "NaN"}, "--p"},
		{[]string{"eval", missing, "--bins", "0"}, "--bins"},
		{[]string{"eval", missing, "--bins", "-3"}, "--bins"},
		{[]string{"eval", missing, "--bins", "1000000"}, "--bins"},
		{[]string{"eval", missing, "--workers", "-1"}, "--workers"},
		{[]string{"eval", missing, "--ks-r", "0"}, "--ks-r"},
		{[]string{"eval", missing, "--ks-r", "x"}, "--ks-r"},
		{[]string{"eval", missing, "--mmce-width", "0"}, "--mmce-width"},
		{[]string{"eval", missing, "--mmce-width", "Inf"}, "--mmce-width"},
		{[]string{"eval", missing, "--ci-resamples", "1"}, "--ci-resamples"},
		{[]string{"eval", missing, "--ci-level", "1"}, "--ci-level"},
		{[]string{"eval", missing, "--ci-level", "0"}, "--ci-level"},
		{[]string{"eval", missing, "--tolerance", "0"}, "--tolerance"},
		{[]string{"eval", missing, "--tolerance", "2"}, "--tolerance"},
		{[]string{"eval", missing, "--bandwidth", "0"}, "--bandwidth"},
		{[]string{"eval", missing, "--bandwidth", "Inf"}, "--bandwidth"},
		{[]string{"eval", missing, "--metrics", "nope"}, "--metrics"},
		{[]string{"eval", missing, "--mode", "nope"}, "--mode"},
		{[]string{"eval", missing, "--binning", "nope"}, "--binning"},
		{[]string{"eval", missing, "--bin-rule", "nope"}, "--bin-rule"},
		{[]string{"eval", missing, "--bandwidth-objective", "nope"}, "--bandwidth-objective"},
		{[]string{"eval", missing, "--format", "xml"}, "--format"},
		{[]string{"report", missing, "-o", filepath.Join(dir, "r.html"), "--per-class", "-1"}, "--per-class"},
		{[]string{"report", missing, "-o", filepath.Join(dir, "r.html"), "--classes", "1"}, "--classes"},
		{[]string{"report", missing, "-o", filepath.Join(dir, "r.html"), "--classes", "a,b"}, "--classes"},
		{[]string{"report", missing, "-o", filepath.Join(dir, "r.html"), "--methods", "nope"}, "--methods"},
		{[]string{"report", missing, "-o", filepath.Join(dir, "nonexistent", "r.html")}, "does not exist"},
		{[]string{"report", missing, "-o", filepath.Join(dir, "r.txt")}, ".html"},
		{[]string{"demo", "-o", filepath.Join(dir, "nonexistent", "r.html")}, "does not exist"},
		{[]string{"demo", "--p", "0"}, "--p"},
		{[]string{"fit", missing, "-o", filepath.Join(dir, "m.json")}, "--method is required"},
		{[]string{"fit", missing, "--method", "nope", "-o", filepath.Join(dir, "m.json")}, "--method"},
		{[]string{"fit", missing, "--method", "spline", "-o", filepath.Join(dir, "m.txt")}, ".json"},
		{[]string{"fit", missing, "--method", "spline", "-o", filepath.Join(dir, "m.json"), "--knots", "1"}, "--knots"},
		{[]string{"fit", missing, "--method", "histogram", "-o", filepath.Join(dir, "m.json"), "--bins", "0"}, "--bins"},
		{[]string{"fit", missing, "--method", "matrix-odir", "-o", filepath.Join(dir, "m.json"), "--lambda", "-1"}, "--lambda"},
		{[]string{"apply", mapFile, missing, "-o", filepath.Join(dir, "out.txt")}, ".npy or .csv"},
		{[]string{"apply", mapFile, missing, "-o", filepath.Join(dir, "no", "out.csv")}, "does not exist"},
		{[]string{"plot", "reliability", missing, "-o", filepath.Join(dir, "f.gif")}, "-o"},
		{[]string{"plot", "reliability", missing, "-o", filepath.Join(dir, "f.png"), "--class", "-2"}, "--class"},
		{[]string{"plot", "bandwidth", missing, "-o", filepath.Join(dir, "f.png"), "--notion", "nope"}, "--notion"},
		{[]string{"compare", "--val", missing, "--test", missing, "--methods", "nope"}, "--methods"},
		{[]string{"compare", "--val", missing, "--test", missing, "--grid", "nope"}, "--grid"},
		{[]string{"compare", "--val", missing, "--test", missing, "--workers", "-2"}, "--workers"},
		{[]string{"bandwidth", missing, "--workers", "-1"}, "--workers"},
		{[]string{"bandwidth", missing, "--mode", "nope"}, "--mode"},
		{[]string{"bandwidth", missing, "--bandwidth-objective", "nope"}, "--bandwidth-objective"},
		{[]string{"train", "--data", missing, "-o", dir, "--epochs", "0"}, "--epochs"},
		{[]string{"train", "--data", missing, "-o", dir, "--val", "1.5"}, "--val"},
		{[]string{"train", "--data", missing, "-o", dir, "--p", "0"}, "--p"},
		{[]string{"experiment", "convergence", "--workers", "-1"}, "--workers"},
		{[]string{"experiment", "witness", "--resamples", "0"}, "--resamples"},
		{[]string{"eval", missing, "--bins", "abc"}, `"--bins" flag: want an integer`},
		{[]string{"eval", missing, "--ci-level", "0.9"}, "add --ci"},
		{[]string{"eval", missing, "--ci-resamples", "50"}, "add --ci"},
		{[]string{"eval", missing, "--bins", "20", "--bin-rule", "doane"}, "--bin-rule doane"},
		{[]string{"fit", missing, "--method", "temperature", "--lambda", "3", "-o", filepath.Join(dir, "m.json")}, "--lambda applies to --method matrix-odir, dirichlet-odir"},
		{[]string{"fit", missing, "--method", "vector", "--lambda", "1", "-o", filepath.Join(dir, "m.json")}, "--lambda"},
		{[]string{"fit", missing, "--method", "spline", "--scalar-mode", "binary", "-o", filepath.Join(dir, "m.json")}, "--scalar-mode"},
		{[]string{"fit", missing, "--method", "isotonic", "--bins", "3", "-o", filepath.Join(dir, "m.json")}, "--bins"},
		{[]string{"fit", missing, "--method", "histogram", "--knots", "5", "-o", filepath.Join(dir, "m.json")}, "--knots"},
		{[]string{"fit", missing, "--method", "spline", "--grid", "full", "-o", filepath.Join(dir, "m.json")}, "--grid"},
		{[]string{"train", "--data", missing, "-o", dir, "--lr", "0"}, "--lr"},
		{[]string{"experiment", "training", "--seeds", "0"}, "--seeds"},
		{[]string{"experiment", "convergence", "--ground-samples", "0"}, "--ground-samples"},
		{[]string{"eval", missing, "--seed", "-1"}, `"--seed" flag: want a non-negative integer`},
		{[]string{"eval", missing, "--ci-level", "x"}, `"--ci-level" flag: want a number`},
		{[]string{"eval", missing, "--json=maybe"}, `"--json" flag: want true or false`},
	}
	for _, c := range cases {
		_, stderr, code := run(t, c.args...)
		if code != ExitInput {
			t.Errorf("%v: exit %d, want 2 (%s)", c.args, code, stderr)
			continue
		}
		if strings.Contains(stderr, "strconv") || strings.Contains(stderr, "Go struct") {
			t.Errorf("%v: message in Go's terms: %q", c.args, stderr)
		}
		if !strings.Contains(stderr, c.want) || strings.Contains(stderr, "missing.csv") {
			t.Errorf("%v: stderr %q, want the flag's message containing %q (before the missing input)", c.args, stderr, c.want)
		}
	}
}

// TestKSRAboveK: --ks-r above the number of classes is refused once K is
// known, instead of silently dropping the rows asked for.
func TestKSRAboveK(t *testing.T) {
	_, stderr, code := run(t, "eval", golden+"c02_n200_k3.csv", "--metrics", "ks", "--ks-r", "1,4")
	if code != ExitInput || !strings.Contains(stderr, "--ks-r 4") || !strings.Contains(stderr, "K = 3") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
}

// TestVersion: calib --version prints the version.
func TestVersion(t *testing.T) {
	stdout, _, code := run(t, "--version")
	if code != 0 || !strings.HasPrefix(stdout, "calib ") || strings.TrimSpace(stdout) == "calib" {
		t.Fatalf("exit %d: %q", code, stdout)
	}
}

// writeLogitSet writes n rows of K logits (miscalibrated: labels drawn from
// softmax(z / 2)) and their labels as NPY files, and returns their paths.
func writeLogitSet(t *testing.T, dir string, n, k int, seed uint64) (logits, labels string) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 1))
	z := make([]float64, n*k)
	y := make([]float64, n)
	for i := 0; i < n; i++ {
		row := z[i*k : (i+1)*k]
		for c := range row {
			row[c] = 3 * rng.NormFloat64()
		}
		p := make([]float64, k)
		data.Softmax(p, scale(row, 0.5))
		u, acc := rng.Float64(), 0.0
		y[i] = float64(k - 1)
		for c, v := range p {
			if acc += v; u < acc {
				y[i] = float64(c)
				break
			}
		}
	}
	logits, labels = filepath.Join(dir, fmt.Sprintf("z%d.npy", seed)), filepath.Join(dir, fmt.Sprintf("y%d.npy", seed))
	for _, f := range []struct {
		name string
		v    []float64
		k    int
	}{{logits, z, k}, {labels, y, 1}} {
		var b bytes.Buffer
		if err := data.WriteNPY(&b, f.v, f.k); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f.name, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return logits, labels
}

func scale(x []float64, s float64) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = v * s
	}
	return out
}

// TestInterruptStopsEval: a cancelled context (Ctrl-C) stops eval within
// one second, even inside an O(n^2) sweep, with exit 130 and no output.
func TestInterruptStopsEval(t *testing.T) {
	dir := t.TempDir()
	z, y := writeLogitSet(t, dir, 6000, 10, 1)
	for _, args := range [][]string{
		{"eval", z, "--labels", y, "--logits", "--json", "--metrics", "all"},
		{"eval", z, "--labels", y, "--logits", "--metrics", "ece_witness"},
		{"eval", z, "--labels", y, "--logits", "--metrics", "ece_kde", "--bandwidth", "0.05", "--ci-exact", "--ci-resamples", "1000"},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		var out, errb bytes.Buffer
		done := make(chan int)
		go func() { done <- Main(ctx, args, &out, &errb) }()
		time.Sleep(300 * time.Millisecond)
		cancel()
		// The status and the empty output say the cancel stopped it (no
		// bound on seconds: a slow machine breaks it).
		if code := <-done; code != ExitInterrupted {
			t.Errorf("%v: exit %d, want %d (%s)", args, code, ExitInterrupted, errb.String())
		}
		if out.Len() != 0 {
			t.Errorf("%v: partial output %q", args, out.String())
		}
	}
}

// TestProvenance: the JSON output says which tool, command, options, seed,
// input kind and map made it.
func TestProvenance(t *testing.T) {
	dir := t.TempDir()
	z, y := writeLogitSet(t, dir, 300, 3, 2)
	m := filepath.Join(dir, "t.json")
	if _, stderr, code := run(t, "fit", z, "--labels", y, "--logits", "--method", "temperature", "-o", m); code != 0 {
		t.Fatalf("fit: %s", stderr)
	}
	stdout, stderr, code := run(t, "eval", z, "--labels", y, "--logits", "--calibrator", m, "--metrics", "brier,ece_bin", "--seed", "7", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var out struct {
		Provenance struct {
			Version string            `json:"calib_version"`
			Command string            `json:"command"`
			Options map[string]string `json:"options"`
			Seed    *uint64           `json:"seed"`
			Inputs  []struct {
				File, Labels, Kind string
				N, K               int
			} `json:"inputs"`
			Calibrator *struct{ File, Method string } `json:"calibrator"`
		} `json:"provenance"`
		Results []struct {
			Metric  string
			Seconds *float64
		}
		Seconds float64
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatal(err)
	}
	p := out.Provenance
	if p.Version == "" || p.Command != "calib eval" || p.Options["metrics"] != "brier,ece_bin" || p.Seed == nil || *p.Seed != 7 {
		t.Errorf("provenance %+v", p)
	}
	if len(p.Inputs) != 1 || p.Inputs[0].Kind != "logits" || p.Inputs[0].File != z || p.Inputs[0].Labels != y || p.Inputs[0].N != 300 {
		t.Errorf("inputs %+v", p.Inputs)
	}
	if p.Calibrator == nil || p.Calibrator.Method != "temperature" || p.Calibrator.File != m {
		t.Errorf("calibrator %+v", p.Calibrator)
	}
	// Per-entry time only where it is the entry's own: one per metric,
	// summing to at most the wall time.
	sum, timed := 0.0, map[string]int{}
	for _, r := range out.Results {
		if r.Seconds != nil {
			sum += *r.Seconds
			timed[r.Metric]++
		}
	}
	if timed["brier"] != 1 || timed["ece_bin"] != 1 || sum > out.Seconds {
		t.Errorf("timed entries %v, sum %v > wall %v", timed, sum, out.Seconds)
	}
	// ece_kde times each notion on its own.
	stdout, _, _ = run(t, "eval", golden+"c02_n200_k3.csv", "--mode", "canonical,marginal,top_label", "--json")
	out.Results = nil
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range out.Results {
		if r.Seconds != nil {
			n++
		}
	}
	if n != 3 {
		t.Errorf("%d timed ece_kde entries, want one per notion (3)", n)
	}
	table, _, _ := run(t, "eval", z, "--labels", y, "--logits", "--calibrator", m, "--metrics", "brier")
	if !strings.Contains(table, "logits (softmax in float64), after the temperature map") {
		t.Errorf("table header does not say logits and the map:\n%s", table)
	}
}

// TestIntervalsContainEstimate: on the real CIFAR sets in testdata every
// bootstrap interval of eval contains its own point estimate (the binned,
// KS and MMCE intervals are centred; they used to miss it), and the
// centred ones report the bootstrap bias.
func TestIntervalsContainEstimate(t *testing.T) {
	sets := []string{"cifar10_densenet121-flsd53"}
	metrics := "ece_bin,mce,ece_bin_debiased,ks,mmce,brier,nll,accuracy,confidence"
	if testenv.Thorough() {
		sets, metrics = append(sets, "cifar100_resnet110-brier"), "all"
	}
	for _, name := range sets {
		dir := "../../../../testdata/logits/" + name + "/"
		stdout, stderr, code := run(t, "eval", dir+"test_logits.npy", "--labels", dir+"test_labels.npy", "--logits", "--metrics", metrics,
			"--ci", "--ci-resamples", "100", "--json", "--progress=false")
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", name, code, stderr)
		}
		var out struct{ Results []*evaluate.Result }
		if err := json.Unmarshal([]byte(stdout), &out); err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, e := range out.Results {
			if e.Value == nil || len(e.CI) != 2 {
				continue
			}
			n++
			v, lo, hi := float64(*e.Value), float64(e.CI[0]), float64(e.CI[1])
			if !(lo <= v && v <= hi) {
				t.Errorf("%s: %s %s p=%v: %.6f outside [%.6f, %.6f] (%s)", name, e.Metric, e.Notion, e.P, v, lo, hi, e.CIMethod)
			}
			if e.CIMethod == "centered" && e.CIBias == nil {
				t.Errorf("%s: %s %s: centred interval without ci_bias", name, e.Metric, e.Notion)
			}
		}
		if n < 20 {
			t.Errorf("%s: only %d intervals", name, n)
		}
	}
}

// TestFixedBandwidthWarned: an estimate dominated by smoothing (K = 100,
// n = 400, where even the LOO bandwidth is about 0.07) and a fixed
// bandwidth far from the LOO choice get a warning.
func TestFixedBandwidthWarned(t *testing.T) {
	dir := t.TempDir()
	z, y := writeLogitSet(t, dir, 400, 100, 3)
	stdout, stderr, code := run(t, "eval", z, "--labels", y, "--logits", "--mode", "canonical", "--bandwidth", "0.05")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "each kernel regression rests on about one other sample") {
		t.Errorf("no warning:\n%s", stdout)
	}
	// A bandwidth far wider than the data: each regression averages them
	// all.
	stdout, _, _ = run(t, "eval", golden+"c02_n200_k3.csv", "--mode", "canonical", "--bandwidth", "100")
	if !strings.Contains(stdout, "each kernel regression averages most of the data") {
		t.Errorf("no smoothing warning at h = 100:\n%s", stdout)
	}
	// A clearly miscalibrated model measured at the LOO bandwidth is not
	// flagged (the regression follows f): scores c ~ U(0.5, 1) right with
	// probability 0.5 + 0.4 (c - 0.5), true top-label CE_1 0.15.
	rng := rand.New(rand.NewPCG(9, 9))
	var b strings.Builder
	for i := 0; i < 3000; i++ {
		c := 0.5 + 0.5*rng.Float64()
		y := 1
		if rng.Float64() >= 0.5+0.4*(c-0.5) {
			y = 0
		}
		fmt.Fprintf(&b, "%.17g,%.17g,%d\n", 1-c, c, y)
	}
	mis := filepath.Join(dir, "mis.csv")
	os.WriteFile(mis, []byte(b.String()), 0o644)
	stdout, stderr, code = run(t, "eval", mis, "--mode", "top_label,canonical")
	if code != 0 || strings.Contains(stdout, "warning") {
		t.Errorf("warned on a resolved regression (exit %d, %s):\n%s", code, stderr, stdout)
	}
	// A bandwidth six times the LOO choice (0.0079) on c02.
	stdout, _, _ = run(t, "eval", golden+"c02_n200_k3.csv", "--mode", "canonical", "--bandwidth", "0.05")
	if !strings.Contains(stdout, "warning: canonical bandwidth: the fixed bandwidth h = 0.05 is far from what the data support") {
		t.Errorf("no warning at h = 0.05:\n%s", stdout)
	}
	// A bandwidth near the LOO choice gets none.
	stdout, _, _ = run(t, "eval", golden+"c02_n200_k3.csv", "--mode", "canonical", "--bandwidth", "0.008")
	if strings.Contains(stdout, "warning") {
		t.Errorf("warning at a supported bandwidth:\n%s", stdout)
	}
}

// TestCanonicalBinnedSparseWarned: the canonical binned metrics on 1,000
// samples in K = 10 (15 bins per coordinate) hold about one sample per
// occupied cell and say so.
func TestCanonicalBinnedSparseWarned(t *testing.T) {
	stdout, stderr, code := run(t, "eval", golden+"c04_n1000_k10.csv", "--metrics", "mce,ece_bin", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var out struct{ Results []*evaluate.Result }
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatal(err)
	}
	for _, e := range out.Results {
		warned := len(e.Warnings) > 0 && strings.Contains(e.Warnings[0].Error(), "meaningless at this n")
		if e.Notion == "canonical" && !warned {
			t.Errorf("%s canonical: no warning", e.Metric)
		}
		if e.Notion != "canonical" && warned {
			t.Errorf("%s %s: warned", e.Metric, e.Notion)
		}
	}
	// On a real CIFAR set the cells hold many samples on average (the
	// predictions are sharp), but the canonical MCE sits in a cell of one
	// sample: it alone is flagged.
	d := "../../../../testdata/logits/cifar10_densenet121-flsd53/"
	stdout, stderr, code = run(t, "eval", d+"test_logits.npy", "--labels", d+"test_labels.npy", "--logits", "--metrics", "mce,ece_bin", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	out.Results = nil
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatal(err)
	}
	for _, e := range out.Results {
		warned := len(e.Warnings) > 0 && strings.Contains(e.Warnings[0].Error(), "meaningless at this n")
		if want := e.Metric == "mce" && e.Notion == "canonical"; warned != want {
			t.Errorf("%s %s: warned %v (value %v), want %v", e.Metric, e.Notion, warned, *e.Value, want)
		}
	}
}

// TestApplyAndEvalReadLabelledCSV: apply reads the K-columns-then-label
// CSV that fit and eval read (and keeps the labels), and eval --labels
// accepts it when the two agree.
func TestApplyAndEvalReadLabelledCSV(t *testing.T) {
	dir := t.TempDir()
	set := golden + "c02_n200_k3.csv"
	m := filepath.Join(dir, "iso.json")
	if _, stderr, code := run(t, "fit", set, "--method", "isotonic", "-o", m); code != 0 {
		t.Fatalf("fit: %s", stderr)
	}
	out := filepath.Join(dir, "out.csv")
	if _, stderr, code := run(t, "apply", m, set, "-o", out); code != 0 {
		t.Fatalf("apply on the labelled CSV: exit %d: %s", code, stderr)
	}
	b, _ := os.ReadFile(out)
	if lines := strings.Split(strings.TrimSpace(string(b)), "\n"); len(lines) != 201 || !strings.HasSuffix(lines[0], ",label") {
		t.Errorf("apply output: %d lines, header %q", len(lines), lines[0])
	}
	s, err := data.Load(set, data.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var lb strings.Builder
	for _, y := range s.Labels {
		fmt.Fprintln(&lb, y)
	}
	labels := filepath.Join(dir, "y.txt")
	os.WriteFile(labels, []byte(lb.String()), 0o644)
	a, stderr, code := run(t, "eval", set, "--labels", labels, "--metrics", "brier,ece_bin", "--json")
	if code != 0 {
		t.Fatalf("eval --labels on the labelled CSV: exit %d: %s", code, stderr)
	}
	c, _, _ := run(t, "eval", set, "--metrics", "brier,ece_bin", "--json")
	if strip(a) != strip(c) {
		t.Errorf("eval --labels differs from the file's own labels:\n%s\n%s", a, c)
	}
	lb.Reset()
	for i, y := range s.Labels {
		if i == 5 {
			y = (y + 1) % 3
		}
		fmt.Fprintln(&lb, y)
	}
	os.WriteFile(labels, []byte(lb.String()), 0o644)
	if _, stderr, code := run(t, "eval", set, "--labels", labels); code != ExitInput || !strings.Contains(stderr, "6") {
		t.Errorf("disagreeing labels: exit %d: %s", code, stderr)
	}
}

// strip removes the parts of eval's JSON that differ between runs (times,
// the provenance).
func strip(s string) string {
	var v map[string]any
	if json.Unmarshal([]byte(s), &v) != nil {
		return s
	}
	delete(v, "provenance")
	delete(v, "seconds")
	delete(v, "file")
	for _, r := range v["results"].([]any) {
		delete(r.(map[string]any), "seconds")
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// TestNumpyArchiveThroughCLI: an archive laid out as np.savez writes it
// (members logits.npy and labels.npy) gives the numbers of the two plain
// NPY files.
func TestNumpyArchiveThroughCLI(t *testing.T) {
	dir := t.TempDir()
	z, y := writeLogitSet(t, dir, 300, 4, 5)
	npz := filepath.Join(dir, "test.npz")
	f, err := os.Create(npz)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	for _, m := range []struct{ member, file string }{{"logits.npy", z}, {"labels.npy", y}} {
		b, _ := os.ReadFile(m.file)
		w, err := zw.CreateHeader(&zip.FileHeader{Name: m.member, Method: zip.Deflate})
		if err != nil {
			t.Fatal(err)
		}
		w.Write(b)
	}
	zw.Close()
	f.Close()
	a, stderr, code := run(t, "eval", npz, "--metrics", "ece_bin,nll,ks", "--json")
	if code != 0 {
		t.Fatalf("eval %s: exit %d: %s", npz, code, stderr)
	}
	b, _, _ := run(t, "eval", z, "--labels", y, "--logits", "--metrics", "ece_bin,nll,ks", "--json")
	if strip(a) != strip(b) {
		t.Errorf("the archive and the plain files differ:\n%s\n%s", a, b)
	}
}

// TestCompareNamesItsLabelFlags: compare without --test-labels on NPY
// names --test-labels, not eval's --labels.
func TestCompareNamesItsLabelFlags(t *testing.T) {
	dir := t.TempDir()
	z, y := writeLogitSet(t, dir, 100, 3, 6)
	_, stderr, code := run(t, "compare", "--val", z, "--val-labels", y, "--test", z, "--logits")
	if code != ExitInput || !strings.Contains(stderr, "--test-labels") {
		t.Errorf("exit %d: %s", code, stderr)
	}
	_, stderr, code = run(t, "compare", "--val", z, "--test", z, "--test-labels", y, "--logits")
	if code != ExitInput || !strings.Contains(stderr, "--val-labels") {
		t.Errorf("exit %d: %s", code, stderr)
	}
}

// TestFitInputErrorsExit2: a fit refused for its data (too few rows, one
// class) exits 2 like any bad input, and so does a map with impossible
// values.
func TestFitInputErrorsExit2(t *testing.T) {
	dir := t.TempDir()
	tiny := filepath.Join(dir, "tiny.csv")
	os.WriteFile(tiny, []byte("0.6,0.4,0\n0.3,0.7,1\n"), 0o644)
	for _, m := range []string{"histogram", "platt", "dirichlet-odir"} {
		_, stderr, code := run(t, "fit", tiny, "--method", m, "-o", filepath.Join(dir, m+".json"))
		if code != ExitInput {
			t.Errorf("%s on 2 rows: exit %d: %s", m, code, stderr)
		}
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"schema_version":1,"method":"isotonic","input":"probabilities","k":3,"mode":"top_label","maps":[{"x":[0,0.5,1],"y":[0,5,1]}]}`), 0o644)
	_, stderr, code := run(t, "apply", bad, golden+"c02_n200_k3.csv", "-o", filepath.Join(dir, "o.csv"))
	if code != ExitInput || !strings.Contains(stderr, "y[1] = 5") {
		t.Errorf("edited map: exit %d: %s", code, stderr)
	}
}

// TestFitHonoursTolerance: rows the loader accepts under a looser
// --tolerance are fitted and mapped (rescaled for the map), not refused by
// the map's own check; an experiment's -o that is a file is refused first.
func TestFitHonoursTolerance(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	rng := rand.New(rand.NewPCG(4, 4))
	for i := 0; i < 200; i++ {
		p := 0.2 + 0.6*rng.Float64()
		fmt.Fprintf(&b, "%.6f,%.6f,%d\n", p+0.0004, 1-p, rng.IntN(2)) // off by 4e-4
	}
	off := filepath.Join(dir, "off.csv")
	os.WriteFile(off, []byte(b.String()), 0o644)
	m := filepath.Join(dir, "m.json")
	for _, method := range []string{"isotonic", "platt", "spline"} {
		if _, stderr, code := run(t, "fit", off, "--method", method, "--tolerance", "1e-3", "-o", m); code != 0 {
			t.Errorf("fit %s --tolerance 1e-3: exit %d: %s", method, code, stderr)
		}
	}
	if _, stderr, code := run(t, "apply", m, off, "--tolerance", "1e-3", "-o", filepath.Join(dir, "o.csv")); code != 0 {
		t.Errorf("apply: exit %d: %s", code, stderr)
	}
	file := filepath.Join(dir, "afile")
	os.WriteFile(file, nil, 0o644)
	_, stderr, code := run(t, "experiment", "binned-vs-kde", "--quick", "-o", file)
	if code != ExitInput || !strings.Contains(stderr, "is a file, want a directory") {
		t.Errorf("experiment -o FILE: exit %d: %s", code, stderr)
	}
}

// TestRoundedZerosWarned: a golden set written with 6 decimals loads (its
// rows rescaled and counted), and the probabilities that became exactly 0
// are pointed out, since the kernel estimates treat them as zero
// coordinates.
func TestRoundedZerosWarned(t *testing.T) {
	s, err := data.Load(golden+"c02_n200_k3.csv", data.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for i := 0; i < s.N; i++ {
		for c := 0; c < s.K; c++ {
			fmt.Fprintf(&b, "%.6f,", s.Probs[i*s.K+c])
		}
		fmt.Fprintf(&b, "%d\n", s.Labels[i])
	}
	name := filepath.Join(t.TempDir(), "c02_6.csv")
	os.WriteFile(name, []byte(b.String()), 0o644)
	stdout, stderr, code := run(t, "eval", name, "--metrics", "brier,ece_kde", "--mode", "canonical", "--metrics", "ece_kde", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var out struct {
		Rounded  int
		Warnings []string
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatal(err)
	}
	if out.Rounded == 0 || len(out.Warnings) != 1 || !strings.HasPrefix(out.Warnings[0], "3 probabilities are exactly 0") {
		t.Errorf("rounded %d, warnings %q", out.Rounded, out.Warnings)
	}
}

// TestMapMessagesInUserTerms: a map file that is not JSON, has a value of
// the wrong type or an unknown key, is a directory or is missing gets a
// message without Go's terms, exit 2.
func TestMapMessagesInUserTerms(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"garbage.json": "garbage",
		"type.json":    `{"schema_version":"x"}`,
		"unknown.json": `{"schema_version":1,"method":"temperature","input":"logits","k":3,"temperature":1,"x":2}`,
	}
	want := map[string]string{
		"garbage.json": "not valid JSON at byte 1",
		"type.json":    `"schema_version" holds a JSON string, want a whole number`,
		"unknown.json": `unknown field "x"`,
		"":             "is a directory, want a map file",
		"missing.json": "no such map file",
	}
	for name, text := range files {
		os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644)
	}
	for name, w := range want {
		_, stderr, code := run(t, "apply", filepath.Join(dir, name), golden+"c02_n200_k3.csv", "-o", filepath.Join(dir, "o.csv"))
		if code != ExitInput || !strings.Contains(stderr, w) {
			t.Errorf("%q: exit %d: %q, want %q", name, code, stderr, w)
		}
		for _, bad := range []string{"Go struct", " json: ", "recal:", "read /"} {
			if strings.Contains(stderr, bad) {
				t.Errorf("%q: %q in %q", name, bad, stderr)
			}
		}
	}
}

// TestCompareOneColumnLogits: compare on one-column binary logits (the
// uncalibrated row's NLL from the logit z as the pair (0, z)) gives the NLL
// eval gives.
func TestCompareOneColumnLogits(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(8, 8))
	z, y := make([]float64, 400), make([]float64, 400)
	for i := range z {
		z[i] = 2 * rng.NormFloat64()
		if rng.Float64() < 1/(1+math.Exp(-z[i]/2)) {
			y[i] = 1
		}
	}
	zf, yf := filepath.Join(dir, "z.npy"), filepath.Join(dir, "y.npy")
	for _, f := range []struct {
		name string
		v    []float64
	}{{zf, z}, {yf, y}} {
		var b bytes.Buffer
		data.WriteNPY(&b, f.v, 1)
		os.WriteFile(f.name, b.Bytes(), 0o644)
	}
	stdout, stderr, code := run(t, "compare", "--val", zf, "--val-labels", yf, "--test", zf, "--test-labels", yf, "--logits", "--methods", "temperature,platt", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var c struct{ Rows []map[string]any }
	json.Unmarshal([]byte(stdout), &c)
	e, _, _ := run(t, "eval", zf, "--labels", yf, "--logits", "--metrics", "nll", "--json")
	var ev struct{ Results []map[string]any }
	json.Unmarshal([]byte(e), &ev)
	// eval takes the NLL of the probabilities (1 - sigmoid(z), sigmoid(z)),
	// compare the log-softmax of (0, z): equal to rounding.
	if len(c.Rows) != 3 || len(ev.Results) != 1 || math.Abs(c.Rows[0]["nll"].(float64)-ev.Results[0]["value"].(float64)) > 1e-12 {
		t.Errorf("compare NLL %v, eval %v", c.Rows, ev.Results)
	}
}

// TestEveryCommandHasHelp: every command has its long help (help/NAME.txt,
// embedded) and a short one.
func TestEveryCommandHasHelp(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Name() != "help" && c.Name() != "completion" && (strings.TrimSpace(c.Long) == "" || c.Short == "") {
			t.Errorf("%s: no help", c.CommandPath())
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(NewRoot())
}
