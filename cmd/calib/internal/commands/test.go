package commands

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/calib-dev/calib/calibtest"
	"github.com/calib-dev/calib/internal/pkgerr"
)

func newTestCmd() *Command {
	var in inputFlags
	var tests string
	var o calibtest.Options
	var asJSON bool
	var maxSeconds float64
	cmd := command("test PRED", "Test whether the model is calibrated: p-values that hold their level (cumulative KS and Kuiper, Spiegelhalter, SKCE block test, SKCE bootstrap, consistency resampling of ECE^KDE, binned ECE, KS error, MMCE, witness)", exactArgs(1), func(cmd *Command, args []string) error {
		if cmd.Flags().Changed("tests") {
			o.Tests = []string{}
			for _, t := range strings.Split(tests, ",") {
				if t = strings.TrimSpace(t); t != "" {
					o.Tests = append(o.Tests, t)
				}
			}
			if len(o.Tests) == 0 {
				return usageErrorf("--tests %q: name at least one test (of %s, or all); leave the flag out for the default tests", tests, strings.Join(calibtest.Tests(), ", "))
			}
		}
		// Before any data is read: --alpha and --resamples have their
		// ranges checked by flagRules; here what they mean together.
		if B := o.Resamples; B < calibtest.MinResamples(o.Alpha) {
			return usageErrorf("--resamples %d: a resampled p-value is at least 1/(B+1) = %.3g, so it could never reach --alpha %g; want at least %d resamples", B, 1/float64(B+1), o.Alpha, calibtest.MinResamples(o.Alpha))
		}
		o.MaxSeconds = maxSeconds // its range was checked by flagRules
		if maxSeconds == 0 {
			o.MaxSeconds = math.Inf(1)
		}
		if err := o.Validate(); err != nil { // the test names
			return usageErrorf("--tests: %s", pkgerr.Reason(err))
		}
		chosen := o.Tests
		switch {
		case chosen == nil:
			chosen = calibtest.DefaultTests()
		case len(chosen) == 1 && chosen[0] == "all":
			chosen = calibtest.Tests()
		}
		if err := refuseUnread(cmd.Flags(), testReaders, "--tests", chosen); err != nil {
			return err
		}
		s, err := in.load(cmd, args[0])
		if err != nil {
			return err
		}
		r, err := calibtest.Run(cmd.Context(), s.Probs, s.Labels, s.K, s.Weights, o)
		var slow *calibtest.CostError
		if errors.As(err, &slow) {
			return usageErrorf("--tests: %s, past --max-seconds %g: --max-seconds 0 runs it anyway", slow.Estimates(), maxSeconds)
		}
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
	fs.StringVar(&tests, "tests", "", "tests, comma-separated, of "+strings.Join(calibtest.Tests(), ", ")+", or all (default: "+strings.Join(calibtest.DefaultTests(), ",")+")")
	fs.IntVar(&o.Resamples, "resamples", calibtest.DefaultResamples, fmt.Sprintf("resamples B of the consistency-resampling tests, at least 1/alpha - 1 (a resampled p-value is at least 1/(B+1)) and at most %d", calibtest.MaxResamples))
	fs.Float64Var(&o.Alpha, "alpha", calibtest.DefaultAlpha, "level of the verdicts, in (0, 1)")
	fs.Uint64Var(&o.Seed, "seed", DefaultSeed, "seed of the resamples and of the SKCE blocks (the default seed of every calib command; 0 means 1)")
	fs.IntVar(&o.Workers, "workers", 0, "goroutines (0: all cores); results are identical for any value")
	fs.Float64Var(&maxSeconds, "max-seconds", calibtest.DefaultMaxSeconds, "refuse a named test whose run time, estimated from n, K, --resamples and --workers before any test runs, passes this many `seconds` (the default list and all leave such a test out, saying so); 0: no bound")
	fs.BoolVar(&asJSON, "json", false, "print one JSON object")
	return cmd
}
