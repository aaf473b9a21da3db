package calibtest

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// dirichletRows returns n rows of K probabilities drawn from Dirichlet(1)
// and labels drawn from the rows themselves (calibrated) or from the rows
// sharpened by temperature 1/2 (miscalibrated: the model is underconfident).
func dirichletRows(rng *rand.Rand, n, k int, calibrated bool) ([]float64, []int) {
	p, y := make([]float64, n*k), make([]int, n)
	q := make([]float64, k)
	for i := 0; i < n; i++ {
		s := 0.0
		for l := 0; l < k; l++ {
			p[i*k+l] = rng.ExpFloat64()
			s += p[i*k+l]
		}
		qs := 0.0
		for l := 0; l < k; l++ {
			p[i*k+l] /= s
			q[l] = p[i*k+l]
			if !calibrated {
				q[l] *= q[l]
			}
			qs += q[l]
		}
		u := rng.Float64() * qs
		y[i] = k - 1
		for l := 0; l < k; l++ {
			if u -= q[l]; u < 0 {
				y[i] = l
				break
			}
		}
	}
	return p, y
}

// The U-statistic against a brute-force double loop over the tensor
// kernel k(p, p') <e_y - p, e_y' - p'> with explicit one-hot vectors (1e-12),
// any worker count bit-identical; the block estimate averaged over 400
// seeded orders is the U-statistic within 4 standard errors; the median
// heuristic is the median of the pair distances.
func TestSKCEBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	n, k := 60, 4
	p, y := dirichletRows(rng, n, k, false)
	res, err := SKCE(p, y, k, SKCEOptions{Block: 4, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	var d []float64
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			s := 0.0
			for l := 0; l < k; l++ {
				x := p[i*k+l] - p[j*k+l]
				s += x * x
			}
			d = append(d, math.Sqrt(s))
		}
	}
	slices.Sort(d)
	nu := (d[len(d)/2-1] + d[len(d)/2]) / 2
	if res.Width != nu {
		t.Errorf("width %v, median %v", res.Width, nu)
	}
	sum := 0.0
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			if i == j {
				continue
			}
			kk, inner := 0.0, 0.0
			for l := 0; l < k; l++ {
				x := p[i*k+l] - p[j*k+l]
				kk += x * x
				ei, ej := -p[i*k+l], -p[j*k+l]
				if y[i] == l {
					ei++
				}
				if y[j] == l {
					ej++
				}
				inner += ei * ej
			}
			sum += math.Exp(-math.Sqrt(kk)/nu) * inner
		}
	}
	want := sum / float64(n*(n-1))
	if math.Abs(res.Value-want) > 1e-12*math.Max(1e-3, math.Abs(want)) {
		t.Errorf("SKCE %v, brute force %v", res.Value, want)
	}
	again, _ := SKCE(p, y, k, SKCEOptions{Block: 4, Workers: 3})
	if *again != *res {
		t.Errorf("3 workers: %+v, 1 worker %+v", *again, *res)
	}
	var vals []float64
	for s := uint64(0); s < 400; s++ {
		r, _ := SKCE(p, y, k, SKCEOptions{Block: 4, Width: nu, Seed: s})
		vals = append(vals, r.BlockValue)
	}
	m, v := 0.0, 0.0
	for _, x := range vals {
		m += x
	}
	m /= float64(len(vals))
	for _, x := range vals {
		v += (x - m) * (x - m)
	}
	se := math.Sqrt(v/float64(len(vals)-1)) / math.Sqrt(float64(len(vals)))
	if math.Abs(m-res.Value) > 4*se {
		t.Errorf("mean block estimate %v, U-statistic %v (SE %v)", m, res.Value, se)
	}
	for _, bad := range []SKCEOptions{{Block: 1}, {Block: n}, {Width: -1}} {
		if _, err := SKCE(p, y, k, bad); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
	if _, err := SKCE(p, append(y[:n-1:n-1], k), k, SKCEOptions{}); err == nil {
		t.Error("label K: no error")
	}
}

// The block z-test holds its level: 200 calibrated data sets (n = 2,000,
// K = 4, blocks of 2 and of 44) give p-values whose Kolmogorov-Smirnov distance to
// the uniform law is below the 1 % critical value; on the miscalibrated
// rows its p-value at n = 2,000 (blocks of 100) is below 0.01 and the
// U-statistic is positive.
func TestSKCEBlockTest(t *testing.T) {
	const sets, n, k = 200, 2000, 4
	for _, block := range []int{2, 44} { // 44: calib test's sqrt(n)
		var ps []float64
		for d := 0; d < sets; d++ {
			p, y := dirichletRows(rand.New(rand.NewPCG(uint64(d), 9)), n, k, true)
			r, err := SKCE(p, y, k, SKCEOptions{Width: 0.5, Block: block, Seed: uint64(d), BlockOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			ps = append(ps, r.BlockP)
		}
		if dist := uniformDistance(ps); dist > 1.63/math.Sqrt(sets) {
			t.Errorf("block test, blocks of %d: KS distance of %d null p-values %.3f > %.3f", block, sets, dist, 1.63/math.Sqrt(sets))
		}
	}
	p, y := dirichletRows(rand.New(rand.NewPCG(99, 9)), n, k, false)
	r, err := SKCE(p, y, k, SKCEOptions{Block: 100})
	if err != nil {
		t.Fatal(err)
	}
	if !(r.BlockP < 0.01 && r.Value > 0) {
		t.Errorf("miscalibrated: SKCE %v, block p %v", r.Value, r.BlockP)
	}
}

// TestSKCEBlockSaysSeed: the block test's method says that its p-value
// depends on the seed (its blocks follow a seeded row order; the p-value
// ranged from 0.0075 to 0.83 over seeds 0 to 7 on one set).
func TestSKCEBlockSaysSeed(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	n, k := 200, 3
	p, y := make([]float64, n*k), make([]int, n)
	for i := range n {
		a, b := rng.Float64(), rng.Float64()
		lo, hi := min(a, b), max(a, b)
		p[i*k], p[i*k+1], p[i*k+2] = lo, hi-lo, 1-hi
		y[i] = rng.IntN(k)
	}
	r, err := Run(context.Background(), p, y, k, nil, Options{Tests: []string{"skce"}})
	if err != nil {
		t.Fatal(err)
	}
	if m := r.Tests[0].Method; !strings.Contains(m, "seeded row order (its p-value moves with the seed)") {
		t.Errorf("method %q", m)
	}
}
