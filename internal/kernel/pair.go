package kernel

// pairTermsGeneric is the pair-sum loop of PairWeightedSumExp over one
// chunk of terms with their weights w (v holds the rows v_i = v[i*k :
// (i+1)*k], k = len(acc)). For each term i in order with w[i] != 0 (either
// sign of zero is skipped; NaN is not), it adds the term's pairs with every
// earlier term, then the term itself:
//
//	d   = <v_i, acc>          (acc before term i is added)
//	t   = 2 w_i
//	np += t d
//	pp += t s
//	s  += w_i
//	acc[l] += w_i v_i[l]      for l = 0, ..., k-1
//
// and returns the new s, pp and np. Every path performs exactly these
// float64 operations in this order, with no fused multiply-add: the dot d
// is summed in eight lanes, lane[l mod 8] += v_i[l] * acc[l] (a product,
// then an add) from lanes of +0 in order of l, and the lanes are added by
// reduceLanes; t*d is added to np, then t*s to pp, then w_i to s, and
// acc[l] gets the product w_i * v_i[l] added.
//
// The conversions float64(x*y) keep the compiler from fusing a product
// and a sum (which the Go specification allows, and which arm64, or amd64
// with GOAMD64=v3, would do). The lanes are eight variables, added at the
// end in reduceLanes' order.
func pairTermsGeneric(acc, w, v []float64, s, pp, np float64) (float64, float64, float64) {
	k := len(acc)
	v = v[:len(w)*k]
	for i, wi := range w {
		if wi == 0 {
			continue
		}
		vi := v[i*k : (i+1)*k : (i+1)*k]
		var l0, l1, l2, l3, l4, l5, l6, l7 float64
		l := 0
		for ; l+lanes <= k; l += lanes {
			a := acc[l : l+lanes : l+lanes]
			x := vi[l : l+lanes : l+lanes]
			l0 += float64(x[0] * a[0])
			l1 += float64(x[1] * a[1])
			l2 += float64(x[2] * a[2])
			l3 += float64(x[3] * a[3])
			l4 += float64(x[4] * a[4])
			l5 += float64(x[5] * a[5])
			l6 += float64(x[6] * a[6])
			l7 += float64(x[7] * a[7])
		}
		// The last k mod 8 entries, one product for each of the first
		// lanes (the lanes are independent: their order does not matter).
		x, a := vi[l:], acc[l:]
		switch len(x) {
		case 7:
			l6 += float64(x[6] * a[6])
			fallthrough
		case 6:
			l5 += float64(x[5] * a[5])
			fallthrough
		case 5:
			l4 += float64(x[4] * a[4])
			fallthrough
		case 4:
			l3 += float64(x[3] * a[3])
			fallthrough
		case 3:
			l2 += float64(x[2] * a[2])
			fallthrough
		case 2:
			l1 += float64(x[1] * a[1])
			fallthrough
		case 1:
			l0 += float64(x[0] * a[0])
		}
		d := ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)) // reduceLanes
		t := 2 * wi
		np += float64(t * d)
		pp += float64(t * s)
		s += wi
		for l, x := range vi {
			acc[l] += float64(wi * x)
		}
	}
	return s, pp, np
}
