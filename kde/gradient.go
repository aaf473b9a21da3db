package kde

import (
	"context"
	"fmt"
	"math"

	"github.com/calib-dev/calib/internal/mathx"
)

// Gradient returns the estimate of CE_p^p of Estimate (one exponent p) and
// its exact gradient with respect to the n×k probabilities, each entry
// treated as a free variable (no projection onto the simplex), so
// grad[j*k + m] = dCE/df_jm. The gradient covers both roles of f_j: as an
// evaluation point (through log f_j and the error r_j - f_j) and as a kernel
// centre (through alpha_j = f_j/h + 1 and the Dirichlet normaliser, whose
// derivative is the digamma function). TopLabel passes the derivative to the
// arg-max entry of each row; Binary to column 1 (column 0 is not read).
//
// For p = 1 the derivative of |e| at e = 0 is taken as 0. The gradient is
// defined only inside the simplex: every entry that the notion reads must be
// in (0, 1) (an error otherwise). If dst has length n*k it is used for the
// result, else a new slice is allocated.
//
// weights are the sample weights of Estimate (nil means all 1), constants
// of the differentiation: the value is Estimate's weighted estimate, and
// its gradient carries w_j / sum_j w_j on the outer term of sample j and
// w_i inside every kernel of centre i. A sample of weight 0 gets a zero
// gradient (it is neither a term nor a neighbour).
func Gradient(ctx context.Context, dst []float64, notion Notion, probs []float64, labels []int, k int, p float64, weights []float64, opts Options) (value float64, grad []float64, err error) {
	opts.ctx = ctx
	if err := check(notion, probs, labels, k); err != nil {
		return 0, nil, err
	}
	if err := checkWeights(weights, len(labels), true); err != nil {
		return 0, nil, err
	}
	h := opts.Bandwidth
	if err := checkBandwidth(h); err != nil {
		return 0, nil, err
	}
	if opts.Debias {
		return 0, nil, fmt.Errorf("kde: Gradient does not support Options.Debias")
	}
	if err := checkP(p); err != nil {
		return 0, nil, err
	}
	n := len(labels)
	if len(dst) == n*k {
		grad = dst
		clear(grad)
	} else {
		grad = make([]float64, n*k)
	}
	pts := parts(notion, probs, labels, k, weights, opts.Workers)
	track(opts.ctx, pts, opts.Progress, 3) // ratios, evaluation-point part, centre part
	var argmax []int
	if notion == TopLabel {
		argmax = make([]int, n)
		for j := range argmax {
			argmax[j] = argMax(probs[j*k : (j+1)*k])
		}
	}
	scale := 1.0
	if notion == ClassWise && opts.ClassMean {
		scale = 1 / float64(k)
	}
	for _, pt := range pts {
		pr := pt.prob
		if pr.anyExact {
			return 0, nil, fmt.Errorf("kde: %s gradient: a prediction has an exact 0 or 1, where the gradient is not finite", notion)
		}
		r, lse := pr.ratios(h)
		if err := canceled(opts.ctx); err != nil {
			return 0, nil, err
		}
		means, nkept, wkept := pt.lpMeans(r, lse, []float64{p}, weights)
		if nkept == 0 {
			return 0, nil, fmt.Errorf("kde: %s: %w", notion, ErrNoDensity)
		}
		if !(wkept > 0) {
			return 0, nil, fmt.Errorf("kde: %s: %w: no sample of positive weight has a positive leave-one-out density", notion, ErrNoDensity)
		}
		value += scale * means[0]
		// G[j*nl + l] = dV/dr_jl
		G := make([]float64, pr.n*pr.nl)
		w := scale * pt.scale / wkept
		base := w
		for j, v := range lse {
			if v == math.Inf(-1) {
				continue
			}
			if weights != nil {
				w = weights[j] * base // 1 x base is exact: unit weights change nothing
			}
			if pt.canonical {
				for l := 0; l < pr.nl; l++ {
					G[j*pr.nl+l] = w * dPowAbs(pt.errAt(r, j, l), p)
				}
			} else {
				G[j*pr.nl+1] = w * dPowAbs(pt.errAt(r, j, 0), p)
			}
		}
		dx := pr.gradient(h, r, lse, G)
		if err := canceled(opts.ctx); err != nil {
			return 0, nil, err
		}
		// The direct term: e = r - x.
		for j := range lse {
			if pt.canonical {
				for l := 0; l < pr.nl; l++ {
					dx[j*pr.d+l] -= G[j*pr.nl+l]
				}
			} else {
				dx[j*pr.d] -= G[j*pr.nl+1]
			}
		}
		if pt.canonical {
			for i, v := range dx {
				grad[i] += v
			}
			continue
		}
		for j := 0; j < n; j++ {
			dc := dx[2*j] - dx[2*j+1] // x = (c, 1-c)
			col := pt.class
			if col < 0 {
				col = argmax[j]
			}
			grad[j*k+col] += dc
		}
	}
	for _, v := range grad {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return 0, nil, fmt.Errorf("kde: %s gradient is not finite (bandwidth %v too small for these predictions?)", notion, h)
		}
	}
	return value, grad, nil
}

// LogitGradient returns the estimate of Gradient at f = softmax(z) (row-wise,
// in float64) and its gradient with respect to the logits z (n×cols):
//
//	dCE/dz_jm = f_jm (dCE/df_jm - sum_m' f_jm' dCE/df_jm')
//
// For Binary, z has one column (the logit of p1 = sigmoid(z), so
// dCE/dz_j = p1 (1 - p1) dCE/dp1) or two (p1 = softmax(z)_1). Otherwise
// cols = k >= 2. weights are the sample weights of Gradient (nil: all 1).
func LogitGradient(ctx context.Context, dst []float64, notion Notion, logits []float64, labels []int, cols int, p float64, weights []float64, opts Options) (value float64, grad []float64, err error) {
	opts.ctx = ctx
	n := len(labels)
	if cols < 1 || len(logits) != n*cols {
		return 0, nil, fmt.Errorf("kde: %d logits for %d samples of %d columns", len(logits), n, cols)
	}
	for i, z := range logits {
		if math.IsNaN(z) || math.IsInf(z, 0) {
			return 0, nil, fmt.Errorf("kde: sample %d, column %d: logit %v is not finite", i/cols, i%cols, z)
		}
	}
	k := cols
	sigmoid := notion == Binary && cols == 1
	switch {
	case sigmoid:
		k = 2
	case notion == Binary && cols != 2:
		return 0, nil, fmt.Errorf("kde: the binary notion takes one or two logit columns, got %d", cols)
	case cols < 2:
		return 0, nil, fmt.Errorf("kde: %s needs at least 2 logit columns, got %d", notion, cols)
	}
	probs := make([]float64, n*k)
	for j := 0; j < n; j++ {
		if sigmoid {
			q := mathx.Sigmoid(logits[j])
			probs[2*j], probs[2*j+1] = 1-q, q
			continue
		}
		mathx.Softmax(probs[j*k:(j+1)*k], logits[j*k:(j+1)*k])
	}
	value, gp, err := Gradient(ctx, nil, notion, probs, labels, k, p, weights, opts)
	if err != nil {
		return 0, nil, err
	}
	if len(dst) == n*cols {
		grad = dst
	} else {
		grad = make([]float64, n*cols)
	}
	for j := 0; j < n; j++ {
		if sigmoid {
			q := probs[2*j+1]
			grad[j] = q * (1 - q) * gp[2*j+1]
			continue
		}
		f, g := probs[j*k:(j+1)*k], gp[j*k:(j+1)*k]
		dot := 0.0
		for m := range f {
			dot += f[m] * g[m]
		}
		for m := range f {
			grad[j*k+m] = f[m] * (g[m] - dot)
		}
	}
	return value, grad, nil
}
