package kernel

// LogKernelRows is LogKernelRow for several evaluation points at once: ls
// holds na = len(ls)/d rows of log coordinates (finite), and dst, na×nb
// with nb = len(c), receives
//
//	dst[a*nb + b] = invh * sum_m fct[m*stride + b] * ls[a*d + m] - c[b],
//
// each dot product summed from 0 in the order m = 0, 1, ..., d-1, so every
// row is bit for bit what LogKernelRow gives it. On AVX-512 it runs a
// register-blocked micro-kernel (4 points by 16 centres, eight independent
// addition chains, each centre coordinate loaded once for four points);
// elsewhere it is LogKernelRow row by row.
func LogKernelRows(dst, ls []float64, d int, fct []float64, stride int, c []float64, invh float64) {
	nb := len(c)
	na := len(ls) / d
	dst = dst[:na*nb]
	if nb == 0 || na == 0 {
		return
	}
	_ = fct[(d-1)*stride+nb-1]
	a := logKernelRows4(dst, ls[:na*d], d, fct, stride, c, invh)
	for ; a < na; a++ {
		active.logKernelRow(dst[a*nb:(a+1)*nb], ls[a*d:(a+1)*d], fct, stride, c, invh)
	}
}
