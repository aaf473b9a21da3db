package evaluate

import (
	"fmt"
	"math"

	"github.com/calib-dev/calib/internal/mathx"
	"github.com/calib-dev/calib/notion"
	"github.com/calib-dev/calib/variational"
)

// variationalDef is the variational calibration error of Berta et al.
// (2026) as probmetrics computes it (package variational): the
// cross-fitted gain of the recalibration families of
// Options.VariationalFamily (by default temperature scaling and log-spline
// scaling without and with class biases, the simplest kept unless a
// richer one's per-row gains beat it significantly) on 5 folds stratified by the predicted
// class, seeded by Options.Seed, for the Lp loss at each p, the log loss
// and the Brier score; canonical and top-label (binary too for one-column
// input) from one cross-fit, class-wise (per-class maps) when K <= 20.
// Each entry carries the normal interval of the mean gain over the rows
// (conditional on the fitted maps: interval_kind "cross-fit"); with --ci
// also the percentile bootstrap of that mean (the rows' gains resampled,
// the maps held fixed). Top-label and binary entries split the value into
// over- and under-confidence.
var variationalDef = metricDef{
	name:     ECEVariational,
	compute:  (*evaluator).variational,
	interval: percentile,
	define: func(_ *config, e *Result) {
		e.Estimator = "variational-crossfit"
	},
}

// DefaultVariationalFamily is the family list of ece_variational when
// Options.VariationalFamily is "".
const DefaultVariationalFamily = variational.Auto

// variationalClassWiseMaxK is the largest K whose class-wise entries
// ece_variational computes (K binary cross-fits; as ece_kde's "all").
const variationalClassWiseMaxK = 20

func (ev *evaluator) variational() ([]*Result, error) {
	c, s := ev.cfg, ev.set
	families, err := variational.ParseFamilies(c.VariationalFamily)
	if err != nil {
		return nil, fmt.Errorf("ece_variational: %w", err)
	}
	names := make([]string, len(families))
	for i, f := range families {
		names[i] = f.Name
	}
	const folds = 5
	vo := variational.Options{Families: families, Folds: folds, Seed: c.Seed}
	rc, err := variational.CrossFit(ev.ctx, s, vo)
	if err != nil {
		return nil, fmt.Errorf("ece_variational: %w", err)
	}
	notions := []notion.Notion{notion.Canonical, notion.TopLabel}
	if s.Binary {
		notions = append(notions, notion.Binary)
	} else if s.K <= variationalClassWiseMaxK {
		notions = append(notions, notion.ClassWise)
	}
	type loss struct {
		l variational.Loss
		p float64
	}
	var losses []loss
	for _, p := range c.ps {
		losses = append(losses, loss{variational.Lp, p})
	}
	losses = append(losses, loss{variational.Log, 0}, loss{variational.Brier, 0})
	var out []*Result
	var cm *variational.ClassMaps
	for _, nt := range notions {
		for _, l := range losses {
			lo := vo
			lo.Loss, lo.P, lo.Notion = l.l, l.p, nt
			var r variational.Result
			if nt == notion.ClassWise {
				if cm == nil {
					if cm, err = variational.CrossFitClassWise(ev.ctx, s, vo); err != nil {
						return nil, fmt.Errorf("ece_variational: class_wise: %w", err)
					}
				}
				r, err = cm.Error(lo)
			} else {
				r, err = rc.Error(lo)
			}
			if err != nil {
				return nil, fmt.Errorf("ece_variational: %w", err)
			}
			e := &Result{Metric: ECEVariational, Notion: nt, Loss: string(l.l), Family: r.Family, Families: names, Folds: ptr(folds),
				Value: jf(r.Value), SE: jf(r.SE), Interval: []Float{Float(r.Lo), Float(r.Hi)}, IntervalLevel: ptr(0.95), IntervalKind: "cross-fit"}
			if nt == notion.TopLabel || nt == notion.Binary {
				e.Over, e.Under = jf(r.Over), jf(r.Under)
			}
			switch l.l {
			case variational.Lp:
				e.P = ptr(l.p) // value: E||E[y | f] - f||_p itself (probmetrics' L_p error), not its p-th power
			case variational.Brier:
				e.Root = jf(math.Sqrt(math.Max(0, r.Value))) // value: the squared L2 error
			}
			gains := r.Gains
			ev.setStat(e, func(idx []int) (float64, error) {
				var sw, sg float64
				for _, i := range idx {
					w := mathx.Weight(s.Weights, i)
					sw += w
					sg += w * gains[i]
				}
				if !(sw > 0) {
					return 0, fmt.Errorf("ece_variational: a resample of weight 0")
				}
				return sg / sw, nil
			})
			out = append(out, e)
		}
	}
	return out, nil
}
