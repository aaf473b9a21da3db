package recal

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/calib-dev/calib/optionspec"
)

// DefaultSeed is the seed of the cross-validation folds that calib fit
// uses without --seed (the default seed of every calib command).
const DefaultSeed = 1

// maxHistogramBins bounds the histogram's bins: more bins than this hold
// almost no sample each.
const maxHistogramBins = 10_000

// fitText is what the options of calib fit set: the method and its
// options.
type fitText struct {
	method Method
	FitOptions
}

// odirMethods are the methods whose ODIR weights are cross-validated on a
// grid with seeded folds.
var odirMethods = []string{MethodVector, MethodMatrix, MethodDirichlet}

// fitSpecs declares the options of Fit as calib fit, the C ABI and Python
// name them.
var fitSpecs = []optionspec.Spec[fitText]{
	{Option: optionspec.Option{Name: "method", Kind: optionspec.Text, Usage: "method (required): " + strings.Join(MethodNames(), ", ")},
		Set: func(o *fitText, text string) error {
			if !slices.Contains(MethodNames(), text) {
				return fmt.Errorf("%q: valid methods are %s", text, strings.Join(MethodNames(), ", "))
			}
			o.method = Method(text)
			return nil
		}},
	{Option: optionspec.Option{Name: "knots", Kind: optionspec.Int, Default: strconv.Itoa(DefaultKnots), ReadBy: []string{string(MethodSpline)}, Usage: "spline: number of knots"},
		Set: optionspec.SetInt(2, 1000, "an integer in [2, 1000]", func(o *fitText) *int { return &o.Spline.Knots })},
	{Option: optionspec.Option{Name: "reference-interpolation", Kind: optionspec.Bool, Default: "false", ReadBy: []string{string(MethodSpline)},
		Usage: "spline: reproduce the reference code's swapped interpolation weights"},
		Set: optionspec.SetBool(func(o *fitText) *bool { return &o.Spline.ReferenceInterpolation })},
	{Option: optionspec.Option{Name: "constrained", Kind: optionspec.Bool, Default: "false", ReadBy: []string{string(MethodSpline)},
		Usage: "spline: keep 0 <= score + slope <= 1 at every validation point (the QP of the paper's section 4.1)"},
		Set: optionspec.SetBool(func(o *fitText) *bool { return &o.Spline.Constrained })},
	{Option: optionspec.Option{Name: "bins", Kind: optionspec.Int, Default: strconv.Itoa(DefaultHistogramBins), ReadBy: []string{string(MethodHistogram)},
		Usage: "histogram: number of equal-mass bins"},
		Set: optionspec.SetInt(1, maxHistogramBins, fmt.Sprintf("an integer in [1, %d]", maxHistogramBins), func(o *fitText) *int { return &o.Bins })},
	{Option: optionspec.Option{Name: "lambda", Kind: optionspec.Float, Default: "0", ReadBy: []string{MethodMatrix, MethodDirichlet},
		Usage: "matrix-odir, dirichlet-odir: ODIR weight of the squared off-diagonal weights (default: cross-validated)"},
		Set: optionspec.SetFloat(nonNegative, "a finite number >= 0", func(o *fitText) *float64 { return &o.Linear.Lambda })},
	{Option: optionspec.Option{Name: "mu", Kind: optionspec.Float, Default: "0", ReadBy: odirMethods,
		Usage: "matrix-odir, dirichlet-odir, vector: weight of the squared intercepts (default: cross-validated)"},
		Set: optionspec.SetFloat(nonNegative, "a finite number >= 0", func(o *fitText) *float64 { return &o.Linear.Mu })},
	{Option: optionspec.Option{Name: "grid", Kind: optionspec.Text, Default: "default", ReadBy: odirMethods,
		Usage: "cross-validation grid of lambda and mu: default or full (Kull et al.)"},
		Set: optionspec.SetOneOf("want default or full", []string{"default", "full"}, func(o *fitText) *string { return &o.Linear.Grid })},
	{Option: optionspec.Option{Name: "odir-normalize", Kind: optionspec.Bool, Default: "false", ReadBy: []string{MethodMatrix, MethodDirichlet},
		Usage: "divide lambda by K(K-1) and mu by K (the ODIR paper's formula)"},
		Set: optionspec.SetBool(func(o *fitText) *bool { return &o.Linear.Normalize })},
	{Option: optionspec.Option{Name: "seed", Kind: optionspec.Uint64, Default: strconv.Itoa(DefaultSeed), ReadBy: odirMethods,
		Usage: "seed of the cross-validation folds"},
		Set: optionspec.SetUint64(func(o *fitText) *uint64 { return &o.Linear.Seed })},
	{Option: optionspec.Option{Name: "scalar-mode", Kind: optionspec.Text, ReadBy: []string{string(MethodIsotonic), string(MethodHistogram), string(MethodPlatt), string(MethodBeta)},
		Usage: "isotonic, histogram, platt, beta: top_label (default), binary (K = 2) or one_vs_rest (isotonic)"},
		Set: optionspec.SetOneOf("valid modes are top_label, binary and one_vs_rest (isotonic)", []string{ModeTopLabel, ModeBinary, ModeOneVsRest},
			func(o *fitText) *string { return &o.ScalarMode })},
}

func nonNegative(x float64) bool { return x >= 0 }

// FitOptionSpecs returns the options of Fit as calib fit names them (a
// copy): the method, then each method's own.
func FitOptionSpecs() []optionspec.Option { return optionspec.Options(fitSpecs) }

// ParseFit returns the method and options written as text, keyed by
// option name ("_" may stand for "-"), as calib fit reads its flags: each
// option absent takes its default (optionspec.Parse); the method is
// required; an option of other methods is refused (it would be ignored
// without a word), and so is one_vs_rest but for isotonic; the ODIR
// weights are fixed (FixedRegularization) where lambda or mu is given,
// both for matrix-odir and dirichlet-odir, and then grid and seed, which
// only the cross-validation reads, are refused. Errors are
// *optionspec.Error values naming the option.
func ParseFit(text map[string]string) (Method, FitOptions, error) {
	var o fitText
	given, err := optionspec.Parse(fitSpecs, &o, text)
	if err != nil {
		return "", FitOptions{}, err
	}
	m := o.method
	if m == "" {
		return "", FitOptions{}, optionspec.Errorf("method", "method is required: one of %s", strings.Join(MethodNames(), ", "))
	}
	if err := optionspec.Unread(FitOptionSpecs(), given, "--method", []string{string(m)}); err != nil {
		return "", FitOptions{}, err
	}
	if o.ScalarMode == ModeOneVsRest && m != MethodIsotonic {
		return "", FitOptions{}, optionspec.Errorf("scalar-mode", "scalar-mode one_vs_rest applies to --method isotonic, not %s", m)
	}
	lambda, mu := given["lambda"], given["mu"]
	odir := m == MethodMatrix || m == MethodDirichlet
	if odir && lambda != mu {
		alone := "--mu alone"
		if lambda {
			alone = "--lambda alone"
		}
		return "", FitOptions{}, optionspec.Errorf("lambda", "lambda and --mu: give both (fixed weights) or neither (both cross-validated); %s fixes both", alone)
	}
	if fixed := mu && (lambda || !odir); fixed {
		for _, name := range []string{"grid", "seed"} {
			if given[name] {
				return "", FitOptions{}, optionspec.Errorf(name, "%s applies to the cross-validation of --lambda and --mu, which fixed weights skip", name)
			}
		}
	}
	o.FixedRegularization = lambda || mu
	return m, o.FitOptions, nil
}
