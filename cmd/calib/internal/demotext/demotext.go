// Package demotext writes what `calib demo` prints: the headline figures of
// the evaluation of the embedded set (internal/demo), the comparison of the
// recalibration methods, and what the numbers mean.
package demotext

import (
	"fmt"
	"io"
	"math"

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
- The report holds every metric with its bootstrap interval and the figures;
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

// WriteHeadline writes the main figures of ev, each with its interval when
// it has one: the canonical CE_1 to report (evaluate.Headline), the
// top-label binned ECE (evaluate.PaperNumber), KS
// top-1, NLL, accuracy and the plug-in ECE^KDE (canonical and top-label,
// marked as biased).
func WriteHeadline(w io.Writer, ev *evaluate.Evaluation) {
	level := 0.0 // the intervals' level, if any
	for _, e := range ev.Results {
		if e.CILevel != nil && len(e.CI) == 2 {
			level = *e.CILevel
			break
		}
	}
	if level > 0 {
		fmt.Fprintf(w, "test split: n = %d, K = %d (%g %% bootstrap intervals)\n", ev.N, ev.K, 100*level)
	} else {
		fmt.Fprintf(w, "test split: n = %d, K = %d\n", ev.N, ev.K)
	}
	for _, h := range headline {
		e := ev.Lookup(h.key)
		if e == nil || e.Error != "" || e.Value == nil {
			continue
		}
		iv := ""
		if len(e.CI) == 2 {
			iv = fmt.Sprintf("  [%.4f, %.4f]", float64(e.CI[0]), float64(e.CI[1]))
		}
		fmt.Fprintf(w, "  %-38s %.4f%s\n", h.label, float64(*e.Value), iv)
	}
	fmt.Fprintln(w, "  * biased upward by an amount that depends on the data: smooth (a training loss), not the size of the error")
}
