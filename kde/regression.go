package kde

import (
	"context"
	"fmt"
	"math"

	"github.com/calib-dev/calib/internal/kernel"
	"github.com/calib-dev/calib/internal/mathx"
	"github.com/calib-dev/calib/internal/parallel"
)

// Regression returns the Dirichlet kernel estimate of E[y | f = x] (eq. 3,
// over all samples: the query points are not samples) at each query point x,
// a row of queries (m×k, points of the simplex), from the samples probs
// (n×k) with labels:
//
//	r(x) = sum_i k_h(x; f_i) e_{y_i} / sum_i k_h(x; f_i),
//	log k_h(x; f_i) = sum_k (alpha_ik - 1) log x_k - log B(alpha_i),  alpha_i = f_i/h + 1.
//
// The result is m×k (row j is r at query j, a point of the simplex) and the
// log kernel density log((1/n) sum_i k_h(x_j; f_i)) of each query. A query
// at which every kernel is exactly zero (on a face of the simplex that no
// kernel gives mass to) has density -Inf and a row of NaN; undefined counts
// them. opts.Bandwidth must be set; ctx, opts.Workers and Progress (one unit per
// block of 16 queries) as in Estimate.
//
// weights holds one weight w_i >= 0 per sample (nil means all 1), W their
// sum. The estimate is then the weighted kernel regression and density
//
//	r(x) = sum_i w_i k_h(x; f_i) e_{y_i} / sum_i w_i k_h(x; f_i),
//	log density = log((1/W) sum_i w_i k_h(x; f_i)),
//
// in which a sample of weight 0 changes nothing and unit weights give the
// unweighted values bit for bit. Invalid weights give an error wrapping
// mathx.ErrWeights.
func Regression(ctx context.Context, queries, probs []float64, labels []int, k int, weights []float64, opts Options) (r, logDensity []float64, undefined int, err error) {
	opts.ctx = ctx
	if err := check(Canonical, probs, labels, k); err != nil {
		return nil, nil, 0, err
	}
	if err := checkWeights(weights, len(labels), false); err != nil {
		return nil, nil, 0, err
	}
	h := opts.Bandwidth
	if err := checkBandwidth(h); err != nil {
		return nil, nil, 0, err
	}
	if len(queries)%k != 0 {
		return nil, nil, 0, fmt.Errorf("kde: %d query coordinates for K = %d", len(queries), k)
	}
	m := len(queries) / k
	for i, v := range queries {
		if !(v >= 0 && v <= 1) {
			return nil, nil, 0, fmt.Errorf("kde: query %d coordinate %d is %v, not in [0, 1]", i/k, i%k, v)
		}
	}
	p := newProblem(probs, k, labels, k, weights, opts.Workers)
	norm := p.logNorm(h) // log B(alpha_i) - log w_i with weights: the kernels below are w_i k_h
	total := mathx.WeightSum(weights, p.n)
	invh := 1 / h
	r = make([]float64, m*k)
	logDensity = make([]float64, m)
	const block = 16
	nb := (m + block - 1) / block
	tr := newTracker(opts.Progress) // one unit per block of 16 queries
	tr.expect(int64(nb))
	stopped := parallel.ForContext(opts.ctx, nb, opts.Workers, func() []float64 { return make([]float64, 2*k+p.n) }, func(buf []float64, b int) {
		lx, lse, lk := buf[:k], buf[k:2*k], buf[2*k:]
		for j := b * block; j < min(m, (b+1)*block); j++ {
			x := queries[j*k : (j+1)*k]
			exact := false
			for c, v := range x {
				lx[c] = math.Log(v)
				exact = exact || v == 0
			}
			// Log-kernels of every centre (sorted order), tile by tile,
			// with 0 * log 0 = 0 for centre coordinates that are 0.
			for i0 := 0; i0 < p.n; i0 += p.ti {
				i1 := min(p.n, i0+p.ti)
				if exact {
					kernel.LogKernelRowExact(lk[i0:i1], lx, p.fct[i0*k:], i1-i0, norm[i0:i1], invh)
				} else {
					kernel.LogKernelRow(lk[i0:i1], lx, p.fct[i0*k:], i1-i0, norm[i0:i1], invh)
				}
			}
			mx := kernel.Max(lk[:p.n])
			row := r[j*k : (j+1)*k]
			if math.IsInf(mx, -1) {
				for c := range row {
					row[c] = math.NaN()
				}
				logDensity[j] = math.Inf(-1)
				continue
			}
			sum := 0.0
			for l := 0; l < k; l++ {
				lse[l] = kernel.SumExp(lk[p.seg[l]:p.seg[l+1]], mx)
				sum += lse[l]
			}
			for l := range row {
				row[l] = lse[l] / sum
			}
			logDensity[j] = mx + math.Log(sum/total)
		}
		tr.add(1)
	})
	if stopped != nil {
		return nil, nil, 0, fmt.Errorf("kde: %w", stopped)
	}
	for _, v := range logDensity {
		if math.IsInf(v, -1) {
			undefined++
		}
	}
	return r, logDensity, undefined, nil
}

// ScoreRegression returns the Beta kernel estimate (eq. 8) of E[outcome |
// score = c] at each query score c from the samples' scores and 0/1
// outcomes (the smooth reliability curve): Regression on the two-column
// points (1 - c, c) with label outcome. Queries where it is undefined are NaN
// (counted by undefined). weights are the samples' weights (nil means all
// 1), as in Regression: r(c) = sum_i w_i k_h(c; c_i) o_i / sum_i w_i k_h(c; c_i).
func ScoreRegression(ctx context.Context, queries, scores []float64, outcomes []int, weights []float64, opts Options) (r []float64, undefined int, err error) {
	opts.ctx = ctx
	if len(scores) != len(outcomes) {
		return nil, 0, fmt.Errorf("kde: %d scores and %d outcomes", len(scores), len(outcomes))
	}
	two := func(c []float64) []float64 {
		x := make([]float64, 2*len(c))
		for i, v := range c {
			x[2*i], x[2*i+1] = 1-v, v
		}
		return x
	}
	for i, o := range outcomes {
		if o != 0 && o != 1 {
			return nil, 0, fmt.Errorf("kde: outcome %d is %d, not 0 or 1", i, o)
		}
	}
	rr, _, undefined, err := Regression(ctx, two(queries), two(scores), outcomes, 2, weights, opts)
	if err != nil {
		return nil, 0, err
	}
	r = make([]float64, len(queries))
	for i := range r {
		r[i] = rr[2*i+1]
	}
	return r, undefined, nil
}
