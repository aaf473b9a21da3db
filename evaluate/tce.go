package evaluate

import (
	"github.com/calib-dev/calib/metric"
	"github.com/calib-dev/calib/notion"
)

// tceDef is the test-based calibration error of Matsubara et al. (UAI
// 2023; metric.TCE) of the top-label confidence (p1 for one-column
// input): the share of predictions whose bin's exact binomial test
// rejects them at level 0.05, with PAVA bins of n/20 to n/5 points
// (binning "pava", the paper's TCE) and with 10 equal-count bins
// (binning "equal_mass", its TCE(Q)). A test counts predictions: weighted
// sets get an error.
var tceDef = metricDef{
	name:     TCE,
	variant:  func(e *Result) string { return e.Binning }, // pava, equal_mass
	compute:  (*evaluator).tce,
	interval: centered,
	define: func(_ *config, e *Result) {
		e.Estimator = "binomial-tests"
		if e.Binning == "pava" {
			e.BinRule, e.BinEdges = "pava", "PAVA-BC blocks of the sorted scores, n/20 to n/5 points"
		} else {
			e.BinRule, e.BinEdges = "fixed", "equal counts of the sorted scores, bin b from floor(b n / B)"
		}
	},
}

func (ev *evaluator) tce() ([]*Result, error) {
	s := ev.set
	if s.Weights != nil {
		return nil, optionError("weights", "tce: the binomial tests count predictions; sample weights are not supported")
	}
	n := notion.TopLabel
	f, y := metric.TopR(s.Probs, s.Labels, s.K, 1)
	if s.Binary {
		n = notion.Binary
		f, y = metric.ClassColumn(s.Probs, s.Labels, s.K, 1)
	}
	var out []*Result
	for _, c := range []struct {
		binning string
		o       metric.TCEOptions
	}{{"pava", metric.TCEOptions{}}, {"equal_mass", metric.TCEOptions{Quantile: 10}}} {
		r, err := metric.TCE(f, y, c.o)
		if err != nil {
			return nil, err
		}
		e := &Result{Metric: TCE, Notion: n, Binning: c.binning, Bins: ptr(r.Bins), Value: jf(r.Value)}
		o := c.o
		ev.setStat(e, func(idx []int) (float64, error) {
			r, err := metric.TCE(metric.Resample(f, 1, idx), metric.Resample(y, 1, idx), o)
			return r.Value, err
		})
		out = append(out, e)
	}
	return out, nil
}
