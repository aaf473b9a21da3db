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
