package report

import (
	"bytes"
	"context"
	"encoding/xml"
	"io"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/kde"
	"github.com/calib-dev/calib/metric"
	"github.com/calib-dev/calib/smooth"
)

// synthetic draws n predictions of K classes (softmax of N(0, 2^2)
// logits) with labels drawn from them; mode "all-correct" labels every
// sample with its arg max, "all-wrong" with the next class, "one-class"
// with class 0.
func synthetic(n, k int, mode string, seed uint64) ([]float64, []int) {
	rng := rand.New(rand.NewPCG(seed, 1))
	probs, labels := make([]float64, n*k), make([]int, n)
	z := make([]float64, k)
	for i := 0; i < n; i++ {
		for m := range z {
			z[m] = 2 * rng.NormFloat64()
		}
		p := probs[i*k : (i+1)*k]
		data.Softmax(p, z)
		am := 0
		for m, v := range p {
			if v > p[am] {
				am = m
			}
		}
		switch mode {
		case "all-correct":
			labels[i] = am
		case "all-wrong":
			labels[i] = (am + 1) % k
		case "one-class":
			labels[i] = 0
		default:
			u, acc := rng.Float64(), 0.0
			labels[i] = k - 1
			for m, v := range p {
				if acc += v; u < acc {
					labels[i] = m
					break
				}
			}
		}
	}
	return probs, labels
}

// figures builds every figure of a set.
func figures(t *testing.T, probs []float64, labels []int, k int) []Figure {
	t.Helper()
	var fs []Figure
	sc, oc := metric.TopR(probs, labels, k, 1)
	r, err := NewReliability(context.Background(), sc, oc, nil, ReliabilityOptions{Resamples: 50})
	if err != nil {
		t.Fatalf("reliability: %v", err)
	}
	cs, co := metric.ClassColumn(probs, labels, k, k-1)
	rc, err := NewReliability(context.Background(), cs, co, nil, ReliabilityOptions{Resamples: 50, Compact: true, Bins: metric.BinOptions{Binning: metric.EqualMass}})
	if err != nil {
		t.Fatalf("class reliability: %v", err)
	}
	g, err := NewKSGraph("before", sc, oc, nil)
	if err != nil {
		t.Fatalf("KS graph: %v", err)
	}
	sr, err := NewSmoothReliability(context.Background(), sc, oc, nil, SmoothReliabilityOptions{Curve: smooth.CurveOptions{Resamples: 30}})
	if err != nil {
		t.Fatalf("smooth reliability: %v", err)
	}
	src, err := NewSmoothReliability(context.Background(), cs, co, nil, SmoothReliabilityOptions{Curve: smooth.CurveOptions{Resamples: 30}, Compact: true, Title: "class 9 (a long class name), smooth", ScoreLabel: "p_9"})
	if err != nil {
		t.Fatalf("class smooth reliability: %v", err)
	}
	bv, err := NewBandwidthView(context.Background(), kde.Canonical, probs, labels, k, nil, BandwidthViewOptions{Points: 4})
	if err != nil {
		t.Fatalf("bandwidth view: %v", err)
	}
	cm := &Comparison{Methods: []string{"uncalibrated", "a", "b"},
		Metrics: []ComparisonMetric{{Name: "accuracy", Scale: 100, Unit: "%", Higher: true}, {Name: "NLL"}, {Name: "KS", Scale: 100, Unit: "%"}, {Name: "ECE"}},
		Values:  [][]float64{{0.9, 0.3, 0.02, 0.03}, {0.9, 0.25, 0.01, math.NaN()}, {0.89, 0.26, 0.015, 0.01}}}
	fs = append(fs, r, rc, sr, src, &KSGraphs{Title: "top-1", Graphs: []*KSGraph{g, g}}, bv, cm)
	if k >= 3 {
		sx, err := NewSimplex(context.Background(), probs, labels, k, nil, SimplexOptions{Classes: [2]int{k - 1, 0}, Grid: 12, Points: 100})
		if err != nil {
			t.Fatalf("simplex: %v", err)
		}
		fs = append(fs, sx)
	}
	return fs
}

// TestFiguresRender renders every figure to SVG and PNG (PDF once) for
// K = 2, 3, 10, 100 and degenerate labels, and checks that each output
// starts as its format should.
func TestFiguresRender(t *testing.T) {
	cases := []struct {
		n, k int
		mode string
	}{{300, 2, ""}, {300, 3, ""}, {300, 10, ""}, {200, 100, ""}, {200, 3, "all-correct"}, {200, 10, "all-wrong"}, {200, 10, "one-class"}}
	for ci, c := range cases {
		probs, labels := synthetic(c.n, c.k, c.mode, uint64(ci))
		for fi, f := range figures(t, probs, labels, c.k) {
			formats := []string{"svg", "png"}
			if ci == 0 {
				formats = append(formats, "pdf")
			}
			for _, format := range formats {
				var buf bytes.Buffer
				if err := Write(&buf, f, format); err != nil {
					t.Fatalf("K %d %s figure %d (%T) %s: %v", c.k, c.mode, fi, f, format, err)
				}
				magic := map[string]string{"svg": "<?xml", "png": "\x89PNG", "pdf": "%PDF"}[format]
				if !bytes.HasPrefix(buf.Bytes(), []byte(magic)) || buf.Len() < 1000 {
					t.Errorf("K %d %s figure %d (%T) %s: %d bytes starting %q", c.k, c.mode, fi, f, format, buf.Len(), buf.Bytes()[:min(8, buf.Len())])
				}
			}
		}
	}
	if err := Write(io.Discard, &Comparison{}, "gif"); err == nil || !strings.Contains(err.Error(), "svg, png, pdf") {
		t.Errorf("unknown format: %v", err)
	}
}

// TestReliabilityValues checks the diagram's numbers: the bins agree with
// metric.BinScores, the bootstrap band holds the bin accuracy, and on
// labels drawn from the scores the kernel curve stays near the diagonal.
func TestReliabilityValues(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	n := 4000
	s, o := make([]float64, n), make([]float64, n)
	for i := range s {
		s[i] = 0.1 + 0.8*rng.Float64()
		if rng.Float64() < s[i] {
			o[i] = 1
		}
	}
	r, err := NewReliability(context.Background(), s, o, nil, ReliabilityOptions{Bins: metric.BinOptions{Bins: 10}})
	if err != nil {
		t.Fatal(err)
	}
	bs, err := metric.BinScores(s, o, nil, metric.BinOptions{Bins: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Bins) != 10 || math.Abs(r.ECE-bs.ECE(1)) > 1e-15 {
		t.Fatalf("%d bins, ECE %v (metric %v)", len(r.Bins), r.ECE, bs.ECE(1))
	}
	for b, bin := range r.Bins {
		if bin.Count != bs.Count[b] || bin.Freq != bs.Freq[b] {
			t.Errorf("bin %d: %+v, metric count %d freq %v", b, bin, bs.Count[b], bs.Freq[b])
		}
		if bin.Count > 0 && !(bin.BandLo <= bin.Freq && bin.Freq <= bin.BandHi && bin.BandHi-bin.BandLo < 0.2) {
			t.Errorf("bin %d: band [%v, %v] around %v", b, bin.BandLo, bin.BandHi, bin.Freq)
		}
	}
	worst := 0.0
	for i, x := range r.CurveX {
		if x > 0.2 && x < 0.8 {
			worst = math.Max(worst, math.Abs(r.CurveY[i]-x))
		}
	}
	t.Logf("kernel curve h = %.3g, largest |r(c) - c| on [0.2, 0.8]: %.3f", r.Bandwidth, worst)
	if worst > 0.08 {
		t.Errorf("calibrated data: kernel curve departs from the diagonal by %v", worst)
	}
	if _, err := NewReliability(context.Background(), s[:1], o[:1], nil, ReliabilityOptions{}); err == nil {
		t.Error("one sample accepted")
	}
	if _, err := NewReliability(context.Background(), []float64{0.5, 0.6}, []float64{0.5, 1}, nil, ReliabilityOptions{}); err == nil {
		t.Error("outcome 0.5 accepted")
	}
}

// TestCellOf checks that every point falls in the triangle whose corners
// cellOf names (barycentric coordinates within the corners' range).
func TestCellOf(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	for _, b := range []int{1, 2, 5, 8} {
		tris := triangles(b)
		if len(tris) != b*b {
			t.Fatalf("b %d: %d triangles", b, len(tris))
		}
		pts := [][2]float64{{1, 0}, {0, 1}, {0, 0}, {0.5, 0.5}}
		for i := 0; i < 2000; i++ {
			pa := rng.Float64()
			pb := rng.Float64() * (1 - pa)
			pts = append(pts, [2]float64{pa, pb})
		}
		for _, p := range pts {
			c := cellOf(p[0], p[1], b)
			if c < 0 || c >= len(tris) || !inTriangle(p, tris[c]) {
				t.Fatalf("b %d: point %v in cell %d %v", b, p, c, tris[min(max(c, 0), len(tris)-1)])
			}
		}
	}
}

// inTriangle reports whether (pa, pb) lies in the triangle (1e-12 slack).
func inTriangle(p [2]float64, tri [3][3]float64) bool {
	x0, y0 := tri[0][0], tri[0][1]
	x1, y1 := tri[1][0], tri[1][1]
	x2, y2 := tri[2][0], tri[2][1]
	det := (y1-y2)*(x0-x2) + (x2-x1)*(y0-y2)
	l0 := ((y1-y2)*(p[0]-x2) + (x2-x1)*(p[1]-y2)) / det
	l1 := ((y2-y0)*(p[0]-x2) + (x0-x2)*(p[1]-y2)) / det
	l2 := 1 - l0 - l1
	const eps = 1e-12
	return l0 >= -eps && l1 >= -eps && l2 >= -eps
}

// TestSimplexBinned checks the binned field against a direct computation
// for one cell and the merging of classes into "other".
func TestSimplexBinned(t *testing.T) {
	probs, labels := synthetic(500, 5, "", 3)
	sx, err := NewSimplex(context.Background(), probs, labels, 5, nil, SimplexOptions{Classes: [2]int{2, 4}, Bins: 4, Grid: 6, Points: -1})
	if err != nil {
		t.Fatal(err)
	}
	if sx.Corners != [3]string{"class 2", "class 4", "other"} || len(sx.Points) != 0 || len(sx.Binned) != 16 || len(sx.Kernel) != 36 {
		t.Fatalf("corners %v, %d points, %d binned, %d kernel cells", sx.Corners, len(sx.Points), len(sx.Binned), len(sx.Kernel))
	}
	total := 0
	for c, cell := range sx.Binned {
		total += cell.Count
		var f, y [3]float64
		n := 0
		for i, l := range labels {
			pa, pb := probs[i*5+2], probs[i*5+4]
			if cellOf(pa, pb, 4) != c {
				continue
			}
			n++
			f[0] += pa
			f[1] += pb
			f[2] += 1 - pa - pb
			switch l {
			case 2:
				y[0]++
			case 4:
				y[1]++
			default:
				y[2]++
			}
		}
		if n != cell.Count {
			t.Fatalf("cell %d: count %d, direct %d", c, cell.Count, n)
		}
		if n == 0 {
			if !math.IsNaN(cell.Value) {
				t.Errorf("empty cell %d has value %v", c, cell.Value)
			}
			continue
		}
		want := 0.0
		for m := range f {
			want += math.Abs(y[m]-f[m]) / float64(n)
		}
		if math.Abs(cell.Value-want) > 1e-12 {
			t.Errorf("cell %d: %v, direct %v", c, cell.Value, want)
		}
	}
	if total != 500 {
		t.Errorf("binned counts sum to %d", total)
	}
	if _, err := NewSimplex(context.Background(), probs, labels, 5, nil, SimplexOptions{Classes: [2]int{1, 1}}); err == nil {
		t.Error("equal classes accepted")
	}
	p2, l2 := synthetic(50, 2, "", 1)
	if _, err := NewSimplex(context.Background(), p2, l2, 2, nil, SimplexOptions{}); err == nil {
		t.Error("K = 2 accepted")
	}
}

// TestDocumentHTML renders a document and checks that it parses (the
// standard library's XML decoder in HTML mode), holds one inline <svg> per
// figure, escapes text, and refers to no network host.
func TestDocumentHTML(t *testing.T) {
	probs, labels := synthetic(300, 3, "", 5)
	figs := figures(t, probs, labels, 3)
	var caps []Captioned
	for _, f := range figs {
		caps = append(caps, Captioned{Figure: f, Caption: "a <caption> & more"})
	}
	doc := &Document{Title: "T <1>", Summary: []Fact{{"samples", "300"}},
		Metrics:  &Table{Header: []string{"metric", "value"}, Rows: [][]string{{"ece", "0.1"}}},
		Sections: []Section{{ID: "figs", Title: "Figures", Figures: caps, Grid: true}}, Notes: []string{"see Gupta et al. 2021"}}
	var buf bytes.Buffer
	if err := doc.WriteHTML(&buf); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	dec := xml.NewDecoder(strings.NewReader(page))
	dec.Strict = false
	dec.AutoClose = xml.HTMLAutoClose
	dec.Entity = xml.HTMLEntity
	svgs := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("HTML does not parse: %v", err)
		}
		if el, ok := tok.(xml.StartElement); ok {
			if el.Name.Local == "svg" {
				svgs++
			}
			for _, a := range el.Attr {
				if (a.Name.Local == "src" || a.Name.Local == "href") && strings.Contains(a.Value, "://") {
					t.Errorf("<%s %s=%q>", el.Name.Local, a.Name.Local, a.Value)
				}
			}
		}
	}
	// A figure of several panels is one <svg> per part.
	want := 0
	for _, f := range figs {
		if sp, ok := f.(splitter); ok {
			_, ps := sp.parts()
			want += len(ps)
		} else {
			want++
		}
	}
	if svgs != want || want <= len(figs) {
		t.Errorf("%d inline <svg> for %d figures, want %d", svgs, len(figs), want)
	}
	for _, want := range []string{"T &lt;1&gt;", "a &lt;caption&gt; &amp; more", `<svg width="100%"`, `viewBox=`, `<div class="parts" style="--cols: 4">`, `<div class="wide"><svg`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	for _, bad := range []string{"<?xml", "<!--", "<caption>", `src="http`, `href="http`, "ZgotmplZ"} {
		if strings.Contains(page, bad) {
			t.Errorf("page contains %q", bad)
		}
	}
}
