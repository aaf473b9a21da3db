package calibtest

import (
	"fmt"
	"math"
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
// dependence between them, and the family p-value min_k p_k. Unlike the
// asymptotic laws of the columns, it holds its level when most columns
// hold few events (many classes, few samples: the asymptotic class-wise
// tests with Holm's correction reject a calibrated model in 30 to 65 % of
// the data sets at n = 100, K = 100; EXPERIMENTS.md section 7). A
// resample costs O(nK) (the columns are sorted once).
func ClassWise(t string, probs []float64, labels []int, k int, weights []float64, o ConsistencyOptions) (*ClassWiseResult, error) {
	n := len(labels)
	if k < 2 || n == 0 || len(probs) != n*k {
		return nil, fmt.Errorf("calibtest: class-wise: %d probabilities for %d labels and K = %d", len(probs), n, k)
	}
	if t != "ks" && t != "kuiper" && t != "spiegelhalter" {
		return nil, fmt.Errorf("calibtest: class-wise: unknown statistic %q (ks, kuiper or spiegelhalter)", t)
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
	cols := make([]*column, k)
	any := false
	for c := range cols {
		cols[c] = newColumn(t, probs, k, c, weights)
		any = any || cols[c] != nil
	}
	if !any {
		return nil, ErrNoVariance
	}
	stat := func(ys [][]int) ([][]float64, error) {
		out := make([][]float64, len(ys))
		parallel.For(len(ys), o.Workers, func() struct{} { return struct{}{} }, func(_ struct{}, q int) {
			out[q] = make([]float64, k)
			for c, col := range cols {
				out[q][c] = math.NaN()
				if col != nil {
					out[q][c] = col.statistic(ys[q])
				}
			}
		})
		return out, nil
	}
	t0, _ := stat([][]int{labels})
	res := &ClassWiseResult{PerClass: t0[0], Resamples: b, Statistic: math.Inf(-1)}
	for _, v := range res.PerClass {
		if !math.IsNaN(v) {
			res.Statistic = math.Max(res.Statistic, v)
		}
	}
	maxima := make([]float64, 0, b)
	err = resample(probs, k, n, b, o, stat, func(ts []float64) error {
		m := math.Inf(-1)
		for _, v := range ts {
			if !math.IsNaN(v) {
				m = math.Max(m, v)
			}
		}
		maxima = append(maxima, m)
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(maxima)
	res.Adjusted = make([]float64, k)
	res.P = math.Inf(1)
	for c, v := range res.PerClass {
		if math.IsNaN(v) {
			res.Adjusted[c] = math.NaN()
			continue
		}
		// #{b : max_b >= v} from the sorted maxima.
		ge := len(maxima) - sortSearch(maxima, v)
		res.Adjusted[c] = float64(1+ge) / float64(1+b)
		res.P = math.Min(res.P, res.Adjusted[c])
	}
	res.Exceed = len(maxima) - sortSearch(maxima, res.Statistic)
	return res, nil
}

// sortSearch returns the first index of sorted xs with xs[i] >= v.
func sortSearch(xs []float64, v float64) int {
	i, _ := slices.BinarySearch(xs, v)
	return i
}

// column is one class column's statistic, prepared without the labels:
// the scores in sorted order (ties by index), where runs of ties end, the
// weights and the null scale.
type column struct {
	t      string
	class  int
	order  []int     // rows by score
	end    []bool    // end[q]: sorted position q ends a run of tied scores
	score  []float64 // f_ic, input order
	w      []float64 // nil: all 1
	W, den float64   // total weight; the statistic's scale (W sigma, or sqrt of z's variance)
	sw     []float64 // spiegelhalter: w_i (1 - 2 f_ic) per row
}

// newColumn prepares class c's column, or returns nil when its statistic
// has no variance (every score 0 or 1).
func newColumn(t string, probs []float64, k, c int, w []float64) *column {
	n := len(probs) / k
	col := &column{t: t, class: c, score: make([]float64, n), w: w}
	v := 0.0
	for i := range col.score {
		s := probs[i*k+c]
		col.score[i] = s
		wi := mathx.Weight(w, i)
		col.W += wi
		if t == "spiegelhalter" {
			a := 1 - 2*s
			v += wi * wi * a * a * s * (1 - s)
		} else {
			v += wi * wi * s * (1 - s)
		}
	}
	if !(v > 0) || !(col.W > 0) {
		return nil
	}
	if t == "spiegelhalter" {
		col.den = math.Sqrt(v)
		col.sw = make([]float64, n)
		for i, s := range col.score {
			col.sw[i] = mathx.Weight(w, i) * (1 - 2*s)
		}
		return col
	}
	col.den = math.Sqrt(v) // sigma W: C/W / sigma = C / sqrt(v)
	col.order, col.end = byScore(col.score), make([]bool, n)
	for q, i := range col.order {
		col.end[q] = q+1 == n || col.score[col.order[q+1]] != col.score[i]
	}
	return col
}

// statistic returns T_c for the labels y.
func (col *column) statistic(y []int) float64 {
	if col.t == "spiegelhalter" {
		num := 0.0
		for i, s := range col.score {
			o := 0.0
			if y[i] == col.class {
				o = 1
			}
			num += col.sw[i] * (o - s)
		}
		return math.Abs(num / col.den)
	}
	c, hi, lo, mx := 0.0, 0.0, 0.0, 0.0
	for q, i := range col.order {
		o := 0.0
		if y[i] == col.class {
			o = 1
		}
		c += mathx.Weight(col.w, i) * (o - col.score[i])
		if col.end[q] {
			hi, lo, mx = math.Max(hi, c), math.Min(lo, c), math.Max(mx, math.Abs(c))
		}
	}
	if col.t == "ks" {
		return mx / col.den
	}
	return (hi - lo) / col.den
}
