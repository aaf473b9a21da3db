package calibtest

import (
	"context"
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

// A Statistic computes a calibration statistic T (larger: less
// calibrated) of fixed predictions for a batch of label vectors at once:
// T(ys[b]) for every b. Batches let a statistic share what does not depend
// on the labels (kernel weights, sorted scores, bin assignments) between
// the vectors. It must not keep or change ys.
type Statistic func(ys [][]int) ([]float64, error)

// PerVector makes a Statistic of a function of one label vector, called
// for the vectors of a batch on workers goroutines (0: GOMAXPROCS); f must
// be safe for concurrent use.
func PerVector(f func(labels []int) (float64, error), workers int) Statistic {
	return func(ys [][]int) ([]float64, error) {
		ts, errs := make([]float64, len(ys)), make([]error, len(ys))
		parallel.For(len(ys), workers, func() struct{} { return struct{}{} }, func(_ struct{}, b int) {
			ts[b], errs[b] = f(ys[b])
		})
		return ts, errors.Join(errs...)
	}
}

// resampleCount returns the number of resamples b asked for
// (DefaultResamples for 0), or an error naming what for a negative one.
func resampleCount(b int, what string) (int, error) {
	if b == 0 {
		b = DefaultResamples
	}
	if b < 1 {
		return 0, fmt.Errorf("calibtest: %s: %d resamples", what, b)
	}
	return b, nil
}

// maxBatchLabels bounds the labels of one batch of Consistency (the
// resamples are drawn and evaluated maxBatchLabels/n at a time).
const maxBatchLabels = 1 << 22

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
// computes T for batches of label vectors (the observed labels first, on
// their own, then the resamples in batches of at most 2^22/n vectors).
// The result is the same for any Workers (and any batching).
func Consistency(ctx context.Context, probs []float64, labels []int, k int, stat Statistic, o ConsistencyOptions) (*ConsistencyResult, error) {
	rs, err := ConsistencyMany(ctx, probs, labels, k, func(ys [][]int) ([][]float64, error) {
		ts, err := stat(ys)
		if err != nil {
			return nil, err
		}
		out := make([][]float64, len(ts))
		for b, t := range ts {
			out[b] = []float64{t}
		}
		return out, nil
	}, o)
	if err != nil {
		return nil, err
	}
	return &rs[0], nil
}

// Statistics computes several statistics (each larger: less calibrated) of
// fixed predictions for a batch of label vectors: out[b][i] is statistic i
// of ys[b], the same number of statistics for every vector.
type Statistics func(ys [][]int) ([][]float64, error)

// ConsistencyMany is Consistency for several statistics on the same
// resamples (one sweep of a kernel can give every exponent of ECE^KDE):
// result i is statistic i's test. Each p-value is valid on its own; they
// are not independent.
func ConsistencyMany(ctx context.Context, probs []float64, labels []int, k int, stat Statistics, o ConsistencyOptions) ([]ConsistencyResult, error) {
	n := len(labels)
	if k < 2 || n == 0 || len(probs) != n*k {
		return nil, fmt.Errorf("calibtest: consistency: %d probabilities for %d labels and K = %d", len(probs), n, k)
	}
	b, err := resampleCount(o.Resamples, "consistency")
	if err != nil {
		return nil, err
	}
	t0, err := stat([][]int{labels})
	if err != nil {
		return nil, fmt.Errorf("calibtest: consistency: %w", err)
	}
	if len(t0) != 1 || len(t0[0]) == 0 {
		return nil, errors.New("calibtest: consistency: no statistic for the observed labels")
	}
	res := make([]ConsistencyResult, len(t0[0]))
	for i, t := range t0[0] {
		if math.IsNaN(t) {
			return nil, fmt.Errorf("calibtest: consistency: statistic %d is NaN on the observed labels", i)
		}
		res[i] = ConsistencyResult{Statistic: t, Resamples: b}
	}
	err = resample(ctx, probs, k, n, b, o, stat, func(t []float64) error {
		if len(t) != len(res) {
			return fmt.Errorf("calibtest: consistency: %d statistics for a resample, %d for the observed labels", len(t), len(res))
		}
		for i, v := range t {
			if v >= res[i].Statistic || math.IsNaN(v) {
				res[i].Exceed++ // a NaN resample counts against the model (conservative)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for i := range res {
		res[i].P = float64(1+res[i].Exceed) / float64(1+b)
	}
	return res, nil
}

// resample draws b label vectors from the rows of probs (n×k; resample r
// from PCG(o.Seed, r)) in batches of at most maxBatchLabels/n vectors,
// computes stat on each batch and calls visit with each resample's
// statistics, in the order of the resamples. A negative, infinite or NaN
// probability is an error.
func resample(ctx context.Context, probs []float64, k, n, b int, o ConsistencyOptions, stat Statistics, visit func(t []float64) error) error {
	// Cumulative rows, for drawing a label by one uniform.
	cum := make([]float64, n*k)
	for i := 0; i < n; i++ {
		s := 0.0
		for l := 0; l < k; l++ {
			v := probs[i*k+l]
			if !(v >= 0 && v <= math.MaxFloat64) {
				return fmt.Errorf("calibtest: consistency: sample %d, class %d: probability %v (negative, infinite or NaN)", i, l, v)
			}
			s += v
			cum[i*k+l] = s
		}
	}
	batch := max(1, min(b, maxBatchLabels/n))
	ys := make([][]int, batch)
	for r0 := 0; r0 < b; r0 += batch {
		if ctx != nil && ctx.Err() != nil {
			return fmt.Errorf("calibtest: consistency: %w", ctx.Err())
		}
		ys = ys[:min(batch, b-r0)]
		parallel.For(len(ys), o.Workers, func() struct{} { return struct{}{} }, func(_ struct{}, q int) {
			if ys[q] == nil {
				ys[q] = make([]int, n)
			}
			drawLabels(ys[q], cum, k, o.Seed, uint64(r0+q))
		})
		ts, err := stat(ys)
		if err != nil {
			return fmt.Errorf("calibtest: consistency: %w", err)
		}
		if len(ts) != len(ys) {
			return fmt.Errorf("calibtest: consistency: statistics for %d of %d label vectors", len(ts), len(ys))
		}
		for _, t := range ts {
			if err := visit(t); err != nil {
				return err
			}
		}
	}
	return nil
}

// drawLabels fills y with one label per row drawn from the cumulative rows
// cum (n×k) by PCG(seed, stream): the first class whose cumulative
// probability exceeds a uniform on [0, row total) (the last class if
// none), found by a linear scan for k <= 16 and a binary search above
// (the same class).
func drawLabels(y []int, cum []float64, k int, seed, stream uint64) {
	rng := rand.New(rand.NewPCG(seed, stream))
	for i := range y {
		row := cum[i*k : (i+1)*k]
		u := rng.Float64() * row[k-1]
		if k > 16 {
			y[i] = searchCumulative(row, u)
		} else {
			y[i] = scanCumulative(row, u)
		}
	}
}

// scanCumulative returns the first l with u < row[l], or len(row)-1.
func scanCumulative(row []float64, u float64) int {
	for l, c := range row {
		if u < c {
			return l
		}
	}
	return len(row) - 1
}

// searchCumulative is scanCumulative by binary search (row nondecreasing).
func searchCumulative(row []float64, u float64) int {
	l, h := 0, len(row)-1
	for l < h {
		m := int(uint(l+h) >> 1)
		if u < row[m] {
			h = m
		} else {
			l = m + 1
		}
	}
	return l
}
