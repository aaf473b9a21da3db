package kernel

import (
	"fmt"
	"testing"
)

// benchInput256 returns 256 log-kernel-like values, none of them in a
// group below the cut (so every exponential is computed).
func benchInput256() []float64 {
	x := make([]float64, 256)
	for i := range x {
		x[i] = -float64(i%50) * 0.37
	}
	return x
}

// BenchmarkImplSumExp256 times sumExp on 256 elements with every
// implementation this CPU has (generic, avx2, avx512), reporting ns per
// element.
func BenchmarkImplSumExp256(b *testing.B) {
	x := benchInput256()
	for _, im := range implementations {
		b.Run(im.name, func(b *testing.B) {
			for b.Loop() {
				im.sumExp(x, 0, Negligible)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(x)), "ns/elem")
		})
	}
}

// BenchmarkImplSumExpSq256 is BenchmarkImplSumExp256 for sumExpSq.
func BenchmarkImplSumExpSq256(b *testing.B) {
	x := benchInput256()
	for _, im := range implementations {
		b.Run(im.name, func(b *testing.B) {
			for b.Loop() {
				im.sumExpSq(x, 0, Negligible)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(x)), "ns/elem")
		})
	}
}

// BenchmarkImplExpTerms256 is BenchmarkImplSumExp256 for expTerms.
func BenchmarkImplExpTerms256(b *testing.B) {
	x := benchInput256()
	dst := make([]float64, len(x))
	for _, im := range implementations {
		b.Run(im.name, func(b *testing.B) {
			var acc [lanes]float64
			for b.Loop() {
				im.expTerms(dst, x, 0, Negligible, &acc)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(x)), "ns/elem")
		})
	}
}

// BenchmarkAxpyRows times the witness's K-vector sums on 256 rows of
// residuals (in cache) with the path in use: "one" is four axpyRows (one
// accumulator at a time, as WeightedSumExp), "four" is axpyRows4 (each row
// loaded once for four accumulators, as WeightedSumExp4), for K = 10
// (padded to 12 for four) and 100; ns/madd is per useful multiply-add (K
// per row and accumulator).
func BenchmarkAxpyRows(b *testing.B) {
	const n = 256
	for _, k := range []int{10, 100} {
		kp := (k + 3) &^ 3
		v := make([]float64, n*kp)
		for i := range v {
			v[i] = float64(i%7) - 3
		}
		var acc, w [4][]float64
		for g := range acc {
			acc[g] = make([]float64, kp)
			w[g] = make([]float64, n)
			for i := range w[g] {
				w[g][i] = 1e-3 * float64(i%13+1)
			}
		}
		madds := float64(4 * n * k)
		b.Run(fmt.Sprintf("K=%d/one", k), func(b *testing.B) {
			for b.Loop() {
				for g := range acc {
					axpyRows(acc[g][:k], w[g], v[:n*k])
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/madds, "ns/madd")
		})
		b.Run(fmt.Sprintf("K=%d/four", k), func(b *testing.B) {
			for b.Loop() {
				axpyRows4(&acc, &w, v, kp, n)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/madds, "ns/madd")
		})
	}
}
