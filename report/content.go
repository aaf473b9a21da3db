package report

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/calib-dev/calib/calibtest"
	"github.com/calib-dev/calib/compare"
	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/evaluate"
	"github.com/calib-dev/calib/evaluate/evaltext"
	"github.com/calib-dev/calib/metric"
)

// summaryFacts describes the data and the headline figure of ev.
func summaryFacts(s, val *data.Set, ev *evaluate.Evaluation) []Fact {
	kind := "probabilities"
	if s.Logits != nil {
		kind = "logits (softmax in float64)"
	}
	if s.Binary {
		kind += ", binary (one column p1)"
	}
	// Weighted as the table is (s.Weights nil: all 1).
	acc := metric.Accuracy(s.Probs, s.Labels, s.K, s.Weights)
	conf := metric.Confidence(s.Probs, s.Labels, s.K, s.Weights)
	facts := []Fact{
		{Name: "predictions", Value: s.File},
		{Name: "samples", Value: strconv.Itoa(s.N)},
		{Name: "classes", Value: strconv.Itoa(s.K)},
		{Name: "input", Value: kind},
		{Name: "accuracy", Value: fmt.Sprintf("%.2f%%", 100*acc)},
		{Name: "mean confidence", Value: fmt.Sprintf("%.2f%% (%s)", 100*conf, overUnder(conf-acc))},
	}
	if s.Renormalized > 0 {
		facts = append(facts, Fact{Name: "renormalized rows", Value: strconv.Itoa(s.Renormalized)})
	}
	if s.Rounded > 0 {
		facts = append(facts, Fact{Name: "rows rescaled (values rounded to few decimals)", Value: strconv.Itoa(s.Rounded)})
	}
	if val != nil {
		facts = append(facts, Fact{Name: "validation set", Value: fmt.Sprintf("%s (n = %d)", val.File, val.N)})
	}
	return append(facts, Fact{Name: EvaluationTime, Value: fmt.Sprintf("%.1f s", ev.Seconds)})
}

// answerFacts are the report's first screen: the number to report with
// its interval (evaluate.Headline), the number papers print
// (evaluate.PaperNumber) and the tests' verdict (tests may be nil).
func answerFacts(ev *evaluate.Evaluation, tests *calibtest.Report) []Fact {
	var facts []Fact
	if e := ev.Lookup(evaluate.Headline); e != nil && e.Value != nil {
		facts = append(facts, Fact{Name: HeadlineFact, Value: fmt.Sprintf("%.4f%s", float64(*e.Value), evaltext.IntervalText(e))})
	}
	if e := ev.Lookup(evaluate.PaperNumber); e != nil && e.Value != nil {
		facts = append(facts, Fact{Name: "for comparison with papers (" + evaluate.PaperNumber.String() + ", the 15-bin top-label ECE)", Value: fmt.Sprintf("%.4f", float64(*e.Value))})
	}
	if tests != nil {
		facts = append(facts, Fact{Name: "is it calibrated? (the tests below)", Value: tests.Answer})
	}
	return facts
}

// HeadlineFact is the name of the fact that gives the number to report
// (evaluate.Headline).
var HeadlineFact = "calibration error to report (" + evaluate.Headline.String() + ": canonical CE_1)"

// EvaluationTime is the name of the summary fact that gives the time the
// evaluation took (the one fact that differs between two builds of the
// same report).
const EvaluationTime = "evaluation time"

func overUnder(d float64) string {
	switch {
	case d > 0.005:
		return fmt.Sprintf("over-confident by %.2f points on average", 100*d)
	case d < -0.005:
		return fmt.Sprintf("under-confident by %.2f points on average", -100*d)
	}
	return "confidence matches accuracy on average"
}

// metricsTable is the table of every metric with its interval.
func metricsTable(ev *evaluate.Evaluation) *Table {
	t := &Table{Header: []string{"group", "metric", "notion", "p", "settings", "value", "root", "interval"}}
	pvalues := ev.HasPValues()
	if pvalues {
		t.Header = append(t.Header, "p-value")
	}
	level, own := 0.0, false // the bootstrap's level; an entry with its estimator's own interval
	for _, e := range ev.Results {
		if e.CILevel != nil {
			level = *e.CILevel
		}
		if iv, ok := e.OneInterval(); ok && iv.Kind != "bootstrap" {
			own = true
		}
		row := evaltext.Row(e)
		if pvalues {
			row = append(row, evaltext.PValueCell(e))
		}
		t.Rows = append(t.Rows, row)
	}
	t.Caption = evaltext.NoteValue + " Lower is better except for accuracy and sharpness. [!] marks a row with a warning under Notes."
	for _, line := range evaltext.EstimatorNotes(ev) {
		t.Caption += " " + line
	}
	if pvalues {
		t.Caption += " " + strings.ToUpper(evaltext.PValueNote(ev)[:1]) + evaltext.PValueNote(ev)[1:]
	}
	switch {
	case level > 0 && own:
		t.Caption += fmt.Sprintf(" Intervals: one per number, its estimator's own where it has one (ece_variational), else the %.0f%% bootstrap interval.", 100*level)
	case level > 0:
		t.Caption += fmt.Sprintf(" Intervals: %.0f%% bootstrap intervals.", 100*level)
	case own:
		t.Caption += " Intervals: the estimators' own (ece_variational); the others have none without bootstrap intervals."
	}
	if level > 0 || own {
		for _, line := range evaltext.IntervalNotes(ev) {
			t.Caption += " " + sentence(line)
		}
	}
	return t
}

// sentence returns line with its first letter upper-case, unless it
// starts with a name (a metric's, as ece_variational) that keeps its case.
func sentence(line string) string {
	first, _, _ := strings.Cut(line, " ")
	if line == "" || strings.Contains(first, "_") {
		return line
	}
	return strings.ToUpper(line[:1]) + line[1:]
}

// reportNotes explains how the numbers were computed.
func reportNotes(ev *evaluate.Evaluation) []string {
	notes := []string{
		"ECE^KDE: Popordanoska, Sayer and Blaschko, \"A Consistent and Differentiable Lp Canonical Calibration Error Estimator\", NeurIPS 2022 (Dirichlet kernel regression of the labels on the predictions, leave-one-out bandwidth).",
		"KS calibration error and spline recalibration: Gupta, Rahimi, Ajanthan, Mensink, Sminchisescu and Hartley, \"Calibration of Neural Networks using Splines\", ICLR 2021.",
		"Binned ECE uses 15 equal-width bins unless stated. Each number has one interval: its estimator's own where it has one (ece_variational's cross-fit interval), else the bootstrap interval over resampled predictions (the bandwidth and bin edges held fixed).",
	}
	notes = append(notes, evaltext.IntervalNotes(ev)...)
	seen := map[string]bool{}
	for _, e := range ev.Results {
		for _, w := range e.Warnings.Strings() {
			what := string(e.Notion) + " bandwidth"
			if e.Bandwidth == nil {
				what = string(e.Metric) + " " + string(e.Notion)
			}
			if !seen[what+w] {
				seen[what+w] = true
				notes = append(notes, fmt.Sprintf("Warning (%s): %s", what, w))
			}
		}
	}
	return notes
}

// ComparisonTableOf is the table of a recalibration comparison: every
// method's test figures (accuracy, ECE and KS in %, NLL and Brier per
// sample), fit time and parameters.
func ComparisonTableOf(c *compare.Comparison) *Table {
	t := &Table{Caption: fmt.Sprintf("Test figures; accuracy, ECE and KS in %%, NLL and Brier per sample; CE_1: %s on each method's test predictions; plug-in ECE^KDE: canonical CE_1 at h = %.4g. %s",
		evaluate.Headline, c.Bandwidth, compare.RankingNote),
		Header: []string{"method", "accuracy", "NLL", "Brier", "CE_1", "ECE top-1", "KS top-1", "KS top-2", "KS within-2", "KS class-wise", "plug-in ECE^KDE", "fit", "params"}}
	for _, r := range c.Rows {
		if r.Accuracy == nil && r.Error != "" { // not fitted
			t.Rows = append(t.Rows, []string{r.Method, "error: " + r.Error, "", "", "", "", "", "", "", "", "", fmt.Sprintf("%.1f s", r.FitSeconds), ""})
			continue
		}
		params := r.Params
		if r.Error != "" {
			params = strings.TrimSpace(params + " (error: " + r.Error + ")")
		}
		t.Rows = append(t.Rows, append(append([]string{r.Method}, compare.Cells(r)...), fmt.Sprintf("%.1f s", r.FitSeconds), params))
	}
	return t
}

// ComparisonOf is the chart of a recalibration comparison: each ranked
// metric before and after each method (NaN where a method failed).
func ComparisonOf(c *compare.Comparison) *Comparison {
	cm := &Comparison{Metrics: []ComparisonMetric{
		{Name: "accuracy", Scale: 100, Unit: "%", Higher: true}, {Name: "NLL"}, {Name: "Brier"}, {Name: "CE_1 (canonical, " + string(evaluate.Headline.Metric) + ")"},
		{Name: "ECE top-1", Scale: 100, Unit: "%"}, {Name: "KS top-1", Scale: 100, Unit: "%"}, {Name: "KS top-2", Scale: 100, Unit: "%"},
		{Name: "KS within-top-2", Scale: 100, Unit: "%"}, {Name: "KS class-wise", Scale: 100, Unit: "%"}}}
	for _, r := range c.Rows {
		cm.Methods = append(cm.Methods, r.Method)
		v := compare.Value // NaN where not computed
		cm.Values = append(cm.Values, []float64{v(r.Accuracy), v(r.NLL), v(r.Brier), v(r.Headline), v(r.ECETopLabel),
			v(r.KSTop1), v(r.KSTop2), v(r.KSWithinTop2), v(r.KSClassWise)})
	}
	return cm
}

// testsText says which tests the section holds (from its rows).
func testsText(r *calibtest.Report) string {
	has := map[string]bool{}
	for _, t := range r.Tests {
		has[t.Test] = true
	}
	var parts []string
	if has["ks"] || has["kuiper"] {
		parts = append(parts, "the cumulative-difference Kolmogorov-Smirnov and Kuiper tests (Arrieta-Ibarra et al. 2022)")
	}
	if has["spiegelhalter"] {
		parts = append(parts, "Spiegelhalter's z")
	}
	if has["skce"] {
		parts = append(parts, "the SKCE block test of Widmann et al. (canonical)")
	}
	if has["ece_bin"] {
		parts = append(parts, "consistency resampling of the top-label binned ECE")
	}
	return "The tests: " + strings.Join(parts, ", ") + " (the one-dimensional ones on the top-label confidence and on every class column; calib test runs these and more)."
}

// testsSection is the section "Is it calibrated?": the plain-language
// answer of the hypothesis tests and their table.
func testsSection(r *calibtest.Report) Section {
	t := &Table{Header: []string{"test", "notion", "statistic", "p-value", fmt.Sprintf("reject at %g", r.Alpha), "method"},
		Caption: "H0 is the calibrated model: the outcomes are draws from the predictions. A p-value is how often a calibrated model with these predictions would give a statistic at least as large; at or below the level the test rejects calibration. Class-wise rows of ks, kuiper and spiegelhalter test the largest class statistic by consistency resampling, each class's p-value maxT-adjusted (Westfall-Young); the tests are not corrected for each other."}
	for _, x := range r.Tests {
		method := x.Method
		if x.Resamples > 0 {
			method += fmt.Sprintf(", %d resamples", x.Resamples)
		}
		if x.Error != "" {
			t.Rows = append(t.Rows, []string{x.Test, x.Notion, "-", "-", "-", "cannot run: " + x.Error})
			continue
		}
		t.Rows = append(t.Rows, []string{x.Test, x.Notion, fmt.Sprintf("%.6g", x.Statistic), fmt.Sprintf("%.4g", x.PValue), fmt.Sprint(x.Reject), method})
	}
	return Section{ID: "tests", Title: "Is it calibrated?",
		Text:  "Answer: " + r.Answer + ". " + testsText(r),
		Table: t}
}
