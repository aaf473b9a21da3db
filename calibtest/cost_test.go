package calibtest

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/floats/scalar"
)

// TestEstimateSeconds: every test has a cost model; the estimates grow
// with n, K and the resamples and shrink with the workers; and they read
// the figures measured on the reference machine (a 2-core 2.3 GHz AMD
// EPYC VM) within the factor of 2 the doc comment states: prior_score at
// n = 50, K = 10,000, B = 1,000 ran past 300 s (and is estimated at about
// 620 s on 2 workers), ece_witness at n = 10,000, K = 10 is about 25
// minutes by the figure of the issue that asked for the bound (here
// 2,200 s), prior_score at n = 100, K = 3,000, B = 200 took 11.8 s,
// ece_kde at n = 6,000, K = 10, B = 100 8.8 s and ks at n = 128,000,
// K = 10, B = 200 1.05 s (2 workers).
func TestEstimateSeconds(t *testing.T) {
	for _, test := range testNames {
		if _, ok := costModels[test]; !ok {
			t.Errorf("%s has no cost model", test)
			continue
		}
		base := EstimateSeconds(test, 2000, 10, 100, 1)
		if !(base > 0) {
			t.Errorf("%s: estimate %v at n = 2000, K = 10, B = 100", test, base)
		}
		if e := EstimateSeconds(test, 4000, 10, 100, 1); !(e > base) {
			t.Errorf("%s: twice the rows, estimate %v, not above %v", test, e, base)
		}
		if e := EstimateSeconds(test, 2000, 100, 100, 1); !(e > base) {
			t.Errorf("%s: ten times the classes, estimate %v, not above %v", test, e, base)
		}
		if e := EstimateSeconds(test, 2000, 10, 1000, 1); test != "skce" && !(e > base) {
			t.Errorf("%s: ten times the resamples, estimate %v, not above %v", test, e, base)
		}
		if e := EstimateSeconds(test, 2000, 10, 100, 4); !(e <= base) {
			t.Errorf("%s: four workers, estimate %v, above one's %v", test, e, base)
		}
	}
	if e := EstimateSeconds("nope", 10, 2, 0, 1); e != 0 {
		t.Errorf("unknown test: %v", e)
	}
	// 0 resamples means DefaultResamples.
	if a, b := EstimateSeconds("ece_bin", 1000, 10, 0, 2), EstimateSeconds("ece_bin", 1000, 10, DefaultResamples, 2); a != b {
		t.Errorf("0 resamples: %v, DefaultResamples: %v", a, b)
	}
	for _, c := range []struct {
		test           string
		n, k, b        int
		measured, tol  float64 // seconds on 2 workers; relative tolerance of the estimate
		lowerBoundOnly bool
	}{
		{"prior_score", 50, 10_000, 1000, 300, 0, true},
		{"ece_witness", 10_000, 10, 1000, 1500, 1, false},
		{"prior_score", 100, 3000, 200, 11.8, 1, false},
		{"ece_kde", 6000, 10, 100, 8.8, 1, false},
		{"ks", 128_000, 10, 200, 1.05, 1, false},
	} {
		e := EstimateSeconds(c.test, c.n, c.k, c.b, 2)
		if c.lowerBoundOnly {
			if !(e > c.measured) {
				t.Errorf("%s at n = %d, K = %d, B = %d: estimate %.3g s, want above the %g s it ran past", c.test, c.n, c.k, c.b, e, c.measured)
			}
			continue
		}
		if !(e >= c.measured/(1+c.tol) && e <= c.measured*(1+c.tol)) {
			t.Errorf("%s at n = %d, K = %d, B = %d: estimate %.3g s, measured %g s: want within a factor %g", c.test, c.n, c.k, c.b, e, c.measured, 1+c.tol)
		}
	}
	// The estimate in the message is rounded to two digits.
	if !scalar.EqualWithinRel(EstimateSeconds("prior_score", 50, 10_000, 1000, 2), 620, 0.05) {
		t.Errorf("prior_score at n = 50, K = 10,000: %v, want 620 s within 5 %% (the formula of docs/commands.md)", EstimateSeconds("prior_score", 50, 10_000, 1000, 2))
	}
}

// TestRunRefusesPastTheBound: a test named past Options.MaxSeconds is
// refused before any test runs, with a *CostError naming it and its
// estimate (wrapping ErrTooSlow); the same test from "all" is left out and
// named in the answer while the others run; +Inf lifts the bound, and a
// negative or NaN bound is refused by Validate.
func TestRunRefusesPastTheBound(t *testing.T) {
	const n, k = 300, 4
	rng := rand.New(rand.NewPCG(3, 4))
	p, y := make([]float64, n*k), make([]int, n)
	for i := range y {
		s := 0.0
		for j := range k {
			p[i*k+j] = rng.ExpFloat64()
			s += p[i*k+j]
		}
		for j := range k {
			p[i*k+j] /= s
		}
		y[i] = rng.IntN(k)
	}
	o := Options{Resamples: 19, Workers: 1}
	witness := EstimateSeconds("ece_witness", n, k, 19, 1)
	others := 0.0
	for _, test := range testNames {
		if test != "ece_witness" {
			others = math.Max(others, EstimateSeconds(test, n, k, 19, 1))
		}
	}
	if !(witness > others) {
		t.Fatalf("ece_witness's estimate %v is not the largest (%v): the test needs another set", witness, others)
	}
	o.MaxSeconds = (witness + others) / 2
	_, err := Run(context.Background(), p, y, k, nil, Options{Tests: []string{"ks", "ece_witness"}, Resamples: 19, Workers: 1, MaxSeconds: o.MaxSeconds})
	var ce *CostError
	if !errors.As(err, &ce) || !errors.Is(err, ErrTooSlow) || !slices.Equal(ce.Tests, []string{"ece_witness"}) || ce.Seconds[0] != witness ||
		ce.N != n || ce.K != k || ce.Resamples != 19 || ce.Workers != 1 || ce.MaxSeconds != o.MaxSeconds {
		t.Fatalf("named past the bound: error %v (%+v); want a *CostError for ece_witness alone", err, ce)
	}
	if msg := err.Error(); !strings.Contains(msg, "ece_witness would take about") || !strings.Contains(msg, "n = 300, K = 4, 19 resamples, 1 workers") {
		t.Errorf("message %q", msg)
	}
	o.Tests = []string{"all"}
	rep, err := Run(context.Background(), p, y, k, nil, o)
	if err != nil {
		t.Fatal(err)
	}
	var ran []string
	for _, r := range rep.Tests {
		if !slices.Contains(ran, r.Test) {
			ran = append(ran, r.Test)
		}
	}
	if want := slices.DeleteFunc(slices.Clone(testNames), func(s string) bool { return s == "ece_witness" }); !slices.Equal(ran, want) {
		t.Errorf("all: ran %v, want %v", ran, want)
	}
	if !strings.Contains(rep.Answer, "skipped: ece_witness (about") || !strings.Contains(rep.Answer, "past the bound of") {
		t.Errorf("all: answer %q does not name ece_witness as skipped for its estimate", rep.Answer)
	}
	rep, err = Run(context.Background(), p, y, k, nil, Options{Tests: []string{"ece_witness"}, Resamples: 19, Workers: 1, MaxSeconds: math.Inf(1)})
	if err != nil || len(rep.Tests) != 1 || rep.Tests[0].Test != "ece_witness" {
		t.Errorf("no bound: %v, %+v", err, rep)
	}
	for _, bad := range []float64{-1, math.NaN(), math.Inf(-1)} {
		if err := (Options{MaxSeconds: bad}).Validate(); err == nil || !strings.Contains(err.Error(), "MaxSeconds") {
			t.Errorf("MaxSeconds %v: %v", bad, err)
		}
	}
}
