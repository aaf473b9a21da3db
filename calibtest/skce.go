package calibtest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/calib-dev/calib/internal/parallel"
)

// SKCE tests canonical calibration with the squared kernel calibration
// error of Widmann, Lindsten and Zachariah (2019, "Calibration tests in
// multi-class classification: a unifying framework"; 2021, "Calibration
// tests beyond classification"). With the matrix-valued kernel k(p, p')
// I_K, k the Laplacian scalar kernel
//
//	k(p, p') = exp(-||p - p'||_2 / nu),
//
// the SKCE is E[(e_Y - P)^T k(P, P') (e_Y' - P')] over two independent
// pairs (P, Y), (P', Y'), e_y the one-hot vector of y: 0 exactly when the
// model is canonically calibrated (k is characteristic). Its terms are
//
//	h_ij = k(p_i, p_j) ([y_i = y_j] - p_{i, y_j} - p_{j, y_i} + <p_i, p_j>),
//
// the tensor kernel of the issue, k((p, y), (p', y')) = k(p, p') times
// <e_y - p, e_y' - p'>. The unbiased estimate is the U-statistic
//
//	SKCE_uq = (2 / (n (n - 1))) sum_{i < j} h_ij,
//
// and the block estimate cuts the rows (in a seeded random order) into
// n/B blocks of B rows and averages the blocks' U-statistics, SKCE_b; the
// blocks are independent, so (SKCE_b - 0) / (s_b / sqrt(n/B)) with s_b the
// sample standard deviation of the block values is asymptotically N(0, 1)
// under H0 as n/B grows (the block z-test, one-sided: the SKCE is >= 0
// under miscalibration). nu = 0 takes the median heuristic: the median of
// ||p_i - p_j|| over (at most 200,000 seeded) pairs of distinct rows.
type SKCEOptions struct {
	Width   float64 // nu; 0: the median heuristic
	Block   int     // rows per block of the block test; 0: 2
	Seed    uint64  // the order of the rows for the blocks, the pairs of the median
	Workers int     // goroutines of the U-statistic; 0: GOMAXPROCS (the value does not depend on it)
	// BlockOnly skips the O(n^2) U-statistic (Value is then NaN): the
	// block test alone costs O(n B).
	BlockOnly bool
}

// SKCEResult is the outcome of SKCE.
type SKCEResult struct {
	N, K  int
	Width float64 // nu
	// Value is SKCE_uq, the unbiased U-statistic over all pairs.
	Value float64
	// BlockValue, BlockZ and BlockP are the block estimate, its z and the
	// one-sided p-value Q(z) of the block test, Blocks blocks of Block rows.
	BlockValue, BlockZ, BlockP float64
	Blocks, Block              int
}

// SKCE computes the SKCE statistics of probs (n×k rows in the simplex) with
// labels in 0..k-1 (see SKCEOptions for the definitions).
func SKCE(probs []float64, labels []int, k int, o SKCEOptions) (*SKCEResult, error) {
	n := len(labels)
	switch {
	case k < 2 || len(probs) != n*k:
		return nil, fmt.Errorf("calibtest: SKCE: %d probabilities for %d labels and K = %d", len(probs), n, k)
	case n < 2:
		return nil, fmt.Errorf("%w: SKCE: fewer than 2 samples", ErrTooFew)
	case o.Block < 0 || o.Block == 1 || o.Block > n/2 && o.Block != 0:
		return nil, fmt.Errorf("calibtest: SKCE: blocks of %d rows for %d samples (want 2 to n/2)", o.Block, n)
	}
	nu, err := skceWidth("SKCE", probs, labels, k, o.Width, o.Seed)
	if err != nil {
		return nil, err
	}
	b := o.Block
	if b == 0 {
		b = 2
	}
	res := &SKCEResult{N: n, K: k, Width: nu, Block: b, Value: math.NaN()}
	if !o.BlockOnly {
		res.Value = uStatistic(probs, labels, n, k, nu, o.Workers)
	}
	// The block estimate over a seeded order.
	order := rand.New(rand.NewPCG(o.Seed, 0x5ce)).Perm(n)
	res.Blocks = n / b
	vals := make([]float64, res.Blocks)
	for q := range vals {
		blk := order[q*b : (q+1)*b]
		s := 0.0
		for x := 0; x < b; x++ {
			for y := x + 1; y < b; y++ {
				s += skceTerm(probs, labels, k, blk[x], blk[y], nu)
			}
		}
		vals[q] = 2 * s / float64(b*(b-1))
	}
	mean := 0.0
	for _, v := range vals {
		mean += v
	}
	mean /= float64(len(vals))
	res.BlockValue = mean
	res.BlockZ, res.BlockP = math.NaN(), math.NaN()
	if len(vals) >= 2 {
		ss := 0.0
		for _, v := range vals {
			ss += (v - mean) * (v - mean)
		}
		sd := math.Sqrt(ss / float64(len(vals)-1))
		if sd > 0 {
			res.BlockZ = mean / (sd / math.Sqrt(float64(len(vals))))
			res.BlockP = upper(res.BlockZ)
		}
	}
	return res, nil
}

// skceWidth checks the labels and the width of an SKCE computation named
// what and returns the width: the median heuristic (seeded) for 0.
func skceWidth(what string, probs []float64, labels []int, k int, width float64, seed uint64) (float64, error) {
	if !(width >= 0) || math.IsInf(width, 0) {
		return 0, fmt.Errorf("calibtest: %s: width %v", what, width)
	}
	for i, y := range labels {
		if y < 0 || y >= k {
			return 0, fmt.Errorf("calibtest: %s: label %d of sample %d outside 0..%d", what, y, i, k-1)
		}
	}
	if width > 0 {
		return width, nil
	}
	nu := medianDistance(probs, len(labels), k, seed)
	if !(nu > 0) {
		return 0, reasonError{ErrNoVariance, fmt.Sprintf("calibtest: %s: every prediction is the same (median distance 0), so the kernel has no width to take from the data", what)}
	}
	return nu, nil
}

// uStatistic returns SKCE_uq: the row sums of the upper triangle, summed
// in row order (the same bits for any number of workers).
func uStatistic(probs []float64, labels []int, n, k int, nu float64, workers int) float64 {
	rows := make([]float64, n)
	parallel.For(n, workers, func() struct{} { return struct{}{} }, func(_ struct{}, i int) {
		s := 0.0
		for j := i + 1; j < n; j++ {
			s += skceTerm(probs, labels, k, i, j, nu)
		}
		rows[i] = s
	})
	total := 0.0
	for _, s := range rows {
		total += s
	}
	return 2 * total / (float64(n) * float64(n-1))
}

// pairTerms returns ||p_i - p_j||^2 and <p_i, p_j>, summed over the
// classes in order: the label-independent parts of h_ij.
func pairTerms(pi, pj []float64) (d2, dot float64) {
	for l := range pi {
		d := pi[l] - pj[l]
		d2 += d * d
		dot += pi[l] * pj[l]
	}
	return d2, dot
}

// skceTerm returns h_ij (see SKCEOptions).
func skceTerm(probs []float64, labels []int, k, i, j int, nu float64) float64 {
	pi, pj := probs[i*k:(i+1)*k], probs[j*k:(j+1)*k]
	d2, dot := pairTerms(pi, pj)
	same := 0.0
	if labels[i] == labels[j] {
		same = 1
	}
	return math.Exp(-math.Sqrt(d2)/nu) * (same - pi[labels[j]] - pj[labels[i]] + dot)
}

// maxMedianPairs bounds the pairs of the median heuristic.
const maxMedianPairs = 200_000

// medianDistance returns the median of ||p_i - p_j|| over every pair of
// distinct rows, or over maxMedianPairs seeded random pairs when there are
// more.
func medianDistance(probs []float64, n, k int, seed uint64) float64 {
	dist := func(i, j int) float64 {
		d2, _ := pairTerms(probs[i*k:(i+1)*k], probs[j*k:(j+1)*k])
		return math.Sqrt(d2)
	}
	var d []float64
	if float64(n)*float64(n-1)/2 <= maxMedianPairs {
		for i := 0; i < n; i++ {
			for j := i + 1; j < n; j++ {
				d = append(d, dist(i, j))
			}
		}
	} else {
		rng := rand.New(rand.NewPCG(seed, 0x3ed))
		for len(d) < maxMedianPairs {
			i, j := rng.IntN(n), rng.IntN(n)
			if i != j {
				d = append(d, dist(i, j))
			}
		}
	}
	slices.Sort(d)
	m := len(d)
	if m%2 == 1 {
		return d[m/2]
	}
	return (d[m/2-1] + d[m/2]) / 2
}

// bootstrapStream is the first PCG stream of SKCEBootstrap's samples
// (sample b: bootstrapStream + b), apart from the streams of the median
// heuristic's pairs (0x3ed) and of the block order (0x5ce).
const bootstrapStream = 1 << 62

// MaxBootstrapSamples bounds n for SKCEBootstrap, which holds the n×n
// matrix of the terms h_ij (8 n^2 bytes: 128 MiB).
const MaxBootstrapSamples = 4096

// SKCEBootstrapOptions configures SKCEBootstrap. The zero value takes the
// median-heuristic width and DefaultResamples bootstrap samples with seed
// 0 on every core.
type SKCEBootstrapOptions struct {
	Width     float64 // nu; 0: the median heuristic (seed Seed)
	Resamples int     // bootstrap samples; 0: DefaultResamples
	Seed      uint64
	Workers   int // goroutines; 0: GOMAXPROCS. The p-value does not depend on it.
}

// SKCEBootstrapResult is the outcome of SKCEBootstrap.
type SKCEBootstrapResult struct {
	N, K  int
	Width float64
	// Value is SKCE_uq and Statistic the test statistic
	// n SKCE_uq / (n - 1) - SKCE_b.
	Value, Statistic float64
	// Exceed counts the bootstrap statistics T'_b >= Statistic, and P =
	// (1 + Exceed) / (1 + Resamples).
	Exceed, Resamples int
	P                 float64
}

// SKCEBootstrap is the asymptotic test of the full SKCE U-statistic
// (Widmann, Lindsten and Zachariah 2019, section 4; CalibrationTests.jl's
// AsymptoticSKCETest). Under H0 the U-statistic is degenerate and n
// SKCE_uq converges to a weighted sum of centred chi-squares, whose law the
// bootstrap of degenerate U-statistics (Arcones and Giné 1992) approximates:
// with H the n×n matrix of the terms h_ij of SKCEOptions (h_ii = ||e_yi -
// p_i||^2 on the diagonal), SKCE_b = (1/n^2) sum_{i,j} h_ij (the biased
// V-statistic) and the statistic S = n SKCE_uq / (n - 1) - SKCE_b, each
// bootstrap sample i*_1..i*_n (rows drawn with replacement by PCG(seed, 2^62 + b))
// gives
//
//	T'_b = (2 / (n (n - 1))) sum_{a < c} h_{i*_a i*_c} - (2 / n^2) sum_a sum_r h_{i*_a r},
//
// the centred bootstrap statistic, and p = (1 + #{T'_b >= S}) / (1 + B)
// (CalibrationTests.jl counts #{T'_b >= S} / B). It costs O(n^2 K) once and
// O(n^2) per bootstrap sample; n is at most MaxBootstrapSamples.
func SKCEBootstrap(probs []float64, labels []int, k int, o SKCEBootstrapOptions) (*SKCEBootstrapResult, error) {
	n := len(labels)
	switch {
	case k < 2 || len(probs) != n*k:
		return nil, fmt.Errorf("calibtest: SKCE bootstrap: %d probabilities for %d labels and K = %d", len(probs), n, k)
	case n < 2:
		return nil, fmt.Errorf("%w: SKCE bootstrap: fewer than 2 samples", ErrTooFew)
	case n > MaxBootstrapSamples:
		return nil, fmt.Errorf("calibtest: SKCE bootstrap: %d samples, at most %d (its n×n matrix); use the block test", n, MaxBootstrapSamples)
	}
	B, err := resampleCount(o.Resamples, "SKCE bootstrap")
	if err != nil {
		return nil, err
	}
	nu, err := skceWidth("SKCE bootstrap", probs, labels, k, o.Width, o.Seed)
	if err != nil {
		return nil, err
	}
	h := make([]float64, n*n)
	parallel.For(n, o.Workers, func() struct{} { return struct{}{} }, func(_ struct{}, i int) {
		for j := 0; j < n; j++ {
			if i != j {
				h[i*n+j] = skceTerm(probs, labels, k, i, j, nu)
				continue
			}
			s := 0.0
			for l, v := range probs[i*k : (i+1)*k] {
				if l == labels[i] {
					v -= 1
				}
				s += v * v
			}
			h[i*n+i] = s
		}
	})
	rowSum := make([]float64, n)
	upper, all := 0.0, 0.0
	for i := 0; i < n; i++ {
		for j, v := range h[i*n : (i+1)*n] {
			rowSum[i] += v
			if j > i {
				upper += v
			}
		}
		all += rowSum[i]
	}
	nf := float64(n)
	res := &SKCEBootstrapResult{N: n, K: k, Width: nu, Resamples: B}
	res.Value = 2 * upper / (nf * (nf - 1))
	res.Statistic = nf*res.Value/(nf-1) - all/(nf*nf)
	ts := make([]float64, B)
	parallel.For(B, o.Workers, func() []int { return make([]int, n) }, func(c []int, b int) {
		clear(c)
		rng := rand.New(rand.NewPCG(o.Seed, bootstrapStream+uint64(b)))
		for range n {
			c[rng.IntN(n)]++
		}
		// sum_{a < c} h = (c^T H c - sum_i c_i h_ii) / 2, over the drawn rows.
		quad, diag, rows := 0.0, 0.0, 0.0
		for i, ci := range c {
			if ci == 0 {
				continue
			}
			hi := h[i*n : (i+1)*n]
			s := 0.0
			for j, cj := range c {
				if cj != 0 {
					s += float64(cj) * hi[j]
				}
			}
			cf := float64(ci)
			quad += cf * s
			diag += cf * hi[i]
			rows += cf * rowSum[i]
		}
		ts[b] = (quad-diag)/(nf*(nf-1)) - 2*rows/(nf*nf)
	})
	for _, t := range ts {
		if t >= res.Statistic {
			res.Exceed++
		}
	}
	res.P = float64(1+res.Exceed) / float64(1+B)
	return res, nil
}
