package kernel

import "math"

// sumExpGroup is the number of terms SumExp tests together for underflow.
const sumExpGroup = 16

// SumExp returns sum_i e^(x_i - shift) computed with Exp, so terms with
// x_i - shift < ExpMin (and x_i = -Inf) add exactly 0. shift should be at
// least max_i x_i (the log-sum-exp shift). Groups of 16 terms whose largest
// is below shift + ExpMin are skipped without computing their exponentials,
// which gives the same sum: long runs of such terms are common when the
// kernel centres are sorted by position and the bandwidth is small. The
// terms are added in order.
func SumExp(x []float64, shift float64) float64 {
	s := 0.0
	cut := shift + ExpMin
	for len(x) > 0 {
		g := x[:min(sumExpGroup, len(x))]
		x = x[len(g):]
		if Max(g) < cut {
			continue
		}
		s = sumExp(g, shift, s)
	}
	return s
}

// sumExp returns s + sum_i Exp(x_i - shift), adding in order. The body of
// Exp is inlined by hand (the compiler does not inline it), with the ExpMin
// cut done by a bit mask instead of a branch.
func sumExp(x []float64, shift, s float64) float64 {
	for _, v := range x {
		v -= shift
		kf := v*invLn2N + roundMagic
		kf -= roundMagic
		ki := int64(kf)
		r := (v - kf*ln2NHi) - kf*ln2NLo
		q := r * (1 + r*(1.0/2+r*(1.0/6+r*(1.0/24+r*(1.0/120+r*(1.0/720))))))
		t := exp2Table[ki&(expN-1)]
		y := t + t*q
		keep := ^uint64(int64(math.Float64bits(v-ExpMin)) >> 63) // all ones iff v >= ExpMin
		s += math.Float64frombits((math.Float64bits(y) + uint64(ki>>expTableBits)<<52) & keep)
	}
	return s
}

// Max returns the largest element of x, or -Inf for an empty x. x must not
// hold NaN.
func Max(x []float64) float64 {
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
				row[b] = (f[0]*l0+f[1]*l1)*invh - c[b]
			}
		}
		return
	}
	for a := 0; a < na; a++ {
		l := lx[a*d : (a+1)*d : (a+1)*d]
		row := dst[a*nb : (a+1)*nb]
		for b := range row {
			f := fc[b*d : (b+1)*d : (b+1)*d]
			s := 0.0
			for m, v := range f {
				s += v * l[m]
			}
			row[b] = s*invh - c[b]
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
					s += v * l[m]
				}
			}
			row[b] = s*invh - c[b]
		}
	}
}
