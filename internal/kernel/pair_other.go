//go:build !amd64

package kernel

// pairTerms is pairTermsGeneric (see pair_amd64.go).
func pairTerms(acc, w, v []float64, s, pp, np float64) (float64, float64, float64) {
	return pairTermsGeneric(acc, w, v[:len(w)*len(acc)], s, pp, np)
}

// pairTermsOf returns the pairTerms loop of implementation im.
func pairTermsOf(im *implementation) func(acc, w, v []float64, s, pp, np float64) (float64, float64, float64) {
	return pairTermsGeneric
}
