package commands

import (
	"fmt"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/optionspec"
	"github.com/calib-dev/calib/recal"
)

func newFitCmd() *Command {
	var in inputFlags
	var opts *optionspec.Flags
	var out string
	progress := true
	cmd := command("fit VAL_PRED --method METHOD -o MAP.json", "Fit a recalibration map on validation predictions and save it as JSON", exactArgs(1), func(cmd *Command, args []string) error {
		method, o, err := recal.ParseFit(opts.Given(cmd.Flags().Changed))
		if err != nil {
			return optionError("", err)
		}
		if out != "-" { // -o -: the map to stdout
			if err := requireOutput(out, "MAP.json", "json"); err != nil {
				return err
			}
		}
		s, err := in.load(cmd, args[0])
		if err != nil {
			return err
		}
		if method.NeedsLogits() && s.Logits == nil {
			return usageErrorf("--method %s needs logits (--logits)", method)
		}
		ui := newProgressUI(cmd.Context(), cmd.ErrOrStderr(), progress)
		var done func()
		o.Linear.Progress, done = ui.Step(string(method) + " cross-validation")
		c, err := recal.Fit(cmd.Context(), method, s, o)
		done()
		ui.wait()
		if err != nil {
			return fmt.Errorf("%s: %w", s.File, err)
		}
		prov := newProvenance(cmd, args).AddInput("val", s, in.o.Labels)
		if out == "-" {
			if err := recal.Record(c, prov); err != nil {
				return err
			}
			if err := recal.Save(cmd.OutOrStdout(), c); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "%s map fitted on %s (n = %d, K = %d)\n", method, s.File, s.N, s.K)
			return nil
		}
		if err := recal.SaveFile(out, c, prov); err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "%s map fitted on %s (n = %d, K = %d) written to %s\n", method, s.File, s.N, s.K, out)
		return nil
	})
	in.register(cmd.Flags())
	in.registerWeights(cmd.Flags(), false)
	fs := cmd.Flags()
	opts = registerSpecs(fs, recal.FitOptionSpecs())
	fs.StringVarP(&out, "output", "o", "", "write the map to `FILE` (JSON; -: to stdout, the summary line to stderr)")
	fs.BoolVar(&progress, "progress", true, "show the cross-validation's progress on stderr (bars on a terminal, else a line every 10 s)")
	return cmd
}

func newApplyCmd() *Command {
	var in inputFlags
	var out string
	cmd := command("apply MAP.json PRED -o OUT", "Apply a recalibration map to predictions and write the calibrated probabilities", exactArgs(2), func(cmd *Command, args []string) error {
		if err := requireOutput(out, "OUT", "npy", "csv"); err != nil {
			return err
		}
		c, err := recal.LoadFile(args[0])
		if err != nil {
			return err
		}
		s, err := in.loadWith(cmd, args[1], true, c.Info().Columns())
		if err != nil {
			return err
		}
		cs, err := recal.Apply(c, s)
		if err != nil {
			return err
		}
		if err := data.WriteFile(out, cs.Probs, cs.K, cs.Labels); err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "%s map applied to %s (n = %d), written to %s\n", c.Info().Method, s.File, s.N, out)
		return nil
	})
	in.register(cmd.Flags())
	cmd.Flags().StringVarP(&out, "output", "o", "", "write the calibrated probabilities to `FILE` (.npy or .csv)")
	return cmd
}
