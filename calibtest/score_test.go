package calibtest

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/calib-dev/calib/synth"
)

// TestScoreMoments: by enumeration of every label vector of 3 rows, K = 3
// (27 vectors weighted by their H0 probability): the temperature score S
// has mean 0 and variance sd^2, and S is the derivative of the
// log-likelihood of softmax(beta log f) at beta = 1 (central differences,
// 1e-6); the prior score's quadratic form has mean exactly K - 1.
func TestScoreMoments(t *testing.T) {
	const k = 3
	probs := []float64{0.7, 0.2, 0.1, 0.3, 0.3, 0.4, 0.05, 0.15, 0.8}
	var mean, m2, q float64
	for a := range k {
		for b := range k {
			for c := range k {
				y := []int{a, b, c}
				pr := probs[a] * probs[k+b] * probs[2*k+c]
				z, sd, err := TemperatureScore(probs, y, k)
				if err != nil {
					t.Fatal(err)
				}
				s := z * sd
				mean += pr * s
				m2 += pr * s * s
				x, err := PriorScore(probs, y, k)
				if err != nil {
					t.Fatal(err)
				}
				q += pr * x
				// The derivative of sum_i log softmax(beta u_i)_{y_i}.
				ll := func(beta float64) float64 {
					l := 0.0
					for i, yi := range y {
						row := probs[i*k : (i+1)*k]
						lse := 0.0
						for _, p := range row {
							lse += math.Exp(beta * math.Log(p))
						}
						l += beta*math.Log(row[yi]) - math.Log(lse)
					}
					return l
				}
				if d := (ll(1+1e-6) - ll(1-1e-6)) / 2e-6; math.Abs(d-s) > 1e-6 {
					t.Errorf("labels %v: score %v, derivative %v", y, s, d)
				}
			}
		}
	}
	_, sd, _ := TemperatureScore(probs, []int{0, 0, 0}, k)
	if math.Abs(mean) > 1e-12 || math.Abs(m2-sd*sd) > 1e-12 || math.Abs(q-(k-1)) > 1e-12 {
		t.Errorf("temperature score mean %v, variance %v (sd^2 %v); prior score mean %v, want %d", mean, m2, sd*sd, q, k-1)
	}
}

// TestScorePower: the score tests at K = 20, n = 5,000 (flat Dirichlet
// truths, synth): under H0 (calibrated) the two-sided |z| > 1.96 rate of
// the temperature score over 300 data sets is within 0.02 to 0.09 (its
// 5 % level; the binomial spread is 0.013) and the prior score's chi-square
// 95 % point (30.14 for 19 degrees of freedom) is passed at a rate within
// the same bounds; against a temperature of 1.1 the temperature score
// rejects in at least 90 % of 30 data sets, and against a prior shift
// (log-weights N(0, 0.15^2)) the prior score in at least 90 %.
func TestScorePower(t *testing.T) {
	if testing.Short() {
		t.Skip("330 data sets of 5,000 rows")
	}
	const k, n = 20, 5000
	rate := func(fam synth.Family, sets int, reject func(f []float64, y []int) bool) float64 {
		c := 0
		for s := range sets {
			f, y, _ := fam.Draw(n, rand.New(rand.NewPCG(uint64(s), 77)))
			if reject(f, y) {
				c++
			}
		}
		t.Logf("%v: %d of %d rejected", fam, c, sets)
		return float64(c) / float64(sets)
	}
	tempRejects := func(f []float64, y []int) bool {
		z, _, err := TemperatureScore(f, y, k)
		if err != nil {
			t.Fatal(err)
		}
		return math.Abs(z) > 1.959963984540054
	}
	priorRejects := func(f []float64, y []int) bool {
		x, err := PriorScore(f, y, k)
		if err != nil {
			t.Fatal(err)
		}
		return x > 30.1435
	}
	cal := synth.Family{K: k, Alpha: 1, Miscalibration: synth.Calibrated}
	if r := rate(cal, 300, tempRejects); r < 0.02 || r > 0.09 {
		t.Errorf("temperature score under H0: rejection rate %v", r)
	}
	if r := rate(cal, 300, priorRejects); r < 0.02 || r > 0.09 {
		t.Errorf("prior score under H0: rejection rate %v", r)
	}
	if r := rate(synth.Family{K: k, Alpha: 1, Miscalibration: synth.Tempering, Param: 1.1}, 30, tempRejects); r < 0.9 {
		t.Errorf("temperature score against T = 1.1: rejection rate %v", r)
	}
	if r := rate(synth.Family{K: k, Alpha: 1, Miscalibration: synth.PriorShift, Param: 0.15, Seed: 2}, 30, priorRejects); r < 0.9 {
		t.Errorf("prior score against a prior shift: rejection rate %v", r)
	}
	// Run's consistency-resampled p-value agrees with the asymptotic one.
	f, y, _ := synth.Family{K: k, Alpha: 1, Miscalibration: synth.Tempering, Param: 1.1}.Draw(n, rand.New(rand.NewPCG(1, 2)))
	rep, err := Run(context.Background(), f, y, k, nil, Options{Tests: []string{"temperature_score"}, Resamples: 999})
	if err != nil || len(rep.Tests) != 1 || !rep.Tests[0].Reject {
		t.Errorf("Run: %+v, %v", rep, err)
	}
}

// TestPriorScoreZeroMass: a class no row gives probability to is left out
// of the quadratic form (one-hot and zero columns do not make the
// covariance singular); observing it gives +Inf, which Run turns into the
// smallest p-value 1/(B + 1) (its resamples never draw it).
func TestPriorScoreZeroMass(t *testing.T) {
	probs := []float64{
		1, 0, 0, 0,
		0, 1, 0, 0,
		0.5, 0.5, 0, 0,
		0.2, 0.3, 0.5, 0,
		0.6, 0.2, 0.2, 0,
	}
	x, err := PriorScore(probs, []int{0, 1, 0, 2, 0}, 4)
	if err != nil || math.IsInf(x, 0) || math.IsNaN(x) || x < 0 {
		t.Errorf("zero column: %v, %v", x, err)
	}
	x, err = PriorScore(probs, []int{0, 1, 0, 3, 0}, 4)
	if err != nil || !math.IsInf(x, 1) {
		t.Errorf("a label of the zero column: %v, %v", x, err)
	}
	rep, err := Run(context.Background(), probs, []int{0, 1, 0, 3, 0}, 4, nil, Options{Tests: []string{"prior_score"}, Resamples: 99})
	if err != nil || rep.Tests[0].PValue != 0.01 || !rep.Tests[0].Reject {
		t.Fatalf("Run: %+v, %v", rep, err)
	}
	var b strings.Builder
	if err := rep.WriteJSON(&b); err != nil || !strings.Contains(b.String(), `"statistic": null`) {
		t.Errorf("JSON %s: %v", b.String(), err)
	}
}
