package recal

import (
	"bytes"
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/calib-dev/calib/data"
)

// intWeights returns n weights drawn from {0, 1, 2, 3}.
func intWeights(n int, seed uint64) []float64 {
	rng := rand.New(rand.NewPCG(seed, 16))
	w := make([]float64, n)
	for i := range w {
		w[i] = float64(rng.IntN(4))
	}
	return w
}

// repeated returns the rows (k entries each) of x with row i repeated w_i
// times (weight-0 rows dropped), in order.
func repeated[T any](x []T, k int, w []float64) []T {
	var out []T
	for i, c := range w {
		for range int(c) {
			out = append(out, x[i*k:(i+1)*k]...)
		}
	}
	return out
}

// calibrateDiff returns the largest difference between the calibrated
// probabilities of two maps on the same predictions.
func calibrateDiff(t *testing.T, a, b Calibrator, probs, logits []float64, k int) float64 {
	t.Helper()
	pa, err := a.Calibrate(probs, logits, k)
	if err != nil {
		t.Fatal(err)
	}
	pb, err := b.Calibrate(probs, logits, k)
	if err != nil {
		t.Fatal(err)
	}
	d := 0.0
	for i := range pa {
		d = math.Max(d, math.Abs(pa[i]-pb[i]))
	}
	return d
}

// TestWeightedFitsEqualRepeatedRows: every fit by weighted NLL or
// weighted PAV with integer weights in {0, 1, 2, 3}, and histogram
// binning with 0/1 weights (its equal-mass edges read weights as counts of
// their normalised form), gives the map fitted on the rows repeated w_i
// times (weight-0 rows dropped),
// compared by their calibrated probabilities on 300 held-out predictions:
// within 1e-6 for the iterative optimisers (golden-section search to 1e-10
// in log T, L-BFGS to a gradient of 1e-5, Newton to a step of 1e-10) and
// 1e-12 for the closed-form maps (isotonic regression, histogram binning).
func TestWeightedFitsEqualRepeatedRows(t *testing.T) {
	for _, k := range []int{2, 4} {
		p, z, y := logitSet(400, k, 11)
		w := intWeights(400, 12)
		rp, rz, ry := repeated(p, k, w), repeated(z, k, w), repeated(y, 1, w)
		tp, tz, _ := logitSet(300, k, 13)
		type fit func(p, z []float64, y []int, w []float64) (Calibrator, error)
		lin := func(method string) fit {
			return func(p, z []float64, y []int, w []float64) (Calibrator, error) {
				return FitLinear(context.Background(), method, p, z, y, k, w, LinearOptions{Lambda: 1e-3, Mu: 1e-3})
			}
		}
		cases := []struct {
			name string
			tol  float64
			fit  fit
		}{
			{"temperature", 1e-6, func(p, z []float64, y []int, w []float64) (Calibrator, error) { return FitTemperature(z, y, k, w) }},
			{"vector", 1e-6, lin(MethodVector)},
			{"matrix-odir", 1e-6, lin(MethodMatrix)},
			{"dirichlet-odir", 1e-6, lin(MethodDirichlet)},
			{"log-spline", 1e-6, func(p, z []float64, y []int, w []float64) (Calibrator, error) {
				return FitLogSpline(context.Background(), p, z, y, k, w, LogSplineOptions{})
			}},
			{"platt", 1e-6, func(p, z []float64, y []int, w []float64) (Calibrator, error) { return FitPlatt(p, y, k, "", w) }},
			{"beta", 1e-6, func(p, z []float64, y []int, w []float64) (Calibrator, error) { return FitBeta(p, y, k, "", w) }},
			{"isotonic", 1e-12, func(p, z []float64, y []int, w []float64) (Calibrator, error) { return FitIsotonic(p, y, k, "", w) }},
			{"isotonic one_vs_rest", 1e-12, func(p, z []float64, y []int, w []float64) (Calibrator, error) {
				return FitIsotonic(p, y, k, ModeOneVsRest, w)
			}},
			{"histogram", 1e-12, func(p, z []float64, y []int, w []float64) (Calibrator, error) {
				return FitHistogram(p, y, k, 10, "", w)
			}},
		}
		if k == 2 {
			cases = append(cases, []struct {
				name string
				tol  float64
				fit  fit
			}{
				{"platt binary", 1e-6, func(p, z []float64, y []int, w []float64) (Calibrator, error) {
					return FitPlatt(p, y, k, ModeBinary, w)
				}},
				{"beta binary", 1e-6, func(p, z []float64, y []int, w []float64) (Calibrator, error) { return FitBeta(p, y, k, ModeBinary, w) }},
				{"isotonic binary", 1e-12, func(p, z []float64, y []int, w []float64) (Calibrator, error) {
					return FitIsotonic(p, y, k, ModeBinary, w)
				}},
				{"histogram binary", 1e-12, func(p, z []float64, y []int, w []float64) (Calibrator, error) {
					return FitHistogram(p, y, k, 7, ModeBinary, w)
				}},
			}...)
		}
		// Histogram binning places equal-mass edges, which read the
		// weights as counts in their normalised form (mean 1 over the
		// rows of positive weight): the repeated rows are those of a
		// 0/1 mask.
		mask := slices.Clone(w)
		for i, v := range mask {
			mask[i] = min(v, 1)
		}
		mp, mz, my := repeated(p, k, mask), repeated(z, k, mask), repeated(y, 1, mask)
		for _, c := range cases {
			w, rp, rz, ry := w, rp, rz, ry
			if strings.HasPrefix(c.name, "histogram") {
				w, rp, rz, ry = mask, mp, mz, my
			}
			a, err := c.fit(p, z, y, w)
			if err != nil {
				t.Fatalf("K = %d, %s weighted: %v", k, c.name, err)
			}
			b, err := c.fit(rp, rz, ry, nil)
			if err != nil {
				t.Fatalf("K = %d, %s repeated: %v", k, c.name, err)
			}
			d := calibrateDiff(t, a, b, tp, tz, k)
			t.Logf("K = %d, %s: largest difference %.3g (tolerance %g)", k, c.name, d, c.tol)
			if !(d <= c.tol) {
				t.Errorf("K = %d, %s: weighted and repeated-rows maps differ by %g, tolerance %g", k, c.name, d, c.tol)
			}
			// The weights matter: the unweighted fit is another map.
			u, err := c.fit(p, z, y, nil)
			if err != nil {
				t.Fatal(err)
			}
			if du := calibrateDiff(t, a, u, tp, tz, k); !(du > 100*c.tol) {
				t.Errorf("K = %d, %s: the weighted map is the unweighted one (difference %g)", k, c.name, du)
			}
		}
	}
}

// TestWeightedSpline: the spline is not a repeated-rows identity (see
// SplineCurve), but weights of 0 and 1 give exactly the fit of the samples
// of weight 1 (1e-12), scaling every weight by 2.5 changes nothing but
// rounding (1e-9), unit weights give the unweighted curve with no
// fractiles stored, and a weighted map round-trips through Save and Load.
func TestWeightedSpline(t *testing.T) {
	const k = 3
	p, _, y := logitSet(500, k, 21)
	tp, _, _ := logitSet(300, k, 22)
	w01 := intWeights(500, 23)
	for i := range w01 {
		w01[i] = math.Min(w01[i], 1)
	}
	for _, o := range []SplineOptions{{}, {Constrained: true}, {Knots: 4}} {
		a, err := FitSpline(p, y, k, w01, o)
		if err != nil {
			t.Fatal(err)
		}
		b, err := FitSpline(repeated(p, k, w01), repeated(y, 1, w01), k, nil, o)
		if err != nil {
			t.Fatal(err)
		}
		if d := calibrateDiff(t, a, b, tp, nil, k); d > 1e-12 {
			t.Errorf("%+v: 0/1 weights and the subset differ by %g", o, d)
		}
		if a.Top1.Fractiles != nil {
			t.Errorf("%+v: 0/1 weights stored fractiles", o)
		}
	}

	w := intWeights(500, 24)
	w[0], w[1] = 0.5, 1.75 // not integers
	a, err := FitSpline(p, y, k, w, SplineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if a.Top1.Fractiles == nil {
		t.Fatal("no fractiles stored for a weighted fit")
	}
	scaled := make([]float64, len(w))
	for i, v := range w {
		scaled[i] = 2.5 * v
	}
	b, err := FitSpline(p, y, k, scaled, SplineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d := calibrateDiff(t, a, b, tp, nil, k); d > 1e-9 {
		t.Errorf("weights scaled by 2.5 change the map by %g", d)
	}
	u, err := FitSpline(p, y, k, nil, SplineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d := calibrateDiff(t, a, u, tp, nil, k)
	if !(d > 1e-6) {
		t.Errorf("the weighted spline is the unweighted one (difference %g)", d)
	}
	rp, ry := repeated(p, k, intWeights(500, 24)), repeated(y, 1, intWeights(500, 24))
	if r, err := FitSpline(rp, ry, k, nil, SplineOptions{}); err == nil {
		t.Logf("weighted spline against the repeated rows (not an identity): largest difference %.3g; against the unweighted fit %.3g",
			calibrateDiff(t, a, r, tp, nil, k), d)
	}

	var buf bytes.Buffer
	if err := Save(&buf, a); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"fractiles"`) {
		t.Error("a weighted spline saves no fractiles")
	}
	c, err := Load(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if d := calibrateDiff(t, a, c, tp, nil, k); d != 0 {
		t.Errorf("the loaded weighted spline differs by %g", d)
	}
	// Fractiles out of order are refused.
	if _, err := loadEdited(t, a, func(m map[string]any) {
		f := at(m, "top1", "fractiles").([]any)
		f[1], f[2] = f[2], f[1]
		if f[1].(float64) == f[2].(float64) {
			f[1] = 0.9
		}
	}); !errors.Is(err, ErrMap) {
		t.Errorf("fractiles out of order: %v, want ErrMap", err)
	}
}

// TestFitBadWeights: every fit refuses negative, NaN, infinite, all-zero
// and wrongly sized weights with an error wrapping both ErrInput and
// data.ErrWeights; Fit passes the set's weights.
func TestFitBadWeights(t *testing.T) {
	const k, n = 3, 30
	p, z, y := logitSet(n, k, 31)
	bad := map[string][]float64{
		"negative":     append(make([]float64, n-1), -1),
		"NaN":          append(intWeights(n-1, 1), math.NaN()),
		"Inf":          append(intWeights(n-1, 1), math.Inf(1)),
		"all zero":     make([]float64, n),
		"wrong length": {1, 2, 3},
	}
	bad["negative"][0] = 1
	for name, w := range bad {
		for fname, f := range map[string]func() error{
			"FitTemperature": func() error { _, err := FitTemperature(z, y, k, w); return err },
			"FitLinear": func() error {
				_, err := FitLinear(context.Background(), MethodMatrix, p, z, y, k, w, LinearOptions{CV: true})
				return err
			},
			"FitSpline":      func() error { _, err := FitSpline(p, y, k, w, SplineOptions{}); return err },
			"FitSplineCurve": func() error { _, err := FitSplineCurve(p[:n], p[n:2*n], w, SplineOptions{}); return err },
			"FitIsotonic":    func() error { _, err := FitIsotonic(p, y, k, ModeOneVsRest, w); return err },
			"FitHistogram":   func() error { _, err := FitHistogram(p, y, k, 3, "", w); return err },
			"FitPlatt":       func() error { _, err := FitPlatt(p, y, k, "", w); return err },
			"FitBeta":        func() error { _, err := FitBeta(p, y, k, "", w); return err },
			"Fit": func() error {
				s := &data.Set{N: n, K: k, Probs: p, Logits: z, Labels: y, Weights: w}
				_, err := Fit(context.Background(), MethodIsotonic, s, FitOptions{})
				return err
			},
		} {
			err := f()
			if !errors.Is(err, ErrInput) || !errors.Is(err, data.ErrWeights) {
				t.Errorf("%s, %s weights: error %v, want one wrapping ErrInput and data.ErrWeights", fname, name, err)
			}
		}
	}

	// Samples of weight 0 do not count as data.
	w := make([]float64, n)
	w[0] = 1
	for fname, f := range map[string]func() error{
		"FitLinear": func() error {
			_, err := FitLinear(context.Background(), MethodVector, p, z, y, k, w, LinearOptions{})
			return err
		},
		"FitSpline":   func() error { _, err := FitSpline(p, y, k, w, SplineOptions{}); return err },
		"FitIsotonic": func() error { _, err := FitIsotonic(p, y, k, "", w); return err },
		"FitHistogram": func() error {
			_, err := FitHistogram(p, y, k, 2, "", w)
			return err
		},
		"FitPlatt": func() error { _, err := FitPlatt(p, y, k, "", w); return err },
	} {
		if err := f(); !errors.Is(err, ErrTooFew) {
			t.Errorf("%s with one sample of weight > 0: %v, want ErrTooFew", fname, err)
		}
	}

	// Fit uses the set's weights.
	w = intWeights(n, 32)
	s := &data.Set{N: n, K: k, Probs: p, Logits: z, Labels: y, Weights: w}
	for _, m := range []Method{MethodTemperature, MethodIsotonic, MethodSpline, MethodPlatt} {
		c, err := Fit(context.Background(), m, s, FitOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var direct Calibrator
		switch m {
		case MethodTemperature:
			direct, err = FitTemperature(z, y, k, w)
		case MethodIsotonic:
			direct, err = FitIsotonic(p, y, k, "", w)
		case MethodSpline:
			direct, err = FitSpline(p, y, k, w, SplineOptions{})
		case MethodPlatt:
			direct, err = FitPlatt(p, y, k, "", w)
		}
		if err != nil {
			t.Fatal(err)
		}
		if d := calibrateDiff(t, c, direct, p, z, k); d != 0 {
			t.Errorf("Fit(%s) with weights differs from the weighted fit by %g", m, d)
		}
	}
}

// TestWeightedLinearObjective: the weighted objective and gradient of the
// linear maps are those of the repeated rows, on the loop path (K <= 20)
// and on the BLAS path (K > 20) alike, within 1e-12 relative; and a
// cross-validated weighted fit runs (its folds carry the weights).
func TestWeightedLinearObjective(t *testing.T) {
	const k, n = 22, 120
	p, z, y := logitSet(n, k, 41)
	w := intWeights(n, 42)
	rng := rand.New(rand.NewPCG(43, 43))
	th := make([]float64, k*k+k)
	for i := range th {
		th[i] = 0.1 * rng.NormFloat64()
	}
	for _, method := range []string{MethodMatrix, MethodDirichlet} {
		x := linearInput(method, p, z, k)
		var vals []float64
		var grads [][]float64
		for _, d := range []*linearData{
			newLinearData(method, x, y, w, k, 1),
			newLinearData(method, repeated(x, k, w), repeated(y, 1, w), nil, k, 1),
		} {
			g := make([]float64, len(th))
			vals = append(vals, d.objective(0.01, 0.02, th, g))
			grads = append(grads, g)
		}
		for i := 1; i < len(vals); i++ {
			if math.Abs(vals[i]-vals[0]) > 1e-12*math.Abs(vals[0]) {
				t.Errorf("%s: objective %d = %.17g, want %.17g", method, i, vals[i], vals[0])
			}
			for j := range grads[0] {
				if math.Abs(grads[i][j]-grads[0][j]) > 1e-12*math.Max(1, math.Abs(grads[0][j])) {
					t.Errorf("%s: gradient %d[%d] = %.17g, want %.17g", method, i, j, grads[i][j], grads[0][j])
					break
				}
			}
		}
	}
	p, z, y = logitSet(200, 3, 44)
	c, err := FitLinear(context.Background(), MethodMatrix, p, z, y, 3, intWeights(200, 45), LinearOptions{CV: true})
	if err != nil {
		t.Fatal(err)
	}
	if c.Lambda <= 0 || c.Mu <= 0 {
		t.Errorf("cross-validated lambda %v, mu %v", c.Lambda, c.Mu)
	}
}
