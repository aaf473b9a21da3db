package calibtest

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/calib-dev/calib/internal/parallel"
)

// DefaultResamples is the number of resamples of Consistency when none is
// given.
const DefaultResamples = 1000

// ConsistencyOptions configures Consistency. The zero value draws
// DefaultResamples resamples with seed 0 on every core.
type ConsistencyOptions struct {
	Resamples int
	Seed      uint64
	Workers   int // goroutines; 0: GOMAXPROCS. The p-value does not depend on it.
}

// ConsistencyResult is the outcome of Consistency.
type ConsistencyResult struct {
	Statistic float64 // T on the observed labels
	// Exceed counts the resamples with T_b >= T, and P = (1 + Exceed) /
	// (1 + Resamples).
	Exceed, Resamples int
	P                 float64
}

// Consistency is the consistency-resampling test (Bröcker and Smith 2007;
// Vaicenavicius et al. 2019) of a calibration statistic T, larger meaning
// less calibrated: under H0 (the model is calibrated) the labels are draws
// from the predictions themselves, so B label vectors drawn from the rows
// of probs (n×k, each row a distribution; resample b from PCG(seed, b))
// give T_b from the null distribution of T given the predictions, and
//
//	p = (1 + #{b : T_b >= T}) / (1 + B)
//
// is a valid p-value (P(p <= alpha) <= alpha under H0 for every alpha). stat
// computes T from a label vector (observed: the labels given); it is
// called from several goroutines at once and must not keep or change its
// argument. The result is the same for any Workers.
func Consistency(probs []float64, labels []int, k int, stat func(labels []int) (float64, error), o ConsistencyOptions) (*ConsistencyResult, error) {
	n := len(labels)
	if k < 2 || n == 0 || len(probs) != n*k {
		return nil, fmt.Errorf("calibtest: consistency: %d probabilities for %d labels and K = %d", len(probs), n, k)
	}
	b := o.Resamples
	if b == 0 {
		b = DefaultResamples
	}
	if b < 1 {
		return nil, fmt.Errorf("calibtest: consistency: %d resamples", b)
	}
	t0, err := stat(labels)
	if err != nil {
		return nil, err
	}
	if math.IsNaN(t0) {
		return nil, errors.New("calibtest: consistency: the statistic is NaN on the observed labels")
	}
	// Cumulative rows, for drawing a label by one uniform.
	cum := make([]float64, n*k)
	for i := 0; i < n; i++ {
		s := 0.0
		for l := 0; l < k; l++ {
			s += probs[i*k+l]
			cum[i*k+l] = s
		}
	}
	ts := make([]float64, b)
	errs := make([]error, b)
	parallel.For(b, o.Workers, func() []int { return make([]int, n) }, func(y []int, r int) {
		rng := rand.New(rand.NewPCG(o.Seed, uint64(r)))
		for i := range y {
			row := cum[i*k : (i+1)*k]
			u := rng.Float64() * row[k-1]
			y[i] = k - 1
			for l, c := range row {
				if u < c {
					y[i] = l
					break
				}
			}
		}
		ts[r], errs[r] = stat(y)
	})
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("calibtest: consistency: %w", err)
	}
	res := &ConsistencyResult{Statistic: t0, Resamples: b}
	for _, t := range ts {
		if t >= t0 || math.IsNaN(t) {
			res.Exceed++ // a NaN resample counts against the model (conservative)
		}
	}
	res.P = float64(1+res.Exceed) / float64(1+b)
	return res, nil
}
