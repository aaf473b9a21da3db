package metric

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync/atomic"

	"github.com/calib-dev/calib/internal/mathx"
	"github.com/calib-dev/calib/internal/parallel"
)

// FreqIntervals returns the bootstrap percentile interval of each bin's
// mean outcome (the accuracy bar of a reliability diagram), the bins of a
// held fixed: resample b draws n = len(scores) indices uniformly with
// replacement from PCG(o.Seed, b), as Bootstrap does, and bin j's interval
// is
//
//	[Q((1-Level)/2), Q(1-(1-Level)/2)]
//
// of its mean outcome over the resamples in which it holds a sample (Q:
// mathx.Quantile, NumPy's linear interpolation). A bin that is empty in the
// full sample, or in every resample, gets NaN at both ends.
//
// o.Resamples (0: 200, at least 1), o.Level (0: 0.95), o.Seed, o.Workers,
// o.Progress and ctx are read as by Bootstrap; Method and Estimate
// are not (the interval is always the percentile one). The intervals are
// bit-identical for every number of workers. scores and outcomes are the
// sample a was made from; with weights (nil: all 1) a bin's mean outcome is
// the weighted mean and a resample carries the weights of the rows it
// draws (Summarize).
func (a *Assignment) FreqIntervals(ctx context.Context, scores, outcomes, weights []float64, o BootstrapOptions) (lo, hi []float64, err error) {
	o.ctx = ctx
	n := len(scores)
	if n != len(outcomes) || n != len(a.Bin) {
		panic(fmt.Sprintf("metric: FreqIntervals: %d scores, %d outcomes, %d assigned", n, len(outcomes), len(a.Bin)))
	}
	if err := mathx.CheckWeights(weights, n); err != nil {
		return nil, nil, fmt.Errorf("metric: bin intervals: %w", err)
	}
	nb, level := mathx.ResampleDefaults(o.Resamples, o.Level)
	if nb < 1 || !(level > 0 && level < 1) || n < 1 {
		return nil, nil, fmt.Errorf("metric: bin intervals with %d resamples at level %v of %d samples", nb, level, n)
	}
	bins := len(a.Edges) - 1
	// freqs[r*bins+j] is resample r's mean outcome in bin j (NaN: empty).
	freqs := make([]float64, nb*bins)
	var done atomic.Int64
	stopped := parallel.ForContext(o.ctx, nb, o.Workers, func() []int { return make([]int, n) }, func(idx []int, r int) {
		rng := rand.New(rand.NewPCG(o.Seed, uint64(r)))
		for i := range idx {
			idx[i] = rng.IntN(n)
		}
		rb := a.Summarize(scores, outcomes, idx, weights)
		for j, c := range rb.Count {
			freqs[r*bins+j] = math.NaN()
			if c > 0 {
				freqs[r*bins+j] = rb.Freq[j]
			}
		}
		if o.Progress != nil {
			o.Progress(done.Add(1), int64(nb))
		}
	})
	if stopped != nil {
		return nil, nil, fmt.Errorf("metric: bin intervals: %w", stopped)
	}
	count := make([]int, bins)
	for _, b := range a.Bin {
		if b >= 0 {
			count[b]++
		}
	}
	lo, hi = make([]float64, bins), make([]float64, bins)
	f := make([]float64, 0, nb)
	for j := range bins {
		lo[j], hi[j] = math.NaN(), math.NaN()
		f = f[:0]
		for r := range nb {
			if v := freqs[r*bins+j]; !math.IsNaN(v) {
				f = append(f, v)
			}
		}
		if count[j] == 0 || len(f) == 0 {
			continue
		}
		slices.Sort(f)
		lo[j] = mathx.Quantile(f, (1-level)/2)
		hi[j] = mathx.Quantile(f, 1-(1-level)/2)
	}
	return lo, hi, nil
}
