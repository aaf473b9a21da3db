package cli

import (
	"bytes"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/calib-dev/calib/data"
)

// writeNPYFile writes values (rows of k) to dir/name as .npy.
func writeNPYFile(t *testing.T, dir, name string, values []float64, k int) string {
	t.Helper()
	var b bytes.Buffer
	if err := data.WriteNPY(&b, values, k); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestTestMaxSeconds: calib test refuses, before any test runs, a test
// named whose estimated run time passes --max-seconds (60 by default):
// prior_score at K = 10,000, n = 50 (it ran past 300 s and 906 MB), with
// exit 2 and a message that names the estimate and the flag; the flag's
// range is checked before the data is read.
func TestTestMaxSeconds(t *testing.T) {
	dir := t.TempDir()
	const n, k = 50, 10_000
	rng := rand.New(rand.NewPCG(1, 2))
	z, y := make([]float64, n*k), make([]float64, n)
	for i := range z {
		z[i] = rng.NormFloat64()
	}
	for i := range y {
		y[i] = float64(rng.IntN(k))
	}
	zf, yf := writeNPYFile(t, dir, "z.npy", z, k), writeNPYFile(t, dir, "y.npy", y, 1)
	_, stderr, code := run(t, "test", zf, "--labels", yf, "--logits", "--tests", "prior_score")
	if code != 2 || !strings.Contains(stderr, "prior_score would take about") || !strings.Contains(stderr, "n = 50, K = 10000, 1000 resamples") ||
		!strings.Contains(stderr, "past --max-seconds 60: --max-seconds 0 runs it anyway") {
		t.Errorf("prior_score at K = 10,000: exit %d, %q; want the estimate and --max-seconds", code, stderr)
	}
	missing := filepath.Join(dir, "missing.npy")
	for _, bad := range []string{"-1", "NaN", "Inf", "x"} {
		_, stderr, code := run(t, "test", missing, "--max-seconds", bad)
		if code != 2 || !strings.Contains(stderr, "--max-seconds") {
			t.Errorf("--max-seconds %s: exit %d, %q; want a usage error naming the flag before the file is read", bad, code, stderr)
		}
	}
}

// TestEvalOneClassAdvice: on a set with one class, where ece_variational
// (asked for by default) fails, the note under the table says that the
// number to report could not be computed, and does not ask to add it to
// --metrics.
func TestEvalOneClassAdvice(t *testing.T) {
	dir := t.TempDir()
	csv := "p0,p1,p2,label\n0.7,0.2,0.1,0\n0.6,0.3,0.1,0\n0.5,0.25,0.25,0\n0.8,0.1,0.1,0\n0.9,0.05,0.05,0\n0.4,0.3,0.3,0\n0.65,0.2,0.15,0\n0.55,0.35,0.1,0\n"
	path := filepath.Join(dir, "one.csv")
	if err := os.WriteFile(path, []byte(csv), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := run(t, "eval", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if strings.Contains(stdout, "add ece_variational to --metrics") || !strings.Contains(stdout, "ece_variational, the number to report, could not be computed on these data") {
		t.Errorf("the advice note recommends the metric that failed, or does not say it failed:\n%s", stdout)
	}
}

// TestEvalLogitsHint: logits given without --logits (negative entries)
// end their error with the hint to use --logits.
func TestEvalLogitsHint(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(5, 6))
	z, y := make([]float64, 20*3), make([]float64, 20)
	for i := range z {
		z[i] = 3 * rng.NormFloat64()
	}
	for i := range y {
		y[i] = float64(i % 3)
	}
	z[0] = -math.Abs(z[0]) - 1 // row 1's first entry negative, past any rounding
	zf, yf := writeNPYFile(t, dir, "z.npy", z, 3), writeNPYFile(t, dir, "y.npy", y, 1)
	_, stderr, code := run(t, "eval", zf, "--labels", yf)
	if code != 2 || !strings.Contains(stderr, "row 1, column 1: negative probability") || !strings.Contains(stderr, "(logits? use --logits)") {
		t.Errorf("exit %d, %q; want the negative probability with the --logits hint", code, stderr)
	}
}
