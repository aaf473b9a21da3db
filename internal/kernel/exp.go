// Package kernel holds the hot inner loops of the O(n^2) kernel estimators:
// a fast exponential for non-positive arguments, shifted exponential sums and
// log-kernel tiles. Each loop is one small function so that a SIMD version can
// replace it without touching the estimators.
package kernel

import "math"

// expTableBits is log2 of the size of the 2^(j/N) table used by Exp.
const expTableBits = 3

const (
	expN = 1 << expTableBits
	// ExpMin is the argument below which Exp returns exactly 0. e^ExpMin is
	// about 1e-307; flushing smaller terms changes a sum that holds a term
	// of 1 (the shifted maximum) by less than n * 1e-307.
	ExpMin = -707.0

	invLn2N = expN / math.Ln2
	// ln2/N split into a high part with 32 significant bits (so k*ln2NHi
	// is exact for |k| < 2^21) and the rest: fdlibm's split of ln 2
	// divided by N.
	ln2NHi = 6.93147180369123816490e-01 / expN
	ln2NLo = 1.90821492927058770002e-10 / expN
	// roundMagic rounds a float64 of magnitude < 2^51 to an integer when
	// added and subtracted.
	roundMagic = 0x1.8p52
)

// exp2Table[j] = 2^(j/N), correctly rounded.
var exp2Table = func() (t [expN]float64) {
	for j := range t {
		t[j] = math.Exp2(float64(j) / expN)
	}
	return t
}()

// Exp returns e^x for x <= 0 with a relative error below 2 ulp (checked
// against math.Exp in the tests); it returns 0 for x < ExpMin and for
// x = -Inf. For x > 0 the result is unspecified; NaN gives NaN or 0.
//
// The method: x = (k + j/N) ln 2 + r with N = 8 and |r| <= ln2/16, then
// e^x = 2^k * 2^(j/N) * e^r with 2^(j/N) from a table and e^r by its
// degree-8 Taylor polynomial (truncation error below 2e-18). The table is
// small enough for one vector register, so that the SIMD code looks it up
// with a permutation instead of a gather.
func Exp(x float64) float64 {
	var y [1]float64
	expInto(y[:], []float64{x}, 0)
	return y[0]
}
