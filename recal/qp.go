package recal

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// boundedLeastSquares minimises ||D v - y||^2 subject to lo_i <= G_i v <=
// hi_i for every row G_i of G, starting from the feasible point v0, by the
// primal active-set method for convex quadratic programs (Nocedal and
// Wright, Numerical Optimization, 2nd ed., Algorithm 16.3). D must have full
// column rank (the objective is then strictly convex and the solution
// unique). Each constraint row enters the working set as a lower or an
// upper bound; a step is the equality-constrained minimiser on the working
// set (its KKT system solved by LU), shortened to the first constraint it
// would cross. It returns the solution and the number of constraints active
// at it.
func boundedLeastSquares(D *mat.Dense, y []float64, G *mat.Dense, lo, hi, v0 []float64) ([]float64, int, error) {
	n, m := D.Dims()
	nc, _ := G.Dims()
	// Objective 1/2 v^T H v + g^T v with H = 2 D^T D, g = -2 D^T y.
	var H mat.SymDense
	H.SymOuterK(2, D.T())
	var g mat.VecDense
	g.MulVec(D.T(), mat.NewVecDense(n, y))
	g.ScaleVec(-2, &g)

	const feasTol = 1e-12
	v := mat.NewVecDense(m, append([]float64(nil), v0...))
	gv := make([]float64, nc)
	rowsOf := func(dst []float64, x *mat.VecDense) {
		mat.NewVecDense(nc, dst).MulVec(G, x)
	}
	rowsOf(gv, v)
	for i := range gv {
		if gv[i] < lo[i]-feasTol || gv[i] > hi[i]+feasTol {
			return nil, 0, fmt.Errorf("recal: bounded least squares: start infeasible at constraint %d", i)
		}
	}
	// Working set: constraint rows with the side held (+1: G_i v >= lo_i
	// held at equality, -1: G_i v <= hi_i held).
	type active struct{ row, side int }
	var work []active
	gp := make([]float64, nc)
	// atMin: the last step was a full one, so v minimises the objective on
	// the working set and p is zero up to rounding.
	atMin := false
	for iter := 0; iter < 10*(nc+m)+100; iter++ {
		// KKT system of the step p on the working set W (a_j = side_j G_j):
		//   [H  -A^T] [p]   [-(H v + g)]
		//   [A   0  ] [l] = [    0     ]
		na := len(work)
		kkt := mat.NewDense(m+na, m+na, nil)
		rhs := mat.NewVecDense(m+na, nil)
		var grad mat.VecDense
		grad.MulVec(&H, v)
		grad.AddVec(&grad, &g)
		for r := 0; r < m; r++ {
			for c := 0; c < m; c++ {
				kkt.Set(r, c, H.At(r, c))
			}
			rhs.SetVec(r, -grad.AtVec(r))
		}
		for j, a := range work {
			for c := 0; c < m; c++ {
				e := float64(a.side) * G.At(a.row, c)
				kkt.Set(m+j, c, e)
				kkt.Set(c, m+j, -e)
			}
		}
		var sol mat.VecDense
		if err := sol.SolveVec(kkt, rhs); err != nil {
			return nil, 0, fmt.Errorf("recal: bounded least squares: KKT system: %w", err)
		}
		p := sol.SliceVec(0, m).(*mat.VecDense)
		pmax := 0.0
		for r := 0; r < m; r++ {
			pmax = math.Max(pmax, math.Abs(p.AtVec(r)))
		}
		vmax := 1.0
		for r := 0; r < m; r++ {
			vmax = math.Max(vmax, math.Abs(v.AtVec(r)))
		}
		if atMin || pmax <= 1e-12*vmax {
			atMin = false
			// Stationary on W: done if every multiplier is >= 0, else
			// release the most negative one.
			worst, wl := -1, 0.0
			for j := range work {
				if l := sol.AtVec(m + j); l < wl {
					worst, wl = j, l
				}
			}
			if worst < 0 {
				return v.RawVector().Data, na, nil
			}
			work = append(work[:worst], work[worst+1:]...)
			continue
		}
		// Longest step in [0, 1] along p that keeps every constraint.
		rowsOf(gp, p)
		inWork := make(map[int]bool, na)
		for _, a := range work {
			inWork[a.row] = true
		}
		alpha, block := 1.0, active{-1, 0}
		for i := 0; i < nc; i++ {
			if inWork[i] {
				continue
			}
			switch {
			case gp[i] < 0:
				if t := (lo[i] - gv[i]) / gp[i]; t < alpha {
					alpha, block = math.Max(t, 0), active{i, 1}
				}
			case gp[i] > 0:
				if t := (hi[i] - gv[i]) / gp[i]; t < alpha {
					alpha, block = math.Max(t, 0), active{i, -1}
				}
			}
		}
		v.AddScaledVec(v, alpha, p)
		rowsOf(gv, v)
		if block.row >= 0 {
			work = append(work, block)
		} else {
			atMin = true
		}
	}
	return nil, 0, errors.New("recal: bounded least squares: no convergence")
}
