// Package mathx holds the small numeric functions that several calib
// packages need, each defined once: the stable softmax and sigmoid, the
// linear-interpolation quantile, a log-spaced grid and the arg max. It
// imports only the standard library, so that the estimator packages (kde,
// metric, recal) need not import the I/O package data for them.
package mathx

import "math"

// Softmax writes the softmax of the logits z into dst (len(dst) == len(z)),
// in float64 and stably: p_k = exp(z_k - max z) / sum_m exp(z_m - max z).
func Softmax(dst, z []float64) {
	m := math.Inf(-1)
	for _, v := range z {
		m = max(m, v)
	}
	sum := 0.0
	for k, v := range z {
		e := math.Exp(v - m)
		dst[k] = e
		sum += e
	}
	for k := range dst {
		dst[k] /= sum
	}
}

// TemperedSoftmax returns the softmax of z / t in a new slice: the
// probabilities of the logits z at temperature t > 0.
func TemperedSoftmax(z []float64, t float64) []float64 {
	out := make([]float64, len(z))
	for i, v := range z {
		out[i] = v / t
	}
	Softmax(out, out)
	return out
}

// Sigmoid returns 1 / (1 + exp(-z)) without overflow for any finite z.
func Sigmoid(z float64) float64 {
	if z >= 0 {
		return 1 / (1 + math.Exp(-z))
	}
	e := math.Exp(z)
	return e / (1 + e)
}

// Quantile returns the q-quantile (q in [0, 1]) of the sorted values x by
// NumPy's default linear interpolation between order statistics:
// x[i] + (x[i+1] - x[i]) f with i + f = q (len(x) - 1).
func Quantile(sorted []float64, q float64) float64 {
	pos := q * float64(len(sorted)-1)
	lo := int(math.Floor(pos))
	hi := min(lo+1, len(sorted)-1)
	frac := pos - float64(lo)
	return sorted[lo] + (sorted[hi]-sorted[lo])*frac
}

// LogSpace returns m >= 2 values from lo to hi, evenly spaced in log:
// lo (hi/lo)^(i/(m-1)).
func LogSpace(lo, hi float64, m int) []float64 {
	v := make([]float64, m)
	for i := range v {
		v[i] = lo * math.Pow(hi/lo, float64(i)/float64(m-1))
	}
	return v
}

// Argmax returns the index of the largest value of x (the first on ties),
// or -1 for an empty x. x must hold no NaN.
func Argmax(x []float64) int {
	if len(x) == 0 {
		return -1
	}
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return best
}
