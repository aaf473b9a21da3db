package experiment

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image/color"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/calib-dev/calib/atomicfile"
	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/internal/mathx"
	"github.com/calib-dev/calib/report"
)

// Written lists the files an experiment wrote.
type Written []string

// Result is what every experiment returns (ConvergenceResult,
// SharpnessResult, BinnedVsKDEResult, RealWitnessResult, and
// training.Result): rows that encode as JSON, a table and figures.
type Result interface {
	WriteTable(w io.Writer) error
	Figures() map[string]report.Figure
}

// Save writes the outputs of the experiment name under dir (created if
// needed): name.txt (the table), name.json (r as indented JSON, with a
// "provenance" key holding prov when prov is not nil and r encodes as an
// object; where r does not encode, the table is kept and the error
// returned with it) and every figure as name-FIG.svg and name-FIG.png, in the order
// of the figures' names. Each file is written atomically (whole or not at
// all). It returns the files written.
func Save(dir, name string, r Result, prov *data.Provenance) (Written, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var out Written
	write := func(file string, data []byte) error {
		p := filepath.Join(dir, file)
		if err := atomicfile.WriteBytes(p, data); err != nil {
			return err
		}
		out = append(out, p)
		return nil
	}
	var tb bytes.Buffer
	if err := r.WriteTable(&tb); err != nil {
		return nil, err
	}
	if err := write(name+".txt", tb.Bytes()); err != nil {
		return nil, err
	}
	b, err := json.MarshalIndent(withProvenance(r, prov), "", " ")
	if err != nil {
		return out, fmt.Errorf("experiment: %s JSON: %w", name, err)
	}
	if err := write(name+".json", append(b, '\n')); err != nil {
		return nil, err
	}
	figs := r.Figures()
	for _, k := range slices.Sorted(maps.Keys(figs)) {
		for _, format := range []string{"svg", "png"} {
			var buf bytes.Buffer
			if err := report.Write(&buf, figs[k], format); err != nil {
				return nil, fmt.Errorf("experiment: figure %s: %w", k, err)
			}
			if err := write(name+"-"+k+"."+format, buf.Bytes()); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// WriteSummary writes what `calib experiment` prints after a run: the
// table of r, the time the run took and the files Save wrote.
func WriteSummary(w io.Writer, r Result, files Written, elapsed time.Duration) error {
	if err := r.WriteTable(w); err != nil {
		return err
	}
	fmt.Fprintf(w, "\n%.0f s; wrote:\n", elapsed.Seconds())
	for _, f := range files {
		fmt.Fprintf(w, "  %s\n", f)
	}
	return nil
}

// withProvenance returns v's JSON object with a "provenance" key added (v
// itself when prov is nil or v does not encode as an object).
func withProvenance(v any, prov *data.Provenance) any {
	if prov == nil {
		return v
	}
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil || m == nil {
		return v
	}
	if pb, err := json.Marshal(prov); err == nil {
		m["provenance"] = pb
	}
	return m
}

// LoadLogitDir reads the split ("test" or "val") of a folder of logits:
// DIR/SPLIT_logits.npy with the labels DIR/SPLIT_labels.npy (the layout of
// the logit sets, and of what `calib train` writes). Its errors are
// data.Load's (*data.Error).
func LoadLogitDir(dir, split string) (*data.Set, error) {
	return data.Load(filepath.Join(dir, split+"_logits.npy"), data.Options{Labels: filepath.Join(dir, split+"_labels.npy"), Logits: true})
}

// RealSetOf returns the set s under name as an input of RealWitness.
func RealSetOf(name string, s *data.Set) RealSet {
	return RealSet{Name: name, Probs: s.Probs, Labels: s.Labels, K: s.K}
}

// WriteTable prints the three parts of the convergence experiment.
func (r *ConvergenceResult) WriteTable(w io.Writer) error {
	fmt.Fprintln(w, "Ground truth CE_1 = E||p - f||_1 and CE_2^2 = E||p - f||_2^2 (Monte Carlo):")
	for _, s := range r.Settings {
		fmt.Fprintf(w, "  %-22s CE_1 %s, CE_2^2 %s\n", s.Name(), s.Truth, s.Truth2)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "\n1. Convergence (t1 = t2 = 0.6): mean estimate over repetitions (SD) and mean / truth; p = 2 rows estimate CE_2^2")
	k := -1
	for _, row := range r.Convergence {
		if row.K != k {
			k = row.K
			fmt.Fprintf(tw, "\nK = %d\t\t\t\t\t\t\t\t\n", k)
			fmt.Fprintln(tw, "estimator\tn\treps\tmean\tsd\ttruth\tmean / truth\tmean h\t")
		}
		h := ""
		if row.Stat.H > 0 {
			h = fmt.Sprintf("%.4g", row.Stat.H)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.4f\t%.4f\t%.4f\t%.3f\t%s\t\n", row.Estimator, row.N, row.Stat.Reps, row.Stat.Mean, row.Stat.SD, row.Truth, row.Stat.Mean/row.Truth, h)
	}
	tw.Flush()
	fmt.Fprintln(w, "\n2. Where the mean estimate against h crosses the truth (down: falls below it; up: rises above it again)")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "setting\tn\tdown\tup\t")
	for _, c := range r.Crossings {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t\n", c.Setting, c.N, fmtH(c.Down), fmtH(c.Up))
	}
	tw.Flush()
	fmt.Fprintln(w, "\n3. Bandwidth rules and the converging estimators: mean estimate / truth (mean h)")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "setting\tn\tCE_1\tCE_2^2")
	for _, name := range ruleNames {
		fmt.Fprintf(tw, "\t%s", name)
	}
	fmt.Fprintln(tw, "\t")
	for i := 0; i+len(ruleNames) <= len(r.Rules); i += len(ruleNames) {
		rows := r.Rules[i : i+len(ruleNames)]
		truth2 := math.NaN()
		for _, row := range rows {
			if row.P == 2 {
				truth2 = row.Truth
			}
		}
		fmt.Fprintf(tw, "%s\t%d\t%.4f\t%.4f", rows[0].Setting, rows[0].N, rows[0].Truth, truth2)
		for _, row := range rows {
			if row.Stat.H > 0 {
				fmt.Fprintf(tw, "\t%.3f (h %.3g)", row.Stat.Mean/row.Truth, row.Stat.H)
			} else {
				fmt.Fprintf(tw, "\t%.3f", row.Stat.Mean/row.Truth)
			}
		}
		fmt.Fprintln(tw, "\t")
	}
	tw.Flush()
	fmt.Fprintln(w, "\n4. Calibrated predictions (t1 = 0.6, t2 = 1: f = E[y | f], truth 0): mean estimate ± SE (mean h)")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "K\tn\testimator\tp\treps\tmean\tSE\tmean h\t")
	for _, row := range r.Calibrated {
		fmt.Fprintf(tw, "%d\t%d\t%s\t%g\t%d\t%.5f\t%.5f\t%.3g\t\n", row.K, row.N, row.Estimator, row.P, row.Stat.Reps, row.Stat.Mean, row.Stat.SE, row.Stat.H)
	}
	tw.Flush()
	fmt.Fprintln(w, "\n5. Many classes: mean estimate ± SE (mean h); ground truths from 1/10 of the samples above")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "setting\tn\treps\tCE_1\tplug-in p=1 (LOO h)\twitness p=1\tCE_2^2\tU-statistic p=2\t")
	for _, row := range r.LargeK {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.4f\t%.4f ± %.4f (h %.3g)\t%.4f ± %.4f (h %.3g)\t%.5f\t%.5f ± %.5f (h %.3g)\t\n", row.Setting, row.N, row.Witness.Reps,
			row.Truth, row.PlugIn.Mean, row.PlugIn.SE, row.PlugIn.H, row.Witness.Mean, row.Witness.SE, row.Witness.H, row.Truth2, row.U.Mean, row.U.SE, row.U.H)
	}
	return tw.Flush()
}

func fmtH(h float64) string {
	if math.IsNaN(h) {
		return "-"
	}
	return fmt.Sprintf("%.3g", h)
}

// Figures returns the convergence figure (CE_1 estimate against n, one
// panel per K), the sweep figure (estimate against h, one panel per
// setting, one line per n) and the witness figure (estimate / truth against
// n for the plug-in and the converging estimators, p = 1 and 2, one panel
// per K, and the calibrated case).
func (r *ConvergenceResult) Figures() map[string]report.Figure {
	return map[string]report.Figure{"n": &convFigure{r}, "h": &sweepFigure{r}, "witness": &witnessFigure{r}}
}

// addSeries adds a line with points and error bars (±SE) to p.
func addSeries(p *plot.Plot, name string, col color.Color, xs, ys, se []float64, dashed bool) {
	var xy plotter.XYs
	var errs plotter.YErrors
	for i := range xs {
		if mathx.Finite(ys[i]) {
			xy = append(xy, plotter.XY{X: xs[i], Y: ys[i]})
			e := se[i]
			if !mathx.Finite(e) {
				e = 0
			}
			errs = append(errs, struct{ Low, High float64 }{e, e})
		}
	}
	if len(xy) == 0 {
		return
	}
	l, s, _ := plotter.NewLinePoints(xy)
	l.LineStyle.Color, s.GlyphStyle.Color = col, col
	s.GlyphStyle.Radius = vg.Points(2)
	if dashed {
		l.LineStyle.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
	}
	eb, err := plotter.NewYErrorBars(xyErrors{xy, errs})
	if err == nil {
		eb.LineStyle.Color = col
		p.Add(eb)
	}
	p.Add(l, s)
	p.Legend.Add(name, l, s)
}

// logXPlot returns a plot in the report's style with a logarithmic
// horizontal axis and a small legend at the top right.
func logXPlot(title, x, y string) *plot.Plot {
	p := report.NewPlot(x, y)
	p.Title.Text = title
	report.LogAxis(&p.X)
	p.Legend.Top = true
	p.Legend.TextStyle.Font.Size = vg.Points(8)
	return p
}

// xyErrors is points with vertical error bars.
type xyErrors struct {
	plotter.XYs
	errs plotter.YErrors
}

// YError implements plotter.YErrorer.
func (x xyErrors) YError(i int) (float64, float64) { return x.errs.YError(i) }

// truthLine adds the ground truth as a horizontal line over [x0, x1].
func truthLine(p *plot.Plot, x0, x1, v float64) {
	l, _ := plotter.NewLine(plotter.XYs{{X: x0, Y: v}, {X: x1, Y: v}})
	l.LineStyle.Color = color.Black
	l.LineStyle.Width = vg.Points(1.5)
	p.Add(l)
	p.Legend.Add(fmt.Sprintf("ground truth %.4f", v), l)
}

type convFigure struct{ r *ConvergenceResult }

func (f *convFigure) Size() (vg.Length, vg.Length) {
	return vg.Length(len(f.ks())) * 6 * vg.Inch, 5 * vg.Inch
}

func (f *convFigure) ks() []int {
	var ks []int
	for _, row := range f.r.Convergence {
		if !slices.Contains(ks, row.K) {
			ks = append(ks, row.K)
		}
	}
	return ks
}

func (f *convFigure) Draw(c draw.Canvas) {
	var row []*plot.Plot
	for _, k := range f.ks() {
		p := logXPlot(fmt.Sprintf("Canonical CE_1, K = %d (t1 = t2 = 0.6)", k), "n (log scale)", "mean estimate (±SE)")
		var names []string
		truth := math.NaN()
		for _, r := range f.r.Convergence {
			if r.K == k && r.P == 1 && !slices.Contains(names, r.Estimator) {
				names = append(names, r.Estimator)
			}
			if r.K == k && r.P == 1 {
				truth = r.Truth
			}
		}
		x0, x1 := math.Inf(1), math.Inf(-1)
		for i, nm := range names {
			var xs, ys, se []float64
			for _, r := range f.r.Convergence {
				if r.K == k && r.Estimator == nm {
					xs, ys, se = append(xs, float64(r.N)), append(ys, r.Stat.Mean), append(se, r.Stat.SE)
					x0, x1 = math.Min(x0, float64(r.N)), math.Max(x1, float64(r.N))
				}
			}
			addSeries(p, nm, report.SeriesColor(i), xs, ys, se, strings.HasPrefix(nm, "binned"))
		}
		truthLine(p, x0, x1, truth)
		row = append(row, p)
	}
	report.DrawGrid(c, [][]*plot.Plot{row})
}

type sweepFigure struct{ r *ConvergenceResult }

func (f *sweepFigure) settings() []string {
	var s []string
	for _, row := range f.r.Sweep {
		if !slices.Contains(s, row.Setting) {
			s = append(s, row.Setting)
		}
	}
	return s
}

func (f *sweepFigure) Size() (vg.Length, vg.Length) {
	rows := (len(f.settings()) + 2) / 3
	return 15 * vg.Inch, vg.Length(rows)*4.2*vg.Inch + 0.2*vg.Inch
}

func (f *sweepFigure) Draw(c draw.Canvas) {
	settings := f.settings()
	rows := (len(settings) + 2) / 3
	plots := make([][]*plot.Plot, rows)
	for i := range plots {
		plots[i] = make([]*plot.Plot, 3)
	}
	for si, name := range settings {
		p := logXPlot(name, "bandwidth h (log scale)", "mean CE_1 estimate")
		var ns []int
		truth := math.NaN()
		for _, r := range f.r.Sweep {
			if r.Setting == name && !slices.Contains(ns, r.N) {
				ns = append(ns, r.N)
			}
			if r.Setting == name {
				truth = r.Truth
			}
		}
		x0, x1 := math.Inf(1), math.Inf(-1)
		for i, n := range ns {
			var xs, ys, se []float64
			for _, r := range f.r.Sweep {
				if r.Setting == name && r.N == n {
					xs, ys, se = append(xs, r.H), append(ys, r.Stat.Mean), append(se, r.Stat.SE)
					x0, x1 = math.Min(x0, r.H), math.Max(x1, r.H)
				}
			}
			addSeries(p, fmt.Sprintf("n = %d", n), report.SeriesColor(i), xs, ys, se, false)
		}
		truthLine(p, x0, x1, truth)
		plots[si/3][si%3] = p
	}
	report.DrawGrid(c, plots)
}

// witnessFigure compares the plug-in ECE^KDE with the converging
// estimators: mean estimate / truth against n per K, and the absolute
// estimates on calibrated predictions.
type witnessFigure struct{ r *ConvergenceResult }

// witnessSeries are the estimators of the witness figure (the plug-in
// p = 2 at 6 to 10 x its truth is left to the table: it would squash the
// others).
var witnessSeries = []string{"kde loo", "witness p=1", "u-statistic p=2"}

func (f *witnessFigure) Size() (vg.Length, vg.Length) {
	return vg.Length(len((&convFigure{f.r}).ks())+1) * 5 * vg.Inch, 4.5 * vg.Inch
}

func (f *witnessFigure) Draw(c draw.Canvas) {
	var row []*plot.Plot
	x0, x1 := math.Inf(1), math.Inf(-1)
	for _, k := range (&convFigure{f.r}).ks() {
		p := logXPlot(fmt.Sprintf("K = %d (t1 = t2 = 0.6)", k), "n (log scale)", "mean estimate / truth (±SE)")
		for i, nm := range witnessSeries {
			var xs, ys, se []float64
			for _, r := range f.r.Convergence {
				if r.K == k && r.Estimator == nm {
					xs, ys, se = append(xs, float64(r.N)), append(ys, r.Stat.Mean/r.Truth), append(se, r.Stat.SE/r.Truth)
					x0, x1 = math.Min(x0, float64(r.N)), math.Max(x1, float64(r.N))
				}
			}
			label := map[string]string{"kde loo": "plug-in ECE^KDE p=1 (LOO h)", "witness p=1": "witness p=1 (CE_1)",
				"u-statistic p=2": "U-statistic p=2 (CE_2^2)"}[nm]
			addSeries(p, label, report.SeriesColor(i), xs, ys, se, strings.HasPrefix(nm, "kde"))
		}
		truthLine(p, x0, x1, 1)
		row = append(row, p)
	}
	p := logXPlot("Calibrated (t2 = 1): truth 0", "n (log scale)", "mean estimate (±SE)")
	var keys []string
	for _, r := range f.r.Calibrated {
		if key := fmt.Sprintf("%s K=%d", r.Estimator, r.K); !slices.Contains(keys, key) {
			keys = append(keys, key)
		}
	}
	c0, c1 := math.Inf(1), math.Inf(-1)
	for i, key := range keys {
		var xs, ys, se []float64
		for _, r := range f.r.Calibrated {
			if fmt.Sprintf("%s K=%d", r.Estimator, r.K) == key {
				xs, ys, se = append(xs, float64(r.N)), append(ys, r.Stat.Mean), append(se, r.Stat.SE)
				c0, c1 = math.Min(c0, float64(r.N)), math.Max(c1, float64(r.N))
			}
		}
		addSeries(p, key, report.SeriesColor(i), xs, ys, se, strings.HasPrefix(key, "kde"))
	}
	truthLine(p, c0, c1, 0)
	row = append(row, p)
	report.DrawGrid(c, [][]*plot.Plot{row})
}
