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
	"github.com/calib-dev/calib/internal/textenum"
	"github.com/calib-dev/calib/progress"
)

// IntervalMethod says how Bootstrap turns the resampled values into an
// interval.
type IntervalMethod int

const (
	// Percentile is the percentile interval [q_lo, q_hi], the
	// (1-Level)/2 and (1+Level)/2 quantiles of the resampled values θ*_b.
	// It suits means of per-point terms and other statistics whose
	// bootstrap distribution sits around the estimate.
	Percentile IntervalMethod = iota
	// Centered moves the percentile spread to the estimate θ̂:
	//
	//	[θ̂ - (m* - q_lo), θ̂ + (q_hi - m*)],  m* = median of the θ*_b,
	//
	// with the lower end clamped at 0 when θ̂ and every θ*_b are >= 0. It
	// always contains θ̂. It is the interval of the biased estimators
	// (binned ECE and MCE, the plug-in ECE^KDE, KS, MMCE, sharpness), whose
	// resampled values sit above the estimate (a resample repeats points,
	// which inflates every within-bin or within-kernel deviation), so that
	// their percentile interval can miss its own estimate. It measures the
	// sampling spread of the estimator at this n, not its bias:
	// Interval.Bias reports the bootstrap estimate of that, mean(θ*) - θ̂.
	Centered
)

var intervalMethodNames = [...]string{"percentile", "centered"}

// String returns "percentile" or "centered".
func (m IntervalMethod) String() string {
	if m == Centered {
		return "centered"
	}
	return "percentile"
}

// ParseIntervalMethod returns the interval method named s (the
// enumerations' one rule).
func ParseIntervalMethod(s string) (IntervalMethod, error) {
	i, err := textenum.Parse("interval method", s, intervalMethodNames[:])
	return IntervalMethod(i), err
}

// MarshalText implements encoding.TextMarshaler.
func (m IntervalMethod) MarshalText() ([]byte, error) {
	n, err := textenum.Name("metric: interval method", int(m), intervalMethodNames[:])
	return []byte(n), err
}

// UnmarshalText implements encoding.TextUnmarshaler (ParseIntervalMethod).
func (m *IntervalMethod) UnmarshalText(t []byte) error {
	v, err := ParseIntervalMethod(string(t))
	if err == nil {
		*m = v
	}
	return err
}

// BootstrapOptions configures Bootstrap. The zero value takes 200 resamples
// for a 95 % percentile interval with seed 0 on all cores.
type BootstrapOptions struct {
	Resamples int     // number of resamples B; 0 means 200
	Level     float64 // confidence level in (0, 1); 0 means 0.95
	Seed      uint64  // resample b draws from PCG(Seed, b)
	Workers   int     // goroutines; 0 means GOMAXPROCS
	// Method is the kind of interval; Centered needs Estimate.
	Method IntervalMethod
	// Estimate is the statistic on the full sample, θ̂: the centre of a
	// Centered interval and the reference of Interval.Bias.
	Estimate float64
	// Progress, if not nil, is called after each resample with the number
	// done and the total (from several goroutines; done may arrive out of
	// order).
	Progress progress.Func
	ctx      context.Context // the call's context, its first argument
}

// Interval is a bootstrap interval.
type Interval struct {
	Lo, Hi    float64
	Level     float64
	Resamples int
	Method    IntervalMethod
	// Bias is mean(θ*) - θ̂, the bootstrap estimate of the estimator's
	// bias (Options.Estimate is θ̂).
	Bias float64
}

// Bootstrap returns the bootstrap interval of a statistic of n samples:
// resample b draws n indices uniformly with replacement from the generator
// PCG(o.Seed, b), stat maps the indices to the statistic θ*_b, and the
// interval is built from the (1-Level)/2 and (1+Level)/2 quantiles of the B
// values (NumPy's linear interpolation) as o.Method says. Resamples run in
// parallel and stat must be safe for concurrent use; the interval is the
// same for any number of workers.
//
// A weighted bootstrap draws the rows uniformly, as here, and each drawn
// row carries its weight: stat computes the weighted statistic of the rows
// idx with the weights Resample(weights, 1, idx) (nil stays nil), or hands
// the full sample's weights with idx to an idx-based shortcut
// (Assignment.Summarize, Cells.Estimate, SortedKS.KSResample with Counts).
func Bootstrap(ctx context.Context, n int, stat func(idx []int) (float64, error), o BootstrapOptions) (Interval, error) {
	o.ctx = ctx
	b, level := mathx.ResampleDefaults(o.Resamples, o.Level)
	if b < 2 || !(level > 0 && level < 1) || n < 1 {
		return Interval{}, fmt.Errorf("metric: bootstrap with %d resamples at level %v of %d samples", b, level, n)
	}
	if o.Method != Percentile && o.Method != Centered {
		return Interval{}, fmt.Errorf("metric: bootstrap: unknown interval method %d", int(o.Method))
	}
	vals := make([]float64, b)
	errs := make([]error, b)
	var done atomic.Int64
	stopped := parallel.ForContext(o.ctx, b, o.Workers, func() []int { return make([]int, n) }, func(idx []int, r int) {
		rng := rand.New(rand.NewPCG(o.Seed, uint64(r)))
		for i := range idx {
			idx[i] = rng.IntN(n)
		}
		vals[r], errs[r] = stat(idx)
		if o.Progress != nil {
			o.Progress(done.Add(1), int64(b))
		}
	})
	if stopped != nil {
		return Interval{}, fmt.Errorf("metric: bootstrap: %w", stopped)
	}
	for r, err := range errs {
		if err != nil {
			return Interval{}, fmt.Errorf("metric: bootstrap resample %d: %w", r, err)
		}
		if math.IsNaN(vals[r]) || math.IsInf(vals[r], 0) {
			return Interval{}, fmt.Errorf("metric: bootstrap resample %d: statistic %v", r, vals[r])
		}
	}
	mean := 0.0
	for _, v := range vals {
		mean += v
	}
	mean /= float64(b)
	slices.Sort(vals)
	iv := Interval{Lo: mathx.Quantile(vals, (1-level)/2), Hi: mathx.Quantile(vals, (1+level)/2), Level: level, Resamples: b,
		Method: o.Method, Bias: mean - o.Estimate}
	switch o.Method {
	case Percentile:
	case Centered:
		med, est := mathx.Quantile(vals, 0.5), o.Estimate
		if math.IsNaN(est) || math.IsInf(est, 0) {
			return Interval{}, fmt.Errorf("metric: bootstrap: centred interval around %v", est)
		}
		iv.Lo, iv.Hi = est-(med-iv.Lo), est+(iv.Hi-med)
		if est >= 0 && vals[0] >= 0 {
			iv.Lo = max(iv.Lo, 0)
		}
	}
	return iv, nil
}

// Resample returns the rows idx of an n×k matrix (k = 1 for a vector), or
// nil when x is nil (so that nil weights, all 1, stay nil).
func Resample[T any](x []T, k int, idx []int) []T {
	if x == nil {
		return nil
	}
	out := make([]T, 0, len(idx)*k)
	for _, i := range idx {
		out = append(out, x[i*k:(i+1)*k]...)
	}
	return out
}
