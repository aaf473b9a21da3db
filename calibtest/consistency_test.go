package calibtest

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
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
		r, err := Consistency(context.Background(), p, y, 4, ece(t, p), ConsistencyOptions{Resamples: 199, Seed: uint64(d)})
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, r.P)
	}
	if dist := uniformDistance(ps); dist > 1.63/math.Sqrt(sets) {
		t.Errorf("KS distance of %d null p-values %.3f > %.3f", sets, dist, 1.63/math.Sqrt(sets))
	}
	p, y := dirichletRows(rand.New(rand.NewPCG(7, 31)), 2000, 4, false)
	a, err := Consistency(context.Background(), p, y, 4, ece(t, p), ConsistencyOptions{Resamples: 199, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if a.P >= 0.01 {
		t.Errorf("miscalibrated: p = %v (%d of %d resamples exceed)", a.P, a.Exceed, a.Resamples)
	}
	b, _ := Consistency(context.Background(), p, y, 4, ece(t, p), ConsistencyOptions{Resamples: 199, Workers: 3})
	if *a != *b {
		t.Errorf("3 workers %+v, 1 worker %+v", *b, *a)
	}
	if _, err := Consistency(context.Background(), p, y, 4, ece(t, p), ConsistencyOptions{Resamples: -1}); err == nil {
		t.Error("-1 resamples: no error")
	}
	// Rows that cannot be drawn from.
	for _, v := range []float64{-0.1, math.Inf(1), math.NaN()} {
		q := append([]float64(nil), p...)
		q[5*4+1] = v
		st := PerVector(func([]int) (float64, error) { return 0, nil }, 1)
		if _, err := Consistency(context.Background(), q, y, 4, st, ConsistencyOptions{Resamples: 9}); err == nil || !strings.Contains(err.Error(), "sample 5, class 1") {
			t.Errorf("probability %v: error %v", v, err)
		}
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

// The binary search of drawLabels finds the class of the linear scan, on
// cumulative rows with empty classes (flat steps), at the steps and beyond
// the total.
func TestSearchCumulative(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	for k := 1; k <= 40; k++ {
		row := make([]float64, k)
		for range 50 {
			s := 0.0
			for l := range row {
				if rng.IntN(3) > 0 {
					s += float64(rng.IntN(4)) / 4
				}
				row[l] = s
			}
			us := []float64{-1, 0, s, s + 1, rng.Float64() * s}
			us = append(us, row...)
			for _, u := range us {
				if got, want := searchCumulative(row, u), scanCumulative(row, u); got != want {
					t.Fatalf("row %v, u = %v: %d, scan %d", row, u, got, want)
				}
			}
		}
	}
}
