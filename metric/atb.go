package metric

import (
	"cmp"
	"fmt"
	"math"
	"slices"
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
	checkPair("ATB", scores, outcomes)
	checkWeights("ATB", weights, len(scores))
	if !(p >= 1) || math.IsInf(p, 0) {
		return 0, fmt.Errorf("metric: ATB: p = %v, want a finite p >= 1", p)
	}
	idx := make([]int, 0, len(scores))
	W := 0.0
	for i, r := range scores {
		if !(r >= 0 && r <= 1) {
			return 0, fmt.Errorf("metric: ATB: score %d is %v, not in [0, 1]", i, r)
		}
		w := weightOf(weights, i)
		if w > 0 {
			idx = append(idx, i)
			W += w
		}
	}
	if len(idx) == 0 {
		return 0, fmt.Errorf("metric: ATB: no sample of positive weight")
	}
	slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(scores[a], scores[b]) })
	S := 0.0
	for _, i := range idx {
		S += weightOf(weights, i) * (scores[i] - outcomes[i])
	}
	pw := func(x float64) float64 {
		if p == 2 {
			return x * x
		}
		return math.Pow(math.Abs(x), p)
	}
	total := scores[idx[0]] * pw(S) // q in [0, v_1]: every score >= q
	L := 0.0
	for j, i := range idx {
		L += weightOf(weights, i) * (scores[i] - outcomes[i])
		if j+1 < len(idx) && scores[idx[j+1]] == scores[i] {
			continue // ties: q moves past the whole group at once
		}
		next := 1.0
		if j+1 < len(idx) {
			next = scores[idx[j+1]]
		}
		total += (next - scores[i]) * (pw(L) + pw(S-L))
	}
	return total / math.Pow(W, p), nil
}

// ATBBias returns sum_t w_t^2 r_t (1 - r_t) / W^2: the expectation of
// ATB_2 over outcomes drawn from the scores themselves (a calibrated
// model's), which ATB_2 minus it estimates without bias then (ATB_2(r,
// p) = 0 at p = r).
func ATBBias(scores, weights []float64) float64 {
	checkWeights("ATBBias", weights, len(scores))
	var s, W float64
	for i, r := range scores {
		w := weightOf(weights, i)
		s += w * w * r * (1 - r)
		W += w
	}
	if W == 0 {
		return 0
	}
	return s / (W * W)
}

// weightOf is w[i], 1 when w is nil.
func weightOf(w []float64, i int) float64 {
	if w == nil {
		return 1
	}
	return w[i]
}
