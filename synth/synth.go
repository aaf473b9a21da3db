// Package synth draws synthetic predictions whose calibration error is
// known, for checking estimators against ground truth (Popordanoska et al.,
// NeurIPS 2022, section 4 "Synthetic experiments").
//
// The setup of the paper: x is uniform on the (K-1)-simplex (Kraemer's
// algorithm: the gaps between K-1 sorted uniforms and the ends 0 and 1;
// Smith and Tromble 2004), the true class probabilities are
// p = softmax(log x / t1), labels are drawn from p, and the model reports
// f = softmax(log p / t2). A temperature map is invertible, so E[y | f] = p
// exactly and the canonical calibration error is
//
//	CE_q(f)^q = E ||p - f||_q^q,
//
// a plain expectation over x that GroundTruth computes by Monte Carlo with
// its standard error.
package synth

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/calib-dev/calib/internal/parallel"
)

// UniformSimplex fills dst (n×k, n = len(dst)/k) with points drawn
// uniformly from the (k-1)-simplex by Kraemer's algorithm and returns it:
// k-1 uniforms on [0, 1) sorted, with 0 and 1 added, and the k gaps between
// neighbours as the coordinates. A gap can be exactly 0 only when two
// uniforms coincide (probability about k^2 2^-53 per point).
func UniformSimplex(dst []float64, k int, rng *rand.Rand) []float64 {
	if k < 1 || len(dst)%k != 0 {
		panic(fmt.Sprintf("synth: UniformSimplex: %d values for K = %d", len(dst), k))
	}
	u := make([]float64, k+1)
	for i := 0; i < len(dst); i += k {
		u[0], u[k] = 0, 1
		for m := 1; m < k; m++ {
			u[m] = rng.Float64()
		}
		slices.Sort(u[1:k])
		for m := 0; m < k; m++ {
			dst[i+m] = u[m+1] - u[m]
		}
	}
	return dst
}

// Temperature writes softmax(log p / t) of each row of p (n×k) to dst (which
// may be p; nil allocates) and returns it: p_m^(1/t) / sum p^(1/t), computed
// in log space. Zero entries stay 0 (for t > 0).
func Temperature(dst, p []float64, k int, t float64) []float64 {
	if !(t > 0) || k < 1 || len(p)%k != 0 {
		panic(fmt.Sprintf("synth: Temperature: t = %v, %d values for K = %d", t, len(p), k))
	}
	if dst == nil {
		dst = make([]float64, len(p))
	}
	z := make([]float64, k)
	for i := 0; i < len(p); i += k {
		mx := math.Inf(-1)
		for m := 0; m < k; m++ {
			z[m] = math.Log(p[i+m]) / t
			mx = math.Max(mx, z[m])
		}
		s := 0.0
		for m := 0; m < k; m++ {
			z[m] = math.Exp(z[m] - mx)
			s += z[m]
		}
		for m := 0; m < k; m++ {
			dst[i+m] = z[m] / s
		}
	}
	return dst
}

// Labels draws one label per row of p (n×k) into dst (nil allocates) and
// returns it: the first m with u < p_0 + ... + p_m for u uniform on [0, 1)
// (the last class if rounding leaves u above the total).
func Labels(dst []int, p []float64, k int, rng *rand.Rand) []int {
	n := len(p) / k
	if dst == nil {
		dst = make([]int, n)
	}
	for i := 0; i < n; i++ {
		u, acc := rng.Float64(), 0.0
		dst[i] = k - 1
		for m, v := range p[i*k : (i+1)*k] {
			if acc += v; u < acc {
				dst[i] = m
				break
			}
		}
	}
	return dst
}

// Setup is the paper's synthetic experiment: K classes, the true
// probabilities p = softmax(log x / T1) of x uniform on the simplex, and the
// reported predictions f = softmax(log p / T2). T1 = T2 = 0.6 in the paper.
type Setup struct {
	K      int
	T1, T2 float64
}

// Paper is the setup of the paper's Fig. 2a for k classes.
func Paper(k int) Setup { return Setup{K: k, T1: 0.6, T2: 0.6} }

func (s Setup) check() {
	if s.K < 2 || !(s.T1 > 0) || !(s.T2 > 0) {
		panic(fmt.Sprintf("synth: invalid setup %+v", s))
	}
}

// Draw returns n predictions f (n×K), labels drawn from the true
// probabilities, and the true probabilities p = E[y | f] (n×K).
func (s Setup) Draw(n int, rng *rand.Rand) (f []float64, labels []int, p []float64) {
	s.check()
	p = Temperature(nil, UniformSimplex(make([]float64, n*s.K), s.K, rng), s.K, s.T1)
	f = Temperature(nil, p, s.K, s.T2)
	labels = Labels(nil, p, s.K, rng)
	return f, labels, p
}

// GroundTruth is a Monte Carlo value with its standard error.
type GroundTruth struct {
	Value, SE float64
	Samples   int
}

// String formats the value and its standard error.
func (g GroundTruth) String() string {
	return fmt.Sprintf("%.4f (SE %.1g, %d samples)", g.Value, g.SE, g.Samples)
}

// groundBlock is the number of samples of one Monte Carlo block; block b
// draws from PCG(seed, b), so the result does not depend on the number of
// workers.
const groundBlock = 1 << 16

// GroundTruth returns the canonical CE_q^q = E ||p - f||_q^q of the setup
// (q >= 1) by Monte Carlo over samples draws of x, streamed in blocks of
// 65,536 (block b from PCG(seed, b)) on all cores (workers 0) with the
// blocks' sums combined in order, and its standard error sd/sqrt(samples).
func (s Setup) GroundTruth(q float64, samples int, seed uint64, workers int) GroundTruth {
	g, _ := s.GroundTruthContext(context.Background(), q, samples, seed, workers)
	return g
}

// GroundTruthContext is GroundTruth that stops drawing blocks once ctx is
// done and then returns an error wrapping ctx.Err().
func (s Setup) GroundTruthContext(ctx context.Context, q float64, samples int, seed uint64, workers int) (GroundTruth, error) {
	s.check()
	if !(q >= 1) || samples < 2 {
		panic(fmt.Sprintf("synth: GroundTruth: q = %v, %d samples", q, samples))
	}
	return monteCarlo(ctx, samples, seed, workers, func(rng *rand.Rand, m int, out []float64) {
		k := s.K
		p := Temperature(nil, UniformSimplex(make([]float64, m*k), k, rng), k, s.T1)
		lqPowers(out, p, Temperature(nil, p, k, s.T2), k, q)
	})
}

// lqPowers writes ||h_i - f_i||_q^q of each row (h, f n×k) to out.
func lqPowers(out, h, f []float64, k int, q float64) {
	for i := range out {
		v := 0.0
		for c := 0; c < k; c++ {
			v += math.Pow(math.Abs(h[i*k+c]-f[i*k+c]), q)
		}
		out[i] = v
	}
}

// monteCarlo averages the values that draw writes (m per call, from the
// block's generator) over samples draws, in blocks combined in order, and
// returns the mean and its standard error (two-pass per block: each block's
// mean and sum of squared deviations, merged by Chan et al.'s formula).
func monteCarlo(ctx context.Context, samples int, seed uint64, workers int, draw func(rng *rand.Rand, m int, out []float64)) (GroundTruth, error) {
	nb := (samples + groundBlock - 1) / groundBlock
	means, m2s, counts := make([]float64, nb), make([]float64, nb), make([]int, nb)
	stopped := parallel.ForContext(ctx, nb, workers, func() []float64 { return make([]float64, groundBlock) }, func(out []float64, b int) {
		m := min(groundBlock, samples-b*groundBlock)
		rng := rand.New(rand.NewPCG(seed, uint64(b)))
		draw(rng, m, out[:m])
		mean := 0.0
		for _, v := range out[:m] {
			mean += v
		}
		mean /= float64(m)
		ss := 0.0
		for _, v := range out[:m] {
			ss += (v - mean) * (v - mean)
		}
		means[b], m2s[b], counts[b] = mean, ss, m
	})
	if stopped != nil {
		return GroundTruth{}, fmt.Errorf("synth: ground truth: %w", stopped)
	}
	mean, m2, n := 0.0, 0.0, 0
	for b := range means {
		nb := counts[b]
		d := means[b] - mean
		tot := n + nb
		mean += d * float64(nb) / float64(tot)
		m2 += m2s[b] + d*d*float64(n)*float64(nb)/float64(tot)
		n = tot
	}
	sd := math.Sqrt(m2 / float64(n-1))
	return GroundTruth{Value: mean, SE: sd / math.Sqrt(float64(n)), Samples: n}, nil
}
