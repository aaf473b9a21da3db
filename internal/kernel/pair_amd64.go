package kernel

// The pair-sum loop of PairWeightedSumExp (pairTermsGeneric) in assembly:
// pair_avx512_amd64.s and pair_avx2_amd64.s, with the generic loop's
// float64 operations in the same order (no fused multiply-add), so every
// path gives the same bits.

//go:noescape
func pairTermsAVX512(acc, w, v []float64, s, pp, np float64) (float64, float64, float64)

//go:noescape
func pairTermsAVX2(acc, w, v []float64, s, pp, np float64) (float64, float64, float64)
