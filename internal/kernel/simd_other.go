//go:build !amd64

package kernel

// simdImplementations returns no vector implementations on this
// architecture: the generic loops run.
func simdImplementations() []*implementation { return nil }

// expTerms, axpyRows and pairTerms are the generic loops (see
// simd_amd64.go).
func expTerms(dst, x []float64, shift, cut float64, lane *[lanes]float64) {
	expTermsGeneric(dst, x, shift, cut, lane)
}

func axpyRows(acc, w, v []float64) { axpyRowsGeneric(acc, w, v) }

func axpyRows4(acc, w *[4][]float64, v []float64, kp, n int) {
	axpyRows4Generic(acc, w, v, kp, n)
}

// logKernelRows4 does no rows: LogKernelRows runs LogKernelRow per row.
func logKernelRows4(dst, ls []float64, d int, fct []float64, stride int, c []float64, invh float64) int {
	return 0
}

func pairTerms(acc, w, v []float64, s, pp, np float64) (float64, float64, float64) {
	return pairTermsGeneric(acc, w, v[:len(w)*len(acc)], s, pp, np)
}
