package report

import (
	"context"
	"fmt"
	"math"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/calib-dev/calib/internal/mathx"
	"github.com/calib-dev/calib/kde"
)

// BandwidthViewOptions configures NewBandwidthView. The zero value draws
// CE_1 at 12 bandwidths.
type BandwidthViewOptions struct {
	P       float64 // exponent of the estimate; 0 means 1
	Points  int     // bandwidths of the estimate curve; 0 means 12
	Workers int
	// Selection, if not nil, is the bandwidth selection of the same
	// notion and data, already made (kde.SelectBandwidth).
	Selection *kde.Curve
}

// BandwidthView shows how the bandwidth h shapes ECE^KDE (ECE^KDE paper,
// section 4 and Fig. 3): the leave-one-out log-likelihood over the grid
// with the chosen h, and the estimate CE_p^p as a function of h (small h
// undersmooths: E[y|f] follows single labels and the estimate grows; large h
// oversmooths towards the global label frequencies).
type BandwidthView struct {
	Notion    kde.Notion
	P         float64
	Selection *kde.Curve
	H         []float64 // bandwidths of the estimate curve, increasing
	Estimate  []float64 // CE_p^p at each H (NaN where it failed)
	Chosen    float64   // CE_p^p at the selected bandwidth
}

// NewBandwidthView selects the bandwidth of notion (LOO, kde.SelectBandwidth)
// and computes the estimate on a log-spaced set of bandwidths spanning the
// selection grid (kde.EstimateCurve).
//
// With weights (nil: all 1) the selection and the estimates are weighted.
func NewBandwidthView(ctx context.Context, notion kde.Notion, probs []float64, labels []int, k int, weights []float64, o BandwidthViewOptions) (*BandwidthView, error) {
	return newBandwidthView(ctx, notion, probs, labels, k, weights, o, nil)
}

// newBandwidthView is NewBandwidthView; chosen, if not nil, is the
// estimate CE_p^p at the selected bandwidth, already computed on the same
// data (the report's evaluation: the same kde.Estimate, bit for bit), so
// that it is not computed again.
func newBandwidthView(ctx context.Context, notion kde.Notion, probs []float64, labels []int, k int, weights []float64, o BandwidthViewOptions, chosen *float64) (*BandwidthView, error) {
	p := o.P
	if p == 0 {
		p = 1
	}
	m := o.Points
	if m == 0 {
		m = 12
	}
	if m < 2 {
		return nil, fmt.Errorf("report: bandwidth view: %d points, need at least 2", m)
	}
	cv := o.Selection
	if cv == nil {
		var err error
		if cv, err = kde.SelectBandwidth(ctx, notion, probs, labels, k, weights, kde.BandwidthOptions{Workers: o.Workers}); err != nil {
			return nil, fmt.Errorf("report: bandwidth view: %w", err)
		}
	}
	v := &BandwidthView{Notion: notion, P: p, Selection: cv}
	v.H = mathx.LogSpace(cv.Grid[0], cv.Grid[len(cv.Grid)-1], m)
	ko := kde.Options{P: []float64{p}, Workers: o.Workers}
	var err error
	if v.Estimate, err = kde.EstimateCurve(ctx, notion, probs, labels, k, v.H, weights, ko); err != nil {
		return nil, fmt.Errorf("report: bandwidth view: %w", err)
	}
	if chosen != nil {
		v.Chosen = *chosen
		return v, nil
	}
	at, err := kde.EstimateCurve(ctx, notion, probs, labels, k, []float64{cv.Bandwidth}, weights, ko)
	if err != nil {
		return nil, fmt.Errorf("report: bandwidth view: %w", err)
	}
	v.Chosen = at[0]
	return v, nil
}

// Size is 10 × 4.2 inches.
func (v *BandwidthView) Size() (vg.Length, vg.Length) { return 10 * vg.Inch, 4.2 * vg.Inch }

// Edge returns -1 when the selected bandwidth is the smallest of the
// selection grid, +1 when it is the largest, and 0 otherwise.
func (v *BandwidthView) Edge() int {
	g := v.Selection.Grid
	switch {
	case len(g) == 0:
		return 0
	case v.Selection.Bandwidth <= g[0]:
		return -1
	case v.Selection.Bandwidth >= g[len(g)-1]:
		return 1
	}
	return 0
}

// Warning returns a sentence for the caption when the selected bandwidth
// is at an end of the selection grid, and "" otherwise.
func (v *BandwidthView) Warning() string {
	g := v.Selection.Grid
	switch v.Edge() {
	case 1:
		return fmt.Sprintf("Warning: the chosen h = %.3g is the largest of the grid (%.3g to %.3g): the likelihood still rises at the end of the grid, so the estimate may be over-smoothed.", v.Selection.Bandwidth, g[0], g[len(g)-1])
	case -1:
		return fmt.Sprintf("Warning: the chosen h = %.3g is the smallest of the grid (%.3g to %.3g): the likelihood still rises at the end of the grid, so the estimate follows single labels and is not meaningful at this n.", v.Selection.Bandwidth, g[0], g[len(g)-1])
	}
	return ""
}

// Draw draws the two panels side by side, h on a log axis.
func (v *BandwidthView) Draw(c draw.Canvas) { v.draw(c) }

// draw draws the panels and returns their layout.
func (v *BandwidthView) draw(c draw.Canvas) figureLayout {
	return (&scene{panels: v.panels()}).draw(c)
}

// parts returns the two panels as separate parts.
func (v *BandwidthView) parts() (int, []*part) {
	return (&scene{panels: v.panels()}).parts(v.Size())
}

// panels returns the two panels.
func (v *BandwidthView) panels() [][]*panel {
	cv := v.Selection
	left := &panel{plot: NewPlot("bandwidth h", "log-likelihood"), title: fmt.Sprintf("LOO log-likelihood, %s (chosen h = %.3g)", v.Notion, cv.Bandwidth)}
	var ll plotter.XYs
	for i, h := range cv.Grid {
		if mathx.Finite(cv.GridLL[i]) {
			ll = append(ll, plotter.XY{X: h, Y: cv.GridLL[i]})
		}
	}
	// Very small h give log-likelihoods orders of magnitude below the
	// optimum; the axis shows four times the drop from the optimum to the
	// largest h.
	yMin := math.Inf(-1)
	if n := len(ll); n > 1 {
		drop := cv.LogLik - ll[n-1].Y
		if lo := cv.LogLik - 4*math.Abs(drop); drop != 0 && ll[0].Y < lo {
			yMin = lo
			left.title += "; lower values off scale"
		}
	}
	form := fmt.Sprintf("CE_%g^%g", v.P, v.P)
	if v.P == 1 {
		form = "CE_1"
	}
	right := &panel{plot: NewPlot("bandwidth h", "estimate"), title: fmt.Sprintf("ECE^KDE (%s) against h", form)}
	var es plotter.XYs
	for i, h := range v.H {
		if mathx.Finite(v.Estimate[i]) {
			es = append(es, plotter.XY{X: h, Y: v.Estimate[i]})
		}
	}
	for _, pc := range []struct {
		pn  *panel
		xy  plotter.XYs
		at  float64
		lab string
	}{{left, ll, cv.LogLik, "grid"}, {right, es, v.Chosen, "estimate"}} {
		p := pc.pn.plot
		LogAxis(&p.X)
		if len(pc.xy) > 0 {
			l, s, _ := plotter.NewLinePoints(pc.xy)
			l.LineStyle.Color, s.GlyphStyle.Color = colBlue, colBlue
			p.Add(l, s)
			pc.pn.add(pc.lab, l, s)
		}
		if mathx.Finite(pc.at) {
			ch, _ := plotter.NewScatter(plotter.XYs{{X: cv.Bandwidth, Y: pc.at}})
			ch.GlyphStyle.Color = colRed
			ch.GlyphStyle.Radius = vg.Points(4)
			p.Add(ch)
			pc.pn.add("chosen h", ch)
		}
	}
	if !math.IsInf(yMin, -1) {
		left.plot.Y.Min = yMin // after Add, which widens the range to the data
	}
	return [][]*panel{{left, right}}
}
