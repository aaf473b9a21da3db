package mathx

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// ErrWeights is wrapped by every error about sample weights: a length that
// differs from the number of samples, a negative, NaN or infinite weight, or
// weights that are all zero. data.ErrWeights is the same value.
var ErrWeights = errors.New("invalid sample weights")

// CheckWeights returns nil when w is nil (all weights 1) or holds n finite
// weights >= 0 of which at least one is positive, and otherwise an error
// wrapping ErrWeights that names the first offending weight (0-based index).
func CheckWeights(w []float64, n int) error {
	if err := CheckWeightValues(w, n); err != nil {
		return err
	}
	if w != nil && !slices.ContainsFunc(w, func(v float64) bool { return v > 0 }) {
		return fmt.Errorf("%w: all %d weights are zero", ErrWeights, n)
	}
	return nil
}

// CheckWeightValues is CheckWeights without the rule that some weight be
// positive: for one batch or shard of a larger sample, which may hold only
// zero weights.
func CheckWeightValues(w []float64, n int) error {
	if w == nil {
		return nil
	}
	if len(w) != n {
		return fmt.Errorf("%w: %d weights for %d samples", ErrWeights, len(w), n)
	}
	for i, v := range w {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return fmt.Errorf("%w: weight %d is %v; weights must be finite and >= 0", ErrWeights, i, v)
		}
	}
	return nil
}

// Weight returns w[i], or 1 when w is nil: the "nil means all 1" rule of
// every weighted function in calib.
func Weight(w []float64, i int) float64 {
	if w == nil {
		return 1
	}
	return w[i]
}

// WeightSum returns sum_i w_i over the n samples (n when w is nil).
func WeightSum(w []float64, n int) float64 {
	if w == nil {
		return float64(n)
	}
	s := 0.0
	for _, v := range w {
		s += v
	}
	return s
}

// ResampleWeights returns the weights of the bootstrap sample idx (w[idx[0]],
// w[idx[1]], ...), or nil when w is nil. A weighted bootstrap draws rows
// uniformly and carries each row's weight with it.
func ResampleWeights(w []float64, idx []int) []float64 {
	if w == nil {
		return nil
	}
	r := make([]float64, len(idx))
	for j, i := range idx {
		r[j] = w[i]
	}
	return r
}

// Bootstrap defaults: the number of resamples and the level of every
// bootstrap interval and band in calib when its options leave them 0.
const (
	DefaultResamples = 200
	DefaultLevel     = 0.95
)

// ResampleDefaults returns resamples and level with 0 replaced by
// DefaultResamples and DefaultLevel (the one rule of metric.Bootstrap,
// metric.Assignment.FreqIntervals and kde.ScoreRegressionBand).
func ResampleDefaults(resamples int, level float64) (int, float64) {
	if resamples == 0 {
		resamples = DefaultResamples
	}
	if level == 0 {
		level = DefaultLevel
	}
	return resamples, level
}

// ScaleWeights returns w divided by the power of two 2^e that puts its
// largest weight in [0.5, 1), and that factor (w = scaled × factor);
// constant weights become exactly 1 (factor: the weight). nil, and
// weights already so scaled, are returned as they are with factor 1,
// others in a new slice. Every number calib computes from weights is
// invariant to a common positive factor (the estimators that read a
// weight as a count read it normalised to mean 1 over the rows of positive
// weight: package metric), but
// float64 is not: weights of 1e160 overflow in w_i w_j (MMCE), 1e308 in
// their sum, 1e-300 underflow in w_i^2. Scaled, any finite positive
// weights give the answer of their normalised form. The division is exact
// (weights times any power of two give the same bits) except for a weight
// that falls below 2^-1022 (the largest times 2^-1022).
func ScaleWeights(w []float64) ([]float64, float64) {
	hi := 0.0
	for _, v := range w {
		hi = max(hi, v)
	}
	if hi == 0 || math.IsNaN(hi) || math.IsInf(hi, 0) {
		return w, 1
	}
	if !slices.ContainsFunc(w, func(v float64) bool { return v != hi }) {
		if hi == 1 {
			return w, 1
		}
		out := make([]float64, len(w)) // constant weights: exactly the unweighted answer
		for i := range out {
			out[i] = 1
		}
		return out, hi
	}
	_, e := math.Frexp(hi) // hi = f 2^e, f in [0.5, 1)
	if e == 0 {
		return w, 1
	}
	out := make([]float64, len(w))
	for i, v := range w {
		out[i] = math.Ldexp(v, -e)
	}
	return out, math.Ldexp(1, e)
}

// PositiveRows returns the number of the n weights w that are positive (n
// when w is nil): the rows a weighted computation sees, a row of weight 0
// being none.
func PositiveRows(w []float64, n int) int {
	if w == nil {
		return n
	}
	c := 0
	for _, v := range w {
		if v > 0 {
			c++
		}
	}
	return c
}
