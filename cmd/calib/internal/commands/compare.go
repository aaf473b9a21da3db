package commands

import (
	"strings"

	"github.com/calib-dev/calib/compare"
	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/recal"
)

func newCompareCmd() *Command {
	var val, valLabels, valWeights, test, testLabels, testWeights, methods string
	var o compare.Options
	var logits, asJSON, progress bool
	cmd := command("compare --val VAL --val-labels F --test TEST --test-labels F", "Fit every recalibration method on val and compare them on test", exactArgs(0), func(cmd *Command, args []string) error {
		if val == "" || test == "" {
			return usageErrorf("--val and --test are required")
		}
		var err error
		if o.Methods, err = recal.ParseMethods(methods); err != nil {
			return usageErrorf("--methods: %v", err)
		}
		if err := refuseUnread(cmd.Flags(), gridReaders, "--methods", methodNames(o.Methods)); err != nil {
			return err
		}
		vs, err := (&inputFlags{o: data.Options{Labels: valLabels, Weights: valWeights, Logits: logits}, labelsFlag: "--val-labels"}).load(cmd, val)
		if err != nil {
			return err
		}
		ts, err := (&inputFlags{o: data.Options{Labels: testLabels, Weights: testWeights, Logits: logits}, labelsFlag: "--test-labels"}).load(cmd, test)
		if err != nil {
			return err
		}
		if vs.K != ts.K {
			return usageErrorf("val has K = %d, test K = %d", vs.K, ts.K)
		}
		ui := newProgressUI(cmd.Context(), cmd.ErrOrStderr(), progress)
		o.Progress = ui // nil-safe, like every progressUI method
		out, err := compare.Compare(cmd.Context(), vs, ts, o)
		ui.wait()
		if err != nil {
			return err
		}
		out.Provenance = newProvenance(cmd, args).AddInput("val", vs, valLabels).AddInput("test", ts, testLabels)
		if asJSON {
			return compare.WriteJSON(cmd.OutOrStdout(), out)
		}
		return compare.WriteText(cmd.OutOrStdout(), out)
	})
	fs := cmd.Flags()
	fs.StringVar(&val, "val", "", "validation predictions `FILE`")
	fs.StringVar(&valLabels, "val-labels", "", "validation labels `FILE` (if not in the predictions file)")
	fs.StringVar(&test, "test", "", "test predictions `FILE`")
	fs.StringVar(&testLabels, "test-labels", "", "test labels `FILE` (if not in the predictions file)")
	fs.StringVar(&valWeights, "val-weights", "", "validation sample weights `FILE` (.npy, or one number per line; default: a weight column or key in the file, if any)")
	fs.StringVar(&testWeights, "test-weights", "", "test sample weights `FILE` (as --val-weights)")
	fs.BoolVar(&logits, "logits", false, "the prediction files hold logits")
	fs.StringVar(&methods, "methods", "", "methods, comma-separated (default: all: "+strings.Join(recal.MethodNames(), ", ")+")")
	fs.StringVar(&o.Grid, "grid", "default", "cross-validation grid of the ODIR methods: default or full")
	fs.IntVar(&o.Workers, "workers", 0, "goroutines (0: all cores)")
	fs.Uint64Var(&o.Seed, "seed", DefaultSeed, "seed of the ODIR cross-validation folds and of the witness's cross-fitting splits")
	fs.BoolVar(&asJSON, "json", false, "print one JSON object")
	fs.BoolVar(&progress, "progress", true, "show progress on stderr (bars on a terminal, else a line every 10 s)")
	return cmd
}
