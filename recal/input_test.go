package recal

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// notDistribution returns the first row of out (n×k) that is not a
// probability vector: an entry outside [0, 1], or a sum more than tol
// from 1; -1 when every row is one. sum is that row's sum.
func notDistribution(out []float64, k int, tol float64) (row int, sum float64) {
	for i := 0; i < len(out)/k; i++ {
		sum = 0
		for _, v := range out[i*k : (i+1)*k] {
			if !(v >= 0 && v <= 1) {
				return i, math.NaN()
			}
			sum += v
		}
		if !(math.Abs(sum-1) <= tol) {
			return i, sum
		}
	}
	return -1, 0
}

// logitSet returns n rows of k logits N(0, 1.5^2) plus 1.5 on the label
// (uniform), their softmax and the labels, every tenth label redrawn.
func logitSet(n, k int, seed uint64) (probs, logits []float64, labels []int) {
	rng := rand.New(rand.NewPCG(seed, 9))
	probs, logits, labels = make([]float64, n*k), make([]float64, n*k), make([]int, n)
	for i := range labels {
		labels[i] = rng.IntN(k)
		z := logits[i*k : (i+1)*k]
		for c := range z {
			z[c] = 1.5 * rng.NormFloat64()
		}
		z[labels[i]] += 1.5
		m := slices.Max(z)
		sum := 0.0
		for c, v := range z {
			probs[i*k+c] = math.Exp(v - m)
			sum += probs[i*k+c]
		}
		for c := range z {
			probs[i*k+c] /= sum
		}
		if i%10 == 0 {
			labels[i] = rng.IntN(k)
		}
	}
	return probs, logits, labels
}

// fitAll fits one map of every method on n rows of K = 3 (the linear maps
// at fixed lambda and mu).
func fitAll(t testing.TB, n int) []Calibrator {
	t.Helper()
	const k = 3
	p, z, y := logitSet(n, k, 1)
	var cs []Calibrator
	add := func(c Calibrator, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		cs = append(cs, c)
	}
	add(FitTemperature(z, y, k, nil))
	add(FitSpline(p, y, k, nil, SplineOptions{}))
	add(FitIsotonic(p, y, k, "", nil))
	add(FitIsotonic(p, y, k, ModeOneVsRest, nil))
	add(FitHistogram(p, y, k, 5, "", nil))
	add(FitPlatt(p, y, k, "", nil))
	add(FitBeta(p, y, k, "", nil))
	add(FitLogSpline(context.Background(), p, z, y, k, nil, LogSplineOptions{}))
	for _, m := range []string{MethodVector, MethodMatrix, MethodDirichlet} {
		add(FitLinear(context.Background(), m, p, z, y, k, nil, LinearOptions{Lambda: 0.01, Mu: 0.01}))
	}
	return cs
}

// TestCalibrateRejectsBadInput : every map's Calibrate
// returns an error wrapping ErrInput that names the row and column (1-based)
// for a NaN, a negative probability, one above 1, a row summing to 0.9, a
// NaN or infinite logit where the map reads logits, lengths that do not
// make rows, logits of another length and another K, and returns no output.
// Good rows (sums within K * SumTolerance of 1) map to finite rows summing
// to 1 (1e-12).
func TestCalibrateRejectsBadInput(t *testing.T) {
	const k = 3
	good, goodZ, _ := logitSet(4, k, 2)
	with := func(v []float64, i int, x float64) []float64 {
		v = slices.Clone(v)
		v[i] = x
		return v
	}
	// A row of the tolerated sum, renormalised copies aside.
	tolerated := slices.Clone(good)
	for c := 0; c < k; c++ {
		tolerated[3*k+c] *= 1 + 0.9*k*SumTolerance
	}
	type bad struct {
		name          string
		probs, logits []float64
		k             int
		want          string // in the message
	}
	for _, c := range fitAll(t, 300) {
		h := c.Info()
		cases := []bad{
			{"NaN probability", with(good, 1*k+2, math.NaN()), nil, k, "row 2, column 3: probability NaN"},
			{"negative probability", with(good, 2*k, -0.25), nil, k, "row 3, column 1: probability -0.25"},
			{"probability above 1", with(good, 0, 1.5), nil, k, "row 1, column 1: probability 1.5"},
			{"row sum", []float64{0.3, 0.3, 0.3}, nil, k, "row 1: the probabilities sum to 0.8999"},
			{"ragged probabilities", good[:5], nil, k, "5 probabilities do not make rows of K = 3"},
			{"logits length", good, goodZ[:9], k, "9 logits for 4 rows of K = 3"},
			{"another K", good[:8], nil, 4, "the map is for K = 3, the input has K = 4"},
			{"NaN logit, no probabilities", nil, with(goodZ, 1*k+1, math.NaN()), k, "row 2, column 2: logit NaN"},
			{"infinite logit, no probabilities", nil, with(goodZ, 3*k, math.Inf(1)), k, "row 4, column 1: logit +Inf"},
		}
		if h.Input == InputLogits {
			cases = append(cases, bad{"NaN logit with probabilities", good, with(goodZ, 2, math.NaN()), k, "row 1, column 3: logit NaN"})
		}
		for _, b := range cases {
			out, err := c.Calibrate(b.probs, b.logits, b.k)
			if !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), b.want) || out != nil {
				t.Errorf("%s %s: output %v, error %v; want nil and an ErrInput containing %q", h.Method, b.name, out, err, b.want)
			}
		}
		for _, in := range [][2][]float64{{good, nil}, {nil, goodZ}, {good, goodZ}, {tolerated, nil}} {
			out, err := c.Calibrate(in[0], in[1], k)
			if err != nil || len(out) != 4*k {
				t.Fatalf("%s: good input: %d outputs, error %v", h.Method, len(out), err)
			}
			if i, sum := notDistribution(out, k, 1e-12); i >= 0 {
				t.Errorf("%s: output row %d sums to %v: %v", h.Method, i+1, sum, out[i*k:(i+1)*k])
			}
		}
	}
	// A logits map given probabilities reads log p; log 0 against weights
	// of both signs would give NaN: an error instead.
	m := &Linear{Header: Header{SchemaVersion: SchemaVersion, Method: MethodMatrix, Input: InputLogits, K: 2}, W: []float64{1, -1, -1, 1}, B: []float64{0, 0}}
	if out, err := m.Calibrate([]float64{0.5, 0.5, 0, 1}, nil, 2); !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), "row 2") || out != nil {
		t.Errorf("matrix map on a probability 0: output %v, error %v", out, err)
	}
}

// TestFitBadInputIsErrInput : the input problems of every
// Fit function wrap ErrInput, and those of too little data also ErrTooFew;
// FitSplineCurve reports mismatched lengths as an error, not a panic.
func TestFitBadInputIsErrInput(t *testing.T) {
	const k = 3
	p, z, y := logitSet(60, k, 3)
	nanP := slices.Clone(p)
	nanP[7] = math.NaN()
	badY := slices.Clone(y)
	badY[4] = k
	oneClass := make([]int, len(y))
	// Scores from a row whose top class is always right: one outcome.
	allRight := make([]int, len(y))
	for i := range allRight {
		allRight[i] = slices.Index(p[i*k:(i+1)*k], slices.Max(p[i*k:(i+1)*k]))
	}
	p2, z2, _ := logitSet(60, 2, 4)
	spline := func(p []float64, y []int, k int) error {
		_, err := FitSpline(p, y, k, nil, SplineOptions{})
		return err
	}
	iso := func(p []float64, y []int, k int) error { _, err := FitIsotonic(p, y, k, "", nil); return err }
	hist := func(p []float64, y []int, k int) error { _, err := FitHistogram(p, y, k, 0, "", nil); return err }
	platt := func(p []float64, y []int, k int) error { _, err := FitPlatt(p, y, k, "", nil); return err }
	beta := func(p []float64, y []int, k int) error { _, err := FitBeta(p, y, k, "", nil); return err }
	temp := func(z []float64, y []int, k int) error { _, err := FitTemperature(z, y, k, nil); return err }
	linear := func(m string, o LinearOptions) func(p []float64, y []int, k int) error {
		return func(p []float64, y []int, k int) error {
			_, err := FitLinear(context.Background(), m, p, nil, y, k, nil, o)
			return err
		}
	}
	dir := linear(MethodDirichlet, LinearOptions{})
	cases := []struct {
		name    string
		err     error
		tooFew  bool
		message string
	}{
		{"spline NaN", spline(nanP, y, k), false, "row 3, column 2: probability NaN"},
		{"spline label", spline(p, badY, k), false, "row 5: label 3, want 0..2"},
		{"spline lengths", spline(p, y[:10], k), false, "60 rows of predictions and 10 labels"},
		{"spline K = 1", spline(p, y, 1), false, "K = 1"},
		{"spline 2 rows", spline(p[:2*k], y[:2], k), true, "2 samples, need at least 3"},
		{"isotonic 1 row", iso(p[:k], y[:1], k), true, "1 samples, need at least 2"},
		{"isotonic mode", func() error { _, err := FitIsotonic(p, y, k, "nope", nil); return err }(), false, `unknown mode "nope"`},
		{"isotonic binary K = 3", func() error { _, err := FitIsotonic(p, y, k, ModeBinary, nil); return err }(), false, "mode binary needs K = 2"},
		{"histogram NaN", hist(nanP, y, k), false, "probability NaN"},
		{"histogram 10 rows", hist(p[:10*k], y[:10], k), true, "10 samples for 15 bins"},
		{"histogram bins", func() error { _, err := FitHistogram(p, y, k, -1, "", nil); return err }(), false, "-1 bins"},
		{"histogram one_vs_rest", func() error { _, err := FitHistogram(p, y, k, 0, ModeOneVsRest, nil); return err }(), false, "is for isotonic"},
		{"platt all right", platt(p, allRight, k), true, "every prediction is right"},
		{"platt binary one class", func() error { _, err := FitPlatt(p2, make([]int, 60), 2, ModeBinary, nil); return err }(), true, "every outcome is 0"},
		{"platt 0 rows", platt(nil, nil, k), true, "no samples"},
		{"beta all right", beta(p, allRight, k), true, "every outcome is 1"},
		{"beta mode", func() error { _, err := FitBeta(p, y, k, ModeOneVsRest, nil); return err }(), false, "is for isotonic"},
		{"temperature NaN", temp(func() []float64 { v := slices.Clone(z); v[5] = math.NaN(); return v }(), y, k), false, "row 2, column 3: logit NaN"},
		{"temperature label", temp(z, badY, k), false, "label 3"},
		{"temperature 0 rows", temp(nil, nil, k), true, "no samples"},
		{"temperature degenerate", temp(slices.Repeat([]float64{0, 0, 0}, 60), y, k), false, "degenerate"},
		{"dirichlet 1 row", dir(p[:k], y[:1], k), true, "1 samples, need at least 2"},
		{"dirichlet one class", dir(p, oneClass, k), true, "every label is 0, need at least 2 classes"},
		{"dirichlet NaN", dir(nanP, y, k), false, "probability NaN"},
		{"dirichlet negative mu", linear(MethodDirichlet, LinearOptions{Mu: -1})(p, y, k), false, "mu = -1"},
		{"dirichlet grid", linear(MethodDirichlet, LinearOptions{CV: true, Grid: "nope"})(p, y, k), false, `grid "nope"`},
		{"dirichlet CV 4 rows", linear(MethodDirichlet, LinearOptions{CV: true})(p[:4*k], []int{0, 1, 0, 1}, k), true, "fold 3 of 3 has 0 of the 4 samples"},
		{"matrix no logits", func() error {
			_, err := FitLinear(context.Background(), MethodMatrix, nil, nil, y, k, nil, LinearOptions{})
			return err
		}(), false, "no predictions for 60 labels"},
		{"matrix infinite logit", func() error {
			v := slices.Clone(z2)
			v[3] = math.Inf(-1)
			_, err := FitLinear(context.Background(), MethodMatrix, p2, v, y, 2, nil, LinearOptions{})
			return err
		}(), false, "row 2, column 2: logit -Inf"},
		{"linear method", func() error {
			_, err := FitLinear(context.Background(), "nope", p, z, y, k, nil, LinearOptions{})
			return err
		}(), false, `unknown linear method "nope"`},
		{"spline curve lengths", func() error {
			_, err := FitSplineCurve([]float64{0.1, 0.2, 0.3}, []float64{1, 0}, nil, SplineOptions{})
			return err
		}(), false, "3 scores and 2 outcomes"},
		{"spline curve NaN", func() error {
			_, err := FitSplineCurve([]float64{0.1, math.NaN(), 0.3}, []float64{1, 0, 1}, nil, SplineOptions{})
			return err
		}(), false, "score 2 is NaN"},
		{"spline curve knots", func() error {
			_, err := FitSplineCurve([]float64{0.1, 0.2, 0.3}, []float64{1, 0, 1}, nil, SplineOptions{Knots: 1})
			return err
		}(), false, "1 knots, need at least 2"},
		{"constrained spline score", func() error {
			_, err := FitSplineCurve([]float64{0.1, 0.2, 1.3, 0.5}, []float64{1, 0, 1, 1}, nil, SplineOptions{Constrained: true})
			return err
		}(), false, "score 1.3 outside [0, 1]"},
	}
	for _, c := range cases {
		if !errors.Is(c.err, ErrInput) || errors.Is(c.err, ErrTooFew) != c.tooFew || !strings.Contains(c.err.Error(), c.message) {
			t.Errorf("%s: error %v; want ErrInput (ErrTooFew %v) containing %q", c.name, c.err, c.tooFew, c.message)
		}
	}
	// ErrTooFew, ErrSchema, ErrMap and ErrSeparable are kinds of ErrInput.
	for _, e := range []error{ErrTooFew, ErrSchema, ErrMap, ErrSeparable} {
		if !errors.Is(e, ErrInput) || errors.Is(ErrInput, e) {
			t.Errorf("%v should wrap ErrInput", e)
		}
	}
}
