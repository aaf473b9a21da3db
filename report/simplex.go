package report

import (
	"context"
	"fmt"
	"image/color"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/palette"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/internal/mathx"
	"github.com/calib-dev/calib/kde"
)

// SimplexOptions configures NewSimplex. The zero value shows classes 0 and
// 1 (and "other" for K > 3), 8 bins per side, a 36-per-side kernel grid,
// the cross-validated bandwidth and at most 1,500 points.
type SimplexOptions struct {
	// Classes are the two classes shown; the other K - 2 are merged into
	// "other" (probabilities summed, labels mapped). For K = 3 the third
	// class is the third corner. Ignored for K = 2.
	Classes [2]int
	// Names of the K classes for the corner labels; nil means "class i".
	Names []string
	Bins  int // triangle bins per side of the binned estimate; 0 means 8
	Grid  int // triangles per side of the kernel estimate; 0 means 36
	// Bandwidth of the Dirichlet kernel; 0 selects it by cross-validation
	// (kde.RegressionBandwidth).
	Bandwidth float64
	Points    int    // samples drawn as dots; 0 means 1,500, negative none
	Seed      uint64 // subsamples
	Workers   int
	// MinCount is the number of samples below which a bin of the binned
	// estimate is hatched instead of coloured; 0 means 10.
	MinCount int
}

// SimplexCell is one triangle of a Simplex panel, in barycentric
// coordinates (class a, class b, other), with its value ||E[y|f] - f||_1
// (NaN for an empty bin, or where the kernel density of the predictions is
// below 2 % of the uniform density).
type SimplexCell struct {
	Corners [3][3]float64
	Value   float64
	Count   int // samples in the bin (binned panel only)
}

// Simplex is the calibration-error field ||E[y | f] - f||_1 on the
// 3-class simplex, estimated by triangle bins (ECE^KDE paper Fig. 1a-b:
// the histogram estimate H(f), here the bin's mean one-hot label minus its
// mean prediction) and by the Dirichlet kernel regression (Fig. 1c, at the
// centroid of each grid triangle).
type Simplex struct {
	Corners   [3]string // names of the corners: class a, class b, other
	N         int
	Binned    []SimplexCell
	Kernel    []SimplexCell
	Bandwidth float64
	// KernelEdge is -1 or +1 when the kernel's bandwidth, chosen by
	// cross-validation, is the smallest or the largest of kde.RegressionGrid.
	KernelEdge int
	// MinCount: binned cells with fewer samples are hatched, not coloured.
	MinCount int
	// Points are samples drawn as dots: barycentric coordinates and label
	// (0, 1, 2 for class a, class b, other).
	Points [][3]float64
	Labels []int
}

// reduce maps n×k probabilities to (p_a, p_b, other) and labels to 0, 1, 2.
func reduce(probs []float64, labels []int, k int, cls [2]int) ([]float64, []int, error) {
	n := len(labels)
	if k < 3 {
		return nil, nil, fmt.Errorf("report: simplex view needs K >= 3, got %d", k)
	}
	a, b := cls[0], cls[1]
	if a == b || a < 0 || b < 0 || a >= k || b >= k {
		return nil, nil, fmt.Errorf("report: simplex classes %d and %d: need two different classes in 0..%d", a, b, k-1)
	}
	x := make([]float64, 3*n)
	y := make([]int, n)
	for i := 0; i < n; i++ {
		pa, pb := probs[i*k+a], probs[i*k+b]
		x[3*i], x[3*i+1], x[3*i+2] = pa, pb, math.Max(0, 1-pa-pb)
		switch labels[i] {
		case a:
			y[i] = 0
		case b:
			y[i] = 1
		default:
			y[i] = 2
		}
	}
	return x, y, nil
}

// NewSimplex computes the binned and kernel fields of the predictions
// (n×k, K >= 3) and labels, with sample weights (nil: all 1): a cell's
// means and the kernel regression are weighted (Count stays the number of
// samples).
func NewSimplex(ctx context.Context, probs []float64, labels []int, k int, weights []float64, o SimplexOptions) (*Simplex, error) {
	if o.Classes == [2]int{} {
		o.Classes = [2]int{0, 1}
	}
	x, y, err := reduce(probs, labels, k, o.Classes)
	if err != nil {
		return nil, err
	}
	n := len(y)
	if n < 2 {
		return nil, fmt.Errorf("report: simplex view: %w: %d samples, need at least 2", data.ErrTooFew, n)
	}
	if err := mathx.CheckWeights(weights, n); err != nil {
		return nil, fmt.Errorf("report: simplex view: %w", err)
	}
	name := func(c int) string {
		if c < len(o.Names) {
			return o.Names[c]
		}
		return fmt.Sprintf("class %d", c)
	}
	s := &Simplex{N: n, Corners: [3]string{name(o.Classes[0]), name(o.Classes[1]), "other"}, MinCount: o.MinCount}
	if s.MinCount == 0 {
		s.MinCount = 10
	}
	if k == 3 {
		s.Corners[2] = name(3 - o.Classes[0] - o.Classes[1])
	}
	bins, g := o.Bins, o.Grid
	if bins == 0 {
		bins = 8
	}
	if g == 0 {
		g = 36
	}
	if bins < 1 || g < 1 {
		return nil, fmt.Errorf("report: simplex view: %d bins and %d grid triangles per side", bins, g)
	}
	rng := rand.New(rand.NewPCG(o.Seed, 3))

	// Binned: per triangle, mean label minus mean prediction.
	cells := triangles(bins)
	sumF := make([][3]float64, len(cells))
	sumY := make([][3]float64, len(cells))
	cnt := make([]int, len(cells))
	mass := make([]float64, len(cells))
	for i := 0; i < n; i++ {
		c := cellOf(x[3*i], x[3*i+1], bins)
		w := mathx.Weight(weights, i)
		cnt[c]++
		mass[c] += w
		for m := 0; m < 3; m++ {
			sumF[c][m] += w * x[3*i+m]
		}
		sumY[c][y[i]] += w
	}
	for c, corners := range cells {
		cell := SimplexCell{Corners: corners, Value: math.NaN(), Count: cnt[c]}
		if mass[c] > 0 {
			cell.Value = 0
			for m := 0; m < 3; m++ {
				cell.Value += math.Abs(sumY[c][m]-sumF[c][m]) / mass[c]
			}
		}
		s.Binned = append(s.Binned, cell)
	}

	// Kernel: the regression at each grid triangle's centroid.
	h := o.Bandwidth
	if h == 0 {
		if h, err = kde.RegressionBandwidth(ctx, x, y, 3, weights, o.Seed, o.Workers); err != nil {
			return nil, err
		}
		s.KernelEdge = kde.GridEdge(kde.RegressionGrid(), h)
	}
	s.Bandwidth = h
	fine := triangles(g)
	q := make([]float64, 0, 3*len(fine))
	for _, t := range fine {
		for m := 0; m < 3; m++ {
			q = append(q, (t[0][m]+t[1][m]+t[2][m])/3)
		}
	}
	r, logDens, _, err := kde.Regression(ctx, q, x, y, 3, weights, kde.Options{Bandwidth: h, Workers: o.Workers})
	if err != nil {
		return nil, fmt.Errorf("report: simplex kernel estimate: %w", err)
	}
	// Where the kernel density of the predictions is below 2 % of the
	// uniform density on the simplex (2 in the (a, b) coordinates) the
	// estimate is an extrapolation from a few far samples: the cell is left
	// grey.
	minLogDens := math.Log(0.02 * 2)
	for j, t := range fine {
		v := math.NaN()
		if logDens[j] >= minLogDens {
			v = 0
			for m := 0; m < 3; m++ {
				v += math.Abs(r[3*j+m] - q[3*j+m])
			}
		}
		s.Kernel = append(s.Kernel, SimplexCell{Corners: t, Value: v})
	}

	np := o.Points
	if np == 0 {
		np = 1500
	}
	if np > 0 {
		idx := rng.Perm(n)
		for _, i := range idx[:min(np, n)] {
			s.Points = append(s.Points, [3]float64{x[3*i], x[3*i+1], x[3*i+2]})
			s.Labels = append(s.Labels, y[i])
		}
	}
	return s, nil
}

// triangles returns the b^2 triangles of side 1/b of the simplex, as
// barycentric corners: the upward triangle (i, j) and, where it fits, the
// downward one, for i + j <= b - 1 (i, j the grid steps of classes a, b).
func triangles(b int) [][3][3]float64 {
	pt := func(i, j int) [3]float64 {
		pa, pb := float64(i)/float64(b), float64(j)/float64(b)
		return [3]float64{pa, pb, math.Max(0, 1-pa-pb)}
	}
	var ts [][3][3]float64
	for i := 0; i < b; i++ {
		for j := 0; i+j < b; j++ {
			ts = append(ts, [3][3]float64{pt(i, j), pt(i+1, j), pt(i, j+1)})
			if i+j < b-1 {
				ts = append(ts, [3][3]float64{pt(i+1, j), pt(i, j+1), pt(i+1, j+1)})
			}
		}
	}
	return ts
}

// cellOf returns the index in triangles(b) of the triangle holding the
// point with coordinates pa, pb (points on a shared edge go to one side).
func cellOf(pa, pb float64, b int) int {
	fb := float64(b)
	i := min(int(pa*fb), b-1)
	j := min(int(pb*fb), b-1-i)
	i, j = max(i, 0), max(j, 0)
	down := pa*fb-float64(i)+pb*fb-float64(j) >= 1 && i+j < b-1
	// Index: rows i = 0..b-1 hold b - i upward and b - i - 1 downward
	// triangles, interleaved by j.
	idx := 0
	for r := 0; r < i; r++ {
		idx += 2*(b-r) - 1
	}
	idx += 2 * j
	if down {
		idx++
	}
	return idx
}

// cart maps barycentric (a, b, other) to the plane: a at (0, 0), b at
// (1, 0), other at (1/2, sqrt(3)/2).
func cart(p [3]float64) (float64, float64) {
	return p[1] + p[2]/2, p[2] * math.Sqrt(3) / 2
}

// SparseBins returns the number of binned cells without samples and the
// number with fewer than MinCount.
func (s *Simplex) SparseBins() (empty, sparse int) {
	for _, c := range s.Binned {
		switch {
		case c.Count == 0:
			empty++
		case c.Count < s.MinCount:
			sparse++
		}
	}
	return empty, sparse
}

// Warning returns sentences for the caption on what the figure cannot
// show at this n: empty and sparse bins, and a kernel bandwidth at an end
// of its range; "" when there is nothing to say.
func (s *Simplex) Warning() string {
	var parts []string
	if empty, sparse := s.SparseBins(); empty+sparse > 0 {
		parts = append(parts, fmt.Sprintf("Warning: of the %d bins, %d are empty (grey) and %d hold fewer than %d samples (hatched, no colour): the binned field says nothing there; read it only in the %d bins with at least %d (every bin's count is printed in it).",
			len(s.Binned), empty, sparse, s.MinCount, len(s.Binned)-empty-sparse, s.MinCount))
	}
	if w := edgeWarning("the kernel field", s.Bandwidth, s.KernelEdge); w != "" {
		parts = append(parts, w)
	}
	return strings.Join(parts, " ")
}

// Colours of masked simplex cells.
var (
	colEmpty = color.NRGBA{225, 225, 225, 255}
	colHatch = color.NRGBA{140, 140, 140, 255}
	colPaper = color.NRGBA{248, 248, 248, 255}
)

// triPlotter draws filled triangles coloured by value; with minCount > 0
// (the binned panel) non-empty cells with fewer samples are hatched.
type triPlotter struct {
	cells    []SimplexCell
	cmap     palette.ColorMap
	minCount int
}

// Plot implements plot.Plotter.
func (t triPlotter) Plot(c draw.Canvas, p *plot.Plot) {
	tx, ty := p.Transforms(&c)
	for _, cell := range t.cells {
		var pts []vg.Point
		for _, corner := range cell.Corners {
			x, y := cart(corner)
			pts = append(pts, vg.Point{X: tx(x), Y: ty(y)})
		}
		masked := t.minCount > 0 && cell.Count > 0 && cell.Count < t.minCount
		var col color.Color = colEmpty
		switch {
		case masked:
			col = colPaper
		case !math.IsNaN(cell.Value):
			v := math.Min(math.Max(cell.Value, t.cmap.Min()), t.cmap.Max())
			if cc, err := t.cmap.At(v); err == nil {
				col = cc
			}
		}
		c.FillPolygon(col, pts)
		// A hairline in the fill colour hides anti-aliasing seams.
		c.StrokeLines(draw.LineStyle{Color: col, Width: vg.Points(0.3)}, append(pts, pts[0]))
		if masked {
			hatch(c, pts, vg.Points(3.5))
		}
	}
}

// countPlotter prints the count of samples in each non-empty cell, white
// on dark colours; it is added after the samples' dots so that they do
// not cover it.
type countPlotter struct {
	tri triPlotter
}

// Plot implements plot.Plotter.
func (t countPlotter) Plot(c draw.Canvas, p *plot.Plot) {
	tx, ty := p.Transforms(&c)
	f := face(cellCountSize)
	e := f.Extents()
	for _, cell := range t.tri.cells {
		if cell.Count == 0 {
			continue
		}
		var cx, cy vg.Length
		for _, corner := range cell.Corners {
			x, y := cart(corner)
			cx, cy = cx+tx(x)/3, cy+ty(y)/3
		}
		tc := color.Color(color.Black)
		if cell.Count >= t.tri.minCount && !math.IsNaN(cell.Value) {
			v := math.Min(math.Max(cell.Value, t.tri.cmap.Min()), t.tri.cmap.Max())
			if cc, err := t.tri.cmap.At(v); err == nil && luminance(cc) < 0.45 {
				tc = color.White
			}
		}
		label := strconv.Itoa(cell.Count)
		place(label, cellCountSize, vg.Point{X: cx - f.Width(label)/2, Y: cy - (e.Ascent-e.Descent)/2}).draw(c, tc)
	}
}

// cellCountSize is the font size of the counts in the binned cells.
const cellCountSize = 7

// luminance returns the relative luminance of col in [0, 1].
func luminance(col color.Color) float64 {
	r, g, b, _ := col.RGBA()
	return (0.2126*float64(r) + 0.7152*float64(g) + 0.0722*float64(b)) / 0xffff
}

// hatch draws lines at 45 degrees, step apart, across the triangle pts.
func hatch(c draw.Canvas, pts []vg.Point, step vg.Length) {
	lo, hi := vg.Length(math.Inf(1)), vg.Length(math.Inf(-1))
	for _, p := range pts {
		lo, hi = min(lo, p.X-p.Y), max(hi, p.X-p.Y)
	}
	sty := draw.LineStyle{Color: colHatch, Width: vg.Points(0.6)}
	for k := lo + step/2; k < hi; k += step {
		// The line x - y = k meets two edges of the triangle.
		var seg []vg.Point
		for i := range pts {
			a, b := pts[i], pts[(i+1)%3]
			fa, fb := a.X-a.Y-k, b.X-b.Y-k
			if (fa < 0) == (fb < 0) || fa == fb {
				continue
			}
			t := fa / (fa - fb)
			seg = append(seg, vg.Point{X: a.X + t*(b.X-a.X), Y: a.Y + t*(b.Y-a.Y)})
		}
		if len(seg) >= 2 {
			c.StrokeLine2(sty, seg[0].X, seg[0].Y, seg[1].X, seg[1].Y)
		}
	}
}

// hatchThumb is the legend thumbnail of a hatched cell.
type hatchThumb struct{}

// Thumbnail implements plot.Thumbnailer.
func (hatchThumb) Thumbnail(c *draw.Canvas) {
	r := c.Rectangle
	c.FillPolygon(colPaper, []vg.Point{r.Min, {X: r.Max.X, Y: r.Min.Y}, r.Max, {X: r.Min.X, Y: r.Max.Y}})
	mid := vg.Point{X: (r.Min.X + r.Max.X) / 2, Y: r.Min.Y}
	hatch(*c, []vg.Point{{X: r.Min.X, Y: r.Min.Y}, {X: r.Max.X, Y: r.Min.Y}, {X: mid.X, Y: r.Max.Y}}, vg.Points(2.5))
	hatch(*c, []vg.Point{{X: r.Min.X, Y: r.Min.Y}, {X: mid.X, Y: r.Max.Y}, {X: r.Min.X, Y: r.Max.Y}}, vg.Points(2.5))
	hatch(*c, []vg.Point{{X: r.Max.X, Y: r.Min.Y}, {X: r.Max.X, Y: r.Max.Y}, {X: mid.X, Y: r.Max.Y}}, vg.Points(2.5))
}

// Size is 10 × 6 inches.
func (s *Simplex) Size() (vg.Length, vg.Length) { return 10 * vg.Inch, 6 * vg.Inch }

// Draw draws the legend, the binned and kernel panels side by side and a
// shared colour bar below.
func (s *Simplex) Draw(c draw.Canvas) { s.draw(c) }

// draw draws the figure and returns its layout.
func (s *Simplex) draw(c draw.Canvas) figureLayout { return s.scene().draw(c) }

// parts returns the legend, the two panels and the colour bar as separate
// parts.
func (s *Simplex) parts() (int, []*part) { return s.scene().parts(s.Size()) }

// scene returns the legend, the panels and the colour bar.
func (s *Simplex) scene() *scene {
	// The colour scale covers the cells that are coloured.
	hi := 0.0
	for _, cell := range s.Binned {
		if !math.IsNaN(cell.Value) && cell.Count >= s.MinCount {
			hi = math.Max(hi, cell.Value)
		}
	}
	for _, cell := range s.Kernel {
		if !math.IsNaN(cell.Value) {
			hi = math.Max(hi, cell.Value)
		}
	}
	if hi == 0 {
		hi = 1
	}
	cmap := viridis()
	cmap.SetMin(0)
	cmap.SetMax(hi)
	var entries []legendEntry
	cols := []color.Color{colBlue, colOrange, colGreen}
	scatters := make([]*plotter.Scatter, 3)
	for l := 0; l < 3; l++ {
		var xy plotter.XYs
		for i, pt := range s.Points {
			if s.Labels[i] == l {
				x, y := cart(pt)
				xy = append(xy, plotter.XY{X: x, Y: y})
			}
		}
		if len(xy) == 0 {
			continue
		}
		sc, _ := plotter.NewScatter(xy)
		sc.GlyphStyle.Color = colorAlpha(cols[l].(color.NRGBA), 160)
		sc.GlyphStyle.Radius = vg.Points(1.2)
		scatters[l] = sc
		th, _ := plotter.NewScatter(xy[:1])
		th.GlyphStyle = sc.GlyphStyle
		th.GlyphStyle.Radius = vg.Points(2.5)
		entries = append(entries, legendEntry{text: "sample labelled " + s.Corners[l], thumbs: []plot.Thumbnailer{th}})
	}
	entries = append(entries,
		legendEntry{text: "no samples (binned); kernel density under 2 % of uniform", thumbs: []plot.Thumbnailer{swatch{colEmpty}}},
		legendEntry{text: fmt.Sprintf("bin with fewer than %d samples: no colour", s.MinCount), thumbs: []plot.Thumbnailer{hatchThumb{}}})
	mkPanel := func(title string, cells []SimplexCell, minCount int) *panel {
		p := plot.New()
		sansPlot(p, false)
		p.HideAxes()
		p.X.Min, p.X.Max = -0.12, 1.12
		p.Y.Min, p.Y.Max = -0.1, math.Sqrt(3)/2+0.1
		tri := triPlotter{cells: cells, cmap: cmap, minCount: minCount}
		p.Add(tri)
		for _, sc := range scatters {
			if sc != nil {
				p.Add(sc)
			}
		}
		if minCount > 0 {
			p.Add(countPlotter{tri})
		}
		labels, _ := plotter.NewLabels(plotter.XYLabels{
			XYs:    []plotter.XY{{X: -0.02, Y: -0.06}, {X: 1.02, Y: -0.06}, {X: 0.5, Y: math.Sqrt(3)/2 + 0.04}},
			Labels: []string{s.Corners[0], s.Corners[1], s.Corners[2]},
		})
		for i := range labels.TextStyle {
			labels.TextStyle[i].Font = font.From(sansFont, labelSize)
		}
		p.Add(labels)
		return &panel{plot: p, title: title}
	}
	cb := plot.New()
	sansPlot(cb, false)
	cb.HideY()
	cb.X.Label.Text = "||E[y | f] - f||_1 (colour scale over the coloured cells)"
	cb.Add(&plotter.ColorBar{ColorMap: cmap})
	const bar = 0.16 // of the height below the legend
	return &scene{legend: entries,
		panels: [][]*panel{{
			mkPanel(fmt.Sprintf("binned (%d per side; mean label - mean prediction; counts printed)", binsOf(len(s.Binned))), s.Binned, s.MinCount),
			mkPanel(fmt.Sprintf("Dirichlet kernel (h = %.3g), n = %d", s.Bandwidth, s.N), s.Kernel, 0),
		}},
		gridRegion: func(rest draw.Canvas) draw.Canvas {
			return draw.Crop(rest, 0, 0, bar*(rest.Max.Y-rest.Min.Y), 0)
		},
		extra: func(rest draw.Canvas, paint bool) vg.Rectangle {
			ht := rest.Max.Y - rest.Min.Y
			w := rest.Max.X - rest.Min.X
			cc := draw.Crop(rest, w*0.2, -w*0.2, 0, -(1-bar)*ht)
			if paint {
				cb.Draw(cc)
			}
			return cc.Rectangle
		}}
}

// viridis returns a colour map through the viridis control colours
// (perceptually uniform, no white, so it stays apart from the grey of empty
// cells).
func viridis() palette.ColorMap {
	cm, err := moreland.NewLuminance([]color.Color{
		color.NRGBA{0x44, 0x01, 0x54, 255}, color.NRGBA{0x3b, 0x52, 0x8b, 255}, color.NRGBA{0x21, 0x91, 0x8c, 255},
		color.NRGBA{0x5e, 0xc9, 0x62, 255}, color.NRGBA{0xfd, 0xe7, 0x25, 255}})
	if err != nil {
		panic("report: viridis: " + err.Error()) // the controls are fixed and increase in luminance
	}
	return cm
}

// binsOf inverts len(triangles(b)) = b^2.
func binsOf(cells int) int { return int(math.Round(math.Sqrt(float64(cells)))) }
