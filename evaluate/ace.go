package evaluate

import (
	"fmt"
	"math"
	"strconv"

	"github.com/calib-dev/calib/convention"
	"github.com/calib-dev/calib/metric"
	"github.com/calib-dev/calib/notion"
)

// ACEOptions configures ace (Options.ACE). The zero value is 15 bins.
type ACEOptions struct {
	// Bins is the number of bins of every convention's ACE; 0 means 15,
	// the binned entries' default (metric.DefaultBins;
	// robustness_metrics' registered "ace" uses 30, torch-uncertainty's
	// and netcal's default is 10: --ace-bins reproduces them).
	Bins int
}

// check fills the default number of bins and refuses a negative one.
func (a *ACEOptions) check() error {
	if a.Bins < 0 {
		return optionError("ace-bins", "ace bins %d: want a number >= 1, or 0 (%d)", a.Bins, metric.DefaultBins)
	}
	if a.Bins == 0 {
		a.Bins = metric.DefaultBins
	}
	return nil
}

// aceDef is "ACE" in each of its three meanings, each entry naming its
// convention (convention package):
//
//   - robustness_metrics: Nixon et al.'s adaptive calibration error,
//     class-conditional equal-mass bins (notion class_wise), threshold 0
//     (ACE) and 0.01 (TACE as the paper defines it), p = 1 and 2 (l1,
//     l2: the value is the square of what the library prints);
//   - torch_uncertainty: the top-label error of equal-count chunks of
//     the sorted confidences, for each p;
//   - netcal: the Average Calibration Error, the unweighted mean of
//     |acc - conf| over the non-empty equal-width bins (top_label, or
//     binary when the labels take at most two values).
//
// None takes sample weights (the libraries have none): a weighted set
// gets an error.
var aceDef = metricDef{
	name:  ACE,
	check: func(o *Options) error { return o.ACE.check() },
	options: []Option{{Name: "ace-bins", Kind: IntOption, Default: strconv.Itoa(metric.DefaultBins), Metrics: MetricSet{ACE},
		Usage: "bins of ace (robustness_metrics' registered ace uses 30; torch-uncertainty and netcal default to 10)",
		set:   intField(1, math.MaxInt32, "an integer >= 1", func(o *StreamOptions) *int { return &o.ACE.Bins })}},
	variant: func(e *Result) string { // the convention; robustness_metrics' TACE apart
		if e.Threshold != nil && *e.Threshold > 0 {
			return e.Convention + "/tace"
		}
		return e.Convention
	},
	compute:  (*evaluator).ace,
	interval: centered,
	define: func(_ *config, e *Result) {
		e.Estimator = "binned-" + e.Convention
		switch e.Convention {
		case string(convention.RobustnessMetrics):
			e.BinRule, e.BinEdges = "fixed", "equal mass per class: upper edges the sorted scores at round_half_even(b n/B), then 1 (np.digitize: an edge to the upper bin, 1 to a bin of its own)"
		case string(convention.TorchUncertainty):
			e.BinRule, e.BinEdges = "fixed", "equal counts of the sorted confidences (torch.tensor_split)"
		default:
			e.BinRule, e.BinEdges = "fixed", convention.Netcal.Edges()
		}
	},
}

func (ev *evaluator) ace() ([]*Result, error) {
	c, s := ev.cfg, ev.set
	if s.Weights != nil {
		return nil, optionError("weights", "ace: the libraries that define it take no sample weights")
	}
	bins := c.ACE.Bins
	var out []*Result
	// failed is the entry of a part the library cannot compute (too few
	// scores for the bins): its error; the other parts stand.
	failed := func(nt notion.Notion, conv convention.Name, p, th *float64, err error) {
		out = append(out, &Result{Metric: ACE, Notion: nt, Bins: ptr(bins), P: p, Threshold: th, Convention: string(conv), Error: oneLineError(fmt.Errorf("ace: %w", err))})
	}
	// robustness_metrics: class-conditional, ACE and TACE.
	for _, th := range []float64{0, 0.01} {
		for _, p := range c.ps {
			if p != 1 && p != 2 {
				continue
			}
			o := convention.GCEOptions{Bins: bins, Adaptive: true, ClassConditional: true, Threshold: th, L2: p == 2}
			v, err := convention.GCE(s.Probs, s.Labels, s.K, o)
			if err != nil {
				failed(notion.ClassWise, convention.RobustnessMetrics, ptr(p), ptr(th), err)
				continue
			}
			e := &Result{Metric: ACE, Notion: notion.ClassWise, Binning: metric.EqualMass.String(), Bins: ptr(bins), P: ptr(p), Threshold: ptr(th),
				Convention: string(convention.RobustnessMetrics), Value: jf(math.Pow(v, p)), Root: jf(v)}
			ev.setStat(e, func(idx []int) (float64, error) {
				v, err := convention.GCE(metric.Resample(s.Probs, s.K, idx), metric.Resample(s.Labels, 1, idx), s.K, o)
				return math.Pow(v, p), err
			})
			out = append(out, e)
		}
	}
	// torch-uncertainty: top-label equal-count chunks.
	top, cor := metric.TopR(s.Probs, s.Labels, s.K, 1)
	for _, p := range c.ps {
		v, _, err := convention.TopLabelACE(top, cor, bins, p)
		if err != nil {
			failed(notion.TopLabel, convention.TorchUncertainty, ptr(p), nil, err)
			continue
		}
		e := &Result{Metric: ACE, Notion: notion.TopLabel, Binning: "equal_count", Bins: ptr(bins), P: ptr(p),
			Convention: string(convention.TorchUncertainty), Value: jf(v), Root: jf(math.Pow(v, 1/p))}
		ev.setStat(e, func(idx []int) (float64, error) {
			v, _, err := convention.TopLabelACE(metric.Resample(top, 1, idx), metric.Resample(cor, 1, idx), bins, p)
			return v, err
		})
		out = append(out, e)
	}
	// netcal: the average over non-empty bins, its view (binary or
	// top-label) decided once on the whole set.
	view, err := convention.ViewOf(convention.Netcal, s.Labels, s.K, s.Binary)
	if err != nil {
		failed(notion.TopLabel, convention.Netcal, nil, nil, err)
		return out, nil
	}
	cv, nt, err := view.Curve(convention.Netcal, s.Probs, s.Labels, s.K, nil, bins, metric.EqualWidth)
	if err != nil {
		failed(notion.TopLabel, convention.Netcal, nil, nil, err)
		return out, nil
	}
	e := &Result{Metric: ACE, Notion: nt, Binning: metric.EqualWidth.String(), Bins: ptr(bins), Convention: string(convention.Netcal), Value: jf(cv.Average())}
	ev.setStat(e, func(idx []int) (float64, error) {
		cv, _, err := view.Curve(convention.Netcal, metric.Resample(s.Probs, s.K, idx), metric.Resample(s.Labels, 1, idx), s.K, nil, bins, metric.EqualWidth)
		if err != nil {
			return 0, err
		}
		return cv.Average(), nil
	})
	return append(out, e), nil
}
