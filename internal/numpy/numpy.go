// Package numpy holds NumPy's arithmetic where another library's number
// depends on it to the last bit: np.sum's pairwise summation,
// np.linspace and np.percentile's linear method, written from NumPy
// 1.24's source (numpy/core/src/umath/loops_utils.h.src,
// numpy/core/function_base.py, numpy/lib/function_base.py), for the
// packages that reproduce libraries built on NumPy (smooth, convention).
package numpy

import "math"

// Sum is np.sum of a contiguous float64 array (pairwise_sum): a plain
// sum below 8 elements, 8 accumulators up to 128, the halves (the first
// a multiple of 8) above.
func Sum(a []float64) float64 {
	n := len(a)
	switch {
	case n < 8:
		s := 0.0
		for _, v := range a {
			s += v
		}
		return s
	case n <= 128:
		var r [8]float64
		copy(r[:], a[:8])
		i := 8
		for ; i < n-n%8; i += 8 {
			for j := range r {
				r[j] += a[i+j]
			}
		}
		s := ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
		for ; i < n; i++ {
			s += a[i]
		}
		return s
	default:
		n2 := n / 2
		n2 -= n2 % 8
		return Sum(a[:n2]) + Sum(a[n2:])
	}
}

// Linspace is np.linspace(start, stop, n) (endpoint included):
// start + k ((stop - start)/(n-1)), the last point exactly stop.
func Linspace(start, stop float64, n int) []float64 {
	t := make([]float64, n)
	if n == 1 {
		t[0] = start
		return t
	}
	step := (stop - start) / float64(n-1)
	for k := range t {
		t[k] = float64(k)*step + start
	}
	t[n-1] = stop
	return t
}

// Percentile is np.percentile(a, q) with the default linear method, for
// a sorted and q in [0, 100]: the virtual index n (q/100) + (1 - q/100)
// - 1, as NumPy computes it, and its _lerp between the neighbours.
func Percentile(sorted []float64, q float64) float64 {
	n := len(sorted)
	p := q / 100
	const alpha, beta = 1, 1 // NumPy's linear method
	v := float64(n)*p + (alpha + p*(1-alpha-beta)) - 1
	prev := math.Floor(v)
	gamma := v - prev
	lo := min(max(int(prev), 0), n-1)
	hi := min(max(int(prev)+1, 0), n-1)
	if v < 0 {
		lo, hi, gamma = 0, 0, 0
	}
	a, b := sorted[lo], sorted[hi]
	d := b - a
	if gamma >= 0.5 {
		return b - d*(1-gamma)
	}
	return a + d*gamma
}
