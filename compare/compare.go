// Package compare fits every recalibration method on a validation set and
// measures each on a test set, as `calib compare` prints it: accuracy,
// NLL, Brier, the canonical CE_1 that calib reports (evaluate.Headline:
// ece_variational, cross-fitted on each row's test predictions), top-label
// ECE, KS errors and the plug-in ECE^KDE, and the strictly best method per
// ranked column.
//
//	c, err := compare.Compare(ctx, val, test, compare.Options{})
//	compare.WriteText(os.Stdout, c)
package compare

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/calib-dev/calib/bandwidth"
	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/evaluate"
	"github.com/calib-dev/calib/kde"
	"github.com/calib-dev/calib/notion"
	"github.com/calib-dev/calib/progress"
	"github.com/calib-dev/calib/recal"
)

// Row is one method's test figures in `calib compare`.
type Row struct {
	Method     string  `json:"method"`
	FitSeconds float64 `json:"fit_seconds"`
	// The test figures: nil (JSON null) where the row's map could not be
	// fitted or that figure could not be computed (Error says why; the
	// others are kept).
	Accuracy     *data.Float `json:"accuracy"`
	NLL          *data.Float `json:"nll"`
	Brier        *data.Float `json:"brier"`
	ECEKDE       *data.Float `json:"ece_kde_canonical"`
	Headline     *data.Float `json:"ece_variational"` // canonical CE_1, evaluate.Headline
	ECETopLabel  *data.Float `json:"ece_top_label"`
	KSTop1       *data.Float `json:"ks_top1"`
	KSTop2       *data.Float `json:"ks_top2"`
	KSWithinTop2 *data.Float `json:"ks_within_top2"`
	KSClassWise  *data.Float `json:"ks_class_wise"`
	Params       string      `json:"params,omitempty"`
	Error        string      `json:"error,omitempty"`
	EvalSeconds  float64     `json:"eval_seconds"`
	calibrated   *data.Set
}

// Comparison is the JSON object of `calib compare --json`.
type Comparison struct {
	NVal      int     `json:"n_val"`
	NTest     int     `json:"n_test"`
	K         int     `json:"k"`
	Bandwidth float64 `json:"bandwidth"` // of the canonical ECE^KDE, for every row
	Rows      []*Row  `json:"rows"`
	// Best names, per ranking column, the method with the strictly best
	// value ("" on a tie): ece_variational, ece_top_label, ks_top1,
	// ks_class_wise, nll, brier (lower is better) and accuracy (higher).
	// The plug-in ece_kde_canonical is not ranked (RankingNote).
	Best map[string]string `json:"best"`
	// Provenance is the caller's record of how the comparison was made
	// (calib writes the version, command, options and inputs); not read
	// here.
	Provenance *data.Provenance `json:"provenance,omitempty"`
}

// RankingNote says why the plug-in ECE^KDE does not rank maps.
var RankingNote = "Ranked first by " + evaluate.Headline.String() + " (the canonical CE_1 that calib reports, cross-fitted on each row's test predictions), then the binned and KS errors and the proper scores. " +
	"The plug-in ECE^KDE is shown but not ranked: its upward bias depends on how the predictions are spread, which each map changes, so its values are not comparable across maps (it can rank a better map worse)."

// rankedColumns are the compare columns that rank methods, with whether
// higher is better.
var rankedColumns = []struct {
	key    string
	higher bool
	value  func(r *Row) *data.Float
}{
	{string(evaluate.Headline.Metric), false, func(r *Row) *data.Float { return r.Headline }},
	{"ece_top_label", false, func(r *Row) *data.Float { return r.ECETopLabel }},
	{"ks_top1", false, func(r *Row) *data.Float { return r.KSTop1 }},
	{"ks_class_wise", false, func(r *Row) *data.Float { return r.KSClassWise }},
	{"nll", false, func(r *Row) *data.Float { return r.NLL }},
	{"brier", false, func(r *Row) *data.Float { return r.Brier }},
	{"accuracy", true, func(r *Row) *data.Float { return r.Accuracy }},
}

// Value returns *v, or NaN for nil (a figure not computed).
func Value(v *data.Float) float64 {
	if v == nil {
		return math.NaN()
	}
	return float64(*v)
}

// bestRows returns, per ranked column, the method with the strictly best
// value, or "" when two rows tie for it (the values compared as printed
// would not tell them apart either way).
func bestRows(rows []*Row) map[string]string {
	best := map[string]string{}
	for _, col := range rankedColumns {
		bi, tie := -1, false
		for i, r := range rows {
			if col.value(r) == nil {
				continue // not computed for this row
			}
			v := Value(col.value(r))
			switch {
			case bi < 0:
				bi = i
			case v == Value(col.value(rows[bi])):
				tie = true
			case (col.higher && v > Value(col.value(rows[bi]))) || (!col.higher && v < Value(col.value(rows[bi]))):
				bi, tie = i, false
			}
		}
		if bi >= 0 && !tie {
			best[col.key] = rows[bi].Method
		} else {
			best[col.key] = ""
		}
	}
	return best
}

// fitMethod fits one method on the validation set with default options
// (recal.Fit); progress (may be nil) follows the cross-validation of the
// ODIR methods.
func fitMethod(ctx context.Context, method recal.Method, s *data.Set, gridName string, workers int, seed uint64, progress kde.Progress) (recal.Calibrator, error) {
	if method.NeedsLogits() && s.Logits == nil {
		return nil, fmt.Errorf("needs logits")
	}
	return recal.Fit(ctx, method, s, recal.FitOptions{Linear: recal.LinearOptions{Grid: gridName, Seed: seed, Workers: workers, Progress: progress}})
}

// Options configures Compare. The zero value compares as `calib compare`
// without flags, seed included.
type Options struct {
	// Methods lists the methods fitted; nil means recal.Methods.
	Methods []recal.Method
	// Grid is the ODIR methods' cross-validation grid: "default" (or "")
	// or "full".
	Grid string
	// Seed seeds the ODIR cross-validation folds and the headline's
	// cross-fitting folds. 0 means evaluate.DefaultSeed (1), as for
	// evaluate.Options.
	Seed    uint64
	Workers int // goroutines; 0 means all cores
	// Progress, if not nil, is told what runs.
	Progress progress.Reporter
	// Bandwidths, if not nil, shares the canonical LOO selection on the
	// test set with other computations on it.
	Bandwidths bandwidth.Cache
}

// noProgress shows nothing.
type noProgress struct{}

func (noProgress) Phase(string, ...any)               {}
func (noProgress) Step(string) (kde.Progress, func()) { return nil, func() {} }

// Compare fits the methods on vs and computes the test figures on ts (see
// the package doc and Row). A cancelled ctx stops it and Compare returns
// ctx.Err(); a method that cannot be fitted or applied has Row.Error.
func Compare(ctx context.Context, vs, ts *data.Set, o Options) (*Comparison, error) {
	if vs.K != ts.K {
		return nil, fmt.Errorf("%w: val has K = %d, test K = %d", recal.ErrInput, vs.K, ts.K)
	}
	vs, ts = vs.ScaledWeights(), ts.ScaledWeights()
	methods := o.Methods
	if methods == nil {
		methods = recal.Methods
	}
	gridName, workers, seed, curves := o.Grid, o.Workers, o.Seed, o.Bandwidths
	if seed == 0 {
		seed = evaluate.DefaultSeed
	}
	if gridName == "" {
		gridName = "default"
	}
	var ui progress.Reporter = noProgress{}
	if o.Progress != nil {
		ui = o.Progress
	}
	if err := ts.Require(2, "compare"); err != nil {
		return nil, err
	}
	ui.Phase("recalibration: bandwidths")
	progress, done := ui.Step("canonical bandwidth")
	cv, err := curves.Curve(ctx, kde.Canonical, ts, kde.BandwidthOptions{Workers: workers, Progress: progress})
	done()
	if err != nil {
		return nil, fmt.Errorf("%s: bandwidth: %w", ts.File, err)
	}
	out := &Comparison{NVal: vs.N, NTest: ts.N, K: ts.K, Bandwidth: cv.Bandwidth}
	rows := []*Row{{Method: "uncalibrated", calibrated: ts}}
	for i, m := range methods {
		ui.Phase("fit %d of %d", i+1, len(methods))
		row := &Row{Method: string(m)}
		start := time.Now()
		progress, done := ui.Step("fit " + string(m))
		c, err := fitMethod(ctx, m, vs, gridName, workers, seed, progress)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		done()
		row.FitSeconds = time.Since(start).Seconds()
		if err == nil {
			row.calibrated, err = recal.Apply(c, ts) // its errors name the file
		}
		if err != nil {
			row.Error = oneLine(err)
		} else {
			row.Params = params(c)
		}
		rows = append(rows, row)
	}
	for i, r := range rows {
		if r.calibrated == nil {
			continue // not fitted: Error says why
		}
		ui.Phase("measure %d of %d", i+1, len(rows))
		_, done := ui.Step("measure " + r.Method)
		start := time.Now()
		if err := measureRow(ctx, r, cv.Bandwidth, seed, workers); err != nil {
			r.Error = oneLine(err)
		}
		r.EvalSeconds = time.Since(start).Seconds()
		done()
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	out.Rows = rows
	out.Best = bestRows(rows)
	return out, nil
}

// rowOptions are the evaluate options of every row: the canonical plug-in
// at the one bandwidth h (chosen on the uncalibrated test set), the
// headline's canonical CE_1 (its folds seeded by seed), top-label binned
// ECE_1 (15 equal-width bins), KS top-1, top-2, within-top-2 and
// class-wise, and the proper scores: one definition of every number,
// evaluate's.
func rowOptions(h float64, seed uint64, workers int) evaluate.Options {
	return evaluate.Options{
		Metrics: evaluate.MetricSet{evaluate.Headline.Metric, evaluate.ECEKDE, evaluate.ECEBin, evaluate.KS, evaluate.Brier, evaluate.NLL, evaluate.Accuracy},
		Mode:    evaluate.NotionSet{Notions: []kde.Notion{kde.Canonical}}, P: []float64{1}, KS: evaluate.KSOptions{R: []int{1, 2}},
		Bandwidth: evaluate.Bandwidth(h), NoBandwidthCheck: true,
		Seed: seed, Workers: workers,
	}
}

// measureRow computes the test figures of one compare row with evaluate
// (rowOptions) on the test set with the fitted map applied, exactly as
// calib eval --calibrator measures the map calib fit writes (the spline's
// top-2 and within-top-2 curves, which its map does not apply, are not
// used: a row describes the map). A figure that cannot be computed stays
// nil, its error in the error returned; the others are set.
func measureRow(ctx context.Context, r *Row, h float64, seed uint64, workers int) error {
	s := r.calibrated
	ev, err := evaluate.Evaluate(ctx, s, rowOptions(h, seed, workers))
	if err != nil {
		return err
	}
	var errs []string
	type E = evaluate.Key
	for _, f := range []struct {
		key evaluate.Key
		dst **data.Float
	}{
		{E{Metric: evaluate.ECEKDE, Notion: notion.Canonical, P: 1}, &r.ECEKDE},
		{evaluate.Headline, &r.Headline},
		{E{Metric: evaluate.ECEBin, Notion: notion.TopLabel, P: 1}, &r.ECETopLabel},
		{E{Metric: evaluate.KS, Notion: notion.TopR, R: 1}, &r.KSTop1},
		{E{Metric: evaluate.KS, Notion: notion.TopR, R: 2}, &r.KSTop2},
		{E{Metric: evaluate.KS, Notion: notion.WithinTopR, R: 2}, &r.KSWithinTop2},
		{E{Metric: evaluate.KS, Notion: notion.ClassWise}, &r.KSClassWise},
		{E{Metric: evaluate.Brier}, &r.Brier},
		{E{Metric: evaluate.NLL}, &r.NLL},
		{E{Metric: evaluate.Accuracy}, &r.Accuracy},
	} {
		e := ev.Lookup(f.key)
		switch {
		case e == nil:
			if failed := ev.Lookup(E{Metric: f.key.Metric}); failed != nil && failed.Error != "" { // the metric failed as a whole
				e = failed
			} else {
				return fmt.Errorf("compare: %s: no %+v entry", s.File, f.key)
			}
		}
		if e.Value != nil && e.Error == "" {
			v := *e.Value
			*f.dst = &v
		} else if !slices.Contains(errs, e.Error) {
			errs = append(errs, e.Error)
		}
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

// params summarises a fitted map for the table.
func params(c recal.Calibrator) string {
	switch m := c.(type) {
	case *recal.Temperature:
		return fmt.Sprintf("T=%.4f", m.Temperature)
	case *recal.Linear:
		if m.Method == recal.MethodVector {
			return ""
		}
		return fmt.Sprintf("lambda=%g mu=%g", m.Lambda, m.Mu)
	case *recal.Spline:
		return fmt.Sprintf("%d knots", m.Top1.Knots)
	}
	return ""
}

// Cells are the text cells of a row's figures in the table's order
// (accuracy, NLL, Brier, CE_1, ECE top-1, KS top-1, top-2, within-2,
// class-wise, plug-in ECE^KDE): percentages for accuracy, ECE and KS, "-"
// for a figure not computed.
func Cells(r *Row) []string {
	pct := func(v *data.Float) string {
		if v == nil {
			return "-"
		}
		return fmt.Sprintf("%.3f", 100*float64(*v))
	}
	num := func(v *data.Float) string {
		if v == nil {
			return "-"
		}
		return fmt.Sprintf("%.4f", float64(*v))
	}
	return []string{pct(r.Accuracy), num(r.NLL), num(r.Brier), num(r.Headline), pct(r.ECETopLabel), pct(r.KSTop1), pct(r.KSTop2),
		pct(r.KSWithinTop2), pct(r.KSClassWise), num(r.ECEKDE)}
}

// WriteJSON writes the comparison as one JSON object.
func WriteJSON(w io.Writer, out *Comparison) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(out)
}

// WriteText writes the comparison as `calib compare` prints it: a table,
// the best method per ranked column and why the plug-in is not ranked.
func WriteText(w io.Writer, out *Comparison) error {
	fmt.Fprintf(w, "val n = %d, test n = %d, K = %d; CE_1: %s on each row's test predictions; plug-in ECE^KDE at h = %.4g (LOO on the uncalibrated test set)\n\n",
		out.NVal, out.NTest, out.K, evaluate.Headline, out.Bandwidth)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "method\taccuracy\tNLL\tBrier\tCE_1\tECE top-1\tKS top-1\tKS top-2\tKS within-2\tKS class-wise\tplug-in ECE^KDE\tfit\tparams")
	var errs []string
	for _, r := range out.Rows {
		if r.calibrated == nil && r.Error != "" && r.Accuracy == nil {
			fmt.Fprintf(tw, "%s\terror (below)\t\t\t\t\t\t\t\t\t\t%.1fs\t\n", r.Method, r.FitSeconds)
		} else {
			c := Cells(r)
			fmt.Fprintf(tw, "%s\t%s\t%.1fs\t%s\n", r.Method, strings.Join(c, "\t"), r.FitSeconds, r.Params)
		}
		if r.Error != "" {
			errs = append(errs, fmt.Sprintf("%s: %s", r.Method, r.Error))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, e := range errs {
		fmt.Fprintf(w, "error: %s\n", e)
	}
	fmt.Fprintln(w, "\naccuracy, ECE and KS in %; NLL and Brier per sample; CE_1 and plug-in ECE^KDE are canonical CE_1.")
	var best []string
	for _, col := range rankedColumns {
		m := out.Best[col.key]
		if m == "" {
			m = "tie"
		}
		best = append(best, col.key+" "+m)
	}
	fmt.Fprintf(w, "best: %s.\n%s\n", strings.Join(best, ", "), RankingNote)
	return nil
}

// oneLine is err's message on one line.
func oneLine(err error) string {
	return strings.NewReplacer("\r", " ", "\n", " ").Replace(err.Error())
}
