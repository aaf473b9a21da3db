package recal

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/calib-dev/calib/data"
)

// registrySet is a small miscalibrated set with logits.
func registrySet(t *testing.T, n, k int, binary bool) *data.Set {
	t.Helper()
	rng := rand.New(rand.NewPCG(17, 3))
	cols := k
	if binary {
		cols = 1
	}
	z := make([]float64, n*cols)
	y := make([]int, n)
	for i := range y {
		for c := 0; c < cols; c++ {
			z[i*cols+c] = 2 * rng.NormFloat64()
		}
		y[i] = rng.IntN(k)
		if binary && rng.Float64() < 1/(1+math.Exp(-z[i]/2)) { // informative: an optimal T exists
			y[i] = 1
		} else if binary {
			y[i] = 0
		}
	}
	s, err := data.New(z, cols, y, true, data.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestRegistry: every method parses from its name (also through
// flag.TextVar), Fit gives the map the method's own Fit* gives, Apply
// gives what Calibrate gives, and bad names and missing logits are ErrInput.
func TestRegistry(t *testing.T) {
	s := registrySet(t, 300, 3, false)
	for _, m := range methodList {
		var got Method
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		fs.TextVar(&got, "method", Method(""), "")
		if err := fs.Parse([]string{"-method", string(m)}); err != nil || got != m {
			t.Errorf("%s: flag.TextVar gives %q, %v", m, got, err)
		}
		c, err := Fit(context.Background(), m, s, FitOptions{Linear: LinearOptions{Seed: 1}})
		if err != nil {
			t.Fatalf("%s: %v", m, err)
		}
		if c.Info().Method != string(m) {
			t.Errorf("%s: fitted a %s map", m, c.Info().Method)
		}
		var direct Calibrator
		switch m {
		case MethodSpline:
			direct, err = FitSpline(s.Probs, s.Labels, s.K, nil, SplineOptions{})
		case MethodTemperature:
			direct, err = FitTemperature(s.Logits, s.Labels, s.K, nil)
		case MethodVector, MethodMatrix, MethodDirichlet:
			direct, err = FitLinear(context.Background(), string(m), s.Probs, s.Logits, s.Labels, s.K, nil, LinearOptions{CV: true, Seed: 1})
		case MethodLogSpline:
			direct, err = FitLogSpline(context.Background(), s.Probs, s.Logits, s.Labels, s.K, nil, LogSplineOptions{})
		case MethodIsotonic:
			direct, err = FitIsotonic(s.Probs, s.Labels, s.K, "", nil)
		case MethodHistogram:
			direct, err = FitHistogram(s.Probs, s.Labels, s.K, 0, "", nil)
		case MethodPlatt:
			direct, err = FitPlatt(s.Probs, s.Labels, s.K, "", nil)
		case MethodBeta:
			direct, err = FitBeta(s.Probs, s.Labels, s.K, "", nil)
		case MethodBoost:
			direct, err = FitBoost(context.Background(), s.Probs, s.Logits, s.Labels, s.K, nil, BoostOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
		var a, b bytes.Buffer
		Save(&a, c)
		Save(&b, direct)
		if !bytes.Equal(a.Bytes(), b.Bytes()) {
			t.Errorf("%s: Fit and the direct fit differ", m)
		}
		out, err := Apply(c, s)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := c.Calibrate(s.Probs, s.Logits, s.K)
		if !slices.Equal(out.Probs, want) || out.Logits != nil || out.N != s.N {
			t.Errorf("%s: Apply differs from Calibrate", m)
		}
	}
	if _, err := ParseMethod("nope"); !errors.Is(err, ErrInput) {
		t.Errorf("ParseMethod(nope): %v", err)
	}
	probsOnly, _ := data.New(s.Probs, s.K, s.Labels, false, data.Options{})
	for _, m := range []Method{MethodTemperature, MethodVector, MethodMatrix} {
		if _, err := Fit(context.Background(), m, probsOnly, FitOptions{}); !errors.Is(err, ErrInput) || !m.NeedsLogits() {
			t.Errorf("%s without logits: %v", m, err)
		}
	}
	// One-column binary logits count as (0, z).
	b := registrySet(t, 200, 2, true)
	c, err := Fit(context.Background(), MethodTemperature, b, FitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	z := TwoColumnLogits(b)
	if len(z) != 400 || z[0] != 0 || z[1] != b.Logits[0] {
		t.Errorf("two-column logits %v", z[:4])
	}
	out, err := Apply(c, b)
	if err != nil || out.K != 2 || out.Binary || math.Abs(out.Probs[0]+out.Probs[1]-1) > 1e-12 {
		t.Errorf("binary apply: %v, %v", out, err)
	}
}
