package synth

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
)

// TestDirichletMoments: Dirichlet(alpha 1_K) draws have coordinate means
// 1/K and variances (1/K)(1 - 1/K)/(K alpha + 1), within 5 standard
// errors over 40,000 draws, for flat and sharp alpha (0.02 exercises the
// boost of Marsaglia and Tsang's method); rows sum to 1.
func TestDirichletMoments(t *testing.T) {
	const n = 40000
	for _, c := range []struct {
		k     int
		alpha float64
	}{{2, 1}, {5, 0.3}, {20, 0.05}, {10, 2.5}, {50, 0.02}} {
		x := Dirichlet(make([]float64, n*c.k), c.k, c.alpha, rand.New(rand.NewPCG(1, uint64(c.k))))
		m := 1 / float64(c.k)
		wantVar := m * (1 - m) / (float64(c.k)*c.alpha + 1)
		for j := 0; j < min(c.k, 3); j++ {
			var s, ss float64
			for i := 0; i < n; i++ {
				v := x[i*c.k+j]
				s += v
				ss += (v - m) * (v - m)
			}
			mean, v := s/n, ss/n
			if math.Abs(mean-m) > 5*math.Sqrt(wantVar/n) {
				t.Errorf("K = %d, alpha %g, coordinate %d: mean %v, want %v", c.k, c.alpha, j, mean, m)
			}
			// The variance's standard error: sqrt((mu4 - var^2)/n) < sqrt(mu4/n), mu4 <= var (values in [0, 1]).
			if math.Abs(v-wantVar) > 5*math.Sqrt(wantVar/n) {
				t.Errorf("K = %d, alpha %g, coordinate %d: variance %v, want %v", c.k, c.alpha, j, v, wantVar)
			}
		}
		for i := 0; i < n; i++ {
			s := 0.0
			for _, v := range x[i*c.k : (i+1)*c.k] {
				s += v
			}
			if math.Abs(s-1) > 1e-12 {
				t.Fatalf("row %d sums to %v", i, s)
			}
		}
	}
}

// TestFamilyReport: each miscalibration's closed form on one row, and
// the ground truths of closed form: calibrated 0; smoothing eps at K = 2,
// Dir(1), CE_1 = eps E|2h - 1| = eps / 2; split and one class on rows of
// closed form; the ECE^KDE paper's setting as
// a Family equals Setup's truth (same distribution, other draws) within
// 4 standard errors.
func TestFamilyReport(t *testing.T) {
	h := []float64{0.5, 0.3, 0.2}
	near := func(a, b []float64) bool {
		for i := range a {
			if math.Abs(a[i]-b[i]) > 1e-15 {
				return false
			}
		}
		return true
	}
	z := math.Pow(0.5, 2) + math.Pow(0.3, 2) + math.Pow(0.2, 2)
	if got := (Family{K: 3, Miscalibration: Tempering, Param: 0.5}).Report(nil, h); !near(got, []float64{0.25 / z, 0.09 / z, 0.04 / z}) {
		t.Errorf("temperature: %v", got)
	}
	if got := (Family{K: 3, Miscalibration: Smoothing, Param: 0.3}).Report(nil, h); !near(got, []float64{0.35 + 0.1, 0.21 + 0.1, 0.14 + 0.1}) {
		t.Errorf("smoothing: %v", got)
	}
	ps := Family{K: 3, Miscalibration: PriorShift, Param: 0.8, Seed: 4}
	w := ps.weights()
	got := ps.Report(nil, h)
	for j := range h {
		// f_j / f_0 = h_j w_j / (h_0 w_0)
		if r := got[j] / got[0]; math.Abs(r-h[j]*math.Exp(w[j])/(h[0]*math.Exp(w[0]))) > 1e-12 {
			t.Errorf("prior shift: %v (log w %v)", got, w)
		}
	}
	// Split: the temperature Param where the top class is among the first
	// ceil(K/2) (class 0 of 3 here), 1 / Param elsewhere (class 2 of 3).
	sp := Family{K: 3, Miscalibration: Split, Param: 0.5}
	if got := sp.Report(nil, h); !near(got, []float64{0.25 / z, 0.09 / z, 0.04 / z}) {
		t.Errorf("split, top class 0: %v", got)
	}
	hs := []float64{0.2, 0.16, 0.64} // top class 2: temperature 2, f_j proportional to sqrt(h_j)
	zs := math.Sqrt(0.2) + 0.4 + 0.8
	if got := sp.Report(nil, hs); !near(got, []float64{math.Sqrt(0.2) / zs, 0.4 / zs, 0.8 / zs}) {
		t.Errorf("split, top class 2: %v", got)
	}
	// OneClass: f proportional to (h_0^(1/Param), h_1, h_2).
	zo := math.Sqrt(0.5) + 0.5
	if got := (Family{K: 3, Miscalibration: OneClass, Param: 2}).Report(nil, h); !near(got, []float64{math.Sqrt(0.5) / zo, 0.3 / zo, 0.2 / zo}) {
		t.Errorf("one class: %v", got)
	}
	ctx := context.Background()
	cal, err := (Family{K: 5, Alpha: 0.5, Miscalibration: Calibrated}).GroundTruth(ctx, 1, 10000, 1, 0)
	if err != nil || cal.Value != 0 {
		t.Errorf("calibrated: %v, %v", cal, err)
	}
	sm, err := (Family{K: 2, Alpha: 1, Miscalibration: Smoothing, Param: 0.1}).GroundTruth(ctx, 1, 200000, 1, 0)
	if err != nil || math.Abs(sm.Value-0.05) > 4*sm.SE {
		t.Errorf("smoothing 0.1, K = 2: %v, want 0.05", sm)
	}
	paper, err := (Family{K: 4, Alpha: 1, T1: 0.6, Miscalibration: Tempering, Param: 0.6}).GroundTruth(ctx, 1, 200000, 2, 0)
	ref := Paper(4).GroundTruth(1, 200000, 3, 0)
	if err != nil || math.Abs(paper.Value-ref.Value) > 4*math.Hypot(paper.SE, ref.SE) {
		t.Errorf("the paper's setting: family %v, Setup %v", paper, ref)
	}
	if _, err := (Family{K: 3, Alpha: 1, Miscalibration: "nope"}).GroundTruth(ctx, 1, 100, 1, 0); err == nil {
		t.Error("an unknown miscalibration gave no error")
	}
}

// TestDistortionTruths: the Monte Carlo L1 truths of the variational
// paper's settings (Dir(0.5)) agree with the truths its results print
// (ERT_L1_ECE_TRUE, the mean over its seeds of 100,000-draw Monte Carlo
// values: experiment/published/variational_paper.csv) within 0.003 (their
// own spread is about 0.002): the settings are the paper's.
func TestDistortionTruths(t *testing.T) {
	for _, c := range []struct {
		h     string
		k     int
		truth float64
	}{
		{"harmonic_distortion_mc", 3, 0.160681}, {"harmonic_distortion_mc", 10, 0.248780},
		{"overconfident_mc", 3, 0.441170}, {"overconfident_mc", 10, 0.573271},
		{"underconfident_mc", 3, 0.247840}, {"underconfident_mc", 10, 0.456268},
		{"perfectly_calibrated_mc", 10, 0},
	} {
		g, err := Distortion{K: c.k, Alpha: 0.5, H: c.h}.GroundTruth(context.Background(), 1, 200000, 1, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s K = %d: %v, paper %v", c.h, c.k, g, c.truth)
		if math.Abs(g.Value-c.truth) > 0.003 {
			t.Errorf("%s K = %d: %v, the paper prints %v", c.h, c.k, g, c.truth)
		}
	}
}
