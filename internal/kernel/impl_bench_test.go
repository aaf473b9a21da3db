package kernel

import "testing"

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
