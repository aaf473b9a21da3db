// Package compare fits every recalibration method on a validation set and
// measures each on a test set, as `calib compare` prints it: accuracy,
// NLL, Brier, the canonical CE_1 that calib reports (evaluate.Headline:
// ece_variational, cross-fitted on each row's test predictions), top-label
// ECE, KS errors and the plug-in ECE^KDE, and the one method it
// recommends (Recommend: the lowest headline CE_1 among the rows that do
// not worsen the test NLL, near-ties broken by the NLL).
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
	Accuracy *data.Float `json:"accuracy"`
	NLL      *data.Float `json:"nll"`
	Brier    *data.Float `json:"brier"`
	ECEKDE   *data.Float `json:"ece_kde_canonical"`
	Headline *data.Float `json:"ece_variational"` // canonical CE_1, evaluate.Headline
	// HeadlineInterval and HeadlineSE are the headline's 95 % cross-fit
	// interval and standard error (evaluate.Result.Interval, SE), nil
	// with Headline.
	HeadlineInterval []data.Float `json:"ece_variational_interval,omitempty"`
	HeadlineSE       *data.Float  `json:"ece_variational_se,omitempty"`
	ECETopLabel      *data.Float  `json:"ece_top_label"`
	KSTop1           *data.Float  `json:"ks_top1"`
	KSTop2           *data.Float  `json:"ks_top2"`
	KSWithinTop2     *data.Float  `json:"ks_within_top2"`
	KSClassWise      *data.Float  `json:"ks_class_wise"`
	// WorsensNLL flags a map whose test NLL is above the uncalibrated
	// model's: Recommend never recommends it while a row that does not
	// worsen the NLL can be ranked.
	WorsensNLL  bool    `json:"worsens_nll,omitempty"`
	Params      string  `json:"params,omitempty"`
	Error       string  `json:"error,omitempty"`
	EvalSeconds float64 `json:"eval_seconds"`
	calibrated  *data.Set
}

// Comparison is the JSON object of `calib compare --json`.
type Comparison struct {
	NVal      int     `json:"n_val"`
	NTest     int     `json:"n_test"`
	K         int     `json:"k"`
	Bandwidth float64 `json:"bandwidth"` // of the canonical ECE^KDE, for every row
	Rows      []*Row  `json:"rows"`
	// Recommended is the one method calib compare recommends, with why
	// (Recommend); the other columns of Rows are for reference.
	Recommended *Recommendation `json:"recommended"`
	// Provenance is the caller's record of how the comparison was made
	// (calib writes the version, command, options and inputs); not read
	// here.
	Provenance *data.Provenance `json:"provenance,omitempty"`
}

// RankingNote says how calib compare chooses the map it recommends
// (Recommend) and why the plug-in ECE^KDE does not rank maps.
var RankingNote = "Ranked first by " + evaluate.Headline.String() + " (the canonical CE_1 that calib reports, cross-fitted on each row's test predictions): " +
	"the recommended row (best) is the one with the lowest CE_1 among those whose test NLL is not above the uncalibrated model's (uncalibrated included: best uncalibrated means keep the model as it is), " +
	"and of the rows whose CE_1 is within noise of that lowest one (a difference at most its standard error, the square root of the sum of the two squared standard errors) the one with the lowest NLL. " +
	"The other columns are for reference. " +
	"The plug-in ECE^KDE is shown but not ranked: its upward bias depends on how the predictions are spread, which each map changes, so its values are not comparable across maps (it can rank a better map worse)."

// Value returns *v, or NaN for nil (a figure not computed).
func Value(v *data.Float) float64 {
	if v == nil {
		return math.NaN()
	}
	return float64(*v)
}

// Recommendation is the one method calib compare recommends (Recommend)
// and why.
type Recommendation struct {
	// Method is the recommended row's method: a map, "uncalibrated" (keep
	// the model as it is: no map beats it), or "" when no row can be
	// ranked (none has both a headline and a test NLL; Reason says so).
	Method string `json:"method"`
	// Reason says in one line why, with the figures (calib compare prints
	// it on its best: line).
	Reason string `json:"reason"`
	// The recommended row's headline CE_1 (evaluate.Headline), its 95 %
	// cross-fit interval and standard error, its test NLL, and the
	// uncalibrated model's test NLL.
	Headline        *data.Float  `json:"ece_variational"`
	Interval        []data.Float `json:"ece_variational_interval,omitempty"`
	SE              *data.Float  `json:"ece_variational_se,omitempty"`
	NLL             *data.Float  `json:"nll"`
	UncalibratedNLL *data.Float  `json:"uncalibrated_nll"`
	// Lowest is the eligible row with the lowest headline; NearTies are
	// the eligible rows within noise of it (Lowest first, then in row
	// order), among which the lowest NLL was chosen.
	Lowest   string   `json:"lowest_ece_variational,omitempty"`
	NearTies []string `json:"near_ties,omitempty"`
	// WorsensNLL lists the maps whose test NLL is above the uncalibrated
	// model's (Row.WorsensNLL), in row order.
	WorsensNLL []string `json:"worsens_nll,omitempty"`
}

// NearTie reports whether two headline estimates a and b, with standard
// errors sa and sb, are within noise of each other: |a - b| <=
// sqrt(sa^2 + sb^2), the standard error of the difference of independent
// estimates (a NaN error counts as 0). Both rows are measured on the same
// test rows, so their estimates are positively correlated and the paired
// difference's error is smaller: the rule counts more pairs as near-ties
// than a paired one would, handing more choices to the NLL.
func NearTie(a, sa, b, sb float64) bool {
	if math.IsNaN(sa) {
		sa = 0
	}
	if math.IsNaN(sb) {
		sb = 0
	}
	return math.Abs(a-b) <= math.Hypot(sa, sb)
}

// Recommend chooses the one method calib compare recommends among rows
// (rows[0] the uncalibrated model, as Compare makes them) and sets each
// map's Row.WorsensNLL. The rule:
//
//  1. A map worsens the proper score when its test NLL is above the
//     uncalibrated model's (strictly; not judged when the uncalibrated
//     NLL was not computed). Such a row is flagged (Row.WorsensNLL) and is
//     not eligible; the uncalibrated row is always eligible.
//  2. Of the eligible rows with both a headline (evaluate.Headline, the
//     canonical CE_1 of the row's test predictions) and a test NLL, the
//     one with the lowest headline is Lowest.
//  3. The near-ties are the eligible ranked rows whose headline is within
//     noise of Lowest's (NearTie: a difference at most the square root of
//     the sum of their squared standard errors); the recommendation is
//     the near-tie with the lowest test NLL (equal NLL: the lower
//     headline, then the earlier row).
//  4. When no eligible row has both figures, the uncalibrated model is
//     recommended if it has its NLL (every map with a headline worsens
//     the NLL), else none (Method "").
//
// The recommendation "uncalibrated" says keep the model as it is. The
// plug-in ECE^KDE never ranks (RankingNote); the other columns are for
// reference.
func Recommend(rows []*Row) *Recommendation {
	var unc *Row
	if len(rows) > 0 && rows[0].Method == "uncalibrated" {
		unc = rows[0]
	}
	rec := &Recommendation{}
	uncNLL := math.NaN()
	if unc != nil && unc.NLL != nil {
		uncNLL = Value(unc.NLL)
		rec.UncalibratedNLL = unc.NLL
	}
	var flagged []*Row
	for _, r := range rows {
		r.WorsensNLL = r != unc && r.NLL != nil && Value(r.NLL) > uncNLL // false against NaN
		if r.WorsensNLL {
			flagged = append(flagged, r)
			rec.WorsensNLL = append(rec.WorsensNLL, r.Method)
		}
	}
	ranked := func(r *Row) bool { return r.Headline != nil && r.NLL != nil && !math.IsNaN(Value(r.Headline)) }
	var pool []*Row
	for _, r := range rows {
		if ranked(r) && !r.WorsensNLL {
			pool = append(pool, r)
		}
	}
	if len(pool) == 0 {
		if unc != nil && unc.NLL != nil { // every ranked map worsens the NLL
			rec.Method, rec.NLL = unc.Method, unc.NLL
			rec.Reason = "keep the model as it is: " + nllAgainst(unc, uncNLL) + "; no map that does not worsen NLL has a CE_1 to rank it by" + worsened(flagged, uncNLL)
		} else {
			rec.Reason = "no row has both " + string(evaluate.Headline.Metric) + " and NLL: nothing to rank"
		}
		return rec
	}
	lowest := pool[0]
	for _, r := range pool[1:] {
		if Value(r.Headline) < Value(lowest.Headline) {
			lowest = r
		}
	}
	ties := []*Row{lowest}
	for _, r := range pool {
		if r != lowest && NearTie(Value(r.Headline), Value(r.HeadlineSE), Value(lowest.Headline), Value(lowest.HeadlineSE)) {
			ties = append(ties, r)
		}
	}
	best := ties[0]
	for _, r := range ties[1:] {
		if n, b := Value(r.NLL), Value(best.NLL); n < b || n == b && Value(r.Headline) < Value(best.Headline) {
			best = r
		}
	}
	rec.Method, rec.Headline, rec.Interval, rec.SE, rec.NLL = best.Method, best.Headline, best.HeadlineInterval, best.HeadlineSE, best.NLL
	rec.Lowest = lowest.Method
	names := make([]string, len(ties))
	for i, r := range ties {
		names[i] = r.Method
	}
	rec.NearTies = names
	const eligible = "of the rows whose NLL is not above the uncalibrated model's"
	var why string
	switch {
	case len(ties) == 1:
		why = "the lowest CE_1 " + eligible + ", no other within noise of it"
	case best == lowest:
		why = fmt.Sprintf("the lowest CE_1 %s, and the lowest NLL of the %d rows within noise of it: %s", eligible, len(ties), strings.Join(names, ", "))
	default:
		why = fmt.Sprintf("its CE_1 within noise of the lowest %s (%s %.4f), and the lowest NLL of the %d rows within noise of it: %s",
			eligible, lowest.Method, Value(lowest.Headline), len(ties), strings.Join(names, ", "))
	}
	prefix := ""
	if best == unc {
		prefix = "keep the model as it is: "
	}
	rec.Reason = prefix + headlineText(best) + ", " + nllAgainst(best, uncNLL) + "; " + why + worsened(flagged, uncNLL)
	return rec
}

// headlineText is a row's headline with its interval, as the best: line
// prints it.
func headlineText(r *Row) string {
	s := fmt.Sprintf("%s %.4f", evaluate.Headline.Metric, Value(r.Headline))
	if len(r.HeadlineInterval) == 2 {
		s += fmt.Sprintf(" [%.4f, %.4f]", float64(r.HeadlineInterval[0]), float64(r.HeadlineInterval[1]))
	}
	return s
}

// nllAgainst is a row's NLL against the uncalibrated model's.
func nllAgainst(r *Row, uncNLL float64) string {
	switch {
	case r.Method == "uncalibrated" || math.IsNaN(uncNLL):
		return fmt.Sprintf("NLL %.4f", Value(r.NLL))
	}
	return fmt.Sprintf("NLL %.4f against %.4f uncalibrated", Value(r.NLL), uncNLL)
}

// worsened names the maps that worsen the NLL, for the reason's end.
func worsened(flagged []*Row, uncNLL float64) string {
	if len(flagged) == 0 {
		return ""
	}
	parts := make([]string, len(flagged))
	for i, r := range flagged {
		parts[i] = fmt.Sprintf("%s %.4f", r.Method, Value(r.NLL))
	}
	return fmt.Sprintf("; not recommended, their test NLL above the uncalibrated %.4f: %s", uncNLL, strings.Join(parts, ", "))
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
		methods = recal.Methods()
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
	out.Recommended = Recommend(rows)
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
	if e := ev.Lookup(evaluate.Headline); r.Headline != nil && e != nil {
		if len(e.Interval) == 2 {
			r.HeadlineInterval = slices.Clone(e.Interval)
		}
		if e.SE != nil {
			se := *e.SE
			r.HeadlineSE = &se
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
// one best: line naming the recommended method (Comparison.Recommended)
// with its reason, and how it is chosen (RankingNote).
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
	rec := out.Recommended
	if rec == nil {
		rec = Recommend(out.Rows)
	}
	if rec.Method == "" {
		fmt.Fprintf(w, "best: none (%s).\n%s\n", rec.Reason, RankingNote)
	} else {
		fmt.Fprintf(w, "best: %s (%s).\n%s\n", rec.Method, rec.Reason, RankingNote)
	}
	return nil
}

// oneLine is err's message on one line.
func oneLine(err error) string {
	return strings.NewReplacer("\r", " ", "\n", " ").Replace(err.Error())
}
