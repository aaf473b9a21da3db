package metric

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/calib-dev/calib/internal/mathx"
)

// MMCESums is the mergeable form of MMCE (MMCE) at m fixed
// evaluation points: for each point j (top-label confidence r_j,
// correctness c_j, weight w_j) the kernel sum over every row i added,
//
//	T_j = sum_i w_i (c_i - r_i) exp(-|r_i - r_j| / width)   (i = j included),
//
// so that MMCE^2 = (1/W^2) sum_j w_j (c_j - r_j) T_j is the weighted mean
// over all rows j of t_j = (c_j - r_j) T_j / W. Estimate averages t_j over
// the evaluation points (with every row a point, MMCE's value to
// rounding). Add costs O(b log b + m) per batch of b rows: the batch and
// the points are merged in order of r, and the kernel sums to the left and
// right of each point are running sums multiplied by exp(-gap/width) at
// each step (MMCE's recurrence), so nothing overflows.
type MMCESums struct {
	Width float64   `json:"width"`
	R     []float64 `json:"r"`       // the points' confidences
	E     []float64 `json:"e"`       // c_j - r_j
	W     []float64 `json:"w"`       // the points' weights (nil: all 1)
	T     []float64 `json:"t"`       // the kernel sums
	N     int64     `json:"n"`       // rows added
	Total float64   `json:"total_w"` // their total weight
	order []int     // points by r (built on first use)
}

// NewMMCESums returns empty sums at the m evaluation points probs (m×k),
// with their labels and weights (nil: all 1), for the kernel width (> 0).
func NewMMCESums(probs []float64, labels []int, k int, weights []float64, width float64) (*MMCESums, error) {
	m := len(labels)
	if k < 1 || len(probs) != m*k || (weights != nil && len(weights) != m) {
		return nil, fmt.Errorf("metric: NewMMCESums: %d probabilities, %d labels, %d weights, K = %d", len(probs), m, len(weights), k)
	}
	r, c := TopR(probs, labels, k, 1)
	ms := &MMCESums{Width: width, R: r, E: make([]float64, m), W: weights, T: make([]float64, m)}
	for j := range r {
		ms.E[j] = c[j] - r[j]
	}
	if err := ms.check(); err != nil {
		return nil, fmt.Errorf("metric: NewMMCESums: %w", err)
	}
	return ms, nil
}

// M returns the number of evaluation points.
func (ms *MMCESums) M() int { return len(ms.R) }

// check reports whether the sums are whole: a positive finite width, as
// many confidences in [0, 1], residuals in [-1, 1], weights (if any,
// non-negative) and finite kernel sums, a non-negative row count and total
// weight.
func (ms *MMCESums) check() error {
	m := len(ms.R)
	switch {
	case !(ms.Width > 0) || math.IsInf(ms.Width, 0):
		return fmt.Errorf("width %v: must be positive", ms.Width)
	case len(ms.R) != m || len(ms.E) != m || len(ms.T) != m || (ms.W != nil && len(ms.W) != m):
		return fmt.Errorf("%d confidences, %d residuals, %d weights and %d sums for %d points", len(ms.R), len(ms.E), len(ms.W), len(ms.T), m)
	case ms.N < 0 || !(ms.Total >= 0) || math.IsInf(ms.Total, 0):
		return fmt.Errorf("%d rows of total weight %v", ms.N, ms.Total)
	}
	for j := range ms.R {
		if !(ms.R[j] >= 0 && ms.R[j] <= 1) || !(ms.E[j] >= -1 && ms.E[j] <= 1) || !mathx.Finite(ms.T[j]) || (ms.W != nil && !(ms.W[j] >= 0 && !math.IsInf(ms.W[j], 0))) {
			return fmt.Errorf("point %d: confidence %v, residual %v, sum %v", j, ms.R[j], ms.E[j], ms.T[j])
		}
	}
	return nil
}

// Add adds a batch of rows: probs n×k, labels, weights (nil: all 1).
func (ms *MMCESums) Add(probs []float64, labels []int, k int, weights []float64) error {
	n := len(labels)
	if k < 1 || len(probs) != n*k || (weights != nil && len(weights) != n) {
		return fmt.Errorf("metric: MMCESums.Add: %d probabilities, %d labels, %d weights, K = %d", len(probs), n, len(weights), k)
	}
	for i, y := range labels {
		if y < 0 || y >= k {
			return fmt.Errorf("metric: MMCESums.Add: label %d of row %d outside 0..%d", y, i, k-1)
		}
	}
	if n == 0 {
		return nil
	}
	if ms.order == nil {
		ms.order = make([]int, len(ms.R))
		for j := range ms.order {
			ms.order[j] = j
		}
		slices.SortStableFunc(ms.order, func(a, b int) int { return cmp.Compare(ms.R[a], ms.R[b]) })
	}
	r, c := TopR(probs, labels, k, 1)
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(r[a], r[b]) })
	a := make([]float64, n) // w_i (c_i - r_i) in sorted order
	rs := make([]float64, n)
	for s, i := range idx {
		rs[s], a[s] = r[i], float64(mathx.Weight(weights, i)*(c[i]-r[i]))
	}
	w := ms.Width
	// Left: rows with r_i <= r_j; right: r_i > r_j. Each running sum is
	// held at the position of the last row or point passed.
	acc, at, s := 0.0, 0.0, 0
	for _, j := range ms.order {
		for ; s < n && rs[s] <= ms.R[j]; s++ {
			acc = acc*math.Exp(-(rs[s]-at)/w) + a[s]
			at = rs[s]
		}
		if s > 0 {
			ms.T[j] += acc * math.Exp(-(ms.R[j]-at)/w)
		}
	}
	acc, at, s = 0, 0, n-1
	for q := len(ms.order) - 1; q >= 0; q-- {
		j := ms.order[q]
		for ; s >= 0 && rs[s] > ms.R[j]; s-- {
			acc = acc*math.Exp(-(at-rs[s])/w) + a[s]
			at = rs[s]
		}
		if s < n-1 {
			ms.T[j] += acc * math.Exp(-(at-ms.R[j])/w)
		}
	}
	ms.N += int64(n)
	ms.Total += mathx.WeightSum(weights, n)
	return nil
}

// Merge adds another shard's sums at the same points.
func (ms *MMCESums) Merge(o *MMCESums) error {
	if ms.Width != o.Width || !slices.Equal(ms.R, o.R) || !slices.Equal(ms.E, o.E) || !slices.Equal(ms.W, o.W) {
		return fmt.Errorf("metric: MMCESums.Merge: sums at different points or widths")
	}
	for j, v := range o.T {
		ms.T[j] += v
	}
	ms.N += o.N
	ms.Total += o.Total
	return nil
}

// Estimate returns the estimate of MMCE^2 from the points, sum_j w_j t_j /
// sum_j w_j, its standard error (as kde.PointSums.Estimate's, with the
// finite-population correction 1 - m/n) and the normal interval of MMCE^2
// at level (0: 0.95); the terms t_j may be negative, so the interval is
// symmetric.
func (ms *MMCESums) Estimate(level float64) (squared, se, lo, hi float64) {
	if level == 0 {
		level = 0.95
	}
	m := len(ms.R)
	t := make([]float64, m)
	wsum, sum, mk := 0.0, 0.0, 0
	for j := range t {
		t[j] = ms.E[j] * ms.T[j] / ms.Total
		wj := mathx.Weight(ms.W, j)
		if wj > 0 {
			wsum += wj
			sum += wj * t[j]
			mk++
		}
	}
	squared = sum / wsum
	ss := 0.0
	for j := range t {
		if wj := mathx.Weight(ms.W, j); wj > 0 {
			d := wj * (t[j] - squared)
			ss += d * d
		}
	}
	if fpc := 1 - float64(m)/float64(max(ms.N, int64(m))); mk > 1 && fpc > 0 {
		se = math.Sqrt(fpc * float64(mk) / float64(mk-1) * ss / (wsum * wsum))
	}
	z := distuv.UnitNormal.Quantile((1 + level) / 2)
	return squared, se, squared - z*se, squared + z*se
}

// MarshalJSON writes the JSON form: {"kind": "metric.MMCESums", "version":
// 1, ...} and the exported fields.
func (ms *MMCESums) MarshalJSON() ([]byte, error) {
	type plain MMCESums
	return mmceSumsKind.Encode(&struct {
		Version int `json:"version"`
		*plain
	}{sumsVersion, (*plain)(ms)})
}

// UnmarshalJSON reads the JSON form, checking its version and that the
// sums are whole (see check).
func (ms *MMCESums) UnmarshalJSON(b []byte) error {
	type plain MMCESums
	var v plain
	if _, err := mmceSumsKind.Decode(b, &v); err != nil {
		return err
	}
	out := MMCESums(v)
	if err := out.check(); err != nil {
		return mmceSumsKind.Errorf("%v", err)
	}
	*ms = out
	return nil
}

// ConcatMMCESums joins the sums of disjoint blocks of evaluation points,
// in order, over the same rows, into the sums of all their points.
func ConcatMMCESums(parts []*MMCESums) (*MMCESums, error) {
	if len(parts) == 0 {
		return nil, errors.New("metric: ConcatMMCESums: no sums")
	}
	a := parts[0]
	out := &MMCESums{Width: a.Width, N: a.N, Total: a.Total}
	for _, p := range parts {
		if p.Width != a.Width || p.N != a.N || p.Total != a.Total || (p.W == nil) != (a.W == nil) {
			return nil, errors.New("metric: ConcatMMCESums: blocks of different set-ups or rows")
		}
		out.R, out.E = append(out.R, p.R...), append(out.E, p.E...)
		out.W, out.T = append(out.W, p.W...), append(out.T, p.T...)
	}
	return out, nil
}
