package calibtest

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"slices"

	"github.com/calib-dev/calib/internal/mathx"
	"github.com/calib-dev/calib/internal/parallel"
)

// ClassWiseResult is the outcome of ClassWise.
type ClassWiseResult struct {
	// Statistic is max_k T_k over the classes with a statistic, PerClass
	// the T_k (NaN for a column without variance).
	Statistic float64
	PerClass  []float64
	// Adjusted holds the maxT-adjusted p-values (NaN for a column without
	// variance) and P the family p-value, their minimum.
	Adjusted []float64
	P        float64
	// Exceed counts the resamples whose maximum is at least Statistic.
	Exceed, Resamples int
}

// ClassWise tests class-wise calibration (every class column calibrated:
// E[y = k | f_k] = f_k for all k) with the one-dimensional statistic t of
// every class column (score f_ik, outcome [y_i = k], sample weights w):
//
//	ks             T_k = max_j |C_kj| / sigma_k
//	kuiper         T_k = (max_j C_kj - min_j C_kj) / sigma_k
//	spiegelhalter  T_k = |z_k|
//
// (Cumulative and Spiegelhalter; sigma_k and z's variance depend on the
// scores only), with the null law of the maximum over the classes by
// consistency resampling: B label vectors drawn from the rows of probs
// (as Consistency: resample r from PCG(seed, r)), the single-step maxT
// adjustment of Westfall and Young (1993),
//
//	p_k = (1 + #{b : max_l T_l^(b) >= T_k}) / (1 + B),
//
// which controls the family-wise error over the classes for any
// dependence between them, and the family p-value min_k p_k. The
// probabilities must lie in [0, 1] (the rows need not sum to 1: a row is
// drawn from in proportion to its entries). Unlike the
// asymptotic laws of the columns, it holds its level when most columns
// hold few events (many classes, few samples: the asymptotic class-wise
// tests with Holm's correction reject a calibrated model in 30 to 65 % of
// the data sets at n = 100, K = 100; TESTS.md). The
// columns are sorted once; a resample costs O(n log K) to draw and
// O(n + nK/64) for the statistics of every column (see column).
func ClassWise(ctx context.Context, t string, probs []float64, labels []int, k int, weights []float64, o ConsistencyOptions) (*ClassWiseResult, error) {
	rs, err := ClassWiseMany(ctx, []string{t}, probs, labels, k, weights, o)
	if err != nil {
		return nil, err
	}
	return rs[0], nil
}

// ClassWiseMany is ClassWise for several statistics (ks, kuiper,
// spiegelhalter, each at most once) on the same resamples: result i, the
// test of ts[i], equals ClassWise(ts[i], ...) with the same options bit for
// bit, at the cost of one set of draws (and one walk of the sorted columns
// for ks and kuiper together). If one of the statistics has no variance in
// any column (ErrNoVariance: for spiegelhalter every score 0, 1/2 or 1),
// the error names it and no statistic is computed.
func ClassWiseMany(ctx context.Context, ts []string, probs []float64, labels []int, k int, weights []float64, o ConsistencyOptions) ([]*ClassWiseResult, error) {
	n := len(labels)
	if k < 2 || n == 0 || len(probs) != n*k {
		return nil, fmt.Errorf("calibtest: class-wise: %d probabilities for %d labels and K = %d", len(probs), n, k)
	}
	if len(ts) == 0 {
		return nil, fmt.Errorf("calibtest: class-wise: no statistic")
	}
	for i, t := range ts {
		if t != "ks" && t != "kuiper" && t != "spiegelhalter" {
			return nil, fmt.Errorf("calibtest: class-wise: unknown statistic %q (ks, kuiper or spiegelhalter)", t)
		}
		if slices.Contains(ts[:i], t) {
			return nil, fmt.Errorf("calibtest: class-wise: statistic %q twice", t)
		}
	}
	if err := checkLabels(labels, n, k); err != nil {
		return nil, err
	}
	if err := mathx.CheckWeights(weights, n); err != nil {
		return nil, fmt.Errorf("calibtest: %w", err)
	}
	b, err := resampleCount(o.Resamples, "class-wise")
	if err != nil {
		return nil, err
	}
	if n > math.MaxInt32 {
		return nil, fmt.Errorf("calibtest: class-wise: %d samples (at most %d)", n, math.MaxInt32)
	}
	for i, v := range probs {
		if !(v >= 0 && v <= 1) {
			return nil, fmt.Errorf("calibtest: class-wise: sample %d, class %d: probability %v outside [0, 1]", i/k, i%k, v)
		}
	}
	// The columns of the cumulative statistics (ks, kuiper) and of
	// spiegelhalter, as asked for.
	var cum, sp []*column
	for _, t := range ts {
		if t == "spiegelhalter" {
			sp = make([]*column, k)
		} else if cum == nil {
			cum = make([]*column, k)
		}
	}
	parallel.For(k, o.Workers, func() struct{} { return struct{}{} }, func(_ struct{}, c int) {
		if cum != nil {
			cum[c] = newColumn(false, probs, k, c, weights)
		}
		if sp != nil {
			sp[c] = newColumn(true, probs, k, c, weights)
		}
	})
	for _, t := range ts {
		cols := cum
		if t == "spiegelhalter" {
			cols = sp
		}
		if !slices.ContainsFunc(cols, func(c *column) bool { return c != nil }) {
			return nil, fmt.Errorf("calibtest: class-wise %s: %w", t, ErrNoVariance)
		}
	}
	// stat gives, for each label vector, T_c of statistic ts[j] at
	// [j*k + c] (NaN for a column without variance).
	stat := func(ys [][]int) ([][]float64, error) {
		out := make([][]float64, len(ys))
		parallel.For(len(ys), o.Workers, func() *positives { return newPositives(n, k) }, func(pos *positives, q int) {
			pos.fill(ys[q])
			v := make([]float64, len(ts)*k)
			for c := range k {
				ks, kuiper, z := math.NaN(), math.NaN(), math.NaN()
				if cum != nil && cum[c] != nil {
					ks, kuiper = cum[c].cumulative(pos.rows(c), pos.bits)
				}
				if sp != nil && sp[c] != nil {
					z = sp[c].spiegelhalter(pos.rows(c))
				}
				for j, t := range ts {
					switch t {
					case "ks":
						v[j*k+c] = ks
					case "kuiper":
						v[j*k+c] = kuiper
					default:
						v[j*k+c] = z
					}
				}
			}
			out[q] = v
		})
		return out, nil
	}
	t0, _ := stat([][]int{labels})
	res := make([]*ClassWiseResult, len(ts))
	maxima := make([][]float64, len(ts))
	for j := range ts {
		per := slices.Clone(t0[0][j*k : (j+1)*k])
		res[j] = &ClassWiseResult{PerClass: per, Resamples: b, Statistic: maxDefined(per)}
		maxima[j] = make([]float64, 0, b)
	}
	err = resample(ctx, probs, k, n, b, o, stat, func(v []float64) error {
		for j := range ts {
			maxima[j] = append(maxima[j], maxDefined(v[j*k:(j+1)*k]))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for j, r := range res {
		m := maxima[j]
		slices.Sort(m)
		r.Adjusted = make([]float64, k)
		r.P = math.Inf(1)
		for c, v := range r.PerClass {
			if math.IsNaN(v) {
				r.Adjusted[c] = math.NaN()
				continue
			}
			// #{b : max_b >= v} from the sorted maxima.
			ge := len(m) - sortSearch(m, v)
			r.Adjusted[c] = float64(1+ge) / float64(1+b)
			r.P = math.Min(r.P, r.Adjusted[c])
		}
		r.Exceed = len(m) - sortSearch(m, r.Statistic)
	}
	return res, nil
}

// maxDefined returns the largest of vs that is not NaN (-Inf if none).
func maxDefined(vs []float64) float64 {
	m := math.Inf(-1)
	for _, v := range vs {
		if !math.IsNaN(v) {
			m = math.Max(m, v)
		}
	}
	return m
}

// sortSearch returns the first index of sorted xs with xs[i] >= v.
func sortSearch(xs []float64, v float64) int {
	i, _ := slices.BinarySearch(xs, v)
	return i
}

// positives holds one label vector's rows by class (a counting sort:
// rows of class c are idx[start[c]:start[c+1]], increasing) and a bitmap
// of n bits for column statistics, per worker.
type positives struct {
	idx         []int32
	start, next []int
	bits        []uint64
}

func newPositives(n, k int) *positives {
	return &positives{idx: make([]int32, n), start: make([]int, k+1), next: make([]int, k), bits: make([]uint64, (n+63)/64)}
}

// fill sorts the rows of y by class.
func (p *positives) fill(y []int) {
	clear(p.start)
	for _, c := range y {
		p.start[c+1]++
	}
	for c := 1; c < len(p.start); c++ {
		p.start[c] += p.start[c-1]
	}
	copy(p.next, p.start)
	for i, c := range y {
		p.idx[p.next[c]] = int32(i)
		p.next[c]++
	}
}

// rows returns the rows of class c, increasing.
func (p *positives) rows(c int) []int32 { return p.idx[p.start[c]:p.start[c+1]] }

// column is one class column's statistic, prepared without the labels so
// that a label vector costs O(m + n/64) for the m rows of the class (not
// O(n)): with S_q the prefix sums of w_i f_ic over the rows in score order
// and O_q those of w_i [y_i = c], the cumulative residual at sorted
// position q is C_q = O_q - S_q. O is constant between two positive rows
// and S does not decrease, so over the run ends (the positions where C is
// evaluated) in such a segment C is largest at the first and smallest at
// the last: the maximum and minimum of C need only the segments' ends.
// Spiegelhalter's numerator is sum over the positive rows of w_i (1 -
// 2 f_ic) minus the label-free sum_i w_i (1 - 2 f_ic) f_ic. Memory: 12
// bytes a row for ks and kuiper (20 with weights), a bit more with tied
// scores, none for spiegelhalter.
type column struct {
	den float64 // the statistic's scale (W sigma, or sqrt of z's variance)
	// ks, kuiper:
	rank []int32   // sorted position of each row (ties by index)
	S    []float64 // S[q] = sum of w f over the positions <= q
	wq   []float64 // weight at each position (nil: all 1)
	// ends has bit q set where position q ends a run of tied scores; nil
	// without ties (every position a run end).
	ends []uint64
	// spiegelhalter: the column's scores are probs[i*k+c], weights w.
	probs []float64
	k, c  int
	w     []float64
	swf   float64 // sum_i w_i (1 - 2 f_ic) f_ic
}

// newColumn prepares class c's column for ks and kuiper or for
// spiegelhalter, or returns nil when its statistic has no variance (every
// score 0 or 1; for spiegelhalter 0, 1/2 or 1).
func newColumn(spiegelhalter bool, probs []float64, k, c int, w []float64) *column {
	n := len(probs) / k
	v, W := 0.0, 0.0
	for i := range n {
		s, wi := probs[i*k+c], mathx.Weight(w, i)
		W += wi
		if spiegelhalter {
			a := 1 - 2*s
			v += wi * wi * a * a * s * (1 - s)
		} else {
			v += wi * wi * s * (1 - s)
		}
	}
	if !(v > 0) || !(W > 0) {
		return nil
	}
	col := &column{den: math.Sqrt(v)} // ks, kuiper: sigma W, as C/W / sigma = C / sqrt(v)
	if spiegelhalter {
		col.probs, col.k, col.c, col.w = probs, k, c, w
		for i := range n {
			s := probs[i*k+c]
			col.swf += mathx.Weight(w, i) * (1 - 2*s) * s
		}
		return col
	}
	score := make([]float64, n)
	for i := range score {
		score[i] = probs[i*k+c]
	}
	order := byScore(score)
	col.rank, col.S = make([]int32, n), make([]float64, n)
	if w != nil {
		col.wq = make([]float64, n)
	}
	sum := 0.0
	for q, i := range order {
		col.rank[i] = int32(q)
		sum += mathx.Weight(w, i) * score[i]
		col.S[q] = sum
		if col.wq != nil {
			col.wq[q] = w[i]
		}
		if q > 0 && score[order[q-1]] == score[i] && col.ends == nil {
			col.ends = make([]uint64, (n+63)/64)
		}
	}
	if col.ends != nil {
		for q := range n {
			if q+1 == n || score[order[q+1]] != score[order[q]] {
				col.ends[q>>6] |= 1 << (q & 63)
			}
		}
	}
	return col
}

// nextSet returns the first set bit of set at or after q; one must exist.
func nextSet(set []uint64, q int) int {
	w := q >> 6
	if word := set[w] >> (q & 63); word != 0 {
		return q + bits.TrailingZeros64(word)
	}
	for w++; set[w] == 0; w++ {
	}
	return w<<6 | bits.TrailingZeros64(set[w])
}

// prevSet returns the last set bit of set at or before q, or -1.
func prevSet(set []uint64, q int) int {
	w := q >> 6
	if word := set[w] << (63 - q&63); word != 0 {
		return q - bits.LeadingZeros64(word)
	}
	for w--; w >= 0; w-- {
		if set[w] != 0 {
			return w<<6 | (63 - bits.LeadingZeros64(set[w]))
		}
	}
	return -1
}

// spiegelhalter returns |z_c| for the labels whose rows of class c are pos.
func (col *column) spiegelhalter(pos []int32) float64 {
	num := 0.0
	for _, i := range pos {
		num += mathx.Weight(col.w, int(i)) * (1 - 2*col.probs[int(i)*col.k+col.c])
	}
	return math.Abs((num - col.swf) / col.den)
}

// cumulative returns the ks and kuiper T_c for the labels whose rows of
// class c are pos (increasing); set is scratch of n bits.
func (col *column) cumulative(pos []int32, set []uint64) (ks, kuiper float64) {
	clear(set)
	for _, i := range pos {
		q := col.rank[i]
		set[q>>6] |= 1 << (q & 63)
	}
	hi, lo, o := 0.0, 0.0, 0.0
	a := 0 // the current segment [a, b) has O = o
	segment := func(b int) {
		first, last := a, b-1
		if col.ends != nil && a < b {
			first, last = nextSet(col.ends, a), prevSet(col.ends, b-1)
		}
		if first <= last {
			hi, lo = max(hi, o-col.S[first]), min(lo, o-col.S[last])
		}
	}
	for wi, word := range set {
		for word != 0 {
			q := wi<<6 | bits.TrailingZeros64(word)
			word &= word - 1
			segment(q)
			if col.wq != nil {
				o += col.wq[q]
			} else {
				o++
			}
			a = q
		}
	}
	segment(len(col.S))
	return max(hi, -lo) / col.den, (hi - lo) / col.den
}
