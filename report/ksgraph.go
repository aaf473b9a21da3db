package report

import (
	"fmt"
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

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

// NewKSGraph computes the graphs of scores and 0/1 outcomes; the spline
// has recal.DefaultKnots knots.
func NewKSGraph(label string, scores, outcomes []float64) (*KSGraph, error) {
	n := len(scores)
	if n < 3 || n != len(outcomes) {
		return nil, fmt.Errorf("report: KS graphs: %d scores and %d outcomes, need at least 3", n, len(outcomes))
	}
	ks, curve := metric.KS(scores, outcomes, true)
	sp, err := recal.FitSplineCurve(scores, outcomes, recal.SplineOptions{})
	if err != nil {
		return nil, fmt.Errorf("report: KS graphs: %w", err)
	}
	g := &KSGraph{Label: label, KS: ks, CumScore: curve.Pred, CumOutcome: curve.Obs, Score: curve.Score,
		Probability: sp.Calibrated, Fractile: make([]float64, n)}
	for i := range g.Fractile {
		g.Fractile[i] = float64(i) / float64(n-1)
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

// Size is 12 inches wide and 3.2 inches per row.
func (f *KSGraphs) Size() (vg.Length, vg.Length) {
	return 12 * vg.Inch, vg.Length(len(f.Graphs))*3.2*vg.Inch + 0.1*vg.Inch
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
func (f *KSGraphs) Draw(c draw.Canvas) {
	var rows [][]*plot.Plot
	for _, g := range f.Graphs {
		rows = append(rows, g.panels(f.Title))
	}
	grid(c, rows)
}

// panels returns the four plots of one graph.
func (g *KSGraph) panels(title string) []*plot.Plot {
	line := func(p *plot.Plot, name string, xy plotter.XYs, col color.Color, dashed bool) {
		l, _ := plotter.NewLine(xy)
		l.LineStyle.Color = col
		l.LineStyle.Width = vg.Points(1.5)
		if dashed {
			l.LineStyle.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		}
		p.Add(l)
		if name != "" {
			p.Legend.Add(name, l)
		}
	}
	head := fmt.Sprintf("%s %s, KS %.2f%%", title, g.Label, 100*g.KS)
	a := newPlot("(a) "+head, "fractile", "cumulative")
	line(a, "score", thin(g.Fractile, g.CumScore), colBlue, false)
	line(a, "outcome", thin(g.Fractile, g.CumOutcome), colOrange, false)

	b := newPlot("(b) warped axis", "cumulative score", "cumulative")
	line(b, "score", thin(g.CumScore, g.CumScore), colBlue, false)
	line(b, "outcome", thin(g.CumScore, g.CumOutcome), colOrange, false)

	cp := newPlot("(c) score and probability", "fractile", "value")
	cp.Legend.Top, cp.Legend.Left = false, false
	line(cp, "score", thin(g.Fractile, g.Score), colBlue, false)
	line(cp, "P(outcome | score), spline", thin(g.Fractile, g.Probability), colOrange, false)

	d := newPlot("(d) probability against score", "score", "P(outcome | score)")
	line(d, "", plotter.XYs{{X: g.Score[0], Y: g.Score[0]}, {X: g.Score[len(g.Score)-1], Y: g.Score[len(g.Score)-1]}}, colGrey, true)
	line(d, "spline estimate", thin(g.Score, g.Probability), colOrange, false)
	for _, p := range []*plot.Plot{a, b, cp, d} {
		p.Title.TextStyle.Font.Size = vg.Points(10)
		p.Legend.TextStyle.Font.Size = vg.Points(8)
	}
	return []*plot.Plot{a, b, cp, d}
}
