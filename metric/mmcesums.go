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
	st    mmceSumsState
	order []int // points by r (built on first use)
}

// mmceSumsState is the state of MMCESums, and its JSON form (with the
// envelope's version).
type mmceSumsState struct {
	Version int       `json:"version"`
	Width   float64   `json:"width"`
	R       []float64 `json:"r"`       // the points' confidences
	E       []float64 `json:"e"`       // c_j - r_j
	W       []float64 `json:"w"`       // the points' weights (nil: all 1)
	T       []float64 `json:"t"`       // the kernel sums
	N       int64     `json:"n"`       // rows added
	Total   float64   `json:"total_w"` // their total weight
}

// NewMMCESums returns empty sums at the m evaluation points probs (m×k),
// with their labels and weights (nil: all 1), for the kernel width (> 0).
func NewMMCESums(probs []float64, labels []int, k int, weights []float64, width float64) (*MMCESums, error) {
	m := len(labels)
	if k < 1 || len(probs) != m*k || (weights != nil && len(weights) != m) {
		return nil, fmt.Errorf("metric: NewMMCESums: %d probabilities, %d labels, %d weights, K = %d", len(probs), m, len(weights), k)
	}
	r, c := TopR(probs, labels, k, 1)
	ms := &MMCESums{st: mmceSumsState{Width: width, R: r, E: make([]float64, m), W: weights, T: make([]float64, m)}}
	for j := range r {
		ms.st.E[j] = c[j] - r[j]
	}
	if err := ms.check(); err != nil {
		return nil, fmt.Errorf("metric: NewMMCESums: %w", err)
	}
	return ms, nil
}

// M returns the number of evaluation points.
func (ms *MMCESums) M() int { return len(ms.st.R) }

// check reports whether the sums are whole: a positive finite width, as
// many confidences in [0, 1], residuals in [-1, 1], weights (if any,
// non-negative) and finite kernel sums, a non-negative row count and total
// weight.
func (ms *MMCESums) check() error {
	m := len(ms.st.R)
	switch {
	case !(ms.st.Width > 0) || math.IsInf(ms.st.Width, 0):
		return fmt.Errorf("width %v: must be positive", ms.st.Width)
	case len(ms.st.R) != m || len(ms.st.E) != m || len(ms.st.T) != m || (ms.st.W != nil && len(ms.st.W) != m):
		return fmt.Errorf("%d confidences, %d residuals, %d weights and %d sums for %d points", len(ms.st.R), len(ms.st.E), len(ms.st.W), len(ms.st.T), m)
	case ms.st.N < 0 || !(ms.st.Total >= 0) || math.IsInf(ms.st.Total, 0):
		return fmt.Errorf("%d rows of total weight %v", ms.st.N, ms.st.Total)
	}
	for j := range ms.st.R {
		if !(ms.st.R[j] >= 0 && ms.st.R[j] <= 1) || !(ms.st.E[j] >= -1 && ms.st.E[j] <= 1) || !mathx.Finite(ms.st.T[j]) || (ms.st.W != nil && !(ms.st.W[j] >= 0 && !math.IsInf(ms.st.W[j], 0))) {
			return fmt.Errorf("point %d: confidence %v, residual %v, sum %v", j, ms.st.R[j], ms.st.E[j], ms.st.T[j])
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
		ms.order = make([]int, len(ms.st.R))
		for j := range ms.order {
			ms.order[j] = j
		}
		slices.SortStableFunc(ms.order, func(a, b int) int { return cmp.Compare(ms.st.R[a], ms.st.R[b]) })
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
	w := ms.st.Width
	// Left: rows with r_i <= r_j; right: r_i > r_j. Each running sum is
	// held at the position of the last row or point passed.
	acc, at, s := 0.0, 0.0, 0
	for _, j := range ms.order {
		for ; s < n && rs[s] <= ms.st.R[j]; s++ {
			acc = acc*math.Exp(-(rs[s]-at)/w) + a[s]
			at = rs[s]
		}
		if s > 0 {
			ms.st.T[j] += acc * math.Exp(-(ms.st.R[j]-at)/w)
		}
	}
	acc, at, s = 0, 0, n-1
	for q := len(ms.order) - 1; q >= 0; q-- {
		j := ms.order[q]
		for ; s >= 0 && rs[s] > ms.st.R[j]; s-- {
			acc = acc*math.Exp(-(at-rs[s])/w) + a[s]
			at = rs[s]
		}
		if s < n-1 {
			ms.st.T[j] += acc * math.Exp(-(at-ms.st.R[j])/w)
		}
	}
	ms.st.N += int64(n)
	ms.st.Total += mathx.WeightSum(weights, n)
	return nil
}

// Merge adds another shard's sums at the same points.
func (ms *MMCESums) Merge(o *MMCESums) error {
	if ms.st.Width != o.st.Width || !slices.Equal(ms.st.R, o.st.R) || !slices.Equal(ms.st.E, o.st.E) || !slices.Equal(ms.st.W, o.st.W) {
		return fmt.Errorf("metric: MMCESums.Merge: sums at different points or widths")
	}
	for j, v := range o.st.T {
		ms.st.T[j] += v
	}
	ms.st.N += o.st.N
	ms.st.Total += o.st.Total
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
	m := len(ms.st.R)
	t := make([]float64, m)
	wsum, sum, mk := 0.0, 0.0, 0
	for j := range t {
		t[j] = ms.st.E[j] * ms.st.T[j] / ms.st.Total
		wj := mathx.Weight(ms.st.W, j)
		if wj > 0 {
			wsum += wj
			sum += wj * t[j]
			mk++
		}
	}
	squared = sum / wsum
	ss := 0.0
	for j := range t {
		if wj := mathx.Weight(ms.st.W, j); wj > 0 {
			d := wj * (t[j] - squared)
			ss += d * d
		}
	}
	if fpc := 1 - float64(m)/float64(max(ms.st.N, int64(m))); mk > 1 && fpc > 0 {
		se = math.Sqrt(fpc * float64(mk) / float64(mk-1) * ss / (wsum * wsum))
	}
	z := distuv.UnitNormal.Quantile((1 + level) / 2)
	return squared, se, squared - z*se, squared + z*se
}

// MarshalJSON writes the JSON form: {"kind": "metric.MMCESums", "version":
// 1, ...} and the exported fields.
func (ms *MMCESums) MarshalJSON() ([]byte, error) {
	st := ms.st
	st.Version = sumsVersion
	return mmceSumsKind.Encode(&st)
}

// UnmarshalJSON reads the JSON form, checking its version and that the
// sums are whole (see check).
func (ms *MMCESums) UnmarshalJSON(b []byte) error {
	var out MMCESums
	if _, err := mmceSumsKind.Decode(b, &out.st); err != nil {
		return err
	}
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
	out := &MMCESums{st: mmceSumsState{Width: a.st.Width, N: a.st.N, Total: a.st.Total}}
	for _, p := range parts {
		if p.st.Width != a.st.Width || p.st.N != a.st.N || p.st.Total != a.st.Total || (p.st.W == nil) != (a.st.W == nil) {
			return nil, errors.New("metric: ConcatMMCESums: blocks of different set-ups or rows")
		}
		out.st.R, out.st.E = append(out.st.R, p.st.R...), append(out.st.E, p.st.E...)
		out.st.W, out.st.T = append(out.st.W, p.st.W...), append(out.st.T, p.st.T...)
	}
	return out, nil
}

// N returns the number of rows added (merged shards' included).
func (ms *MMCESums) N() int64 { return ms.st.N }
