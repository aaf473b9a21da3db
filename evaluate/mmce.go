package evaluate

import (
	"errors"
	"math"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/metric"
	"github.com/calib-dev/calib/notion"
)

// mmceDef is the maximum mean calibration error of Kumar, Sarawagi and
// Jain (2018) on the top-label confidence with a Laplacian kernel: the
// V-statistic (the i = j terms included).
var mmceDef = metricDef{
	name:     MMCE,
	sums:     []*sumsPart{sampleSums},
	check:    func(o *Options) error { return o.MMCE.check() },
	compute:  (*evaluator).mmce,
	interval: centered,
	pValues:  (*evaluator).recomputedPValues,
	define:   func(_ *config, e *Result) { e.Estimator, e.Kernel = "v-statistic", "laplacian" },
	finish:   func(s *Sums, ks *KernelSums, _ *Evaluation) ([]*Result, error) { return finishMMCE(s, ks) },
}

// MMCEOptions configures mmce (Options.MMCE). The zero value is the
// width metric.DefaultMMCEWidth (0.4, Kumar et al.'s).
type MMCEOptions struct {
	// Width is the width of MMCE's Laplacian kernel exp(-|r_i - r_j| /
	// Width); 0 means metric.DefaultMMCEWidth.
	Width float64
}

// check fills the default width and refuses one that is not a positive
// finite number.
func (m *MMCEOptions) check() error {
	if m.Width == 0 {
		m.Width = metric.DefaultMMCEWidth
	}
	if !(m.Width > 0) || math.IsInf(m.Width, 0) {
		return optionError("mmce-width", "MMCE width %v: must be positive", m.Width)
	}
	return nil
}

func (ev *evaluator) mmce() ([]*Result, error) {
	s, w := ev.set, ev.cfg.MMCE.Width
	r, cor := metric.TopR(s.Probs, s.Labels, s.K, 1)
	v, sq := metric.MMCE(r, cor, w, nil, s.Weights)
	e := &Result{Metric: MMCE, Notion: notion.TopLabel, Value: jf(v), Squared: jf(sq), Width: ptr(w)}
	ev.setStat(e, func(idx []int) (float64, error) {
		v, _ := metric.MMCE(metric.Resample(r, 1, idx), metric.Resample(cor, 1, idx), w, nil, metric.Resample(s.Weights, 1, idx))
		return v, nil
	})
	return []*Result{e}, nil
}

// finishMMCE reports mmce from its sums at the evaluation points: the
// value is sqrt(max(0, squared)) and the interval the roots of the
// squared's interval (clamped at 0).
func finishMMCE(s *Sums, ks *KernelSums) ([]*Result, error) {
	if ks == nil || ks.st.MMCE == nil {
		return nil, errors.New("mmce: the second pass (KernelSums) is missing")
	}
	c := s.st.Config
	sq, se, lo, hi := ks.st.MMCE.Estimate(c.Level)
	root := func(v float64) data.Float { return data.Float(math.Sqrt(math.Max(0, v))) }
	e := s.sampled(&Result{Metric: MMCE, Notion: notion.TopLabel, Value: ptr(root(sq)), Squared: jf(sq), Width: ptr(c.MMCEWidth)}, ks.st.MMCE.M(), se, root(lo), root(hi))
	return []*Result{e}, nil
}
