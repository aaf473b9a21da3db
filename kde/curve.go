package kde

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/calib-dev/calib/internal/mathx"
	"github.com/calib-dev/calib/internal/parallel"
)

// This file holds the statistics behind calib's drawn kernel curves (the
// report package only draws their results): the cross-validated bandwidth
// of a regression curve or surface, the bootstrap band of the Beta-kernel
// reliability curve, and ECE^KDE as a function of the bandwidth.

// RegressionGrid returns the candidate bandwidths of RegressionBandwidth:
// 14 values log-spaced from 0.002 to 0.1 (wider kernels flatten the curve
// where few samples lie, which the cross-validated error, dominated by the
// many samples near 0 or 1, does not penalise).
func RegressionGrid() []float64 { return mathx.LogSpace(0.002, 0.1, 14) }

// GridEdge returns -1 when h is the smallest value of grid, +1 when it is
// the largest, and 0 otherwise (an empty grid: 0). A bandwidth chosen at an
// end of its grid was not pinned down by the data.
func GridEdge(grid []float64, h float64) int {
	switch {
	case len(grid) == 0:
		return 0
	case h <= grid[0]:
		return -1
	case h >= grid[len(grid)-1]:
		return 1
	}
	return 0
}

// RegressionBandwidth chooses the bandwidth of the Dirichlet kernel
// regression E[y | f] (Regression) of labels on predictions (n×k): the
// RegressionGrid value h with the smallest 5-fold cross-validated squared
// error
//
//	sum_j w_j ||r_{-fold(j)}(f_j) - e_{y_j}||^2,
//
// (the regression weighted too: Regression with the training folds'
// weights; nil weights mean all 1) on a seeded subsample of at most 1,000 samples (drawn, and cut into
// folds, from PCG(seed, 2)); a query with no kernel mass counts the
// uninformed guess 1/k for every class. This targets the regression itself;
// the LOO likelihood bandwidth of ECE^KDE (SelectBandwidth) targets the
// density of the predictions and is much smaller where they pile up near a
// vertex, which makes a drawn curve or surface wiggle. It needs at least 10
// samples. The result is the same for any number of workers.
func RegressionBandwidth(ctx context.Context, probs []float64, labels []int, k int, weights []float64, seed uint64, workers int) (float64, error) {
	n := len(labels)
	if n < 10 {
		return 0, fmt.Errorf("kde: regression bandwidth: %d samples, need at least 10", n)
	}
	if err := mathx.CheckWeights(weights, n); err != nil {
		return 0, fmt.Errorf("kde: regression bandwidth: %w", err)
	}
	rng := rand.New(rand.NewPCG(seed, 2))
	idx := rng.Perm(n)
	if len(idx) > 1000 {
		idx = idx[:1000]
	}
	const folds = 5
	grid := RegressionGrid()
	loss := make([]float64, len(grid))
	for f := 0; f < folds; f++ {
		var tx, qx, tw, qw []float64
		var ty, qy []int
		for j, i := range idx {
			if j%folds == f {
				qx, qy = append(qx, probs[i*k:(i+1)*k]...), append(qy, labels[i])
				qw = append(qw, mathx.Weight(weights, i))
			} else {
				tx, ty = append(tx, probs[i*k:(i+1)*k]...), append(ty, labels[i])
				tw = append(tw, mathx.Weight(weights, i))
			}
		}
		if weights == nil {
			tw = nil
		} else if !slices.ContainsFunc(tw, func(v float64) bool { return v > 0 }) {
			continue // a fold whose training part weighs nothing says nothing
		}
		for g, h := range grid {
			r, _, _, err := Regression(ctx, qx, tx, ty, k, tw, Options{Bandwidth: h, Workers: workers})
			if err != nil {
				return 0, fmt.Errorf("kde: regression bandwidth: %w", err)
			}
			for j, y := range qy {
				sq := 0.0
				for c := 0; c < k; c++ {
					v := r[j*k+c]
					if math.IsNaN(v) {
						v = 1 / float64(k) // no kernel mass: the uninformed guess
					}
					if c == y {
						v--
					}
					if weights == nil {
						loss[g] += v * v // the unweighted sum, in its order
					} else {
						sq += v * v
					}
				}
				if weights != nil {
					loss[g] += qw[j] * sq
				}
			}
		}
	}
	best := 0
	for g := range loss {
		if loss[g] < loss[best] {
			best = g
		}
	}
	return grid[best], nil
}

// ScoreRegressionBandwidth chooses the bandwidth of the Beta-kernel
// regression curve of 0/1 outcomes on scores (ScoreRegression):
// RegressionBandwidth on the two-column points (1 - s, s), with the
// weights (nil: all 1).
func ScoreRegressionBandwidth(ctx context.Context, scores []float64, outcomes []int, weights []float64, seed uint64, workers int) (float64, error) {
	two := make([]float64, 2*len(scores))
	for i, s := range scores {
		two[2*i], two[2*i+1] = 1-s, s
	}
	return RegressionBandwidth(ctx, two, outcomes, 2, weights, seed, workers)
}

// BandOptions configures ScoreRegressionBand. Bandwidth must be set; the
// rest of the zero value is 200 resamples for a 95 % band with seed 0 on
// all cores.
type BandOptions struct {
	Bandwidth float64 // the kernel bandwidth h > 0, held fixed on every resample
	Resamples int     // number of resamples B; 0 means 200
	Level     float64 // of the band, in (0, 1); 0 means 0.95
	// Seed: resample b draws n indices uniformly with replacement from
	// PCG(Seed, b), as metric.Bootstrap does, so that a band and a
	// metric.Bootstrap interval with the same seed use the same resamples.
	Seed uint64
	// Workers is the number of goroutines; 0 means GOMAXPROCS. The band is
	// bit-identical for every value.
	Workers int
	ctx     context.Context // the call's context, its first argument
}

// ScoreRegressionBand returns the bootstrap percentile band of the
// Beta-kernel curve E[outcome | score = c] (ScoreRegression) at each query
// score c: the (1-Level)/2 and 1-(1-Level)/2 quantiles (mathx.Quantile,
// NumPy's linear interpolation) of the curve refitted on each resample,
// the bandwidth held fixed. With weights (nil: all 1) the curve is the
// weighted regression and a resample carries the weights of the rows it
// draws (sample i drawn c_i times counts c_i w_i). A query where fewer than half of the resamples
// leave any kernel mass gets NaN at both ends. Outcomes must be 0 or 1.
//
// Numerics: the kernels of the n samples at the m queries are computed once
// (each query's kernels divided by its largest, in log space, so that no
// exponential underflows where the mass is), and a resample sums its
// samples' rows weighted by how often each was drawn, in sample order. The
// kernels are those of ScoreRegression, so a "resample" holding every
// sample once reproduces it (to rounding: ScoreRegression uses the
// table-driven exp, this math.Exp).
func ScoreRegressionBand(ctx context.Context, queries, scores []float64, outcomes []int, weights []float64, o BandOptions) (lo, hi []float64, err error) {
	o.ctx = ctx
	n := len(scores)
	if n != len(outcomes) {
		return nil, nil, fmt.Errorf("kde: %d scores and %d outcomes", n, len(outcomes))
	}
	if err := mathx.CheckWeights(weights, n); err != nil {
		return nil, nil, fmt.Errorf("kde: score regression band: %w", err)
	}
	if n < 1 {
		return nil, nil, fmt.Errorf("kde: score regression band: %w", ErrTooFew)
	}
	for i, v := range outcomes {
		if v != 0 && v != 1 {
			return nil, nil, fmt.Errorf("kde: outcome %d is %d, not 0 or 1", i, v)
		}
	}
	if err := checkBandwidth(o.Bandwidth); err != nil {
		return nil, nil, err
	}
	nb, level := mathx.ResampleDefaults(o.Resamples, o.Level)
	if nb < 1 || !(level > 0 && level < 1) {
		return nil, nil, fmt.Errorf("kde: score regression band: %d resamples at level %v", nb, level)
	}
	m := len(queries)
	kern := betaKernels(queries, scores, o.Bandwidth)
	// curves[b*m+q] is resample b's curve at query q (NaN: no kernel mass).
	curves := make([]float64, nb*m)
	type buffers struct{ cnt, num, den []float64 }
	stopped := parallel.ForContext(o.ctx, nb, o.Workers, func() *buffers {
		return &buffers{make([]float64, n), make([]float64, m), make([]float64, m)}
	}, func(buf *buffers, b int) {
		rng := rand.New(rand.NewPCG(o.Seed, uint64(b)))
		clear(buf.cnt)
		for range n {
			buf.cnt[rng.IntN(n)]++
		}
		for i, w := range weights {
			buf.cnt[i] *= w
		}
		kern.regress(buf.cnt, outcomes, buf.num, buf.den)
		for q := range buf.num {
			curves[b*m+q] = math.NaN()
			if buf.den[q] > 0 {
				curves[b*m+q] = buf.num[q] / buf.den[q]
			}
		}
	})
	if stopped != nil {
		return nil, nil, fmt.Errorf("kde: score regression band: %w", stopped)
	}
	lo, hi = make([]float64, m), make([]float64, m)
	f := make([]float64, 0, nb)
	for q := range m {
		f = f[:0]
		for b := range nb {
			if v := curves[b*m+q]; !math.IsNaN(v) {
				f = append(f, v)
			}
		}
		lo[q], hi[q] = math.NaN(), math.NaN()
		// A point where most resamples left no kernel mass has no band.
		if len(f) >= nb/2 && len(f) > 0 {
			slices.Sort(f)
			lo[q] = mathx.Quantile(f, (1-level)/2)
			hi[q] = mathx.Quantile(f, 1-(1-level)/2)
		}
	}
	return lo, hi, nil
}

// kernelMatrix holds the Beta kernels of n samples at m query scores,
// each query's kernels divided by its largest: w[i*m + q] for sample i
// and query q (sample-major, so that a resample adds its samples' rows).
type kernelMatrix struct {
	m int
	w []float64
}

// betaKernels returns the kernels of ScoreRegression at each query:
//
//	log k_h(c; s) = (s/h) log c + ((1-s)/h) log(1-c) - log B(s/h + 1, (1-s)/h + 1),
//
// with 0 log 0 = 0.
func betaKernels(queries, scores []float64, h float64) kernelMatrix {
	n, m := len(scores), len(queries)
	norm := make([]float64, n)
	for i, s := range scores {
		a, b := s/h+1, (1-s)/h+1
		ga, _ := math.Lgamma(a)
		gb, _ := math.Lgamma(b)
		gs, _ := math.Lgamma(a + b)
		norm[i] = ga + gb - gs
	}
	k := kernelMatrix{m: m, w: make([]float64, n*m)}
	lk := make([]float64, n)
	for q, c := range queries {
		lc, l1c := math.Log(c), math.Log(1-c)
		mx := math.Inf(-1)
		for i, s := range scores {
			v := -norm[i]
			if s != 0 {
				v += s / h * lc
			}
			if s != 1 {
				v += (1 - s) / h * l1c
			}
			lk[i] = v
			mx = max(mx, v)
		}
		if math.IsInf(mx, -1) || math.IsNaN(mx) {
			continue // no kernel mass: the row stays 0
		}
		for i, v := range lk {
			k.w[i*m+q] = math.Exp(v - mx)
		}
	}
	return k
}

// regress sets num[q]/den[q] to the kernel regression of the outcomes at
// query q with sample i counted cnt[i] times (den[q] = 0: no kernel mass).
func (k kernelMatrix) regress(cnt []float64, outcomes []int, num, den []float64) {
	clear(num)
	clear(den)
	m := k.m
	for i, c := range cnt {
		if c == 0 {
			continue
		}
		row := k.w[i*m : (i+1)*m]
		for q, w := range row {
			den[q] += c * w
		}
		if outcomes[i] == 1 {
			for q, w := range row {
				num[q] += c * w
			}
		}
	}
}

// EstimateCurve returns the estimate CE_p^p of notion (Estimate, with the
// single exponent opts.P[0], 1 when opts.P is nil) at each bandwidth of
// hs: how the bandwidth shapes ECE^KDE (ECE^KDE paper, section 4 and
// Fig. 3: small h undersmooths, E[y|f] follows single labels and the
// estimate grows; large h oversmooths towards the global label
// frequencies). opts.Bandwidth is ignored. A bandwidth at which Estimate
// fails gives NaN; the error is for input that fails at every bandwidth
// (bad shapes or labels, a bandwidth that is not positive, more than one
// exponent).
//
// With weights (nil: all 1) each point is the weighted Estimate.
func EstimateCurve(ctx context.Context, notion Notion, probs []float64, labels []int, k int, hs, weights []float64, opts Options) ([]float64, error) {
	opts.ctx = ctx
	if err := check(notion, probs, labels, k); err != nil {
		return nil, err
	}
	if len(opts.P) > 1 {
		return nil, fmt.Errorf("kde: estimate curve: %d exponents, want one", len(opts.P))
	}
	for _, h := range hs {
		if err := checkBandwidth(h); err != nil {
			return nil, err
		}
	}
	out := make([]float64, len(hs))
	for i, h := range hs {
		o := opts
		o.Bandwidth = h
		res, err := Estimate(ctx, notion, probs, labels, k, weights, o)
		if err != nil {
			if ctx != nil && ctx.Err() != nil {
				return nil, fmt.Errorf("kde: estimate curve: %w", ctx.Err())
			}
			out[i] = math.NaN()
			continue
		}
		out[i] = res.Values[0].Value
	}
	return out, nil
}
