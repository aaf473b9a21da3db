package kernel

// The pair-sum loop of PairWeightedSumExp (pairTermsGeneric) in assembly:
// pair_avx512_amd64.s and pair_avx2_amd64.s, with the generic loop's
// float64 operations in the same order (no fused multiply-add), so every
// path gives the same bits.

//go:noescape
func pairTermsAVX512(acc, w, v []float64, s, pp, np float64) (float64, float64, float64)

//go:noescape
func pairTermsAVX2(acc, w, v []float64, s, pp, np float64) (float64, float64, float64)

// pairTerms runs the active implementation's pair-sum loop (see
// pairTermsGeneric), called directly rather than through a function value
// for the reason given at expTerms. v must hold len(w) rows of len(acc).
func pairTerms(acc, w, v []float64, s, pp, np float64) (float64, float64, float64) {
	v = v[:len(w)*len(acc)]
	switch active {
	case &avx512:
		return pairTermsAVX512(acc, w, v, s, pp, np)
	case &avx2:
		return pairTermsAVX2(acc, w, v, s, pp, np)
	default:
		return pairTermsGeneric(acc, w, v, s, pp, np)
	}
}

// pairTermsOf returns the pair-sum loop of implementation im (for the
// tests and benchmarks, which compare the implementations).
func pairTermsOf(im *implementation) func(acc, w, v []float64, s, pp, np float64) (float64, float64, float64) {
	switch im {
	case &avx512:
		return pairTermsAVX512
	case &avx2:
		return pairTermsAVX2
	default:
		return pairTermsGeneric
	}
}
