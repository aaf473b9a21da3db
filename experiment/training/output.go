package training

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/calib-dev/calib/report"
	"github.com/calib-dev/calib/train"
)

// methods are the loss families of the study in table order.
var methods = []string{train.LossXE, train.LossKDEXE, train.LossMMCE, train.LossFocal, train.LossLS}

// methodLabel names a loss family as the paper's tables do.
func methodLabel(loss string) string {
	switch loss {
	case train.LossXE:
		return "XE"
	case train.LossKDEXE:
		return "KDE-XE"
	case train.LossMMCE:
		return "MMCE"
	case train.LossFocal:
		return "Focal (FL-53)"
	case train.LossLS:
		return "Label smoothing"
	}
	return loss
}

// Selected returns, for a data set, one summary per loss family: the
// family's only configuration, or the one with the lowest mean validation
// canonical ECE^KDE (before temperature scaling) among its lambda (or
// alpha) values: chosen on validation, reported on test.
func (r *Result) Selected(set string) []Summary {
	var out []Summary
	for _, m := range methods {
		best := -1
		for i, s := range r.Summaries {
			if s.Set == set && s.Config.Loss == m && (best < 0 || s.Val.ECEKDE.Mean < r.Summaries[best].Val.ECEKDE.Mean) {
				best = i
			}
		}
		if best >= 0 {
			out = append(out, r.Summaries[best])
		}
	}
	return out
}

// pct formats a mean ± sd of a fraction in percent.
func pct(m MeanSD) string { return fmt.Sprintf("%.2f ± %.2f", 100*m.Mean, 100*m.SD) }

// num formats a mean ± sd.
func num(m MeanSD) string { return fmt.Sprintf("%.3f ± %.3f", m.Mean, m.SD) }

// WriteTable writes the study as Markdown: the data sets, per data set the
// selected configurations (Tables 2 and 3 analogue) and every
// configuration, and the epoch times (Table 4 analogue).
func (r *Result) WriteTable(w io.Writer) error {
	s := r.Setup
	fmt.Fprintf(w, "MLP %d x %d (ReLU), Adam lr %g, early stopping on validation NLL (patience %d); split %.2g/%.2g/%.2g stratified, seed %d; %d seeds per configuration",
		s.Layers, s.Hidden, s.LR, s.Patience, 1-s.ValFrac-s.TestFrac, s.ValFrac, s.TestFrac, s.SplitSeed, r.seeds())
	if r.Quick {
		fmt.Fprintf(w, " (--quick: %d epochs)", s.Epochs["vehicle"])
	}
	fmt.Fprintln(w, ".")
	fmt.Fprintln(w, "\n| data set | n | features | K | train / val / test | smallest / largest class | batch | max epochs |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---|---|---:|---:|")
	for _, d := range r.Data {
		fmt.Fprintf(w, "| %s | %d | %d | %d | %d / %d / %d | %d / %d | %d | %d |\n", d.Set, d.N, d.D, d.K, d.Train, d.Val, d.Test, d.SmallestClass, d.Major,
			s.Batch[d.Set], s.Epochs[d.Set])
	}
	header := "| method | accuracy % | ECE^KDE % Pre T | ECE^KDE % Post T | top-label ECE % Pre T | top-label ECE % Post T | NLL Pre T | NLL Post T |"
	rule := "|---|---:|---:|---:|---:|---:|---:|---:|"
	row := func(name string, x Summary, boldECE bool) {
		ece := pct(x.Pre.ECEKDE)
		if boldECE {
			ece = "**" + ece + "**"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", name, pct(x.Pre.Accuracy), ece, pct(x.Post.ECEKDE),
			pct(x.Pre.TopECE), pct(x.Post.TopECE), num(x.Pre.NLL), num(x.Post.NLL))
	}
	fmt.Fprintln(w, "\n### Selected configurations (test split; lambda or alpha chosen by the lowest validation ECE^KDE)")
	fmt.Fprintln(w, "\nMean ± standard deviation over seeds. Canonical L1 ECE^KDE with the LOO bandwidth of the test predictions; top-label ECE with 15 equal-width bins; Post T: after temperature scaling fitted on the validation split. Bold: the lowest Pre T ECE^KDE.")
	for _, d := range r.Data {
		sel := r.Selected(d.Set)
		best := -1
		for i, x := range sel {
			if best < 0 || x.Pre.ECEKDE.Mean < sel[best].Pre.ECEKDE.Mean {
				best = i
			}
		}
		fmt.Fprintf(w, "\n**%s** (K = %d)\n\n%s\n%s\n", d.Set, d.K, header, rule)
		for i, x := range sel {
			name := methodLabel(x.Config.Loss)
			if x.Config.Param != 0 {
				name += fmt.Sprintf(" (%g)", x.Config.Param)
			}
			row(name, x, i == best)
		}
	}
	r.writeHeadToHead(w)
	fmt.Fprintln(w, "\n### Every configuration (test split)")
	fmt.Fprintln(w, "\nT: the fitted temperature; epochs: mean best epoch / mean epochs run.")
	for _, d := range r.Data {
		fmt.Fprintf(w, "\n**%s**\n\n| configuration | accuracy %% | ECE^KDE %% Pre T | ECE^KDE %% Post T | top-label ECE %% Pre T | top-label ECE %% Post T | NLL Pre T | NLL Post T | val ECE^KDE %% | T | epochs |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n", d.Set)
		for _, x := range r.Summaries {
			if x.Set != d.Set {
				continue
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %.2f | %.1f / %.1f |\n", x.Config.Name(), pct(x.Pre.Accuracy), pct(x.Pre.ECEKDE), pct(x.Post.ECEKDE),
				pct(x.Pre.TopECE), pct(x.Post.TopECE), num(x.Pre.NLL), num(x.Post.NLL), pct(x.Val.ECEKDE), x.Temperature.Mean, x.BestEpoch, x.Epochs)
		}
	}
	fmt.Fprintf(w, "\n### Training time per epoch (sequential runs of %d epochs, nothing else training; mean of the epochs after the first, which also compiles the graph)\n\n", s.TimingEpochs)
	fmt.Fprintln(w, "| data set | train rows | K | batch size x batches | XE s | KDE-XE (LOO h) s | KDE-XE (h = 0.1) s | MMCE s | KDE-XE overhead LOO / fixed h | MMCE overhead | kernel term ms/batch | LOO choice ms/batch |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|")
	for _, t := range r.Timing {
		fmt.Fprintf(w, "| %s | %d | %d | %d x %d | %.3f | %.3f | %.3f | %.3f | %+.0f %% / %+.0f %% | %+.0f %% | %.1f | %.1f |\n", t.Set, t.Train, t.K, t.Batch, t.Batches, t.XE, t.KDEXE,
			t.KDEXEFixed, t.MMCE, 100*t.OverheadLOO, 100*t.OverheadFixed, 100*t.OverheadMMCE, t.KernelPerBatch, t.LOOPerBatch)
	}
	return nil
}

// seeds is the number of seeds per configuration.
func (r *Result) seeds() int {
	if len(r.Summaries) == 0 {
		return 0
	}
	return r.Summaries[0].Seeds
}

// Figures returns the accuracy/calibration trade-off figure (the paper's
// Fig. 4): one panel per data set.
func (r *Result) Figures() map[string]report.Figure {
	return map[string]report.Figure{"tradeoff": &tradeoffFigure{r}}
}

type tradeoffFigure struct{ r *Result }

func (f *tradeoffFigure) Size() (vg.Length, vg.Length) {
	cols := min(len(f.r.Data), 3)
	rows := (len(f.r.Data) + cols - 1) / cols
	return vg.Length(cols) * 5.5 * vg.Inch, vg.Length(rows) * 4.5 * vg.Inch
}

func (f *tradeoffFigure) Draw(c draw.Canvas) {
	cols := min(len(f.r.Data), 3)
	var grid [][]*plot.Plot
	for i, d := range f.r.Data {
		if i%cols == 0 {
			grid = append(grid, make([]*plot.Plot, cols))
		}
		grid[i/cols][i%cols] = f.panel(d.Set)
	}
	report.DrawGrid(c, grid)
}

// panel plots test accuracy against test ECE^KDE (both before temperature
// scaling, mean ± standard error over seeds) for every configuration of one data set;
// the lambda (alpha) values label the points of a family, joined in order.
func (f *tradeoffFigure) panel(set string) *plot.Plot {
	p := report.NewPlot("canonical L1 ECE^KDE % (test, Pre T)", "accuracy % (test)")
	p.Title.Text = set
	p.Legend.Top = true
	p.Legend.TextStyle.Font.Size = vg.Points(8)
	for mi, m := range methods {
		var xy plotter.XYs
		var xe plotter.XErrors
		var ye plotter.YErrors
		var labels []string
		var params []float64
		for _, s := range f.r.Summaries {
			if s.Set != set || s.Config.Loss != m {
				continue
			}
			// Error bars: the standard error of the mean over seeds.
			se := 100 / math.Sqrt(float64(s.Seeds))
			xy = append(xy, plotter.XY{X: 100 * s.Pre.ECEKDE.Mean, Y: 100 * s.Pre.Accuracy.Mean})
			xe = append(xe, struct{ Low, High float64 }{se * s.Pre.ECEKDE.SD, se * s.Pre.ECEKDE.SD})
			ye = append(ye, struct{ Low, High float64 }{se * s.Pre.Accuracy.SD, se * s.Pre.Accuracy.SD})
			params = append(params, s.Config.Param)
			if s.Config.Param != 0 {
				labels = append(labels, fmt.Sprintf("%g", s.Config.Param))
			} else {
				labels = append(labels, "")
			}
		}
		if len(xy) == 0 {
			continue
		}
		if !slices.IsSorted(params) {
			continue // cannot happen: Configs lists each family's values increasing
		}
		col := report.SeriesColor(mi)
		pts := &errPoints{xy, xe, ye}
		if eb, err := plotter.NewXErrorBars(pts); err == nil {
			eb.LineStyle.Color = col
			p.Add(eb)
		}
		if eb, err := plotter.NewYErrorBars(pts); err == nil {
			eb.LineStyle.Color = col
			p.Add(eb)
		}
		l, s, err := plotter.NewLinePoints(xy)
		if err != nil {
			continue
		}
		l.LineStyle.Color, s.GlyphStyle.Color = col, col
		s.GlyphStyle.Radius = vg.Points(3)
		s.GlyphStyle.Shape = []draw.GlyphDrawer{draw.CircleGlyph{}, draw.TriangleGlyph{}, draw.SquareGlyph{}, draw.PyramidGlyph{}, draw.RingGlyph{}}[mi%5]
		p.Add(l, s)
		p.Legend.Add(methodLabel(m), l, s)
		if lb, err := plotter.NewLabels(plotter.XYLabels{XYs: xy, Labels: labels}); err == nil {
			lb.Offset = vg.Point{X: vg.Points(4), Y: vg.Points(2)}
			for i := range lb.TextStyle {
				lb.TextStyle[i].Color = col
				lb.TextStyle[i].Font.Size = vg.Points(7)
			}
			p.Add(lb)
		}
	}
	padRange(&p.X.Min, &p.X.Max)
	padRange(&p.Y.Min, &p.Y.Max)
	return p
}

// padRange widens [lo, hi] by 8 % on each side.
func padRange(lo, hi *float64) {
	d := math.Max(*hi-*lo, 1e-9) * 0.08
	*lo, *hi = *lo-d, *hi+d
}

// errPoints are points with horizontal and vertical error bars.
type errPoints struct {
	plotter.XYs
	xe plotter.XErrors
	ye plotter.YErrors
}

func (e *errPoints) XError(i int) (float64, float64) { return e.xe.XError(i) }
func (e *errPoints) YError(i int) (float64, float64) { return e.ye.YError(i) }

// writeHeadToHead compares the selected KDE-XE with each other selected
// method per data set: the differences of the test means (KDE-XE minus the
// other) of ECE^KDE before and after temperature scaling, accuracy and
// NLL, each marked better, worse or tie by whether it exceeds twice the
// standard error of the difference (seeds independent); and how many
// KDE-XE lambdas Pareto-dominate XE (higher accuracy and lower ECE^KDE,
// means), the paper's Fig. 4 claim.
func (r *Result) writeHeadToHead(w io.Writer) {
	fmt.Fprintln(w, "\n### KDE-XE against each method (selected configurations, test split)")
	fmt.Fprintln(w, "\nDifference of means, KDE-XE minus the other (ECE^KDE and accuracy in points, NLL per sample); better / worse: beyond twice the standard error of the difference, else tie.")
	fmt.Fprintln(w, "\n| data set | KDE-XE vs | ECE^KDE Pre T | ECE^KDE Post T | accuracy | NLL Pre T | NLL Post T | KDE-XE lambdas dominating XE |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	for _, d := range r.Data {
		sel := r.Selected(d.Set)
		var kx *Summary
		for i := range sel {
			if sel[i].Config.Loss == train.LossKDEXE {
				kx = &sel[i]
			}
		}
		if kx == nil {
			continue
		}
		dominating := r.dominating(d.Set)
		for _, o := range sel {
			if o.Config.Loss == train.LossKDEXE {
				continue
			}
			cmp := func(a, b MeanSD, scale float64, lowerBetter bool) string {
				diff := a.Mean - b.Mean
				se := math.Sqrt(a.SD*a.SD/float64(kx.Seeds) + b.SD*b.SD/float64(o.Seeds))
				verdict := "tie"
				if math.Abs(diff) > 2*se {
					verdict = "worse"
					if (diff < 0) == lowerBetter {
						verdict = "better"
					}
				}
				prec := 3
				if scale == 100 {
					prec = 2
				}
				return fmt.Sprintf("%+.*f (%s)", prec, scale*diff, verdict)
			}
			name := methodLabel(o.Config.Loss)
			if o.Config.Param != 0 {
				name += fmt.Sprintf(" (%g)", o.Config.Param)
			}
			dom := ""
			if o.Config.Loss == train.LossXE {
				dom = dominating
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", d.Set, name, cmp(kx.Pre.ECEKDE, o.Pre.ECEKDE, 100, true),
				cmp(kx.Post.ECEKDE, o.Post.ECEKDE, 100, true), cmp(kx.Pre.Accuracy, o.Pre.Accuracy, 100, false),
				cmp(kx.Pre.NLL, o.Pre.NLL, 1, true), cmp(kx.Post.NLL, o.Post.NLL, 1, true), dom)
		}
	}
}

// dominating lists the KDE-XE lambdas whose mean test accuracy is higher
// and mean test ECE^KDE (Pre T) lower than XE's on set.
func (r *Result) dominating(set string) string {
	var xe *Summary
	for i, s := range r.Summaries {
		if s.Set == set && s.Config.Loss == train.LossXE {
			xe = &r.Summaries[i]
		}
	}
	if xe == nil {
		return ""
	}
	var ls []string
	total := 0
	for _, s := range r.Summaries {
		if s.Set != set || s.Config.Loss != train.LossKDEXE {
			continue
		}
		total++
		if s.Pre.Accuracy.Mean > xe.Pre.Accuracy.Mean && s.Pre.ECEKDE.Mean < xe.Pre.ECEKDE.Mean {
			ls = append(ls, fmt.Sprintf("%g", s.Config.Param))
		}
	}
	if len(ls) == 0 {
		return fmt.Sprintf("none of %d", total)
	}
	return fmt.Sprintf("%d of %d (%s)", len(ls), total, strings.Join(ls, ", "))
}
