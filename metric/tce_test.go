package metric

import (
	"encoding/csv"
	"math"
	"os"
	"strconv"
	"testing"

	"github.com/sbinet/npyio"
)

func readNPY[T any](t *testing.T, name string) []T {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var v []T
	if err := npyio.Read(f, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestTCEPaper checks TCE against the TCE repository's published results
// (facebookresearch/tce @12faba8, Result/DL/summary.csv, printed to 4
// decimals of a percentage, i.e. the number rejected exactly) on its own
// inputs (Dataset/DL: 50,000 predictions of a binary task, copied to
// testdata/tce), with the settings of 03_Deep.ipynb: n_min = n/20,
// n_max = n/5 (TCE) and 10 equal-count bins (TCE(Q)), predictions above 1
// clipped (none are).
func TestTCEPaper(t *testing.T) {
	labels := readNPY[int64](t, "testdata/tce/labels.npy")
	y := make([]float64, len(labels))
	for i, v := range labels {
		y[i] = float64(v)
	}
	f, err := os.Open("testdata/tce/summary.csv")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][2]float64{}
	for _, r := range rows[1:] {
		a, _ := strconv.ParseFloat(r[1], 64)
		b, _ := strconv.ParseFloat(r[2], 64)
		want[r[0]] = [2]float64{a, b}
	}
	for _, c := range []struct{ file, model string }{{"preds_00", "alexnet"}, {"preds_01", "vgg19"}, {"preds_04", "resnet152"}} {
		p := readNPY[float64](t, "testdata/tce/"+c.file+".npy")
		for i := range p {
			p[i] = min(p[i], 1)
		}
		for j, o := range []TCEOptions{{}, {Quantile: 10}} {
			got, err := TCE(p, y, o)
			if err != nil {
				t.Fatal(err)
			}
			pct := math.Round(100*got.Value*1e4) / 1e4
			if pct != want[c.model][j] {
				t.Errorf("%s %+v: TCE %.4f (%d rejected, %d bins), published %.4f", c.model, o, pct, got.Rejected, got.Bins, want[c.model][j])
			}
		}
	}
}

// TestBinomTestBrute checks the two-sided p-value against its
// definition summed over every outcome: sum of pmf(x) over x with pmf(x)
// <= pmf(k) (1 + 1e-7).
func TestBinomTestBrute(t *testing.T) {
	for _, n := range []int{1, 2, 5, 17, 60, 301} {
		for _, p := range []float64{0.001, 0.1, 0.3, 0.5, 0.77, 0.999} {
			for k := 0; k <= n; k++ {
				got := binomTestP(k, n, p)
				want := 0.0
				d := math.Exp(lbinom(n, k) + float64(k)*math.Log(p) + float64(n-k)*math.Log1p(-p))
				for x := 0; x <= n; x++ {
					if px := math.Exp(lbinom(n, x) + float64(x)*math.Log(p) + float64(n-x)*math.Log1p(-p)); px <= d*(1+1e-7) {
						want += px
					}
				}
				if float64(k) == p*float64(n) {
					want = 1
				}
				want = min(want, 1)
				if math.Abs(got-want) > 1e-9*math.Max(want, 1e-300) && math.Abs(got-want) > 1e-13 {
					t.Fatalf("binomtest(%d, %d, %v) = %v, direct sum %v", k, n, p, got, want)
				}
			}
		}
	}
}

func lbinom(n, k int) float64 {
	a, _ := math.Lgamma(float64(n + 1))
	b, _ := math.Lgamma(float64(k + 1))
	c, _ := math.Lgamma(float64(n - k + 1))
	return a - b - c
}

// TestPAVABC: blocks of a hand case. Outcomes sorted 1 0 1 0 0 1 1 1
// with n_min 2, n_max 4: the last 2 points form a block, merged into the
// one before (2 + 2 <= 4); before it PAVA merges decreasing shares up to
// size 4.
func TestPAVABC(t *testing.T) {
	y := []float64{1, 0, 1, 0, 0, 1, 1, 1}
	order := []int{0, 1, 2, 3, 4, 5, 6, 7}
	got := pavaBC(order, y, 2, 4)
	// j=0 [1]; j=1 [1,0] sizes 2 <= n_min: merge -> (1,2); j=2 push (1,1):
	// 3 > 2, 3 <= 4 and 1/2 >= 1 false: keep; j=3 push (0,1): (1,1) vs
	// (0,1): 2 <= n_min: merge -> (1,2); then (1,2) vs (1,2): 4 <= 4 and
	// 0.5 >= 0.5: merge -> (2,4); j=4 push (0,1): (2,4)+(0,1) = 5 > 4;
	// j=5 push (1,1): (0,1),(1,1): 2 <= 2 merge -> (1,2); vs (2,4): 6 > 4.
	// Tail (2,2): 2+2 <= 4: merged into (1,2) -> (3,4).
	want := []int{4, 4}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("blocks %v, want %v", got, want)
	}
}
