package report

import (
	"fmt"
	"image/color"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/internal/mathx"
	"github.com/calib-dev/calib/metric"
	"github.com/calib-dev/calib/recal"
)

// KSGraph holds the calibration graphs of one set of scores (Gupta et al.,
// ICLR 2021, Fig. 1), with the samples sorted by score: the fractile
// x_i = i/(N-1), the cumulative score and outcome (1/N) sum_{m<=i}, the
// score, and the spline estimate of P(outcome | score) = score_i + y'(x_i)
// (their section 4 on these same samples).
type KSGraph struct {
	Label       string // e.g. "before" or "after spline recalibration"
	KS          float64
	Fractile    []float64
	CumScore    []float64
	CumOutcome  []float64
	Score       []float64
	Probability []float64
}

// NewKSGraph computes the graphs of scores and 0/1 outcomes with sample
// weights (nil: all 1; rows of weight 0 are left out, and the fractile of
// a sample is its cumulative weight's, as the spline fit places it); the
// spline has recal.DefaultKnots knots.
func NewKSGraph(label string, scores, outcomes, weights []float64) (*KSGraph, error) {
	if weights != nil {
		if err := mathx.CheckWeights(weights, len(scores)); err != nil || len(scores) != len(outcomes) {
			return nil, fmt.Errorf("report: KS graphs: %d scores, %d outcomes: %v", len(scores), len(outcomes), err)
		}
		var s, o, w []float64
		for i, v := range weights {
			if v > 0 {
				s, o, w = append(s, scores[i]), append(o, outcomes[i]), append(w, v)
			}
		}
		scores, outcomes, weights = s, o, w
	}
	n := len(scores)
	if n != len(outcomes) {
		return nil, fmt.Errorf("report: KS graphs: %d scores and %d outcomes", n, len(outcomes))
	}
	if n < 3 {
		return nil, fmt.Errorf("report: KS graphs: %w: %d samples, need at least 3", data.ErrTooFew, n)
	}
	ks, curve := metric.KS(scores, outcomes, true, weights)
	sp, err := recal.FitSplineCurve(scores, outcomes, weights, recal.SplineOptions{})
	if err != nil {
		return nil, fmt.Errorf("report: KS graphs: %w", err)
	}
	g := &KSGraph{Label: label, KS: ks, CumScore: curve.Pred, CumOutcome: curve.Obs, Score: curve.Score,
		Probability: sp.Calibrated, Fractile: make([]float64, n)}
	for i := range g.Fractile {
		g.Fractile[i] = float64(i) / float64(n-1)
	}
	if sp.Fractiles != nil {
		copy(g.Fractile, sp.Fractiles)
	}
	return g, nil
}

// KSGraphs is the figure of one or more KSGraph (one row of four panels
// each: (a) cumulative score and outcome against the fractile, (b) the same
// against the cumulative score, so that the score is the diagonal, (c) the
// score and the estimated probability against the fractile, (d) the
// probability against the score).
type KSGraphs struct {
	Title  string // e.g. "top-1"
	Graphs []*KSGraph
}

// Size is 12 inches wide and 3.6 inches per row.
func (f *KSGraphs) Size() (vg.Length, vg.Length) {
	return 12 * vg.Inch, vg.Length(len(f.Graphs))*3.6*vg.Inch + 0.1*vg.Inch
}

// thin returns at most 600 evenly spaced points of (x, y), keeping the last.
func thin(x, y []float64) plotter.XYs {
	n := len(x)
	step := max(1, n/600)
	var xy plotter.XYs
	for i := 0; i < n; i += step {
		xy = append(xy, plotter.XY{X: x[i], Y: y[i]})
	}
	if (n-1)%step != 0 {
		xy = append(xy, plotter.XY{X: x[n-1], Y: y[n-1]})
	}
	return xy
}

// Draw draws the panels.
func (f *KSGraphs) Draw(c draw.Canvas) { f.draw(c) }

// draw draws the panels and returns their layout.
func (f *KSGraphs) draw(c draw.Canvas) figureLayout {
	return (&scene{panels: f.panels()}).draw(c)
}

// parts returns the panels as separate parts, four per row.
func (f *KSGraphs) parts() (int, []*part) {
	return (&scene{panels: f.panels()}).parts(f.Size())
}

// panels returns the rows of panels, one per graph.
func (f *KSGraphs) panels() [][]*panel {
	var rows [][]*panel
	for _, g := range f.Graphs {
		rows = append(rows, g.panels(f.Title))
	}
	return rows
}

// panels returns the four panels of one graph; the first one's title
// names the graph (it wraps when long).
func (g *KSGraph) panels(title string) []*panel {
	line := func(pn *panel, name string, xy plotter.XYs, col color.Color, dashed bool) {
		l, _ := plotter.NewLine(xy)
		l.LineStyle.Color = col
		l.LineStyle.Width = vg.Points(1.5)
		if dashed {
			l.LineStyle.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		}
		pn.plot.Add(l)
		if name != "" {
			pn.add(name, l)
		}
	}
	head := fmt.Sprintf("%s %s, KS %.2f%%", title, g.Label, 100*g.KS)
	a := &panel{plot: NewPlot("fractile", "cumulative"), title: "(a) " + head}
	line(a, "score", thin(g.Fractile, g.CumScore), colBlue, false)
	line(a, "outcome", thin(g.Fractile, g.CumOutcome), colOrange, false)

	b := &panel{plot: NewPlot("cumulative score", "cumulative"), title: "(b) warped axis"}
	line(b, "score", thin(g.CumScore, g.CumScore), colBlue, false)
	line(b, "outcome", thin(g.CumScore, g.CumOutcome), colOrange, false)

	cp := &panel{plot: NewPlot("fractile", "value"), title: "(c) score and probability"}
	line(cp, "score", thin(g.Fractile, g.Score), colBlue, false)
	line(cp, "P(outcome | score), spline", thin(g.Fractile, g.Probability), colOrange, false)

	d := &panel{plot: NewPlot("score", "P(outcome | score)"), title: "(d) probability against score"}
	line(d, "diagonal", plotter.XYs{{X: g.Score[0], Y: g.Score[0]}, {X: g.Score[len(g.Score)-1], Y: g.Score[len(g.Score)-1]}}, colGrey, true)
	line(d, "spline estimate", thin(g.Score, g.Probability), colOrange, false)
	return []*panel{a, b, cp, d}
}
