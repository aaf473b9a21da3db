package calibtest

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/calib-dev/calib/metric"
)

// Consistency resampling holds its level and has power: the p-values of
// the binned ECE on 200 calibrated data sets (n = 500, K = 4, B = 199) are
// uniform (Kolmogorov-Smirnov distance below the 1 % critical value), the
// p-value on sharpened-truth rows at n = 2,000 is below 0.01, and the
// result is the same for any worker count.
func TestConsistency(t *testing.T) {
	const sets = 200
	var ps []float64
	for d := 0; d < sets; d++ {
		p, y := dirichletRows(rand.New(rand.NewPCG(uint64(d), 31)), 500, 4, true)
		r, err := Consistency(p, y, 4, ece(t, p), ConsistencyOptions{Resamples: 199, Seed: uint64(d)})
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, r.P)
	}
	if dist := uniformDistance(ps); dist > 1.63/math.Sqrt(sets) {
		t.Errorf("KS distance of %d null p-values %.3f > %.3f", sets, dist, 1.63/math.Sqrt(sets))
	}
	p, y := dirichletRows(rand.New(rand.NewPCG(7, 31)), 2000, 4, false)
	a, err := Consistency(p, y, 4, ece(t, p), ConsistencyOptions{Resamples: 199, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if a.P >= 0.01 {
		t.Errorf("miscalibrated: p = %v (%d of %d resamples exceed)", a.P, a.Exceed, a.Resamples)
	}
	b, _ := Consistency(p, y, 4, ece(t, p), ConsistencyOptions{Resamples: 199, Workers: 3})
	if *a != *b {
		t.Errorf("3 workers %+v, 1 worker %+v", *b, *a)
	}
	if _, err := Consistency(p, y, 4, ece(t, p), ConsistencyOptions{Resamples: -1}); err == nil {
		t.Error("-1 resamples: no error")
	}
}

// ece is the ece_bin test's statistic.
func ece(t *testing.T, p []float64) Statistic {
	t.Helper()
	st, err := BinnedECEStatistic(p, 4, 1, metric.BinOptions{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	return st
}
