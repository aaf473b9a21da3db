package evaluate

import (
	"math"

	"github.com/calib-dev/calib/metric"
	"github.com/calib-dev/calib/notion"
)

// eceSweepDef is the monotonic-sweep ECE of Roelofs et al. (2022) on the
// top-label confidence (metric.SweepECE), equal-width and equal-mass,
// for each p: value ECE_sweep^p, root ECE_sweep, bins the sweep's B. Its
// bootstrap sweeps each resample again.
var eceSweepDef = metricDef{
	name:     ECESweep,
	compute:  (*evaluator).eceSweep,
	interval: centered,
	define: func(_ *config, e *Result) {
		e.Estimator, e.BinRule, e.BinEdges = "monotonic-sweep", "sweep", "bins of the sweep's B (equal mass: rank r in floor(r B / n); equal width: floor(x B), 1 in the last)"
		e.Convention = "calib"
	},
}

func (ev *evaluator) eceSweep() ([]*Result, error) {
	c, s := ev.cfg, ev.set
	top, cor := metric.TopR(s.Probs, s.Labels, s.K, 1)
	var out []*Result
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
