package metric

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/calib-dev/calib/internal/mathx"
)

// bruteATB integrates the definition over q on a fine midpoint grid:
// for each q the two bins' residual sums directly.
func bruteATB(r, y, w []float64, p float64, grid int) float64 {
	W := 0.0
	for i := range r {
		W += mathx.Weight(w, i)
	}
	s := 0.0
	for g := range grid {
		q := (float64(g) + 0.5) / float64(grid)
		var lo, hi float64
		for i := range r {
			d := mathx.Weight(w, i) * (r[i] - y[i])
			if r[i] < q {
				lo += d
			} else {
				hi += d
			}
		}
		s += math.Pow(math.Abs(lo), p) + math.Pow(math.Abs(hi), p)
	}
	return s / float64(grid) / math.Pow(W, p)
}

// TestATBBrute checks the sorted sweep against the definition integrated
// on a grid of 2e5 points (its error: the intervals that the grid cuts
// at each distinct score, at most n jumps of the integrand times 1/grid).
func TestATBBrute(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for trial := range 40 {
		n := 1 + r.IntN(40)
		sc, oc, w := make([]float64, n), make([]float64, n), make([]float64, n)
		for i := range sc {
			sc[i] = r.Float64()
			if trial%4 == 0 {
				sc[i] = float64(r.IntN(5)) / 4 // ties, 0 and 1
			}
			if r.Float64() < sc[i]*0.7 {
				oc[i] = 1
			}
			w[i] = float64(r.IntN(3))
		}
		w[0] = 1
		for _, weights := range [][]float64{nil, w} {
			for _, p := range []float64{1, 2, 3} {
				got, err := ATB(sc, oc, weights, p)
				if err != nil {
					t.Fatal(err)
				}
				const grid = 200000
				want := bruteATB(sc, oc, weights, p, grid)
				if d := math.Abs(got - want); d > 4*float64(n)/grid*math.Max(want, 1e-3) {
					t.Errorf("trial %d n %d p %v weighted %v: %v, brute %v", trial, n, p, weights != nil, got, want)
				}
			}
		}
	}
}

// TestATBHand: one score r with outcome y: for q <= r the right bin holds
// it, so ATB_2 = r (r - y)^2 + (1 - r) (r - y)^2 = (r - y)^2, and ATB_1 =
// |r - y|; two points 0.25 (y 0) and 0.75 (y 1): residuals 0.25 and
// -0.25, S = 0: ATB_2 = 0.5 (0.25^2 + 0.25^2) / 4 = 1/64.
func TestATBHand(t *testing.T) {
	for _, c := range []struct {
		r, y []float64
		p    float64
		want float64
	}{
		{[]float64{0.3}, []float64{1}, 2, 0.49},
		{[]float64{0.3}, []float64{1}, 1, 0.7},
		{[]float64{0.25, 0.75}, []float64{0, 1}, 2, 1.0 / 64},
		{[]float64{0.75, 0.25}, []float64{1, 0}, 1, 0.5 * 0.5 / 2},
	} {
		got, err := ATB(c.r, c.y, nil, c.p)
		if err != nil || math.Abs(got-c.want) > 1e-15 {
			t.Errorf("ATB(%v, %v, p=%v) = %v, %v; want %v", c.r, c.y, c.p, got, err, c.want)
		}
	}
	if _, err := ATB([]float64{1.5}, []float64{1}, nil, 2); err == nil {
		t.Error("score 1.5: no error")
	}
}

// TestATBTruthful checks Theorem 35 by Monte Carlo: outcomes drawn from
// the scores give E[ATB_2] = ATBBias (ATB_2(r, r) = 0), so ATB_2 -
// ATBBias averages 0; drawn from other probabilities the mean is
// ATB_2(r, p) + sum p (1 - p) / n^2.
func TestATBTruthful(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	const n, reps = 50, 20000
	r, p := make([]float64, n), make([]float64, n)
	for i := range r {
		r[i] = rng.Float64()
		p[i] = r[i] * r[i]
	}
	y := make([]float64, n)
	for _, c := range []struct{ truth []float64 }{{r}, {p}} {
		sum, sq := 0.0, 0.0
		for range reps {
			for i := range y {
				y[i] = 0
				if rng.Float64() < c.truth[i] {
					y[i] = 1
				}
			}
			v, _ := ATB(r, y, nil, 2)
			sum += v
			sq += v * v
		}
		mean := sum / reps
		se := math.Sqrt((sq/reps - mean*mean) / reps)
		base, _ := ATB(r, c.truth, nil, 2)
		want := base + ATBBias(c.truth, nil)
		if math.Abs(mean-want) > 4*se {
			t.Errorf("E[ATB_2] = %v +- %v, Theorem 35 gives %v", mean, se, want)
		}
	}
}

// TestATBResampleCounts: the presorted ATB of a resample's counts equals
// ATB of the resampled rows.
func TestATBResampleCounts(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	n := 300
	sc, oc, w := make([]float64, n), make([]float64, n), make([]float64, n)
	for i := range sc {
		sc[i] = float64(r.IntN(50)) / 49
		if r.Float64() < sc[i] {
			oc[i] = 1
		}
		w[i] = r.Float64()
	}
	a, err := NewSortedATB(sc, oc)
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		idx := make([]int, n)
		for j := range idx {
			idx[j] = r.IntN(n)
		}
		for _, weights := range [][]float64{nil, w} {
			got, err := a.Value(ResampleCounts(n, idx, weights), 2)
			if err != nil {
				t.Fatal(err)
			}
			want, err := ATB(Resample(sc, 1, idx), Resample(oc, 1, idx), Resample(weights, 1, idx), 2)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(got-want) > 1e-12*want {
				t.Errorf("weighted %v: counts %v, rows %v", weights != nil, got, want)
			}
		}
	}
}

// TestATBBiasCounts: the bias of a resample by counts equals the bias of
// the resampled rows.
func TestATBBiasCounts(t *testing.T) {
	sc := []float64{0.2, 0.5, 0.9, 0.7}
	w := []float64{1, 2, 0.5, 3}
	idx := []int{0, 0, 2, 3, 3, 3}
	got := ATBBiasCounts(sc, w, ResampleCounts(4, idx, nil))
	want := ATBBias(Resample(sc, 1, idx), Resample(w, 1, idx))
	if math.Abs(got-want) > 1e-15 {
		t.Errorf("counts %v, rows %v", got, want)
	}
}
