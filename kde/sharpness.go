package kde

import (
	"context"
	"fmt"
	"math"
	"slices"
)

// SharpnessResult is the estimate of the sharpness term E[E[y | f]^2].
type SharpnessResult struct {
	Notion    Notion // TopLabel or Binary
	Bandwidth float64
	// Value estimates E[E[y | f]^2] (the paper's footnote 3) and Variance
	// = Value - mean(y)^2 estimates Var(E[y | f]).
	Value, Variance float64
	N, Excluded     int
	// Terms[j] is point j's ratio (eq. 7) and Kept[j] whether it has one
	// (at least two centres with positive kernel): Value is the mean of the
	// kept terms (weighted by the sample weights).
	Terms   []float64
	Kept    []bool
	weights []float64 // the sample weights (nil: all 1), for Resampled
}

// Resampled returns the estimate on the points idx (indices into the input,
// repeats allowed) from the per-point terms, conditional on the kernel sums
// of the full sample (the cheap bootstrap); NaN when no point of idx is
// kept. With sample weights it is the weighted mean of the kept terms of
// idx, each drawn point carrying its weight (NaN when none of positive
// weight is kept).
func (res *SharpnessResult) Resampled(idx []int) float64 {
	m, _ := keptMean(res.Terms, res.Kept, idx, res.weights)
	return m
}

// Sharpness estimates E[E[y | f(x)]^2] for a binary score (Binary: p1 and the
// labels) or the top-label score (TopLabel: the confidence and the
// correctness) with the Beta kernel of bandwidth opts.Bandwidth, by the
// partially debiased ratio of U-statistics of the paper's eq. 7:
//
//	(1/n) sum_j [ (sum_{i!=j} k_ij y_i)^2 - sum_{i!=j} (k_ij y_i)^2 ]
//	          / [ (sum_{i!=j} k_ij)^2   - sum_{i!=j} k_ij^2 ]
//
// with k_ij = k_h(f_j; f_i). The sums are taken in log space with the shift
// of each point (the ratio does not depend on it); a point whose denominator
// is not positive (fewer than two centres with positive kernel) is left out
// and counted in Excluded. opts.P is not used. With opts.Debias each ratio
// is debiased as in appendix D (see squaredDebiased in debias.go).
//
// weights holds one weight w_j >= 0 per sample (nil means all 1). Every
// kernel k_ij is then w_i k_ij (the weighted U-statistics of debias.go),
// the outer mean is sum_j w_j t_j / sum_j w_j over the kept points, and
// the mean of y in Variance is sum_j w_j y_j / sum_j w_j over all points:
//
//	sum_j w_j [ (sum_{i!=j} w_i k_ij y_i)^2 - sum_{i!=j} (w_i k_ij y_i)^2 ]
//	        / [ (sum_{i!=j} w_i k_ij)^2   - sum_{i!=j} (w_i k_ij)^2 ] / sum_j w_j
//
// A sample of weight 0 changes nothing, unit weights give the unweighted
// values bit for bit. Invalid weights give an error wrapping
// mathx.ErrWeights, fewer than two positive weights one wrapping
// ErrTooFew.
func Sharpness(ctx context.Context, notion Notion, probs []float64, labels []int, k int, weights []float64, opts Options) (*SharpnessResult, error) {
	opts.ctx = ctx
	if notion != TopLabel && notion != Binary {
		return nil, fmt.Errorf("kde: sharpness is defined for top_label and binary, not %s", notion)
	}
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
	pts := parts(notion, probs, labels, k, weights, opts.Workers)
	lineMode(pts, opts.Exact)
	track(opts.ctx, pts, opts.Progress, 1)
	pr := pts[0].prob
	_, sq := pr.sums(h, 2)
	if err := canceled(opts.ctx); err != nil {
		return nil, err
	}
	s, q := sq[0], sq[1]
	n := pr.n
	res := &SharpnessResult{Notion: notion, Bandwidth: h, N: n, Terms: make([]float64, n), Kept: make([]bool, n), weights: slices.Clone(weights)}
	sum, ybar := 0.0, 0.0
	wsum, wkept := float64(n), 0.0 // the total and kept weights (with weights)
	if weights != nil {
		wsum = 0
	}
	for j := 0; j < n; j++ {
		wj := 1.0
		if weights != nil {
			wj = weights[j]
			wsum += wj
			ybar += wj * float64(pr.labels[j])
		} else {
			ybar += float64(pr.labels[j])
		}
		s0, s1, q0, q1 := s[2*j], s[2*j+1], q[2*j], q[2*j+1]
		rs := ratioSums{M: pr.others(j), X: s0 + s1, XX: q0 + q1, Y: s1, XY: q1}
		partial, full := rs.squaredDebiased(q1)
		if math.IsNaN(partial) {
			res.Excluded++
			continue
		}
		v := partial
		if opts.Debias {
			v = full
		}
		res.Terms[j], res.Kept[j] = v, true
		if weights != nil {
			sum += wj * v
			wkept += wj
		} else {
			sum += v
		}
	}
	if res.Excluded == n {
		return nil, fmt.Errorf("kde: sharpness: %w", ErrNoDensity)
	}
	if weights == nil {
		wkept = float64(n - res.Excluded)
	} else if !(wkept > 0) {
		return nil, fmt.Errorf("kde: sharpness: %w: no sample of positive weight has two neighbours", ErrNoDensity)
	}
	ybar /= wsum
	res.Value = sum / wkept
	res.Variance = res.Value - ybar*ybar
	if math.IsNaN(res.Value) || math.IsInf(res.Value, 0) {
		return nil, fmt.Errorf("kde: sharpness at bandwidth %v is not finite", h)
	}
	return res, nil
}
