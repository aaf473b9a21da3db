package evaluate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/kde"
	"github.com/calib-dev/calib/metric"
	"github.com/calib-dev/calib/notion"
)

// witnessDef is the converging canonical estimators: the cross-fitted
// residual witness of CE_1 and the debiased U-statistic of CE_2^2
// (kde.Witness). A stream computes it only when asked for (its kernel
// sums are K-vectors at two grids: about 13 times ece_kde's canonical
// cost).
var witnessDef = metricDef{
	name:      ECEWitness,
	sums:      []*sumsPart{sampleSums},
	configure: configureWitness,
	kernel:    []*kernelPart{witnessKernel},
	check:     func(o *Options) error { return o.Witness.check() },
	compute:   (*evaluator).eceWitness,
	interval:  witnessInterval,
	define:    defineWitness,
	finish:    func(s *Sums, ks *KernelSums, _ *Evaluation) ([]*Result, error) { return finishWitness(s, ks) },
}

// WitnessOptions configures ece_witness (Options.Witness). The zero value
// chooses the bandwidth by cross-fitting, as kde.Witness does.
type WitnessOptions struct {
	// Bandwidth evaluates ece_witness at this one bandwidth h instead of
	// choosing it (p = 1: the residual witness at h; p = 2: the
	// U-statistic at h/2, h being h_cv); 0 chooses it. ece_witness
	// reports p = 1 and 2, or those of Options.P when P is given.
	Bandwidth float64
}

// check refuses a bandwidth that is negative or not finite.
func (w WitnessOptions) check() error {
	if !(w.Bandwidth >= 0) || math.IsInf(w.Bandwidth, 0) {
		return optionError("witness-bandwidth", "witness bandwidth %v: want a finite h > 0, or 0 (chosen by cross-fitting)", w.Bandwidth)
	}
	return nil
}

// witnessInterval is the percentile interval of the resampled per-point
// terms; with --ci-exact the witness is recomputed on every resample,
// whose repeated points are each other's nearest neighbours and push the
// witness up: its interval is centred then.
func witnessInterval(exact bool) metric.IntervalMethod {
	if exact {
		return metric.Centered
	}
	return metric.Percentile
}

// defineWitness sets the witness's keys: the Dirichlet kernel, the
// estimator (witness-crossfit for p = 1, u-statistic for p = 2) and the
// seed of the cross-fitting splits.
func defineWitness(c *config, e *Result) {
	e.Kernel, e.Estimator, e.Seed = "dirichlet", "witness-crossfit", ptr(c.boot.Seed)
	if e.P != nil && *e.P == 2 {
		e.Estimator = "u-statistic"
	}
}

// eceWitness reports the converging canonical estimators (kde.Witness):
// the cross-fitted residual witness (p = 1) and the debiased kernel
// U-statistic (p = 2), both always (they share one grid sweep).
func (ev *evaluator) eceWitness() ([]*Result, error) {
	c, s := ev.cfg, ev.set
	if err := s.Require(4, "the witness estimators"); err != nil {
		return nil, err
	}
	o := kde.WitnessOptions{Seed: c.boot.Seed, Workers: c.Workers}
	if c.Witness.Bandwidth > 0 {
		o.Grid = []float64{c.Witness.Bandwidth}
	}
	if c.P != nil { // the p of P that the witness has: 1, 2
		for _, p := range c.P {
			if (p == 1 || p == 2) && !slices.Contains(o.P, p) {
				o.P = append(o.P, p)
			}
		}
		if o.P == nil {
			return nil, optionError("p", "ece_witness is defined for p = 1 and 2, not for p = %v", c.P)
		}
	}
	progress, done := ev.step("canonical witness")
	o.Progress = progress
	res, err := kde.Witness(ev.ctx, s.Probs, s.Labels, s.K, s.Weights, o)
	done()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.File, err)
	}
	var out []*Result
	for i, v := range res.Values {
		e := &Result{Metric: ECEWitness, Notion: notion.Canonical, P: ptr(v.P), Bandwidth: ptr(v.Bandwidth),
			Value: jf(v.Value), Root: jf(v.Root), BandwidthMethod: "witness-crossfit", Excluded: ptr(v.Excluded)}
		for _, w := range v.Warnings {
			e.Warnings = append(e.Warnings, warn(EstimatorWarning, w.Error()))
		}
		if v.P == 2 {
			e.BandwidthMethod, e.CVBandwidth = "cv-half", ptr(v.CVBandwidth)
		}
		if c.CIExact {
			p := v.P
			ev.setStat(e, func(idx []int) (float64, error) {
				oo := o
				oo.P, oo.Workers, oo.Progress = []float64{p}, 1, nil
				r, err := kde.Witness(ev.ctx, metric.Resample(s.Probs, s.K, idx), metric.Resample(s.Labels, 1, idx), s.K, metric.Resample(s.Weights, 1, idx), oo)
				if err != nil {
					return 0, err
				}
				return r.Values[0].Value, nil
			})
		} else if c.ci {
			i := i
			ev.setStat(e, func(idx []int) (float64, error) {
				if v := res.Resampled(i, idx); !math.IsNaN(v) {
					return v, nil
				}
				return 0, fmt.Errorf("ece_witness: no point kept in the resample")
			})
		}
		out = append(out, e)
	}
	return out, nil
}

// finishWitness reports ece_witness from the residual kernel sums at the
// evaluation points (kde.WitnessSums.Estimate), as eceWitness does from
// all rows.
func finishWitness(s *Sums, ks *KernelSums) ([]*Result, error) {
	if ks == nil || ks.st.Witness == nil {
		return nil, errors.New("ece_witness: the second pass (KernelSums) is missing")
	}
	c := s.st.Config
	vals, err := ks.st.Witness.Estimate(c.WitnessP, 0, c.Seed, c.Level)
	if err != nil {
		return nil, err
	}
	var out []*Result
	for _, v := range vals {
		e := s.sampled(&Result{Metric: ECEWitness, Notion: notion.Canonical, P: ptr(v.P), Bandwidth: ptr(v.Bandwidth),
			Value: jf(v.Value), Root: jf(v.Root), BandwidthMethod: "witness-crossfit", Excluded: ptr(v.Excluded)}, v.M, v.SE, data.Float(v.Lo), data.Float(v.Hi))
		for _, w := range v.Warnings {
			e.Warnings = append(e.Warnings, warn(EstimatorWarning, w.Error()))
		}
		if v.P == 2 {
			e.BandwidthMethod, e.CVBandwidth = "cv-half", ptr(v.CVBandwidth)
		}
		out = append(out, e)
	}
	return out, nil
}

// witnessConfig is ece_witness's part of a stream's configuration
// (streamConfig): its grid (kde.WitnessGrid, or the one witness
// bandwidth) and its exponents (1 and 2 of P).
type witnessConfig struct {
	WitnessGrid []float64 `json:"witness_grid,omitempty"`
	WitnessP    []float64 `json:"witness_p,omitempty"`
}

// configureWitness sets ece_witness's part of a stream's configuration,
// where ece_witness is asked for: its bandwidth grid (or the fixed
// bandwidth) and its exponents, p = 1 and 2 of the options' (both by
// default).
func configureWitness(c *streamConfig, o StreamOptions) error {
	if !c.has(ECEWitness) {
		return nil
	}
	c.WitnessGrid = kde.WitnessGrid()
	if o.Witness.Bandwidth > 0 {
		c.WitnessGrid = []float64{o.Witness.Bandwidth}
	}
	for _, p := range c.P {
		if (p == 1 || p == 2) && !slices.Contains(c.WitnessP, p) {
			c.WitnessP = append(c.WitnessP, p)
		}
	}
	if o.P == nil {
		c.WitnessP = []float64{1, 2}
	}
	if c.WitnessP == nil {
		return optionError("p", "ece_witness is defined for p = 1 and 2, not for p = %v", c.P)
	}
	return nil
}

// witnessKernelState is witnessKernel's part of the second pass's state
// (kernelSumsState): ece_witness's residual kernel sums.
type witnessKernelState struct {
	Witness *kde.WitnessSums `json:"witness,omitempty"`
}

// witnessKernel is ece_witness's part of the second pass: its residual
// kernel sums (kde.WitnessSums) at the block's evaluation points, over
// every row.
var witnessKernel = &kernelPart{
	what:  "ece_witness",
	holds: func(st *kernelSumsState) bool { return st.Witness != nil },
	start: func(ks *KernelSums, kb *kernelBlock) (err error) {
		s, pts, c := kb.s, kb.points, kb.s.st.Config
		scale := 0.0
		if slices.Contains(c.WitnessP, 2) {
			scale = 0.5 // kde.WitnessOptions.P2Scale's default
		}
		ks.st.Witness, err = kde.NewWitnessSums(pts.probs, pts.labels, s.st.K, pts.weights, c.WitnessGrid, scale)
		return err
	},
	add: func(ks *KernelSums, ctx context.Context, b *data.Batch, self []int, workers int) error {
		if err := ks.st.Witness.Add(ctx, b.Probs, b.Labels, b.Weights, kde.AddOptions{Self: self, Workers: workers}); err != nil {
			return b.RowsError(err)
		}
		return nil
	},
	merge: func(ks, o *KernelSums) error {
		if err := ks.st.Witness.Merge(o.st.Witness); err != nil {
			return fmt.Errorf("evaluate: %w", err)
		}
		return nil
	},
	concat: func(out *KernelSums, bs []*KernelSums) (err error) {
		out.st.Witness, err = concatBlocks(bs, func(b *KernelSums) *kde.WitnessSums { return b.st.Witness }, kde.ConcatWitnessSums)
		return err
	},
	check: func(st *kernelSumsState) error {
		if st.Witness != nil && st.Witness.M() != len(st.Points) {
			return fmt.Errorf("witness sums inconsistent with the %d points", len(st.Points))
		}
		return nil
	},
	complete: func(st *kernelSumsState, n int64) error {
		if st.Witness.N() != n {
			return fmt.Errorf("evaluate: the witness sums saw %d rows, the first pass %d: the second pass is incomplete", st.Witness.N(), n)
		}
		return nil
	},
}
