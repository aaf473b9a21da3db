package recal

import (
	"strings"
	"testing"
)

// TestParseFit: the defaults, the fixed ODIR weights, and each refusal of
// calib fit naming its option.
func TestParseFit(t *testing.T) {
	m, o, err := ParseFit(map[string]string{"method": "spline"})
	if err != nil || m != MethodSpline || o.Spline.Knots != DefaultKnots || o.Bins != DefaultHistogramBins || o.Linear.Grid != "default" || o.Linear.Seed != DefaultSeed || o.FixedRegularization {
		t.Fatalf("ParseFit(spline) = %s, %+v, %v", m, o, err)
	}
	m, o, err = ParseFit(map[string]string{"method": MethodMatrix, "lambda": "0.5", "mu": "2"})
	if err != nil || m != MethodMatrix || o.Linear.Lambda != 0.5 || o.Linear.Mu != 2 || !o.FixedRegularization {
		t.Errorf("ParseFit(matrix fixed) = %s, %+v, %v", m, o, err)
	}
	for _, c := range []struct {
		text map[string]string
		want string
	}{
		{map[string]string{}, "method is required: one of "},
		{map[string]string{"method": "nope"}, `method "nope": valid methods are `},
		{map[string]string{"method": "temperature", "knots": "5", "bins": "4"}, "bins applies to --method histogram, not temperature"},
		{map[string]string{"method": "isotonic", "grid": "full"}, "grid applies to --method vector, matrix-odir, dirichlet-odir, not isotonic"},
		{map[string]string{"method": "histogram", "scalar-mode": "one_vs_rest"}, "scalar-mode one_vs_rest applies to --method isotonic, not histogram"},
		{map[string]string{"method": MethodDirichlet, "lambda": "1"}, "lambda and --mu: give both (fixed weights) or neither (both cross-validated); --lambda alone fixes both"},
		{map[string]string{"method": MethodVector, "mu": "1", "seed": "3"}, "seed applies to the cross-validation of --lambda and --mu, which fixed weights skip"},
		{map[string]string{"method": "spline", "knots": "1"}, `knots "1": want an integer in [2, 1000]`},
		{map[string]string{"method": MethodMatrix, "lambda": "-1", "mu": "1"}, `lambda "-1": want a finite number >= 0`},
	} {
		if _, _, err := ParseFit(c.text); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("ParseFit(%v): %v, want %q", c.text, err, c.want)
		}
	}
}

// TestFitSpecsReadBy: every method an option names as its reader is a
// method.
func TestFitSpecsReadBy(t *testing.T) {
	for _, o := range FitOptionSpecs() {
		for _, m := range o.ReadBy {
			if _, err := ParseMethod(m); err != nil {
				t.Errorf("%s: ReadBy %q: %v", o.Name, m, err)
			}
		}
	}
}
