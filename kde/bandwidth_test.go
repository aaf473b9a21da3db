package kde

import (
	"math"
	"testing"
)

// TestBrentMax checks the refinement on objectives with a known maximiser:
// it must end within tol of the maximiser (the bracket's guarantee), never
// return a point worse than the starting one, never evaluate outside the
// bracket or two points closer than tol/4, and take few evaluations where
// the objective is smooth.
func TestBrentMax(t *testing.T) {
	const tol = 1e-2
	cases := []struct {
		name      string
		f         func(u float64) float64
		a, x, b   float64
		argmax    float64
		maxEvals  int // the most evaluations allowed to the smooth cases
		monotone  bool
		infinites bool
	}{
		{name: "parabola", f: func(u float64) float64 { return -(u - 0.3) * (u - 0.3) }, a: -1, x: 0, b: 1, argmax: 0.3, maxEvals: 4},
		{name: "skewed log-likelihood", f: func(u float64) float64 { return 5*u - math.Exp(u+1) }, a: -1, x: 0.5, b: 1.5, argmax: math.Log(5) - 1, maxEvals: 7},
		{name: "quartic, flat top", f: func(u float64) float64 { d := u + 0.21; return -d * d * d * d }, a: -0.9, x: -0.3, b: 0.3, argmax: -0.21, maxEvals: 9},
		{name: "kink", f: func(u float64) float64 { return -math.Abs(u - 0.123) }, a: -0.5, x: 0, b: 0.7, argmax: 0.123},
		{name: "increasing: the end", f: func(u float64) float64 { return u }, a: -1, x: 1, b: 1, argmax: 1, monotone: true},
		{name: "decreasing from the start", f: func(u float64) float64 { return -u }, a: -1, x: -1, b: 0.4, argmax: -1, monotone: true},
		{name: "-Inf at an end", f: func(u float64) float64 {
			if u < -0.9 {
				return math.Inf(-1)
			}
			return -(u + 0.4) * (u + 0.4)
		}, a: -1, x: -0.5, b: 0.3, argmax: -0.4, infinites: true},
	}
	for _, c := range cases {
		var seen []float64
		f := func(u float64) float64 {
			if u < c.a || u > c.b {
				t.Errorf("%s: evaluated u = %v outside [%v, %v]", c.name, u, c.a, c.b)
			}
			for _, s := range append(seen, c.a, c.b, c.x) {
				if math.Abs(u-s) < tol/4*(1-1e-12) {
					t.Errorf("%s: evaluated u = %v within tol/4 of %v", c.name, u, s)
				}
			}
			seen = append(seen, u)
			return c.f(u)
		}
		limit := refineEvals(c.b-c.a, tol)
		x, fx, evals := brentMax(f, bracket{a: c.a, b: c.b, x: c.x, fa: c.f(c.a), fb: c.f(c.b), fx: c.f(c.x)}, tol, limit)
		if evals != len(seen) || evals > limit {
			t.Errorf("%s: %d evaluations reported, %d made, limit %d", c.name, evals, len(seen), limit)
		}
		if math.Abs(x-c.argmax) > tol {
			t.Errorf("%s: x = %v, the maximiser is %v (tol %v)", c.name, x, c.argmax, tol)
		}
		if fx != c.f(x) || fx < c.f(c.x) {
			t.Errorf("%s: f(x) = %v reported %v, start %v", c.name, c.f(x), fx, c.f(c.x))
		}
		if c.maxEvals > 0 && evals > c.maxEvals {
			t.Errorf("%s: %d evaluations, want at most %d", c.name, evals, c.maxEvals)
		}
		t.Logf("%s: x = %.5f after %d evaluations (limit %d)", c.name, x, evals, limit)
	}
}
