package report

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/calib-dev/calib/bandwidth"
	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/evaluate"
	"github.com/calib-dev/calib/kde"
	"github.com/calib-dev/calib/metric"
	"github.com/calib-dev/calib/recal"
	"github.com/calib-dev/calib/smooth"
)

// The figures of a prediction set, as Build makes them (and `calib plot`
// draws them one at a time). Each reads the figure options, Seed and
// Workers of o.

// className names class c for captions and titles.
func className(c int, names []string) string {
	if c < len(names) {
		return fmt.Sprintf("class %d (%s)", c, names[c])
	}
	return fmt.Sprintf("class %d", c)
}

// ReliabilityOf returns the reliability diagram of s's top-label
// confidence (class < 0) or of class's probability p_class (one-vs-rest),
// with the bins of o (FigureOptions.Bins) and its 95 % bootstrap bands
// from 200 resamples. A class >= K is an error wrapping ErrOptions.
func ReliabilityOf(ctx context.Context, s *data.Set, class int, o Options) (*Reliability, error) {
	sc, oc, title, label, err := diagramScores(s, class, o)
	if err != nil {
		return nil, err
	}
	return NewReliability(ctx, sc, oc, s.Weights, ReliabilityOptions{Bins: o.figureBins(), Seed: o.seed(), Workers: o.Workers, Title: title, ScoreLabel: label})
}

// diagramScores returns the scores and outcomes of a diagram of s, with
// its title and score label: the top-label confidence (class < 0) or
// class's probability p_class against [label = class]. A class >= K is an
// error wrapping ErrOptions.
func diagramScores(s *data.Set, class int, o Options) (sc, oc []float64, title, label string, err error) {
	if class < 0 {
		sc, oc = metric.TopR(s.Probs, s.Labels, s.K, 1)
		return sc, oc, "Top-label", "", nil
	}
	if class >= s.K {
		return nil, nil, "", "", optionsError("class %d: %s has K = %d, so classes are 0..%d", class, s.File, s.K, s.K-1)
	}
	sc, oc = metric.ClassColumn(s.Probs, s.Labels, s.K, class)
	return sc, oc, className(class, o.Figures.Names), fmt.Sprintf("p_%d", class), nil
}

// SmoothReliabilityOf returns the smooth reliability diagram (relplot's)
// of s's top-label confidence (class < 0) or of class's probability
// p_class (one-vs-rest), at the bandwidth sigma* of the smooth ECE, with
// its 95 % bootstrap band from 200 resamples. A class >= K is an error
// wrapping ErrOptions.
func SmoothReliabilityOf(ctx context.Context, s *data.Set, class int, o Options) (*SmoothReliability, error) {
	sc, oc, title, label, err := diagramScores(s, class, o)
	if err != nil {
		return nil, err
	}
	return NewSmoothReliability(ctx, sc, oc, s.Weights, SmoothReliabilityOptions{Curve: smooth.CurveOptions{Seed: o.seed(), Workers: o.Workers}, Title: title + ", smooth", ScoreLabel: label})
}

// KSGraphsOf returns the top-1 KS calibration graphs of s and, with val
// (may be nil), of s after the top-1 spline map fitted on val.
func KSGraphsOf(s, val *data.Set) (*KSGraphs, error) {
	sc, oc := metric.TopR(s.Probs, s.Labels, s.K, 1)
	g, err := NewKSGraph("as given", sc, oc, s.Weights)
	if err != nil {
		return nil, err
	}
	f := &KSGraphs{Title: "top-1", Graphs: []*KSGraph{g}}
	if val == nil {
		return f, nil
	}
	sp, err := recal.FitSpline(val.Probs, val.Labels, val.K, val.Weights, recal.SplineOptions{})
	if err != nil {
		return f, fmt.Errorf("after recalibration: %w", err)
	}
	after := make([]float64, len(sc))
	for i, v := range sc {
		after[i] = sp.Top1.Map(v)
	}
	// The base name of the validation file keeps the panel title short.
	ga, err := NewKSGraph("after spline recalibration (fitted on "+filepath.Base(val.File)+")", after, oc, s.Weights)
	if err != nil {
		return f, fmt.Errorf("after recalibration: %w", err)
	}
	f.Graphs = append(f.Graphs, ga)
	return f, nil
}

// SimplexOf returns the simplex view of s (K >= 3; fewer classes are an
// error wrapping ErrOptions) for the classes of o (FigureOptions.Classes,
// or the pair the model confuses most).
func SimplexOf(ctx context.Context, s *data.Set, o Options) (*Simplex, error) {
	if s.K < 3 {
		return nil, optionsError("the simplex view needs K >= 3 classes, %s has %d", s.File, s.K)
	}
	if err := o.Figures.validate(); err != nil {
		return nil, err
	}
	if err := o.Figures.checkK(s); err != nil {
		return nil, err
	}
	cls := MostConfused(s.Probs, s.Labels, s.K)
	if c := o.Figures.Classes; c != nil {
		cls = [2]int{c[0], c[1]}
	}
	return NewSimplex(ctx, s.Probs, s.Labels, s.K, s.Weights, SimplexOptions{Classes: cls, Names: o.Figures.Names, Seed: o.seed(), Workers: o.Workers})
}

// MostConfused returns the pair of classes a < b most often confused: the
// most samples predicted as one (arg max) and labelled the other, both
// ways counted; ties go to the smallest pair, and with no confusion at all
// it is {0, 1}. probs is n×k, k >= 2.
func MostConfused(probs []float64, labels []int, k int) [2]int {
	conf := make([]int, k*k)
	for i, y := range labels {
		row := probs[i*k : (i+1)*k]
		am := 0
		for m, v := range row {
			if v > row[am] {
				am = m
			}
		}
		if am != y {
			conf[min(am, y)*k+max(am, y)]++
		}
	}
	best := [2]int{0, 1}
	for a := 0; a < k; a++ {
		for b := a + 1; b < k; b++ {
			if conf[a*k+b] > conf[best[0]*k+best[1]] {
				best = [2]int{a, b}
			}
		}
	}
	return best
}

// BandwidthViewOf returns the bandwidth view of notion on s: its LOO
// bandwidth selection and the estimate against the bandwidth.
func BandwidthViewOf(ctx context.Context, s *data.Set, notion kde.Notion, o Options) (*BandwidthView, error) {
	return bandwidthView(ctx, s, notion, nil, nil, o.Workers)
}

// bandwidthView returns the bandwidth view of notion on s, sharing the
// selection through curves (may be nil) and the estimate at the selected
// bandwidth with ev, an evaluation of s (may be nil).
func bandwidthView(ctx context.Context, s *data.Set, notion kde.Notion, curves bandwidth.Cache, ev *evaluate.Evaluation, workers int) (*BandwidthView, error) {
	cv, err := curves.Curve(ctx, notion, s, kde.BandwidthOptions{Workers: workers})
	if err != nil {
		return nil, err
	}
	return newBandwidthView(ctx, notion, s.Probs, s.Labels, s.K, s.Weights, BandwidthViewOptions{Workers: workers, Selection: cv}, evaluatedCE1(ev, notion, cv.Bandwidth))
}

// evaluatedCE1 returns the plug-in ece_kde of notion with p = 1 at the
// bandwidth h from ev (nil when ev has none): kde.Estimate on the same set
// at the same h, whose p = 1 value does not depend on the other exponents
// asked for, the terms kept or the neighbour count (the first-power kernel
// sums are the same sums), so it is the bandwidth view's estimate at h bit
// for bit.
func evaluatedCE1(ev *evaluate.Evaluation, notion kde.Notion, h float64) *float64 {
	if ev == nil {
		return nil
	}
	e := ev.Lookup(evaluate.Key{Metric: evaluate.ECEKDE, Notion: notion, P: 1})
	if e == nil || e.Error != "" || e.Value == nil ||
		(e.Aggregate != "" && e.Aggregate != "sum") || // the view sums a marginal notion's classes
		e.Bandwidth == nil || *e.Bandwidth != h {
		return nil
	}
	v := float64(*e.Value)
	return &v
}
