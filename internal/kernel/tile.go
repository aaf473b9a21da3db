package kernel

import "math"

// sumExpGroup is the number of terms SumExp tests together for underflow.
const sumExpGroup = 16

// Negligible is the log of the relative size below which SumExp may drop a
// group of terms: a group of 16 terms all below e^Negligible = 1.9e-22 times
// the largest term (e^0 = 1 after the shift) adds less than 3.1e-21 to a sum
// that is at least 1, far below the float64 resolution of the sum for any
// n < 10^5 groups (and below 1e-16 relative for n < 10^6 terms).
const Negligible = -50.0

// SumExp returns sum_i e^(x_i - shift) computed with Exp (terms with
// x_i - shift < ExpMin, and x_i = -Inf, add exactly 0). shift should be
// max_i x_i (the log-sum-exp shift), so that the sum is at least 1 when the
// maximum is among x. Groups of 16 consecutive terms that are all below
// shift + Negligible are skipped without computing their exponentials: long
// runs of them are common when the kernel centres are sorted by position.
// The terms are summed in eight lanes (term i in lane i mod 8, in order of
// i) that are then added pairwise (see reduceLanes), on every
// implementation, so the result depends only on x and shift.
func SumExp(x []float64, shift float64) float64 {
	return active.sumExp(x, shift, shift+Negligible)
}

// SumExpSq returns sum_i Exp(x_i - shift) and sum_i Exp(x_i - shift)^2
// from one exponential per element (the squares of negligible terms are
// negligible too, so SumExp's group skipping holds for both), both summed
// in SumExp's lanes.
func SumExpSq(x []float64, shift float64) (s, sq float64) {
	return active.sumExpSq(x, shift, shift+Negligible)
}

// Max returns the largest element of x, or -Inf for an empty x. x must not
// hold NaN.
func Max(x []float64) float64 { return active.max(x) }

// LogKernelTile fills the tile of log-kernel values of rows (evaluation
// points) against columns (kernel centres):
//
//	dst[a*len(c) + b] = invh * sum_m fc[b*d+m] * lx[a*d+m] - c[b]
//
// where lx holds the logs of the evaluation points (finite: points with a
// zero coordinate go to LogKernelTileExact) and fc the centre coordinates.
// The dot product is summed in the order m = 0, 1, ..., d-1.
func LogKernelTile(dst, lx, fc, c []float64, d int, invh float64) {
	nb := len(c)
	na := len(lx) / d
	if d == 2 {
		for a := 0; a < na; a++ {
			l0, l1 := lx[2*a], lx[2*a+1]
			row := dst[a*nb : (a+1)*nb]
			for b := range row {
				f := fc[2*b : 2*b+2 : 2*b+2]
				row[b] = float64((float64(f[0]*l0)+float64(f[1]*l1))*invh) - c[b]
			}
		}
		return
	}
	for a := 0; a < na; a++ {
		l := lx[a*d : (a+1)*d : (a+1)*d]
		row := dst[a*nb : (a+1)*nb]
		b := 0
		// Four centres at a time: each log coordinate is loaded once for
		// four independent dot products.
		for ; b+4 <= nb; b += 4 {
			f := fc[b*d : (b+4)*d : (b+4)*d]
			f0, f1, f2, f3 := f[:d:d], f[d:2*d:2*d], f[2*d:3*d:3*d], f[3*d:4*d:4*d]
			var s0, s1, s2, s3 float64
			for m, v := range l {
				s0 += float64(f0[m] * v)
				s1 += float64(f1[m] * v)
				s2 += float64(f2[m] * v)
				s3 += float64(f3[m] * v)
			}
			r := row[b : b+4 : b+4]
			cc := c[b : b+4 : b+4]
			r[0] = float64(s0*invh) - cc[0]
			r[1] = float64(s1*invh) - cc[1]
			r[2] = float64(s2*invh) - cc[2]
			r[3] = float64(s3*invh) - cc[3]
		}
		for ; b < nb; b++ {
			f := fc[b*d : (b+1)*d : (b+1)*d]
			s := 0.0
			for m, v := range f {
				s += float64(v * l[m])
			}
			row[b] = float64(s*invh) - c[b]
		}
	}
}

// LogKernelTileExact is LogKernelTile for evaluation points that may have
// zero coordinates (lx = -Inf there). It follows the convention
// 0 * log 0 = 0: a centre coordinate of exactly 0 (alpha = 1) contributes
// nothing, and a positive centre coordinate against a zero evaluation
// coordinate makes the kernel exactly 0 (log-kernel -Inf).
func LogKernelTileExact(dst, lx, fc, c []float64, d int, invh float64) {
	nb := len(c)
	na := len(lx) / d
	for a := 0; a < na; a++ {
		l := lx[a*d : (a+1)*d]
		row := dst[a*nb : (a+1)*nb]
		for b := range row {
			f := fc[b*d : (b+1)*d]
			s := 0.0
			for m, v := range f {
				if v != 0 {
					s += float64(v * l[m])
				}
			}
			row[b] = float64(s*invh) - c[b]
		}
	}
}

// AffineMax sets dst[i] = x[i]*scale - c[i] and returns the largest dst[i]
// (-Inf for empty x). x and c must have the length of dst and hold no NaN.
func AffineMax(dst, x, c []float64, scale float64) float64 {
	return active.affineMax(dst, x[:len(dst)], c[:len(dst)], scale)
}

// WeightedSumExp returns sum_i w_i with w_i = e^(x_i - shift) (summed in
// SumExp's lanes) and adds w_i * v[i*k : (i+1)*k] to acc (k = len(acc)), in
// order of i. Terms below shift + Negligible are skipped (their weights add
// less than e^-50 of the largest to either sum); shift should be max_i x_i.
// It is the kernel regression of vectors v (the residuals of the witness
// estimators).
func WeightedSumExp(acc, x, v []float64, shift float64) float64 {
	k := len(acc)
	v = v[:len(x)*k]
	cut := shift + Negligible
	var lane [lanes]float64
	var w [termChunk]float64
	for i0 := 0; i0 < len(x); i0 += termChunk {
		i1 := min(i0+termChunk, len(x))
		expTerms(w[:i1-i0], x[i0:i1], shift, cut, &lane)
		axpyRows(acc, w[:i1-i0], v[i0*k:i1*k])
	}
	return reduceLanes(&lane)
}

// WeightedSumExp4 is four WeightedSumExp over the same vectors v (the
// witness's residuals at four bandwidths): for g < 4 it adds
// e^(x[g][i] - shift[g]) v[i*k : (i+1)*k] to acc[g] and returns the sums of
// the weights, each with WeightedSumExp's bits. k = len(acc[g]) must be a
// multiple of 4 (pad the vectors with zeros), and the x[g] of one length.
// Each row of v is loaded once for the four sums (on the avx2 and avx512
// paths: the AVX2 kernel, axpyRows4AVX2), which makes the K-vector sums,
// limited by the loads when done one sum at a time, about 1.5 times as fast
// (BenchmarkAxpyRows, in cache, Zen 4, avx2: 0.116 -> 0.072 ns per useful
// multiply-add at K = 10, 0.085 -> 0.057 at K = 100).
func WeightedSumExp4(acc *[4][]float64, x *[4][]float64, v []float64, shift *[4]float64) (s [4]float64) {
	k, n := len(acc[0]), len(x[0])
	if k%4 != 0 {
		panic("kernel: WeightedSumExp4 on vectors whose length is not a multiple of 4")
	}
	v = v[:n*k]
	var lane [4][lanes]float64
	var w [4][termChunk]float64
	var ws [4][]float64
	for i0 := 0; i0 < n; i0 += termChunk {
		i1 := min(i0+termChunk, n)
		for g := range x {
			ws[g] = w[g][:i1-i0]
			expTerms(ws[g], x[g][i0:i1], shift[g], shift[g]+Negligible, &lane[g])
		}
		axpyRows4(acc, &ws, v[i0*k:i1*k], k, i1-i0)
	}
	for g := range s {
		s[g] = reduceLanes(&lane[g])
	}
	return s
}

// termChunk is the number of terms whose exponentials WeightedSumExp and
// PairWeightedSumExp compute together (a multiple of lanes).
const termChunk = 256

// PairWeightedSumExp is WeightedSumExp that also accumulates the sums over
// pairs of different terms, each term i against every earlier one (those
// of this call before it, and the earlier sums s and acc passed in):
//
//	pp += 2 w_i s_<i,   np += 2 w_i <v_i, acc_<i>
//
// so that pp = sum_{i != i'} w_i w_i' and np = sum_{i != i'} w_i w_i'
// <v_i, v_i'> over all terms so far, without forming a difference of two
// large squares. It returns the new s, pp and np. The terms go in order of
// i, those with w_i = 0 (below the cut) skipped; for each the dot product
// <v_i, acc> is summed in eight lanes (entry l in lane l mod 8, then
// reduceLanes), then np, pp, s and acc are updated in that order (see
// pairTermsGeneric), on every implementation.
func PairWeightedSumExp(acc, x, v []float64, shift, s, pp, np float64) (float64, float64, float64) {
	k := len(acc)
	v = v[:len(x)*k]
	cut := shift + Negligible
	var lane [lanes]float64
	var w [termChunk]float64
	for i0 := 0; i0 < len(x); i0 += termChunk {
		i1 := min(i0+termChunk, len(x))
		expTerms(w[:i1-i0], x[i0:i1], shift, cut, &lane)
		s, pp, np = pairTerms(acc, w[:i1-i0], v[i0*k:i1*k], s, pp, np)
	}
	return s, pp, np
}

// LogKernelRow fills dst with the log-kernel values of one evaluation point
// (log coordinates l, finite, d = len(l)) against len(dst) kernel centres
// stored by coordinate, fct[m*stride + b] = coordinate m of centre b:
//
//	dst[b] = invh * sum_m fct[m*stride + b] * l[m] - c[b]
//
// The dot product is summed in the order m = 0, 1, ..., d-1 from 0, as
// LogKernelTile does, so the two agree bit for bit.
func LogKernelRow(dst, l, fct []float64, stride int, c []float64, invh float64) {
	nb := len(dst)
	if len(l) == 0 {
		for b := range dst {
			dst[b] = 0*invh - c[b]
		}
		return
	}
	_ = fct[(len(l)-1)*stride+nb-1]
	active.logKernelRow(dst, l, fct, stride, c[:nb], invh)
}

// LogKernelRowExact is LogKernelRow for an evaluation point that may have
// zero coordinates (l = -Inf there), with LogKernelTileExact's convention
// 0 * log 0 = 0.
func LogKernelRowExact(dst, l, fct []float64, stride int, c []float64, invh float64) {
	for b := range dst {
		s := 0.0
		for m, v := range l {
			if f := fct[m*stride+b]; f != 0 {
				s += float64(f * v)
			}
		}
		dst[b] = float64(s*invh) - c[b]
	}
}

// ExpSum sets dst[i] = e^(x_i - shift) (Exp: 0 below ExpMin, and for x_i =
// -Inf or NaN) and returns their sum, added in SumExp's eight lanes. dst
// may be x. It is a softmax's numerator and denominator when shift =
// max_i x_i.
func ExpSum(dst, x []float64, shift float64) float64 {
	var lane [lanes]float64
	expTerms(dst[:len(x)], x, shift, math.Inf(-1), &lane)
	return reduceLanes(&lane)
}

// AddWeightedRows adds w[i] * v[i*k : (i+1)*k] to acc (k = len(acc)) for
// every i with w[i] != 0, in order of i: acc[l] += w[i] v[i*k + l], each
// entry a sum in order of i (the rows of a product A^T V accumulated one
// row of A at a time).
func AddWeightedRows(acc, w, v []float64) {
	axpyRows(acc, w, v[:len(w)*len(acc)])
}
