package evaluate

import (
	"math"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/internal/mathx"
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

// atbView is one notion's columns of the two-bin average: one column,
// or K for class_wise, each sorted once.
type atbView struct {
	n   notion.Notion
	f   [][]float64
	atb []*metric.SortedATB
}

// atbViews returns the views of s: binary (two columns only), top_label,
// class_wise.
func atbViews(s *data.Set) ([]atbView, error) {
	var views []atbView
	add := func(n notion.Notion, cols ...[2][]float64) error {
		v := atbView{n: n}
		for _, c := range cols {
			a, err := metric.NewSortedATB(c[0], c[1])
			if err != nil {
				return err
			}
			v.f, v.atb = append(v.f, c[0]), append(v.atb, a)
		}
		views = append(views, v)
		return nil
	}
	if s.Binary {
		f, y := metric.ClassColumn(s.Probs, s.Labels, s.K, 1)
		if err := add(notion.Binary, [2][]float64{f, y}); err != nil {
			return nil, err
		}
	}
	f, y := metric.TopR(s.Probs, s.Labels, s.K, 1)
	if err := add(notion.TopLabel, [2][]float64{f, y}); err != nil {
		return nil, err
	}
	cols := make([][2][]float64, s.K)
	for k := range cols {
		cols[k][0], cols[k][1] = metric.ClassColumn(s.Probs, s.Labels, s.K, k)
	}
	if err := add(notion.ClassWise, cols...); err != nil {
		return nil, err
	}
	return views, nil
}

// mean returns the view's value on the resample of the counts (nil: the
// set) with the set's weights w: the mean over its columns of ATB_p, or
// of ATB_2 less its bias, and each column's.
func (v atbView) mean(w, counts []float64, p float64, debiased bool) (float64, []float64, error) {
	given := w
	if counts != nil {
		w = make([]float64, len(counts))
		for i, c := range counts {
			w[i] = c * mathx.Weight(given, i)
		}
	}
	per := make([]float64, len(v.atb))
	sum := 0.0
	for k, a := range v.atb {
		x, err := a.Value(w, p)
		if err != nil {
			return 0, nil, err
		}
		if debiased {
			x -= metric.ATBBiasCounts(v.f[k], given, counts)
		}
		per[k] = x
		sum += x
	}
	return sum / float64(len(v.atb)), per, nil
}

func (ev *evaluator) atb() ([]*Result, error) {
	c, s := ev.cfg, ev.set
	views, err := atbViews(s)
	if err != nil {
		return nil, err
	}
	var out []*Result
	for _, v := range views {
		for _, p := range c.ps {
			for _, debiased := range []bool{false, true} {
				if debiased && p != 2 {
					continue
				}
				val, per, err := v.mean(s.Weights, nil, p, debiased)
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
						e.PerClass = append(e.PerClass, data.Float(x))
					}
				}
				ev.setStat(e, func(idx []int) (float64, error) {
					x, _, err := v.mean(s.Weights, metric.ResampleCounts(s.N, idx, nil), p, debiased)
					return x, err
				})
				out = append(out, e)
			}
		}
	}
	return out, nil
}
