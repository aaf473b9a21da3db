package metric

import (
	"math"
	"math/rand/v2"
	"testing"
)

func near(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if !(math.Abs(got-want) <= tol) {
		t.Errorf("%s = %.17g, want %.17g (tol %g)", what, got, want, tol)
	}
}

// TestBinnedHand checks a case computed by hand: 2 equal-width bins.
func TestBinnedHand(t *testing.T) {
	// Bin 0 = [0, 0.5]: scores 0, 0.2, 0.5 (0 and the edge 0.5 included),
	// outcomes 0, 1, 0: mean score 0.7/3, freq 1/3.
	// Bin 1 = (0.5, 1]: scores 0.6, 1, outcomes 1, 1: mean 0.8, freq 1.
	s := []float64{0, 0.2, 0.5, 0.6, 1}
	y := []float64{0, 1, 0, 1, 1}
	bs, err := BinScores(s, y, nil, BinOptions{Bins: 2})
	if err != nil {
		t.Fatal(err)
	}
	if bs.Count[0] != 3 || bs.Count[1] != 2 {
		t.Fatalf("counts %v", bs.Count)
	}
	d0, d1 := 1.0/3-0.7/3, 1-0.8
	near(t, "ECE_1", bs.ECE(1), 3.0/5*d0+2.0/5*d1, 1e-15)
	near(t, "ECE_2^2", bs.ECE(2), 3.0/5*d0*d0+2.0/5*d1*d1, 1e-15)
	near(t, "MCE", bs.MCE(), math.Max(d0, d1), 1e-15)
	// Debiased: freq (1 - freq)/(n_b - 1) per bin: (1/3)(2/3)/2 and 0.
	near(t, "debiased", bs.DebiasedL2(), 3.0/5*(d0*d0-(1.0/3)*(2.0/3)/2)+2.0/5*(d1*d1), 1e-15)

	// The splines reference's (lo, hi]: the score 0 is in no bin but
	// counts in N.
	bs, _ = BinScores(s, y, nil, BinOptions{Bins: 2, OpenLow: true})
	if bs.Count[0] != 2 || bs.N != 5 {
		t.Fatalf("OpenLow counts %v N %d", bs.Count, bs.N)
	}
	near(t, "OpenLow ECE_1", bs.ECE(1), 2.0/5*math.Abs(0.5-0.35)+2.0/5*d1, 1e-15)
}

// TestEqualMassEdges checks the percentile edges (NumPy linear
// interpolation) and the bin counts.
func TestEqualMassEdges(t *testing.T) {
	s := []float64{0.9, 0.1, 0.4, 0.3, 0.2}
	y := []float64{1, 0, 0, 1, 0}
	bs, err := BinScores(s, y, nil, BinOptions{Binning: EqualMass, Bins: 2})
	if err != nil {
		t.Fatal(err)
	}
	// Sorted 0.1 0.2 0.3 0.4 0.9: percentiles 0, 50, 100 = 0.1, 0.3, 0.9.
	want := []float64{0.1, 0.3, 0.9}
	for i := range want {
		near(t, "edge", bs.Edges[i], want[i], 1e-15)
	}
	if bs.Count[0] != 3 || bs.Count[1] != 2 {
		t.Errorf("counts %v, want [3 2] (0.3 closes the first bin)", bs.Count)
	}
	bs, _ = BinScores(s, y, nil, BinOptions{Binning: EqualMass, Bins: 4})
	// Positions 0, 1, 2, 3, 4 -> edges 0.1, 0.2, 0.3, 0.4, 0.9.
	near(t, "edge 3", bs.Edges[3], 0.4, 1e-15)
}

func TestBinRules(t *testing.T) {
	// Hand-computed Doane for {0, 0, 0, 1}: g1 = 1.1547, sigma_g1 = 0.58554,
	// 1 + 2 + log2(2.97203) = 4.5715 -> 5 bins.
	if b := doaneBins([]float64{0, 0, 0, 1}, nil); b != 5 {
		t.Errorf("Doane bins %d, want 5", b)
	}
	if b := doaneBins([]float64{0.5, 0.5, 0.5}, nil); b != 1 {
		t.Errorf("Doane bins of constant data %d, want 1", b)
	}
	b, _ := BinOptions{Rule: Sqrt}.numBins(make([]float64, 10), nil)
	if b != 4 {
		t.Errorf("sqrt bins %d, want 4", b)
	}
	b, _ = BinOptions{}.numBins(nil, nil)
	if b != DefaultBins {
		t.Errorf("default bins %d", b)
	}
}

// TestCanonicalHand checks the simplex cells on K = 3 with B = 2.
func TestCanonicalHand(t *testing.T) {
	probs := []float64{
		0.7, 0.2, 0.1, // cell (1,0,0)
		0.8, 0.1, 0.1, // cell (1,0,0)
		0.2, 0.2, 0.6, // cell (0,0,1)
		0, 0, 1, // cell (0,0,1): f = 1 goes to B-1 = 1
	}
	labels := []int{0, 1, 2, 2}
	c, err := Canonical(probs, labels, 3, 1, nil, BinOptions{Bins: 2})
	if err != nil {
		t.Fatal(err)
	}
	if c.Cells != 2 || c.B != 2 {
		t.Fatalf("%+v", c)
	}
	// Cell A (2 samples): H = (0.5, 0.5, 0), mean f (0.75, 0.15, 0.1):
	// 0.25+0.35+0.1 = 0.7. Cell B (2): H = (0, 0, 1), mean f (0.1, 0.1, 0.8):
	// 0.1+0.1+0.2 = 0.4. CE_1 = (2*0.7 + 2*0.4)/4.
	near(t, "canonical CE_1", c.Value, (2*0.7+2*0.4)/4, 1e-15)
	// MCE: cell A means (0.75, 0.15, 0.1) vs H: max 0.35; cell B means
	// (0.1, 0.1, 0.8) vs (0, 0, 1): 0.2.
	near(t, "canonical MCE", c.MCE, 0.35, 1e-15)
}

// TestECE25Golden compares the top-1 ECE with 25 equal-width bins in the
// reference's (lo, hi] convention with the splines reference, which works on
// float32 softmax: within 5e-5.
func TestECE25Golden(t *testing.T) {
	for name, m := range loadSplinesGolden(t).Models {
		s := loadTestSet(t, testLogits[name])
		bs, err := TopLabelBins(s.Probs, s.Labels, s.K, nil, BinOptions{Bins: 25, OpenLow: true})
		if err != nil {
			t.Fatal(err)
		}
		got := bs.ECE(1)
		if d := math.Abs(got - m.Uncalibrated.Test.ECE25Top1); d > 5e-5 {
			t.Errorf("%s: ECE25 %v, reference %v", name, got, m.Uncalibrated.Test.ECE25Top1)
		} else {
			t.Logf("%s: ECE25 |diff| %.2g", name, d)
		}
	}
}

// TestResampleShortcuts checks that the O(n) resample summaries equal a
// recomputation on the resampled data: bins (equal width), simplex cells
// (fixed B) and KS (no ties in these scores).
func TestResampleShortcuts(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	const n, k = 500, 4
	probs, labels := make([]float64, n*k), make([]int, n)
	for i := 0; i < n; i++ {
		s := 0.0
		for m := 0; m < k; m++ {
			probs[i*k+m] = rng.ExpFloat64()
			s += probs[i*k+m]
		}
		for m := 0; m < k; m++ {
			probs[i*k+m] /= s
		}
		labels[i] = rng.IntN(k)
	}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = rng.IntN(n)
	}
	rp, rl := Resample(probs, k, idx), Resample(labels, 1, idx)
	for _, o := range []BinOptions{{Bins: 10}, {Rule: Sqrt}, {Bins: 7, OpenLow: true}} {
		sc, oc := TopR(probs, labels, k, 1)
		a, err := AssignBins(sc, nil, o)
		if err != nil {
			t.Fatal(err)
		}
		got := a.Summarize(sc, oc, idx, nil)
		want, _ := TopLabelBins(rp, rl, k, nil, o)
		near(t, "resampled ECE", got.ECE(1), want.ECE(1), 1e-14)
		near(t, "resampled debiased", got.DebiasedL2(), want.DebiasedL2(), 1e-14)
		c, _ := AssignCells(probs, labels, k, nil, o)
		gc := c.Estimate(2, idx)
		wc, _ := Canonical(rp, rl, k, 2, nil, o)
		near(t, "resampled canonical", gc.Value, wc.Value, 1e-14)
		near(t, "resampled canonical MCE", gc.MCE, wc.MCE, 1e-14)
		if gc.Cells != wc.Cells {
			t.Errorf("cells %d, want %d", gc.Cells, wc.Cells)
		}
		ks := NewSortedKS(sc, oc, nil).KSResample(Counts(n, idx))
		rs, ro := TopR(rp, rl, k, 1)
		wks, _ := KS(rs, ro, false, nil)
		near(t, "resampled KS", ks, wks, 1e-14)
	}
}
