package kde

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"
	"time"
)

// TestContextCancelsSweeps: a cancelled Options.Context stops every O(n^2)
// entry point within a fraction of a second of the cancel (the uncancelled
// calls take seconds at this size), with an error wrapping
// context.Canceled; an uncancelled context changes nothing.
func TestContextCancelsSweeps(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 1))
	probs, labels := randomSet(rng, 12000, 10, 1)
	const h = 0.05
	calls := map[string]func(ctx context.Context) error{
		"Estimate": func(ctx context.Context) error {
			_, err := Estimate(Marginal, probs, labels, 10, nil, Options{Bandwidth: h, Context: ctx})
			return err
		},
		"SelectBandwidth": func(ctx context.Context) error {
			_, err := SelectBandwidth(Canonical, probs, labels, 10, nil, BandwidthOptions{Context: ctx})
			return err
		},
		"Witness": func(ctx context.Context) error {
			_, err := Witness(probs, labels, 10, nil, WitnessOptions{Context: ctx})
			return err
		},
		"Gradient": func(ctx context.Context) error {
			_, _, err := Gradient(nil, Marginal, probs, labels, 10, 1, nil, Options{Bandwidth: h, Context: ctx})
			return err
		},
		"Sharpness": func(ctx context.Context) error {
			_, err := Sharpness(TopLabel, probs, labels, 10, nil, Options{Bandwidth: h, Context: ctx})
			return err
		},
		"Regression": func(ctx context.Context) error {
			// 96,000 queries (the set eight times): about a second
			// uncancelled on the SIMD kernels.
			var queries []float64
			for range 8 {
				queries = append(queries, probs...)
			}
			_, _, _, err := Regression(queries, probs, labels, 10, nil, Options{Bandwidth: h, Context: ctx})
			return err
		},
	}
	for name, call := range calls {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- call(ctx) }()
		time.Sleep(50 * time.Millisecond)
		cancel()
		at := time.Now()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("%s: %v, want context.Canceled", name, err)
			}
			if d := time.Since(at); d > 500*time.Millisecond {
				t.Errorf("%s: returned %v after the cancel", name, d)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: still running 5 s after the cancel", name)
		}
	}
	// A live context gives the same value as none.
	small, sl := randomSet(rng, 300, 4, 1)
	a, err := Estimate(Canonical, small, sl, 4, nil, Options{Bandwidth: h})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Estimate(Canonical, small, sl, 4, nil, Options{Bandwidth: h, Context: context.Background()})
	if err != nil || a.Values[0] != b.Values[0] {
		t.Fatalf("with a context: %v, %v; without: %v", b, err, a.Values[0])
	}
}

// TestMaxP: exponents above MaxP are refused (they would underflow to a
// silent 0), MaxP itself is computed.
func TestMaxP(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 1))
	probs, labels := randomSet(rng, 200, 3, 1)
	if _, err := Estimate(Canonical, probs, labels, 3, nil, Options{Bandwidth: 0.05, P: []float64{MaxP + 1}}); err == nil {
		t.Error("p above MaxP accepted")
	}
	res, err := Estimate(Canonical, probs, labels, 3, nil, Options{Bandwidth: 0.05, P: []float64{MaxP}})
	if err != nil || !(res.Values[0].Root > 0) {
		t.Errorf("p = MaxP: %v, %v", res, err)
	}
}
