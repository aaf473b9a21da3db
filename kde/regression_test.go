package kde

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/calib-dev/calib/data"
)

// TestRegressionBruteForce compares Regression with the brute-force kernel
// sums (bruteLogDirichlet, over all samples) at random interior queries, at
// the samples themselves and at a vertex (relative 1e-12), for K = 2, 3, 5.
func TestRegressionBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 9))
	for _, k := range []int{2, 3, 5} {
		for _, h := range []float64{0.01, 0.1, 0.5} {
			probs, labels := randomSet(rng, 300, k, 2)
			q, _ := randomSet(rng, 40, k, 1.5)
			q = append(q, probs[:10*k]...)
			vertex := make([]float64, k)
			vertex[0] = 1
			q = append(q, vertex...)
			r, ld, undef, err := Regression(context.Background(), q, probs, labels, k, nil, Options{Bandwidth: h, Workers: 3})
			if err != nil {
				t.Fatal(err)
			}
			m := len(q) / k
			wantUndef := 0
			for j := 0; j < m; j++ {
				x := q[j*k : (j+1)*k]
				lk := make([]float64, len(labels))
				mx := math.Inf(-1)
				for i := range labels {
					lk[i] = bruteLogDirichlet(x, probs[i*k:(i+1)*k], h)
					mx = math.Max(mx, lk[i])
				}
				if math.IsInf(mx, -1) {
					wantUndef++
					if !math.IsNaN(r[j*k]) || !math.IsInf(ld[j], -1) {
						t.Errorf("K %d h %v query %d: zero density but r %v, log density %v", k, h, j, r[j*k:(j+1)*k], ld[j])
					}
					continue
				}
				want := make([]float64, k)
				tot := 0.0
				for i, y := range labels {
					w := math.Exp(lk[i] - mx)
					want[y] += w
					tot += w
				}
				for l := range want {
					want[l] /= tot
					if d := math.Abs(r[j*k+l] - want[l]); d > 1e-12*math.Max(want[l], 1e-3) {
						t.Errorf("K %d h %v query %d class %d: %v, brute force %v", k, h, j, l, r[j*k+l], want[l])
					}
				}
				wd := mx + math.Log(tot/float64(len(labels)))
				if math.Abs(ld[j]-wd) > 1e-10*math.Max(1, math.Abs(wd)) {
					t.Errorf("K %d h %v query %d: log density %v, brute force %v", k, h, j, ld[j], wd)
				}
			}
			if undef != wantUndef {
				t.Errorf("K %d h %v: %d undefined, brute force %d", k, h, undef, wantUndef)
			}
		}
	}
}

// TestRegressionCalibrated: on perfectly calibrated synthetic data (labels
// drawn from the predictions), r(x) approaches x: at n = 20,000, K = 3 and
// h = 0.02, the mean |r(x) - x|_1 over 500 of the samples' own points is
// below 0.045 (measured 0.036: smoothing bias and noise), while for labels
// drawn from a sharpened distribution (logits doubled) it is above 0.2
// (measured 0.27).
func TestRegressionCalibrated(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	const n, k = 20000, 3
	probs, labels := make([]float64, n*k), make([]int, n)
	sharp := make([]int, n)
	z, q := make([]float64, k), make([]float64, k)
	draw := func(p []float64) int {
		u, acc := rng.Float64(), 0.0
		for m, v := range p {
			if acc += v; u < acc {
				return m
			}
		}
		return len(p) - 1
	}
	for j := 0; j < n; j++ {
		for m := range z {
			z[m] = 1.5 * rng.NormFloat64()
		}
		p := probs[j*k : (j+1)*k]
		data.Softmax(p, z)
		labels[j] = draw(p)
		for m := range z {
			z[m] *= 2
		}
		data.Softmax(q, z)
		sharp[j] = draw(q)
	}
	queries := probs[:500*k]
	for _, tc := range []struct {
		name   string
		labels []int
		lo, hi float64
	}{{"calibrated", labels, 0, 0.045}, {"sharpened labels", sharp, 0.2, 2}} {
		r, _, undef, err := Regression(context.Background(), queries, probs, tc.labels, k, nil, Options{Bandwidth: 0.02})
		if err != nil || undef != 0 {
			t.Fatal(err, undef)
		}
		mean := 0.0
		for i, v := range queries {
			mean += math.Abs(r[i]-v) / 500
		}
		t.Logf("%s: mean |r(x) - x|_1 %.4f", tc.name, mean)
		if mean < tc.lo || mean > tc.hi {
			t.Errorf("%s: mean |r(x) - x|_1 = %v, want in [%v, %v]", tc.name, mean, tc.lo, tc.hi)
		}
	}
}

// TestScoreRegression checks the Beta-kernel curve against Regression on
// the two-column points and its input errors.
func TestScoreRegression(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	s, o := make([]float64, 200), make([]int, 200)
	for i := range s {
		s[i] = rng.Float64()
		if rng.Float64() < s[i] {
			o[i] = 1
		}
	}
	q := []float64{0.05, 0.5, 0.95}
	r, undef, err := ScoreRegression(context.Background(), q, s, o, nil, Options{Bandwidth: 0.05})
	if err != nil || undef != 0 {
		t.Fatal(err, undef)
	}
	two := make([]float64, 400)
	for i, v := range s {
		two[2*i], two[2*i+1] = 1-v, v
	}
	rr, _, _, err := Regression(context.Background(), []float64{0.95, 0.05, 0.5, 0.5, 0.05, 0.95}, two, o, 2, nil, Options{Bandwidth: 0.05})
	if err != nil {
		t.Fatal(err)
	}
	for i := range q {
		if r[i] != rr[2*i+1] || !(r[i] > 0 && r[i] < 1) {
			t.Errorf("query %v: %v, Regression %v", q[i], r[i], rr[2*i+1])
		}
	}
	if r[0] > r[2] {
		t.Errorf("curve not increasing on increasing data: %v", r)
	}
	if _, _, err := ScoreRegression(context.Background(), q, s, append(o[:199:199], 2), nil, Options{Bandwidth: 0.05}); err == nil {
		t.Error("outcome 2 accepted")
	}
	if _, _, err := ScoreRegression(context.Background(), []float64{1.5}, s, o, nil, Options{Bandwidth: 0.05}); err == nil {
		t.Error("query 1.5 accepted")
	}
	if _, _, err := ScoreRegression(context.Background(), q, s, o, nil, Options{}); err == nil {
		t.Error("zero bandwidth accepted")
	}
}
