package metric

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
)

// TestCenteredInterval: the centred interval is the percentile interval's
// spread moved to the estimate, so it contains the estimate even when every
// resampled value lies above it; its lower end is clamped at 0 for a
// non-negative statistic; Bias is mean(θ*) - θ̂.
func TestCenteredInterval(t *testing.T) {
	n := 50
	// A statistic whose resampled values all sit above the estimate 1.
	stat := func(idx []int) (float64, error) {
		d := 0
		seen := make([]bool, n)
		for _, i := range idx {
			if seen[i] {
				d++
			}
			seen[i] = true
		}
		return 1 + float64(d)/float64(n), nil // duplicates push it up
	}
	pct, err := Bootstrap(context.Background(), n, stat, BootstrapOptions{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if !(pct.Lo > 1) {
		t.Fatalf("test premise: the percentile interval [%v, %v] should miss the estimate 1", pct.Lo, pct.Hi)
	}
	c, err := Bootstrap(context.Background(), n, stat, BootstrapOptions{Seed: 3, Method: Centered, Estimate: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !(c.Lo <= 1 && 1 <= c.Hi) || c.Method != Centered {
		t.Errorf("centred interval [%v, %v] misses 1", c.Lo, c.Hi)
	}
	// Same spread as the percentile interval around the median.
	if w, wc := pct.Hi-pct.Lo, c.Hi-c.Lo; math.Abs(w-wc) > 1e-12 {
		t.Errorf("width %v, percentile %v", wc, w)
	}
	// Bias: about the expected duplicate share, n(1 - (1-1/n)^n)... here
	// d/n = 1 - (distinct/n) ≈ 1/e ≈ 0.368 at n = 50 (0.364).
	if math.Abs(c.Bias-0.364) > 0.02 {
		t.Errorf("bias %v, want about 0.364", c.Bias)
	}
	// Clamped at 0: estimate 0.01, resampled values 0.01 + [0, 0.1].
	c, err = Bootstrap(context.Background(), n, func(idx []int) (float64, error) { return 0.01 + 0.1*float64(idx[0])/float64(n), nil },
		BootstrapOptions{Seed: 3, Method: Centered, Estimate: 0.01})
	if err != nil || c.Lo != 0 || !(c.Hi > 0.01) {
		t.Errorf("clamp: [%v, %v], %v", c.Lo, c.Hi, err)
	}
	if _, err := Bootstrap(context.Background(), n, stat, BootstrapOptions{Method: IntervalMethod(7)}); err == nil {
		t.Error("unknown method accepted")
	}
}

// TestIntervalCoverage: on synthetic data with known truth, the 95 %
// intervals cover at about their level. Percentile interval of a mean
// (accuracy: Bernoulli(0.8), truth 0.8) covers the truth; the centred
// interval of the binned ECE covers the estimator's expectation at this n
// (E θ̂_n, by Monte Carlo), which is what it describes (not the biased-away
// population value). 300 data sets of n = 400, 200 resamples each: the
// coverage's standard error is about 0.013.
func TestIntervalCoverage(t *testing.T) {
	const reps, n = 300, 400
	draw := func(rng *rand.Rand) (s, o []float64) {
		s, o = make([]float64, n), make([]float64, n)
		for i := range s {
			s[i] = rng.Float64()
			if rng.Float64() < math.Pow(s[i], 1.5) { // miscalibrated: P(o = 1 | s) = s^1.5
				o[i] = 1
			}
		}
		return s, o
	}
	ece := func(s, o []float64, idx []int) float64 {
		if idx != nil {
			s, o = Resample(s, 1, idx), Resample(o, 1, idx)
		}
		b, err := BinScores(s, o, nil, BinOptions{Bins: 10})
		if err != nil {
			t.Fatal(err)
		}
		return b.ECE(1)
	}
	// E θ̂_n by Monte Carlo.
	rng := rand.New(rand.NewPCG(21, 0))
	mean := 0.0
	const mc = 3000
	for r := 0; r < mc; r++ {
		s, o := draw(rng)
		mean += ece(s, o, nil)
	}
	mean /= mc
	var coverMean, coverECE int
	for r := 0; r < reps; r++ {
		rng := rand.New(rand.NewPCG(22, uint64(r)))
		s, o := draw(rng)
		acc := make([]float64, n)
		for i := range acc {
			if rng.Float64() < 0.8 {
				acc[i] = 1
			}
		}
		m, err := Bootstrap(context.Background(), n, func(idx []int) (float64, error) {
			sum := 0.0
			for _, i := range idx {
				sum += acc[i]
			}
			return sum / n, nil
		}, BootstrapOptions{Seed: uint64(r), Workers: 1})
		if err != nil {
			t.Fatal(err)
		}
		if m.Lo <= 0.8 && 0.8 <= m.Hi {
			coverMean++
		}
		est := ece(s, o, nil)
		c, err := Bootstrap(context.Background(), n, func(idx []int) (float64, error) { return ece(s, o, idx), nil },
			BootstrapOptions{Seed: uint64(r), Workers: 1, Method: Centered, Estimate: est})
		if err != nil {
			t.Fatal(err)
		}
		if c.Lo <= mean && mean <= c.Hi {
			coverECE++
		}
	}
	cm, ce := float64(coverMean)/reps, float64(coverECE)/reps
	t.Logf("coverage: percentile (mean) %.3f, centred (binned ECE, E θ̂_n = %.4f) %.3f", cm, mean, ce)
	for name, c := range map[string]float64{"percentile": cm, "centred": ce} {
		if c < 0.90 || c > 0.99 {
			t.Errorf("%s coverage %.3f, want 0.95 within [0.90, 0.99]", name, c)
		}
	}
}
