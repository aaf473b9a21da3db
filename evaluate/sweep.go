package evaluate

import (
	"errors"
	"math"

	"github.com/calib-dev/calib/convention"
	"github.com/calib-dev/calib/metric"
	"github.com/calib-dev/calib/notion"
)

// eceSweepDef is the monotonic-sweep ECE of Roelofs et al. (2022) on the
// top-label confidence (metric.SweepECE), equal-width and equal-mass,
// for each p: value ECE_sweep^p, root ECE_sweep, bins the sweep's B. Its
// bootstrap sweeps each resample again.
var eceSweepDef = metricDef{
	name:     ECESweep,
	variant:  func(e *Result) string { return e.Binning }, // equal_width, equal_mass
	compute:  (*evaluator).eceSweep,
	interval: centered,
	define: func(_ *config, e *Result) {
		e.Estimator, e.BinRule, e.BinEdges = "monotonic-sweep", "sweep", "bins of the sweep's B (equal mass: rank r in floor(r B / n); equal width: floor(x B), 1 in the last)"
		if e.Convention == "" {
			e.Convention = string(convention.Calib)
		} else {
			e.BinEdges = "the sweep's bins re-cut at the midpoints between neighbouring bins' scores (np.digitize: the largest score in a bin of its own)"
		}
	},
}

func (ev *evaluator) eceSweep() ([]*Result, error) {
	c, s := ev.cfg, ev.set
	top, cor := metric.TopR(s.Probs, s.Labels, s.K, 1)
	var out []*Result
	if c.Convention == convention.RobustnessMetrics {
		return ev.eceSweepRM()
	}
	for _, b := range []metric.Binning{metric.EqualWidth, metric.EqualMass} {
		sw, err := metric.MonotonicSweep(top, cor, s.Weights, b)
		if err != nil {
			return nil, err
		}
		for _, p := range c.ps {
			v := sw.ECE(top, cor, s.Weights, p)
			e := &Result{Metric: ECESweep, Notion: notion.TopLabel, Binning: b.String(), Bins: ptr(sw.Bins), P: ptr(p),
				Value: jf(v), Root: jf(math.Pow(v, 1/p))}
			ev.setStat(e, func(idx []int) (float64, error) {
				v, _, err := metric.SweepECE(metric.Resample(top, 1, idx), metric.Resample(cor, 1, idx), metric.Resample(s.Weights, 1, idx), b, p)
				return v, err
			})
			out = append(out, e)
		}
	}
	return out, nil
}

// eceSweepRM is ece_sweep under the robustness_metrics convention: its
// GeneralCalibrationError with num_bins None (registered as "msce" for
// equal mass and l1), whose sweep bins are re-cut at the midpoints
// between neighbouring bins and digitized (convention.GCE). No weights.
func (ev *evaluator) eceSweepRM() ([]*Result, error) {
	c, s := ev.cfg, ev.set
	if s.Weights != nil {
		return nil, errors.New("ece_sweep: robustness_metrics takes no sample weights")
	}
	var out []*Result
	for _, b := range []metric.Binning{metric.EqualWidth, metric.EqualMass} {
		for _, p := range c.ps {
			if p != 1 && p != 2 {
				continue
			}
			o := convention.GCEOptions{Adaptive: b == metric.EqualMass, MaxProb: true, L2: p == 2}
			v, err := convention.GCE(s.Probs, s.Labels, s.K, o)
			if err != nil {
				return nil, err
			}
			e := &Result{Metric: ECESweep, Notion: notion.TopLabel, Binning: b.String(), P: ptr(p), Convention: string(convention.RobustnessMetrics),
				Value: jf(math.Pow(v, p)), Root: jf(v)}
			ev.setStat(e, func(idx []int) (float64, error) {
				v, err := convention.GCE(metric.Resample(s.Probs, s.K, idx), metric.Resample(s.Labels, 1, idx), s.K, o)
				return math.Pow(v, p), err
			})
			out = append(out, e)
		}
	}
	return out, nil
}
