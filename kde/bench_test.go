package kde

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/calib-dev/calib/data"
)

// benchSet returns n predictions of K classes: the real CIFAR-10 ResNet-110
// test predictions (softmax of the embedded logits) for K = 10 and n <= 10,000,
// and otherwise synthetic ones of similar sharpness (softmax of N(0, 3^2)
// logits with the true class boosted by 6, labels drawn from a tempered
// version), generated from a fixed seed.
func benchSet(b *testing.B, n, k int) ([]float64, []int) {
	b.Helper()
	if k == 10 && n <= 10000 {
		s, err := demoSet("test")
		if err != nil {
			b.Fatal(err)
		}
		return s.Probs[:n*k], s.Labels[:n]
	}
	rng := rand.New(rand.NewPCG(uint64(n), uint64(k)))
	probs, labels := make([]float64, n*k), make([]int, n)
	z := make([]float64, k)
	for j := 0; j < n; j++ {
		y := rng.IntN(k)
		for m := range z {
			z[m] = 3 * rng.NormFloat64()
		}
		z[y] += 6
		data.Softmax(probs[j*k:(j+1)*k], z)
		labels[j] = y
		if rng.Float64() < 0.1 {
			labels[j] = rng.IntN(k)
		}
	}
	return probs, labels
}

// BenchmarkEstimate measures Estimate at a fixed bandwidth (h = 0.02) for
// each notion; ns/pair is the time per ordered pair (i, j), i != j (for
// marginal, per pair for all K classes together).
func BenchmarkEstimate(b *testing.B) {
	type size struct{ n, k int }
	var sizes []size
	for _, n := range []int{1000, 10000} {
		for _, k := range []int{3, 10, 100} {
			sizes = append(sizes, size{n, k})
		}
	}
	sizes = append(sizes, size{50000, 3}, size{50000, 10})
	for _, sz := range sizes {
		probs, labels := benchSet(b, sz.n, sz.k)
		for _, notion := range []Notion{Canonical, ClassWise, TopLabel} {
			b.Run(fmt.Sprintf("%s/n=%d/K=%d", notion, sz.n, sz.k), func(b *testing.B) {
				for b.Loop() {
					if _, err := Estimate(context.Background(), notion, probs, labels, sz.k, nil, Options{Bandwidth: 0.02, P: []float64{1, 2}}); err != nil {
						b.Fatal(err)
					}
				}
				pairs := float64(sz.n) * float64(sz.n-1)
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/pairs, "ns/pair")
			})
		}
	}
}

// BenchmarkEstimateWeighted measures what sample weights cost Estimate
// (log w_i folded into the normalisers, the outer means weighted):
// unweighted against weighted (e^Z, Z ~ N(0, 1), a tenth exactly 0) at
// n = 10,000, K = 10, h = 0.02.
func BenchmarkEstimateWeighted(b *testing.B) {
	probs, labels := benchSet(b, 10000, 10)
	rng := rand.New(rand.NewPCG(1, 1))
	w := make([]float64, len(labels))
	for i := range w {
		if w[i] = math.Exp(rng.NormFloat64()); rng.Float64() < 0.1 {
			w[i] = 0
		}
	}
	for _, weights := range [][]float64{nil, w} {
		for _, notion := range []Notion{Canonical, TopLabel} {
			b.Run(fmt.Sprintf("notion=%s/weighted=%v", notion, weights != nil), func(b *testing.B) {
				for b.Loop() {
					if _, err := Estimate(context.Background(), notion, probs, labels, 10, weights, Options{Bandwidth: 0.02, P: []float64{1, 2}}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkEstimateContext measures what a cancellable Options.Context
// costs the sweeps (one check of its Done channel per block of 8
// evaluation points): "none" against "cancellable" at n = 10,000, K = 10.
func BenchmarkEstimateContext(b *testing.B) {
	probs, labels := benchSet(b, 10000, 10)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, c := range []struct {
		name string
		ctx  context.Context
	}{{"none", nil}, {"cancellable", ctx}} {
		for _, notion := range []Notion{Canonical, TopLabel} {
			b.Run(fmt.Sprintf("notion=%s/ctx=%s", notion, c.name), func(b *testing.B) {
				for b.Loop() {
					if _, err := Estimate(c.ctx, notion, probs, labels, 10, nil, Options{Bandwidth: 0.02}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkEstimateNeighbours measures what Options.Neighbours (the
// squared kernel sums in the same sweep, for the effective-neighbours
// warning of calib eval) costs: n = 10,000, K = 10, h = 0.02.
func BenchmarkEstimateNeighbours(b *testing.B) {
	probs, labels := benchSet(b, 10000, 10)
	for _, on := range []bool{false, true} {
		for _, notion := range []Notion{Canonical, TopLabel} {
			b.Run(fmt.Sprintf("notion=%s/neighbours=%v", notion, on), func(b *testing.B) {
				for b.Loop() {
					if _, err := Estimate(context.Background(), notion, probs, labels, 10, nil, Options{Bandwidth: 0.02, P: []float64{1, 2}, Neighbours: on}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkSelectBandwidth measures the LOO bandwidth selection on the
// 20-point grid (and with the golden-section refinement) on the real
// CIFAR-10 predictions.
func BenchmarkSelectBandwidth(b *testing.B) {
	for _, n := range []int{1000, 5000} {
		probs, labels := benchSet(b, n, 10)
		for _, notion := range []Notion{Canonical, TopLabel, ClassWise} {
			for _, refine := range []bool{false, true} {
				name := "grid"
				if refine {
					name = "refined"
				}
				b.Run(fmt.Sprintf("%s/%s/n=%d/K=10", notion, name, n), func(b *testing.B) {
					for b.Loop() {
						if _, err := SelectBandwidth(context.Background(), notion, probs, labels, 10, nil, BandwidthOptions{NoRefine: !refine}); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	}
}

// BenchmarkGradient measures the exact gradient (three sweeps over the pairs).
func BenchmarkGradient(b *testing.B) {
	probs, labels := benchSet(b, 2000, 10)
	for _, notion := range []Notion{Canonical, ClassWise, TopLabel} {
		b.Run(fmt.Sprintf("%s/n=2000/K=10", notion), func(b *testing.B) {
			for b.Loop() {
				if _, _, err := Gradient(context.Background(), nil, notion, probs, labels, 10, 2, nil, Options{Bandwidth: 0.05}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkWitness measures Witness (both exponents: the WitnessGrid
// sweep, the cross-fitting and the p = 2 sweep at h_cv / 2) on the real
// CIFAR-10 predictions (K = 10) and on synthetic ones with K = 100;
// ns/pair/h is the time per ordered pair and grid bandwidth.
func BenchmarkWitness(b *testing.B) {
	for _, sz := range []struct{ n, k int }{{1000, 10}, {5000, 10}, {10000, 10}, {5000, 100}} {
		probs, labels := benchSet(b, sz.n, sz.k)
		b.Run(fmt.Sprintf("n=%d/K=%d", sz.n, sz.k), func(b *testing.B) {
			for b.Loop() {
				if _, err := Witness(context.Background(), probs, labels, sz.k, nil, WitnessOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			pairs := float64(sz.n) * float64(sz.n-1) * float64(len(WitnessGrid()))
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/pairs, "ns/pair/h")
		})
	}
}

// BenchmarkEstimateDirichlet measures canonical Estimate on predictions
// that are not sharp, so that tile skipping helps little: n = 10,000
// Dirichlet(0.3, ..., 0.3) rows, K = 10, labels drawn from the rows
// themselves, at h = 0.05 (the reference case) and 0.02.
func BenchmarkEstimateDirichlet(b *testing.B) {
	const n, k = 10000, 10
	rng := rand.New(rand.NewPCG(3, 10))
	g := distuv.Gamma{Alpha: 0.3, Beta: 1, Src: rand.NewPCG(3, 3)}
	probs, labels := make([]float64, n*k), make([]int, n)
	for j := 0; j < n; j++ {
		row, s := probs[j*k:(j+1)*k], 0.0
		for m := range row {
			row[m] = g.Rand()
			s += row[m]
		}
		u, acc := rng.Float64(), 0.0
		labels[j] = k - 1
		for m := range row {
			row[m] /= s
			if acc += row[m]; u < acc && labels[j] == k-1 {
				labels[j] = m
			}
		}
	}
	for _, h := range []float64{0.05, 0.02} {
		b.Run(fmt.Sprintf("h=%g/n=%d/K=%d", h, n, k), func(b *testing.B) {
			for b.Loop() {
				if _, err := Estimate(context.Background(), Canonical, probs, labels, k, nil, Options{Bandwidth: h, P: []float64{1}}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(n*(n-1)), "ns/pair")
		})
	}
}

// BenchmarkLine measures the one-dimensional notions in their default
// (the tree of series, line.go) and exact forms on the real CIFAR-10
// test predictions (n = 10,000): the LOO bandwidth (grid and refinement,
// as calib eval runs it) and the estimate at the chosen bandwidth.
func BenchmarkLine(b *testing.B) {
	probs, labels := benchSet(b, 10000, 10)
	for _, notion := range []Notion{TopLabel, ClassWise} {
		for _, exact := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/exact=%v/bandwidth", notion, exact), func(b *testing.B) {
				for b.Loop() {
					if _, err := SelectBandwidth(context.Background(), notion, probs, labels, 10, nil, BandwidthOptions{Exact: exact}); err != nil {
						b.Fatal(err)
					}
				}
			})
			cv, err := SelectBandwidth(context.Background(), notion, probs, labels, 10, nil, BandwidthOptions{})
			if err != nil {
				b.Fatal(err)
			}
			b.Run(fmt.Sprintf("%s/exact=%v/estimate", notion, exact), func(b *testing.B) {
				for b.Loop() {
					if _, err := Estimate(context.Background(), notion, probs, labels, 10, nil, Options{Bandwidth: cv.Bandwidth, P: []float64{1, 2}, Neighbours: true, Exact: exact}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
