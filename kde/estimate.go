package kde

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/calib-dev/calib/internal/mathx"
)

// ErrTooFew is wrapped by the errors for inputs with fewer than 2 samples
// (the leave-one-out sums need at least one other sample).
var ErrTooFew = errors.New("too few samples")

// ErrNoDensity is returned when every evaluation point has kernel density
// exactly 0 (possible only with exact zeros in the predictions).
var ErrNoDensity = errors.New("every point has zero kernel density")

// Options configures Estimate and Gradient. The zero value is not usable:
// Bandwidth must be set (use SelectBandwidth to choose one).
type Options struct {
	// Bandwidth is the kernel bandwidth h > 0; alpha_i = f_i/h + 1.
	Bandwidth float64
	// P lists the exponents p >= 1 to report; nil means {1}. The ratios
	// r_j do not depend on p, so extra exponents cost O(nK) each.
	P []float64
	// ClassMean makes ClassWise report the mean over the K classes instead
	// of the sum (the sum is the reference code's convention).
	ClassMean bool
	// Workers is the number of goroutines; 0 means GOMAXPROCS. The
	// results are bit-identical for every value.
	Workers int
	// Progress, if not nil, is told how far the computation is.
	Progress Progress
	ctx      context.Context // the call's context, its first argument
	// Terms keeps the per-point terms in the Result (for resampling).
	Terms bool
	// Neighbours makes Estimate report Result.Neighbours (the squared
	// kernel sums ride along in the same sweep).
	Neighbours bool
	// Exact computes the one-dimensional notions (TopLabel, Binary,
	// ClassWise) by the exact O(n^2) sweeps instead of the tree of
	// series of line.go (relative error of every kernel sum about 1e-13;
	// see there). Canonical is always exact.
	Exact bool
	// Debias replaces every ratio r_jl by its appendix C debiased value
	// (see debias.go: the O(1/n) bias of the ratio at a fixed point and
	// bandwidth is removed to O(n^-3); the smoothing bias and the bias of
	// the p-th power are not). Sharpness applies appendix D to its ratio
	// of squared means instead; Gradient rejects it.
	Debias bool
}

// Value is one Lp estimate.
type Value struct {
	P     float64 // the exponent p
	Value float64 // the estimate of CE_p^p (the paper's form, eq. 2)
	Root  float64 // Value^(1/p), the estimate of CE_p
}

// Result is an ECE^KDE estimate for one notion and bandwidth.
type Result struct {
	Notion    Notion
	Bandwidth float64
	N         int // samples
	// Excluded counts evaluation points left out because their
	// leave-one-out kernel density is exactly 0 (only possible with exact
	// zeros or ones in the predictions, or when every other sample of
	// positive weight is 0); the averages run over the others. For ClassWise
	// it is the sum over classes.
	Excluded int
	Values   []Value // one per Options.P, in order
	// PerClass holds, for ClassWise, the class terms
	// (1/n') sum_j |r_jk - f_jk|^p (weighted: sum_j w_j |r_jk - f_jk|^p /
	// sum_j w_j over the kept j): PerClass[i][k] for exponent P[i].
	PerClass [][]float64
	// Terms[i][c][j] is point j's term of part c (the class of ClassWise,
	// else 0) for exponent P[i], and Kept[c][j] whether point j is kept:
	// Value = sum_c mean over kept j of Terms[i][c][j] (the mean weighted
	// by the sample weights; divided by K with ClassMean). Set only with
	// Options.Terms.
	Terms     [][][]float64
	Kept      [][]bool
	classMean bool
	weights   []float64 // the sample weights (nil: all 1), for Resampled
	// Neighbours is the median over the evaluation points (of every part)
	// of the effective number of neighbours of the leave-one-out
	// regression, (sum_{i != j} k_ij)^2 / sum_{i != j} k_ij^2, in [1, n-1]:
	// how many samples r_j really averages. Near n - 1 the regression is
	// the overall label frequency whatever f_j (the kernel is wider than
	// the data), and the estimate measures the spread of the predictions,
	// not their calibration. With sample weights k_ij is w_i k_h(f_j; f_i)
	// (Kish's effective sample size, in [1, n+ - 1] for n+ positive
	// weights) and the median is weighted by w_j: the smallest value whose
	// points (in increasing order) carry more than half of the total
	// weight, which for unit weights is the unweighted median above. Set
	// only with Options.Neighbours.
	Neighbours float64
}

// Resampled returns the estimate for exponent P[i] on the points idx
// (indices into the input, repeats allowed) from the per-point terms, with
// the leave-one-out kernel sums of the full sample: the bootstrap of the
// per-point terms, conditional on those sums. It needs Options.Terms. With
// sample weights each drawn point carries its weight (the weighted
// bootstrap draws rows uniformly): the mean of each part is
// sum_{j in idx} w_j t_j / sum_{j in idx} w_j over the kept points.
func (res *Result) Resampled(i int, idx []int) float64 {
	v := 0.0
	for c, terms := range res.Terms[i] {
		if m, kept := keptMean(terms, res.Kept[c], idx, res.weights); kept > 0 {
			v += m
		}
	}
	if res.classMean {
		v /= float64(len(res.Terms[i]))
	}
	return v
}

// keptMean returns the mean of terms[j] over the kept points j of idx
// (repeats counted), summed in the order of idx, and how many there are
// (the mean is NaN when none is kept): the resample of per-point terms
// behind every cheap bootstrap of the kernel estimates. With weights w (nil:
// all 1) it is the weighted mean sum w_j terms[j] / sum w_j, and n counts
// the kept points of positive weight (NaN when there is none).
func keptMean(terms []float64, kept []bool, idx []int, w []float64) (mean float64, n int) {
	sum := 0.0
	if w == nil {
		for _, j := range idx {
			if kept[j] {
				sum += terms[j]
				n++
			}
		}
		if n == 0 {
			return math.NaN(), 0
		}
		return sum / float64(n), n
	}
	den := 0.0
	for _, j := range idx {
		if kept[j] && w[j] > 0 {
			sum += w[j] * terms[j]
			den += w[j]
			n++
		}
	}
	if n == 0 {
		return math.NaN(), 0
	}
	return sum / den, n
}

// part is one kernel regression of an estimate and how its ratios are
// compared with the predictions: Canonical compares every label l with
// column l; the Beta-kernel notions compare the ratio of label 1 with the
// scalar in column 0.
type part struct {
	prob      *problem
	canonical bool
	scale     float64 // 2 for Binary, else 1
	class     int     // the column of probs this part belongs to (ClassWise; TopLabel: -1; Binary: 1)
}

// nerr is the number of error terms per point: K for Canonical, else 1.
func (pt *part) nerr() int {
	if pt.canonical {
		return pt.prob.nl
	}
	return 1
}

// errAt returns the l-th error term of point j given the ratios r:
// r_jl - x_jl for Canonical, r_j1 - c_j for the Beta-kernel notions.
func (pt *part) errAt(r []float64, j, l int) float64 {
	p := pt.prob
	if pt.canonical {
		return r[j*p.nl+l] - p.x[j*p.d+l]
	}
	return r[j*p.nl+1] - p.x[j*p.d]
}

// pointTerms returns terms[i][j] = scale x sum_l |e_jl|^p for each exponent
// ps[i] and point j, and kept[j] (lse > -Inf); excluded points get 0.
func (pt *part) pointTerms(r, lse, ps []float64) (terms [][]float64, kept []bool, nkept int) {
	terms, kept = make([][]float64, len(ps)), make([]bool, len(lse))
	for i := range terms {
		terms[i] = make([]float64, len(lse))
	}
	for j, v := range lse {
		if v == math.Inf(-1) {
			continue
		}
		kept[j] = true
		nkept++
		for l := 0; l < pt.nerr(); l++ {
			e := pt.errAt(r, j, l)
			for i, p := range ps {
				terms[i][j] += powAbs(e, p)
			}
		}
		for i := range ps {
			terms[i][j] *= pt.scale
		}
	}
	return terms, kept, nkept
}

// lpMeans returns, for each exponent, scale x (1/n') sum over the n' kept
// points (lse > -Inf) of sum_l |e_jl|^p, summed in point order (weighted by
// w, see meanTerms), the number n' of kept points and their total weight.
func (pt *part) lpMeans(r, lse, ps, w []float64) (means []float64, nkept int, wkept float64) {
	terms, kept, nkept := pt.pointTerms(r, lse, ps)
	means, wkept = meanTerms(terms, kept, nkept, w)
	return means, nkept, wkept
}

// meanTerms returns, for each exponent, the sum of its point terms (in
// point order) divided by nkept, and wkept = nkept. With weights w it
// returns the weighted means sum_j w_j t_j / wkept, wkept = sum over the
// kept j of w_j (the terms of points not kept are 0); for unit weights
// both are bit-identical to the unweighted ones (1 x t is exact, and the
// sum of nkept ones is nkept). The means are 0 when wkept is 0.
func meanTerms(terms [][]float64, kept []bool, nkept int, w []float64) (means []float64, wkept float64) {
	means = make([]float64, len(terms))
	if w == nil {
		for i, t := range terms {
			for _, v := range t {
				means[i] += v
			}
			means[i] /= float64(max(nkept, 1))
		}
		return means, float64(nkept)
	}
	for j, ok := range kept {
		if ok {
			wkept += w[j]
		}
	}
	for i, t := range terms {
		for j, v := range t {
			means[i] += w[j] * v
		}
		if wkept > 0 {
			means[i] /= wkept
		}
	}
	return means, wkept
}

// check validates the inputs shared by Estimate, Gradient and
// SelectBandwidth.
func check(notion Notion, probs []float64, labels []int, k int) error {
	n := len(labels)
	switch {
	case !slices.Contains(notionList, notion):
		return fmt.Errorf("kde: invalid notion %q", notion)
	case k < 2:
		return fmt.Errorf("kde: %d classes, need at least 2", k)
	case notion == Binary && k != 2:
		return fmt.Errorf("kde: the binary notion needs two columns (1-p1, p1), got %d", k)
	case len(probs) != n*k:
		return fmt.Errorf("kde: %d probabilities for %d samples of %d classes", len(probs), n, k)
	case n < 2:
		return fmt.Errorf("kde: %w: ECE^KDE needs at least 2 samples, got %d", ErrTooFew, n)
	}
	for i, v := range probs {
		if !(v >= 0 && v <= 1) {
			return fmt.Errorf("kde: sample %d, class %d: probability %v outside [0, 1]", i/k, i%k, v)
		}
	}
	for i, y := range labels {
		if y < 0 || y >= k {
			return fmt.Errorf("kde: sample %d: label %d outside 0..%d", i, y, k-1)
		}
	}
	return nil
}

// checkWeights validates sample weights for n samples (nil: all 1): an
// error wrapping mathx.ErrWeights for a wrong length, a negative, NaN or
// infinite weight, or all weights 0. With loo (the leave-one-out
// estimators) at least two weights must be positive (ErrTooFew): a sample
// of positive weight needs another one in its leave-one-out sums.
func checkWeights(w []float64, n int, loo bool) error {
	if err := mathx.CheckWeights(w, n); err != nil {
		return fmt.Errorf("kde: %w", err)
	}
	if w == nil || !loo {
		return nil
	}
	pos := 0
	for _, v := range w {
		if v > 0 {
			pos++
		}
	}
	if pos < 2 {
		return fmt.Errorf("kde: %w: the leave-one-out estimators need at least 2 samples of positive weight, got %d", ErrTooFew, pos)
	}
	return nil
}

func checkBandwidth(h float64) error {
	if !(h > 0) || math.IsInf(h, 0) {
		return fmt.Errorf("kde: bandwidth %v: must be positive and finite", h)
	}
	return nil
}

// checkGrid checks a bandwidth grid: not empty, every bandwidth positive and
// finite, increasing.
func checkGrid(grid []float64) error {
	if len(grid) == 0 {
		return errors.New("kde: empty bandwidth grid")
	}
	for i, h := range grid {
		if err := checkBandwidth(h); err != nil {
			return err
		}
		if i > 0 && !(h > grid[i-1]) {
			return fmt.Errorf("kde: bandwidth grid must be increasing (%v after %v)", h, grid[i-1])
		}
	}
	return nil
}

// MaxP is the largest exponent p that Estimate and Gradient accept. The
// per-point terms |e|^p underflow float64 for |e| < 2^(-1074/p), so above
// this bound a moderately miscalibrated model would read CE_p^p = 0 (at
// p = 32 only errors below 1e-10 underflow).
const MaxP = 32

func checkP(p float64) error {
	if !(p >= 1 && p <= MaxP) {
		return fmt.Errorf("kde: p = %v: must be a number in [1, %d] (above it |e|^p underflows float64)", p, MaxP)
	}
	return nil
}

// exponents returns the exponents of Options.P ({1} for nil), checked.
func exponents(ps []float64) ([]float64, error) {
	if ps == nil {
		return []float64{1}, nil
	}
	for _, p := range ps {
		if err := checkP(p); err != nil {
			return nil, err
		}
	}
	return ps, nil
}

// parts builds the kernel regressions of a notion, with the sample weights
// w (nil: all 1).
func parts(notion Notion, probs []float64, labels []int, k int, w []float64, workers int) []part {
	n := len(labels)
	switch notion {
	case Canonical:
		return []part{{prob: newProblem(probs, k, labels, k, w, workers), canonical: true, scale: 1, class: -1}}
	case ClassWise:
		ps := make([]part, k)
		for c := 0; c < k; c++ {
			x, ind := make([]float64, n), make([]int, n)
			for j := range x {
				x[j] = probs[j*k+c]
				if labels[j] == c {
					ind[j] = 1
				}
			}
			ps[c] = part{prob: betaProblem(x, ind, w, workers), scale: 1, class: c}
		}
		return ps
	case TopLabel:
		x, ind := confidences(probs, labels, k)
		return []part{{prob: betaProblem(x, ind, w, workers), scale: 1, class: -1}}
	case Binary:
		x := make([]float64, n)
		for j := range x {
			x[j] = probs[j*2+1]
		}
		return []part{{prob: betaProblem(x, labels, w, workers), scale: 2, class: 1}}
	}
	panic("kde: unreachable")
}

// track attaches ctx (may be nil) and a progress tracker for sweeps sweeps
// over the points of every part, and returns the tracker (nil when fn is
// nil).
func track(ctx context.Context, pts []part, fn Progress, sweeps int) *tracker {
	t := newTracker(fn)
	for i := range pts {
		pts[i].prob.track = t
		pts[i].prob.ctx = ctx
		t.expect(int64(sweeps * blocks(pts[i].prob.n)))
	}
	return t
}

// betaProblem is the Beta-kernel regression of the 0/1 labels ind on the
// scalars c: a two-column Dirichlet problem on (c, 1-c), with sample
// weights w (nil: all 1).
func betaProblem(c []float64, ind []int, w []float64, workers int) *problem {
	p := newProblem(betaPoints(c), 2, ind, 2, w, workers)
	p.beta = true
	return p
}

// lineMode makes the Beta problems of pts use the series of
// line.go unless exact.
func lineMode(pts []part, exact bool) {
	for _, pt := range pts {
		pt.prob.fast = pt.prob.beta && !exact
	}
}

// confidences returns c_j = max_k f_jk and a_j = [argmax_k f_jk = y_j] (the
// first maximum on ties).
func confidences(probs []float64, labels []int, k int) (c []float64, a []int) {
	n := len(labels)
	c, a = make([]float64, n), make([]int, n)
	for j := range c {
		row := probs[j*k : (j+1)*k]
		best := argMax(row)
		c[j] = row[best]
		if best == labels[j] {
			a[j] = 1
		}
	}
	return c, a
}

// argMax returns the index of the largest entry of row (the first on ties).
func argMax(row []float64) int {
	best := 0
	for m, v := range row {
		if v > row[best] {
			best = m
		}
	}
	return best
}

// powAbs returns |e|^p.
func powAbs(e, p float64) float64 {
	switch p {
	case 1:
		return math.Abs(e)
	case 2:
		return e * e
	}
	return math.Pow(math.Abs(e), p)
}

// dPowAbs returns d|e|^p/de = p |e|^(p-1) sign(e), 0 at e = 0.
func dPowAbs(e, p float64) float64 {
	switch {
	case e == 0:
		return 0
	case p == 1:
		return math.Copysign(1, e)
	case p == 2:
		return 2 * e
	}
	return p * math.Pow(math.Abs(e), p-1) * math.Copysign(1, e)
}

// Estimate returns the ECE^KDE estimates of CE_p^p for one notion:
//
//	CE_p^p ≈ (1/n') sum_j || r_j - f_j ||_p^p,
//	r_j = sum_{i != j} k_h(f_j; f_i) y_i / sum_{i != j} k_h(f_j; f_i)
//
// (eq. 2, 3, 9) for every exponent in opts.P. probs holds n rows of k
// probabilities (row-major) and labels the n labels in 0..k-1. For Binary,
// k must be 2 and column 1 is p1. The sum runs over the n' points whose
// leave-one-out density is positive (Result.Excluded counts the others).
//
// weights holds one weight w_j >= 0 per sample (nil means all 1). The
// estimate is then
//
//	CE_p^p ≈ sum_j w_j || r_j - f_j ||_p^p / sum_j w_j,
//	r_j = sum_{i != j} w_i k_h(f_j; f_i) y_i / sum_{i != j} w_i k_h(f_j; f_i)
//
// with both outer sums over the kept points: a sample's weight scales both
// its term in the outer mean and its kernel in every other point's ratio,
// and the term i = j stays excluded exactly. A sample of weight 0 changes
// nothing (as if its row were removed), unit weights give the unweighted
// values bit for bit, and scaling all weights leaves the estimate
// unchanged. The weights are not frequency counts: a row of weight 2 is not
// two copies of the row, whose copies would be each other's neighbours.
// With opts.Debias the debiasing averages over the samples of positive
// weight (see debias.go). Invalid weights give an error wrapping
// mathx.ErrWeights, fewer than two positive weights one wrapping
// ErrTooFew.
//
// Memory is O(nk); the O(n^2) sums are streamed in blocks on opts.Workers
// goroutines with bit-identical results for any number of them.
func Estimate(ctx context.Context, notion Notion, probs []float64, labels []int, k int, weights []float64, opts Options) (*Result, error) {
	opts.ctx = ctx
	if err := check(notion, probs, labels, k); err != nil {
		return nil, err
	}
	if err := checkWeights(weights, len(labels), true); err != nil {
		return nil, err
	}
	h := opts.Bandwidth
	if err := checkBandwidth(h); err != nil {
		return nil, err
	}
	ps, err := exponents(opts.P)
	if err != nil {
		return nil, err
	}
	res := &Result{Notion: notion, Bandwidth: h, N: len(labels), Values: make([]Value, len(ps)), weights: slices.Clone(weights)}
	pts := parts(notion, probs, labels, k, weights, opts.Workers)
	lineMode(pts, opts.Exact)
	track(opts.ctx, pts, opts.Progress, 1)
	if notion == ClassWise {
		res.PerClass = make([][]float64, len(ps))
		for i := range ps {
			res.PerClass[i] = make([]float64, k)
		}
	}
	if opts.Terms {
		res.Terms, res.Kept, res.classMean = make([][][]float64, len(ps)), make([][]bool, len(pts)), notion == ClassWise && opts.ClassMean
		for i := range ps {
			res.Terms[i] = make([][]float64, len(pts))
		}
	}
	var ess []float64
	for pi, pt := range pts {
		ratios := pt.prob.ratios
		if opts.Debias {
			ratios = pt.prob.debiasedRatios
		}
		var r, lse []float64
		if opts.Neighbours && !opts.Debias {
			var e []float64
			r, lse, e = pt.prob.ratiosNeighbours(h)
			ess = append(ess, e...)
		} else {
			r, lse = ratios(h)
		}
		if err := canceled(opts.ctx); err != nil {
			return nil, err
		}
		terms, kept, nkept := pt.pointTerms(r, lse, ps)
		means, wkept := meanTerms(terms, kept, nkept, weights)
		if opts.Terms {
			res.Kept[pi] = kept
			for i := range ps {
				res.Terms[i][pi] = terms[i]
			}
		}
		res.Excluded += pt.prob.n - nkept
		if nkept == 0 {
			return nil, fmt.Errorf("kde: %s: %w", notion, ErrNoDensity)
		}
		if !(wkept > 0) {
			return nil, fmt.Errorf("kde: %s: %w: no sample of positive weight has a positive leave-one-out density", notion, ErrNoDensity)
		}
		for i, v := range means {
			res.Values[i].Value += v
			if notion == ClassWise {
				res.PerClass[i][pi] = v
			}
		}
	}
	if len(ess) > 0 {
		res.Neighbours = medianNeighbours(ess, weights)
	}
	for i, p := range ps {
		v := &res.Values[i]
		v.P = p
		if notion == ClassWise && opts.ClassMean {
			v.Value /= float64(k)
		}
		v.Root = math.Pow(v.Value, 1/p)
		if math.IsNaN(v.Value) || math.IsInf(v.Value, 0) || math.IsNaN(v.Root) {
			return nil, fmt.Errorf("kde: %s: the estimate at bandwidth %v is not finite (bandwidth too small for float64?)", notion, h)
		}
	}
	return res, nil
}

// medianNeighbours returns the median of ess, the effective numbers of
// neighbours of every point of every part (parts of n points each, in
// order), weighted by the sample weights w of the points (nil: all 1): with
// the values in increasing order, the first whose cumulative weight exceeds
// half the total. For unit weights that is ess[len(ess)/2] of the sorted
// values, the unweighted median; points of weight 0 never are it.
func medianNeighbours(ess, w []float64) float64 {
	if w == nil {
		slices.Sort(ess)
		return ess[len(ess)/2]
	}
	n := len(w)
	type pt struct{ ess, w float64 }
	ps := make([]pt, len(ess))
	total := 0.0
	for i, v := range ess {
		ps[i] = pt{v, w[i%n]}
		total += w[i%n]
	}
	// Ties in ess may be ordered either way: the value returned is the
	// same.
	slices.SortFunc(ps, func(a, b pt) int { return cmp.Compare(a.ess, b.ess) })
	cum := 0.0
	for _, p := range ps {
		if cum += p.w; cum > total/2 {
			return p.ess
		}
	}
	return ps[len(ps)-1].ess
}
