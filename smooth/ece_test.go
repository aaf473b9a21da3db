package smooth_test

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/calib-dev/calib/internal/mathx"
	"github.com/calib-dev/calib/smooth"
)

func draw(n int, seed uint64, shift float64) (f, y []float64) {
	r := rand.New(rand.NewPCG(seed, 1))
	f, y = make([]float64, n), make([]float64, n)
	for i := range f {
		f[i] = r.Float64()
		if r.Float64() < min(max(f[i]+shift, 0), 1) {
			y[i] = 1
		}
	}
	return f, y
}

// TestConstantResidual checks a closed form: with y_i = f_i - c for
// every point, R(t) = -c D(t), so smECE_sigma = c sum D / sum (D + 1e-4),
// within c T 1e-4 / sum D of c (sum D is about n T).
func TestConstantResidual(t *testing.T) {
	const n, c = 20000, 0.1
	r := rand.New(rand.NewPCG(3, 4))
	f, y := make([]float64, n), make([]float64, n)
	for i := range f {
		f[i] = c + (1-c)*r.Float64()
		y[i] = f[i] - c
	}
	for _, sigma := range []float64{0.02, 0.1, 0.5} {
		got, err := smooth.ECE(context.Background(), f, y, nil, smooth.Options{Sigma: sigma})
		if err != nil {
			t.Fatal(err)
		}
		if d := c - got.Value; d < 0 || d > c*1e-4/float64(n)*4 {
			t.Errorf("sigma %g: smECE %.15g, want c = %g less at most %.2g", sigma, got.Value, c, c*1e-4/float64(n)*4)
		}
	}
	// y = f: zero residual, zero error at any sigma and at the fixed
	// point (the search ends at 2/1024: every sigma above 0 is above it).
	got, err := smooth.ECE(context.Background(), f, f, nil, smooth.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Value != 0 || got.Sigma != 2.0/1024 {
		t.Errorf("y = f: smECE %v at sigma %v, want 0 at 2/1024", got.Value, got.Sigma)
	}
}

// TestFixedPointBracket checks the bisection's invariant on the result:
// smECE(sigma*) <= sigma* and, one step of 1/1024 below, the sigma is
// below its smECE (or below eps), for both conventions.
func TestFixedPointBracket(t *testing.T) {
	for _, conv := range []smooth.Convention{smooth.Relplot, smooth.Relplot101} {
		for _, shift := range []float64{0, 0.05, -0.2, 0.4} {
			f, y := draw(3000, 7, shift)
			got, err := smooth.ECE(context.Background(), f, y, nil, smooth.Options{Convention: conv})
			if err != nil {
				t.Fatal(err)
			}
			if got.Value > got.Sigma {
				t.Errorf("%v shift %g: smECE %g above sigma* %g", conv, shift, got.Value, got.Sigma)
			}
			if k := got.Sigma * 1024; k != math.Trunc(k) || k < 2 || got.Evaluations > 12 {
				t.Errorf("%v shift %g: sigma* %g is not k/1024 with k >= 2, or %d evaluations", conv, shift, got.Sigma, got.Evaluations)
			}
			below := got.Sigma - 1.0/1024
			if below >= smooth.DefaultEps && conv == smooth.Relplot {
				v, err := smooth.ECE(context.Background(), f, y, nil, smooth.Options{Sigma: below})
				if err != nil {
					t.Fatal(err)
				}
				if !(below < v.Value) {
					t.Errorf("%v shift %g: at sigma %g the smECE %g is not above it", conv, shift, below, v.Value)
				}
			}
		}
	}
}

// TestWeights checks that integer weights count points as copies and
// that a weight of 0 removes a point.
func TestWeights(t *testing.T) {
	f, y := draw(500, 11, 0.1)
	w := make([]float64, len(f))
	var cf, cy, kf, ky []float64
	for i := range f {
		w[i] = float64(i % 3) // 0, 1 or 2 copies
		for range int(w[i]) {
			cf, cy = append(cf, f[i]), append(cy, y[i])
		}
		if w[i] > 0 {
			kf, ky = append(kf, f[i]), append(ky, y[i])
		}
	}
	for _, o := range []smooth.Options{{}, {Sigma: 0.05}, {Convention: smooth.Relplot101}} {
		gw, err := smooth.ECE(context.Background(), f, y, w, o)
		if err != nil {
			t.Fatal(err)
		}
		// Integer weights against copies: the same sums but for the
		// weights' scale (normalised to the 333 rows of positive weight
		// against 500 copies), which only moves the density floor's
		// share, under T 1e-4 / sum D.
		gc, err := smooth.ECE(context.Background(), cf, cy, nil, o)
		if err != nil {
			t.Fatal(err)
		}
		if d := math.Abs(gw.Value - gc.Value); d > 1e-4*gc.Value || gw.Sigma != gc.Sigma {
			t.Errorf("%+v: integer weights %+v, copies %+v", o, gw, gc)
		}
		// A common factor changes nothing.
		w7 := make([]float64, len(w))
		for i, v := range w {
			w7[i] = 7.3 * v
		}
		g7, err := smooth.ECE(context.Background(), f, y, w7, o)
		if err != nil {
			t.Fatal(err)
		}
		if d := math.Abs(g7.Value - gw.Value); d > 1e-14*gw.Value {
			t.Errorf("%+v: weights x 7.3 %+v, weights %+v", o, g7, gw)
		}
		// A weight of 0 removes the point: weights 0/1 against the kept rows.
		w01 := make([]float64, len(w))
		for i, v := range w {
			w01[i] = min(v, 1)
		}
		g01, err := smooth.ECE(context.Background(), f, y, w01, o)
		if err != nil {
			t.Fatal(err)
		}
		gk, err := smooth.ECE(context.Background(), kf, ky, nil, o)
		if err != nil {
			t.Fatal(err)
		}
		if g01 != gk {
			t.Errorf("%+v: zero weights %+v, rows removed %+v", o, g01, gk)
		}
	}
}

func TestErrors(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name string
		f, y []float64
		w    []float64
		o    smooth.Options
		want error
	}{
		{"empty", nil, nil, nil, smooth.Options{}, smooth.ErrInput},
		{"score above 1", []float64{0.5, 1.5}, []float64{0, 1}, nil, smooth.Options{}, smooth.ErrInput},
		{"NaN score", []float64{math.NaN()}, []float64{0}, nil, smooth.Options{}, smooth.ErrInput},
		{"outcome -1", []float64{0.5}, []float64{-1}, nil, smooth.Options{}, smooth.ErrInput},
		{"sigma 2", []float64{0.5}, []float64{1}, nil, smooth.Options{Sigma: 2}, smooth.ErrInput},
		{"sigma NaN", []float64{0.5}, []float64{1}, nil, smooth.Options{Sigma: math.NaN()}, smooth.ErrInput},
		{"sigma below MinSigma", []float64{0.5}, []float64{1}, nil, smooth.Options{Sigma: 1e-5}, smooth.ErrInput},
		{"zero weights", []float64{0.5}, []float64{1}, []float64{0}, smooth.Options{}, mathx.ErrWeights},
		{"negative weight", []float64{0.5}, []float64{1}, []float64{-1}, smooth.Options{}, mathx.ErrWeights},
	} {
		if _, err := smooth.ECE(ctx, c.f, c.y, c.w, c.o); !errors.Is(err, c.want) {
			t.Errorf("%s: error %v, want %v", c.name, err, c.want)
		}
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	f, y := draw(10, 1, 0)
	if _, err := smooth.ECE(cancelled, f, y, nil, smooth.Options{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// TestTorchUncertaintyProperties: the two numeric checks of
// torch-uncertainty's SmoothCalibrationError tests (tests/metrics/
// classification/test_calibration.py), which publish no relplot value:
// 100 confidences of 0.8, 80 of them right, give below 1e-4, and 100
// confidences of 1 all wrong give 1 within 1e-2 (here with relplot's
// reflected kernel; torch-uncertainty's default is a logit kernel).
func TestTorchUncertaintyProperties(t *testing.T) {
	f, right, wrong, ones := make([]float64, 100), make([]float64, 100), make([]float64, 100), make([]float64, 100)
	for i := range f {
		f[i], ones[i] = 0.8, 1
		if i < 80 { // 80 of the 100 right: the residuals cancel in every kernel sum
			right[i] = 1
		}
	}
	got, err := smooth.ECE(context.Background(), f, right, nil, smooth.Options{Sigma: 0.1})
	if err != nil || got.Value >= 1e-4 {
		t.Errorf("perfect calibration: %v, %v", got.Value, err)
	}
	got, err = smooth.ECE(context.Background(), ones, wrong, nil, smooth.Options{})
	if err != nil || math.Abs(got.Value-1) > 1e-2 {
		t.Errorf("total miscalibration: %v, %v", got.Value, err)
	}
}
