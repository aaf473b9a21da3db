package metric

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
)

// TestBootstrapMean checks the interval of a sample mean against the normal
// approximation mean +- 1.96 sd/sqrt(n), its reproducibility and its
// independence of the number of workers.
func TestBootstrapMean(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	x := make([]float64, 2000)
	for i := range x {
		x[i] = rng.NormFloat64()
	}
	stat := func(idx []int) (float64, error) {
		s := 0.0
		for _, i := range idx {
			s += x[i]
		}
		return s / float64(len(idx)), nil
	}
	m, sd := weightedMean(x, nil), 0.0
	for _, v := range x {
		sd += (v - m) * (v - m)
	}
	sd = math.Sqrt(sd / float64(len(x)))
	half := 1.96 * sd / math.Sqrt(float64(len(x)))
	iv, err := Bootstrap(context.Background(), len(x), stat, BootstrapOptions{Resamples: 2000, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	near(t, "lo", iv.Lo, m-half, 0.15*half)
	near(t, "hi", iv.Hi, m+half, 0.15*half)
	for _, w := range []int{1, 3} {
		iv2, _ := Bootstrap(context.Background(), len(x), stat, BootstrapOptions{Resamples: 2000, Seed: 3, Workers: w})
		if iv2 != iv {
			t.Errorf("workers=%d: %+v, want %+v", w, iv2, iv)
		}
	}
	iv3, _ := Bootstrap(context.Background(), len(x), stat, BootstrapOptions{Resamples: 2000, Seed: 4})
	if iv3 == iv {
		t.Error("another seed gave the same interval")
	}
}
