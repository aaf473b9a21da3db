package recal

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/calib-dev/calib/metric"
)

// TestLinearMethodsReal fits vector scaling, matrix scaling (ODIR) and
// Dirichlet calibration (ODIR), lambda and mu by 3-fold cross-validation on
// the default grid, on the first 1,500 validation logits of
// cifar10_resnet110-brier (to keep the test short; the full validation set
// takes 20 to 40 s per method) and requires the test NLL to go down; the
// maps round-trip.
func TestLinearMethodsReal(t *testing.T) {
	if testing.Short() {
		t.Skip("cross-validated fits")
	}
	for _, name := range []string{"cifar10_resnet110-brier"} {
		val, test := loadSplit(t, logitDirs[name], "val"), loadSplit(t, logitDirs[name], "test")
		const nv = 1500
		val.N, val.Probs, val.Logits, val.Labels = nv, val.Probs[:nv*val.K], val.Logits[:nv*val.K], val.Labels[:nv]
		before := metric.NLL(test.Probs, test.Logits, test.Labels, test.K, nil)
		for _, m := range []string{MethodVector, MethodMatrix, MethodDirichlet} {
			start := time.Now()
			c, err := FitLinear(context.Background(), m, val.Probs, val.Logits, val.Labels, val.K, nil, LinearOptions{CV: true})
			if err != nil {
				t.Fatalf("%s %s: %v", name, m, err)
			}
			p, err := c.Calibrate(test.Probs, test.Logits, test.K)
			if err != nil {
				t.Fatal(err)
			}
			after := metric.NLL(p, nil, test.Labels, test.K, nil)
			t.Logf("%s %s (lambda %g, mu %g, %.1fs): test NLL %.5f -> %.5f", name, m, c.Lambda, c.Mu, time.Since(start).Seconds(), before, after)
			if !(after < before) {
				t.Errorf("%s %s: test NLL %v -> %v", name, m, before, after)
			}
			roundTrip(t, c, test.Probs, test.K)
		}
	}
}

// TestFitLinearContextCancel : a matrix-odir fit with
// cross-validation on 20,000 rows of K = 10 (147 L-BFGS fits, tens of
// seconds) whose context is cancelled after 50 ms returns within 1 s with
// an error wrapping context.Canceled; so does a fit without
// cross-validation given a context already cancelled.
func TestFitLinearContextCancel(t *testing.T) {
	const n, k = 20000, 10
	_, z, y := logitSet(n, k, 5)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	time.AfterFunc(50*time.Millisecond, cancel)
	c, err := FitLinear(ctx, MethodMatrix, nil, z, y, k, nil, LinearOptions{CV: true})
	if c != nil || !errors.Is(err, context.Canceled) {
		t.Errorf("map %v, error %v; want context.Canceled", c != nil, err)
	}
	c, err = FitLinear(ctx, MethodDirichlet, nil, z, y, k, nil, LinearOptions{Lambda: 0.01, Mu: 0.01})
	if c != nil || !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context, no CV: map %v, error %v", c != nil, err)
	}
}
