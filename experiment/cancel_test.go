package experiment

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestExperimentsStopOnCancel: a cancelled Context stops the experiments
// within a second with an error wrapping context.Canceled.
func TestExperimentsStopOnCancel(t *testing.T) {
	runs := map[string]func(ctx context.Context) error{
		"convergence": func(ctx context.Context) error {
			_, err := Convergence(ctx, ConvergenceOptions{Quick: true, Seed: 1})
			return err
		},
		"sharpness": func(ctx context.Context) error {
			_, err := Sharpness(ctx, SharpnessOptions{Quick: true, Seed: 1})
			return err
		},
		// The full sizes start with Monte Carlo ground truths of 10^7 and
		// 10^8 samples: those stop too.
		"convergence full": func(ctx context.Context) error {
			_, err := Convergence(ctx, ConvergenceOptions{Seed: 1})
			return err
		},
		"sharpness full": func(ctx context.Context) error {
			_, err := Sharpness(ctx, SharpnessOptions{Seed: 1})
			return err
		},
	}
	for name, f := range runs {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- f(ctx) }()
		time.Sleep(100 * time.Millisecond)
		cancel()
		// Uncancelled, each run takes minutes (the full sizes far more):
		// that it returns the context's error at all is what stopped it
		// (no bound on seconds, which a slow machine would break).
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("%s: %v, want context.Canceled", name, err)
		}
	}
}
