package kernel

import "math"

// lanes is the number of partial sums of every sum over terms: term i goes
// to lane i mod lanes, as in one AVX-512 register (or two AVX2 registers).
const lanes = 8

// reduceLanes adds the lanes pairwise as the vector code does: lane j with
// lane j+4, then j with j+2, then the two that are left.
func reduceLanes(a *[lanes]float64) float64 {
	return ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7]))
}

// generic is the pure-Go implementation, the fallback on every CPU and the
// reference the vector paths are tested against bit for bit. Products
// that are added are written float64(x*y): the explicit conversion keeps
// the compiler from fusing them into a multiply-add (which it may do on
// arm64, or on amd64 with GOAMD64=v3), so the generic bits are the same
// on every architecture and build.
var generic = implementation{
	name:         "generic",
	sumExp:       sumExpGeneric,
	sumExpSq:     sumExpSqGeneric,
	expTerms:     expTermsGeneric,
	affineMax:    affineMaxGeneric,
	max:          maxGeneric,
	logKernelRow: logKernelRowGeneric,
	axpyRows:     axpyRowsGeneric,
	pairTerms:    pairTermsGeneric,
}

func sumExpGeneric(x []float64, shift, cut float64) float64 {
	var acc [lanes]float64
	var e [sumExpGroup]float64
	for g := 0; g < len(x); g += sumExpGroup {
		grp := x[g:min(g+sumExpGroup, len(x))]
		if allBelow(grp, cut) {
			continue
		}
		expInto(e[:len(grp)], grp, shift)
		for i, v := range e[:len(grp)] {
			acc[i&(lanes-1)] += v
		}
	}
	return reduceLanes(&acc)
}

func sumExpSqGeneric(x []float64, shift, cut float64) (float64, float64) {
	var acc, acc2 [lanes]float64
	var e [sumExpGroup]float64
	for g := 0; g < len(x); g += sumExpGroup {
		grp := x[g:min(g+sumExpGroup, len(x))]
		if allBelow(grp, cut) {
			continue
		}
		expInto(e[:len(grp)], grp, shift)
		for i, v := range e[:len(grp)] {
			acc[i&(lanes-1)] += v
			acc2[i&(lanes-1)] += float64(v * v) // float64(): never fused into a multiply-add
		}
	}
	return reduceLanes(&acc), reduceLanes(&acc2)
}

func expTermsGeneric(dst, x []float64, shift, cut float64, acc *[lanes]float64) {
	dst = dst[:len(x)]
	expInto(dst, x, shift)
	for i, xi := range x {
		if !(xi >= cut) {
			dst[i] = 0
		}
		acc[i&(lanes-1)] += dst[i]
	}
}

// expInto sets dst[i] = Exp(x[i] - shift), 0 below ExpMin and for NaN. It
// is the one definition of the exponential's operations, which every
// implementation performs exactly (fused multiply-adds included: math.FMA,
// one rounding), so that all give the same bits.
func expInto(dst, x []float64, shift float64) {
	dst = dst[:len(x)]
	for i, v := range x {
		v -= shift
		t := math.FMA(v, invLn2N, roundMagic)
		kf := t - roundMagic
		r := math.FMA(kf, -ln2NHi, v)
		r = math.FMA(kf, -ln2NLo, r)
		p := math.FMA(r, 1.0/40320, 1.0/5040)
		p = math.FMA(p, r, 1.0/720)
		p = math.FMA(p, r, 1.0/120)
		p = math.FMA(p, r, 1.0/24)
		p = math.FMA(p, r, 1.0/6)
		p = math.FMA(p, r, 1.0/2)
		p = math.FMA(p, r, 1)
		q := p * r
		tb := exp2Table[math.Float64bits(t)&(expN-1)]
		y := math.FMA(tb, q, tb)
		y = math.Float64frombits(math.Float64bits(y) + math.Float64bits(t)>>expTableBits<<52)
		if !(v >= ExpMin) {
			y = 0
		}
		dst[i] = y
	}
}

// allBelow reports whether every element of x is below cut (NaN counts as
// not below).
func allBelow(x []float64, cut float64) bool {
	for _, v := range x {
		if !(v < cut) {
			return false
		}
	}
	return true
}

func affineMaxGeneric(dst, x, c []float64, scale float64) float64 {
	x, c = x[:len(dst)], c[:len(dst)]
	m := math.Inf(-1)
	for i := range dst {
		v := float64(x[i]*scale) - c[i]
		dst[i] = v
		if v > m {
			m = v
		}
	}
	return m
}

func maxGeneric(x []float64) float64 {
	m0, m1 := math.Inf(-1), math.Inf(-1)
	i := 0
	for ; i+2 <= len(x); i += 2 {
		if x[i] > m0 {
			m0 = x[i]
		}
		if x[i+1] > m1 {
			m1 = x[i+1]
		}
	}
	if i < len(x) && x[i] > m0 {
		m0 = x[i]
	}
	return max(m0, m1)
}

func logKernelRowGeneric(dst, l, fct []float64, stride int, c []float64, invh float64) {
	nb := len(dst)
	c = c[:nb]
	clear(dst)
	for m, v := range l {
		f := fct[m*stride : m*stride+nb]
		for b := range dst {
			dst[b] += float64(f[b] * v)
		}
	}
	for b := range dst {
		dst[b] = float64(dst[b]*invh) - c[b]
	}
}

func axpyRowsGeneric(acc, w, v []float64) {
	k := len(acc)
	v = v[:len(w)*k]
	for i, wi := range w {
		if wi == 0 {
			continue
		}
		vi := v[i*k : (i+1)*k]
		for l := range acc {
			acc[l] += float64(wi * vi[l])
		}
	}
}

// axpyRows4Generic is axpyRows4 on the generic path: axpyRowsGeneric for
// each of the four accumulators.
func axpyRows4Generic(acc, w *[4][]float64, v []float64, kp, n int) {
	for g := range acc {
		axpyRowsGeneric(acc[g][:kp], w[g][:n], v[:n*kp])
	}
}
