package kde

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/calib-dev/calib/internal/kernel"
	"github.com/calib-dev/calib/internal/mathx"
	"github.com/calib-dev/calib/internal/parallel"
)

// Converging estimators of the canonical calibration error (beyond both
// papers). The plug-in ECE^KDE (1/n) sum_j ||r_j - f_j||_p^p carries two
// biases that no data-independent bandwidth removes: noise (few effective
// neighbours at small h make ||r_j - f_j|| large even for a calibrated
// model) and kernel drift (the kernel-weighted mean of the neighbours' own
// predictions differs from f_j by O(h)). Smoothing the residuals
// e_i = y_i - f_i instead of the labels removes the drift:
//
//	g_j(h) = sum_{i != j} w_ji e_i / sum_{i != j} w_ji,   w_ji = k_h(f_j; f_i)
//
// (the leave-one-out kernel regression of the residuals, Dirichlet kernel
// eq. 10, in log space like r_j), and two estimators built on it remove the
// noise:
//
//   - p = 1, the witness: V1(h) = (1/n) sum_j sum_k sign(g_jk(h)) e_jk. The
//     sign vector s_j = sign(g_j) does not use y_j, so E V1(h) <= CE_1 for
//     every h (CE_1 = sup over |s| <= 1 of E[s(f) . (y - f)]). The bandwidth
//     maximises V1 over a grid, cross-fitted against selection optimism:
//     Splits random half-splits of the evaluation points, h chosen on one
//     half and the terms of the other half taken at it, and the other way
//     round; each point's term is the mean over splits of its value at the
//     bandwidth the other half chose, and the estimate the mean of the
//     terms (for even n exactly the average over splits of the two halves'
//     means).
//   - p = 2, the debiased U-statistic: CV(h) = (1/n) sum_j [2 <g_j, e_j> -
//     ||g_j||^2] (an unbiased estimate, up to smoothing, of
//     E||E[y|f] - f||^2 - E||g - (E[y|f] - f)||^2), h_cv = argmax CV(h), and
//     at h = h_cv/2 (the halving is a heuristic, WitnessOptions.P2Scale)
//
//     U_j = (||sum_i w_ji e_i||^2 - sum_i w_ji^2 ||e_i||^2) / ((sum_i w_ji)^2 - sum_i w_ji^2)
//     CE_2^2 estimate = (1/n) sum_j [2 <g_j, e_j> - U_j].
//
//     U_j is the kernel-weighted mean of <e_i, e_i'> over pairs i != i' of
//     neighbours, which estimates ||E[y|f_j] - f_j||^2 without the noise
//     term; 2 <g_j, e_j> - U_j is then unbiased up to smoothing. The pair
//     sums are accumulated pair by pair (sum_{i' < i} w_i w_i' ...), never as
//     the difference of two squares, which would cancel when one neighbour
//     dominates.
//
// Sample weights w_i (nil: all 1) enter as everywhere in this package: every
// kernel w_ji becomes w_i k_h(f_j; f_i), so g_j is the weighted regression of
// the residuals and U_j the pair average with pair weights
// w_i w_i' k_ji k_ji' (a weighted U-statistic); every mean over points
// (V1(h), CV(h), the half sums of the cross-fitting, the estimates) is
// weighted by w_j:
//
//	g_j    = sum_{i != j} w_i k_ji e_i / sum_{i != j} w_i k_ji
//	U_j    = sum_{i != i'} w_i w_i' k_ji k_ji' <e_i, e_i'> / sum_{i != i'} w_i w_i' k_ji k_ji'
//	V1(h)  = sum_j w_j sum_k sign(g_jk) e_jk / sum_j w_j
//	CE_2^2 = sum_j w_j [2 <g_j, e_j> - U_j] / sum_j w_j
//
// so that they estimate the same quantities under the weighted
// distribution. A sample of weight 0 is nobody's neighbour and has no
// weight in any mean, though it still takes part in the random half-splits
// (which are drawn over the points, as without weights, so that unit weights
// give the unweighted results bit for bit).
//
// Cost: the dot products <f_i, log f_j> are computed once per pair for the
// whole grid; per bandwidth only the exponentials and the K-vector sums
// repeat. Streamed in blocks like Estimate: O(n K G) memory for G grid
// points (the per-point terms at every bandwidth), never an n x n matrix.

// WitnessGrid returns the default bandwidths of Witness: 13 values evenly
// spaced in log h from 0.003 to 1,
//
//	h_i = 0.003 (1/0.003)^(i/12),   i = 0, ..., 12
//
// (neighbours a factor 1.62 apart). The grid once had 25 values
// (i/24, a factor 1.27), twice the work for the same estimates within
// their noise: on six synthetic setups with known CE_p (K = 4 to 20,
// n = 500 to 5,000, calibrated and not) the mean and the RMSE of both
// exponents matched, and on the 12 real test sets the estimates moved by
// at most 0.36 (p = 1) and 0.61 (p = 2) standard errors (BENCHMARKS.md,
// "History at a glance"). Its 13 values are the older grid's even-indexed
// ones, bit for bit; pass the finer grid in WitnessOptions.Grid for the
// older figures.
func WitnessGrid() []float64 { return mathx.LogSpace(0.003, 1, 13) }

// WitnessOptions configures Witness. The zero value estimates p = 1 and 2
// on WitnessGrid with 20 cross-fitting splits (seed 0).
type WitnessOptions struct {
	// P lists the exponents, each 1 (the witness) or 2 (the debiased
	// U-statistic); nil means {1, 2}. Both share the grid sweep.
	P []float64
	// Grid is the increasing list of candidate bandwidths; nil means
	// WitnessGrid().
	Grid []float64
	// Splits is the number of random half-splits of the cross-fitting of
	// p = 1; 0 means 20.
	Splits int
	// Seed seeds the half-splits.
	Seed uint64
	// P2Scale is the factor of the p = 2 evaluation bandwidth: the
	// U-statistic is taken at P2Scale * h_cv; 0 means 0.5.
	P2Scale float64
	// Workers is the number of goroutines; 0 means GOMAXPROCS. The results
	// are bit-identical for every value.
	Workers int
	// Progress, if not nil, is told how far the computation is.
	Progress Progress
	ctx      context.Context // the call's context, its first argument
}

// WitnessValue is one exponent's estimate.
type WitnessValue struct {
	P float64
	// Value estimates CE_p^p. It is not clamped: the p = 1 witness of a
	// calibrated model is slightly negative on average, and so may be the
	// p = 2 U-statistic.
	Value float64
	// Root is max(0, Value)^(1/p), the estimate of CE_p.
	Root float64
	// Bandwidth is the bandwidth of the value: for p = 1 the maximiser of
	// V1 over the whole sample (the cross-fitted value uses the halves'
	// choices, see HalfBandwidths), for p = 2 the evaluation bandwidth
	// P2Scale * CVBandwidth.
	Bandwidth float64
	// CVBandwidth is, for p = 2, h_cv = argmax CV(h); 0 for p = 1.
	CVBandwidth float64
	// HalfBandwidths is, for p = 1, the geometric mean of the bandwidths
	// the halves chose over all splits; 0 for p = 2.
	HalfBandwidths float64
	// Curve is the criterion at each grid bandwidth, mean over the kept
	// points: V1(h) for p = 1, CV(h) for p = 2.
	Curve []float64
	// Terms holds each point's term (0 where not kept): Value is the mean
	// of the kept points' terms (weighted by the sample weights).
	Terms []float64
	// Kept reports the points in the mean. A point is left out when every
	// kernel to it is exactly 0 at some grid bandwidth (possible only with
	// exact zeros), and for p = 2 also when fewer than two neighbours have
	// a kernel above e^-50 of the largest at the evaluation bandwidth (U_j
	// is then 0/0).
	Kept     []bool
	Excluded int
	// Warnings says when the choice is doubtful (the best bandwidth at an
	// end of the grid).
	Warnings []error
}

// WitnessResult is the outcome of Witness.
type WitnessResult struct {
	N       int
	Grid    []float64
	Values  []WitnessValue // one per WitnessOptions.P, in order
	weights []float64      // the sample weights (nil: all 1), for Resampled
}

// Resampled returns exponent i's estimate on the points idx (indices into
// the input, repeats allowed) from the per-point terms, conditional on the
// kernel sums and bandwidths of the full sample (the cheap bootstrap); NaN
// when no point of idx is kept. With sample weights it is the weighted mean
// of the kept terms of idx, each drawn point carrying its weight (NaN when
// none of positive weight is kept).
func (res *WitnessResult) Resampled(i int, idx []int) float64 {
	m, _ := keptMean(res.Values[i].Terms, res.Values[i].Kept, idx, res.weights)
	return m
}

// Witness estimates the canonical CE_1 by the cross-fitted residual witness
// and CE_2^2 by the debiased kernel U-statistic (see the comment at the top
// of witness.go). probs is n×k (rows in the simplex), labels in 0..k-1.
// weights holds one weight w_j >= 0 per sample (nil means all 1; the
// weighted forms are at the top of witness.go). Invalid weights give an
// error wrapping mathx.ErrWeights, fewer than two positive weights one
// wrapping ErrTooFew.
func Witness(ctx context.Context, probs []float64, labels []int, k int, weights []float64, opts WitnessOptions) (*WitnessResult, error) {
	opts.ctx = ctx
	if err := check(Canonical, probs, labels, k); err != nil {
		return nil, err
	}
	if err := checkWeights(weights, len(labels), true); err != nil {
		return nil, err
	}
	ps := opts.P
	if ps == nil {
		ps = []float64{1, 2}
	}
	for _, p := range ps {
		if p != 1 && p != 2 {
			return nil, fmt.Errorf("kde: witness: p = %v: must be 1 or 2", p)
		}
	}
	grid := opts.Grid
	if grid == nil {
		grid = WitnessGrid()
	}
	if err := checkGrid(grid); err != nil {
		return nil, fmt.Errorf("witness: %w", err)
	}
	splits := opts.Splits
	if splits == 0 {
		splits = 20
	}
	if splits < 0 {
		return nil, fmt.Errorf("kde: witness: %d splits", splits)
	}
	scale := opts.P2Scale
	if scale == 0 {
		scale = 0.5
	}
	if !(scale > 0) || math.IsInf(scale, 0) {
		return nil, fmt.Errorf("kde: witness: P2Scale %v: must be positive", scale)
	}
	n, ng := len(labels), len(grid)
	pr := newProblem(probs, k, labels, k, weights, opts.Workers)
	t := newTracker(opts.Progress)
	pr.track, pr.ctx = t, opts.ctx
	t.expect(int64(ng * blocks(n)))
	if slices.Contains(ps, 2) {
		t.expect(int64(blocks(n)))
	}
	e := residuals(probs, labels, k)
	sw := pr.residualSweep(grid, e, false)
	if err := canceled(opts.ctx); err != nil {
		return nil, err
	}
	defined := sw.defined
	nk := 0
	for _, ok := range defined {
		if ok {
			nk++
		}
	}
	if nk < 2 {
		return nil, fmt.Errorf("kde: witness: %w: %d of %d points have a positive kernel density at every bandwidth", ErrTooFew, nk, n)
	}
	if weights != nil {
		wdef := 0.0
		for j, ok := range defined {
			if ok {
				wdef += weights[j]
			}
		}
		if !(wdef > 0) {
			return nil, fmt.Errorf("kde: witness: %w: no point of positive weight has a positive kernel density at every bandwidth", ErrTooFew)
		}
	}
	res := &WitnessResult{N: n, Grid: slices.Clone(grid), weights: slices.Clone(weights)}
	for _, p := range ps {
		v := WitnessValue{P: p, Kept: slices.Clone(defined)}
		switch p {
		case 1:
			v.Curve = curveMeans(sw.v1, defined, weights, n, ng)
			best := mathx.Argmax(v.Curve)
			v.Bandwidth = grid[best]
			var hg float64
			v.Terms, hg = crossFit(sw.v1, defined, weights, n, ng, splits, opts.Seed)
			v.HalfBandwidths = geometricMean(grid, hg)
			v.Warnings = edgeWarning(grid, best, "witness V1")
		case 2:
			v.Curve = curveMeans(sw.cv, defined, weights, n, ng)
			best := mathx.Argmax(v.Curve)
			v.CVBandwidth = grid[best]
			v.Bandwidth = scale * grid[best]
			v.Warnings = edgeWarning(grid, best, "cross-validation CV")
			u, ok := pr.uStatistic(v.Bandwidth, e)
			if err := canceled(opts.ctx); err != nil {
				return nil, err
			}
			v.Terms = u
			for j := range v.Kept {
				v.Kept[j] = v.Kept[j] && ok[j]
				if !v.Kept[j] {
					v.Terms[j] = 0
				}
			}
		}
		kept, wkept := 0, 0.0
		for j, ok := range v.Kept {
			switch {
			case !ok:
				v.Excluded++
			case weights != nil:
				v.Value += weights[j] * v.Terms[j]
				wkept += weights[j]
				kept++
			default:
				v.Value += v.Terms[j]
				kept++
			}
		}
		if weights == nil {
			wkept = float64(kept)
		}
		if kept == 0 {
			return nil, fmt.Errorf("kde: witness p = 2: %w: no point has two neighbours at h = %g", ErrTooFew, v.Bandwidth)
		}
		if !(wkept > 0) {
			return nil, fmt.Errorf("kde: witness p = 2: %w: no point of positive weight has two neighbours at h = %g", ErrTooFew, v.Bandwidth)
		}
		v.Value /= wkept
		if !mathx.Finite(v.Value) {
			return nil, fmt.Errorf("kde: witness p = %v: estimate is %v", p, v.Value)
		}
		v.Root = math.Pow(math.Max(0, v.Value), 1/p)
		res.Values = append(res.Values, v)
	}
	return res, nil
}

// residuals returns e (n×k, input order): e_jl = [y_j = l] - f_jl.
func residuals(probs []float64, labels []int, k int) []float64 {
	e := make([]float64, len(probs))
	for j, y := range labels {
		for l := 0; l < k; l++ {
			e[j*k+l] = -probs[j*k+l]
		}
		e[j*k+y]++
	}
	return e
}

// sweep is the outcome of residualSweep: for grid point g and point j
// (input order), v1[g*n+j] = sum_k sign(g_jk) e_jk and
// cv[g*n+j] = 2 <g_j, e_j> - ||g_j||^2; with pairs, also the U-statistic
// term u[g*n+j] = 2 <g_j, e_j> - U_j, and uok[g*n+j] whether U_j is defined
// (at least two neighbours with a kernel above e^-50 of the largest).
// defined[j] is false when every kernel to j is exactly 0 at some grid
// bandwidth (its terms are 0 there).
type sweep struct {
	v1, cv, u []float64
	uok       []bool
	defined   []bool
}

// residualSweep computes the leave-one-out kernel regression of the
// residuals g_j(h) at every grid bandwidth and the per-point terms of the
// witness and of the cross-validation criterion, and with pairs those of
// the U-statistic. As looLSE: the dot products once per pair, tiles
// skipped for a bandwidth when negligible. Per bandwidth the kernel sums
// S = sum w, E = sum w e_i and, with pairs, P = sum_{i != i'} w_i w_i' and
// N = sum_{i != i'} w_i w_i' <e_i, e_i'> (in units of e^-m, m the running
// maximum log-kernel; P and N in e^-2m) are accumulated in a fixed order.
func (p *problem) residualSweep(hs []float64, e []float64, pairs bool) *sweep {
	n, k, ng := p.n, p.d, len(hs)
	cs, cmins := make([][]float64, ng), make([][]float64, ng)
	for g, h := range hs {
		cs[g] = p.logNorm(h)
		cmins[g] = tileMin(cs[g], p.ti)
	}
	ntiles := len(cmins[0])
	// The residuals in sorted order, each padded with zeros to kp entries
	// (a multiple of 4, for kernel.WeightedSumExp4; the zeros change no
	// bit of any sum: see kernel.axpyRows4AVX2), and the sums likewise.
	kp := (k + 3) &^ 3
	es := make([]float64, n*kp)
	for s, i := range p.order {
		copy(es[s*kp:s*kp+k], e[i*k:(i+1)*k])
	}
	zero := make([]float64, n)
	out := &sweep{v1: make([]float64, ng*n), cv: make([]float64, ng*n), defined: make([]bool, n)}
	if pairs {
		out.u, out.uok = make([]float64, ng*n), make([]bool, ng*n)
	}
	type scratch struct {
		m, s, pp, np, sumE []float64
		rows               [4][]float64
		bt                 *gridTile
	}
	_ = parallel.ForContext(p.ctx, blocks(n), p.workers, func() *scratch {
		w := &scratch{m: make([]float64, blockJ*ng), s: make([]float64, blockJ*ng), pp: make([]float64, blockJ*ng), np: make([]float64, blockJ*ng),
			sumE: make([]float64, blockJ*ng*kp), bt: p.newGridTile(ng)}
		for r := range w.rows {
			w.rows[r] = make([]float64, tileI)
		}
		return w
	}, func(w *scratch, b int) {
		s0 := b * blockJ
		na := min(blockJ, n-s0)
		m, sum, pp, np, sumE := w.m[:na*ng], w.s[:na*ng], w.pp[:na*ng], w.np[:na*ng], w.sumE[:na*ng*kp]
		for i := range m {
			m[i], sum[i], pp[i], np[i] = math.Inf(-1), 0, 0, 0
		}
		clear(sumE)
		w.bt.start(s0, na)
		home := s0 / p.ti
		for tt := 0; tt < ntiles; tt++ {
			t := (home + tt) % ntiles
			i0, i1 := t*p.ti, min(n, (t+1)*p.ti)
			nb := i1 - i0
			et := es[i0*kp : i1*kp]
			sel := w.bt.tile(t, hs, cmins, m, zero[i0:i1])
			// The sums with terms in this tile go four at a time
			// (kernel.WeightedSumExp4: each row of residuals loaded
			// once for the four): a point's bandwidths, and with
			// vectors of at most witnessCrossPoints entries those of
			// several points; the rest one by one. Every sum gets the
			// same operations either way (each sum is met once per
			// tile, and its terms are added before the next tile's).
			var group [4]int // a*ng + g of the pending sums
			ngroup := 0
			// rest sums the pending sums one by one.
			rest := func() {
				for r, x := range group[:ngroup] {
					sum[x] += kernel.WeightedSumExp(sumE[x*kp:(x+1)*kp], w.rows[r][:nb], et, m[x])
				}
				ngroup = 0
			}
			for q, a := range sel {
				s := s0 + a
				ma := m[a*ng : (a+1)*ng]
				need := w.bt.need[a*ng : (a+1)*ng]
				dot := w.bt.dots[q*nb : (q+1)*nb]
				self := s - i0
				for g, h := range hs {
					if !need[g] {
						continue
					}
					row := w.rows[ngroup][:nb]
					tm := kernel.AffineMax(row, dot, cs[g][i0:i1], 1/h)
					if self >= 0 && self < nb {
						row[self] = math.Inf(-1) // masks i = j exactly
						tm = kernel.Max(row)
					}
					if tm == math.Inf(-1) {
						continue
					}
					x := a*ng + g
					ea := sumE[x*kp : (x+1)*kp]
					if tm > ma[g] {
						if ma[g] > math.Inf(-1) {
							f := math.Exp(ma[g] - tm)
							sum[x] *= f
							pp[x] *= f * f
							np[x] *= f * f
							for l := range ea {
								ea[l] *= f
							}
						}
						ma[g] = tm
					}
					if pairs {
						sum[x], pp[x], np[x] = kernel.PairWeightedSumExp(ea, row, et, ma[g], sum[x], pp[x], np[x])
						continue
					}
					group[ngroup] = x
					if ngroup++; ngroup == 4 {
						var acc, rows [4][]float64
						var shift [4]float64
						for r, x := range group {
							acc[r], rows[r], shift[r] = sumE[x*kp:(x+1)*kp], w.rows[r][:nb], m[x]
						}
						ws := kernel.WeightedSumExp4(&acc, &rows, et, &shift)
						for r, x := range group {
							sum[x] += ws[r]
						}
						ngroup = 0
					}
				}
				if kp > witnessCrossPoints {
					rest()
				}
			}
			rest()
		}
		for a := 0; a < na; a++ {
			j := p.order[s0+a]
			ej := e[j*k : (j+1)*k]
			ok := true
			for g := 0; g < ng; g++ {
				x := a*ng + g
				if m[x] == math.Inf(-1) {
					ok = false
					continue
				}
				ea := sumE[x*kp : x*kp+k]
				inv := 1 / sum[x]
				v1, dotGE, gg := 0.0, 0.0, 0.0
				for l, v := range ea {
					switch {
					case v > 0:
						v1 += ej[l]
					case v < 0:
						v1 -= ej[l]
					}
					gl := v * inv
					dotGE += gl * ej[l]
					gg += gl * gl
				}
				out.v1[g*n+j] = v1
				out.cv[g*n+j] = 2*dotGE - gg
				if pairs && pp[x] > 0 {
					out.u[g*n+j] = 2*dotGE - np[x]/pp[x]
					out.uok[g*n+j] = true
				}
			}
			out.defined[j] = ok
		}
		p.track.add(int64(ng))
	})
	for j, ok := range out.defined {
		if !ok {
			for g := 0; g < ng; g++ {
				out.v1[g*n+j], out.cv[g*n+j] = 0, 0
			}
		}
	}
	return out
}

// witnessCrossPoints is the largest padded K at which residualSweep groups
// the sums of different points (one bandwidth: the witness at a fixed h);
// above it each point's sums are grouped alone, as the grid's bandwidths.
// Measured on the avx2 path (ece_witness at h = 0.3, n = 10,000): K = 10
// 0.20 -> 0.17 s grouped across points, K = 100 1.05 -> 1.25 s (each of
// the four points' 800-byte rows read in 8-entry pieces from L2).
const witnessCrossPoints = 32

// uStatistic returns, for every point j (input order), the p = 2 term
// 2 <g_j, e_j> - U_j at bandwidth h and whether it is defined (at least two
// neighbours with a kernel above e^-50 of the largest): residualSweep at
// the one bandwidth with the pair sums.
func (p *problem) uStatistic(h float64, e []float64) (terms []float64, ok []bool) {
	sw := p.residualSweep([]float64{h}, e, true)
	return sw.u, sw.uok
}

// curveMeans returns the mean over the defined points of x[g*n + j] for
// each grid point g, summed in point order, weighted by w (nil: all 1).
func curveMeans(x []float64, defined []bool, w []float64, n, ng int) []float64 {
	c := make([]float64, ng)
	kept := 0.0
	for j, ok := range defined {
		if ok {
			kept += mathx.Weight(w, j)
		}
	}
	for g := range c {
		for j, ok := range defined {
			if !ok {
				continue
			}
			if w != nil {
				c[g] += w[j] * x[g*n+j]
			} else {
				c[g] += x[g*n+j]
			}
		}
		c[g] /= kept
	}
	return c
}

// crossFit returns each defined point's cross-fitted witness term: the mean
// over splits of v[g*n + j] at the grid index g chosen (argmax of the half
// mean) by the half that does not contain j. Split s permutes the defined
// points with PCG(seed, s) and cuts the permutation in the middle (the
// first half has the floor of half the points). meanIdx is the mean of the
// chosen grid indices over halves and splits (see geometricMean). With
// weights w (nil: all 1) each half chooses by its weighted sum.
func crossFit(v []float64, defined []bool, w []float64, n, ng, splits int, seed uint64) (terms []float64, meanIdx float64) {
	var pts []int
	for j, ok := range defined {
		if ok {
			pts = append(pts, j)
		}
	}
	terms = make([]float64, n)
	if splits == 0 {
		return terms, 0
	}
	half := len(pts) / 2
	perm := make([]int, len(pts))
	sumA, sumB := make([]float64, ng), make([]float64, ng)
	for s := 0; s < splits; s++ {
		rng := rand.New(rand.NewPCG(seed, uint64(s)))
		for i, x := range rng.Perm(len(pts)) {
			perm[i] = pts[x]
		}
		a, b := perm[:half], perm[half:]
		halfMeans(sumA, v, a, w, n)
		halfMeans(sumB, v, b, w, n)
		ga, gb := mathx.Argmax(sumA), mathx.Argmax(sumB)
		for _, j := range a {
			terms[j] += v[gb*n+j]
		}
		for _, j := range b {
			terms[j] += v[ga*n+j]
		}
		meanIdx += float64(ga+gb) / 2
	}
	for _, j := range pts {
		terms[j] /= float64(splits)
	}
	return terms, meanIdx / float64(splits)
}

// halfMeans sets sum[g] to the sum over the points idx of v[g*n + j] (in the
// order of idx; the argmax is the same as of the mean), each times w_j with
// weights w (nil: all 1).
func halfMeans(sum, v []float64, idx []int, w []float64, n int) {
	for g := range sum {
		s := 0.0
		row := v[g*n : (g+1)*n]
		if w != nil {
			for _, j := range idx {
				s += w[j] * row[j]
			}
		} else {
			for _, j := range idx {
				s += row[j]
			}
		}
		sum[g] = s
	}
}

// geometricMean returns the bandwidth at the fractional grid index x,
// interpolating log h linearly between grid points: the geometric mean of
// the chosen bandwidths when the grid is evenly spaced in log h.
func geometricMean(grid []float64, x float64) float64 {
	i := min(int(x), len(grid)-1)
	if i == len(grid)-1 {
		return grid[i]
	}
	f := x - float64(i)
	return math.Exp((1-f)*math.Log(grid[i]) + f*math.Log(grid[i+1]))
}

// edgeWarning warns when the best grid index is at an end of the grid.
func edgeWarning(grid []float64, best int, what string) []error {
	if len(grid) < 2 || (best > 0 && best < len(grid)-1) {
		return nil
	}
	return []error{fmt.Errorf("the %s maximum is at the end of the bandwidth grid (h = %g): the optimum may lie outside [%g, %g]", what, grid[best], grid[0], grid[len(grid)-1])}
}
