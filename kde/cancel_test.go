package kde

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
)

// TestContextCancelsSweeps: a context cancelled once the work has begun
// (from the Progress callback, at its first report) stops every O(n^2)
// entry point before it finishes: the call returns an error wrapping
// context.Canceled and the work it reported done is a small part of its
// total (no wall-clock bound: on a slow or busy machine a bound on seconds
// fails and proves nothing); a context cancelled before the call stops it
// at once; an uncancelled context changes nothing.
func TestContextCancelsSweeps(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 1))
	probs, labels := randomSet(rng, 12000, 10, 1)
	const h = 0.05
	calls := map[string]func(ctx context.Context, p Progress) error{
		"Estimate": func(ctx context.Context, p Progress) error {
			_, err := Estimate(ctx, ClassWise, probs, labels, 10, nil, Options{Bandwidth: h, Progress: p})
			return err
		},
		"SelectBandwidth": func(ctx context.Context, p Progress) error {
			_, err := SelectBandwidth(ctx, Canonical, probs, labels, 10, nil, BandwidthOptions{Progress: p})
			return err
		},
		"Witness": func(ctx context.Context, p Progress) error {
			_, err := Witness(ctx, probs, labels, 10, nil, WitnessOptions{Progress: p})
			return err
		},
		"Gradient": func(ctx context.Context, p Progress) error {
			_, _, err := Gradient(ctx, nil, ClassWise, probs, labels, 10, 1, nil, Options{Bandwidth: h, Progress: p})
			return err
		},
		"Sharpness": func(ctx context.Context, p Progress) error {
			_, err := Sharpness(ctx, TopLabel, probs, labels, 10, nil, Options{Bandwidth: h, Progress: p})
			return err
		},
		"Regression": func(ctx context.Context, p Progress) error {
			_, _, _, err := Regression(ctx, probs, probs, labels, 10, nil, Options{Bandwidth: h, Progress: p})
			return err
		},
	}
	for name, call := range calls {
		// Cancelled before the call: it returns the context's error.
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := call(ctx, nil); !errors.Is(err, context.Canceled) {
			t.Errorf("%s, cancelled before: %v, want context.Canceled", name, err)
		}
		// Cancelled at the first report of progress.
		ctx, cancel = context.WithCancel(context.Background())
		var mu sync.Mutex
		var done, total, reports int64
		err := call(ctx, func(d, tot int64) {
			mu.Lock()
			defer mu.Unlock()
			reports++
			done, total = max(done, d), max(total, tot)
			cancel()
		})
		cancel()
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s: %v, want context.Canceled", name, err)
		}
		if reports == 0 {
			t.Logf("%s: reports no progress (cancelled before it began instead)", name)
			continue
		}
		// Each worker finishes the block in hand: at most a few blocks
		// per worker of the whole.
		if !(total > 0 && done <= total/4) {
			t.Errorf("%s: %d of %d units of work done after the cancel, want at most a quarter", name, done, total)
		}
	}
	// A live context gives the same value as none.
	small, sl := randomSet(rng, 300, 4, 1)
	a, err := Estimate(context.Background(), Canonical, small, sl, 4, nil, Options{Bandwidth: h})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Estimate(context.Background(), Canonical, small, sl, 4, nil, Options{Bandwidth: h})
	if err != nil || a.Values[0] != b.Values[0] {
		t.Fatalf("with a context: %v, %v; without: %v", b, err, a.Values[0])
	}
}

// TestMaxP: exponents above MaxP are refused (they would underflow to a
// silent 0), MaxP itself is computed.
func TestMaxP(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 1))
	probs, labels := randomSet(rng, 200, 3, 1)
	if _, err := Estimate(context.Background(), Canonical, probs, labels, 3, nil, Options{Bandwidth: 0.05, P: []float64{MaxP + 1}}); err == nil {
		t.Error("p above MaxP accepted")
	}
	res, err := Estimate(context.Background(), Canonical, probs, labels, 3, nil, Options{Bandwidth: 0.05, P: []float64{MaxP}})
	if err != nil || !(res.Values[0].Root > 0) {
		t.Errorf("p = MaxP: %v, %v", res, err)
	}
}
