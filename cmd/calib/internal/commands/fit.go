package commands

import (
	"fmt"
	"strings"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/recal"
)

func newFitCmd() *Command {
	var in inputFlags
	var method, out string
	var o recal.FitOptions
	progress := true
	cmd := command("fit VAL_PRED --method METHOD -o MAP.json", "Fit a recalibration map on validation predictions and save it as JSON", exactArgs(1), func(cmd *Command, args []string) error {
		if err := checkMethod(cmd, method); err != nil {
			return err
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
		if m := recal.Method(method); m.NeedsLogits() && s.Logits == nil {
			return usageErrorf("--method %s needs logits (--logits)", method)
		}
		o.FixedRegularization = cmd.Flags().Changed("lambda") || cmd.Flags().Changed("mu")
		ui := newProgressUI(cmd.Context(), cmd.ErrOrStderr(), progress)
		var done func()
		o.Linear.Progress, done = ui.Step(method + " cross-validation")
		c, err := recal.Fit(cmd.Context(), recal.Method(method), s, o)
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
	fs.StringVar(&method, "method", "", "method (required): "+strings.Join(recal.MethodNames(), ", "))
	fs.StringVarP(&out, "output", "o", "", "write the map to `FILE` (JSON; -: to stdout, the summary line to stderr)")
	fs.IntVar(&o.Spline.Knots, "knots", recal.DefaultKnots, "spline: number of knots")
	fs.BoolVar(&o.Spline.ReferenceInterpolation, "reference-interpolation", false, "spline: reproduce the reference code's swapped interpolation weights")
	fs.BoolVar(&o.Spline.Constrained, "constrained", false, "spline: keep 0 <= score + slope <= 1 at every validation point (the QP of the paper's section 4.1)")
	fs.IntVar(&o.Bins, "bins", recal.DefaultHistogramBins, "histogram: number of equal-mass bins")
	fs.Float64Var(&o.Linear.Lambda, "lambda", 0, "matrix-odir, dirichlet-odir: ODIR weight of the squared off-diagonal weights (default: cross-validated)")
	fs.Float64Var(&o.Linear.Mu, "mu", 0, "matrix-odir, dirichlet-odir, vector: weight of the squared intercepts (default: cross-validated)")
	fs.StringVar(&o.Linear.Grid, "grid", "default", "cross-validation grid of lambda and mu: default or full (Kull et al.)")
	fs.BoolVar(&o.Linear.Normalize, "odir-normalize", false, "divide lambda by K(K-1) and mu by K (the ODIR paper's formula)")
	fs.Uint64Var(&o.Linear.Seed, "seed", DefaultSeed, "seed of the cross-validation folds")
	fs.BoolVar(&progress, "progress", true, "show the cross-validation's progress on stderr (bars on a terminal, else a line every 10 s)")
	fs.StringVar(&o.ScalarMode, "scalar-mode", "", "isotonic, histogram, platt, beta: top_label (default), binary (K = 2) or one_vs_rest (isotonic)")
	return cmd
}

// methodFlags lists the fit flags that apply to some methods only, with
// those methods.
var methodFlags = map[string][]string{
	"knots":                   {"spline"},
	"reference-interpolation": {"spline"},
	"constrained":             {"spline"},
	"bins":                    {"histogram"},
	"lambda":                  {recal.MethodMatrix, recal.MethodDirichlet},
	"mu":                      {recal.MethodVector, recal.MethodMatrix, recal.MethodDirichlet},
	"grid":                    gridReaders["grid"],
	"odir-normalize":          {recal.MethodMatrix, recal.MethodDirichlet},
	"seed":                    {recal.MethodVector, recal.MethodMatrix, recal.MethodDirichlet},
	"scalar-mode":             {"isotonic", "histogram", "platt", "beta"},
}

// checkMethod checks that --method is given (its value is checked by
// flagRules) and refuses a method-specific flag given for a method it does
// not apply to (it would be ignored without a word).
func checkMethod(cmd *Command, method string) error {
	if method == "" {
		return usageErrorf("--method is required: one of %s", strings.Join(recal.MethodNames(), ", "))
	}
	fs := cmd.Flags()
	if err := refuseUnread(fs, methodFlags, "--method", []string{method}); err != nil {
		return err
	}
	if fs.Changed("scalar-mode") && fs.Lookup("scalar-mode").Value.String() == recal.ModeOneVsRest && method != string(recal.MethodIsotonic) {
		return usageErrorf("--scalar-mode one_vs_rest applies to --method isotonic, not %s", method)
	}
	// The ODIR weights: fixed, both (matrix-odir, dirichlet-odir; mu
	// alone for vector), or cross-validated on --grid with --seed's
	// folds.
	lambda, mu := fs.Changed("lambda"), fs.Changed("mu")
	odir := method == recal.MethodMatrix || method == recal.MethodDirichlet
	if odir && lambda != mu {
		return usageErrorf("--lambda and --mu: give both (fixed weights) or neither (both cross-validated); %s fixes both", map[bool]string{true: "--lambda alone", false: "--mu alone"}[lambda])
	}
	if fixed := mu && (lambda || !odir); fixed {
		for _, flag := range []string{"grid", "seed"} {
			if fs.Changed(flag) {
				return usageErrorf("--%s applies to the cross-validation of --lambda and --mu, which fixed weights skip", flag)
			}
		}
	}
	return nil
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
