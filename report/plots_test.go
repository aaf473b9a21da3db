package report

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/calib-dev/calib/convention"
	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/kde"
	"github.com/calib-dev/calib/metric"
	"github.com/calib-dev/calib/recal"
)

// set is a synthetic prediction set of n rows and k classes named file.
func set(t *testing.T, n, k int, seed uint64, file string) *data.Set {
	t.Helper()
	p, y := synthetic(n, k, "", seed)
	s, err := data.New(p, k, y, false, data.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.File = file
	return s
}

// TestPlot: every kind of PlotKinds draws a figure of the type its *Of
// function makes, and parses back from its name; an unknown name and
// kind, and compare without a validation set, are option errors; a
// figure's error names the file and the kind.
func TestPlot(t *testing.T) {
	s, val := set(t, 300, 3, 1, "test.csv"), set(t, 200, 3, 2, "val.csv")
	o := Options{Methods: []recal.Method{recal.MethodPlatt}}
	names := []string{"reliability", "smooth", "ks", "simplex", "bandwidth", "compare"}
	if kinds := PlotKinds(); len(kinds) != len(names) {
		t.Fatalf("%d kinds, want %d", len(kinds), len(names))
	}
	for i, kind := range PlotKinds() {
		if kind.String() != names[i] {
			t.Errorf("kind %d is %q, want %q", i, kind, names[i])
		}
		if k, err := ParsePlotKind(strings.ToUpper(names[i])); err != nil || k != kind {
			t.Errorf("ParsePlotKind(%q) = %v, %v", names[i], k, err)
		}
		fig, err := Plot(context.Background(), kind, s, val, o, PlotOptions{Class: -1, Notion: kde.TopLabel})
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		ok := false
		switch fig.(type) {
		case *Reliability:
			ok = kind == ReliabilityPlot
		case *SmoothReliability:
			ok = kind == SmoothReliabilityPlot
		case *KSGraphs:
			ok = kind == KSPlot
		case *Simplex:
			ok = kind == SimplexPlot
		case *BandwidthView:
			ok = kind == BandwidthPlot
		case *Comparison:
			ok = kind == ComparePlot
		}
		if !ok {
			t.Errorf("%s: figure %T", kind, fig)
		}
	}
	if _, err := ParsePlotKind("nope"); !errors.Is(err, ErrOptions) || !strings.HasSuffix(err.Error(), `unknown figure "nope" (valid: reliability, smooth, ks, simplex, bandwidth, compare)`) {
		t.Errorf("ParsePlotKind(nope): %v", err)
	}
	for _, c := range []struct {
		kind PlotKind
		want string
	}{{PlotKind(6), `unknown figure PlotKind(6) (valid: reliability, smooth, ks, simplex, bandwidth, compare)`}, {ComparePlot, "the compare figure needs a validation set"}} {
		if _, err := Plot(context.Background(), c.kind, s, nil, o, PlotOptions{}); !errors.Is(err, ErrOptions) || !strings.HasSuffix(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.kind, err, c.want)
		}
	}
	two := set(t, 100, 2, 3, "two.csv")
	if _, err := Plot(context.Background(), SimplexPlot, two, nil, o, PlotOptions{}); err == nil || !strings.HasPrefix(err.Error(), "two.csv: simplex: ") {
		t.Errorf("simplex of K = 2: %v", err)
	}
}

// TestText: the names and lists of calib report and plot parse into
// Options; each error names its option.
func TestText(t *testing.T) {
	var o Options
	if err := (Text{Methods: "platt, spline", Classes: "2,0", Binning: "equal_mass"}).Parse(&o); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(o.Methods, []recal.Method{recal.MethodPlatt, recal.MethodSpline}) || !slices.Equal(o.Figures.Classes, []int{2, 0}) || o.Figures.Bins.Binning != metric.EqualMass {
		t.Errorf("parsed %+v", o)
	}
	if o := (Options{}); (Text{Methods: ","}).Parse(&o) != nil || o.Methods != nil {
		t.Errorf("no methods: %v", o.Methods)
	}
	for _, c := range []struct {
		text Text
		want string
	}{
		{Text{Methods: "nope"}, `methods: unknown method "nope"`},
		{Text{Classes: "1"}, `classes "1": want two classes a,b`},
		{Text{Classes: "1,1"}, `classes "1,1": need two different classes`},
		{Text{Classes: "a,-1"}, `classes "a,-1": classes are integers >= 0`},
		{Text{Binning: "x"}, `binning: unknown binning "x"`},
	} {
		var o Options
		if err := c.text.Parse(&o); !errors.Is(err, ErrOptions) || !strings.HasPrefix(err.Error(), ErrOptions.Error()+": "+c.want) {
			t.Errorf("%+v: %v, want %q", c.text, err, c.want)
		}
	}
}

// TestSaveAtomic: Save and SaveHTML replace a file whole and leave no
// temporary file; a render error names the file.
func TestSaveAtomic(t *testing.T) {
	dir := t.TempDir()
	s := set(t, 200, 3, 4, "s.csv")
	fig, err := ReliabilityOf(context.Background(), s, -1, Options{})
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(dir, "r.svg")
	if err := Save(name, fig); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(name); !strings.Contains(string(b), "<svg") {
		t.Errorf("not an SVG: %.80s", b)
	}
	if err := Save(filepath.Join(dir, "r.gif"), fig); err == nil || !strings.HasPrefix(err.Error(), filepath.Join(dir, "r.gif")+": ") {
		t.Errorf("gif: %v", err)
	}
	doc, err := Build(context.Background(), s, nil, Options{NoIntervals: true, Figures: FigureOptions{PerClass: -1}})
	if err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(dir, "r.html")
	if err := doc.SaveHTML(page); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(page); !strings.HasPrefix(string(b), "<!DOCTYPE html>") {
		t.Errorf("not HTML: %.80s", b)
	}
	if es, _ := os.ReadDir(dir); len(es) != 2 {
		t.Errorf("%d files, want 2", len(es))
	}
}

// TestCurveData: the data of a reliability diagram under a convention are
// that convention's curve (its ECE and bins), every interval holds its
// frequency, a class >= K is an option error; the smooth diagram's data
// are its curve's.
func TestCurveData(t *testing.T) {
	s := set(t, 300, 3, 4, "test.csv")
	for _, n := range convention.Names() {
		if n == convention.Hendrycks {
			continue // 300 scores: 3 bins of 100, the last skipped
		}
		d, err := CurveDataOf(s, -1, n, 10, metric.EqualWidth)
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		cv, _, err := convention.CurveOf(n, s.Probs, s.Labels, s.K, s.Binary, nil, 10, metric.EqualWidth)
		if err != nil {
			t.Fatal(err)
		}
		if d.ECE != cv.ECE(1) || len(d.Bins) != len(cv.Bins) || d.Convention != n {
			t.Errorf("%s: ECE %v with %d bins, curve %v with %d", n, d.ECE, len(d.Bins), cv.ECE(1), len(cv.Bins))
		}
		for i, b := range d.Bins {
			if b.Count > 0 && !(b.Interval[0] <= b.Freq && b.Freq <= b.Interval[1]) {
				t.Errorf("%s bin %d: frequency %v outside %v", n, i, b.Freq, b.Interval)
			}
		}
	}
	if _, err := CurveDataOf(s, 3, convention.Calib, 10, metric.EqualWidth); !errors.Is(err, ErrOptions) {
		t.Errorf("class 3 of K = 3: %v", err)
	}
	sd, err := SmoothCurveDataOf(context.Background(), s, 1, Options{})
	if err != nil || sd.Notion != "class_wise" || *sd.Class != 1 || len(sd.T) != 200 || len(sd.Lo) != 200 {
		t.Errorf("smooth data: %+v, %v", sd, err)
	}
}

// TestSeriesColor: series i takes Palette's colour i, in turn past its
// end.
func TestSeriesColor(t *testing.T) {
	pal := Palette()
	for i := range 3 * len(pal) {
		if got, want := SeriesColor(i), pal[i%len(pal)]; got != want {
			t.Errorf("SeriesColor(%d) = %v, want %v", i, got, want)
		}
	}
}
