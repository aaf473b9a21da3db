package evaluate

import (
	"context"
	"encoding"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/internal/mathx"
	"github.com/calib-dev/calib/kde"
	"github.com/calib-dev/calib/metric"
	"github.com/calib-dev/calib/notion"
)

// eceKDEDef is the plug-in ECE^KDE of every notion (and, with
// Options.Debias, its debiased-ratio variant), at the LOO bandwidth it
// shares with sharpness.
var eceKDEDef = metricDef{
	name:     ECEKDE,
	sums:     []*sumsPart{eceKDEModes, sampleSums},
	kernel:   []*kernelPart{eceKDEKernel},
	compute:  (*evaluator).eceKDE,
	interval: centered,
	pValues:  (*evaluator).eceKDEPValues,
	define:   defineKDE,
	finish:   finishKDE,
	options:  kernelOptions,
}

// kernelOptions are the options of the kernel estimators, ece_kde and
// sharpness: the bandwidth, how it is chosen, the one-dimensional sweeps
// and the debiased ratios; class-mean is ece_kde's alone.
var kernelOptions = []Option{
	{Name: "bandwidth", Kind: TextOption, Default: "auto", Stream: true, Metrics: MetricSet{ECEKDE, Sharpness},
		Usage:       "kernel bandwidth h > 0, or auto (leave-one-out maximum likelihood per notion)",
		StreamUsage: "kernel bandwidth h > 0, or auto (leave-one-out choice on a grid)",
		set:         textField(func(o *StreamOptions) encoding.TextUnmarshaler { return &o.Bandwidth })},
	{Name: "bandwidth-objective", Kind: TextOption, Default: "loo", Metrics: MetricSet{ECEKDE, Sharpness},
		Usage: "objective of --bandwidth auto: loo, or reference (the reference code's l(h) - n log h, unrefined)",
		set: func(o *StreamOptions, text string) (err error) {
			if o.Objective, err = kde.ParseObjective(text); err != nil {
				return optionError("bandwidth-objective", "bandwidth-objective: %v", err)
			}
			return nil
		}},
	{Name: "class-mean", Kind: BoolOption, Default: "false", Stream: true, Metrics: MetricSet{ECEKDE},
		Usage: "ece_kde class_wise: report the mean over classes instead of the sum",
		set:   boolField(func(o *StreamOptions) *bool { return &o.ClassMean })},
	{Name: "exact", Kind: BoolOption, Default: "false", Metrics: MetricSet{ECEKDE, Sharpness},
		Usage: "ece_kde and sharpness: compute top_label, binary and class_wise (and their bandwidths) by the exact O(n^2) sweeps instead of the tree of series, whose kernel sums are within about 1e-13 relative",
		set:   boolField(func(o *StreamOptions) *bool { return &o.Exact })},
	{Name: "debias", Kind: BoolOption, Default: "false", Metrics: MetricSet{ECEKDE, Sharpness},
		Usage: "also report ece_kde_debiased (every kernel ratio debiased to O(n^-3), ECE^KDE paper appendix C: removes the ratio's O(1/n) bias, not the smoothing bias) and sharpness_debiased (eq. 7's ratio debiased to O(n^-2), appendix D)",
		set:   boolField(func(o *StreamOptions) *bool { return &o.Debias })},
}

// eceKDEModes refuses, at a stream's first batch, notions of Options.Mode
// that the batch's columns do not have (its sums are the kernel metrics'
// sample).
var eceKDEModes = &sumsPart{
	start: func(st *sumsState, b *data.Batch) error {
		_, _, err := streamNotions(st.Config.Mode, b.K, b.Binary)
		return err
	},
}

// defineKDE sets the definition keys of ece_kde and sharpness: the
// plug-in estimator (eq. 4 of ece-kde.md with the leave-one-out ratio r_j
// of eq. 6; sharpness: the variance of r_j around its mean) or the
// debiased ratio (kde/doc.go), and the kernel: Dirichlet on the simplex
// for canonical, Beta on one coordinate otherwise.
func defineKDE(_ *config, e *Result) {
	e.Estimator, e.Kernel = "plug-in", "beta"
	if e.Metric == ECEKDEDebiased || e.Metric == SharpnessDebiased {
		e.Estimator = "debiased-ratio"
	}
	if e.Notion == notion.Canonical {
		e.Kernel = "dirichlet"
	}
}

// Bounds on the median effective number of neighbours of the kernel
// regressions (kde.Result.Neighbours) outside which an ECE^KDE estimate is
// flagged: below minNeighbours each r_j rests on about one other sample's
// label; above smoothedShare of the other samples it is about the overall
// label frequency.
const (
	minNeighbours = 2
	smoothedShare = 0.5
)

// smoothingWarning warns when the kernel regressions behind the plug-in
// estimate v of CE_p^p at bandwidth h cannot resolve E[y | f]: when the
// median point's regression effectively averages fewer than minNeighbours
// other samples (r_j is about the nearest neighbour's one-hot label, so the
// estimate measures label noise: canonical CE_1 near 2(1 - 1/K) x the
// error rate's scale; K = 100 or 1,000 at n = 400 to 10,000 give 1.0 to 1.6
// neighbours at any workable h), or more than smoothedShare of them (r_j
// is about the overall label frequency ybar whatever f_j, and the estimate
// about V_inf = (1/n) sum_j ||ybar - f_j||_p^p, the spread of the
// predictions). A model whose regression resolves f is not flagged,
// however miscalibrated. neighbours 0 (not computed) gives no warning.
func smoothingWarning(notion kde.Notion, s *data.Set, p, v, h, neighbours float64) *Warning {
	n, k := s.N, s.K
	switch {
	case neighbours == 0:
		return nil
	case neighbours < minNeighbours:
		return warn(FewNeighbours, fmt.Sprintf("at h = %.4g each kernel regression rests on about one other sample (median %.2f effective neighbours): it is close to a single neighbour's label, so the estimate (p = %g: %.4g) measures label noise, not calibration; too few samples for K = %d at this h: read "+Headline.String()+", or the top-label, binned and KS metrics",
			h, neighbours, p, v, k))
	case neighbours <= smoothedShare*float64(n-1):
		return nil
	}
	// V_inf with the sample weights (nil: all 1): weighted label
	// frequency, weighted mean over j.
	var inf float64
	w, wsum := s.Weights, mathx.WeightSum(s.Weights, n)
	switch notion {
	case kde.TopLabel:
		c, a := metric.TopR(s.Probs, s.Labels, k, 1)
		acc := 0.0
		for i, x := range a {
			acc += mathx.Weight(w, i) * x
		}
		acc /= wsum
		for i, x := range c {
			inf += mathx.Weight(w, i) * math.Pow(math.Abs(acc-x), p)
		}
		inf /= wsum
	default: // canonical, binary: the whole vector
		ybar := make([]float64, k)
		for i, y := range s.Labels {
			ybar[y] += mathx.Weight(w, i)
		}
		for c := range ybar {
			ybar[c] /= wsum
		}
		for j := 0; j < n; j++ {
			for c, f := range s.Probs[j*k : (j+1)*k] {
				inf += mathx.Weight(w, j) * math.Pow(math.Abs(ybar[c]-f), p)
			}
		}
		inf /= wsum
	}
	return warn(OverSmoothed, fmt.Sprintf("at h = %.4g each kernel regression averages most of the data (median %.0f effective neighbours of %d): it is close to the overall label frequency whatever the prediction, so the estimate (p = %g: %.4g, against %.4g with the regression replaced by that frequency) measures the spread of the predictions, not their calibration: read "+Headline.String()+", or the binned and KS metrics",
		h, neighbours, n-1, p, v, inf))
}

func (ev *evaluator) eceKDE() ([]*Result, error) {
	c, s := ev.cfg, ev.set
	if err := s.Require(2, "ECE^KDE"); err != nil {
		return nil, err
	}
	var out []*Result
	for _, notion := range c.notions {
		start := time.Now() // each notion's entries carry its own time
		b, err := ev.bandwidth(notion)
		if err != nil {
			return nil, err
		}
		for _, debias := range c.variants() {
			first := len(out)
			name, step := ECEKDE, notion.String()+" estimate"
			if debias {
				name, step = ECEKDEDebiased, notion.String()+" debiased estimate"
			}
			progress, done := ev.step(step)
			res, err := kde.Estimate(ev.ctx, notion, s.Probs, s.Labels, s.K, s.Weights, kde.Options{Bandwidth: b.h, P: c.ps, ClassMean: c.ClassMean, Exact: c.Exact, Workers: c.Workers, Progress: progress, Terms: c.ci, Debias: debias, Neighbours: notion != kde.ClassWise && !debias})
			done()
			if err != nil {
				return nil, fmt.Errorf("%s: %w", s.File, err)
			}
			for i, v := range res.Values {
				e := &Result{Metric: name, Notion: notion, P: ptr(v.P), Bandwidth: ptr(b.h),
					Value: jf(v.Value), Root: jf(v.Root), BandwidthMethod: b.method, Excluded: ptr(res.Excluded),
					Warnings: b.warnings}
				if w := smoothingWarning(notion, s, v.P, v.Value, b.h, res.Neighbours); w != nil {
					e.Warnings = append(slices.Clip(e.Warnings), w)
				}
				if notion == kde.ClassWise {
					e.Aggregate = "sum"
					if c.ClassMean {
						e.Aggregate = "mean"
					}
					for _, x := range res.PerClass[i] {
						e.PerClass = append(e.PerClass, data.Float(x))
					}
				}
				if c.CIExact {
					notion, p, h := notion, v.P, b.h
					ev.setStat(e, func(idx []int) (float64, error) {
						r, err := kde.Estimate(ev.ctx, notion, metric.Resample(s.Probs, s.K, idx), metric.Resample(s.Labels, 1, idx), s.K, metric.Resample(s.Weights, 1, idx),
							kde.Options{Bandwidth: h, P: []float64{p}, ClassMean: c.ClassMean, Exact: c.Exact, Workers: 1, Debias: debias})
						if err != nil {
							return 0, err
						}
						return r.Values[0].Value, nil
					})
				} else if c.ci {
					i := i
					ev.setStat(e, func(idx []int) (float64, error) { return res.Resampled(i, idx), nil })
				}
				out = append(out, e)
			}
			if len(out) > first {
				out[first].Seconds = ptr(time.Since(start).Seconds())
			}
			start = time.Now()
		}
	}
	return out, nil
}

// finishKDE reports ece_kde for each notion of ks.
func finishKDE(s *Sums, ks *KernelSums, out *Evaluation) ([]*Result, error) {
	if ks == nil {
		return nil, errors.New("ece_kde: the second pass (KernelSums) is missing")
	}
	c := s.st.Config
	_, note, _ := streamNotions(c.Mode, s.st.K, s.st.Binary)
	out.Modes = note
	var rs []*Result
	for _, ps := range ks.st.PointSums {
		g, method, warnings, err := c.gridBandwidth(ps)
		if err != nil {
			return nil, err
		}
		res, err := ps.Estimate(g, c.P, c.ClassMean, c.Level)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", ps.Notion(), err)
		}
		for i, v := range res.Values {
			e := s.sampled(&Result{Metric: ECEKDE, Notion: ps.Notion(), P: ptr(v.P), Bandwidth: ptr(res.Bandwidth),
				Value: jf(v.Value), Root: jf(v.Root), BandwidthMethod: method, Excluded: ptr(res.Excluded), Warnings: warnings}, res.M, v.SE, data.Float(v.Lo), data.Float(v.Hi))
			if ps.Notion() == kde.ClassWise {
				e.Aggregate = "sum"
				if c.ClassMean {
					e.Aggregate = "mean"
				}
				for _, x := range res.PerClass[i] {
					e.PerClass = append(e.PerClass, data.Float(x))
				}
			}
			rs = append(rs, e)
		}
	}
	return rs, nil
}

// eceKDEPValues attaches to the ece_kde entries (not ece_kde_debiased)
// their consistency-resampling p-values with the kernel shared between
// the resamples (kde.Relabel: one sweep per notion for every exponent, at
// the entry's bandwidth, which the LOO objective chose without the
// labels). Each statistic is recomputed by Relabel, to about 1e-15 of the
// entry's value.
func (ev *evaluator) eceKDEPValues(_ *metricDef, entries []*Result) error {
	c, s := ev.cfg, ev.set
	var notions []notion.Notion
	for _, e := range entries {
		if e.Metric == ECEKDE && e.Error == "" && !slices.Contains(notions, e.Notion) {
			notions = append(notions, e.Notion)
		}
	}
	for _, name := range notions {
		var group []*Result
		var ps []float64
		for _, e := range entries {
			if e.Metric == ECEKDE && e.Notion == name && e.Error == "" {
				group, ps = append(group, e), append(ps, *e.P)
			}
		}
		kn, err := kde.ParseNotion(string(name))
		if err != nil {
			return err
		}
		rl, err := kde.NewRelabel(ev.ctx, kn, s.Probs, s.K, s.Weights, kde.Options{Bandwidth: *group[0].Bandwidth, P: ps, ClassMean: c.ClassMean, Workers: c.Workers})
		if err != nil {
			return fmt.Errorf("%s p-values: %w", name, err)
		}
		if err := ev.consistencyTest(group, rl.Estimates, "consistency resampling, kernel shared"); err != nil {
			return fmt.Errorf("%s p-values: %w", name, err)
		}
	}
	return nil
}

// eceKDEKernelState is eceKDEKernel's part of the second pass's state
// (kernelSumsState).
type eceKDEKernelState struct {
	PointSums []*kde.PointSums `json:"notions"` // per notion, in the stream's order
}

// eceKDEKernel is ece_kde's part of the second pass: the kernel sums of
// each notion (kde.PointSums) at the block's evaluation points, over every
// row.
var eceKDEKernel = &kernelPart{
	what:  "ece_kde",
	holds: func(st *kernelSumsState) bool { return len(st.PointSums) > 0 },
	start: func(ks *KernelSums, kb *kernelBlock) error {
		s, pts := kb.s, kb.points
		notions, _, err := streamNotions(s.st.Config.Mode, s.st.K, s.st.Binary)
		if err != nil {
			return err
		}
		for _, n := range notions {
			ps, err := kde.NewPointSums(n, pts.probs, pts.labels, s.st.K, pts.weights, s.st.Config.Grid)
			if err != nil {
				return err
			}
			ks.st.PointSums = append(ks.st.PointSums, ps)
		}
		return nil
	},
	add: func(ks *KernelSums, ctx context.Context, b *data.Batch, self []int, workers int) error {
		for _, ps := range ks.st.PointSums {
			if err := ps.Add(ctx, b.Probs, b.Labels, b.Weights, kde.AddOptions{Self: self, Workers: workers}); err != nil {
				return b.RowsError(err)
			}
		}
		return nil
	},
	merge: func(ks, o *KernelSums) error {
		if len(ks.st.PointSums) != len(o.st.PointSums) {
			return fmt.Errorf("evaluate: merging kernel sums of %d and %d notions", len(ks.st.PointSums), len(o.st.PointSums))
		}
		for i, ps := range ks.st.PointSums {
			if err := ps.Merge(o.st.PointSums[i]); err != nil {
				return fmt.Errorf("evaluate: %w", err)
			}
		}
		return nil
	},
	concat: func(out *KernelSums, bs []*KernelSums) error {
		for _, b := range bs {
			if len(b.st.PointSums) != len(bs[0].st.PointSums) {
				return fmt.Errorf("evaluate: blocks of kernel sums of %d and %d notions", len(bs[0].st.PointSums), len(b.st.PointSums))
			}
		}
		for i := range bs[0].st.PointSums {
			ps, err := concatBlocks(bs, func(b *KernelSums) *kde.PointSums { return b.st.PointSums[i] }, kde.ConcatPointSums)
			if err != nil {
				return err
			}
			out.st.PointSums = append(out.st.PointSums, ps)
		}
		return nil
	},
	check: func(st *kernelSumsState) error {
		for _, ps := range st.PointSums {
			if ps == nil || ps.M() != len(st.Points) {
				return fmt.Errorf("notions inconsistent with the %d points", len(st.Points))
			}
		}
		return nil
	},
	complete: func(st *kernelSumsState, n int64) error {
		for _, ps := range st.PointSums {
			if ps.N() != n {
				return fmt.Errorf("evaluate: the kernel sums saw %d rows, the first pass %d: the second pass is incomplete", ps.N(), n)
			}
		}
		return nil
	},
}

// notion returns ece_kde's sums of notion n (nil when not computed).
func (ks *KernelSums) notion(n kde.Notion) *kde.PointSums {
	for _, ps := range ks.st.PointSums {
		if ps.Notion() == n {
			return ps
		}
	}
	return nil
}
