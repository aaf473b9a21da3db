package evaluate

import (
	"fmt"
	"math"

	"github.com/calib-dev/calib/internal/mathx"
	"github.com/calib-dev/calib/notion"
	"github.com/calib-dev/calib/recal"
	"github.com/calib-dev/calib/variational"
)

// variationalDef is the variational calibration error of Berta et al.
// (2026) as probmetrics computes it (package variational): the
// cross-fitted gain of Options.VariationalFamily (temperature scaling by
// default) on 5 stratified folds seeded by Options.Seed, for the Lp loss
// at each p, the log loss and the Brier score; canonical and top-label
// (binary too for one-column input), all from one cross-fit. Each entry
// carries the normal interval of the mean gain over the rows (conditional
// on the fitted maps: interval_kind "cross-fit"); with --ci also the
// percentile bootstrap of that mean (the rows' gains resampled, the maps
// held fixed).
var variationalDef = metricDef{
	name:     ECEVariational,
	compute:  (*evaluator).variational,
	interval: percentile,
	define: func(_ *config, e *Result) {
		e.Estimator = "variational-crossfit"
	},
}

// DefaultVariationalFamily is the recalibration family of ece_variational
// when Options.VariationalFamily is "".
const DefaultVariationalFamily = recal.MethodTemperature

func (ev *evaluator) variational() ([]*Result, error) {
	c, s := ev.cfg, ev.set
	family := c.VariationalFamily
	if family == "" {
		family = DefaultVariationalFamily
	}
	const folds = 5
	rc, err := variational.CrossFit(ev.ctx, s, variational.Options{Method: family, Folds: folds, Seed: c.Seed})
	if err != nil {
		return nil, fmt.Errorf("ece_variational: %w", err)
	}
	notions := []notion.Notion{notion.Canonical, notion.TopLabel}
	if s.Binary {
		notions = append(notions, notion.Binary)
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
	for _, nt := range notions {
		for _, l := range losses {
			r, err := rc.Error(variational.Options{Loss: l.l, P: l.p, Notion: nt})
			if err != nil {
				return nil, fmt.Errorf("ece_variational: %w", err)
			}
			e := &Result{Metric: ECEVariational, Notion: nt, Loss: string(l.l), Family: string(family), Folds: ptr(folds),
				Value: jf(r.Value), SE: jf(r.SE), Interval: []Float{Float(r.Lo), Float(r.Hi)}, IntervalLevel: ptr(0.95), IntervalKind: "cross-fit"}
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
