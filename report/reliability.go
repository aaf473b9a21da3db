package report

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

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
	// (CurveBandwidth).
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
	Bandwidth      float64
	Compact        bool // drawn at 3.6 × 4.2 inches
}

// NewReliability computes a reliability diagram. Outcomes must be 0 or 1;
// at least 2 samples are needed.
func NewReliability(scores, outcomes []float64, o ReliabilityOptions) (*Reliability, error) {
	n := len(scores)
	if n != len(outcomes) {
		return nil, fmt.Errorf("report: %d scores and %d outcomes", n, len(outcomes))
	}
	if n < 2 {
		return nil, fmt.Errorf("report: reliability diagram: %d samples, need at least 2", n)
	}
	ints := make([]int, n)
	for i, v := range outcomes {
		if v != 0 && v != 1 {
			return nil, fmt.Errorf("report: outcome %d is %v, not 0 or 1", i, v)
		}
		ints[i] = int(v)
	}
	a, err := metric.AssignBins(scores, o.Bins)
	if err != nil {
		return nil, fmt.Errorf("report: reliability bins: %w", err)
	}
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	bs := a.Summarize(scores, outcomes, all)
	r := &Reliability{Title: o.Title, ScoreLabel: o.ScoreLabel, N: n, ECE: bs.ECE(1), Compact: o.Compact}
	if r.ScoreLabel == "" {
		r.ScoreLabel = "confidence"
	}
	for b := range bs.Count {
		r.Bins = append(r.Bins, ReliabilityBin{Lo: bs.Edges[b], Hi: bs.Edges[b+1], Count: bs.Count[b],
			Score: bs.Score[b], Freq: bs.Freq[b], BandLo: math.NaN(), BandHi: math.NaN()})
	}
	if o.Resamples >= 0 {
		nb := o.Resamples
		if nb == 0 {
			nb = 200
		}
		r.Level = o.Level
		if r.Level == 0 {
			r.Level = 0.95
		}
		freqs := make([][]float64, len(r.Bins))
		idx := make([]int, n)
		for b := 0; b < nb; b++ {
			rng := rand.New(rand.NewPCG(o.Seed, uint64(b)))
			for i := range idx {
				idx[i] = rng.IntN(n)
			}
			rb := a.Summarize(scores, outcomes, idx)
			for j, c := range rb.Count {
				if c > 0 {
					freqs[j] = append(freqs[j], rb.Freq[j])
				}
			}
		}
		for j, f := range freqs {
			if r.Bins[j].Count == 0 || len(f) == 0 {
				continue
			}
			slices.Sort(f)
			r.Bins[j].BandLo = quantile(f, (1-r.Level)/2)
			r.Bins[j].BandHi = quantile(f, 1-(1-r.Level)/2)
		}
	}
	// The kernel curve.
	h := o.Bandwidth
	if h == 0 {
		if h, err = CurveBandwidth(scores, ints, o.Seed, o.Workers); err != nil {
			return nil, err
		}
	}
	lo, hi := slices.Min(scores), slices.Max(scores)
	const points = 101
	for i := 0; i < points; i++ {
		r.CurveX = append(r.CurveX, lo+(hi-lo)*float64(i)/(points-1))
	}
	r.CurveY, _, err = kde.ScoreRegression(r.CurveX, scores, ints, kde.Options{Bandwidth: h, Workers: o.Workers})
	if err != nil {
		return nil, fmt.Errorf("report: reliability curve: %w", err)
	}
	r.Bandwidth = h
	return r, nil
}

// quantile returns the q-quantile of sorted x (linear interpolation
// between order statistics).
func quantile(x []float64, q float64) float64 {
	pos := q * float64(len(x)-1)
	i := int(math.Floor(pos))
	if i >= len(x)-1 {
		return x[len(x)-1]
	}
	return x[i] + (pos-float64(i))*(x[i+1]-x[i])
}

// Size is 5 × 5.5 inches, or 3.6 × 4.2 when Compact.
func (r *Reliability) Size() (vg.Length, vg.Length) {
	if r.Compact {
		return 3.6 * vg.Inch, 4.2 * vg.Inch
	}
	return 5 * vg.Inch, 5.5 * vg.Inch
}

// Draw draws the diagram: the reliability plot above, the count strip
// below, on the same horizontal scale.
func (r *Reliability) Draw(c draw.Canvas) {
	ht := c.Max.Y - c.Min.Y
	strip := ht * 0.2
	top := draw.Crop(c, 0, 0, strip, 0)
	p := r.plot()
	p.Draw(top)
	da := p.DataCanvas(top)
	// Count strip: bars of the bin counts under the plot's data area.
	sc := draw.Crop(c, 0, 0, 0, -(ht - strip))
	y0, y1 := sc.Min.Y+vg.Millimeter*2, sc.Max.Y-vg.Millimeter*6
	maxc := 0
	for _, b := range r.Bins {
		maxc = max(maxc, b.Count)
	}
	xOf := func(v float64) vg.Length { return da.Min.X + vg.Length(v)*(da.Max.X-da.Min.X) }
	for _, b := range r.Bins {
		if b.Count == 0 {
			continue
		}
		yt := y0 + vg.Length(float64(b.Count)/float64(maxc))*(y1-y0)
		sc.FillPolygon(colGrey, []vg.Point{{X: xOf(b.Lo), Y: y0}, {X: xOf(b.Hi), Y: y0}, {X: xOf(b.Hi), Y: yt}, {X: xOf(b.Lo), Y: yt}})
	}
	sc.StrokeLine2(draw.LineStyle{Color: colGrey, Width: vg.Points(0.5)}, da.Min.X, y0, da.Max.X, y0)
	sty := p.X.Label.TextStyle
	sty.Font.Size = vg.Points(9)
	sty.XAlign, sty.YAlign = draw.XLeft, draw.YTop
	sc.FillText(sty, vg.Point{X: da.Min.X, Y: sc.Max.Y}, fmt.Sprintf("samples per bin (largest %d of %d)", maxc, r.N))
}

// plot returns the reliability plot (without the count strip).
func (r *Reliability) plot() *plot.Plot {
	title := r.Title
	if title == "" {
		title = "Reliability diagram"
	}
	p := newPlot(fmt.Sprintf("%s (ECE %.2f%%)", title, 100*r.ECE), r.ScoreLabel, "observed frequency")
	// The legend sits above y = 1, in a band the ticks leave out.
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, 1, 0, 1.3
	p.Y.Tick.Marker = unitTicks{}
	p.X.Tick.Marker = unitTicks{}
	p.Legend.TextStyle.Font.Size = vg.Points(9)
	if r.Compact {
		p.Legend.TextStyle.Font.Size = vg.Points(7)
		p.Title.TextStyle.Font.Size = vg.Points(10)
	}
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
		if finite(b.BandLo, b.BandHi) {
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
		p.Legend.Add("accuracy per bin", pb)
		pg, _ := plotter.NewPolygon(gaps...)
		pg.Color = colGap
		pg.LineStyle.Width = 0
		p.Add(pg)
		p.Legend.Add("gap to mean confidence", pg)
	}
	for i, b := range band {
		l, _ := plotter.NewLine(b)
		l.LineStyle.Color = colorAlpha(colGrey, 255)
		l.LineStyle.Width = vg.Points(1.5)
		p.Add(l)
		if i == 0 {
			p.Legend.Add(fmt.Sprintf("%.0f%% bootstrap interval", 100*r.Level), l)
		}
	}
	diag, _ := plotter.NewLine(plotter.XYs{{X: 0, Y: 0}, {X: 1, Y: 1}})
	diag.LineStyle.Color = colGrey
	diag.LineStyle.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(diag)
	p.Legend.Add("perfect calibration", diag)
	var curve plotter.XYs
	for i, x := range r.CurveX {
		if finite(r.CurveY[i]) {
			curve = append(curve, plotter.XY{X: x, Y: r.CurveY[i]})
		}
	}
	if len(curve) > 1 {
		l, _ := plotter.NewLine(curve)
		l.LineStyle.Color = colGreen
		l.LineStyle.Width = vg.Points(2)
		p.Add(l)
		p.Legend.Add(fmt.Sprintf("kernel estimate (h = %.3g)", r.Bandwidth), l)
	}
	if len(pts) > 0 {
		s, _ := plotter.NewScatter(pts)
		s.GlyphStyle.Color = colBlue
		s.GlyphStyle.Radius = vg.Points(2)
		p.Add(s)
	}
	return p
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
