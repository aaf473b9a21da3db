package report

import (
	"context"
	"fmt"
	"image/color"
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/internal/mathx"
	"github.com/calib-dev/calib/kde"
	"github.com/calib-dev/calib/metric"
)

// ReliabilityOptions configures NewReliability. The zero value draws 15
// equal-width bins, a 95 % bootstrap band from 200 resamples (seed 0) and
// the kernel curve at the LOO bandwidth.
type ReliabilityOptions struct {
	Bins metric.BinOptions
	// Resamples is the number of bootstrap resamples of the band; 0 means
	// 200, a negative number draws no band.
	Resamples int
	Level     float64 // of the band; 0 means 0.95
	Seed      uint64  // resample b draws from PCG(Seed, b)
	// Bandwidth of the Beta-kernel curve; 0 selects it by cross-validation
	// (kde.ScoreRegressionBandwidth).
	Bandwidth float64
	Workers   int
	// Title and ScoreLabel name the figure and its horizontal axis
	// ("confidence" when empty).
	Title, ScoreLabel string
	// Compact draws a smaller figure for small multiples (per class).
	Compact bool
}

// ReliabilityBin is one bin of a reliability diagram.
type ReliabilityBin struct {
	Lo, Hi float64
	Count  int
	Score  float64 // mean score (confidence) in the bin
	Freq   float64 // mean outcome (accuracy) in the bin
	// BandLo and BandHi bound the bin's accuracy over bootstrap resamples
	// (the bin edges held fixed); NaN without a band or for empty bins.
	BandLo, BandHi float64
}

// Reliability is a reliability diagram of scores against 0/1 outcomes: the
// binned accuracy with its gap to the mean score, a bootstrap band, the
// smooth Beta-kernel estimate r(c) = E[outcome | score = c] (ECE^KDE paper
// eq. 3 and 8, evaluated at c rather than at the samples), and a strip of
// bin counts.
type Reliability struct {
	Title, ScoreLabel string
	N                 int
	Bins              []ReliabilityBin
	ECE               float64 // binned L1 ECE of Bins
	Level             float64 // of the band; 0 without one
	// CurveX and CurveY sample the kernel curve on [min score, max score].
	CurveX, CurveY []float64
	// CurveLo and CurveHi bound the curve at BandX (every other point of
	// CurveX) over the bootstrap resamples of the bins' band (the same
	// resamples, the bandwidth held fixed); nil without a band, NaN where
	// most resamples left no kernel mass.
	BandX, CurveLo, CurveHi []float64
	Bandwidth               float64
	// BandwidthEdge is -1 when the bandwidth, chosen by cross-validation,
	// is the smallest of kde.RegressionGrid, +1 when it is the largest, and 0
	// otherwise (or when it was given).
	BandwidthEdge int
	Compact       bool // drawn at 3.6 × 4.8 inches
}

// NewReliability computes a reliability diagram. Outcomes must be 0 or 1;
// at least 2 samples are needed.
//
// With weights (nil: all 1) the bins, the curve, its bandwidth and both
// bands are weighted (a resample carries the weights of its rows).
func NewReliability(ctx context.Context, scores, outcomes, weights []float64, o ReliabilityOptions) (*Reliability, error) {
	n := len(scores)
	if n != len(outcomes) {
		return nil, fmt.Errorf("report: %d scores and %d outcomes", n, len(outcomes))
	}
	if n < 2 {
		return nil, fmt.Errorf("report: reliability diagram: %w: %d samples, need at least 2", data.ErrTooFew, n)
	}
	ints := make([]int, n)
	for i, v := range outcomes {
		if v != 0 && v != 1 {
			return nil, fmt.Errorf("report: outcome %d is %v, not 0 or 1", i, v)
		}
		ints[i] = int(v)
	}
	a, err := metric.AssignBins(scores, weights, o.Bins)
	if err != nil {
		return nil, fmt.Errorf("report: reliability bins: %w", err)
	}
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	bs := a.Summarize(scores, outcomes, all, weights)
	r := &Reliability{Title: o.Title, ScoreLabel: o.ScoreLabel, N: n, ECE: bs.ECE(1), Compact: o.Compact}
	if r.ScoreLabel == "" {
		r.ScoreLabel = "confidence"
	}
	for b := range bs.Count {
		r.Bins = append(r.Bins, ReliabilityBin{Lo: bs.Edges[b], Hi: bs.Edges[b+1], Count: bs.Count[b],
			Score: bs.Score[b], Freq: bs.Freq[b], BandLo: math.NaN(), BandHi: math.NaN()})
	}
	// The kernel curve.
	h := o.Bandwidth
	if h == 0 {
		if h, err = kde.ScoreRegressionBandwidth(ctx, scores, ints, weights, o.Seed, o.Workers); err != nil {
			return nil, err
		}
		r.BandwidthEdge = kde.GridEdge(kde.RegressionGrid(), h)
	}
	lo, hi := slices.Min(scores), slices.Max(scores)
	if weights != nil { // the range of the samples that count
		lo, hi = math.Inf(1), math.Inf(-1)
		for i, v := range scores {
			if weights[i] > 0 {
				lo, hi = min(lo, v), max(hi, v)
			}
		}
	}
	const points = 101
	for i := 0; i < points; i++ {
		r.CurveX = append(r.CurveX, lo+(hi-lo)*float64(i)/(points-1))
	}
	r.CurveY, _, err = kde.ScoreRegression(ctx, r.CurveX, scores, ints, weights, kde.Options{Bandwidth: h, Workers: o.Workers})
	if err != nil {
		return nil, fmt.Errorf("report: reliability curve: %w", err)
	}
	r.Bandwidth = h
	if o.Resamples < 0 {
		return r, nil
	}
	// The bands: the bins' and the curve's over the same resamples
	// (resample b draws from PCG(Seed, b) in both).
	_, r.Level = mathx.ResampleDefaults(0, o.Level)
	binLo, binHi, err := a.FreqIntervals(ctx, scores, outcomes, weights, metric.BootstrapOptions{Resamples: o.Resamples, Level: r.Level, Seed: o.Seed, Workers: o.Workers})
	if err != nil {
		return nil, fmt.Errorf("report: reliability band: %w", err)
	}
	for j := range r.Bins {
		r.Bins[j].BandLo, r.Bins[j].BandHi = binLo[j], binHi[j]
	}
	for i := 0; i < points; i += 2 {
		r.BandX = append(r.BandX, r.CurveX[i])
	}
	r.CurveLo, r.CurveHi, err = kde.ScoreRegressionBand(ctx, r.BandX, scores, ints, weights, kde.BandOptions{Bandwidth: h, Resamples: o.Resamples, Level: r.Level, Seed: o.Seed, Workers: o.Workers})
	if err != nil {
		return nil, fmt.Errorf("report: reliability curve band: %w", err)
	}
	return r, nil
}

// edgeWarning is the caption warning of a bandwidth chosen at an end of
// kde.RegressionGrid (edge as kde.GridEdge), or "".
func edgeWarning(what string, h float64, edge int) string {
	g := kde.RegressionGrid()
	switch edge {
	case 1:
		return fmt.Sprintf("Warning: the bandwidth of %s, h = %.3g, is the largest of its cross-validation range (%.3g to %.3g): the data did not pin it down, and the curve may smooth away real features. Where it disagrees with the bars, trust neither without the band and the counts.", what, h, g[0], g[len(g)-1])
	case -1:
		return fmt.Sprintf("Warning: the bandwidth of %s, h = %.3g, is the smallest of its cross-validation range (%.3g to %.3g): the data did not pin it down, and the curve may follow single samples. Where it wiggles, trust neither it nor the bars without the band and the counts.", what, h, g[0], g[len(g)-1])
	}
	return ""
}

// BandwidthWarning returns a sentence for the caption when the kernel
// curve's bandwidth, chosen by cross-validation, is at an end of its range
// (BandwidthEdge), and "" otherwise.
func (r *Reliability) BandwidthWarning() string {
	return edgeWarning("the kernel curve", r.Bandwidth, r.BandwidthEdge)
}

// Size is 5 × 6 inches, or 3.6 × 4.8 when Compact.
func (r *Reliability) Size() (vg.Length, vg.Length) { return diagramSize(r.Compact) }

// diagramSize is the size of a reliability diagram: 5 × 6 inches, or
// 3.6 × 4.8 for small multiples.
func diagramSize(compact bool) (vg.Length, vg.Length) {
	if compact {
		return 3.6 * vg.Inch, 4.8 * vg.Inch
	}
	return 5 * vg.Inch, 6 * vg.Inch
}

// Draw draws the diagram: the heading (title and legend), the reliability
// plot, and the count strip below on the same horizontal scale.
func (r *Reliability) Draw(c draw.Canvas) { r.draw(c) }

// draw draws the diagram and returns its layout.
func (r *Reliability) draw(c draw.Canvas) figureLayout {
	maxc := r.maxCount()
	// Count strip: bars of the bin counts under the plot's data area.
	label := fmt.Sprintf("samples per bin (largest %d of %d)", maxc, r.N)
	return drawWithStrip(c, r.panel(), r.Compact, label, func(sc draw.Canvas, xOf func(float64) vg.Length, y0, y1 vg.Length) {
		for _, b := range r.Bins {
			if b.Count == 0 {
				continue
			}
			yt := y0 + vg.Length(float64(b.Count)/float64(maxc))*(y1-y0)
			sc.FillPolygon(colGrey, []vg.Point{{X: xOf(b.Lo), Y: y0}, {X: xOf(b.Hi), Y: y0}, {X: xOf(b.Hi), Y: yt}, {X: xOf(b.Lo), Y: yt}})
		}
	})
}

// drawWithStrip draws a diagram's panel over the top 83 % of c and, in the
// strip below on the same horizontal scale, a labelled baseline and what
// fill draws between y0 and y1 (xOf maps [0, 1] to the panel's data
// area); it returns the layout.
func drawWithStrip(c draw.Canvas, pn *panel, compact bool, text string, fill func(sc draw.Canvas, xOf func(float64) vg.Length, y0, y1 vg.Length)) figureLayout {
	ht := c.Max.Y - c.Min.Y
	strip := ht * 0.17
	top := draw.Crop(c, 0, 0, strip, 0)
	g := grid(top, [][]*panel{{pn}})
	da := pn.plot.DataCanvas(g.Canvases[0][0])
	sc := draw.Crop(c, 0, 0, 0, -(ht - strip))
	size := vg.Length(tickSize)
	if compact {
		size = compactTickSize
	}
	label := place(text, size, vg.Point{X: da.Min.X, Y: sc.Max.Y - face(size).Extents().Ascent - vg.Millimeter})
	y0, y1 := sc.Min.Y+vg.Millimeter*2, label.Box.Min.Y-vg.Millimeter
	fill(sc, func(v float64) vg.Length { return da.Min.X + vg.Length(v)*(da.Max.X-da.Min.X) }, y0, y1)
	sc.StrokeLine2(draw.LineStyle{Color: colGrey, Width: vg.Points(0.5)}, da.Min.X, y0, da.Max.X, y0)
	label.draw(sc, color.Black)
	return figureLayout{Grids: []gridLayout{g}, Texts: []placedText{label}}
}

// maxCount returns the largest bin count (at least 1).
func (r *Reliability) maxCount() int {
	m := 1
	for _, b := range r.Bins {
		m = max(m, b.Count)
	}
	return m
}

// panel returns the reliability plot (without the count strip) with its
// title and legend.
func (r *Reliability) panel() *panel {
	pn, name := diagramPanel(r.Title, "Reliability diagram", fmt.Sprintf("(ECE %.2f%%)", 100*r.ECE), r.ScoreLabel, "observed frequency", r.Compact)
	p := pn.plot
	box := func(x0, x1, y0, y1 float64) plotter.XYs {
		return plotter.XYs{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}}
	}
	var bars, gaps []plotter.XYer
	var band []plotter.XYs
	var pts plotter.XYs
	for _, b := range r.Bins {
		if b.Count == 0 {
			continue
		}
		bars = append(bars, box(b.Lo, b.Hi, 0, b.Freq))
		gaps = append(gaps, box(b.Lo, b.Hi, min(b.Freq, b.Score), max(b.Freq, b.Score)))
		if mathx.Finite(b.BandLo, b.BandHi) {
			mid := (b.Lo + b.Hi) / 2
			band = append(band, plotter.XYs{{X: mid, Y: b.BandLo}, {X: mid, Y: b.BandHi}})
		}
		pts = append(pts, plotter.XY{X: b.Score, Y: b.Freq})
	}
	if len(bars) > 0 {
		pb, _ := plotter.NewPolygon(bars...)
		pb.Color = colorAlpha(colBlue, 90)
		pb.LineStyle.Color = colBlue
		pb.LineStyle.Width = vg.Points(0.5)
		p.Add(pb)
		pn.add(name("accuracy per bin", "accuracy"), pb)
		pg, _ := plotter.NewPolygon(gaps...)
		pg.Color = colGap
		pg.LineStyle.Width = 0
		p.Add(pg)
		pn.add(name("gap to mean confidence", "gap"), pg)
	}
	for i, b := range band {
		l, _ := plotter.NewLine(b)
		l.LineStyle.Color = colorAlpha(colGrey, 255)
		l.LineStyle.Width = vg.Points(1.5)
		p.Add(l)
		if i == 0 {
			pn.add(fmt.Sprintf(name("%.0f%% bootstrap interval per bin", "%.0f%% interval (bin)"), 100*r.Level), l)
		}
	}
	addDiagonal(pn, name)
	// The curve's band, as one polygon over each run of defined points.
	var runs []plotter.XYer
	var run []int
	flush := func() {
		if len(run) > 1 {
			var poly plotter.XYs
			for _, i := range run {
				poly = append(poly, plotter.XY{X: r.BandX[i], Y: r.CurveLo[i]})
			}
			for k := len(run) - 1; k >= 0; k-- {
				poly = append(poly, plotter.XY{X: r.BandX[run[k]], Y: r.CurveHi[run[k]]})
			}
			runs = append(runs, poly)
		}
		run = nil
	}
	for i := range r.CurveLo {
		if mathx.Finite(r.CurveLo[i], r.CurveHi[i]) {
			run = append(run, i)
		} else {
			flush()
		}
	}
	flush()
	if len(runs) > 0 {
		pb, _ := plotter.NewPolygon(runs...)
		pb.Color = colorAlpha(colGreen, 60)
		pb.LineStyle.Width = 0
		p.Add(pb)
		pn.add(fmt.Sprintf(name("%.0f%% bootstrap band of the kernel curve", "%.0f%% band (curve)"), 100*r.Level), pb)
	}
	var curve plotter.XYs
	for i, x := range r.CurveX {
		if mathx.Finite(r.CurveY[i]) {
			curve = append(curve, plotter.XY{X: x, Y: r.CurveY[i]})
		}
	}
	if len(curve) > 1 {
		l, _ := plotter.NewLine(curve)
		l.LineStyle.Color = colGreen
		l.LineStyle.Width = vg.Points(2)
		p.Add(l)
		hs := fmt.Sprintf("h = %.3g", r.Bandwidth)
		switch r.BandwidthEdge {
		case 1:
			hs += name(", largest tried!", ", max!")
		case -1:
			hs += name(", smallest tried!", ", min!")
		}
		pn.add(fmt.Sprintf(name("kernel estimate (%s)", "kernel (%s)"), hs), l)
	}
	if len(pts) > 0 {
		s, _ := plotter.NewScatter(pts)
		s.GlyphStyle.Color = colBlue
		s.GlyphStyle.Radius = vg.Points(2)
		p.Add(s)
	}
	return pn
}

// diagramPanel returns the panel of a reliability diagram on the unit
// square, titled "TITLE NUMBER" (TITLE defaulting to fallback), and the
// chooser of its legend texts: long in the full figure, short in the
// small multiples.
func diagramPanel(title, fallback, number, xLabel, yLabel string, compact bool) (*panel, func(long, short string) string) {
	if title == "" {
		title = fallback
	}
	p := NewPlot(xLabel, yLabel)
	sansPlot(p, compact)
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, 1, 0, 1
	p.Y.Tick.Marker = unitTicks{}
	p.X.Tick.Marker = unitTicks{}
	name := func(long, short string) string {
		if compact {
			return short
		}
		return long
	}
	return &panel{plot: p, title: title + " " + number, compact: compact}, name
}

// addDiagonal draws the dashed diagonal of perfect calibration on the
// panel, with its legend entry.
func addDiagonal(pn *panel, name func(long, short string) string) {
	diag, _ := plotter.NewLine(plotter.XYs{{X: 0, Y: 0}, {X: 1, Y: 1}})
	diag.LineStyle.Color = colGrey
	diag.LineStyle.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	pn.plot.Add(diag)
	pn.add(name("perfect calibration", "diagonal"), diag)
}

// unitTicks marks 0, 0.2, ..., 1 (labelled) and the tenths between.
type unitTicks struct{}

// Ticks implements plot.Ticker.
func (unitTicks) Ticks(lo, hi float64) []plot.Tick {
	var ts []plot.Tick
	for i := 0; i <= 10; i++ {
		v := float64(i) / 10
		if v < lo || v > hi {
			continue
		}
		t := plot.Tick{Value: v}
		if i%2 == 0 {
			t.Label = fmt.Sprintf("%.1f", v)
		}
		ts = append(ts, t)
	}
	return ts
}
