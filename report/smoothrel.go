package report

import (
	"context"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/calib-dev/calib/smooth"
)

// SmoothReliabilityOptions configures NewSmoothReliability. The zero
// value is relplot's diagram: the bandwidth sigma* of the smooth ECE, 200
// points, a 95 % bootstrap band from 200 resamples (seed 0).
type SmoothReliabilityOptions struct {
	// Curve configures the curve and its band (smooth.NewCurve).
	Curve smooth.CurveOptions
	// Title and ScoreLabel name the figure and its horizontal axis
	// ("confidence" when empty).
	Title, ScoreLabel string
	// Compact draws a smaller figure for small multiples (per class).
	Compact bool
}

// SmoothReliability is the smooth reliability diagram of Błasiok and
// Nakkiran (relplot's rel_diagram): the kernel regression E[y | f = t]
// with the reflected Gaussian of the smooth ECE at its bandwidth sigma*,
// drawn wider where the scores are denser, its bootstrap band, and the
// density of the scores in a strip below (smooth.Curve defines every
// number).
type SmoothReliability struct {
	Title, ScoreLabel string
	N                 int
	Curve             *smooth.Curve
	Compact           bool // drawn at 3.6 × 4.8 inches
}

// NewSmoothReliability computes the smooth reliability diagram of the
// scores against the outcomes (in [0, 1]) with the sample weights (nil:
// all 1).
func NewSmoothReliability(ctx context.Context, scores, outcomes, weights []float64, o SmoothReliabilityOptions) (*SmoothReliability, error) {
	if len(scores) != len(outcomes) {
		return nil, fmt.Errorf("report: %d scores and %d outcomes", len(scores), len(outcomes))
	}
	c, err := smooth.NewCurve(ctx, scores, outcomes, weights, o.Curve)
	if err != nil {
		return nil, fmt.Errorf("report: smooth reliability diagram: %w", err)
	}
	r := &SmoothReliability{Title: o.Title, ScoreLabel: o.ScoreLabel, N: len(scores), Curve: c, Compact: o.Compact}
	if r.ScoreLabel == "" {
		r.ScoreLabel = "confidence"
	}
	return r, nil
}

// Size is 5 × 6 inches, or 3.6 × 4.8 when Compact.
func (r *SmoothReliability) Size() (vg.Length, vg.Length) { return diagramSize(r.Compact) }

// Draw draws the diagram: the heading (title and legend), the curve with
// its band, and the density strip below on the same horizontal scale.
func (r *SmoothReliability) Draw(c draw.Canvas) { r.draw(c) }

func (r *SmoothReliability) draw(c draw.Canvas) figureLayout {
	cv := r.Curve
	return drawWithStrip(c, r.panel(), r.Compact, fmt.Sprintf("density of the scores (n = %d)", r.N), func(sc draw.Canvas, xOf func(float64) vg.Length, y0, y1 vg.Length) {
		top := slices.Max(cv.Density)
		if !(top > 0) {
			return
		}
		poly := []vg.Point{{X: xOf(0), Y: y0}}
		for k, t := range cv.T {
			poly = append(poly, vg.Point{X: xOf(t), Y: y0 + vg.Length(cv.Density[k]/top)*(y1-y0)})
		}
		sc.FillPolygon(colGrey, append(poly, vg.Point{X: xOf(1), Y: y0}))
	})
}

// panel returns the curve's plot with its title and legend.
func (r *SmoothReliability) panel() *panel {
	cv := r.Curve
	pn, name := diagramPanel(r.Title, "Smooth reliability diagram", fmt.Sprintf("(smECE %.2f%%)", 100*cv.Value), r.ScoreLabel, "E[outcome | score]", r.Compact)
	p := pn.plot
	if cv.Lo != nil {
		var poly plotter.XYs
		for k, t := range cv.T {
			poly = append(poly, plotter.XY{X: t, Y: clamp01(cv.Lo[k])})
		}
		for k := len(cv.T) - 1; k >= 0; k-- {
			poly = append(poly, plotter.XY{X: cv.T[k], Y: clamp01(cv.Hi[k])})
		}
		pb, _ := plotter.NewPolygon(poly)
		pb.Color = colorAlpha(colGrey, 70)
		pb.LineStyle.Width = 0
		p.Add(pb)
		pn.add(fmt.Sprintf(name("%.0f%% bootstrap band (sigma fixed)", "%.0f%% band"), 100*cv.Level), pb)
	}
	addDiagonal(pn, name)
	// The curve, one segment per mesh interval, wider where the density
	// is higher (relplot draws dots sized by it).
	top := slices.Max(cv.Density)
	var first *plotter.Line
	for k := 0; k+1 < len(cv.T); k++ {
		seg, _ := plotter.NewLine(plotter.XYs{{X: cv.T[k], Y: clamp01(cv.Mean[k])}, {X: cv.T[k+1], Y: clamp01(cv.Mean[k+1])}})
		d := 0.0
		if top > 0 {
			d = (cv.Density[k] + cv.Density[k+1]) / (2 * top)
		}
		seg.LineStyle.Color = colRed
		seg.LineStyle.Width = vg.Points(0.6 + 3.4*math.Sqrt(d))
		p.Add(seg)
		if first == nil {
			first = seg
		}
	}
	if first != nil {
		legend := *first
		legend.LineStyle.Width = vg.Points(2)
		pn.add(fmt.Sprintf(name("smoothed E[y | f] (sigma = %.3g; wider: denser)", "smoothed (sigma %.3g)"), cv.Sigma), &legend)
	}
	return pn
}

// clamp01 clips a value to [0, 1] for drawing.
func clamp01(v float64) float64 { return min(max(v, 0), 1) }
