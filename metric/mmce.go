package metric

import (
	"math"

	"github.com/calib-dev/calib/internal/mathx"
)

// DefaultMMCEWidth is the width of MMCE's Laplacian kernel (Kumar et al.).
const DefaultMMCEWidth = 0.4

// MMCE returns the maximum mean calibration error of Kumar, Sarawagi and
// Jain (ICML 2018) of confidences r_i with correctness c_i in {0, 1} and
// sample weights w_i (nil: all 1), with the Laplacian kernel k(r, r') =
// exp(-|r - r'| / width):
//
//	squared = (1/W^2) sum_{i,j} w_i w_j (c_i - r_i)(c_j - r_j) exp(-|r_i - r_j| / width)
//	value   = sqrt(squared),  W = sum_i w_i,
//
// the double sum over all pairs, i = j included ((1/n^2) sum_{i,j} ... when
// unweighted). It is the squared MMD of the weighted empirical measure, so
// integer weights give the MMCE of the rows repeated w_i times. (squared is
// a quadratic form of a positive-definite kernel, so >= 0 up to rounding;
// it is clamped at 0 before the root). The O(n^2) double sum is computed
// exactly in O(n log n): with the samples sorted by r, the kernel sums left
// and right of each point are running sums multiplied by exp(-(r_{m+1} -
// r_m)/width) <= 1 at each step, so nothing overflows for any width. If
// grad is not nil it receives d value / d r_i (len n),
//
//	d squared / d r_k = -(2/W^2) [ w_k sum_j a_j K_kj + (a_k / width) sum_j a_j sign(r_k - r_j) K_kj ],
//
// a_j = w_j (c_j - r_j), K_kj = exp(-|r_k - r_j| / width), divided by
// 2 value (0 when value is 0); the derivative of |r_i - r_j| at a tie is
// taken as 0. MMCE panics if the lengths of r, c and weights (when not nil)
// differ.
func MMCE(r, c []float64, width float64, grad []float64, weights []float64) (value, squared float64) {
	n := len(r)
	if len(c) != n || (grad != nil && len(grad) != n) {
		panic("metric: MMCE: length mismatch")
	}
	checkWeights("MMCE", weights, n)
	if n == 0 {
		return 0, 0
	}
	idx := argsort(r)
	e := make([]float64, n) // a_i = w_i (c_i - r_i) in sorted order
	rs := make([]float64, n)
	for s, i := range idx {
		e[s], rs[s] = c[i]-r[i], r[i]
		if weights != nil {
			e[s] *= weights[i]
		}
	}
	// Groups of equal r: for each sorted position, the sums over strictly
	// smaller r (left), strictly larger r (right) and equal r (tie).
	left, right, tie := make([]float64, n), make([]float64, n), make([]float64, n)
	for s := 0; s < n; {
		t := s
		sum := 0.0
		for t < n && rs[t] == rs[s] {
			sum += e[t]
			t++
		}
		for u := s; u < t; u++ {
			tie[u] = sum
		}
		s = t
	}
	// left[s] = sum_{r_j < r_s} e_j exp(-(r_s - r_j)/w), by groups.
	acc, prev := 0.0, rs[0] // acc: sum over groups before the current one, at r = prev
	for s := 0; s < n; {
		acc *= math.Exp(-(rs[s] - prev) / width)
		t := s
		for t < n && rs[t] == rs[s] {
			left[t] = acc
			t++
		}
		acc += tie[s]
		prev = rs[s]
		s = t
	}
	acc, prev = 0, rs[n-1]
	for s := n - 1; s >= 0; {
		acc *= math.Exp(-(prev - rs[s]) / width)
		t := s
		for t >= 0 && rs[t] == rs[s] {
			right[t] = acc
			t--
		}
		acc += tie[s]
		prev = rs[s]
		s = t
	}
	for s := range e {
		squared += e[s] * (left[s] + right[s] + tie[s])
	}
	W := mathx.WeightSum(weights, n)
	squared /= W * W
	value = math.Sqrt(math.Max(squared, 0))
	if grad != nil {
		// d squared/d r_k = -(2/W^2) [ w_k sum_j a_j K_kj + (a_k / width) sum_j a_j sign(r_k - r_j) K_kj ]
		for s, i := range idx {
			kern := left[s] + right[s] + tie[s]
			if weights != nil {
				kern = float64(weights[i] * kern) // rounded alone, as kern is unweighted
			}
			sign := left[s] - right[s]
			ds := -2 / (W * W) * (kern + e[s]/width*sign)
			if value > 0 {
				grad[i] = ds / (2 * value)
			} else {
				grad[i] = 0
			}
		}
	}
	return value, squared
}

// TopLabelMMCE returns MMCE of the top-label confidences r_i = max_k f_ik
// with correctness c_i = [argmax = label] and the sample weights (nil: all
// 1; see MMCE). If grad is not nil (len n×k) it receives dMMCE/df as free
// variables: each row's derivative goes to its arg max entry (the
// correctness is piecewise constant).
func TopLabelMMCE(probs []float64, labels []int, k int, width float64, grad []float64, weights []float64) (value, squared float64) {
	checkRows("TopLabelMMCE", probs, nil, labels, k)
	if grad != nil && len(grad) != len(probs) {
		panic("metric: TopLabelMMCE: length mismatch (gradient)")
	}
	checkWeights("TopLabelMMCE", weights, len(labels))
	r, c := TopR(probs, labels, k, 1)
	var gr []float64
	if grad != nil {
		gr = make([]float64, len(r))
	}
	value, squared = MMCE(r, c, width, gr, weights)
	if grad != nil {
		clear(grad)
		order := make([]int, 0, k)
		for i, g := range gr {
			grad[i*k+ranking(probs[i*k:(i+1)*k], 1, order)[0]] = g
		}
	}
	return value, squared
}
