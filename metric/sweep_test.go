package metric

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// The inputs of robustness_metrics' GeneralCalibrationErrorTest
// (robustness_metrics/metrics/uncertainty_test.py @93ac2c2).
var (
	rmProbs = [][]float64{{0.42610548, 0.41748077, 0.15641374}, {0.44766216, 0.47721294, 0.0751249},
		{0.1862702, 0.15139402, 0.66233578}, {0.05753544, 0.8561222, 0.08634236}, {0.18697925, 0.29836466, 0.51465609}}
	rmLabels = []float64{0, 1, 2, 1, 2}
)

// TestSweepRobustnessMetrics checks the sweeps against test_monotonic of
// robustness_metrics: _em_monotonic_sweep(probs.max(axis=1), labels)
// returns [0,0,1,1,0] and _ew_monotonic_sweep [0,0,1,1,1] (the labels
// are the raw classes 0, 1, 2 there, not correctness).
func TestSweepRobustnessMetrics(t *testing.T) {
	top := make([]float64, len(rmProbs))
	for i, r := range rmProbs {
		top[i] = slices.Max(r)
	}
	for _, c := range []struct {
		b    Binning
		want []int
	}{{EqualMass, []int{0, 0, 1, 1, 0}}, {EqualWidth, []int{0, 0, 1, 1, 1}}} {
		s, err := MonotonicSweep(top, rmLabels, nil, c.b)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(s.Assign, c.want) {
			t.Errorf("%v: %v, want %v", c.b, s.Assign, c.want)
		}
	}
}

// bruteSweep is the sweep as caltrain writes it: every assignment
// computed point by point, the monotonicity checked on np.mean of each
// bin.
func bruteSweep(scores, outcomes []float64, binning Binning) []int {
	n := len(scores)
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case scores[a] < scores[b]:
			return -1
		case scores[a] > scores[b]:
			return 1
		}
		return 0
	})
	assign := func(b int) []int {
		out := make([]int, n)
		if binning == EqualMass {
			for r, i := range order {
				out[i] = min(b-1, int(math.Floor(float64(r)/float64(n)*float64(b))))
			}
		} else {
			for i, x := range scores {
				out[i] = min(b-1, int(math.Floor(x*float64(b))))
			}
		}
		return out
	}
	mono := func(b int, a []int) bool {
		last := -1000.0
		for k := 0; k < b; k++ {
			s, c := 0.0, 0
			for i, v := range a {
				if v == k {
					s += outcomes[i]
					c++
				}
			}
			if c > 0 {
				if m := s / float64(c); m < last {
					return false
				} else {
					last = m
				}
			}
		}
		return true
	}
	prev := make([]int, n)
	for b := 2; b < n; b++ {
		a := assign(b)
		if !mono(b, a) {
			return prev
		}
		prev = a
	}
	return prev
}

// TestSweepBrute checks MonotonicSweep against the point-by-point sweep
// on random sets: miscalibrated, calibrated, with ties, tiny.
func TestSweepBrute(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 300 {
		n := 1 + r.IntN(300)
		scores, outcomes := make([]float64, n), make([]float64, n)
		for i := range scores {
			scores[i] = r.Float64()
			if trial%3 == 0 {
				scores[i] = float64(r.IntN(7)) / 6 // ties and exact edges
			}
			p := scores[i]
			if trial%2 == 0 {
				p = p * p
			}
			if r.Float64() < p {
				outcomes[i] = 1
			}
		}
		for _, b := range []Binning{EqualMass, EqualWidth} {
			s, err := MonotonicSweep(scores, outcomes, nil, b)
			if err != nil {
				t.Fatal(err)
			}
			if want := bruteSweep(scores, outcomes, b); !slices.Equal(s.Assign, want) {
				t.Fatalf("trial %d n %d %v: %v, want %v", trial, n, b, s.Assign, want)
			}
		}
	}
}

// TestSweepECE checks the value on a hand case and the weights: zero
// weights remove rows, integer weights count as copies.
func TestSweepECE(t *testing.T) {
	// 4 points, equal-width: B = 2 gives bins {0.1, 0.2} and {0.7, 0.9}
	// with means 0 and 1 (monotone), B = 3 {0.1, 0.2}, {}, {0.7, 0.9}:
	// monotone (the sweep stops at n - 1 = 3).
	scores, outcomes := []float64{0.1, 0.2, 0.7, 0.9}, []float64{0, 0, 1, 1}
	v, s, err := SweepECE(scores, outcomes, nil, EqualWidth, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := 0.5*0.15 + 0.5*(1-0.8) // bins {0.1,0.2} and {0.7,0.9}
	if s.Bins != 3 || math.Abs(v-want) > 1e-15 {
		t.Errorf("hand case: %v with %d bins, want %v with 3", v, s.Bins, want)
	}
	// Every top-label prediction of robustness_metrics' test_sweep is
	// right: the error is 1 - mean(max prob) = 0.412713502 whatever the
	// bins.
	top, cor := make([]float64, len(rmProbs)), make([]float64, len(rmProbs))
	for i, r := range rmProbs {
		top[i], cor[i] = slices.Max(r), 1
	}
	for _, b := range []Binning{EqualMass, EqualWidth} {
		v, _, err := SweepECE(top, cor, nil, b, 1)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(v-0.412713502) > 1e-9 {
			t.Errorf("test_sweep %v: %.10f, want 0.412713502", b, v)
		}
	}
	r := rand.New(rand.NewPCG(5, 6))
	n := 200
	sc, oc, w := make([]float64, n), make([]float64, n), make([]float64, n)
	var ks, ko []float64
	for i := range sc {
		sc[i] = r.Float64()
		if r.Float64() < sc[i]*0.8 {
			oc[i] = 1
		}
		w[i] = float64(r.IntN(3))
		if w[i] > 0 {
			ks, ko = append(ks, sc[i]), append(ko, oc[i])
		}
	}
	w01 := make([]float64, n)
	for i := range w {
		w01[i] = min(w[i], 1)
	}
	for _, b := range []Binning{EqualMass, EqualWidth} {
		a, sa, _ := SweepECE(sc, oc, w01, b, 2)
		k, sk, _ := SweepECE(ks, ko, nil, b, 2)
		if a != k || sa.Bins != sk.Bins {
			t.Errorf("%v: zero weights %v (%d bins), rows removed %v (%d bins)", b, a, sa.Bins, k, sk.Bins)
		}
	}
}

// TestSweepSortedOutcomes: outcomes that never decrease along the scores
// (a perfect model) take the shortcut to B = n - 1, as the brute force
// reaches it.
func TestSweepSortedOutcomes(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	for _, n := range []int{3, 10, 257} {
		sc, oc := make([]float64, n), make([]float64, n)
		for i := range sc {
			sc[i] = r.Float64()
			oc[i] = 1
		}
		oc[0] = 0
		if sc[0] > sc[1] { // the one wrong prediction has the lowest score
			sc[0], sc[1] = sc[1], sc[0]
		}
		for i := range sc {
			if sc[i] < sc[0] {
				sc[0], sc[i] = sc[i], sc[0]
			}
		}
		for _, b := range []Binning{EqualMass, EqualWidth} {
			s, err := MonotonicSweep(sc, oc, nil, b)
			if err != nil {
				t.Fatal(err)
			}
			if want := bruteSweep(sc, oc, b); s.Bins != n-1 || !slices.Equal(s.Assign, want) {
				t.Errorf("n %d %v: %d bins, %v; brute %v", n, b, s.Bins, s.Assign, want)
			}
		}
	}
}
