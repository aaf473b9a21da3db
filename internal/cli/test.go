package cli

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/calib-dev/calib/calibtest"
)

func newTestCmd() *cobra.Command {
	var in inputFlags
	var tests string
	var o calibtest.Options
	var asJSON bool
	cmd := command("test PRED", "Test whether the model is calibrated: p-values that hold their level (cumulative KS and Kuiper, Spiegelhalter, SKCE block test, SKCE bootstrap, consistency resampling of ECE^KDE, binned ECE, KS error, MMCE, witness)", exactArgs(1), func(cmd *cobra.Command, args []string) error {
		if tests != "" {
			o.Tests = nil
			for _, t := range strings.Split(tests, ",") {
				o.Tests = append(o.Tests, strings.TrimSpace(t))
			}
		}
		if err := o.Check(); err != nil { // before any data is read
			return usageErrorf("%v", strings.TrimPrefix(err.Error(), "calibtest: "))
		}
		s, err := in.load(args[0])
		if err != nil {
			return err
		}
		r, err := calibtest.Run(s.Probs, s.Labels, s.K, s.Weights, o)
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
	fs := cmd.Flags()
	fs.StringVar(&tests, "tests", "", "tests, comma-separated, of "+strings.Join(calibtest.Tests, ", ")+", or all (default: "+strings.Join(calibtest.DefaultTests, ",")+")")
	fs.IntVar(&o.Resamples, "resamples", calibtest.DefaultResamples, "resamples B of the consistency-resampling tests")
	fs.Float64Var(&o.Alpha, "alpha", 0.05, "level of the verdicts")
	fs.Uint64Var(&o.Seed, "seed", 0, "seed of the resamples and of the SKCE blocks")
	fs.IntVar(&o.Workers, "workers", 0, "goroutines (0: all cores); results are identical for any value")
	fs.BoolVar(&asJSON, "json", false, "print one JSON object")
	return cmd
}
