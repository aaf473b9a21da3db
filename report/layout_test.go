package report

import (
	"bytes"
	"context"
	"fmt"
	"image/color"
	"math"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/recorder"

	"github.com/calib-dev/calib/internal/mathx"
	"github.com/calib-dev/calib/kde"
	"github.com/calib-dev/calib/metric"
)

// layouter is a figure that reports where it put things.
type layouter interface {
	Figure
	draw(c draw.Canvas) figureLayout
}

// drawnText is one string a figure drew, with its box in figure
// coordinates.
type drawnText struct {
	text string
	size vg.Length
	box  vg.Rectangle
}

// record draws f on a recorder and returns its layout, the texts it drew
// (boxes from the font's metrics, rotations applied) and the actions.
func record(t *testing.T, f Figure) (figureLayout, []drawnText, []recorder.Action) {
	t.Helper()
	lf, ok := f.(layouter)
	if !ok {
		t.Fatalf("%T does not report its layout", f)
	}
	var lay figureLayout
	texts, actions := recordTexts(f, func(c draw.Canvas) { lay = lf.draw(c) })
	return lay, texts, actions
}

// recordTexts draws f with paint (f.Draw if nil) on a recorder and returns
// the texts it drew and the actions.
func recordTexts(f Figure, paint func(c draw.Canvas)) ([]drawnText, []recorder.Action) {
	if paint == nil {
		paint = f.Draw
	}
	w, h := f.Size()
	rec := &recorder.Canvas{}
	paint(draw.NewCanvas(rec, w, h))
	// The current transform: x' = a x + b y + e, y' = c x + d y + f.
	type affine struct{ a, b, c, d, e, f float64 }
	cur := affine{a: 1, d: 1}
	var stack []affine
	apply := func(m affine, p vg.Point) vg.Point {
		x, y := float64(p.X), float64(p.Y)
		return vg.Point{X: vg.Length(m.a*x + m.b*y + m.e), Y: vg.Length(m.c*x + m.d*y + m.f)}
	}
	var texts []drawnText
	for _, act := range rec.Actions {
		switch a := act.(type) {
		case *recorder.Push:
			stack = append(stack, cur)
		case *recorder.Pop:
			cur, stack = stack[len(stack)-1], stack[:len(stack)-1]
		case *recorder.Translate:
			cur.e += cur.a*float64(a.Point.X) + cur.b*float64(a.Point.Y)
			cur.f += cur.c*float64(a.Point.X) + cur.d*float64(a.Point.Y)
		case *recorder.Rotate:
			s, c := math.Sincos(a.Angle)
			cur = affine{a: cur.a*c + cur.b*s, b: -cur.a*s + cur.b*c, c: cur.c*c + cur.d*s, d: -cur.c*s + cur.d*c, e: cur.e, f: cur.f}
		case *recorder.Scale:
			cur.a, cur.c = cur.a*a.X, cur.c*a.X
			cur.b, cur.d = cur.b*a.Y, cur.d*a.Y
		case *recorder.FillString:
			fc := font.DefaultCache.Lookup(a.Font, a.Size)
			e := fc.Extents()
			p0 := apply(cur, vg.Point{X: a.Point.X, Y: a.Point.Y - e.Descent})
			p1 := apply(cur, vg.Point{X: a.Point.X + fc.Width(a.String), Y: a.Point.Y + e.Ascent})
			texts = append(texts, drawnText{text: a.String, size: a.Size, box: vg.Rectangle{
				Min: vg.Point{X: min(p0.X, p1.X), Y: min(p0.Y, p1.Y)}, Max: vg.Point{X: max(p0.X, p1.X), Y: max(p0.Y, p1.Y)}}})
		}
	}
	return texts, rec.Actions
}

// TestFigurePartsFit cuts every figure of several panels into the parts a
// page shows apart (stacked on a phone) and checks them: the panels' parts
// tile the grid (rows equally tall, columns equally wide, no overlap),
// every part draws its panel's title and keeps every text inside itself,
// and the legend part is one column wide.
func TestFigurePartsFit(t *testing.T) {
	split := 0
	for name, f := range allFigures(t) {
		sp, ok := f.(splitter)
		if !ok {
			continue
		}
		split++
		cols, parts := sp.parts()
		w, _ := f.Size()
		var grid []*part
		for i, p := range parts {
			pw, ph := p.Size()
			if pw <= 0 || ph <= 0 {
				t.Fatalf("%s: part %d is %v × %v", name, i, pw, ph)
			}
			texts, _ := recordTexts(p, nil)
			if len(texts) == 0 {
				t.Errorf("%s: part %d draws no text", name, i)
			}
			for _, tx := range texts {
				if !inside(tx.box, vg.Rectangle{Max: vg.Point{X: pw, Y: ph}}) {
					t.Errorf("%s: part %d (%v × %v): text %q at %v outside", name, i, pw, ph, tx.text, tx.box)
				}
			}
			if p.wide {
				if i == 0 && math.Abs(float64(pw-w/vg.Length(cols))) > 1e-9 {
					t.Errorf("%s: legend part %v wide, a column is %v", name, pw, w/vg.Length(cols))
				}
				continue
			}
			grid = append(grid, p)
			// The first line of the panel's title is drawn in its part.
			var title string
			for _, tx := range texts {
				if strings.HasPrefix(tx.text, "(") || strings.Contains(tx.text, "better") || strings.Contains(tx.text, "kernel") || strings.Contains(tx.text, "binned") || strings.Contains(tx.text, "LOO") || strings.Contains(tx.text, "against h") {
					title = tx.text
				}
			}
			if title == "" {
				t.Errorf("%s: part %d draws no title", name, i)
			}
		}
		for i, a := range grid {
			for j, b := range grid[i+1:] {
				if overlaps(a.rect, b.rect, 1e-9) {
					t.Errorf("%s: parts %d and %d overlap: %v %v", name, i, i+1+j, a.rect, b.rect)
				}
			}
			as, bs := a.rect.Size(), grid[0].rect.Size()
			if math.Abs(float64(as.X-bs.X)) > 1e-9 || math.Abs(float64(as.Y-bs.Y)) > 1e-9 {
				t.Errorf("%s: part %d is %v, part 0 %v", name, i, as, bs)
			}
		}
	}
	if split < 6 {
		t.Errorf("%d figures of several panels", split)
	}
}

// allFigures builds every figure, large and compact, for K = 3 and 10.
func allFigures(t *testing.T) map[string]Figure {
	t.Helper()
	out := map[string]Figure{}
	for _, k := range []int{3, 10} {
		probs, labels := synthetic(400, k, "", uint64(k))
		for i, f := range figures(t, probs, labels, k) {
			out[fmt.Sprintf("K=%d %T #%d", k, f, i)] = f
		}
	}
	probs, labels := synthetic(300, 10, "", 2)
	sc, oc := metric.TopR(probs, labels, 10, 1)
	long, err := NewKSGraph("after spline recalibration (fitted on some/very/long/path/to/a_validation_file_with_a_long_name.npy)", sc, oc, nil)
	if err != nil {
		t.Fatal(err)
	}
	out["KS with a long label"] = &KSGraphs{Title: "top-1", Graphs: []*KSGraph{long}}
	r, err := NewReliability(context.Background(), sc, oc, nil, ReliabilityOptions{Resamples: 20, Compact: true, Title: "class 9 (a long class name)", ScoreLabel: "p_9"})
	if err != nil {
		t.Fatal(err)
	}
	r.BandwidthEdge = 1 // the longest legend entry
	out["compact at edge"] = r
	return out
}

// TestLegendsDoNotOverlap draws every figure and checks its geometry: the
// legend entries of each heading (and of the figure-wide legend) are
// disjoint, lie outside every data area and every title line, and inside
// the figure; and no two texts the figure draws overprint each other or
// leave the figure.
func TestLegendsDoNotOverlap(t *testing.T) {
	for name, f := range allFigures(t) {
		w, h := f.Size()
		page := vg.Rectangle{Max: vg.Point{X: w, Y: h}}
		lay, texts, _ := record(t, f)
		var data, titles []vg.Rectangle
		var headings []headingLayout
		if len(lay.Legend.Thumbs) > 0 {
			headings = append(headings, lay.Legend)
		}
		for _, g := range lay.Grids {
			data = append(data, g.DataAreas()...)
			for _, row := range g.Headings {
				for _, hd := range row {
					headings = append(headings, hd)
					for _, tl := range hd.Title {
						titles = append(titles, tl.Box)
					}
				}
			}
		}
		if len(data) == 0 {
			t.Fatalf("%s: no data area", name)
		}
		var legends []vg.Rectangle
		for _, hd := range headings {
			for i := range hd.Thumbs {
				legends = append(legends, hd.EntryBox(i))
			}
		}
		for i, a := range legends {
			if !inside(a, page) {
				t.Errorf("%s: legend entry %v outside the figure %v", name, a, page)
			}
			for _, b := range legends[i+1:] {
				if overlaps(a, b, 0) {
					t.Errorf("%s: legend entries %v and %v overlap", name, a, b)
				}
			}
			for _, d := range data {
				if overlaps(a, d, 0) {
					t.Errorf("%s: legend entry %v inside the data area %v", name, a, d)
				}
			}
			for _, tl := range titles {
				if overlaps(a, tl, 0) {
					t.Errorf("%s: legend entry %v over a title line %v", name, a, tl)
				}
			}
		}
		if len(texts) < 10 {
			t.Fatalf("%s: %d texts drawn", name, len(texts))
		}
		for i, a := range texts {
			if !inside(a.box, page) {
				t.Errorf("%s: text %q at %v leaves the figure %v", name, a.text, a.box, page)
			}
			for _, b := range texts[i+1:] {
				if overlaps(a.box, b.box, 0.5) {
					t.Errorf("%s: texts %q %v and %q %v overprint", name, a.text, a.box, b.text, b.box)
				}
			}
		}
	}
}

// inside reports whether a lies within b (0.01 pt slack).
func inside(a, b vg.Rectangle) bool {
	const e = 0.01
	return a.Min.X >= b.Min.X-e && a.Min.Y >= b.Min.Y-e && a.Max.X <= b.Max.X+e && a.Max.Y <= b.Max.Y+e
}

// TestTitlesWrap checks that a title wider than its panel wraps into
// lines that fit (a long path is cut after a '/'), and that the drawn KS
// title keeps every line inside its tile.
func TestTitlesWrap(t *testing.T) {
	lines := wrap("(a) top-1 after spline recalibration (fitted on cifar10_resnet110-brier/val_logits.npy), KS 0.26%", titleSize, 150)
	if len(lines) < 3 {
		t.Fatalf("wrapped into %d lines: %q", len(lines), lines)
	}
	for _, l := range lines {
		if w := face(titleSize).Width(l); w > 150 {
			t.Errorf("line %q is %v wide", l, w)
		}
	}
	nospace := func(s string) string { return strings.ReplaceAll(s, " ", "") }
	if got := nospace(strings.Join(lines, "")); got != nospace("(a) top-1 after spline recalibration (fitted on cifar10_resnet110-brier/val_logits.npy), KS 0.26%") {
		t.Errorf("characters lost or reordered: %q", got)
	}
	cut := wrap("(fitted on cifar10_resnet110-brier/val_logits.npy)", 10, 120)
	if len(cut) != 3 || cut[0] != "(fitted on" || cut[1] != "cifar10_resnet110-brier/" || cut[2] != "val_logits.npy)" {
		t.Errorf("a long path is cut into %q", cut)
	}
	probs, labels := synthetic(300, 10, "", 2)
	sc, oc := metric.TopR(probs, labels, 10, 1)
	g, err := NewKSGraph("after spline recalibration (fitted on a/long/path/val_logits.npy)", sc, oc, nil)
	if err != nil {
		t.Fatal(err)
	}
	lay, _, _ := record(t, &KSGraphs{Title: "top-1", Graphs: []*KSGraph{g}})
	hd := lay.Grids[0].Headings[0][0]
	if len(hd.Title) < 2 {
		t.Errorf("the long KS title is %d line(s)", len(hd.Title))
	}
	for _, tl := range hd.Title {
		if tl.Box.Min.X < hd.X0 || tl.Box.Max.X > hd.X1 {
			t.Errorf("title line %q at %v leaves its column [%v, %v]", tl.Text, tl.Box, hd.X0, hd.X1)
		}
	}
	if next := lay.Grids[0].Headings[0][1]; hd.X1 >= next.X0 {
		t.Errorf("columns [%v, %v] and [%v, %v] overlap", hd.X0, hd.X1, next.X0, next.X1)
	}
}

// svgFontFamily matches the font-family of an SVG text.
var svgFontFamily = regexp.MustCompile(`font-family:([^;"]*)`)

// TestFiguresUseSansFont renders every figure to SVG: every text is in
// Liberation Sans (no serif font), inline figures name the metric-compatible
// fallbacks, every text is at least 7 points (legends of the small
// multiples at least 8.5), and the HTML page embeds the font.
func TestFiguresUseSansFont(t *testing.T) {
	for name, f := range allFigures(t) {
		var buf bytes.Buffer
		if err := Write(&buf, f, "svg"); err != nil {
			t.Fatal(err)
		}
		fams := svgFontFamily.FindAllStringSubmatch(buf.String(), -1)
		if len(fams) < 10 {
			t.Fatalf("%s: %d texts in the SVG", name, len(fams))
		}
		for _, m := range fams {
			if m[1] != "Liberation Sans" {
				t.Errorf("%s: font-family %q", name, m[1])
			}
		}
		if strings.Contains(strings.ToLower(buf.String()), "serif;") {
			t.Errorf("%s: the SVG names a serif font", name)
		}
		svg, err := InlineSVG(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range svgFontFamily.FindAllStringSubmatch(svg, -1) {
			if m[1] != "'Liberation Sans',Arial,Helvetica,sans-serif" {
				t.Errorf("%s: inline font-family %q", name, m[1])
			}
		}
		lay, texts, _ := record(t, f)
		for _, tx := range texts {
			if tx.size < 7 {
				t.Errorf("%s: %q at %v pt", name, tx.text, tx.size)
			}
		}
		for _, g := range lay.Grids {
			for _, row := range g.Headings {
				for _, hd := range row {
					for _, en := range hd.Entries {
						for _, line := range en {
							if line.Size < compactLegendSize {
								t.Errorf("%s: legend %q at %v pt", name, line.Text, line.Size)
							}
						}
					}
				}
			}
		}
	}
	doc := &Document{Title: "t", Sections: []Section{{ID: "s", Title: "S", Figures: []Captioned{{Figure: &Comparison{
		Methods: []string{"a"}, Metrics: []ComparisonMetric{{Name: "m"}}, Values: [][]float64{{1}}}}}}}}
	var buf bytes.Buffer
	if err := doc.WriteHTML(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `@font-face { font-family: "Liberation Sans"; font-style: normal; font-weight: normal; src: url(data:font/ttf;base64,`) {
		t.Error("the page does not embed Liberation Sans")
	}
}

// TestComparisonAxisStartsNearData checks that close values (94.36 and
// 94.52 % accuracy) get an axis starting just below them, labelled as
// such, with bars whose lengths differ visibly, and that spread values
// keep an axis from 0.
func TestComparisonAxisStartsNearData(t *testing.T) {
	cm := &Comparison{Methods: []string{"uncalibrated", "temperature", "isotonic"},
		Metrics: []ComparisonMetric{{Name: "accuracy", Scale: 100, Unit: "%", Higher: true}, {Name: "ECE", Scale: 100, Unit: "%"}},
		Values:  [][]float64{{0.9452, 0.025}, {0.9436, 0.0001}, {0.9440, 0.012}}}
	lo, hi, zoomed := cm.Axis(0)
	if !zoomed || lo < 94.3 || lo >= 94.36 || hi <= 94.52 || hi > 94.6 {
		t.Errorf("accuracy axis [%v, %v], zoomed %v", lo, hi, zoomed)
	}
	// Bars run from the axis start: 94.52 is at least twice as long as 94.36.
	if r := (94.52 - lo) / (94.36 - lo); r < 2 {
		t.Errorf("bar lengths 94.52 : 94.36 = %v", r)
	}
	lo, hi, zoomed = cm.Axis(1)
	if zoomed || lo != 0 || hi < 2.5 {
		t.Errorf("ECE axis [%v, %v], zoomed %v", lo, hi, zoomed)
	}
	ps := cm.panels()
	acc, ece := ps[0][0].plot, ps[0][1].plot
	if acc.X.Min < 94.3 || acc.X.Min >= 94.36 || !strings.Contains(acc.X.Label.Text, "axis starts at 94.") || !strings.Contains(acc.X.Label.Text, "not at 0") {
		t.Errorf("accuracy panel: X from %v, label %q", acc.X.Min, acc.X.Label.Text)
	}
	if ece.X.Min != 0 || ece.X.Label.Text != "" {
		t.Errorf("ECE panel: X from %v, label %q", ece.X.Min, ece.X.Label.Text)
	}
	// Equal values: a small range around them, not [0, v].
	eq := &Comparison{Methods: []string{"a", "b"}, Metrics: []ComparisonMetric{{Name: "NLL"}}, Values: [][]float64{{0.2}, {0.2}}}
	if lo, hi, zoomed := eq.Axis(0); !zoomed || lo <= 0.19 || hi <= 0.2 || hi > 0.21 {
		t.Errorf("equal values: axis [%v, %v], zoomed %v", lo, hi, zoomed)
	}
}

// TestComparisonTieNotBest checks that only a strict best is green: a tie
// for the best value (the uncalibrated row among them) marks nothing, a
// strict best is marked even when it is the uncalibrated row, and failed
// methods are ignored.
func TestComparisonTieNotBest(t *testing.T) {
	nan := math.NaN()
	cm := &Comparison{Methods: []string{"uncalibrated", "temperature", "isotonic", "broken"},
		Metrics: []ComparisonMetric{{Name: "accuracy", Higher: true}, {Name: "NLL"}, {Name: "KS"}, {Name: "ECE"}},
		Values: [][]float64{
			{0.9452, 0.30, 0.010, 0.02},
			{0.9452, 0.25, 0.020, 0.01},
			{0.9436, 0.25, 0.030, 0.03},
			{nan, nan, nan, nan},
		}}
	want := []int{-1, -1, 0, 1}
	for j, w := range want {
		if got := cm.StrictBest(j); got != w {
			t.Errorf("metric %s: best %d, want %d", cm.Metrics[j].Name, got, w)
		}
	}
	greens := 0
	for m := range cm.Metrics {
		for k, c := range cm.colors(m) {
			isGreen := c == color.Color(colGreen)
			if isGreen {
				greens++
			}
			if isGreen != (k == want[m]) {
				t.Errorf("metric %s method %s: colour %v", cm.Metrics[m].Name, cm.Methods[k], c)
			}
			if k == 0 && !isGreen && c != color.Color(colGrey) {
				t.Errorf("metric %s: uncalibrated colour %v", cm.Metrics[m].Name, c)
			}
		}
	}
	if greens != 2 {
		t.Errorf("%d green bars, want 2", greens)
	}
	// Ties within 1e-12 of the value (rounding) are ties.
	cm = &Comparison{Methods: []string{"u", "a", "b"}, Metrics: []ComparisonMetric{{Name: "NLL"}}, Values: [][]float64{{0.3}, {0.1 + 0.2}, {0.30000001}}}
	if got := cm.StrictBest(0); got != -1 {
		t.Errorf("0.3 against 0.1 + 0.2: best %d", got)
	}
}

// TestPerClassCurveBand checks the kernel curve's bootstrap band of a
// per-class (compact) diagram: the band holds the curve, is narrower where
// samples are many, is drawn with a legend entry, and is reproducible from
// the seed (the band's statistics are tested in kde).
func TestPerClassCurveBand(t *testing.T) {
	probs, labels := synthetic(2000, 10, "", 11)
	sc, oc := metric.ClassColumn(probs, labels, 10, 3)
	r, err := NewReliability(context.Background(), sc, oc, nil, ReliabilityOptions{Compact: true, Seed: 5, Resamples: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.BandX) != 51 || len(r.CurveLo) != 51 || len(r.CurveHi) != 51 || r.BandX[0] != r.CurveX[0] || r.BandX[50] != r.CurveX[100] {
		t.Fatalf("band of %d points (%d, %d)", len(r.BandX), len(r.CurveLo), len(r.CurveHi))
	}
	holds, defined := 0, 0
	for q := range r.CurveLo {
		if !mathx.Finite(r.CurveLo[q], r.CurveHi[q]) {
			continue
		}
		defined++
		if r.CurveLo[q] > r.CurveHi[q] {
			t.Errorf("point %d: band [%v, %v]", q, r.CurveLo[q], r.CurveHi[q])
		}
		if y := r.CurveY[2*q]; r.CurveLo[q]-1e-9 <= y && y <= r.CurveHi[q]+1e-9 {
			holds++
		}
	}
	if defined < 45 || holds < defined*9/10 {
		t.Errorf("band defined at %d points, holds the curve at %d", defined, holds)
	}
	// Near 0 (most samples) the band is much narrower than at 0.5.
	w0 := r.CurveHi[1] - r.CurveLo[1]
	wm := r.CurveHi[25] - r.CurveLo[25]
	if !(w0 < wm/3) {
		t.Errorf("band width %v near 0, %v in the middle", w0, wm)
	}
	again, err := NewReliability(context.Background(), sc, oc, nil, ReliabilityOptions{Compact: true, Seed: 5, Resamples: 100})
	if err != nil {
		t.Fatal(err)
	}
	other, err := NewReliability(context.Background(), sc, oc, nil, ReliabilityOptions{Compact: true, Seed: 6, Resamples: 100})
	if err != nil {
		t.Fatal(err)
	}
	same, diff := true, false
	for q := range r.CurveLo {
		if !(r.CurveLo[q] == again.CurveLo[q] || math.IsNaN(r.CurveLo[q]) && math.IsNaN(again.CurveLo[q])) {
			same = false
		}
		if r.CurveHi[q] != other.CurveHi[q] && mathx.Finite(r.CurveHi[q]) {
			diff = true
		}
	}
	if !same || !diff {
		t.Errorf("same seed reproduces: %v; another seed differs: %v", same, diff)
	}
	pn := r.panel()
	found := false
	for _, e := range pn.entries {
		found = found || strings.Contains(e.text, "95% band (curve)")
	}
	if !found {
		t.Errorf("no legend entry for the curve's band in %v", pn.entries)
	}
	if none, err := NewReliability(context.Background(), sc, oc, nil, ReliabilityOptions{Compact: true, Resamples: -1}); err != nil || none.CurveLo != nil {
		t.Errorf("Resamples -1: band %v, err %v", none.CurveLo, err)
	}
}

// TestBandwidthAtEndWarned checks that a cross-validated bandwidth at an
// end of its range is flagged in the figure (legend) and worded for the
// caption, for the reliability curve, the simplex kernel and the
// bandwidth view, and that a bandwidth inside its range or given by the
// caller is not.
func TestBandwidthAtEndWarned(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	n := 3000
	flat, flatY := make([]float64, n), make([]float64, n)
	step, stepY := make([]float64, n), make([]float64, n)
	for i := 0; i < n; i++ {
		// Outcomes independent of the score: the smoothest curve wins.
		flat[i] = rng.Float64()
		if rng.Float64() < 0.3 {
			flatY[i] = 1
		}
		// A sharp step at 0.5: the narrowest kernel wins.
		step[i] = rng.Float64()
		if step[i] > 0.5 {
			stepY[i] = 1
		}
	}
	g := kde.RegressionGrid()
	r, err := NewReliability(context.Background(), flat, flatY, nil, ReliabilityOptions{Resamples: 10, Compact: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.Bandwidth != g[len(g)-1] || r.BandwidthEdge != 1 || !strings.Contains(r.BandwidthWarning(), "largest of its cross-validation range") {
		t.Errorf("flat: h %v, edge %d, warning %q", r.Bandwidth, r.BandwidthEdge, r.BandwidthWarning())
	}
	if !legendHas(r.panel(), "h = 0.1, max!") {
		t.Errorf("flat: legend %v", r.panel().entries)
	}
	r, err = NewReliability(context.Background(), step, stepY, nil, ReliabilityOptions{Resamples: 10})
	if err != nil {
		t.Fatal(err)
	}
	if r.Bandwidth != g[0] || r.BandwidthEdge != -1 || !strings.Contains(r.BandwidthWarning(), "smallest of its cross-validation range") {
		t.Errorf("step: h %v, edge %d, warning %q", r.Bandwidth, r.BandwidthEdge, r.BandwidthWarning())
	}
	if !legendHas(r.panel(), "smallest tried!") {
		t.Errorf("step: legend %v", r.panel().entries)
	}
	r, err = NewReliability(context.Background(), flat, flatY, nil, ReliabilityOptions{Resamples: 10, Bandwidth: g[len(g)-1]})
	if err != nil || r.BandwidthEdge != 0 || r.BandwidthWarning() != "" {
		t.Errorf("given bandwidth: edge %d, warning %q, err %v", r.BandwidthEdge, r.BandwidthWarning(), err)
	}
	mid := (&Reliability{Bandwidth: g[5], BandwidthEdge: kde.GridEdge(g, g[5])}).BandwidthWarning()
	if mid != "" {
		t.Errorf("inner bandwidth warned: %q", mid)
	}
	// The simplex kernel uses the same range.
	sx := &Simplex{Bandwidth: g[len(g)-1], KernelEdge: 1, MinCount: 10, Binned: []SimplexCell{{Count: 50}}}
	if w := sx.Warning(); !strings.Contains(w, "the kernel field, h = 0.1, is the largest") {
		t.Errorf("simplex warning %q", w)
	}
	// The bandwidth view warns at either end of the LOO grid.
	grid := kde.DefaultGrid()
	for _, c := range []struct {
		h    float64
		edge int
		want string
	}{{grid[0], -1, "smallest of the grid"}, {grid[len(grid)-1], 1, "largest of the grid"}, {grid[len(grid)/2], 0, ""}} {
		v := &BandwidthView{Selection: &kde.Curve{Grid: grid, Bandwidth: c.h}}
		if v.Edge() != c.edge || !strings.Contains(v.Warning(), c.want) || (c.want == "") != (v.Warning() == "") {
			t.Errorf("bandwidth view at h = %v: edge %d, warning %q", c.h, v.Edge(), v.Warning())
		}
	}
}

// legendHas reports whether a legend entry of pn contains s.
func legendHas(pn *panel, s string) bool {
	for _, e := range pn.entries {
		if strings.Contains(e.text, s) {
			return true
		}
	}
	return false
}

// TestSimplexCounts checks that the binned panel prints the count of every
// non-empty bin inside its triangle, hatches (leaves uncoloured) the bins
// under MinCount, keeps them out of the colour scale's range, and that the
// caption warning counts the empty and sparse bins.
func TestSimplexCounts(t *testing.T) {
	probs, labels := synthetic(300, 3, "", 21)
	sx, err := NewSimplex(context.Background(), probs, labels, 3, nil, SimplexOptions{Bins: 10, Grid: 8, Points: 50})
	if err != nil {
		t.Fatal(err)
	}
	if sx.MinCount != 10 {
		t.Fatalf("MinCount %d", sx.MinCount)
	}
	empty, sparse := 0, 0
	for _, c := range sx.Binned {
		if c.Count == 0 {
			empty++
		} else if c.Count < 10 {
			sparse++
		}
	}
	if e, s := sx.SparseBins(); e != empty || s != sparse || empty == 0 || sparse == 0 {
		t.Fatalf("SparseBins %d, %d; direct %d, %d", e, s, empty, sparse)
	}
	want := fmt.Sprintf("of the 100 bins, %d are empty (grey) and %d hold fewer than 10 samples (hatched, no colour)", empty, sparse)
	if w := sx.Warning(); !strings.Contains(w, want) {
		t.Errorf("warning %q lacks %q", w, want)
	}
	lay, texts, actions := record(t, sx)
	binned := lay.Grids[0].plots[0][0]
	da := lay.Grids[0].DataAreas()[0]
	tx := func(x float64) vg.Length {
		return da.Min.X + vg.Length((x-binned.X.Min)/(binned.X.Max-binned.X.Min))*(da.Max.X-da.Min.X)
	}
	ty := func(y float64) vg.Length {
		return da.Min.Y + vg.Length((y-binned.Y.Min)/(binned.Y.Max-binned.Y.Min))*(da.Max.Y-da.Min.Y)
	}
	for i, c := range sx.Binned {
		if c.Count == 0 {
			continue
		}
		var cx, cy vg.Length
		for _, corner := range c.Corners {
			x, y := cart(corner)
			cx, cy = cx+tx(x)/3, cy+ty(y)/3
		}
		found := false
		for _, d := range texts {
			if d.text == fmt.Sprint(c.Count) && d.size == cellCountSize && d.box.Min.X < cx && cx < d.box.Max.X && d.box.Min.Y < cy && cy < d.box.Max.Y {
				found = true
			}
		}
		if !found {
			t.Errorf("bin %d: count %d not printed at its centre (%v, %v)", i, c.Count, cx, cy)
		}
	}
	// Hatched bins are filled with the paper colour (and so is the
	// legend's hatch thumbnail).
	papers := 0
	var last color.Color
	for _, a := range actions {
		switch a := a.(type) {
		case *recorder.SetColor:
			last = a.Color
		case *recorder.Fill:
			if last == color.Color(colPaper) {
				papers++
			}
		}
	}
	if papers != sparse+1 {
		t.Errorf("%d paper-coloured fills, want %d sparse bins + 1 thumbnail", papers, sparse)
	}
	if !legendHas(&panel{entries: lay.Legend.entries}, "fewer than 10 samples") {
		t.Errorf("legend %v does not explain the hatching", lay.Legend.entries)
	}
}

// TestTablesStackOnPhone checks the page's table CSS and markup: tables
// take the width of their column and wrap text (nothing is kept on one
// line but numbers), and below 760 px each row becomes a card whose cells
// are labelled with their column header (and the panels of a figure
// stack); the data summary never widens the page.
func TestTablesStackOnPhone(t *testing.T) {
	doc := &Document{Title: "t", Metrics: &Table{Header: []string{"metric", "value", "interval", "settings"},
		Rows: [][]string{{"ece_kde", "0.105076", "[0.098402, 0.112248]", "h=0.0007473 loo refined"}, {"brier", "0.0879", "-", "-"}}}}
	var buf bytes.Buffer
	if err := doc.WriteHTML(&buf); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	if strings.Contains(page, "max-content") {
		t.Error("a max-content column can widen the page")
	}
	for _, want := range []string{
		"table { border-collapse: collapse; width: 100%;",
		"overflow-wrap: break-word;",
		"td.num { text-align: right; white-space: nowrap; }",
		"@media (max-width: 760px) {",
		"table.stack, table.stack tbody, table.stack tr, table.stack td { display: block; width: 100%; }",
		"table.stack td::before { content: attr(data-label);",
		"table.stack td.empty { display: none; }",
		// The data summary's names wrap instead of widening the page.
		"dl.facts { display: grid; grid-template-columns: fit-content(16rem) minmax(0, 1fr);",
		// Figures of several panels stack on a phone.
		".parts { grid-template-columns: minmax(0, 1fr);",
		`<table class="stack">`,
		`<td data-label="metric">ece_kde</td>`,
		`<td data-label="value" class="num">0.105076</td>`,
		`<td data-label="interval" class="num">[0.098402, 0.112248]</td>`,
		`<td data-label="settings">h=0.0007473 loo refined</td>`,
		`<td data-label="interval" class="empty">-</td>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	// Only numbers, and the nav links, are kept on one line.
	if n := strings.Count(page, "nowrap"); n != 2 {
		t.Errorf("%d nowrap rules", n)
	}
	if strings.Contains(page, "position: sticky") {
		t.Error("sticky header")
	}
	long := newHTMLTable(&Table{Header: []string{"params"}, Rows: [][]string{{"W=[0.1,0.2,0.3,0.4,0.5,0.6,0.7]"}}})
	if c := long.Rows[0][0]; !c.Long || c.Num {
		t.Errorf("long cell %+v", c)
	}
}
