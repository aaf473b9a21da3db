package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/kde"
	"github.com/calib-dev/calib/metric"
	"github.com/calib-dev/calib/recal"
)

// compareRow is one method's test figures in `calib compare`.
type compareRow struct {
	Method         string    `json:"method"`
	FitSeconds     float64   `json:"fit_seconds"`
	Accuracy       jsonFloat `json:"accuracy"`
	NLL            jsonFloat `json:"nll"`
	Brier          jsonFloat `json:"brier"`
	ECEKDE         jsonFloat `json:"ece_kde_canonical"`
	ECETopLabel    jsonFloat `json:"ece_top_label"`
	KSTop1         jsonFloat `json:"ks_top1"`
	KSTop2         jsonFloat `json:"ks_top2"`
	KSWithinTop2   jsonFloat `json:"ks_within_top2"`
	KSClassWise    jsonFloat `json:"ks_class_wise"`
	Params         string    `json:"params,omitempty"`
	Error          string    `json:"error,omitempty"`
	EvalSeconds    float64   `json:"eval_seconds"`
	calibrated     *data.Set
	splineCurvesKS *recal.Spline
}

// compareOutput is the JSON object of `calib compare --json`.
type compareOutput struct {
	NVal      int           `json:"n_val"`
	NTest     int           `json:"n_test"`
	K         int           `json:"k"`
	Bandwidth float64       `json:"bandwidth"` // of the canonical ECE^KDE, for every row
	Rows      []*compareRow `json:"rows"`
}

func newCompareCmd() *cobra.Command {
	var val, valLabels, test, testLabels, methods, gridName string
	var logits, asJSON bool
	var workers int
	cmd := &cobra.Command{
		Use:   "compare --val VAL --val-labels F --test TEST --test-labels F",
		Short: "Fit every recalibration method on val and compare them on test",
		Long: `compare fits each method (calib fit) on the validation predictions and prints,
on the test predictions, before and after each: accuracy, NLL, Brier score,
canonical ECE^KDE (L1; one bandwidth for all rows, chosen by LOO on the
uncalibrated test predictions), top-label ECE (15 equal-width bins), KS top-1,
top-2, within-top-2 and class-wise, and the fit time. The spline's top-2 and
within-top-2 figures use its own top-2 and within-top-2 curves.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if val == "" || test == "" {
				return usageErrorf("--val and --test are required")
			}
			vs, err := (&inputFlags{labels: valLabels, logits: logits, tolerance: data.DefaultTolerance}).load(val)
			if err != nil {
				return err
			}
			ts, err := (&inputFlags{labels: testLabels, logits: logits, tolerance: data.DefaultTolerance}).load(test)
			if err != nil {
				return err
			}
			if vs.K != ts.K {
				return usageErrorf("val has K = %d, test K = %d", vs.K, ts.K)
			}
			ms, err := parseMethods(methods)
			if err != nil {
				return err
			}
			ui := newProgressUI(cmd.Context(), cmd.ErrOrStderr(), true)
			out, err := compare(vs, ts, ms, gridName, workers, nil, ui)
			ui.wait()
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetEscapeHTML(false)
				return enc.Encode(out)
			}
			return writeCompare(cmd.OutOrStdout(), out)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&val, "val", "", "validation predictions `FILE`")
	fs.StringVar(&valLabels, "val-labels", "", "validation labels `FILE` (if not in the predictions file)")
	fs.StringVar(&test, "test", "", "test predictions `FILE`")
	fs.StringVar(&testLabels, "test-labels", "", "test labels `FILE` (if not in the predictions file)")
	fs.BoolVar(&logits, "logits", false, "the prediction files hold logits")
	fs.StringVar(&methods, "methods", "", "methods, comma-separated (default: all: "+strings.Join(fitMethods, ", ")+")")
	fs.StringVar(&gridName, "grid", "default", "cross-validation grid of the ODIR methods: default or full")
	fs.IntVar(&workers, "workers", 0, "goroutines (0: all cores)")
	fs.BoolVar(&asJSON, "json", false, "print one JSON object")
	return cmd
}

// fitMethod fits one method on the validation set with default options;
// progress (may be nil) follows the cross-validation of the ODIR methods.
func fitMethod(m string, s *data.Set, gridName string, workers int, progress kde.Progress) (recal.Calibrator, error) {
	switch m {
	case "spline":
		return recal.FitSpline(s.Probs, s.Labels, s.K, recal.SplineOptions{})
	case "temperature":
		if s.Logits == nil {
			return nil, fmt.Errorf("needs logits")
		}
		return recal.FitTemperature(twoColumnLogits(s), s.Labels, s.K)
	case recal.MethodVector, recal.MethodMatrix, recal.MethodDirichlet:
		if m != recal.MethodDirichlet && s.Logits == nil {
			return nil, fmt.Errorf("needs logits")
		}
		return recal.FitLinear(m, s.Probs, twoColumnLogits(s), s.Labels, s.K, recal.LinearOptions{CV: true, Grid: gridName, Seed: 1, Workers: workers, Progress: progress})
	case "isotonic":
		return recal.FitIsotonic(s.Probs, s.Labels, s.K, "")
	case "histogram":
		return recal.FitHistogram(s.Probs, s.Labels, s.K, 0, "")
	case "platt":
		return recal.FitPlatt(s.Probs, s.Labels, s.K, "")
	case "beta":
		return recal.FitBeta(s.Probs, s.Labels, s.K, "")
	}
	return nil, fmt.Errorf("unknown method %q", m)
}

// compare fits the methods and computes the test figures; curves (may be
// nil) shares the canonical bandwidth selection on the test set, ui (may
// be nil) shows the progress.
func compare(vs, ts *data.Set, methods []string, gridName string, workers int, curves curveCache, ui *progressUI) (*compareOutput, error) {
	if err := ts.Require(2, "compare"); err != nil {
		return nil, err
	}
	progress, done := ui.step("canonical bandwidth")
	cv, err := curves.selectBandwidth(kde.Canonical, ts, kde.BandwidthOptions{Workers: workers, Progress: progress})
	done()
	if err != nil {
		return nil, fmt.Errorf("%s: bandwidth: %w", ts.File, err)
	}
	out := &compareOutput{NVal: vs.N, NTest: ts.N, K: ts.K, Bandwidth: cv.Bandwidth}
	rows := []*compareRow{{Method: "uncalibrated", calibrated: ts}}
	for _, m := range methods {
		row := &compareRow{Method: m}
		start := time.Now()
		progress, done := ui.step("fit " + m)
		c, err := fitMethod(m, vs, gridName, workers, progress)
		done()
		row.FitSeconds = time.Since(start).Seconds()
		if err == nil {
			row.calibrated, err = applyMap(c, ts)
		}
		if err != nil {
			row.Error = oneLineError(err)
		} else {
			row.Params = params(c)
			if sp, ok := c.(*recal.Spline); ok {
				row.splineCurvesKS = sp
			}
		}
		rows = append(rows, row)
	}
	for _, r := range rows {
		if r.Error != "" {
			continue
		}
		start := time.Now()
		s := r.calibrated
		nll := metric.NLL(s.Probs, s.Logits, s.Labels, s.K)
		r.Accuracy, r.NLL, r.Brier = jsonFloat(metric.Accuracy(s.Probs, s.Labels, s.K)), jsonFloat(nll), jsonFloat(metric.Brier(s.Probs, s.Labels, s.K))
		res, err := kde.Estimate(kde.Canonical, s.Probs, s.Labels, s.K, kde.Options{Bandwidth: cv.Bandwidth, Workers: workers})
		if err != nil {
			r.Error = oneLineError(err)
			continue
		}
		r.ECEKDE = jsonFloat(res.Values[0].Value)
		tb, err := metric.TopLabelBins(s.Probs, s.Labels, s.K, metric.BinOptions{})
		if err != nil {
			r.Error = oneLineError(err)
			continue
		}
		r.ECETopLabel = jsonFloat(tb.ECE(1))
		ks := func(sc, oc []float64) jsonFloat { v, _ := metric.KS(sc, oc, false); return jsonFloat(v) }
		r.KSTop1 = ks(metric.TopR(s.Probs, s.Labels, s.K, 1))
		sc2, oc2 := metric.TopR(s.Probs, s.Labels, s.K, 2)
		sw, ow := metric.WithinTopR(s.Probs, s.Labels, s.K, 2)
		if sp := r.splineCurvesKS; sp != nil {
			// The spline's own curves for its top-2 and within-top-2 scores.
			sc2, oc2 = metric.TopR(ts.Probs, ts.Labels, ts.K, 2)
			sw, ow = metric.WithinTopR(ts.Probs, ts.Labels, ts.K, 2)
			for i := range sc2 {
				sc2[i], sw[i] = sp.Top2.Map(sc2[i]), sp.WithinTop2.Map(sw[i])
			}
		}
		r.KSTop2, r.KSWithinTop2 = ks(sc2, oc2), ks(sw, ow)
		r.KSClassWise = jsonFloat(metric.ClassWiseKS(s.Probs, s.Labels, s.K).Value)
		r.EvalSeconds = time.Since(start).Seconds()
	}
	out.Rows = rows
	return out, nil
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

func writeCompare(w io.Writer, out *compareOutput) error {
	fmt.Fprintf(w, "val n = %d, test n = %d, K = %d; canonical ECE^KDE at h = %.4g (LOO on the uncalibrated test set)\n\n", out.NVal, out.NTest, out.K, out.Bandwidth)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "method\taccuracy\tNLL\tBrier\tECE^KDE can.\tECE top-1\tKS top-1\tKS top-2\tKS within-2\tKS class-wise\tfit\tparams")
	pct := func(v jsonFloat) string { return fmt.Sprintf("%.3f", 100*float64(v)) }
	for _, r := range out.Rows {
		if r.Error != "" {
			fmt.Fprintf(tw, "%s\terror: %s\t\t\t\t\t\t\t\t\t%.1fs\t\n", r.Method, r.Error, r.FitSeconds)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%.4f\t%.4f\t%.4f\t%s\t%s\t%s\t%s\t%s\t%.1fs\t%s\n", r.Method, pct(r.Accuracy), float64(r.NLL), float64(r.Brier),
			float64(r.ECEKDE), pct(r.ECETopLabel), pct(r.KSTop1), pct(r.KSTop2), pct(r.KSWithinTop2), pct(r.KSClassWise), r.FitSeconds, r.Params)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\naccuracy, ECE and KS in %; NLL and Brier per sample; ECE^KDE canonical is CE_1.")
	return nil
}
