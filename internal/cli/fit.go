package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"reflect"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/recal"
)

// fitMethods lists the methods of `calib fit` (recal.Methods).
var fitMethods = func() []string {
	var names []string
	for _, m := range recal.Methods {
		names = append(names, string(m))
	}
	return names
}()

func newFitCmd() *cobra.Command {
	var in inputFlags
	var method, out string
	var knots, bins int
	var refInterp, constrained bool
	var scalarMode, gridName string
	var lambda, mu float64
	var normalize bool
	progress := true
	var seed uint64
	cmd := &cobra.Command{
		Use:   "fit VAL_PRED --method METHOD -o MAP.json",
		Short: "Fit a recalibration map on validation predictions and save it as JSON",
		Long: `fit learns a post-hoc recalibration map from validation predictions and labels
and writes it as a JSON map (schema in the README) for calib apply, calib eval
--calibrator, or any other language.

Methods: spline (Gupta et al. 2021: natural cubic spline in fractile space,
--knots, default 6; --constrained keeps the fitted probabilities in [0, 1]);
temperature (NLL-optimal temperature; needs logits);
vector, matrix-odir and dirichlet-odir (L-BFGS on NLL + lambda sum of squared
off-diagonal weights + mu sum of squared intercepts; lambda and mu by 3-fold
cross-validation unless given); isotonic (pool-adjacent-violators), histogram (--bins equal-mass bins,
default 15), platt and beta (logistic maps of the score), each on the
top-label confidence (--scalar-mode top_label, the default), on p1 of a
binary set (binary), or, for isotonic, on every class column
(one_vs_rest, rows renormalised).`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if method == "" {
				return usageErrorf("--method is required: one of %s", strings.Join(fitMethods, ", "))
			}
			if !slices.Contains(fitMethods, method) {
				return usageErrorf("--method %q: valid methods are %s", method, strings.Join(fitMethods, ", "))
			}
			if err := checkMethodFlags(cmd, method); err != nil {
				return err
			}
			if out == "" {
				return usageErrorf("-o MAP.json is required")
			}
			if err := checkOutput("-o", out, "json"); err != nil {
				return err
			}
			if err := in.check(); err != nil {
				return err
			}
			s, err := in.load(args[0])
			if err != nil {
				return err
			}
			m := recal.Method(method)
			if m.NeedsLogits() && s.Logits == nil {
				return usageErrorf("--method %s needs logits (--logits)", method)
			}
			o := recal.FitOptions{Spline: recal.SplineOptions{Knots: knots, ReferenceInterpolation: refInterp, Constrained: constrained},
				Linear:              recal.LinearOptions{Lambda: lambda, Mu: mu, Grid: gridName, Normalize: normalize, Seed: seed, Context: cmd.Context()},
				FixedRegularization: cmd.Flags().Changed("lambda") || cmd.Flags().Changed("mu"),
				Bins:                bins, ScalarMode: scalarMode}
			ui := newProgressUI(cmd.Context(), cmd.ErrOrStderr(), progress)
			var done func()
			o.Linear.Progress, done = ui.Step(method + " cross-validation")
			c, err := recal.Fit(m, s, o)
			done()
			ui.wait()
			if err != nil {
				return fmt.Errorf("%s: %w", s.File, err)
			}
			prov := newProvenance(cmd, args)
			prov.input("val", s, in.labels)
			if b, err := json.Marshal(prov); err == nil {
				if p, ok := c.(interface{ SetProvenance(json.RawMessage) }); ok {
					p.SetProvenance(b)
				}
			}
			if err := writeAtomic(out, func(w io.Writer) error { return recal.Save(w, c) }); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s map fitted on %s (n = %d, K = %d) written to %s\n", method, s.File, s.N, s.K, out)
			return nil
		},
	}
	in.register(cmd.Flags())
	in.registerWeights(cmd.Flags(), false)
	fs := cmd.Flags()
	fs.StringVar(&method, "method", "", "method (required): "+strings.Join(fitMethods, ", "))
	fs.StringVarP(&out, "output", "o", "", "write the map to `FILE` (JSON)")
	fs.IntVar(&knots, "knots", recal.DefaultKnots, "spline: number of knots")
	fs.BoolVar(&refInterp, "reference-interpolation", false, "spline: reproduce the reference code's swapped interpolation weights")
	fs.BoolVar(&constrained, "constrained", false, "spline: keep 0 <= score + slope <= 1 at every validation point (the QP of the paper's section 4.1)")
	fs.IntVar(&bins, "bins", recal.DefaultHistogramBins, "histogram: number of equal-mass bins")
	fs.Float64Var(&lambda, "lambda", 0, "matrix-odir, dirichlet-odir: ODIR weight of the squared off-diagonal weights (default: cross-validated)")
	fs.Float64Var(&mu, "mu", 0, "matrix-odir, dirichlet-odir, vector: weight of the squared intercepts (default: cross-validated)")
	fs.StringVar(&gridName, "grid", "default", "cross-validation grid of lambda and mu: default or full (Kull et al.)")
	fs.BoolVar(&normalize, "odir-normalize", false, "divide lambda by K(K-1) and mu by K (the ODIR paper's formula)")
	fs.Uint64Var(&seed, "seed", 1, "seed of the cross-validation folds")
	fs.BoolVar(&progress, "progress", true, "show the cross-validation's progress on stderr (bars on a terminal, else a line every 10 s)")
	fs.StringVar(&scalarMode, "scalar-mode", "", "isotonic, histogram, platt, beta: top_label (default), binary (K = 2) or one_vs_rest (isotonic)")
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
	"grid":                    {recal.MethodVector, recal.MethodMatrix, recal.MethodDirichlet},
	"odir-normalize":          {recal.MethodMatrix, recal.MethodDirichlet},
	"seed":                    {recal.MethodVector, recal.MethodMatrix, recal.MethodDirichlet},
	"scalar-mode":             {"isotonic", "histogram", "platt", "beta"},
}

// checkMethodFlags refuses a method-specific flag given for a method it does
// not apply to (it would be ignored without a word).
func checkMethodFlags(cmd *cobra.Command, method string) error {
	for flag, methods := range methodFlags {
		if cmd.Flags().Changed(flag) && !slices.Contains(methods, method) {
			return usageErrorf("--%s applies to --method %s, not %s", flag, strings.Join(methods, ", "), method)
		}
	}
	return nil
}

// loadMap reads a map file; its errors say what is wrong in the user's
// terms (no Go type or package names).
func loadMap(name string) (recal.Calibrator, error) {
	if st, err := os.Stat(name); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, usageErrorf("%s: no such map file", name)
		}
		return nil, inputError{err}
	} else if st.IsDir() {
		return nil, usageErrorf("%s: is a directory, want a map file (the JSON written by calib fit)", name)
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, inputError{err}
	}
	defer f.Close()
	c, err := recal.Load(f)
	if err != nil {
		return nil, inputError{fmt.Errorf("%s: %s", name, mapErrorText(err))}
	}
	return c, nil
}

// mapErrorText says what is wrong with a map file without the JSON
// decoder's Go terms.
func mapErrorText(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("not a calib map: not valid JSON at byte %d: %v", se.Offset, se)
	case errors.As(err, &te):
		return fmt.Sprintf("not a calib map: %q holds a JSON %s, want a %s", te.Field, te.Value, jsonKind(te.Type.Kind()))
	}
	return strings.ReplaceAll(strings.TrimPrefix(err.Error(), "recal: "), "json: ", "")
}

// jsonKind names a Go kind as the JSON value it decodes from.
func jsonKind(k reflect.Kind) string {
	switch k {
	case reflect.Int, reflect.Int64, reflect.Int32, reflect.Uint, reflect.Uint64:
		return "whole number"
	case reflect.Float64, reflect.Float32:
		return "number"
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "list"
	}
	return "object"
}

// mapColumns is the number of prediction columns of a file for map c: the
// map's K above 2; for K = 2 the file may hold one column (p1) or two, so
// 0 (unknown: the loader decides from the file).
func mapColumns(c recal.Calibrator) int {
	if k := c.Info().K; k > 2 {
		return k
	}
	return 0
}

// applyMap returns a copy of s with the map's probabilities (recal.Apply);
// its errors are the input's (exit 2) and name the file.
func applyMap(c recal.Calibrator, s *data.Set) (*data.Set, error) {
	out, err := recal.Apply(c, s)
	if err != nil {
		return nil, inputError{fmt.Errorf("%s: %w", s.File, err)}
	}
	return out, nil
}

func newApplyCmd() *cobra.Command {
	var in inputFlags
	var out string
	cmd := &cobra.Command{
		Use:   "apply MAP.json PRED -o OUT",
		Short: "Apply a recalibration map to predictions and write the calibrated probabilities",
		Long: `apply reads a map written by calib fit and predictions (probabilities or, with
--logits, logits; labels are optional) and writes the calibrated probabilities
to OUT: .npy (float64, n x K) or .csv (p0..p{K-1}, then the label column when
labels were read).`,
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return usageErrorf("-o OUT is required")
			}
			if err := checkOutput("-o", out, "npy", "csv"); err != nil {
				return err
			}
			if err := in.check(); err != nil {
				return err
			}
			c, err := loadMap(args[0])
			if err != nil {
				return err
			}
			s, err := in.loadWith(args[1], true, mapColumns(c))
			if err != nil {
				return err
			}
			cs, err := applyMap(c, s)
			if err != nil {
				return err
			}
			err = writeAtomic(out, func(w io.Writer) error {
				if data.FormatOf(out) == "npy" {
					return data.WriteNPY(w, cs.Probs, cs.K)
				}
				return data.WriteCSV(w, cs.Probs, cs.K, cs.Labels)
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s map applied to %s (n = %d), written to %s\n", c.Info().Method, s.File, s.N, out)
			return nil
		},
	}
	in.register(cmd.Flags())
	cmd.Flags().StringVarP(&out, "output", "o", "", "write the calibrated probabilities to `FILE` (.npy or .csv)")
	return cmd
}
