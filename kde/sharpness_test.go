package kde

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestSharpnessBruteForce compares Sharpness with eq. 7 written out with
// math.Exp on linear-scale kernels.
func TestSharpnessBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 21))
	for _, n := range []int{3, 40, 400} {
		probs, labels := randomSet(rng, n, 3, 1.5)
		for _, h := range []float64{0.02, 0.3} {
			res, err := Sharpness(TopLabel, probs, labels, 3, Options{Bandwidth: h})
			if err != nil {
				t.Fatal(err)
			}
			c, a := confidences(probs, labels, 3)
			sum, kept := 0.0, 0
			for j := 0; j < n; j++ {
				var s, s1, q, q1 float64
				for i := 0; i < n; i++ {
					if i == j {
						continue
					}
					w := math.Exp(bruteLogDirichlet([]float64{c[j], 1 - c[j]}, []float64{c[i], 1 - c[i]}, h))
					s += w
					q += w * w
					if a[i] == 1 {
						s1 += w
						q1 += w * w
					}
				}
				if den := s*s - q; den > 0 {
					sum += (s1*s1 - q1) / den
					kept++
				}
			}
			want := sum / float64(kept)
			if d := relDiff(res.Value, want); d > 1e-10 || res.N-res.Excluded != kept {
				t.Errorf("n=%d h=%v: %.17g (kept %d), brute force %.17g (kept %d)", n, h, res.Value, res.N-res.Excluded, want, kept)
			}
		}
	}
}

// TestSharpnessGroundTruth: for p ~ U(0, 1) and y ~ Bernoulli(p) (calibrated),
// E[E[y | p]^2] = E[p^2] = 1/3 and Var(E[y | p]) = 1/3 - 1/4 = 1/12.
func TestSharpnessGroundTruth(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 9))
	const n = 4000
	probs, labels := make([]float64, 2*n), make([]int, n)
	for j := 0; j < n; j++ {
		p := rng.Float64()
		probs[2*j], probs[2*j+1] = 1-p, p
		if rng.Float64() < p {
			labels[j] = 1
		}
	}
	res, err := Sharpness(Binary, probs, labels, 2, Options{Bandwidth: 0.05})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(res.Value-1.0/3) > 0.02 || math.Abs(res.Variance-1.0/12) > 0.02 {
		t.Errorf("sharpness %v (variance %v), want 1/3 (1/12) +- 0.02", res.Value, res.Variance)
	}
}
