package evaluate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/metric"
	"github.com/calib-dev/calib/notion"
)

// mmceDef is the maximum mean calibration error of Kumar, Sarawagi and
// Jain (2018) on the top-label confidence with a Laplacian kernel: the
// V-statistic (the i = j terms included).
var mmceDef = metricDef{
	name:      MMCE,
	sums:      []*sumsPart{sampleSums},
	configure: func(c *streamConfig, o StreamOptions) error { c.MMCEWidth = o.MMCE.Width; return nil },
	kernel:    []*kernelPart{mmceKernel},
	check:     func(o *Options) error { return o.MMCE.check() },
	options: []Option{{Name: "mmce-width", Kind: FloatOption, Default: strconv.FormatFloat(metric.DefaultMMCEWidth, 'g', -1, 64), Stream: true, Metrics: MetricSet{MMCE},
		Usage: "width of MMCE's Laplacian kernel",
		set:   floatField(func(x float64) bool { return x > 0 }, "a finite number > 0", func(o *StreamOptions) *float64 { return &o.MMCE.Width })}},
	compute:  (*evaluator).mmce,
	interval: centered,
	pValues:  (*evaluator).recomputedPValues,
	define:   func(_ *config, e *Result) { e.Estimator, e.Kernel = "v-statistic", "laplacian" },
	finish:   func(s *Sums, ks *KernelSums, _ *Evaluation) ([]*Result, error) { return finishMMCE(s, ks) },
}

// mmceConfig is mmce's part of a stream's configuration (streamConfig):
// its kernel width (Options.MMCE.Width).
type mmceConfig struct {
	MMCEWidth float64 `json:"mmce_width"`
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

// mmceKernelState is mmceKernel's part of the second pass's state
// (kernelSumsState): mmce's kernel sums at the evaluation points (nil
// when mmce is not asked for).
type mmceKernelState struct {
	MMCE *metric.MMCESums `json:"mmce,omitempty"`
}

// mmceKernel is mmce's part of the second pass: its Laplacian kernel sums
// (metric.MMCESums) at the block's evaluation points, over every row.
var mmceKernel = &kernelPart{
	what:  "mmce",
	holds: func(st *kernelSumsState) bool { return st.MMCE != nil },
	start: func(ks *KernelSums, kb *kernelBlock) (err error) {
		s, pts := kb.s, kb.points
		if ks.st.MMCE, err = metric.NewMMCESums(pts.probs, pts.labels, s.st.K, pts.weights, s.st.Config.MMCEWidth); err != nil {
			return fmt.Errorf("evaluate: %w", err)
		}
		return nil
	},
	add: func(ks *KernelSums, _ context.Context, b *data.Batch, _ []int, _ int) error {
		if err := ks.st.MMCE.Add(b.Probs, b.Labels, b.K, b.Weights); err != nil {
			return b.RowsError(err)
		}
		return nil
	},
	merge: func(ks, o *KernelSums) error { return ks.st.MMCE.Merge(o.st.MMCE) },
	concat: func(out *KernelSums, bs []*KernelSums) (err error) {
		out.st.MMCE, err = concatBlocks(bs, func(b *KernelSums) *metric.MMCESums { return b.st.MMCE }, metric.ConcatMMCESums)
		return err
	},
	check: func(st *kernelSumsState) error {
		if st.MMCE != nil && st.MMCE.M() != len(st.Points) {
			return fmt.Errorf("mmce sums of %d points, not %d", st.MMCE.M(), len(st.Points))
		}
		return nil
	},
	complete: func(st *kernelSumsState, n int64) error {
		if st.MMCE.N() != n {
			return fmt.Errorf("evaluate: the mmce sums saw %d rows, the first pass %d: the second pass is incomplete", st.MMCE.N(), n)
		}
		return nil
	},
}
