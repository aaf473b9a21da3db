package recal

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/calib-dev/calib/metric"
)

// splineObjective returns ||A v - y||^2 of the spline with knot values v on
// the fractiles of n points.
func splineObjective(sp *naturalSpline, v, y []float64) float64 {
	n := len(y)
	f := 0.0
	for i := range y {
		r := dot(sp.valueRow(float64(i)/float64(n-1)), v) - y[i]
		f += r * r
	}
	return f
}

// barrierSpline solves the constrained spline fit independently of the
// active-set method: the log-barrier method (damped Newton on
// t ||A v - y||^2 - sum log(slack) for t = 1, 10, ..., 1e11; duality gap 2n/t) from v = 0,
// which is strictly feasible when every score is inside (0, 1). It returns
// the primal point and a lower bound on the optimum: the Lagrange dual
// function at the barrier's multipliers 1/(t slack) (weak duality).
func barrierSpline(sp *naturalSpline, s, y []float64) (v []float64, lower float64) {
	n, m := len(s), sp.m
	A := mat.NewDense(n, m, nil)
	G := mat.NewDense(n, m, nil)
	for i := range s {
		x := float64(i) / float64(n-1)
		A.SetRow(i, sp.valueRow(x))
		G.SetRow(i, sp.slopeRow(x))
	}
	v = make([]float64, m)
	phi := func(v []float64, t float64) float64 {
		f := t * splineObjective(sp, v, y)
		for i := range s {
			g := dot(G.RawRowView(i), v)
			lo, hi := g+s[i], 1-s[i]-g
			if lo <= 0 || hi <= 0 {
				return math.Inf(1)
			}
			f -= math.Log(lo) + math.Log(hi)
		}
		return f
	}
	const tMax = 1e11
	for t := 1.0; t <= tMax; t *= 10 {
		for it := 0; it < 200; it++ {
			grad := make([]float64, m)
			hess := mat.NewSymDense(m, nil)
			for i := range s {
				a := A.RawRowView(i)
				r := dot(a, v) - y[i]
				g := G.RawRowView(i)
				gv := dot(g, v)
				lo, hi := gv+s[i], 1-s[i]-gv
				for p := 0; p < m; p++ {
					grad[p] += 2*t*r*a[p] - g[p]/lo + g[p]/hi
					for q := p; q < m; q++ {
						hess.SetSym(p, q, hess.At(p, q)+2*t*a[p]*a[q]+g[p]*g[q]*(1/(lo*lo)+1/(hi*hi)))
					}
				}
			}
			var step mat.VecDense
			if err := step.SolveVec(hess, mat.NewVecDense(m, grad)); err != nil {
				panic(err)
			}
			dec := dot(step.RawVector().Data, grad) // Newton decrement squared
			if dec < 1e-14 {
				break
			}
			f0 := phi(v, t)
			for alpha := 1.0; alpha > 1e-12; alpha /= 2 {
				w := slices.Clone(v)
				for p := range w {
					w[p] -= alpha * step.AtVec(p)
				}
				if phi(w, t) <= f0-0.25*alpha*dec {
					v = w
					break
				}
			}
		}
	}
	// Dual bound: with d_i = 1/(t lo_i) - 1/(t hi_i), the Lagrangian
	// ||A u - y||^2 - d^T G u + const is minimised at
	// u = (A^T A)^-1 (A^T y + G^T d / 2).
	d := make([]float64, n)
	lconst := 0.0
	for i := range s {
		gv := dot(G.RawRowView(i), v)
		llo, lhi := 1/(tMax*(gv+s[i])), 1/(tMax*(1-s[i]-gv))
		d[i] = llo - lhi
		lconst += -llo*s[i] - lhi*(1-s[i])
	}
	var ata mat.SymDense
	ata.SymOuterK(1, A.T())
	var rhs, gd mat.VecDense
	rhs.MulVec(A.T(), mat.NewVecDense(n, y))
	gd.MulVec(G.T(), mat.NewVecDense(n, d))
	rhs.AddScaledVec(&rhs, 0.5, &gd)
	var u mat.VecDense
	if err := u.SolveVec(&ata, &rhs); err != nil {
		panic(err)
	}
	ud := u.RawVector().Data
	var gu mat.VecDense
	gu.MulVec(G, &u)
	lower = splineObjective(sp, ud, y) - dot(d, gu.RawVector().Data) + lconst
	return v, lower
}

// TestConstrainedSplineBarrier checks the active-set solution of the
// constrained spline fit against the log-barrier method on synthetic scores
// in (0.3, 0.999) whose outcomes (5 % correct below 0.7, all above) make the
// least-squares fit overshoot on both sides of the step: its objective is
// no larger than the barrier's and within the barrier's duality gap
// (1.6e-8, times 1.5) of its dual lower bound, and the knot values agree to 1e-6 of the largest.
func TestConstrainedSplineBarrier(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 3))
	for trial, knots := range []int{4, 6, 10} {
		n := 800
		s, c := make([]float64, n), make([]float64, n)
		for i := range s {
			s[i] = 0.3 + 0.699*rng.Float64()
			if s[i] > 0.7 || rng.Float64() < 0.05 {
				c[i] = 1
			}
		}
		u, err := FitSplineCurve(s, c, nil, SplineOptions{Knots: knots})
		if err != nil {
			t.Fatal(err)
		}
		q, err := FitSplineCurve(s, c, nil, SplineOptions{Knots: knots, Constrained: true})
		if err != nil {
			t.Fatal(err)
		}
		if !q.Constrained {
			t.Error("Constrained not recorded")
		}
		over := 0
		for _, v := range u.Calibrated {
			if v < 0 || v > 1 {
				over++
			}
		}
		if over == 0 {
			t.Fatalf("trial %d: the least-squares fit meets the constraint; the test needs one that does not", trial)
		}
		for i, v := range q.Calibrated {
			if v < -1e-12 || v > 1+1e-12 {
				t.Errorf("trial %d: constrained recalibrated score %d = %v", trial, i, v)
			}
		}
		// The same targets as FitSplineCurve builds.
		idx := sortedOrder(s)
		y := make([]float64, n)
		cs, co := 0.0, 0.0
		for i, j := range idx {
			cs += s[j]
			co += c[j]
			y[i] = co/float64(n) - cs/float64(n)
		}
		sp := newNaturalSpline(knots)
		want, lower := barrierSpline(sp, q.Scores, y)
		scale, worst := 0.0, 0.0
		for i := range want {
			scale = math.Max(scale, math.Abs(want[i]))
			worst = math.Max(worst, math.Abs(q.KnotValues[i]-want[i]))
		}
		fq, fb, fu := splineObjective(sp, q.KnotValues, y), splineObjective(sp, want, y), splineObjective(sp, u.KnotValues, y)
		t.Logf("knots %d: %d of %d least-squares scores outside [0, 1]; objective %.9g, barrier %.9g, dual bound %.9g, unconstrained %.9g; knot values vs barrier %.2g of the largest",
			knots, over, n, fq, fb, lower, fu, worst/scale)
		// Weak duality: lower <= optimum <= fq; the active-set point must
		// be at least as good as the barrier's and within the barrier's
		// duality gap 2n/t = 1.6e-8 of the bound (1.5 times that: the last
		// centring step stops at a Newton decrement of 1e-14).
		if fq > fb*(1+1e-12) || fq < lower*(1-1e-12) || fq-lower > 1.5*1.6e-8 || fq < fu {
			t.Errorf("knots %d: objective %v, barrier %v, dual bound %v, unconstrained %v", knots, fq, fb, lower, fu)
		}
		if worst > 1e-6*scale {
			t.Errorf("knots %d: knot values %v, barrier method %v", knots, q.KnotValues, want)
		}
	}
}

// TestConstrainedSplineReal fits the top-1, top-2 and within-top-2 splines
// with and without the constraint on real validation logits: where the
// least-squares fit already meets the constraint the fits are identical;
// elsewhere every constrained validation score is in [0, 1] (1e-12) and the
// test KS stays within 0.5 percentage points of the unconstrained fit's.
func TestConstrainedSplineReal(t *testing.T) {
	for name, dir := range logitDirs {
		val, test := loadSplit(t, dir, "val"), loadSplit(t, dir, "test")
		curves := []struct {
			what string
			get  func(p []float64, y []int, k int) ([]float64, []float64)
		}{
			{"top-1", func(p []float64, y []int, k int) ([]float64, []float64) { return metric.TopR(p, y, k, 1) }},
			{"top-2", func(p []float64, y []int, k int) ([]float64, []float64) { return metric.TopR(p, y, k, 2) }},
			{"within-top-2", func(p []float64, y []int, k int) ([]float64, []float64) { return metric.WithinTopR(p, y, k, 2) }},
		}
		for _, cv := range curves {
			s, c := cv.get(val.Probs, val.Labels, val.K)
			u, err := FitSplineCurve(s, c, nil, SplineOptions{})
			if err != nil {
				t.Fatal(err)
			}
			q, err := FitSplineCurve(s, c, nil, SplineOptions{Constrained: true})
			if err != nil {
				t.Fatalf("%s %s: %v", name, cv.what, err)
			}
			over := 0
			for i, v := range u.Calibrated {
				if v < 0 || v > 1 {
					over++
				}
				if w := q.Calibrated[i]; w < -1e-12 || w > 1+1e-12 {
					t.Errorf("%s %s: constrained score %d = %v", name, cv.what, i, w)
				}
			}
			if over == 0 && !slices.Equal(u.KnotValues, q.KnotValues) {
				t.Errorf("%s %s: the least-squares fit is feasible but the constrained fit differs", name, cv.what)
			}
			ts, tc := cv.get(test.Probs, test.Labels, test.K)
			ksOf := func(sc *SplineCurve) float64 {
				m := make([]float64, len(ts))
				for i, v := range ts {
					m[i] = sc.Map(v)
				}
				ks, _ := metric.KS(m, tc, false, nil)
				return ks
			}
			ku, kq := ksOf(u), ksOf(q)
			t.Logf("%s %s: %d of %d least-squares scores outside [0, 1]; test KS %.4f%% -> constrained %.4f%%", name, cv.what, over, len(s), 100*ku, 100*kq)
			if math.Abs(ku-kq) > 0.005 {
				t.Errorf("%s %s: test KS %v unconstrained, %v constrained", name, cv.what, ku, kq)
			}
		}
	}
}
