package kde

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// scoreSample draws n scores in (0, 1) with density 2s and outcomes that
// are 1 with probability 0.3 + 0.4 s (the same variance at s and 1 - s),
// from PCG(seed, seed).
func scoreSample(n int, seed uint64) ([]float64, []int) {
	rng := rand.New(rand.NewPCG(seed, seed))
	sc, oc := make([]float64, n), make([]int, n)
	for i := range sc {
		sc[i] = math.Sqrt(rng.Float64())
		if rng.Float64() < 0.3+0.4*sc[i] {
			oc[i] = 1
		}
	}
	return sc, oc
}

// TestRegressionGrid checks the grid's ends and its constant ratio.
func TestRegressionGrid(t *testing.T) {
	g := RegressionGrid()
	if len(g) != 14 || g[0] != 0.002 || math.Abs(g[13]-0.1) > 1e-15 {
		t.Fatalf("grid %v", g)
	}
	for i := 1; i < len(g); i++ {
		if r := g[i] / g[i-1]; math.Abs(r-math.Pow(50, 1.0/13)) > 1e-12 {
			t.Errorf("ratio %d: %v", i, r)
		}
	}
	for _, c := range []struct {
		h    float64
		want int
	}{{g[0], -1}, {g[13], 1}, {g[5], 0}, {1, 1}, {1e-9, -1}} {
		if got := GridEdge(g, c.h); got != c.want {
			t.Errorf("GridEdge(%v) = %d, want %d", c.h, got, c.want)
		}
	}
	if GridEdge(nil, 1) != 0 {
		t.Error("empty grid: edge")
	}
}

// TestScoreRegressionBandwidth checks the cross-validated choice at the
// two ends of the grid (outcomes independent of the score: the smoothest
// curve wins; a sharp step: the narrowest kernel wins), its independence
// of the number of workers, and the refusal of fewer than 10 samples.
func TestScoreRegressionBandwidth(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	n := 3000
	flat, flatY := make([]float64, n), make([]int, n)
	step, stepY := make([]float64, n), make([]int, n)
	for i := 0; i < n; i++ {
		flat[i] = rng.Float64()
		if rng.Float64() < 0.3 {
			flatY[i] = 1
		}
		step[i] = rng.Float64()
		if step[i] > 0.5 {
			stepY[i] = 1
		}
	}
	g := RegressionGrid()
	if h, err := ScoreRegressionBandwidth(context.Background(), flat, flatY, nil, 0, 0); err != nil || h != g[len(g)-1] {
		t.Errorf("flat: h %v, err %v", h, err)
	}
	h1, err := ScoreRegressionBandwidth(context.Background(), step, stepY, nil, 0, 1)
	if err != nil || h1 != g[0] {
		t.Errorf("step: h %v, err %v", h1, err)
	}
	sc, oc := scoreSample(1500, 3)
	a, err := ScoreRegressionBandwidth(context.Background(), sc, oc, nil, 4, 1)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := ScoreRegressionBandwidth(context.Background(), sc, oc, nil, 4, 3); err != nil || b != a {
		t.Errorf("1 worker: h %v; 3 workers: %v (%v)", a, b, err)
	}
	if _, err := ScoreRegressionBandwidth(context.Background(), sc[:9], oc[:9], nil, 0, 0); err == nil {
		t.Error("9 samples: no error")
	}
}

// TestScoreRegressionBand checks the band of the Beta-kernel curve: the
// kernel matrix with every sample once is kde's own regression (the
// oracle: ScoreRegression), the band holds the curve and is narrower where
// samples are many, it is bit-identical for any number of workers and
// reproducible from the seed, and bad input is refused.
func TestScoreRegressionBand(t *testing.T) {
	sc, oc := scoreSample(2000, 11)
	h := 0.02
	q := make([]float64, 51)
	for i := range q {
		q[i] = 0.02 + 0.96*float64(i)/50
	}
	curve, _, err := ScoreRegression(context.Background(), q, sc, oc, nil, Options{Bandwidth: h})
	if err != nil {
		t.Fatal(err)
	}
	ones := make([]float64, len(sc))
	for i := range ones {
		ones[i] = 1
	}
	num, den := make([]float64, len(q)), make([]float64, len(q))
	betaKernels(q, sc, h).regress(ones, oc, num, den)
	for i := range q {
		if math.Abs(num[i]/den[i]-curve[i]) > 1e-9 {
			t.Errorf("query %v: kernel matrix %v, ScoreRegression %v", q[i], num[i]/den[i], curve[i])
		}
	}
	lo, hi, err := ScoreRegressionBand(context.Background(), q, sc, oc, nil, BandOptions{Bandwidth: h, Resamples: 100, Seed: 5, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	holds := 0
	for i := range q {
		if !(lo[i] <= hi[i]) {
			t.Fatalf("query %v: band [%v, %v]", q[i], lo[i], hi[i])
		}
		if lo[i]-1e-9 <= curve[i] && curve[i] <= hi[i]+1e-9 {
			holds++
		}
	}
	if holds < len(q)*9/10 {
		t.Errorf("the band holds the curve at %d of %d points", holds, len(q))
	}
	// Scores pile up near 1 (density 2s): the band is narrower there
	// than at the mirror point, where the outcome's variance is the same.
	if w1, w0 := hi[45]-lo[45], hi[5]-lo[5]; !(w1 < w0) {
		t.Errorf("band width %v near 0.9, %v near 0.1", w1, w0)
	}
	lo4, hi4, err := ScoreRegressionBand(context.Background(), q, sc, oc, nil, BandOptions{Bandwidth: h, Resamples: 100, Seed: 5, Workers: 4})
	if err != nil || !slices.Equal(lo, lo4) || !slices.Equal(hi, hi4) {
		t.Errorf("4 workers differ from 1 (err %v)", err)
	}
	lo6, _, err := ScoreRegressionBand(context.Background(), q, sc, oc, nil, BandOptions{Bandwidth: h, Resamples: 100, Seed: 6})
	if err != nil || slices.Equal(lo, lo6) {
		t.Errorf("seed 6 gives the band of seed 5 (err %v)", err)
	}
	// No kernel mass at 0 and 1 from scores strictly inside (0, 1) is
	// not possible; a query outside [0, 1] has none: NaN.
	l, u, err := ScoreRegressionBand(context.Background(), []float64{-0.5}, sc, oc, nil, BandOptions{Bandwidth: h, Resamples: 10})
	if err != nil || !math.IsNaN(l[0]) || !math.IsNaN(u[0]) {
		t.Errorf("query -0.5: [%v, %v], err %v", l[0], u[0], err)
	}
	for name, o := range map[string]BandOptions{"no bandwidth": {}, "level 1": {Bandwidth: h, Level: 1}, "negative resamples": {Bandwidth: h, Resamples: -1}} {
		if _, _, err := ScoreRegressionBand(context.Background(), q, sc, oc, nil, o); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, _, err := ScoreRegressionBand(context.Background(), q, sc, oc[:10], nil, BandOptions{Bandwidth: h}); err == nil {
		t.Error("length mismatch: no error")
	}
	bad := slices.Clone(oc)
	bad[3] = 2
	if _, _, err := ScoreRegressionBand(context.Background(), q, sc, bad, nil, BandOptions{Bandwidth: h}); err == nil {
		t.Error("outcome 2: no error")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := ScoreRegressionBand(ctx, q, sc, oc, nil, BandOptions{Bandwidth: h}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: err %v", err)
	}
}

// TestEstimateCurve checks that the curve is Estimate at each bandwidth
// (the oracle) and that more than one exponent or a bad bandwidth is
// refused.
func TestEstimateCurve(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	probs, labels := randomSet(rng, 300, 3, 1)
	hs := []float64{0.01, 0.05, 0.2}
	for _, notion := range []Notion{Canonical, TopLabel} {
		got, err := EstimateCurve(context.Background(), notion, probs, labels, 3, hs, nil, Options{P: []float64{2}, Workers: 2})
		if err != nil {
			t.Fatal(err)
		}
		for i, h := range hs {
			res, err := Estimate(context.Background(), notion, probs, labels, 3, nil, Options{Bandwidth: h, P: []float64{2}})
			if err != nil {
				t.Fatal(err)
			}
			if got[i] != res.Values[0].Value {
				t.Errorf("%s h = %v: curve %v, Estimate %v", notion, h, got[i], res.Values[0].Value)
			}
		}
	}
	if _, err := EstimateCurve(context.Background(), Canonical, probs, labels, 3, hs, nil, Options{P: []float64{1, 2}}); err == nil {
		t.Error("two exponents: no error")
	}
	if _, err := EstimateCurve(context.Background(), Canonical, probs, labels, 3, []float64{0.1, 0}, nil, Options{}); err == nil {
		t.Error("h = 0: no error")
	}
}
