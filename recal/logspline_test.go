package recal

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/optimize"

	"github.com/calib-dev/calib/synth"
)

// logSplineTestData is the fit data of 200 rows of logitSet (K = k) with
// integer weights and 4 knots, summed on the given number of workers.
func logSplineTestData(t *testing.T, k, workers int) *logSplineData {
	t.Helper()
	p, _, y := logitSet(200, k, 3)
	w := intWeights(200, 4)
	u := logProbs(p, nil, k)
	knots := massQuantiles(u, 4, w, k)
	if len(knots) != 4 {
		t.Fatalf("%d knots", len(knots))
	}
	return newLogSplineData(u, y, w, k, knots, workers)
}

// TestLogSplineGradient: the objective's gradient equals central finite
// differences (step 1e-6) at random parameters, within 1e-6 relative to
// the gradient's scale, with knots, weights and every bucket in use.
func TestLogSplineGradient(t *testing.T) {
	const k = 5
	d := logSplineTestData(t, k, 1)
	u, knots := d.u, d.knots
	used := map[uint8]bool{}
	for i, v := range u {
		used[d.bucket[i]] = true
		// The bucket counts the knots at or below u.
		if b := int(d.bucket[i]); (b > 0 && knots[b-1] > v) || (b < len(knots) && knots[b] <= v) {
			t.Fatalf("entry %d: u = %v in bucket %d of knots %v", i, v, b, knots)
		}
	}
	if len(used) != 5 {
		t.Fatalf("buckets used: %v", used)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	th := make([]float64, 1+4+k)
	for i := range th {
		th[i] = 0.5 * rng.NormFloat64()
	}
	th[0] = 1.2
	grad := make([]float64, len(th))
	d.objective(th, grad, nil)
	scale := 0.0
	for _, g := range grad {
		scale = math.Max(scale, math.Abs(g))
	}
	tmp := make([]float64, len(th))
	for j := range th {
		a, b := append([]float64(nil), th...), append([]float64(nil), th...)
		a[j] += 1e-6
		b[j] -= 1e-6
		fd := (d.objective(a, tmp, nil) - d.objective(b, tmp, nil)) / 2e-6
		if math.Abs(fd-grad[j]) > 1e-6*scale {
			t.Errorf("parameter %d: gradient %.10g, finite difference %.10g", j, grad[j], fd)
		}
	}
}

// TestLogSplineHessian: the objective's Hessian equals central finite
// differences (step 1e-6) of its gradient at random parameters, within
// 1e-6 relative to the Hessian's scale, with and without class biases,
// with weights and every bucket in use; and it is symmetric.
func TestLogSplineHessian(t *testing.T) {
	const k = 5
	d := logSplineTestData(t, k, 2)
	knots := d.knots
	rng := rand.New(rand.NewPCG(7, 8))
	for _, np := range []int{1 + len(knots), 1 + len(knots) + k} {
		th := make([]float64, np)
		for i := range th {
			th[i] = 0.5 * rng.NormFloat64()
		}
		th[0] = 0.8
		grad, hess := make([]float64, np), make([]float64, np*np)
		d.objective(th, grad, hess)
		scale := 0.0
		for _, h := range hess {
			scale = math.Max(scale, math.Abs(h))
		}
		ga, gb := make([]float64, np), make([]float64, np)
		for j := range th {
			a, b := slices.Clone(th), slices.Clone(th)
			a[j] += 1e-6
			b[j] -= 1e-6
			d.objective(a, ga, nil)
			d.objective(b, gb, nil)
			for i := range np {
				fd := (ga[i] - gb[i]) / 2e-6
				if math.Abs(fd-hess[i*np+j]) > 1e-6*scale {
					t.Errorf("%d parameters: H[%d][%d] = %.10g, finite difference %.10g", np, i, j, hess[i*np+j], fd)
				}
				if hess[i*np+j] != hess[j*np+i] {
					t.Errorf("%d parameters: H[%d][%d] = %v, H[%d][%d] = %v", np, i, j, hess[i*np+j], j, i, hess[j*np+i])
				}
			}
		}
	}
}

// TestLogSplineRecovers: on 40,000 draws of synth families whose true
// recalibration the family holds (temperature 0.6, a prior shift) or
// approximates (label smoothing 0.1), K = 10, flat Dirichlet truths, the
// fitted map's probabilities on 5,000 new draws are within a mean L1
// distance of 0.1 times the miscalibration's (f's distance to the truth)
// of the truth (0.35 for smoothing, which the map approximates: measured
// 0.26), and so is the map without class biases (Shared) except for the
// prior shift, which needs them; without knots on the temperature family, 1/a is
// FitTemperature's T within 1e-3.
func TestLogSplineRecovers(t *testing.T) {
	for _, fam := range []synth.Family{
		{K: 10, Alpha: 1, Miscalibration: synth.Tempering, Param: 0.6},
		{K: 10, Alpha: 1, Miscalibration: synth.PriorShift, Param: 0.7, Seed: 3},
		{K: 10, Alpha: 1, Miscalibration: synth.Smoothing, Param: 0.1},
	} {
		rng := rand.New(rand.NewPCG(9, 9))
		f, y, _ := fam.Draw(40000, rng)
		c, err := FitLogSpline(context.Background(), f, nil, y, fam.K, nil, LogSplineOptions{})
		if err != nil {
			t.Fatal(err)
		}
		tf, _, th := fam.Draw(5000, rng)
		g, err := c.Calibrate(tf, nil, fam.K)
		if err != nil {
			t.Fatal(err)
		}
		var dg, df float64
		for i := range g {
			dg += math.Abs(g[i] - th[i])
			df += math.Abs(tf[i] - th[i])
		}
		t.Logf("%v: mean L1 to the truth %.4f (the predictions' %.4f), slope %.4f, %d knots", fam, dg/5000, df/5000, c.Slope, len(c.Knots))
		tol := 0.1
		if fam.Miscalibration == synth.Smoothing {
			tol = 0.35
		}
		if !(dg < tol*df) {
			t.Errorf("%v: the fitted map is %.4f from the truth, the predictions %.4f", fam, dg/5000, df/5000)
		}
		sh, err := FitLogSpline(context.Background(), f, nil, y, fam.K, nil, LogSplineOptions{Shared: true})
		if err != nil {
			t.Fatal(err)
		}
		g, _ = sh.Calibrate(tf, nil, fam.K)
		ds := 0.0
		for i := range g {
			ds += math.Abs(g[i] - th[i])
		}
		t.Logf("%v: shared map: mean L1 to the truth %.4f", fam, ds/5000)
		if shift := fam.Miscalibration == synth.PriorShift; shift == (ds < tol*df) || slices.ContainsFunc(sh.B, func(b float64) bool { return b != 0 }) {
			t.Errorf("%v: the shared map is %.4f from the truth (prior shift: %v), biases %v", fam, ds/5000, shift, sh.B)
		}
		if fam.Miscalibration != synth.Tempering {
			continue
		}
		lin, err := FitLogSpline(context.Background(), f, nil, y, fam.K, nil, LogSplineOptions{Knots: -1})
		if err != nil {
			t.Fatal(err)
		}
		z := make([]float64, len(f))
		for i, v := range f {
			z[i] = math.Log(v)
		}
		temp, err := FitTemperature(z, y, fam.K, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(lin.Knots) != 0 || math.Abs(1/lin.Slope-temp.Temperature) > 1e-3 {
			t.Errorf("no knots: 1/a = %.6f (%d knots), T = %.6f", 1/lin.Slope, len(lin.Knots), temp.Temperature)
		}
	}
}

// TestLogSplineOptions: knots outside -1..255 are refused with ErrInput.
func TestLogSplineOptions(t *testing.T) {
	p, z, y := logitSet(100, 3, 1)
	for _, m := range []int{-2, 256} {
		if _, err := FitLogSpline(context.Background(), p, z, y, 3, nil, LogSplineOptions{Knots: m}); !errors.Is(err, ErrInput) {
			t.Errorf("%d knots: %v", m, err)
		}
	}
}

// TestLogSplineOverflow: a loaded map with finite but huge parameters
// that overflow psi is an error wrapping ErrInput, not NaN probabilities.
func TestLogSplineOverflow(t *testing.T) {
	l := &LogSpline{Header: Header{SchemaVersion: SchemaVersion, Method: string(MethodLogSpline), Input: InputLogits, K: 3},
		Slope: 1e308, Knots: []float64{}, Hinges: []float64{}, B: []float64{0, 0, 0}}
	if err := validate(l); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Calibrate([]float64{0.01, 0.49, 0.5}, nil, 3); !errors.Is(err, ErrInput) {
		t.Errorf("overflow: %v", err)
	}
}

// TestLogSplineOptimizers: Newton's method (K <= logSplineNewtonMaxK) and
// L-BFGS (above it, with class biases) reach the same minimum: on K = 130
// classes the map fitted by L-BFGS has a gradient below 1e-5 and its
// objective is within 1e-9 of Newton's on the same data; Newton's fit is
// bit-identical for 1 and 3 workers.
func TestLogSplineOptimizers(t *testing.T) {
	const k = logSplineNewtonMaxK + 2
	p, _, y := logitSet(400, k, 5)
	u := logProbs(p, nil, k)
	knots := massQuantiles(u, 8, nil, k)
	d := newLogSplineData(u, y, nil, k, knots, 0)
	np := 1 + len(knots) + k
	th := make([]float64, np)
	th[0] = 1
	settings := &optimize.Settings{GradientThreshold: 1e-8, MajorIterations: 1000,
		Converger: &optimize.FunctionConverge{Absolute: 1e-12, Iterations: 10}}
	xl, err := minimizeLBFGS(context.Background(), "log-spline", func(th, g []float64) float64 { return d.objective(th, g, nil) }, th, settings, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	xn, err := minimizeNewton(context.Background(), newtonProblem{name: "log-spline", dim: np, eval: d.objective}, th, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	g := make([]float64, np)
	fl, fn := d.objective(xl, g, nil), d.objective(xn, g, nil)
	if math.Abs(fl-fn) > 1e-9 || maxAbs(g) > 1e-8 {
		t.Errorf("L-BFGS %v, Newton %v (gradient there %v)", fl, fn, maxAbs(g))
	}
	fit, err := FitLogSpline(context.Background(), p, nil, y, k, nil, LogSplineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := d.objective(append(append([]float64{fit.Slope}, fit.Hinges...), fit.B...), g, nil); math.Abs(got-fn) > 1e-9 {
		t.Errorf("FitLogSpline at K = %d: objective %v, Newton's %v", k, got, fn)
	}
	small, _, ys := logitSet(3000, 10, 6)
	var fits [2]*LogSpline
	for i, w := range []int{1, 3} {
		if fits[i], err = FitLogSpline(context.Background(), small, nil, ys, 10, nil, LogSplineOptions{Workers: w}); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(fits[0].B, fits[1].B) || !slices.Equal(fits[0].Hinges, fits[1].Hinges) || fits[0].Slope != fits[1].Slope {
		t.Errorf("1 and 3 workers differ: %+v %+v", fits[0], fits[1])
	}
}

// TestLogSplineKnotsAt: given knots are used as they are, and knots that
// are not finite, not strictly increasing or too many are refused as
// input errors naming the fault, as a loaded map's are.
func TestLogSplineKnotsAt(t *testing.T) {
	p, _, y := logitSet(300, 4, 8)
	at := []float64{-3, -1, -0.2}
	fit, err := FitLogSpline(context.Background(), p, nil, y, 4, nil, LogSplineOptions{KnotsAt: at})
	if err != nil || !slices.Equal(fit.Knots, at) {
		t.Fatalf("knots %v, error %v", fit, err)
	}
	for _, c := range []struct {
		knots []float64
		want  string
	}{
		{[]float64{-2, math.NaN()}, "knots[1] = NaN, want a finite number"},
		{[]float64{-2, -2}, "knots[1] = -2 is not above the knot before it"},
		{[]float64{-1, -2}, "knots[1] = -2 is not above the knot before it"},
		{make([]float64, 256), "256 knots, at most 255"},
	} {
		_, err := FitLogSpline(context.Background(), p, nil, y, 4, nil, LogSplineOptions{KnotsAt: c.knots})
		if !errors.Is(err, ErrInput) || !strings.Contains(fmt.Sprint(err), c.want) {
			t.Errorf("knots %v: error %v, want ErrInput with %q", c.knots, err, c.want)
		}
	}
}
