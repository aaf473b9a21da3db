package kernel

import "golang.org/x/sys/cpu"

// The vector implementations, in Go assembly: avx512_amd64.s (AVX-512F and
// DQ, 8 lanes in one register) and avx2_amd64.s (AVX2 and FMA, 8 lanes in
// two registers). They fuse a multiply and an add exactly where the generic
// code calls math.FMA (the exponential, expInto) and nowhere else, so that
// they give the generic code's bits.

// simdImplementations returns the vector implementations this CPU (and its
// operating system, which must save the vector registers) can run, best
// first.
func simdImplementations() []*implementation {
	var out []*implementation
	if cpu.X86.HasAVX512F && cpu.X86.HasAVX512DQ { // FMA is part of AVX-512F
		out = append(out, &avx512)
	}
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		out = append(out, &avx2)
	}
	return out
}

// expConst holds the exponential's constants for the assembly, in this
// order (each broadcast to every lane there).
//
//lint:ignore U1000 read by avx512_amd64.s
var expConst = [...]float64{invLn2N, roundMagic, ln2NHi, ln2NLo, 1.0 / 40320, 1.0 / 5040, 1.0 / 720, 1.0 / 120, 1.0 / 24, 1.0 / 6, 1.0 / 2, 1, ExpMin}

var avx512 = implementation{
	name:         "avx512",
	sumExp:       sumExpAVX512,
	sumExpSq:     sumExpSqAVX512,
	expTerms:     expTermsAVX512,
	affineMax:    affineMaxAVX512,
	max:          maxAVX512,
	logKernelRow: logKernelRowAVX512,
	axpyRows:     axpyRowsAVX512,
	pairTerms:    pairTermsAVX512,
}

//go:noescape
func sumExpAVX512(x []float64, shift, cut float64) float64

//go:noescape
func sumExpSqAVX512(x []float64, shift, cut float64) (s, sq float64)

//go:noescape
func expTermsAVX512(dst, x []float64, shift, cut float64, lanes *[lanes]float64)

//go:noescape
func affineMaxAVX512(dst, x, c []float64, scale float64) float64

//go:noescape
func maxAVX512(x []float64) float64

//go:noescape
func logKernelRowAVX512(dst, l, fct []float64, stride int, c []float64, invh float64)

//go:noescape
func axpyRowsAVX512(acc, w, v []float64)

// expConst4 is expConst with each constant repeated in four lanes, for the
// AVX2 code's memory operands (row i at byte offset 32*i; AVX2 has no
// broadcast memory operands).
//
//lint:ignore U1000 read by avx2_amd64.s
var expConst4 = func() (c [len(expConst)][4]float64) {
	for i, v := range expConst {
		c[i] = [4]float64{v, v, v, v}
	}
	return c
}()

var avx2 = implementation{
	name:         "avx2",
	sumExp:       sumExpAVX2,
	sumExpSq:     sumExpSqAVX2,
	expTerms:     expTermsAVX2,
	affineMax:    affineMaxAVX2,
	max:          maxAVX2,
	logKernelRow: logKernelRowAVX2,
	axpyRows:     axpyRowsAVX2,
	pairTerms:    pairTermsAVX2,
}

//go:noescape
func sumExpAVX2(x []float64, shift, cut float64) float64

//go:noescape
func sumExpSqAVX2(x []float64, shift, cut float64) (s, sq float64)

//go:noescape
func expTermsAVX2(dst, x []float64, shift, cut float64, lanes *[lanes]float64)

//go:noescape
func affineMaxAVX2(dst, x, c []float64, scale float64) float64

//go:noescape
func maxAVX2(x []float64) float64

//go:noescape
func logKernelRowAVX2(dst, l, fct []float64, stride int, c []float64, invh float64)

//go:noescape
func axpyRowsAVX2(acc, w, v []float64)

// expTerms, axpyRows and pairTerms call the active implementation directly
// rather than through its function value: arguments passed to a function
// value escape to the heap, and the scratch arrays of WeightedSumExp and
// PairWeightedSumExp must stay on the stack.
func expTerms(dst, x []float64, shift, cut float64, lane *[lanes]float64) {
	switch active {
	case &avx512:
		expTermsAVX512(dst, x, shift, cut, lane)
	case &avx2:
		expTermsAVX2(dst, x, shift, cut, lane)
	default:
		expTermsGeneric(dst, x, shift, cut, lane)
	}
}

//go:noescape
func axpyRows4AVX2(accs, ws *[4]*float64, v *float64, kp, n int)

// axpyRows4 is axpyRows for four accumulators and weight rows over the same
// rows v (stride kp, a multiple of 4; n rows): the AVX2 kernel on the avx2
// and avx512 paths (it gives axpyRows's bits: see axpyRows4AVX2), four
// axpyRows on the generic one.
func axpyRows4(acc, w *[4][]float64, v []float64, kp, n int) {
	if n == 0 || kp == 0 {
		return
	}
	if active == &generic {
		axpyRows4Generic(acc, w, v, kp, n)
		return
	}
	var ap, wp [4]*float64
	for g := range acc {
		ap[g], wp[g] = &acc[g][:kp][0], &w[g][:n][0]
	}
	_ = v[n*kp-1]
	axpyRows4AVX2(&ap, &wp, &v[0], kp, n)
}

func axpyRows(acc, w, v []float64) {
	switch active {
	case &avx512:
		axpyRowsAVX512(acc, w, v)
	case &avx2:
		axpyRowsAVX2(acc, w, v)
	default:
		axpyRowsGeneric(acc, w, v)
	}
}

// logKernelRows4 computes the rows of LogKernelRows in groups of four with
// the AVX-512 or AVX2 micro-kernel and returns how many rows it did (a
// multiple of 4; 0 on the generic path). The AVX2 kernel does blocks of 8
// centres; the last len(c) mod 8 of each row are LogKernelRow's.
func logKernelRows4(dst, ls []float64, d int, fct []float64, stride int, c []float64, invh float64) int {
	nb, na := len(c), len(ls)/d
	g := na / 4 * 4
	switch active {
	case &avx512:
		for a := 0; a < g; a += 4 {
			logKernelRows4AVX512(dst[a*nb:(a+4)*nb], ls[a*d:(a+4)*d], d, fct, stride, c, invh)
		}
	case &avx2:
		nb8 := nb / 8 * 8
		for a := 0; a < g; a += 4 {
			if nb8 > 0 {
				logKernelRows4AVX2(dst[a*nb:(a+4)*nb], ls[a*d:(a+4)*d], d, fct, stride, c, invh)
			}
			if nb8 < nb {
				for r := a; r < a+4; r++ {
					logKernelRowAVX2(dst[r*nb+nb8:(r+1)*nb], ls[r*d:(r+1)*d], fct[nb8:], stride, c[nb8:], invh)
				}
			}
		}
	default:
		return 0
	}
	return g
}

// logKernelRows4AVX2 is logKernelRows4AVX512 for the first len(c)/8*8
// centres (len(c) >= 8).
//
//go:noescape
func logKernelRows4AVX2(dst, ls []float64, d int, fct []float64, stride int, c []float64, invh float64)

// logKernelRows4AVX512 is LogKernelRows for exactly four rows (len(ls) =
// 4d, len(dst) = 4 len(c), d >= 1, len(c) >= 1).
//
//go:noescape
func logKernelRows4AVX512(dst, ls []float64, d int, fct []float64, stride int, c []float64, invh float64)

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
