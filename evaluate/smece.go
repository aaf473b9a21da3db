package evaluate

import (
	"fmt"
	"slices"

	"github.com/calib-dev/calib/kde"
	"github.com/calib-dev/calib/metric"
	"github.com/calib-dev/calib/notion"
	"github.com/calib-dev/calib/smooth"
)

// smeceDef is the smooth calibration error of Błasiok and Nakkiran as
// relplot 1.0.3 computes it (package smooth): at its fixed point sigma*
// (Options.SmECE.Sigma 0) or at a given sigma, for the top-label
// confidence (relplot's multiclass_logits_to_confidences), the positive
// class of one-column input (binary, relplot's own input) and, where
// ece_kde's notions include class_wise (K <= 20, or --mode naming it),
// each class's column against its indicator, averaged over classes. Each
// entry's bootstrap recomputes it on the resample at the full sample's
// sigma* (one bandwidth per resample); with Options.CIExact, and for
// relplot 1.0.1's convention (whose value depends on its search's grid),
// at the resample's own fixed point, searched again (as relplot's own
// interval of the smECE does, 11 bandwidths per resample).
var smeceDef = metricDef{
	name:     SmECE,
	compute:  (*evaluator).smece,
	interval: centered,
	define: func(c *config, e *Result) {
		e.Estimator, e.Kernel, e.Convention = "smooth", "reflected-gaussian", c.SmECE.Convention.String()
		e.BandwidthMethod = "fixed-point"
		if c.SmECE.Sigma != 0 {
			e.BandwidthMethod = "given"
		}
	},
}

func (ev *evaluator) smece() ([]*Result, error) {
	c, s := ev.cfg, ev.set
	o := c.SmECE
	one := func(f, y, w []float64) (smooth.Result, error) {
		r, err := smooth.ECE(ev.ctx, f, y, w, o)
		if err != nil {
			return r, fmt.Errorf("smece: %w", err)
		}
		return r, nil
	}
	// at returns smECE of the resample idx: at the full sample's sigma,
	// or (CIExact) at the resample's own fixed point.
	at := func(f, y []float64, sigma float64, idx []int) (float64, error) {
		ro := o
		// relplot 1.0.1's value comes from the largest grid its search
		// visited: only a search again gives it on a resample.
		if !c.CIExact && o.Convention != smooth.Relplot101 {
			ro.Sigma = sigma
		}
		r, err := smooth.ECE(ev.ctx, metric.Resample(f, 1, idx), metric.Resample(y, 1, idx), metric.Resample(s.Weights, 1, idx), ro)
		if err != nil {
			return 0, fmt.Errorf("smece: %w", err)
		}
		return r.Value, nil
	}
	stat := func(e *Result, f, y []float64, sigma float64) {
		ev.setStat(e, func(idx []int) (float64, error) { return at(f, y, sigma, idx) })
	}
	var views []notion.Notion
	if s.Binary {
		views = append(views, notion.Binary)
	}
	views = append(views, notion.TopLabel)
	if slices.Contains(c.notions, kde.Marginal) {
		views = append(views, notion.ClassWise)
	}
	var out []*Result
	for _, v := range views {
		switch v {
		case notion.Binary, notion.TopLabel:
			var f, y []float64
			if v == notion.Binary {
				f, y = metric.ClassColumn(s.Probs, s.Labels, s.K, 1)
			} else {
				f, y = metric.TopR(s.Probs, s.Labels, s.K, 1)
			}
			r, err := one(f, y, s.Weights)
			if err != nil {
				return nil, err
			}
			e := &Result{Metric: SmECE, Notion: v, Bandwidth: ptr(r.Sigma), Value: jf(r.Value)}
			stat(e, f, y, r.Sigma)
			out = append(out, e)
		case notion.ClassWise:
			cols, ys := make([][]float64, s.K), make([][]float64, s.K)
			e := &Result{Metric: SmECE, Notion: v}
			sum := 0.0
			for k := range cols {
				cols[k], ys[k] = metric.ClassColumn(s.Probs, s.Labels, s.K, k)
				r, err := one(cols[k], ys[k], s.Weights)
				if err != nil {
					return nil, fmt.Errorf("class %d: %w", k, err)
				}
				sum += r.Value
				e.PerClass = append(e.PerClass, Float(r.Value))
				e.PerClassBandwidth = append(e.PerClassBandwidth, r.Sigma)
			}
			e.Value, e.Sum = jf(sum/float64(s.K)), jf(sum)
			sigmas := e.PerClassBandwidth
			ev.setStat(e, func(idx []int) (float64, error) {
				sum := 0.0
				for k := range cols {
					v, err := at(cols[k], ys[k], sigmas[k], idx)
					if err != nil {
						return 0, fmt.Errorf("class %d: %w", k, err)
					}
					sum += v
				}
				return sum / float64(len(cols)), nil
			})
			out = append(out, e)
		}
	}
	return out, nil
}
