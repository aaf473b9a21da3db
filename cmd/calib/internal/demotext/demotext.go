// Package demotext writes what `calib demo` prints: the headline figures of
// the evaluation of the embedded set (internal/demo), the comparison of the
// recalibration methods, and what the numbers mean.
package demotext

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/calib-dev/calib/calibtest"
	"github.com/calib-dev/calib/cmd/calib/internal/demo"
	"github.com/calib-dev/calib/compare"
	"github.com/calib-dev/calib/evaluate"
	"github.com/calib-dev/calib/notion"
)

// Write writes the demo's text: the headline figures of ev (the test
// split's evaluation, with intervals), the comparison c and the
// explanation.
func Write(w io.Writer, ev *evaluate.Evaluation, c *compare.Comparison, tests *calibtest.Report) error {
	fmt.Fprintf(w, "calib demo: %s, a ResNet-110 trained on CIFAR-10 with the Brier score\n", demo.Name)
	fmt.Fprintf(w, "(real logits embedded in the binary; softmax in float64).\n\n")
	WriteHeadline(w, ev)
	if tests != nil {
		fmt.Fprintf(w, "\nIs it calibrated? %s\n", ShortAnswer(tests))
	}
	fmt.Fprintln(w)
	if err := compare.WriteText(w, c); err != nil {
		return err
	}
	_, err := fmt.Fprint(w, explanation)
	return err
}

// ShortAnswer is the tests' verdict in one short line: how many of them
// reject at their level and the smallest p-value (calib test prints the
// table).
func ShortAnswer(r *calibtest.Report) string {
	if len(r.Tests) == 0 {
		return r.Answer
	}
	rejected, best := 0, calibtest.Result{PValue: math.Inf(1)}
	for _, t := range r.Tests {
		if t.Reject {
			rejected++
		}
		if t.Error == "" && t.PValue < best.PValue {
			best = t
		}
	}
	if math.IsInf(best.PValue, 1) {
		return r.Answer
	}
	verdict := "no evidence of miscalibration"
	if rejected > 0 {
		verdict = "no"
	}
	return fmt.Sprintf("%s: %d of %d tests reject calibration at the %g %% level (smallest p-value %.3g, %s %s); calib test gives the table",
		verdict, rejected, len(r.Tests), 100*r.Alpha, best.PValue, best.Test, best.Notion)
}

// explanation says what the demo's numbers mean.
const explanation = `
What the numbers mean:
- CE_p (ECE^KDE) is the Lp distance between what the model predicts, f(x),
  and what happens, E[y | f(x)], averaged over the data: 0 is perfect.
  canonical compares the whole probability vector, top_label only the
  confidence of the predicted class against the accuracy at that confidence.
  E[y | f(x)] is a Dirichlet (Beta) kernel regression over the other samples,
  its bandwidth chosen by leave-one-out likelihood. This plug-in value is
  biased upward on finite samples (a calibrated model reads about 0.5 at
  n = 1,000 in our simulations) by an amount that depends on how the
  predictions are spread: not the size of the error, and not a way to rank
  recalibration maps.
- The number to report, CE_1 (ece_variational canonical p=1), is what the
  best of a few recalibration maps, each fitted on the other folds, gains
  on the held-out rows under the L1 proper loss: it estimates the canonical
  CE_1 (0.91 to 1.06 of the truth at K = 20 to 100, n = 5,000 in our
  simulations; about 0 for a calibrated model), with its interval, at any
  number of classes. The comparison below ranks the maps by it.
- ECE top-1 is the usual binned error (15 equal-width bins); KS is the
  binning-free Kolmogorov-Smirnov error of the splines paper (largest gap
  between the cumulative confidence and the cumulative accuracy).
- Each recalibration method was fitted on the validation split and measured
  on the test split; NLL and Brier are proper scores (lower is better).
- The report holds every metric with its interval and the figures;
  run "calib eval --metrics all" for the full metric table in the terminal.
`

// headline lists the demo's main figures, in order: the label printed and
// which result it is.
var headline = []struct {
	label string
	key   evaluate.Key
}{
	{"canonical CE_1 (report this)", evaluate.Headline},
	{"15-bin top-label ECE (papers print)", evaluate.PaperNumber},
	{"KS top-1", evaluate.Key{Metric: evaluate.KS, Notion: notion.TopR, R: 1}},
	{"NLL", evaluate.Key{Metric: evaluate.NLL}},
	{"accuracy", evaluate.Key{Metric: evaluate.Accuracy}},
	{"plug-in ECE^KDE canonical CE_1 *", evaluate.Key{Metric: evaluate.ECEKDE, Notion: notion.Canonical, P: 1}},
	{"plug-in ECE^KDE top_label CE_1 *", evaluate.Key{Metric: evaluate.ECEKDE, Notion: notion.TopLabel, P: 1}},
}

// WriteHeadline writes the main figures of ev, each with its one interval
// when it has one (evaluate.Result.OneInterval: the estimator's own, as
// the canonical CE_1's cross-fit interval, else the bootstrap's), as calib
// eval, the report and the Python package show it: the canonical CE_1 to
// report (evaluate.Headline), the top-label binned ECE
// (evaluate.PaperNumber), KS top-1, NLL, accuracy and the plug-in ECE^KDE
// (canonical and top-label, marked as biased).
func WriteHeadline(w io.Writer, ev *evaluate.Evaluation) {
	type line struct {
		label string
		value float64
		iv    evaluate.EntryInterval
		ok    bool
	}
	var lines []line
	for _, h := range headline {
		e := ev.Lookup(h.key)
		if e == nil || e.Error != "" || e.Value == nil {
			continue
		}
		iv, ok := e.OneInterval()
		lines = append(lines, line{h.label, float64(*e.Value), iv, ok})
	}
	var shown []shownInterval
	for _, l := range lines {
		if l.ok {
			label, _, _ := strings.Cut(l.label, " (")
			shown = append(shown, shownInterval{label, l.iv})
		}
	}
	fmt.Fprintf(w, "test split: n = %d, K = %d%s\n", ev.N, ev.K, intervalsNote(shown))
	for _, l := range lines {
		iv := ""
		if l.ok {
			iv = fmt.Sprintf("  [%.4f, %.4f]", l.iv.Lo, l.iv.Hi)
		}
		fmt.Fprintf(w, "  %-38s %.4f%s\n", l.label, l.value, iv)
	}
	fmt.Fprintln(w, "  * biased upward by an amount that depends on the data: smooth (a training loss), not the size of the error")
}

// shownInterval is a figure's interval with the figure's short label.
type shownInterval struct {
	label string
	iv    evaluate.EntryInterval
}

// intervalsNote says, after the split's size, what the figures' intervals
// are: " (95 % bootstrap intervals)" when they are of one kind and level,
// else the first figure's kind (the canonical CE_1's cross-fit interval)
// and the others', or each kind; "" without intervals.
func intervalsNote(shown []shownInterval) string {
	if len(shown) == 0 {
		return ""
	}
	name := func(iv evaluate.EntryInterval) string {
		if iv.Level == 0 {
			return iv.Kind + " bounds"
		}
		return fmt.Sprintf("%g %% %s", 100*iv.Level, iv.Kind)
	}
	same := func(a, b evaluate.EntryInterval) bool { return a.Kind == b.Kind && a.Level == b.Level }
	rest := true // the figures after the first have one kind and level
	for _, s := range shown[1:] {
		rest = rest && same(s.iv, shown[1].iv)
	}
	switch {
	case len(shown) == 1 || rest && same(shown[0].iv, shown[1].iv):
		if shown[0].iv.Level == 0 {
			return " (" + name(shown[0].iv) + ")"
		}
		return " (" + name(shown[0].iv) + " intervals)"
	case rest:
		return fmt.Sprintf(" (intervals: %s for the %s, %s for the others)", name(shown[0].iv), shown[0].label, name(shown[1].iv))
	}
	var kinds []string
	for _, s := range shown {
		if n := name(s.iv); !slices.Contains(kinds, n) {
			kinds = append(kinds, n)
		}
	}
	return " (intervals: " + strings.Join(kinds, ", ") + ")"
}
