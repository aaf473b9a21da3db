// Package evaltext renders an evaluation as text: the table `calib eval`
// prints (WriteText) and the notes that say what its numbers mean, shared by
// the command and the report (package report), so that each is written
// once.
package evaltext

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/evaluate"
	"github.com/calib-dev/calib/notion"
)

// WriteText writes the evaluation as `calib eval` prints it: the input, a
// table per group (metric, notion, p, settings, value, root, interval,
// time), the warnings and what the numbers mean.
func WriteText(w io.Writer, out *evaluate.Evaluation) error {
	writeHeader(w, out)
	if err := writeTable(w, out); err != nil {
		return err
	}
	writeMessages(w, out)
	writeNotes(w, out)
	return nil
}

// writeHeader writes the input's line (file, n, K, kind, weights) and
// what was done to it, and the evaluation's warnings.
func writeHeader(w io.Writer, out *evaluate.Evaluation) {
	kind := "probabilities"
	switch {
	case out.Input == "logits":
		kind = "logits (softmax in float64)"
		if out.Binary {
			kind = "logits (one column, sigmoid)"
		}
	case out.Binary:
		kind = "binary (one column)"
	}
	if out.Calibrated != "" {
		kind += ", after " + out.Calibrated
	}
	weights := ""
	if out.WeightSum > 0 {
		sum := fmt.Sprintf("%g", float64(out.WeightSum))
		if math.IsInf(float64(out.WeightSum), 1) {
			sum = "above the float64 range; every number is computed on the weights divided by a common power of two"
		}
		weights = fmt.Sprintf(", sample weights (sum %s): every number below is weighted", sum)
	}
	fmt.Fprintf(w, "%s: n = %d, K = %d, %s%s\n", out.File, out.N, out.K, kind, weights)
	if out.Renormalized > 0 {
		fmt.Fprintf(w, "renormalized %d rows whose sum was off by more than the tolerance\n", out.Renormalized)
	}
	if out.Rounded > 0 {
		fmt.Fprintf(w, "rescaled %d rows to sum to 1: their values were rounded to a few decimals, which explains their sum's error\n", out.Rounded)
	}
	if out.Modes != "" {
		fmt.Fprintf(w, "ece_kde mode: %s\n", out.Modes)
	}
	for _, m := range out.Warnings {
		fmt.Fprintf(w, "warning: %s\n", m)
	}
}

// writeTable writes the entries, a table per group (Result.Group).
func writeTable(w io.Writer, out *evaluate.Evaluation) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	group := ""
	pvalues := out.HasPValues()
	pcol, phead, ptab := "", "", ""
	if pvalues {
		phead, ptab = "\tp-value", "\t"
	}
	for _, e := range out.Results {
		if e.Group() != group {
			group = e.Group()
			fmt.Fprintf(tw, "\n%s\t\t\t\t\t\t\t%s\n", strings.ToUpper(group), ptab)
			fmt.Fprintf(tw, "metric\tnotion\tp\tsettings\tvalue\troot\tinterval%s\ttime\n", phead)
		}
		secs := "" // entries computed with the one before have no time of their own
		if e.Seconds != nil {
			secs = fmt.Sprintf("%.2fs", *e.Seconds)
		}
		if pvalues {
			pcol = "\t" + PValueCell(e)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s%s\t%s\n", e.Metric, notionCell(e), pCell(e), settings(e),
			valueCell(e), floatCell(e.Root), intervalCell(e), pcol, secs)
	}
	return tw.Flush()
}

// writeMessages writes the failed entries' errors (their value cells say
// "error", so that one long message does not widen every row) and the
// entries' warnings, each once.
func writeMessages(w io.Writer, out *evaluate.Evaluation) {
	for _, e := range out.Results {
		if e.Error == "" {
			continue
		}
		what := string(e.Metric)
		if nc := notionCell(e); nc != "-" {
			what += " " + nc
		}
		if p := pCell(e); p != "-" && p != "" {
			what += " p=" + p
		}
		if strings.HasPrefix(e.Error, string(e.Metric)+":") {
			what = strings.TrimPrefix(what, string(e.Metric)) // the message names the metric
			what = strings.TrimSpace(what)
		}
		if what == "" {
			fmt.Fprintf(w, "error: %s\n", e.Error)
		} else {
			fmt.Fprintf(w, "error: %s: %s\n", what, e.Error)
		}
	}
	seen := map[string]bool{}
	for _, e := range out.Results {
		for _, m := range e.Warnings.Strings() {
			what := string(e.Notion) + " bandwidth" // the kernel metrics' warnings come from the bandwidth choice
			if e.Bandwidth == nil {
				what = string(e.Metric) + " " + string(e.Notion)
			}
			if !seen[what+m] {
				seen[what+m] = true
				fmt.Fprintf(w, "warning: %s: %s\n", what, m)
			}
		}
	}
}

// writeNotes writes the notes below the table: what a value is, the
// intervals, p-values, estimators, what more to ask for, the advice, and
// the wall time.
func writeNotes(w io.Writer, out *evaluate.Evaluation) {
	fmt.Fprintf(w, "\n%s\n", NoteValue)
	for _, line := range IntervalNotes(out) {
		fmt.Fprintln(w, line)
	}
	if out.HasPValues() {
		fmt.Fprintln(w, PValueNote(out))
	}
	for _, line := range EstimatorNotes(out) {
		fmt.Fprintln(w, line)
	}
	if defaultMetrics(out) {
		fmt.Fprintln(w, NoteMore())
	}
	if a := AdviceNote(out); a != "" {
		fmt.Fprintln(w, a)
	}
	fmt.Fprintf(w, "wall time %.3f s\n", out.Seconds)
}

// Row returns the result's cells as the table shows them: group, metric,
// notion, p, settings, value, root, interval.
func Row(e *evaluate.Result) []string {
	return []string{e.Group(), string(e.Metric), notionCell(e), pCell(e), settings(e), valueCell(e), floatCell(e.Root), intervalCell(e)}
}

func notionCell(e *evaluate.Result) string {
	n := string(e.Notion)
	if e.R != nil {
		n = fmt.Sprintf("%s (r=%d)", strings.TrimSuffix(n, "_r"), *e.R)
	}
	switch e.Aggregate {
	case "mean":
		n += " (mean)"
	case "sum":
		n += " (sum over classes)"
	}
	if len(e.Warnings) > 0 && e.Bandwidth == nil {
		n += " [!]" // a warning under the table says why
	}
	if n == "" {
		n = "-"
	}
	return n
}

// PValueCell is an entry's p-value as the tables show it ("-": none).
func PValueCell(e *evaluate.Result) string {
	if e.PValue == nil {
		return "-"
	}
	return fmt.Sprintf("%.4g", float64(*e.PValue))
}

// PValueNote says what the p-values are (one line).
func PValueNote(out *evaluate.Evaluation) string {
	b := 0
	for _, e := range out.Results {
		if e.PValueResamples != nil {
			b = *e.PValueResamples
			break
		}
	}
	return fmt.Sprintf("p-value: how often a calibrated model with these predictions reads at least this value: consistency resampling, %d label vectors drawn from the predictions, p = (1 + #{T_b >= T}) / (1 + %d); small p: miscalibrated (each test holds its level alone, not the family's).", b, b)
}

func pCell(e *evaluate.Result) string {
	if e.P == nil {
		return "-"
	}
	return fmt.Sprintf("%g", *e.P)
}

func settings(e *evaluate.Result) string {
	var parts []string
	switch {
	case e.Metric == evaluate.SmECE && e.Bandwidth != nil:
		parts = append(parts, fmt.Sprintf("sigma=%.4g %s", *e.Bandwidth, strings.ReplaceAll(e.BandwidthMethod, "-", " ")))
	case e.Metric == evaluate.SmECE && len(e.PerClassBandwidth) > 0:
		parts = append(parts, fmt.Sprintf("sigma=%.4g to %.4g %s", slices.Min(e.PerClassBandwidth), slices.Max(e.PerClassBandwidth), strings.ReplaceAll(e.BandwidthMethod, "-", " ")))
	case e.Bandwidth != nil:
		parts = append(parts, fmt.Sprintf("h=%.4g %s", *e.Bandwidth, strings.ReplaceAll(e.BandwidthMethod, "-", " ")))
		if e.CVBandwidth != nil {
			parts = append(parts, fmt.Sprintf("h_cv=%.4g", *e.CVBandwidth))
		}
	}
	if e.Bins == nil && e.Binning != "" && e.Metric == evaluate.ECESweep {
		parts = append(parts, "sweep: "+strings.ReplaceAll(e.Binning, "_", "-"))
	} else if e.Bins != nil && e.Metric == evaluate.ECESweep {
		parts = append(parts, fmt.Sprintf("sweep: %d %s bins", *e.Bins, strings.ReplaceAll(e.Binning, "_", "-")))
	} else if e.Bins != nil {
		parts = append(parts, fmt.Sprintf("%d %s bins", *e.Bins, strings.ReplaceAll(e.Binning, "_", "-")))
	}
	if e.Width != nil {
		parts = append(parts, fmt.Sprintf("width %g", *e.Width))
	}
	if e.Variance != nil {
		parts = append(parts, fmt.Sprintf("variance %.6f", float64(*e.Variance)))
	}
	if e.Excluded != nil && *e.Excluded > 0 {
		parts = append(parts, fmt.Sprintf("%d excluded", *e.Excluded))
	}
	if e.EvalPoints != nil {
		parts = append(parts, fmt.Sprintf("m=%d points", *e.EvalPoints))
	}
	if e.Loss != "" && e.Folds != nil {
		parts = append(parts, fmt.Sprintf("%s loss, %s, %d folds", e.Loss, e.Family, *e.Folds))
		if e.Over != nil && e.Under != nil {
			parts = append(parts, fmt.Sprintf("over %.4g, under %.4g", float64(*e.Over), float64(*e.Under)))
		}
	}
	if e.Threshold != nil && *e.Threshold > 0 {
		parts = append(parts, fmt.Sprintf("threshold %g (TACE)", *e.Threshold))
	}
	if e.Convention != "" {
		parts = append(parts, e.Convention)
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

func valueCell(e *evaluate.Result) string {
	if e.Error != "" {
		return "error (below)"
	}
	return floatCell(e.Value)
}

func floatCell(v *data.Float) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.6f", float64(*v))
}

func intervalCell(e *evaluate.Result) string {
	if lo, hi, ok := shownInterval(e); ok {
		return fmt.Sprintf("[%.6f, %.6f]", lo, hi)
	}
	return "-"
}

// shownInterval is the interval a table shows for the entry: its one
// interval (evaluate.Result.OneInterval: the estimator's own, else the
// bootstrap's).
func shownInterval(e *evaluate.Result) (lo, hi float64, ok bool) {
	iv, ok := e.OneInterval()
	return iv.Lo, iv.Hi, ok
}

// VariationalIntervalNote says how ece_variational's intervals are made
// (variational.Result): under calib eval's table where one is shown.
const VariationalIntervalNote = "ece_variational intervals (95 %, the estimator's own: --ci adds none to them): the rows' spread and the refitted maps' (map_se) at the level that holds every candidate family at once (z), the lower end the chosen family's, the upper end the largest of the families' (each raised by half its maps' optimism: reach), so that a richer family's fit that reaches further widens it; against ground truth: docs/evidence/experiments/headline.txt. Where the estimate reads low (a distortion no parametric family holds, at small n), trust its lower end; the upper end says how far a richer fit could reach."

// NoteValue says what the value column means, under calib eval's table and
// the report's metrics table.
const NoteValue = "value: CE_p^p for every p (p=1: CE_1; p=2: CE_2^2, root CE_2); class-wise binned/KS values are means over classes, class-wise ece_kde sums them (--class-mean: the mean)."

// Notes on what the canonical kernel estimates mean, shown under the table
// and the report's metrics table when the metric is present.
const (
	noteECEKDE  = "ece_kde: the plug-in ECE^KDE (1/n) sum_j ||r_j - f_j||_p^p: smooth and differentiable (a training loss), but biased upward on small samples by an amount that depends on how the predictions are spread (a calibrated model reads about 0.5 at n = 1,000): not the size of the error, and not comparable across recalibration maps."
	noteWitness = "ece_witness: the cross-fitted residual witness (p = 1, a lower bound of CE_1) and the debiased kernel U-statistic (p = 2, may be slightly negative): close to the truth at K <= 4, far below it from K = 10 (0.07 to 0.97 of CE_1 in simulations): do not report it above K = 4."
)

// NoteMore is the note that closes a table of evaluate.DefaultMetrics: the metrics
// --metrics all adds (evaluate.Metrics less evaluate.DefaultMetrics).
func NoteMore() string {
	var more []string
	for _, m := range evaluate.Metrics {
		if !evaluate.DefaultMetrics.Has(m) {
			more = append(more, string(m))
		}
	}
	return "more: --metrics all adds " + strings.Join(more, ", ") + " (each defined in docs/metrics.md)."
}

// defaultMetrics reports whether out's results are of evaluate.DefaultMetrics
// exactly (calib eval without --metrics or --mode).
func defaultMetrics(out *evaluate.Evaluation) bool {
	seen := map[evaluate.Metric]bool{}
	for _, e := range out.Results {
		seen[e.Metric] = true
	}
	if len(seen) != len(evaluate.DefaultMetrics) {
		return false
	}
	for _, m := range evaluate.DefaultMetrics {
		if !seen[m] {
			return false
		}
	}
	return true
}

// IntervalNotes says how the intervals in out were made, one line each.
func IntervalNotes(out *evaluate.Evaluation) []string {
	var centred, pct bool
	for _, e := range out.Results {
		centred = centred || e.CIMethod == "centered"
		pct = pct || e.CIMethod == "percentile"
	}
	var notes []string
	for _, e := range out.Results {
		if e.IntervalKind == "sampling" {
			notes = append(notes, fmt.Sprintf("ece_kde and mmce intervals (streamed): the estimate from %d evaluation points drawn uniformly from the n rows, each against all n rows; the interval is the %g%% sampling interval of the full-data value (se in the JSON).", *e.EvalPoints, 100**e.IntervalLevel))
			break
		}
	}
	for _, e := range out.Results {
		if e.IntervalKind == "bound" {
			notes = append(notes, "ks intervals (streamed): KS from the score cells lies within these bounds for certain; the value is their midpoint.")
			break
		}
	}
	for _, e := range out.Results {
		if e.IntervalKind == "cross-fit" {
			notes = append(notes, VariationalIntervalNote)
			break
		}
	}
	if pct {
		notes = append(notes, "intervals: bootstrap percentile intervals for the means of per-point terms (Brier, NLL, accuracy, confidence, ece_witness).")
	}
	if centred {
		notes = append(notes, "intervals of the biased estimators (binned ECE and MCE, debiased binned L2, plug-in ece_kde, KS, MMCE, sharpness): the bootstrap spread centred on the estimate (its resampled values sit above it); they show the sampling spread at this n, not the bias, which the JSON gives as ci_bias.")
	}
	return notes
}

// EstimatorNotes returns the notes of the kernel estimates in out: what
// ece_kde and ece_witness mean and which to trust.
func EstimatorNotes(out *evaluate.Evaluation) []string {
	var kdeSeen, witness bool
	for _, e := range out.Results {
		kdeSeen = kdeSeen || (e.Metric == evaluate.ECEKDE && e.Notion == notion.Canonical)
		witness = witness || e.Metric == evaluate.ECEWitness
	}
	var notes []string
	if kdeSeen {
		notes = append(notes, noteECEKDE)
	}
	if witness {
		notes = append(notes, noteWitness)
	}
	return notes
}

// AdviceNote is the note under an evaluation's table that names the
// number to report with its value and interval, and the paper number
// with its value, as found in ev; "" when ev has neither. Where the
// headline's metric was asked for and failed, it says so instead of
// asking for the metric.
func AdviceNote(ev *evaluate.Evaluation) string {
	h, p := ev.Lookup(evaluate.Headline), ev.Lookup(evaluate.PaperNumber)
	hv := h != nil && h.Value != nil
	pv := p != nil && p.Value != nil
	failed := false // an entry of the headline's metric that could not be computed
	for _, e := range ev.Results {
		failed = failed || (e.Metric == evaluate.Headline.Metric && e.Value == nil && e.Error != "")
	}
	switch {
	case !hv && failed && pv:
		return fmt.Sprintf("%s, the number to report, could not be computed on these data (its error is above); %s = %.4f is the number papers print.", evaluate.Headline.Metric, evaluate.PaperNumber, float64(*p.Value))
	case !hv && failed:
		return fmt.Sprintf("%s, the number to report, could not be computed on these data (its error is above).", evaluate.Headline.Metric)
	case hv && pv:
		return fmt.Sprintf("report: %s = %.4f%s (the canonical CE_1: how miscalibrated the model is); for comparison with papers: %s = %.4f (the 15-bin top-label ECE, a different number).",
			evaluate.Headline, float64(*h.Value), IntervalText(h), evaluate.PaperNumber, float64(*p.Value))
	case hv:
		return fmt.Sprintf("report: %s = %.4f%s (the canonical CE_1: how miscalibrated the model is).", evaluate.Headline, float64(*h.Value), IntervalText(h))
	case pv:
		return fmt.Sprintf("to report how miscalibrated the model is, add %s to --metrics (the canonical CE_1 with its interval); %s = %.4f is the number papers print.", evaluate.Headline.Metric, evaluate.PaperNumber, float64(*p.Value))
	}
	return ""
}

// IntervalText is " [lo, hi]" of the interval the table shows for the
// entry, or "".
func IntervalText(e *evaluate.Result) string {
	if lo, hi, ok := shownInterval(e); ok {
		return fmt.Sprintf(" [%.4f, %.4f]", lo, hi)
	}
	return ""
}
