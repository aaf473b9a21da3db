package recal

import (
	"context"
	"fmt"
	"math"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/calib-dev/calib/internal/mathx"
)

// newtonProblem is a smooth, strictly convex objective whose value,
// gradient and Hessian come from one pass over the data: eval writes the
// gradient into grad and, where hess is not nil, the Hessian (n×n,
// row-major) into hess, and returns the value.
type newtonProblem struct {
	name string
	dim  int
	eval func(th, grad, hess []float64) float64
}

// The stopping rule of minimizeNewton: the Newton decrement lambda^2 / 2
// = -g.d / 2 (the predicted decrease of the objective, about its distance
// to the minimum near it) below 1e-15 of the objective (max(1, |f|)),
// where the objective's rounding hides any further decrease, or the
// gradient's largest entry below 1e-11.
const (
	newtonDecrement = 1e-15
	newtonGradient  = 1e-11
)

// minimizeNewton minimises p from th by Newton's method with the exact
// Hessian and a backtracking (Armijo) line search: quadratic convergence
// near the minimum, a few passes over the data where L-BFGS needs dozens.
// It fails on a cancelled ctx (wrapping its Err()), on a Hessian that is
// not positive definite even after a ridge of 1e-8 times its largest
// diagonal entry, on a line search that cannot decrease the objective
// while the gradient's largest entry exceeds settle, and after 200
// iterations.
func minimizeNewton(ctx context.Context, p newtonProblem, th []float64, settle float64) ([]float64, error) {
	n := p.dim
	x := append([]float64(nil), th...)
	g, h := make([]float64, n), make([]float64, n*n)
	gt, ht := make([]float64, n), make([]float64, n*n)
	xt := make([]float64, n)
	f := p.eval(x, g, h)
	for range 200 {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("recal: %s: %w", p.name, err)
		}
		if !mathx.Finite(f) || !mathx.Finite(g...) {
			return nil, fmt.Errorf("recal: %s: the fit diverged", p.name)
		}
		if maxAbs(g) <= newtonGradient {
			return x, nil
		}
		d, err := newtonStep(h, g, n)
		if err != nil {
			return nil, fmt.Errorf("recal: %s: %w", p.name, err)
		}
		slope := dot(g, d) // < 0: d descends
		if -slope/2 <= newtonDecrement*max(1, math.Abs(f)) {
			return x, nil
		}
		step, accepted := 1.0, false
		var ft float64
		for range 40 {
			for i := range x {
				xt[i] = x[i] + step*d[i]
			}
			ft = p.eval(xt, gt, ht)
			if mathx.Finite(ft) && ft <= f+1e-4*step*slope {
				accepted = true
				break
			}
			step /= 2
		}
		if !accepted {
			// The objective's rounding (about 1e-16 of its value) hides a
			// decrease this small: a point whose gradient or predicted
			// decrease is tiny is the minimum.
			if maxAbs(g) <= settle || -slope/2 <= 1e-10*max(1, math.Abs(f)) {
				return x, nil
			}
			return nil, fmt.Errorf("recal: %s: %w: Newton's line search found no decrease (gradient %.3g): the predictions are degenerate for this map (separable, or of exactly 0 and 1)", p.name, ErrInput, maxAbs(g))
		}
		x, xt = xt, x
		g, gt = gt, g
		h, ht = ht, h
		f = ft
	}
	if maxAbs(g) <= settle {
		return x, nil
	}
	return nil, fmt.Errorf("recal: %s: %w: Newton's method did not converge in 200 iterations (gradient %.3g): the predictions are degenerate for this map (separable, or of exactly 0 and 1)", p.name, ErrInput, maxAbs(g))
}

// newtonStep solves H d = -g by Cholesky's factorization, adding a ridge
// of 1e-12, then 1e-8, times the largest diagonal entry where H is not
// numerically positive definite.
func newtonStep(h, g []float64, n int) ([]float64, error) {
	top := 0.0
	for i := range n {
		top = math.Max(top, h[i*n+i])
	}
	for _, ridge := range []float64{0, 1e-12, 1e-8} {
		s := mat.NewSymDense(n, nil)
		for i := range n {
			for j := i; j < n; j++ {
				s.SetSym(i, j, (h[i*n+j]+h[j*n+i])/2)
			}
			s.SetSym(i, i, h[i*n+i]+ridge*top)
		}
		var c mat.Cholesky
		if !c.Factorize(s) {
			continue
		}
		d := mat.NewVecDense(n, nil)
		if err := c.SolveVecTo(d, mat.NewVecDense(n, append([]float64(nil), g...))); err != nil {
			continue
		}
		out := make([]float64, n)
		for i := range out {
			out[i] = -d.AtVec(i)
		}
		return out, nil
	}
	return nil, fmt.Errorf("the Hessian is not positive definite")
}

// maxAbs is the largest |x_i| (NaN if any is), the measure of a gradient
// minimizeLBFGS settles on too.
func maxAbs(x []float64) float64 { return floats.Norm(x, math.Inf(1)) }
