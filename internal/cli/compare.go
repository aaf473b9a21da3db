package cli

import (
	"context"
	"strings"

	"github.com/spf13/cobra"

	"github.com/calib-dev/calib/compare"
	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/evaluate"
	"github.com/calib-dev/calib/recal"
)

func newCompareCmd() *cobra.Command {
	var val, valLabels, valWeights, test, testLabels, testWeights, methods, gridName string
	var logits, asJSON bool
	var seed uint64
	progress := true
	var workers int
	cmd := &cobra.Command{
		Use:   "compare --val VAL --val-labels F --test TEST --test-labels F",
		Short: "Fit every recalibration method on val and compare them on test",
		Long: `compare fits each method (calib fit) on the validation predictions and prints,
on the test predictions, before and after each: accuracy, NLL, Brier score,
the witness estimate of the canonical CE_1 (one bandwidth for all rows: the
witness's choice on the uncalibrated validation set), top-label ECE (15 equal-width bins), KS top-1,
top-2, within-top-2 and class-wise, and the fit time. The spline's top-2 and
within-top-2 figures use its own top-2 and within-top-2 curves.

Methods are ranked (the "best" line) by the witness, the binned and KS errors
and the proper scores. The plug-in canonical ECE^KDE (L1, one LOO bandwidth
chosen on the uncalibrated test predictions) is shown but not ranked: its
upward bias depends on how the predictions are spread, which each map
changes, so its values are not comparable across maps.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if val == "" || test == "" {
				return usageErrorf("--val and --test are required")
			}
			if gridName != "default" && gridName != "full" {
				return usageErrorf("--grid %q: want default or full", gridName)
			}
			ms, err := parseMethods(methods)
			if err != nil {
				return err
			}
			vs, err := (&inputFlags{labels: valLabels, labelsFlag: "--val-labels", weights: valWeights, logits: logits, tolerance: data.DefaultTolerance}).load(val)
			if err != nil {
				return err
			}
			ts, err := (&inputFlags{labels: testLabels, labelsFlag: "--test-labels", weights: testWeights, logits: logits, tolerance: data.DefaultTolerance}).load(test)
			if err != nil {
				return err
			}
			if vs.K != ts.K {
				return usageErrorf("val has K = %d, test K = %d", vs.K, ts.K)
			}
			ui := newProgressUI(cmd.Context(), cmd.ErrOrStderr(), progress)
			out, err := runCompare(cmd.Context(), vs, ts, ms, gridName, workers, seed, nil, ui)
			ui.wait()
			if err != nil {
				return err
			}
			prov := newProvenance(cmd, args)
			prov.input("val", vs, valLabels)
			prov.input("test", ts, testLabels)
			out.Provenance = prov
			if asJSON {
				return compare.WriteJSON(cmd.OutOrStdout(), out)
			}
			return compare.WriteText(cmd.OutOrStdout(), out)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&val, "val", "", "validation predictions `FILE`")
	fs.StringVar(&valLabels, "val-labels", "", "validation labels `FILE` (if not in the predictions file)")
	fs.StringVar(&test, "test", "", "test predictions `FILE`")
	fs.StringVar(&testLabels, "test-labels", "", "test labels `FILE` (if not in the predictions file)")
	fs.StringVar(&valWeights, "val-weights", "", "validation sample weights `FILE` (.npy, or one number per line; default: a weight column or key in the file, if any)")
	fs.StringVar(&testWeights, "test-weights", "", "test sample weights `FILE` (as --val-weights)")
	fs.BoolVar(&logits, "logits", false, "the prediction files hold logits")
	fs.StringVar(&methods, "methods", "", "methods, comma-separated (default: all: "+strings.Join(fitMethods, ", ")+")")
	fs.StringVar(&gridName, "grid", "default", "cross-validation grid of the ODIR methods: default or full")
	fs.IntVar(&workers, "workers", 0, "goroutines (0: all cores)")
	fs.Uint64Var(&seed, "seed", 1, "seed of the ODIR cross-validation folds and of the witness's cross-fitting splits")
	fs.BoolVar(&asJSON, "json", false, "print one JSON object")
	fs.BoolVar(&progress, "progress", true, "show progress on stderr (bars on a terminal, else a line every 10 s)")
	return cmd
}

// runCompare runs compare.Compare with the CLI's method names, progress and
// shared bandwidths (curves may be nil).
func runCompare(ctx context.Context, vs, ts *data.Set, methods []string, gridName string, workers int, seed uint64, curves evaluate.Bandwidths, ui *progressUI) (*compare.Comparison, error) {
	o := compare.Options{Grid: gridName, Seed: seed, Workers: workers, Bandwidths: curves, Methods: []recal.Method{}}
	for _, m := range methods {
		o.Methods = append(o.Methods, recal.Method(m))
	}
	if ui != nil {
		o.Progress = ui
	}
	return compare.Compare(ctx, vs, ts, o)
}
