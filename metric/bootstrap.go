package metric

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync/atomic"

	"github.com/calib-dev/calib/internal/parallel"
)

// BootstrapOptions configures Bootstrap. The zero value takes 200 resamples
// for a 95 % interval with seed 0 on all cores.
type BootstrapOptions struct {
	Resamples int     // number of resamples B; 0 means 200
	Level     float64 // confidence level in (0, 1); 0 means 0.95
	Seed      uint64  // resample b draws from PCG(Seed, b)
	Workers   int     // goroutines; 0 means GOMAXPROCS
	// Progress, if not nil, is called after each resample with the number
	// done and the total (from several goroutines; done may arrive out of
	// order).
	Progress func(done, total int64)
}

// Interval is a bootstrap percentile interval.
type Interval struct {
	Lo, Hi    float64
	Level     float64
	Resamples int
}

// Bootstrap returns the percentile bootstrap interval of a statistic of n
// samples: resample b draws n indices uniformly with replacement from the
// generator PCG(o.Seed, b), stat maps the indices to the statistic, and the
// interval is the (1-Level)/2 and (1+Level)/2 quantiles of the B values
// (NumPy's linear interpolation). Resamples run in parallel and stat must be
// safe for concurrent use; the interval is the same for any number of
// workers.
func Bootstrap(n int, stat func(idx []int) (float64, error), o BootstrapOptions) (Interval, error) {
	b := o.Resamples
	if b == 0 {
		b = 200
	}
	level := o.Level
	if level == 0 {
		level = 0.95
	}
	if b < 2 || !(level > 0 && level < 1) || n < 1 {
		return Interval{}, fmt.Errorf("metric: bootstrap with %d resamples at level %v of %d samples", b, level, n)
	}
	vals := make([]float64, b)
	errs := make([]error, b)
	var done atomic.Int64
	parallel.For(b, o.Workers, func() []int { return make([]int, n) }, func(idx []int, r int) {
		rng := rand.New(rand.NewPCG(o.Seed, uint64(r)))
		for i := range idx {
			idx[i] = rng.IntN(n)
		}
		vals[r], errs[r] = stat(idx)
		if o.Progress != nil {
			o.Progress(done.Add(1), int64(b))
		}
	})
	for r, err := range errs {
		if err != nil {
			return Interval{}, fmt.Errorf("metric: bootstrap resample %d: %w", r, err)
		}
		if math.IsNaN(vals[r]) || math.IsInf(vals[r], 0) {
			return Interval{}, fmt.Errorf("metric: bootstrap resample %d: statistic %v", r, vals[r])
		}
	}
	slices.Sort(vals)
	return Interval{Lo: percentile(vals, (1-level)/2), Hi: percentile(vals, (1+level)/2), Level: level, Resamples: b}, nil
}

// Resample returns the rows idx of an n×k matrix (k = 1 for a vector).
func Resample[T any](x []T, k int, idx []int) []T {
	out := make([]T, 0, len(idx)*k)
	for _, i := range idx {
		out = append(out, x[i*k:(i+1)*k]...)
	}
	return out
}
