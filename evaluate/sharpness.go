package evaluate

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/kde"
	"github.com/calib-dev/calib/metric"
)

// sharpnessDef is the variance of the kernel regression E[y | f] of the
// top-label (binary: p1) notion around its mean (kde.Sharpness), at the
// bandwidth ece_kde's notion gets; with Options.Debias also its
// debiased-ratio variant.
var sharpnessDef = metricDef{
	name:     Sharpness,
	sums:     []*sumsPart{sampleSums},
	kernel:   []*kernelPart{sharpnessKernel},
	compute:  (*evaluator).sharpness,
	interval: centered,
	define:   defineKDE,
	finish:   func(s *Sums, ks *KernelSums, _ *Evaluation) ([]*Result, error) { return finishSharpness(s, ks) },
}

func (ev *evaluator) sharpness() ([]*Result, error) {
	c, s := ev.cfg, ev.set
	if err := s.Require(3, "sharpness"); err != nil {
		return nil, err
	}
	notion := kde.TopLabel
	if s.Binary {
		notion = kde.Binary
	}
	b, err := ev.bandwidth(notion)
	if err != nil {
		return nil, err
	}

	var out []*Result
	for _, debias := range c.variants() {
		name := Sharpness
		if debias {
			name = SharpnessDebiased
		}
		res, err := kde.Sharpness(ev.ctx, notion, s.Probs, s.Labels, s.K, s.Weights, kde.Options{Bandwidth: b.h, Exact: c.Exact, Workers: c.Workers, Debias: debias})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.File, err)
		}
		e := &Result{Metric: name, Notion: notion, Bandwidth: ptr(b.h), BandwidthMethod: b.method,
			Value: jf(res.Value), Variance: jf(res.Variance), Excluded: ptr(res.Excluded)}
		if c.CIExact {
			ev.setStat(e, func(idx []int) (float64, error) {
				r, err := kde.Sharpness(ev.ctx, notion, metric.Resample(s.Probs, s.K, idx), metric.Resample(s.Labels, 1, idx), s.K, metric.Resample(s.Weights, 1, idx), kde.Options{Bandwidth: b.h, Exact: c.Exact, Workers: 1, Debias: debias})
				if err != nil {
					return 0, err
				}
				return r.Value, nil
			})
		} else {
			ev.setStat(e, func(idx []int) (float64, error) {
				if v := res.Resampled(idx); !math.IsNaN(v) {
					return v, nil
				}
				return 0, fmt.Errorf("sharpness: no point kept in the resample")
			})
		}

		out = append(out, e)
	}
	return out, nil
}

// sharpnessNotion is the notion of sharpness: binary for one-column
// input, else top_label.
func (s *Sums) sharpnessNotion() kde.Notion {
	if s.st.Binary {
		return kde.Binary
	}
	return kde.TopLabel
}

// finishSharpness reports sharpness from the squared kernel sums at the
// evaluation points, at the bandwidth ece_kde's notion gets.
func finishSharpness(s *Sums, ks *KernelSums) ([]*Result, error) {
	if ks == nil {
		return nil, errors.New("sharpness: the second pass (KernelSums) is missing")
	}
	n := s.sharpnessNotion()
	ps := ks.notion(n)
	if ps == nil || !ps.HasSquares() {
		ps = ks.st.Sharpness
	}
	if ps == nil {
		return nil, errors.New("sharpness: the kernel sums lack the squared sums")
	}
	c := s.st.Config
	g, method, _, err := c.gridBandwidth(ps)
	if err != nil {
		return nil, err
	}
	ybar := s.st.Scores.Accuracy()
	if n == kde.Binary {
		ybar = s.st.Scores.LabelMean(1)
	}
	res, err := ps.Sharpness(g, ybar, c.Level)
	if err != nil {
		return nil, err
	}
	e := s.sampled(&Result{Metric: Sharpness, Notion: n, Bandwidth: ptr(res.Bandwidth), BandwidthMethod: method,
		Value: jf(res.Value), Variance: jf(res.Variance), Excluded: ptr(res.Excluded)},
		res.M, res.SE, data.Float(res.Lo), data.Float(res.Hi))
	return []*Result{e}, nil
}

// sharpnessKernelState is sharpnessKernel's part of the second pass's
// state (kernelSumsState): sharpness's kernel sums (top_label, or binary
// for one-column input, with the squared sums) when ece_kde does not
// already compute that notion (then its PointSums keeps the squares).
type sharpnessKernelState struct {
	Sharpness *kde.PointSums `json:"sharpness,omitempty"`
}

// sharpnessKernel is sharpness's part of the second pass: the kernel sums
// of its notion (top_label, or binary for one-column input) with their
// squares, shared with ece_kde's sums of that notion where ece_kde
// computes it (then only KeepSquares is sharpness's), else its own
// (Sharpness).
var sharpnessKernel = &kernelPart{
	what:  "sharpness",
	holds: func(st *kernelSumsState) bool { return st.Sharpness != nil },
	start: func(ks *KernelSums, kb *kernelBlock) error {
		s, pts := kb.s, kb.points
		ps := ks.notion(s.sharpnessNotion())
		if ps == nil {
			var err error
			if ps, err = kde.NewPointSums(s.sharpnessNotion(), pts.probs, pts.labels, s.st.K, pts.weights, s.st.Config.Grid); err != nil {
				return err
			}
			ks.st.Sharpness = ps
		}
		return ps.KeepSquares()
	},
	add: func(ks *KernelSums, ctx context.Context, b *data.Batch, self []int, workers int) error {
		if err := ks.st.Sharpness.Add(ctx, b.Probs, b.Labels, b.Weights, kde.AddOptions{Self: self, Workers: workers}); err != nil {
			return b.RowsError(err)
		}
		return nil
	},
	merge: func(ks, o *KernelSums) error {
		if err := ks.st.Sharpness.Merge(o.st.Sharpness); err != nil {
			return fmt.Errorf("evaluate: %w", err)
		}
		return nil
	},
	concat: func(out *KernelSums, bs []*KernelSums) (err error) {
		out.st.Sharpness, err = concatBlocks(bs, func(b *KernelSums) *kde.PointSums { return b.st.Sharpness }, kde.ConcatPointSums)
		return err
	},
	check: func(st *kernelSumsState) error {
		if st.Sharpness != nil && st.Sharpness.M() != len(st.Points) {
			return fmt.Errorf("sharpness sums inconsistent with the %d points", len(st.Points))
		}
		return nil
	},
	complete: func(st *kernelSumsState, n int64) error {
		if st.Sharpness.N() != n {
			return fmt.Errorf("evaluate: the kernel sums saw %d rows, the first pass %d: the second pass is incomplete", st.Sharpness.N(), n)
		}
		return nil
	},
}
