package calibtest

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
)

// DefaultMaxSeconds is the bound on a test's estimated run time that
// Options.MaxSeconds 0 stands for (calib test's --max-seconds default).
const DefaultMaxSeconds = 60

// ErrTooSlow is wrapped by Run's *CostError: a test named in
// Options.Tests whose estimated run time passes Options.MaxSeconds.
var ErrTooSlow = errors.New("calibtest: estimated run time past the bound")

// CostError is Run's refusal, before any test runs, of the tests named in
// Options.Tests whose estimated run time (EstimateSeconds) passes the
// bound MaxSeconds. It wraps ErrTooSlow.
type CostError struct {
	Tests      []string  // the refused tests, in the order named
	Seconds    []float64 // their estimates, in seconds
	N, K       int       // the rows and classes of the data
	Resamples  int       // the resamples of each resampled test
	Workers    int       // the goroutines the estimate assumes
	MaxSeconds float64   // the bound
}

// Error names each refused test with its estimate, the data's size and
// the bound.
func (e *CostError) Error() string {
	return fmt.Sprintf("calibtest: %s, past the bound of %g s (Options.MaxSeconds)", e.Estimates(), e.MaxSeconds)
}

// Estimates says what was estimated, for a caller's own message:
// "prior_score would take about 610 s (estimated at n = 50, K = 10000,
// 1000 resamples, 2 workers)"; with several tests "ece_kde would take
// about 95 s, ece_witness about 2100 s (...)".
func (e *CostError) Estimates() string {
	var b strings.Builder
	for i, t := range e.Tests {
		switch i {
		case 0:
			fmt.Fprintf(&b, "%s would take about %s", t, roundSeconds(e.Seconds[i]))
		default:
			fmt.Fprintf(&b, ", %s about %s", t, roundSeconds(e.Seconds[i]))
		}
	}
	fmt.Fprintf(&b, " (estimated at n = %d, K = %d, %d resamples, %d workers)", e.N, e.K, e.Resamples, e.Workers)
	return b.String()
}

// Unwrap returns ErrTooSlow.
func (e *CostError) Unwrap() error { return ErrTooSlow }

// roundSeconds writes an estimate to two significant digits: "610 s",
// "1.5 s".
func roundSeconds(s float64) string {
	if s >= 100 {
		p := math.Pow(10, math.Floor(math.Log10(s))-1)
		return fmt.Sprintf("%.0f s", math.Round(s/p)*p)
	}
	return fmt.Sprintf("%.2g s", s)
}

// costModel is a test's run time on the reference machine: serial
// seconds plus parallel core-seconds shared by the workers. Each is a sum
// of measured coefficients times terms in n, K and the resamples B.
type costModel struct {
	serial, parallel func(n, k, b float64) float64
}

// costModels are the tests' cost models, measured on one core
// (Workers 1) of a 2-core 2.6 GHz AMD EPYC VM with Go 1.26 on synthetic
// predictions (softmax of N(0, 2.5^2) logits, labels drawn from them), at
// n = 500 to 16,000 (50 to 2,000 for prior_score, 500 to 4,000 for skce_u
// and ece_kde, 500 to 2,000 for ece_witness), K = 2 to 2,000, B = 19 to
// 200, and fitted by non-negative least squares on the relative error
// (the fitted times within 0.4 to 1.6 of the measured ones above 0.1 s).
// The ks, kuiper and spiegelhalter rows share one class-wise resampling,
// which is most of their cost: each is estimated at the family's cost.
var costModels = map[string]costModel{
	"ks":                {parallel: linearCost(4.0e-8, 4.4e-10, 1.4e-7)},
	"kuiper":            {parallel: linearCost(4.0e-8, 4.4e-10, 1.4e-7)},
	"spiegelhalter":     {parallel: linearCost(4.0e-8, 4.4e-10, 1.4e-7)},
	"ece_bin":           {parallel: linearCost(3.2e-8, 6.3e-10, 8.2e-9)},
	"temperature_score": {parallel: linearCost(2.2e-8, 1.1e-9, 1.5e-8)},
	"ks_error":          {parallel: linearCost(3.6e-8, 6.1e-10, 7.7e-9)},
	// mmce's resamples gain little from a second core (measured: 7.6 s
	// on 2 workers at n = 128,000, K = 10, B = 200, against 6.4 s
	// estimated on one), so its estimate is not shared.
	"mmce": {serial: linearCost(2.4e-7, 1.5e-9, 5.3e-8)},
	// The K x K covariance of the predicted counts (O(n K^2)) and its
	// Cholesky factor (O(K^3)) on one goroutine, then two triangular
	// solves (O(K^2)) and the counts (O(n)) per resample.
	"prior_score": {
		serial:   func(n, k, b float64) float64 { return 2.0e-9*n*k*k + 1.05e-10*k*k*k },
		parallel: func(n, k, b float64) float64 { return b * (1.0e-8*k*k + 6.1e-8*n) },
	},
	// Blocks of sqrt(n) rows: n^1.5 pair terms of K each (no resamples).
	"skce": {parallel: func(n, k, b float64) float64 { return 9.8e-10*math.Pow(n, 1.5)*k + 8.3e-6*n }},
	// The n x n kernel matrix, then O(n^2) per bootstrap resample.
	"skce_u": {parallel: func(n, k, b float64) float64 { return 2.05e-9*n*n*k + 1.34e-9*b*n*n }},
	// Three LOO bandwidth selections (O(n^2 K)), then one kernel sweep
	// per batch of resamples.
	"ece_kde": {parallel: func(n, k, b float64) float64 { return 4.0e-8*n*n*k + 2.7e-8*n*n + 5.1e-7*b*n*k }},
	// A witness estimate, its bandwidth chosen on the labels, per
	// resample: O(n^2 K) each.
	"ece_witness": {parallel: func(n, k, b float64) float64 { return b * n * n * (2.7e-8 + 1.6e-9*k) }},
}

// linearCost is the cost of a statistic recomputed in O(n) per resample
// after O(n K) set-up, the label draws costing O(n K) per resample:
// b n (perRow + perEntry K) + setup n K.
func linearCost(perRow, perEntry, setup float64) func(n, k, b float64) float64 {
	return func(n, k, b float64) float64 { return b*n*(perRow+perEntry*k) + setup*n*k }
}

// EstimateSeconds returns the estimated run time in seconds of test t (one
// of Tests) on n rows of K classes, with resamples resamples (0:
// DefaultResamples; skce draws none) on workers goroutines (0:
// GOMAXPROCS):
//
//	seconds = serial(n, K, B) + parallel(n, K, B) / workers,
//
// the two parts measured on the reference machine (see costModels in
// cost.go; docs/commands.md gives every formula). It is a guide to the
// order of magnitude, not a timer: on that machine, at sizes past those
// fitted, the runs took 0.6 to 1.8 of the estimate (ks at n = 128,000,
// K = 10: 1.05 s against 0.56 s; prior_score at n = 100, K = 3,000,
// B = 200: 11.8 s against 13.6 s), and a faster or busier machine moves
// them further. It is 0 for an unknown test.
func EstimateSeconds(t string, n, k, resamples, workers int) float64 {
	m, ok := costModels[t]
	if !ok {
		return 0
	}
	if resamples == 0 {
		resamples = DefaultResamples
	}
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	nf, kf, bf := float64(n), float64(k), float64(resamples)
	s := 0.0
	if m.serial != nil {
		s += m.serial(nf, kf, bf)
	}
	if m.parallel != nil {
		s += m.parallel(nf, kf, bf) / float64(workers)
	}
	return s
}

// maxSeconds is the bound of o: DefaultMaxSeconds for 0.
func (o Options) maxSeconds() float64 {
	if o.MaxSeconds == 0 {
		return DefaultMaxSeconds
	}
	return o.MaxSeconds
}

// workers is the number of goroutines of o: GOMAXPROCS for 0.
func (o Options) workers() int {
	if o.Workers <= 0 {
		return runtime.GOMAXPROCS(0)
	}
	return o.Workers
}

// withinBound returns the tests whose estimated run time is within o's
// bound. Named tests (named: the caller's own list) past it are an error
// naming each; from the default list or "all" they are dropped and added
// to skipped with their estimates.
func withinBound(tests, skipped []string, named bool, n, k int, o Options) ([]string, []string, error) {
	bound, workers := o.maxSeconds(), o.workers()
	resamples := o.Resamples
	if resamples == 0 {
		resamples = DefaultResamples
	}
	var keep []string
	slow := &CostError{N: n, K: k, Resamples: resamples, Workers: workers, MaxSeconds: bound}
	for _, t := range tests {
		s := EstimateSeconds(t, n, k, resamples, workers)
		switch {
		case !(s > bound):
			keep = append(keep, t)
		case named:
			slow.Tests, slow.Seconds = append(slow.Tests, t), append(slow.Seconds, s)
		default:
			skipped = append(skipped, fmt.Sprintf("%s (about %s estimated, past the bound of %g s: name it with --max-seconds 0 to run it)", t, roundSeconds(s), bound))
		}
	}
	if len(slow.Tests) > 0 {
		return nil, nil, slow
	}
	return keep, skipped, nil
}
