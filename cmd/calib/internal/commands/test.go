package commands

import (
	"github.com/calib-dev/calib/calibtest"
	"github.com/calib-dev/calib/optionspec"
)

func newTestCmd() *Command {
	var in inputFlags
	var opts *optionspec.Flags
	var asJSON bool
	cmd := command("test PRED", "Test whether the model is calibrated: p-values that hold their level (cumulative KS and Kuiper, Spiegelhalter, SKCE block test, SKCE bootstrap, consistency resampling of ECE^KDE, binned ECE, KS error, MMCE, witness)", exactArgs(1), func(cmd *Command, args []string) error {
		// Before any data is read: the options, by calibtest's rules.
		o, err := calibtest.ParseOptions(opts.Given(cmd.Flags().Changed))
		if err != nil {
			return optionError("", err)
		}
		s, err := in.load(cmd, args[0])
		if err != nil {
			return err
		}
		r, err := calibtest.Run(cmd.Context(), s.Probs, s.Labels, s.K, s.Weights, o)
		if err != nil {
			return err
		}
		if asJSON {
			return r.WriteJSON(cmd.OutOrStdout())
		}
		return r.WriteText(cmd.OutOrStdout())
	})
	in.register(cmd.Flags())
	in.registerWeights(cmd.Flags(), false)
	opts = registerSpecs(cmd.Flags(), calibtest.OptionSpecs())
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	return cmd
}
