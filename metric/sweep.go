package metric

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
)

// Sweep is the monotonic sweep of Roelofs, Cain, Shlens and Mozer,
// "Mitigating Bias in Calibration Error Estimation" (AISTATS 2022), as
// their code (caltrain's em_/ew_monotonic_sweep, the same in
// robustness_metrics) computes it: for B = 2, 3, ..., n-1 bin the scores
// into B bins (Binning: EqualMass puts the point of sorted rank r in bin
// min(B-1, floor((r/n) B)), EqualWidth the score x in min(B-1, floor(x
// B))) and stop at the first B whose bins' mean outcomes, over the
// non-empty bins in order, decrease somewhere (equal means do not
// break it); the result is the last B that did not (1 bin when B = 2
// already breaks, or n <= 2). Bins are the number of bins B of the
// result and Assign the bin of each point, in input order.
type Sweep struct {
	Bins   int
	Assign []int
}

// MonotonicSweep returns the monotonic sweep of the scores and outcomes
// (weights nil: all 1; rows of weight 0 are left out, Assign -1, and a
// bin's mean outcome is weighted). Ties of equal-mass ranks are broken by
// input order (numpy's quicksort leaves them unspecified). It costs
// O(n log n) to sort plus O(B) (equal mass) or O(B log n) (equal width)
// per B tried.
func MonotonicSweep(scores, outcomes, weights []float64, binning Binning) (*Sweep, error) {
	checkPair("MonotonicSweep", scores, outcomes)
	checkWeights("MonotonicSweep", weights, len(scores))
	if binning != EqualMass && binning != EqualWidth {
		return nil, fmt.Errorf("metric: monotonic sweep: unknown binning %v", binning)
	}
	var idx []int
	for i := range scores {
		if weights == nil || weights[i] > 0 {
			idx = append(idx, i)
		}
	}
	m := len(idx)
	if m == 0 {
		return nil, fmt.Errorf("metric: monotonic sweep: no sample of positive weight")
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(scores[a], scores[b]) })
	// Prefix sums over the sorted points: weight and weighted outcome.
	cw, cy := make([]float64, m+1), make([]float64, m+1)
	for j, i := range idx {
		w := 1.0
		if weights != nil {
			w = weights[i]
		}
		cw[j+1], cy[j+1] = cw[j]+w, cy[j]+w*outcomes[i]
	}
	// starts returns, for B bins, the first sorted position of each bin
	// (len B+1, the last m): bins are runs of the sorted points.
	starts := func(b int, dst []int) []int {
		dst = dst[:0]
		for k := 0; k < b; k++ {
			dst = append(dst, firstOfBin(k, b, m, binning, scores, idx))
		}
		return append(dst, m)
	}
	monotone := func(st []int) bool {
		last := -1000.0
		for k := 0; k+1 < len(st); k++ {
			lo, hi := st[k], st[k+1]
			if hi <= lo {
				continue
			}
			mean := (cy[hi] - cy[lo]) / (cw[hi] - cw[lo])
			if mean < last {
				return false
			}
			last = mean
		}
		return true
	}
	// Outcomes that never decrease along the sorted scores make every B
	// monotone (bins are runs of the sorted points, and the means of
	// consecutive runs of a non-decreasing sequence do not decrease): the
	// sweep ends at n - 1 without trying each B (a perfect model's
	// scores, which would cost O(n^2)).
	sortedUp := true
	for j := 1; j < m && sortedUp; j++ {
		sortedUp = outcomes[idx[j]] >= outcomes[idx[j-1]]
	}
	best := 1
	var st []int
	if sortedUp && m > 2 {
		best = m - 1
	}
	for b := 2; b < m && !sortedUp; b++ {
		st = starts(b, st)
		if !monotone(st) {
			break
		}
		best = b
	}
	s := &Sweep{Bins: best, Assign: make([]int, len(scores))}
	for i := range s.Assign {
		s.Assign[i] = -1
	}
	st = starts(best, st)
	for k := 0; k < best; k++ {
		for j := st[k]; j < st[k+1]; j++ {
			s.Assign[idx[j]] = k
		}
	}
	return s, nil
}

// firstOfBin returns the first sorted position whose bin, of b, is at
// least k: the points' bins do not decrease along the sorted order.
func firstOfBin(k, b, m int, binning Binning, scores []float64, idx []int) int {
	if k == 0 {
		return 0
	}
	if binning == EqualWidth {
		return sort.Search(m, func(j int) bool { return equalWidthBin(scores[idx[j]], b) >= k })
	}
	// Equal mass: the bin of rank r is min(b-1, floor((r/m) b)), computed
	// in float64 as numpy does; start from the exact ceil(k m / b) and
	// step over the rounding.
	bin := func(r int) int { return min(b-1, int(math.Floor(float64(r)/float64(m)*float64(b)))) }
	r := (k*m + b - 1) / b
	for r > 0 && bin(r-1) >= k {
		r--
	}
	for r < m && bin(r) < k {
		r++
	}
	return r
}

// equalWidthBin is the sweep's equal-width bin of x among b:
// min(b-1, floor(x b)).
func equalWidthBin(x float64, b int) int {
	return min(b-1, int(math.Floor(x*float64(b))))
}

// SweepECE returns the ECE of the sweep's bins (Roelofs et al.'s
// ECE_sweep, caltrain's _calc_ece_postbin) and the sweep: see
// Sweep.ECE.
func SweepECE(scores, outcomes, weights []float64, binning Binning, p float64) (float64, *Sweep, error) {
	s, err := MonotonicSweep(scores, outcomes, weights, binning)
	if err != nil {
		return 0, nil, err
	}
	return s.ECE(scores, outcomes, weights, p), s, nil
}

// ECE returns the value ECE_sweep^p (CE_p^p, as Bins.ECE) of the sweep's
// bins for the points it was computed on:
//
//	ECE_sweep^p = sum_b (W_b / W) |ybar_b - fbar_b|^p
//
// over the non-empty bins, with W_b the bin's weight (count), ybar_b and
// fbar_b its weighted mean outcome and score and W the total weight.
func (s *Sweep) ECE(scores, outcomes, weights []float64, p float64) float64 {
	checkPair("Sweep.ECE", scores, outcomes)
	if len(scores) != len(s.Assign) {
		panic("metric: Sweep.ECE: length mismatch")
	}
	w, sf, sy := make([]float64, s.Bins), make([]float64, s.Bins), make([]float64, s.Bins)
	total := 0.0
	for i, b := range s.Assign {
		if b < 0 {
			continue
		}
		wi := 1.0
		if weights != nil {
			wi = weights[i]
		}
		w[b] += wi
		sf[b] += wi * scores[i]
		sy[b] += wi * outcomes[i]
		total += wi
	}
	v := 0.0
	for b := range w {
		if w[b] > 0 {
			v += w[b] / total * math.Pow(math.Abs(sy[b]/w[b]-sf[b]/w[b]), p)
		}
	}
	return v
}
