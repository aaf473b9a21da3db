package experiment

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/calib-dev/calib/kde"
	"github.com/calib-dev/calib/metric"
	"github.com/calib-dev/calib/progress"
	"github.com/calib-dev/calib/report"
)

// BinnedVsKDEOptions configures BinnedVsKDE. The zero value uses classes
// 0, 1, 2, subsample sizes 100, 500, 1000 and all, and 100 repetitions.
type BinnedVsKDEOptions struct {
	Classes []int // the 3 classes kept; nil means 0, 1, 2
	Sizes   []int // subsample sizes below the full set; nil means 100, 500, 1000
	Reps    int   // subsamples per size; 0 means 100
	Quick   bool  // sizes 100, 500 and 5 repetitions
	Seed    uint64
	Workers int
	// Progress, if not nil, is told each finished part (a step counting
	// the parts; the phase names the last).
	Progress progress.Reporter
	ctx      context.Context // the call's context, its first argument
}

// BinnedRow is one estimator and notion at one subsample size: the mean
// estimate, and the mean absolute difference to the full-data value of the
// same estimator.
type BinnedRow struct {
	Notion    string  `json:"notion"`
	Estimator string  `json:"estimator"`
	N         int     `json:"n"`
	Estimate  Stat    `json:"estimate"`
	AbsDiff   Stat    `json:"abs_diff"`
	Full      float64 `json:"full"`
}

// BinnedSlope is the fitted slope of log mean |difference| against log n.
type BinnedSlope struct {
	Notion    string  `json:"notion"`
	Estimator string  `json:"estimator"`
	Slope     float64 `json:"slope"`
}

// BinnedVsKDEResult holds the rows and the fitted slopes.
type BinnedVsKDEResult struct {
	File    string        `json:"file"`
	Classes []int         `json:"classes"`
	N       int           `json:"n"` // samples whose label is among the classes
	Rows    []BinnedRow   `json:"rows"`
	Slopes  []BinnedSlope `json:"slopes"`
	Quick   bool          `json:"quick"`
	Seed    uint64        `json:"seed"`
}

// ParseClasses parses BinnedVsKDEOptions.Classes from a comma-separated
// list of integers ("0,1,2"; surrounding spaces ignored; BinnedVsKDE checks
// that there are three). Its error reads `classes "a": three integers
// a,b,c`.
func ParseClasses(list string) ([]int, error) {
	var cls []int
	for _, f := range strings.Split(list, ",") {
		c, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("classes %q: three integers a,b,c", list)
		}
		cls = append(cls, c)
	}
	return cls, nil
}

// threeClass keeps the samples whose label is among classes and
// renormalises their probabilities of those classes (labels mapped to the
// classes' positions).
func threeClass(probs []float64, labels []int, k int, classes []int) ([]float64, []int, error) {
	if len(classes) != 3 {
		return nil, nil, fmt.Errorf("experiment: want 3 classes, got %v", classes)
	}
	for i, c := range classes {
		if c < 0 || c >= k || slices.Index(classes, c) != i {
			return nil, nil, fmt.Errorf("experiment: classes %v: need 3 different classes in 0..%d", classes, k-1)
		}
	}
	var p []float64
	var y []int
	for i, l := range labels {
		pos := slices.Index(classes, l)
		if pos < 0 {
			continue
		}
		s := 0.0
		for _, c := range classes {
			s += probs[i*k+c]
		}
		if !(s > 0) {
			continue
		}
		for _, c := range classes {
			p = append(p, probs[i*k+c]/s)
		}
		y = append(y, pos)
	}
	return p, y, nil
}

// estimators of the experiment: ECE^KDE with the LOO bandwidth chosen on
// the data at hand, and the binned estimate with Doane's rule; CE_1, for
// the canonical, class-wise (mean over classes) and top-label notions.
var binnedNotions = []string{"canonical", "class-wise", "top-label"}

func estimate(ctx context.Context, notion, estimator string, probs []float64, labels []int, k, workers int) (float64, error) {
	if estimator == "binned" {
		o := metric.BinOptions{Rule: metric.Doane}
		switch notion {
		case "canonical":
			c, err := metric.Canonical(probs, labels, k, 1, nil, o)
			if err != nil {
				return 0, err
			}
			return c.Value, nil
		case "class-wise":
			bs, err := metric.ClassWiseBins(probs, labels, k, nil, o)
			if err != nil {
				return 0, err
			}
			return metric.ClassWise(bs, func(b *metric.Bins) float64 { return b.ECE(1) }).Value, nil
		default:
			b, err := metric.TopLabelBins(probs, labels, k, nil, o)
			if err != nil {
				return 0, err
			}
			return b.ECE(1), nil
		}
	}
	n := map[string]kde.Notion{"canonical": kde.Canonical, "class-wise": kde.ClassWise, "top-label": kde.TopLabel}[notion]
	cv, err := kde.SelectBandwidth(ctx, n, probs, labels, k, nil, kde.BandwidthOptions{Workers: workers})
	if err != nil {
		return 0, err
	}
	r, err := kde.Estimate(ctx, n, probs, labels, k, nil, kde.Options{Bandwidth: cv.Bandwidth, ClassMean: true, Workers: workers})
	if err != nil {
		return 0, err
	}
	return r.Values[0].Value, nil
}

// BinnedVsKDE runs the comparison of the paper's appendices F and G on
// real predictions (n×k probabilities and labels, file names the source):
// the samples of three classes, renormalised; for each notion and estimator
// the full-data value, and over random subsamples (without replacement) of
// each size the mean estimate and the mean absolute difference to the
// full-data value, with the slope of log |difference| against log n.
func BinnedVsKDE(ctx context.Context, file string, probs []float64, labels []int, k int, o BinnedVsKDEOptions) (*BinnedVsKDEResult, error) {
	o.ctx = ctx
	classes := o.Classes
	if classes == nil {
		classes = []int{0, 1, 2}
	}
	p, y, err := threeClass(probs, labels, k, classes)
	if err != nil {
		return nil, err
	}
	sizes, reps := o.Sizes, o.Reps
	if sizes == nil {
		sizes = []int{100, 500, 1000}
	}
	if reps == 0 {
		reps = 100
	}
	if o.Quick {
		sizes, reps = []int{100, 500}, 5
	}
	n := len(y)
	res := &BinnedVsKDEResult{File: file, Classes: classes, N: n, Quick: o.Quick, Seed: o.Seed}
	if n < 10 {
		return nil, fmt.Errorf("experiment: %d samples of classes %v", n, classes)
	}
	parts := progress.NewParts(o.Progress, "binned vs KDE", 2*len(binnedNotions))
	defer parts.End()
	for _, notion := range binnedNotions {
		for _, est := range []string{"kde", "binned"} {
			full, err := estimate(ctx, notion, est, p, y, 3, o.Workers)
			if err != nil {
				return nil, fmt.Errorf("experiment: %s %s on all %d samples: %w", notion, est, n, err)
			}
			var xs, ds []float64
			for _, m := range sizes {
				if m >= n {
					continue
				}
				var vals, diffs []float64
				failed := 0
				for r := 0; r < reps; r++ {
					rng := seedOf(o.Seed, 3, m, r)
					idx := rng.Perm(n)[:m]
					v, err := estimate(ctx, notion, est, metric.Resample(p, 3, idx), metric.Resample(y, 1, idx), 3, o.Workers)
					if err != nil {
						failed++
						continue
					}
					vals, diffs = append(vals, v), append(diffs, math.Abs(v-full))
				}
				d := stat(diffs, nil, failed)
				res.Rows = append(res.Rows, BinnedRow{Notion: notion, Estimator: est, N: m, Estimate: stat(vals, nil, failed), AbsDiff: d, Full: full})
				if d.Mean > 0 {
					xs, ds = append(xs, math.Log(float64(m))), append(ds, math.Log(d.Mean))
				}
			}
			res.Rows = append(res.Rows, BinnedRow{Notion: notion, Estimator: est, N: n, Estimate: stat([]float64{full}, nil, 0), AbsDiff: stat([]float64{0}, nil, 0), Full: full})
			res.Slopes = append(res.Slopes, BinnedSlope{Notion: notion, Estimator: est, Slope: slope(xs, ds)})
			parts.Finished(notion + " " + est)
			if err := canceled(o.ctx); err != nil {
				return nil, err
			}
		}
	}
	return res, nil
}

// slope is the least-squares slope of y on x (NaN with fewer than 2 points).
func slope(x, y []float64) float64 {
	if len(x) < 2 {
		return math.NaN()
	}
	mx, my := 0.0, 0.0
	for i := range x {
		mx, my = mx+x[i], my+y[i]
	}
	mx, my = mx/float64(len(x)), my/float64(len(x))
	sxy, sxx := 0.0, 0.0
	for i := range x {
		sxy += (x[i] - mx) * (y[i] - my)
		sxx += (x[i] - mx) * (x[i] - mx)
	}
	return sxy / sxx
}

// WriteTable prints the rows and slopes.
func (r *BinnedVsKDEResult) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "%s: %d samples with labels %v, probabilities of those classes renormalised\n", r.File, r.N, r.Classes)
	fmt.Fprintln(w, "CE_1; ECE^KDE with the LOO bandwidth of the data at hand, binned with Doane's rule; |diff| to the full-data value")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "notion\testimator\tn\treps\tmean\tsd\tmean |diff|\t")
	for _, row := range r.Rows {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.4f\t%s\t%.4f\t\n", row.Notion, row.Estimator, row.N, row.Estimate.Reps, row.Estimate.Mean, fmtH(row.Estimate.SD), row.AbsDiff.Mean)
	}
	tw.Flush()
	fmt.Fprintln(w, "\nslope of log mean |diff| against log n (the paper: about -0.5)")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	for _, s := range r.Slopes {
		fmt.Fprintf(tw, "%s\t%s\t%.3f\t\n", s.Notion, s.Estimator, s.Slope)
	}
	return tw.Flush()
}

// Figures returns the log-log figure of the mean |difference| against n.
func (r *BinnedVsKDEResult) Figures() map[string]report.Figure {
	return map[string]report.Figure{"diff": &binnedFigure{r}}
}

type binnedFigure struct{ r *BinnedVsKDEResult }

func (f *binnedFigure) Size() (vg.Length, vg.Length) { return 7 * vg.Inch, 5 * vg.Inch }

func (f *binnedFigure) Draw(c draw.Canvas) {
	p := report.NewPlot("n (log scale)", "mean |difference| (log scale)")
	p.Title.Text = fmt.Sprintf("|estimate - full-data value|, classes %v (n = %d)", f.r.Classes, f.r.N)
	report.LogAxis(&p.X)
	report.LogAxis(&p.Y)
	p.Legend.Top = true
	p.Legend.Left = false
	p.Legend.TextStyle.Font.Size = vg.Points(8)
	i := 0
	for _, s := range f.r.Slopes {
		var xs, ys, se []float64
		for _, row := range f.r.Rows {
			if row.Notion == s.Notion && row.Estimator == s.Estimator && row.N < f.r.N && row.AbsDiff.Mean > 0 {
				xs, ys, se = append(xs, float64(row.N)), append(ys, row.AbsDiff.Mean), append(se, 0)
			}
		}
		addSeries(p, fmt.Sprintf("%s %s (slope %.2f)", s.Notion, s.Estimator, s.Slope), report.SeriesColor(i), xs, ys, se, s.Estimator == "binned")
		i++
	}
	report.DrawGrid(c, [][]*plot.Plot{{p}})
}
