package metric

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/calib-dev/calib/internal/mathx"
)

// ATB returns the averaged two-bin calibration error of Hartline, Hu and
// Wu ("A Perfectly Truthful Calibration Measure", COLT 2026, Definition 1
// for p = 2, Definition 2 for p = 1) of the scores r_t against the
// outcomes y_t, with weights w_t (nil: all 1) and W = sum_t w_t:
//
//	ATB_p = E_{q ~ U[0,1]} [ |D_<(q)|^p + |D_>=(q)|^p ] / W^p
//	D_<(q) = sum_{t: r_t < q} w_t (r_t - y_t),   D_>=(q) = sum_{t: r_t >= q} w_t (r_t - y_t)
//
// (one threshold q splits the scores into two bins [0, q) and [q, 1]).
// It is computed exactly (their Theorem 39): with the distinct scores
// v_1 < ... < v_m and L_j the sum of w_t (r_t - y_t) over r_t <= v_j, S
// the total, D_< = L_j and D_>= = S - L_j for q in (v_j, v_j+1], so
//
//	ATB_p W^p = v_1 |S|^p + sum_j (v_j+1 - v_j) (|L_j|^p + |S - L_j|^p) + (1 - v_m) |S|^p
//
// in O(n log n) (one sort). ATB_2 is perfectly truthful: for outcomes
// drawn with probabilities p_t, E[ATB_2] = ATB_2(r, p) + sum_t w_t^2
// p_t (1 - p_t) / W^2 (their Theorem 35, weights added), minimised at r
// = p; ATBBias is that term at p = r. Scores must lie in [0, 1].
func ATB(scores, outcomes, weights []float64, p float64) (float64, error) {
	a, err := NewSortedATB(scores, outcomes)
	if err != nil {
		return 0, err
	}
	return a.Value(weights, p)
}

// SortedATB is a set of scores sorted once, whose ATB any weights (a
// bootstrap resample's counts times the weights) give in O(n).
type SortedATB struct {
	scores, outcomes []float64
	order            []int
}

// NewSortedATB sorts the scores (which must lie in [0, 1]) for ATB.
func NewSortedATB(scores, outcomes []float64) (*SortedATB, error) {
	checkPair("ATB", scores, outcomes)
	for i, r := range scores {
		if !(r >= 0 && r <= 1) {
			return nil, fmt.Errorf("metric: ATB: score %d is %v, not in [0, 1]", i, r)
		}
	}
	order := make([]int, len(scores))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(scores[a], scores[b]) })
	return &SortedATB{scores: scores, outcomes: outcomes, order: order}, nil
}

// Value returns ATB_p with the weights w (nil: all 1; a resample: its
// counts times the weights): see ATB.
func (a *SortedATB) Value(w []float64, p float64) (float64, error) {
	checkWeights("ATB", w, len(a.scores))
	if !(p >= 1) || math.IsInf(p, 0) {
		return 0, fmt.Errorf("metric: ATB: p = %v, want a finite p >= 1", p)
	}
	pw := func(x float64) float64 {
		if p == 2 {
			return x * x
		}
		return math.Pow(math.Abs(x), p)
	}
	var W, S float64
	first := -1
	for _, i := range a.order {
		if v := mathx.Weight(w, i); v > 0 {
			W += v
			S += v * (a.scores[i] - a.outcomes[i])
			if first < 0 {
				first = i
			}
		}
	}
	if first < 0 {
		return 0, fmt.Errorf("metric: ATB: no sample of positive weight")
	}
	total := a.scores[first] * pw(S) // q in [0, v_1]: every score >= q
	L := 0.0
	last := -1 // the previous point of positive weight, in sorted order
	for _, i := range a.order {
		v := mathx.Weight(w, i)
		if !(v > 0) {
			continue
		}
		if last >= 0 && a.scores[i] != a.scores[last] {
			// q moves from the previous distinct score to this one.
			total += (a.scores[i] - a.scores[last]) * (pw(L) + pw(S-L))
		}
		L += v * (a.scores[i] - a.outcomes[i])
		last = i
	}
	total += (1 - a.scores[last]) * (pw(L) + pw(S-L))
	return total / math.Pow(W, p), nil
}

// ResampleCounts returns the weights of the bootstrap resample idx of the n
// points as counts (times w when not nil): Value of them is ATB_p of the
// resample.
func ResampleCounts(n int, idx []int, w []float64) []float64 {
	c := make([]float64, n)
	for _, i := range idx {
		c[i]++
	}
	if w != nil {
		for i := range c {
			c[i] *= w[i]
		}
	}
	return c
}

// ATBBias returns sum_t w_t^2 r_t (1 - r_t) / W^2: the expectation of
// ATB_2 over outcomes drawn from the scores themselves (a calibrated
// model's), which ATB_2 minus it estimates without bias then (ATB_2(r,
// p) = 0 at p = r).
func ATBBias(scores, weights []float64) float64 { return ATBBiasCounts(scores, weights, nil) }

// ATBBiasCounts is ATBBias of a bootstrap resample given by its counts
// (nil: all 1; ResampleCounts without weights): a row drawn c times adds
// c w^2 r (1 - r), and c w to W.
func ATBBiasCounts(scores, weights, counts []float64) float64 {
	checkWeights("ATBBias", weights, len(scores))
	checkWeights("ATBBias", counts, len(scores))
	var s, W float64
	for i, r := range scores {
		w, c := mathx.Weight(weights, i), mathx.Weight(counts, i)
		s += c * w * w * r * (1 - r)
		W += c * w
	}
	if W == 0 {
		return 0
	}
	return s / (W * W)
}
