package kde

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// TestRelabelEqualsEstimate checks Relabel against Estimate for every
// notion, with and without weights, three exponents and several label
// vectors (the observed ones, redrawn ones, and a constant one), on real
// rows including exact zeros (rounded probabilities): 1e-12 relative.
// Estimates must also be bit-identical for 1 and 3 workers.
func TestRelabelEqualsEstimate(t *testing.T) {
	probs, labels, k := realRows(t, 600)
	// Rounded copies have exact zeros and ties (the 0 log 0 convention
	// and excluded points).
	rounded := make([]float64, len(probs))
	for i, v := range probs {
		rounded[i] = math.Round(v*50) / 50
	}
	for j := 0; j < len(labels); j++ { // rows back in the simplex
		s := 0.0
		for _, v := range rounded[j*k : (j+1)*k] {
			s += v
		}
		for l := range rounded[j*k : (j+1)*k] {
			rounded[j*k+l] /= s
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	w := make([]float64, len(labels))
	for i := range w {
		w[i] = 0.2 + rng.Float64()
	}
	w[7] = 0
	ps := []float64{1, 2, 3}
	for _, tc := range []struct {
		name   string
		probs  []float64
		notion Notion
		h      float64
	}{
		{"canonical", probs, Canonical, 0.02},
		{"canonical rounded", rounded, Canonical, 0.05},
		{"top_label", probs, TopLabel, 0.01},
		{"top_label rounded", rounded, TopLabel, 0.05},
		{"marginal", probs, ClassWise, 0.01},
		{"binary", nil, Binary, 0.03},
	} {
		x, kk := tc.probs, k
		obs := labels
		if tc.notion == Binary {
			x, obs = binaryRows(probs, labels, k)
			kk = 2
		}
		n := len(obs)
		ys := [][]int{obs, make([]int, n), make([]int, n), make([]int, n)}
		for i := range ys[1] {
			ys[1][i] = rng.IntN(kk)
			ys[2][i] = obs[(i+1)%n]
			ys[3][i] = kk - 1
		}
		for _, wt := range [][]float64{nil, w} {
			opts := Options{Bandwidth: tc.h, P: ps, ClassMean: tc.notion == ClassWise}
			rl, err := NewRelabel(context.Background(), tc.notion, x, kk, wt, opts)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			got, err := rl.Estimates(ys)
			if err != nil {
				t.Fatal(err)
			}
			if rl.Weights() <= 0 {
				t.Fatalf("%s: %d weights applied", tc.name, rl.Weights())
			}
			opts.Workers = 1
			rl1, _ := NewRelabel(context.Background(), tc.notion, x, kk, wt, opts)
			got1, _ := rl1.Estimates(ys)
			opts.Workers = 3
			rl3, _ := NewRelabel(context.Background(), tc.notion, x, kk, wt, opts)
			got3, _ := rl3.Estimates(ys)
			for b, y := range ys {
				want, err := Estimate(context.Background(), tc.notion, x, y, kk, wt, Options{Bandwidth: tc.h, P: ps, ClassMean: tc.notion == ClassWise})
				if err != nil {
					t.Fatal(err)
				}
				for i, v := range want.Values {
					if d := math.Abs(got[b][i]-v.Value) / v.Value; !(d < 1e-12) {
						t.Errorf("%s weighted=%v vector %d p=%g: relabel %.17g, Estimate %.17g (rel %.2g)", tc.name, wt != nil, b, v.P, got[b][i], v.Value, d)
					}
					if got1[b][i] != got[b][i] || got3[b][i] != got[b][i] {
						t.Errorf("%s vector %d p=%g: workers change the value: %v %v %v", tc.name, b, v.P, got1[b][i], got[b][i], got3[b][i])
					}
				}
			}
		}
	}
}

// TestRelabelErrors checks the errors of NewRelabel and Estimates.
func TestRelabelErrors(t *testing.T) {
	probs, _, k := realRows(t, 50)
	if _, err := NewRelabel(context.Background(), Canonical, probs, k, nil, Options{}); err == nil {
		t.Error("no bandwidth: no error")
	}
	if _, err := NewRelabel(context.Background(), Binary, probs, k, nil, Options{Bandwidth: 0.1}); err == nil {
		t.Error("binary with K = 10: no error")
	}
	if _, err := NewRelabel(context.Background(), Canonical, probs, k, nil, Options{Bandwidth: 0.1, Debias: true}); err == nil {
		t.Error("Debias: no error")
	}
	rl, err := NewRelabel(context.Background(), Canonical, probs, k, nil, Options{Bandwidth: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rl.Estimates([][]int{make([]int, 49)}); err == nil {
		t.Error("short label vector: no error")
	}
	bad := make([]int, 50)
	bad[3] = k
	if _, err := rl.Estimates([][]int{bad}); err == nil {
		t.Error("label k: no error")
	}
	// A kernel so wide that every weight is applied: n(n-1).
	rl, err = NewRelabel(context.Background(), Canonical, probs, k, nil, Options{Bandwidth: 100})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rl.Estimates([][]int{make([]int, 50)}); err != nil || rl.Weights() != 50*49 {
		t.Errorf("wide kernel: %v, %d weights applied, want %d", err, rl.Weights(), 50*49)
	}
	// A cancelled context is an error.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rl, _ = NewRelabel(ctx, Canonical, probs, k, nil, Options{Bandwidth: 0.1})
	if _, err := rl.Estimates([][]int{make([]int, 50)}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: got %v", err)
	}
}

// A vector's estimate does not depend on the batch it is in nor on the
// chunking: three vectors at once, one chunk per vector, and each alone
// give the same bits (canonical and top-label).
func TestRelabelChunks(t *testing.T) {
	probs, labels, k := realRows(t, 300)
	rng := rand.New(rand.NewPCG(5, 6))
	ys := [][]int{labels, make([]int, 300), make([]int, 300)}
	for i := range ys[1] {
		ys[1][i], ys[2][i] = rng.IntN(k), rng.IntN(k)
	}
	for _, nt := range []Notion{Canonical, TopLabel} {
		rl, err := NewRelabel(context.Background(), nt, probs, k, nil, Options{Bandwidth: 0.02, P: []float64{1, 2}})
		if err != nil {
			t.Fatal(err)
		}
		all, err := rl.Estimates(ys)
		if err != nil {
			t.Fatal(err)
		}
		save := relabelAcc
		relabelAcc = 1 // one vector per chunk
		chunked, err := rl.Estimates(ys)
		relabelAcc = save
		if err != nil {
			t.Fatal(err)
		}
		for b, y := range ys {
			one, err := rl.Estimates([][]int{y})
			if err != nil {
				t.Fatal(err)
			}
			for i := range one[0] {
				if all[b][i] != one[0][i] || chunked[b][i] != one[0][i] {
					t.Errorf("%s vector %d p index %d: batch %v, chunked %v, alone %v", nt, b, i, all[b][i], chunked[b][i], one[0][i])
				}
			}
		}
	}
}
