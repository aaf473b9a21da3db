package kde

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestNeighboursBruteForce: Result.Neighbours is the median over points of
// (sum_{i != j} k_ij)^2 / sum_{i != j} k_ij^2, computed here directly from
// bruteLogDirichlet, and asking for it leaves the estimate bit-identical.
func TestNeighboursBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 1))
	for _, c := range []struct {
		n, k int
		h    float64
	}{{150, 3, 0.05}, {120, 5, 0.3}, {200, 4, 0.005}} {
		probs, labels := randomSet(rng, c.n, c.k, 1)
		plain, err := Estimate(context.Background(), Canonical, probs, labels, c.k, nil, Options{Bandwidth: c.h, P: []float64{1, 2}})
		if err != nil {
			t.Fatal(err)
		}
		res, err := Estimate(context.Background(), Canonical, probs, labels, c.k, nil, Options{Bandwidth: c.h, P: []float64{1, 2}, Neighbours: true})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(plain.Values, res.Values) {
			t.Errorf("n=%d: values %v with Neighbours, %v without", c.n, res.Values, plain.Values)
		}
		ess := make([]float64, c.n)
		for j := range ess {
			lk := make([]float64, 0, c.n-1)
			mx := math.Inf(-1)
			for i := 0; i < c.n; i++ {
				if i != j {
					v := bruteLogDirichlet(probs[j*c.k:(j+1)*c.k], probs[i*c.k:(i+1)*c.k], c.h)
					lk = append(lk, v)
					mx = math.Max(mx, v)
				}
			}
			s, q := 0.0, 0.0
			for _, v := range lk {
				s += math.Exp(v - mx)
				q += math.Exp(2 * (v - mx))
			}
			ess[j] = s * s / q
		}
		slices.Sort(ess)
		want := ess[c.n/2]
		if math.Abs(res.Neighbours-want) > 1e-9*want {
			t.Errorf("n=%d K=%d h=%v: Neighbours %v, brute force %v", c.n, c.k, c.h, res.Neighbours, want)
		}
		if !(res.Neighbours >= 1 && res.Neighbours <= float64(c.n-1)) {
			t.Errorf("Neighbours %v outside [1, n-1]", res.Neighbours)
		}
	}
	// A wide kernel averages nearly everything; a narrow one few points.
	probs, labels := randomSet(rng, 300, 3, 1)
	wide, _ := Estimate(context.Background(), Canonical, probs, labels, 3, nil, Options{Bandwidth: 50, Neighbours: true})
	narrow, _ := Estimate(context.Background(), Canonical, probs, labels, 3, nil, Options{Bandwidth: 0.001, Neighbours: true})
	if !(wide.Neighbours > 0.9*299 && narrow.Neighbours < 10) {
		t.Errorf("h = 50: %v neighbours, h = 0.001: %v", wide.Neighbours, narrow.Neighbours)
	}
}
