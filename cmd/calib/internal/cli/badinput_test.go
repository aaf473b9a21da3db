package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBadInputIsExit2: input a metric or test refuses is the input's
// fault (exit 2, the option and the reason named), not calib's (exit 1):
// ece_variational on fewer rows than its folds, ece_witness at p = 3,
// tce, ace and skce with weights, a Platt fit on separable (one-hot)
// predictions, figures on too few rows or of a notion the data lack.
func TestBadInputIsExit2(t *testing.T) {
	dir := t.TempDir()
	four := filepath.Join(dir, "four.csv")
	if err := os.WriteFile(four, []byte("0.2,0.3,0.5,0\n0.6,0.2,0.2,1\n0.1,0.1,0.8,2\n0.3,0.3,0.4,0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var rows, weights strings.Builder
	for i := range 60 {
		a := 0.1 + 0.8*float64(i)/60
		fmt.Fprintf(&rows, "%.17g,%.17g,%.17g,%d\n", a, (1-a)/2, 1-a-(1-a)/2, i%3)
		weights.WriteString("1.5\n")
	}
	in, w := filepath.Join(dir, "p.csv"), filepath.Join(dir, "w.txt")
	onehot, one := filepath.Join(dir, "onehot.csv"), filepath.Join(dir, "one.csv")
	var oh strings.Builder
	for i := range 60 {
		p := []string{"0", "0", "0"}
		p[(i*7/3)%3] = "1"
		fmt.Fprintf(&oh, "%s,%d\n", strings.Join(p, ","), i%3)
	}
	if err := os.WriteFile(onehot, []byte(oh.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(one, []byte("0.2,0.3,0.5,2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(in, []byte(rows.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(w, []byte(weights.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"eval", four, "--metrics", "ece_variational"}, "4 rows for 5 folds"},
		{[]string{"eval", in, "--metrics", "ece_witness", "--p", "3"}, "--p: ece_witness is defined for p = 1 and 2"},
		{[]string{"eval", in, "--metrics", "tce", "--weights", w}, "--weights: tce: "},
		{[]string{"eval", in, "--metrics", "ace", "--weights", w}, "--weights: ace: "},
		{[]string{"test", in, "--tests", "skce", "--weights", w}, "skce takes no weights"},
		// Degenerate data: the input's fault, exit 2.
		{[]string{"fit", onehot, "--method", "platt", "-o", filepath.Join(dir, "m.json")}, "the scores separate the outcomes"},
		{[]string{"plot", "reliability", one, "-o", filepath.Join(dir, "r.svg")}, "1 samples, need at least 2"},
		{[]string{"plot", "bandwidth", in, "--notion", "binary", "-o", filepath.Join(dir, "b.svg")}, "--notion binary: the predictions have K = 3"},
	} {
		_, stderr, code := run(t, c.args...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%q: exit %d, %q; want exit 2 naming %q", c.args, code, stderr, c.want)
		}
	}
}
