package evaluate

import (
	"math"

	"github.com/calib-dev/calib/metric"
	"github.com/calib-dev/calib/notion"
)

// atbDef is the averaged two-bin error of Hartline, Hu and Wu
// (metric.ATB) for each p (value ATB_p, root ATB_p^(1/p)): of the
// top-label confidence, of p1 for one-column input (binary), and of each
// class's column (class_wise: the mean over classes); for p = 2 also
// atb_debiased, ATB_2 less its expectation under calibration
// (metric.ATBBias), which may be negative.
var atbDef = metricDef{
	name:     ATB,
	compute:  (*evaluator).atb,
	interval: centered,
	define: func(_ *config, e *Result) {
		e.Estimator = "two-bin-average"
		if e.Metric == ATBDebiased {
			e.Estimator = "two-bin-average-debiased"
		}
	},
}

func (ev *evaluator) atb() ([]*Result, error) {
	c, s := ev.cfg, ev.set
	// value returns ATB_p or, debiased, ATB_2 - ATBBias, of one view.
	value := func(f, y, w []float64, p float64, debiased bool) (float64, error) {
		v, err := metric.ATB(f, y, w, p)
		if debiased {
			v -= metric.ATBBias(f, w)
		}
		return v, err
	}
	type view struct {
		n    notion.Notion
		f, y [][]float64 // one column, or K for class_wise
	}
	var views []view
	if s.Binary {
		f, y := metric.ClassColumn(s.Probs, s.Labels, s.K, 1)
		views = append(views, view{notion.Binary, [][]float64{f}, [][]float64{y}})
	}
	f, y := metric.TopR(s.Probs, s.Labels, s.K, 1)
	views = append(views, view{notion.TopLabel, [][]float64{f}, [][]float64{y}})
	cw := view{n: notion.ClassWise}
	for k := range s.K {
		f, y := metric.ClassColumn(s.Probs, s.Labels, s.K, k)
		cw.f, cw.y = append(cw.f, f), append(cw.y, y)
	}
	views = append(views, cw)
	// mean returns the view's value: the mean over its columns.
	mean := func(v view, w []float64, idx []int, p float64, debiased bool) (float64, []float64, error) {
		per := make([]float64, len(v.f))
		sum := 0.0
		for k := range v.f {
			f, y := v.f[k], v.y[k]
			if idx != nil {
				f, y = metric.Resample(f, 1, idx), metric.Resample(y, 1, idx)
			}
			x, err := value(f, y, w, p, debiased)
			if err != nil {
				return 0, nil, err
			}
			per[k] = x
			sum += x
		}
		return sum / float64(len(v.f)), per, nil
	}
	var out []*Result
	for _, v := range views {
		for _, p := range c.ps {
			for _, debiased := range []bool{false, true} {
				if debiased && p != 2 {
					continue
				}
				val, per, err := mean(v, s.Weights, nil, p, debiased)
				if err != nil {
					return nil, err
				}
				e := &Result{Metric: ATB, Notion: v.n, P: ptr(p), Value: jf(val)}
				if debiased {
					e.Metric = ATBDebiased
					e.Root = jf(math.Sqrt(math.Max(0, val)))
				} else {
					e.Root = jf(math.Pow(val, 1/p))
				}
				if v.n == notion.ClassWise {
					e.Sum = jf(val * float64(len(per)))
					for _, x := range per {
						e.PerClass = append(e.PerClass, Float(x))
					}
				}
				ev.setStat(e, func(idx []int) (float64, error) {
					x, _, err := mean(v, metric.Resample(s.Weights, 1, idx), idx, p, debiased)
					return x, err
				})
				out = append(out, e)
			}
		}
	}
	return out, nil
}
