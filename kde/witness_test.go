package kde

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/calib-dev/calib/internal/mathx"
	"github.com/calib-dev/calib/internal/testenv"
	"github.com/calib-dev/calib/synth"
)

// bruteWitnessTerms returns the witness term, the CV term and the
// U-statistic term of every point at bandwidth h, straight from the
// formulas of kde.Witness's doc (U_j with the difference of squares).
func bruteWitnessTerms(probs []float64, labels []int, k int, h float64) (v1, cv, u []float64) {
	ones := make([]float64, len(labels))
	for i := range ones {
		ones[i] = 1
	}
	return bruteWeightedWitness(probs, labels, k, ones, h)
}

// TestWitnessBruteForce checks the streamed sweep (every grid bandwidth) and
// the U-statistic sweep against the direct formulas, and the estimates
// against the means of the direct terms.
func TestWitnessBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 1))
	const n, k = 300, 3
	probs, labels := randomSet(rng, n, k, 1.5)
	grid := []float64{0.01, 0.03, 0.1, 0.3, 1}
	pr := newProblem(probs, k, labels, k, nil, 2)
	e := residuals(probs, labels, k)
	sw := pr.residualSweep(grid, e, true)
	for g, h := range grid {
		v1, cv, u := bruteWitnessTerms(probs, labels, k, h)
		for j := 0; j < n; j++ {
			if !sw.defined[j] {
				t.Fatalf("point %d undefined", j)
			}
			if sw.v1[g*n+j] != v1[j] && math.Abs(sw.v1[g*n+j]-v1[j]) > 1e-12 {
				t.Errorf("h = %g, point %d: witness term %v, brute force %v", h, j, sw.v1[g*n+j], v1[j])
			}
			if d := math.Abs(sw.cv[g*n+j] - cv[j]); d > 1e-10*(1+math.Abs(cv[j])) {
				t.Errorf("h = %g, point %d: CV term %v, brute force %v", h, j, sw.cv[g*n+j], cv[j])
			}
		}
		us, ok := pr.uStatistic(h, e)
		for j := 0; j < n; j++ {
			if !ok[j] || !sw.uok[g*n+j] {
				t.Fatalf("h = %g: U-statistic of point %d undefined", h, j)
			}
			if d := math.Abs(us[j] - u[j]); d > 1e-9*(1+math.Abs(u[j])) {
				t.Errorf("h = %g, point %d: U-statistic term %v, brute force %v", h, j, us[j], u[j])
			}
			if sw.u[g*n+j] != us[j] {
				t.Errorf("h = %g, point %d: U-statistic term of the grid sweep %v, of the single sweep %v", h, j, sw.u[g*n+j], us[j])
			}
		}
	}

	res, err := Witness(context.Background(), probs, labels, k, nil, WitnessOptions{Grid: grid, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	// p = 2: the U-statistic at half the CV maximiser.
	cvMeans := make([]float64, len(grid))
	for g, h := range grid {
		_, cv, _ := bruteWitnessTerms(probs, labels, k, h)
		cvMeans[g] = mean(cv)
	}
	hcv := grid[mathx.Argmax(cvMeans)]
	_, _, u := bruteWitnessTerms(probs, labels, k, hcv/2)
	v := res.Values[1]
	if v.P != 2 || v.CVBandwidth != hcv || v.Bandwidth != hcv/2 {
		t.Fatalf("p = 2: P %v, h_cv %v (want %v), h %v", v.P, v.CVBandwidth, hcv, v.Bandwidth)
	}
	if want := mean(u); math.Abs(v.Value-want) > 1e-10 {
		t.Errorf("p = 2 estimate %v, brute force %v", v.Value, want)
	}
	if want := math.Sqrt(math.Max(0, v.Value)); v.Root != want {
		t.Errorf("p = 2 root %v, want %v", v.Root, want)
	}
	for g := range grid {
		if math.Abs(v.Curve[g]-cvMeans[g]) > 1e-12 {
			t.Errorf("CV(h = %g) = %v, brute force %v", grid[g], v.Curve[g], cvMeans[g])
		}
	}
}

func mean(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

// TestCrossFit checks the cross-fitted witness against its definition: for
// an even number of points, the mean of the per-point terms equals the
// average over splits of (mean_A V(h_B) + mean_B V(h_A)) / 2, recomputed
// here from the same permutations.
func TestCrossFit(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	const n, ng, splits = 40, 6, 7
	v := make([]float64, n*ng)
	for i := range v {
		v[i] = rng.NormFloat64() + 0.1*float64(i/n) // later bandwidths slightly better
	}
	defined := make([]bool, n)
	for j := range defined {
		defined[j] = true
	}
	terms, _ := crossFit(v, defined, nil, n, ng, splits, 11)
	halfMean := func(idx []int, g int) float64 {
		s := 0.0
		for _, j := range idx {
			s += v[g*n+j]
		}
		return s / float64(len(idx))
	}
	want := 0.0
	for s := 0; s < splits; s++ {
		perm := rand.New(rand.NewPCG(11, uint64(s))).Perm(n)
		a, b := perm[:n/2], perm[n/2:]
		best := func(idx []int) int {
			bg := 0
			for g := 1; g < ng; g++ {
				if halfMean(idx, g) > halfMean(idx, bg) {
					bg = g
				}
			}
			return bg
		}
		want += (halfMean(a, best(b)) + halfMean(b, best(a))) / 2
	}
	want /= splits
	if got := mean(terms); math.Abs(got-want) > 1e-12 {
		t.Errorf("cross-fitted witness %v, definition %v", got, want)
	}
}

// TestWitnessDeterminism checks bit-identical results for any number of
// workers, and that the seed changes only the cross-fitting.
func TestWitnessDeterminism(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	probs, labels := randomSet(rng, 700, 5, 2)
	var ref *WitnessResult
	for _, w := range []int{1, 2, 5} {
		res, err := Witness(context.Background(), probs, labels, 5, nil, WitnessOptions{Workers: w, Seed: 9})
		if err != nil {
			t.Fatal(err)
		}
		if ref == nil {
			ref = res
			continue
		}
		for i := range res.Values {
			a, b := res.Values[i], ref.Values[i]
			if a.Value != b.Value || a.Bandwidth != b.Bandwidth || !slices.Equal(a.Terms, b.Terms) {
				t.Errorf("workers %d, p = %v: %v (h %v), workers 1: %v (h %v)", w, a.P, a.Value, a.Bandwidth, b.Value, b.Bandwidth)
			}
		}
	}
	other, err := Witness(context.Background(), probs, labels, 5, nil, WitnessOptions{Seed: 10})
	if err != nil {
		t.Fatal(err)
	}
	if other.Values[1].Value != ref.Values[1].Value {
		t.Errorf("p = 2 depends on the seed: %v and %v", other.Values[1].Value, ref.Values[1].Value)
	}
}

// TestWitnessErrors checks the input errors.
func TestWitnessErrors(t *testing.T) {
	probs := []float64{0.2, 0.8, 0.5, 0.5, 0.9, 0.1}
	labels := []int{1, 0, 0}
	for name, o := range map[string]WitnessOptions{
		"p = 3":           {P: []float64{3}},
		"empty grid":      {Grid: []float64{}},
		"decreasing grid": {Grid: []float64{0.1, 0.01}},
		"bad bandwidth":   {Grid: []float64{-1}},
		"negative splits": {Splits: -1},
		"bad scale":       {P2Scale: math.Inf(1)},
	} {
		if _, err := Witness(context.Background(), probs, labels, 2, nil, o); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := Witness(context.Background(), probs[:2], labels[:1], 2, nil, WitnessOptions{}); err == nil {
		t.Error("one sample: no error")
	}
	if _, err := Witness(context.Background(), []float64{0.2, 0.8, math.NaN(), 0.5}, []int{0, 1}, 2, nil, WitnessOptions{}); err == nil {
		t.Error("NaN: no error")
	}
}

// witnessRuns returns the p = 1 and p = 2 estimates of reps independent
// draws of n points from a synthetic setup.
func witnessRuns(t *testing.T, su synth.Setup, n, reps int) (v1, v2 []float64) {
	t.Helper()
	for r := 0; r < reps; r++ {
		f, y, _ := su.Draw(n, rand.New(rand.NewPCG(uint64(r), uint64(n))))
		res, err := Witness(context.Background(), f, y, su.K, nil, WitnessOptions{Seed: uint64(r)})
		if err != nil {
			t.Fatal(err)
		}
		v1 = append(v1, res.Values[0].Value)
		v2 = append(v2, res.Values[1].Value)
	}
	return v1, v2
}

// meanSE returns the mean and its standard error.
func meanSE(x []float64) (m, se float64) {
	m = mean(x)
	ss := 0.0
	for _, v := range x {
		ss += (v - m) * (v - m)
	}
	return m, math.Sqrt(ss / float64(len(x)-1) / float64(len(x)))
}

// TestWitnessGroundTruth checks the estimators against the Monte Carlo
// ground truth of synthetic setups (synth.Setup, the ECE^KDE paper's
// experiment; truth from 10^6 samples, SE below 1e-4, or 2 x 10^5 by
// default, SE below 3e-4):
//   - the lower-bound property of the witness: the mean over 8 draws of
//     V1 is at most CE_1 + 2 SE, on three settings at n = 1,000 (where the
//     plug-in ECE^KDE reads 2 to 3 x the truth), and it is not trivially
//     low: above 0.6 x the truth;
//   - calibrated predictions (t2 = 1): |mean V1| <= 0.02 and
//     |mean CE_2^2 estimate| <= 0.002 at n = 2,000 (the plug-in reads about
//     0.5 there);
//   - p = 2 within 15 % of the truth (mean of 3 draws, K = 4) on the
//     paper's setting and on (1, 2): at n = 5,000 with CALIB_THOROUGH=1
//     (testenv.Thorough), at n = 2,000 by default. The mean of 3 draws has
//     about the same relative SE at both sizes (4 to 7 %); measured at
//     n = 2,000: 1.02 and 0.90 x the truth, at n = 5,000: 0.92 and 1.06.
func TestWitnessGroundTruth(t *testing.T) {
	if testing.Short() {
		t.Skip("about 10 s; 25 s with CALIB_THOROUGH=1")
	}
	truthSamples, n2 := 200_000, 2000
	if testenv.Thorough() {
		truthSamples, n2 = 1_000_000, 5000
	}
	for _, su := range []synth.Setup{{K: 4, T1: 0.6, T2: 0.6}, {K: 4, T1: 1, T2: 2}, {K: 8, T1: 0.6, T2: 0.6}} {
		truth := su.GroundTruth(1, truthSamples, 1, 0).Value
		v1, _ := witnessRuns(t, su, 1000, 8)
		m, se := meanSE(v1)
		t.Logf("%+v n = 1000: V1 %.4f +- %.4f, CE_1 %.4f (ratio %.3f)", su, m, se, truth, m/truth)
		if m > truth+2*se || m < 0.6*truth {
			t.Errorf("%+v: mean V1 %.4f +- %.4f, truth %.4f: want in [0.6 truth, truth + 2 SE]", su, m, se, truth)
		}
	}
	cal := synth.Setup{K: 4, T1: 0.6, T2: 1}
	v1, v2 := witnessRuns(t, cal, 2000, 6)
	m1, se1 := meanSE(v1)
	m2, se2 := meanSE(v2)
	t.Logf("calibrated n = 2000: V1 %.4f +- %.4f, CE_2^2 %.5f +- %.5f", m1, se1, m2, se2)
	if math.Abs(m1) > 0.02 || math.Abs(m2) > 0.002 {
		t.Errorf("calibrated predictions: V1 %.4f, CE_2^2 %.5f: want |V1| <= 0.02, |CE_2^2| <= 0.002", m1, m2)
	}
	for _, su := range []synth.Setup{{K: 4, T1: 0.6, T2: 0.6}, {K: 4, T1: 1, T2: 2}} {
		truth := su.GroundTruth(2, truthSamples, 1, 0).Value
		_, v2 := witnessRuns(t, su, n2, 3)
		m, se := meanSE(v2)
		t.Logf("%+v n = %d: CE_2^2 estimate %.5f +- %.5f, truth %.5f (ratio %.3f)", su, n2, m, se, truth, m/truth)
		if math.Abs(m/truth-1) > 0.15 {
			t.Errorf("%+v n = %d: mean CE_2^2 estimate %.5f, truth %.5f: want within 15 %%", su, n2, m, truth)
		}
	}
}
