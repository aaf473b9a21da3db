// Package kernel holds the hot inner loops of the O(n^2) kernel estimators:
// a fast exponential for non-positive arguments, shifted exponential sums,
// log-kernel rows and tiles (a register-blocked micro-kernel), weighted row
// sums and the witness's pair sums. Each loop has a pure-Go version
// (generic.go) and, on amd64, AVX-512 and AVX2 versions in Go assembly,
// chosen when the process starts (dispatch.go, EnvVar); all give the same
// bits.
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

// Exp returns e^x for x <= 0 with an error below 1.5 ulp (checked against
// e^x computed to 200 bits, and within 2 ulp of math.Exp over [ExpMin, 0]);
// it returns 0 for x < ExpMin, for x = -Inf and for NaN. Small x > 0 are
// accurate too; large ones are unspecified.
//
// The method: x = (k + j/N) ln 2 + r with N = 8 and |r| <= ln2/16, then
// e^x = 2^k * 2^(j/N) * e^r with 2^(j/N) from a table and e^r by its
// degree-8 Taylor polynomial (truncation error below 2e-18). The table is
// small enough for one vector register, so that the SIMD code looks it up
// with a permutation instead of a gather.
func Exp(x float64) float64 {
	// The operations of expInto, one element (TestExpScalar checks the bits).
	t := math.FMA(x, invLn2N, roundMagic)
	kf := t - roundMagic
	r := math.FMA(kf, -ln2NHi, x)
	r = math.FMA(kf, -ln2NLo, r)
	p := math.FMA(r, 1.0/40320, 1.0/5040)
	p = math.FMA(p, r, 1.0/720)
	p = math.FMA(p, r, 1.0/120)
	p = math.FMA(p, r, 1.0/24)
	p = math.FMA(p, r, 1.0/6)
	p = math.FMA(p, r, 1.0/2)
	p = math.FMA(p, r, 1)
	tb := exp2Table[math.Float64bits(t)&(expN-1)]
	y := math.FMA(tb, p*r, tb)
	y = math.Float64frombits(math.Float64bits(y) + math.Float64bits(t)>>expTableBits<<52)
	if !(x >= ExpMin) {
		return 0
	}
	return y
}
